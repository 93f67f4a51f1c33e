#!/usr/bin/env python3
"""Checks of `rlopt report`: MAC counts against an independent counter, the
JSON schema, the batch sweep, and bad input.

- MACs: for the nine 'light' models of the onnx wheel
  (<onnx wheel>/backend/test/data/light/light_*.onnx), every MatMul, Gemm and
  Conv node's `macs` in `rlopt report --format json` must equal the count made
  here from onnx.shape_inference.infer_shapes and the textbook formulas
  (MatMul: numel(Y) * K; Gemm: M * N * K; Conv: N * M * prod(Y spatial) *
  C/group * prod(kernel)), exactly, node by node (matched by output name).
- Schema: the keys the README documents are present with the right types.
- Sweep: `--batch 1,8,64` on examples/tiny_mlp_dynamic.onnx (a symbolic batch)
  gives one sweep entry per batch and a crossing entry for the MatMul whose
  affine coefficients are those worked out by hand; a generated
  [batch,1024] x [1024,1024] MatMul crosses at B*w / (f - B*a).
- Kernels: after -O2 a fused group is one row (`kernels`) with its nodes
  listed; the elementwise chain is 1 kernel moving 4194304 floats in and out
  (33,554,432 bytes); on gpt_block every LayerNormalization, Softmax and
  epilogue is one kernel; kernels partition the running nodes and their
  times sum to the total; `rlopt report -O2` reports the same graph as the
  main form's --report; tiled kernels carry bytes per level.
- Scale: the report of a 2-layer, 7B-wide fp16 decoder (1.3 GB of weights in
  a sparse external file, bench/bench_report_scale.py's builder) peaks under
  300 MiB of RSS: nothing reads every weight (no timing is asserted).
- Options: a shared option a command does not use is a usage error (exit 1,
  one line).
- Bad input: unknown --hw (exit 2, the known names listed), a --batch list that
  does not parse (exit 1), a missing model (exit 2), a malformed profile (exit 2),
  an unknown format (exit 1); no output file in any of these cases.

Ends with "N passed, N failed, N skipped"; exits non-zero on a failure.
"""

import glob
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402


Checks = rltest.Checks


# ---- independent MAC count ---------------------------------------------------


def shapes_of(model):
    """name -> list of ints for every value whose shape onnx infers fully."""
    m = shape_inference.infer_shapes(model, data_prop=True)
    out = {}
    vis = list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output)
    for vi in vis:
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            continue
        dims = []
        for d in t.shape.dim:
            if not d.HasField("dim_value"):
                dims = None
                break
            dims.append(d.dim_value)
        if dims is not None:
            out[vi.name] = dims
    for init in m.graph.initializer:
        out[init.name] = list(init.dims)
    return out


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def macs_of(node, shp):
    """MACs of a MatMul/Gemm/Conv node from inferred shapes, or None."""
    try:
        if node.op_type == "MatMul":
            a, y = shp[node.input[0]], shp[node.output[0]]
            return math.prod(y) * a[-1]
        if node.op_type == "Gemm":
            a, y = shp[node.input[0]], shp[node.output[0]]
            k = a[0] if attr(node, "transA", 0) else a[1]
            return y[0] * y[1] * k
        if node.op_type == "Conv":
            x, w, y = shp[node.input[0]], shp[node.input[1]], shp[node.output[0]]
            group = attr(node, "group", 1)
            n, m = y[0], y[1]
            return n * m * math.prod(y[2:]) * (x[1] // group) * math.prod(w[2:])
    except KeyError:
        return None
    return None


def run_json(rl, args, path, timeout=300):
    r = rltest.run([rl, "report"] + args + ["--format", "json", "-o", path], timeout)
    if not r.ok:
        return None, r
    with open(path) as f:
        return json.load(f), r


def check_macs(c, rl, work):
    models = sorted(glob.glob(os.path.join(rltest.onnx_data_dir(), "light", "light_*.onnx")))
    if not models:
        c.tally.add("skip")
        print("skip light models: none found")
        return
    for p in models:
        name = os.path.basename(p)[:-len(".onnx")]
        rep, r = run_json(rl, [p, "--hw", "generic-cpu"], os.path.join(work, name + ".json"))
        if rep is None:
            c.check(f"macs {name}", False, r.describe())
            continue
        by_out = {}
        for nd in rep["nodes"]:
            for o in nd.get("outputs", []):
                by_out[o] = nd
        shp = shapes_of(onnx.load(p))
        bad, n = [], 0
        for node in onnx.load(p, load_external_data=False).graph.node:
            if node.op_type not in ("MatMul", "Gemm", "Conv"):
                continue
            want = macs_of(node, shp)
            got = by_out.get(node.output[0])
            n += 1
            if want is None:
                bad.append(f"{node.output[0]}: onnx did not infer its shapes")
            elif got is None:
                bad.append(f"{node.output[0]}: not in the report")
            elif got["macs"] != want:
                bad.append(f"{node.output[0]} ({node.op_type}): rlopt {got['macs']}, "
                           f"independent {want}")
            elif got["flops"] < 2 * want:
                bad.append(f"{node.output[0]}: flops {got['flops']} < 2 * macs")
        total = sum(nd["macs"] for nd in rep["nodes"])
        c.check(f"macs {name} ({n} products, {total:.4g} MACs)", not bad and n > 0,
                "; ".join(bad[:5]) + (f" (+{len(bad) - 5} more)" if len(bad) > 5 else ""))


# ---- schema ------------------------------------------------------------------

NODE_KEYS = {"name": str, "op": str, "family": str, "shape": str, "dtype": str, "outputs": list,
             "kind": str, "flops": (int, float), "macs": (int, float), "bytes": (int, float),
             "bytes_read": (int, float), "bytes_write": (int, float),
             "weight_bytes": (int, float), "intensity": (int, float), "bound": str,
             "access": str, "time_s": (int, float), "share": (int, float), "group": int,
             "priced": bool}
TOTAL_KEYS = {"flops", "macs", "bytes", "time_s", "kernels", "memory", "compute", "latency",
              "views", "build_time", "unpriced"}
MACHINE_KEYS = {"name", "description", "kind", "cores", "balance", "balance_effective",
                "peak", "memory", "efficiency", "launch_latency", "launch_mode",
                "launch_eager", "threads"}


def schema_errors(rep):
    errs = []
    for k in ("format", "model", "machine", "batch", "note", "nodes", "total", "sweep",
              "crossings", "fusion", "remarks"):
        if k not in rep:
            errs.append(f"top-level '{k}' missing")
    if errs:
        return errs
    errs += [f"machine.{k} missing" for k in MACHINE_KEYS - set(rep["machine"])]
    errs += [f"total.{k} missing" for k in TOTAL_KEYS - set(rep["total"])]
    for nd in rep["nodes"]:
        for k, t in NODE_KEYS.items():
            if k not in nd:
                errs.append(f"node {nd.get('name')}: '{k}' missing")
            elif not isinstance(nd[k], t) or (t != bool and isinstance(nd[k], bool)):
                errs.append(f"node {nd.get('name')}: '{k}' is {type(nd[k]).__name__}")
        if nd.get("bound") not in ("memory", "compute", "latency"):
            errs.append(f"node {nd.get('name')}: bound {nd.get('bound')!r}")
    return errs


def check_schema(c, rl, src, work):
    for model, hw in (("mlp", "h100"), ("gpt_block", "generic-cpu"), ("resnet_small", "a100")):
        path = os.path.join(src, "examples", model + ".onnx")
        rep, r = run_json(rl, [path, "--hw", hw], os.path.join(work, f"schema_{model}.json"))
        if rep is None:
            c.check(f"schema {model}", False, r.describe())
            continue
        errs = schema_errors(rep)
        kern = [n for n in rep["nodes"] if n["kind"] == "kernel"]
        t = sum(n["time_s"] for n in kern)
        if not math.isclose(t, rep["total"]["time_s"], rel_tol=1e-5):
            errs.append(f"node times sum to {t}, total.time_s {rep['total']['time_s']}")
        if kern and not math.isclose(sum(n["share"] for n in kern), 1.0, rel_tol=1e-4):
            errs.append("shares do not sum to 1")
        if rep["machine"]["name"] != hw:
            errs.append(f"machine.name {rep['machine']['name']!r}")
        c.check(f"schema {model} on {hw}", not errs, "; ".join(errs[:6]))


# ---- sweep -------------------------------------------------------------------


def dyn_matmul_model(path, k, n):
    w = numpy_helper.from_array(np.full((k, n), 0.01, dtype=np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", n])],
                          [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(m, path)


def check_sweep(c, rl, src, work):
    path = os.path.join(src, "examples", "tiny_mlp_dynamic.onnx")
    rep, r = run_json(rl, [path, "--hw", "h100", "--batch", "1,8,64"],
                      os.path.join(work, "sweep.json"))
    if not c.check("sweep runs", rep is not None, "" if rep else r.describe()):
        return
    sw = rep["sweep"]
    c.check("sweep: one entry per batch", [e["batch"] for e in sw] == [1, 8, 64],
            f"batches {[e.get('batch') for e in sw]}")
    # MatMul x[b,8] by w[8,4]: f = 2*8*4 FLOPs per batch row, w = 8*4*4
    # weight bytes, a = (8 + 4) * 4 bytes of activations per batch row
    mm = [e for e in sw if e["batch"] == 64]
    fl = [n["flops"] for n in mm[0]["nodes"] if n["op"] == "MatMul"] if mm else []
    c.check("sweep: MatMul FLOPs at batch 64", fl == [2 * 8 * 4 * 64], f"{fl}")
    x = [e for e in rep["crossings"] if e["op"] == "MatMul"]
    ok = len(x) == 1 and x[0]["flops_per_batch"] == 64 and x[0]["bytes_fixed"] == 128 \
        and x[0]["bytes_per_batch"] == 48 and x[0]["crossing"] in ("at", "always", "never")
    c.check("sweep: crossing entry of the MatMul", ok, json.dumps(x))
    B = rep["machine"]["balance_effective"]
    # intensity tends to 64/48 < B on h100: it never crosses
    c.check("sweep: tiny MatMul never crosses on h100", x and x[0]["crossing"] == "never"
            and 64 - B * 48 < 0, json.dumps(x))

    big = os.path.join(work, "dyn_matmul.onnx")
    dyn_matmul_model(big, 1024, 1024)
    rep, r = run_json(rl, [big, "--hw", "h100", "--batch", "1,8,64,512"],
                      os.path.join(work, "sweep_big.json"))
    if not c.check("sweep big runs", rep is not None, "" if rep else r.describe()):
        return
    B = rep["machine"]["balance_effective"]
    f, w, a = 2.0 * 1024 * 1024, 4.0 * 1024 * 1024, (1024 + 1024) * 4.0
    want = B * w / (f - B * a)
    x = rep["crossings"]
    ok = len(x) == 1 and x[0]["crossing"] == "at" and \
        math.isclose(x[0]["crossing_exact"], want, rel_tol=1e-6) and \
        x[0]["crossing_batch"] == math.ceil(want)
    c.check(f"sweep: big MatMul crosses at B*w/(f-B*a) = {want:.4g}", ok, json.dumps(x))
    bounds = {e["batch"]: [n["bound"] for n in e["nodes"] if n["op"] == "MatMul"][0] for e in rep["sweep"]}
    ok = all((bounds[b] == "compute") == (b >= want) for b in bounds if bounds[b] != "latency")
    c.check("sweep: bounds flip at the crossing", ok, f"{bounds}, crossing {want:.4g}")

    # the SVG of a sweep: one group of points per batch
    svg = os.path.join(work, "sweep.svg")
    r = rltest.run([rl, "report", big, "--hw", "h100", "--batch", "1,8,64,512", "-o", svg], 120)
    ok = r.ok and os.path.exists(svg)
    if ok:
        import xml.etree.ElementTree as ET
        root = ET.parse(svg).getroot()
        ids = {g.get("id") for g in root.iter("{http://www.w3.org/2000/svg}g")}
        ok = {"batch-1", "batch-8", "batch-64", "batch-512"} <= ids
    c.check("sweep svg: one series per batch", ok, r.describe() if not r.ok else "series missing")


# ---- kernels -------------------------------------------------------------------


def kernel_errors(rep):
    """Kernels partition the nodes that run; times add up; per-level bytes."""
    errs = []
    ks, nodes = rep["kernels"], rep["nodes"]
    seen = {}
    for i, k in enumerate(ks):
        for n in k["nodes"]:
            if n in seen:
                errs.append(f"node {n} in kernels {seen[n]} and {i}")
            seen[n] = i
        if len(k["levels"]) != len(rep["machine"]["memory"]):
            errs.append(f"kernel {k['name']}: {len(k['levels'])} levels")
        if k["tiled"] and k["bound"] == "memory" and k["bound_level"] is None:
            errs.append(f"kernel {k['name']}: memory-bound without a level")
    for n in nodes:
        if n["kind"] == "kernel" and seen.get(n["name"]) != n["kernel"]:
            errs.append(f"node {n['name']}: kernel {n['kernel']}, listed in {seen.get(n['name'])}")
    t = sum(k["time_s"] for k in ks)
    if not math.isclose(t, rep["total"]["time_s"], rel_tol=1e-6):
        errs.append(f"kernel times sum to {t}, total {rep['total']['time_s']}")
    if rep["total"]["kernels"] != len(ks):
        errs.append(f"total.kernels {rep['total']['kernels']} vs {len(ks)} kernels")
    b = sum(k["bytes"] for k in ks)
    if not math.isclose(b, rep["total"]["bytes"], rel_tol=1e-9):
        errs.append(f"kernel bytes sum to {b}, total {rep['total']['bytes']}")
    return errs


def check_kernels(c, rl, src, work):
    chain = os.path.join(src, "examples", "elementwise_chain.onnx")
    n = 4194304
    # the main form's --report of the -O2 program
    out = os.path.join(work, "chain_opt.c")
    rp = os.path.join(work, "chain_o2.json")
    r = rltest.run([rl, chain, "-O2", "-o", out, "--hw", "generic-cpu", "--report", rp], 300)
    if c.check("kernels: chain -O2 --report runs", r.ok, r.describe()):
        with open(rp) as f:
            j = json.load(f)
        t, ks = j["total"], j["kernels"]
        c.check("kernels: chain -O2 is 1 kernel of one pass (33,554,432 B)",
                t["kernels"] == 1 and len(ks) == 1 and t["bytes"] == 2 * 4 * n
                and len(ks[0]["nodes"]) == 10 and ks[0]["fused"],
                f"total {t}, kernels {[(k['name'], k['bytes'], len(k['nodes'])) for k in ks]}")
        c.check("kernels: chain FLOPs are the nodes' sum",
                t["flops"] == sum(x["flops"] for x in j["nodes"]), f"{t['flops']}")
        c.check("kernels: chain consistent", not kernel_errors(j), "; ".join(kernel_errors(j)[:5]))
        # rlopt report -O2: the same graph, the same numbers
        j2, r2 = run_json(rl, [chain, "-O2", "--hw", "generic-cpu"],
                          os.path.join(work, "chain_report_o2.json"))
        c.check("kernels: report -O2 = main form --report",
                j2 is not None and j2["total"]["bytes"] == t["bytes"]
                and j2["total"]["kernels"] == 1
                and math.isclose(j2["total"]["time_s"], t["time_s"], rel_tol=1e-9),
                r2.describe() if j2 is None else f"{j2['total']}")
    # as loaded: ten kernels, one per node
    j0, r0 = run_json(rl, [chain, "--hw", "generic-cpu"], os.path.join(work, "chain_o0.json"))
    c.check("kernels: chain as loaded is 10 kernels", j0 is not None and
            j0["total"]["kernels"] == 10 and j0["total"]["bytes"] == 10 * 2 * 4 * n + 20,
            r0.describe() if j0 is None else f"{j0['total']}")
    j1, r1 = run_json(rl, [chain, "-O0", "--hw", "generic-cpu"], os.path.join(work, "chain_O0.json"))
    c.check("kernels: report -O0 is the model as loaded", j1 is not None and j0 is not None
            and j1["total"] == j0["total"], r1.describe() if j1 is None else f"{j1['total']}")

    gpt = os.path.join(src, "examples", "gpt_block.onnx")
    j, r = run_json(rl, [gpt, "-O2", "--hw", "generic-cpu"], os.path.join(work, "gpt_o2.json"))
    if c.check("kernels: gpt_block -O2 runs", j is not None, r.describe() if j is None else ""):
        errs = kernel_errors(j)
        ops = {x["name"]: x["op"] for x in j["nodes"]}
        for k in j["kernels"]:
            kops = [ops[x] for x in k["nodes"]]
            if any(o in ("LayerNormalization", "Softmax") for o in kops) and len(k["nodes"]) != 1 \
                    and not k["fused"]:
                errs.append(f"{k['name']}: {kops}")
        norm = [k for k in j["kernels"] if ops[k["nodes"][0]] in ("LayerNormalization", "Softmax")]
        epi = [k for k in j["kernels"] if k["fused"] and ops[k["nodes"][0]] in ("MatMul", "Gemm")]
        groups = {x["group"] for x in j["nodes"] if x["group"] >= 0}
        if len(norm) != sum(1 for o in ops.values() if o in ("LayerNormalization", "Softmax")):
            errs.append(f"{len(norm)} LayerNorm/Softmax kernels")
        if not epi:
            errs.append("no epilogue kernel")
        if len([k for k in j["kernels"] if k["fused"]]) != len(groups):
            errs.append(f"{len(groups)} groups, {len([k for k in j['kernels'] if k['fused']])} "
                        f"fused kernels")
        c.check(f"kernels: gpt_block -O2: {len(j['kernels'])} kernels, {len(epi)} epilogues, "
                f"each LayerNorm/Softmax/epilogue one row", not errs, "; ".join(errs[:6]))
        tiled = [k for k in j["kernels"] if k["tiled"]]
        ok = tiled and all(k["tile"] is not None and len(k["levels"]) >= 2 for k in tiled)
        c.check("kernels: tiled kernels carry their tile and bytes per level", bool(ok),
                json.dumps(tiled[:1]))
    # text: one row per kernel; --per-node: one per node
    r = rltest.run([rl, "report", chain, "-O2", "--hw", "generic-cpu"], 120)
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith(("mul_", "add_", "relu_", "sub_",
                                                                 "tanh_", "abs_", "sqrt_", "neg_"))]
    c.check("kernels: text -O2 has one kernel row", r.ok and len(rows) == 1
            and "runs 10 nodes" in r.stdout, r.describe() + f" rows {rows}")
    r = rltest.run([rl, "report", chain, "-O2", "--per-node", "--hw", "generic-cpu"], 120)
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith(("mul_", "add_", "relu_", "sub_",
                                                                 "tanh_", "abs_", "sqrt_", "neg_"))]
    c.check("kernels: text --per-node has ten node rows", r.ok and len(rows) == 10,
            r.describe() + f" rows {len(rows)}")
    # a sweep after passes
    dyn = os.path.join(src, "examples", "tiny_mlp_dynamic.onnx")
    j, r = run_json(rl, [dyn, "-O2", "--hw", "h100", "--batch", "1,8"],
                    os.path.join(work, "dyn_o2.json"))
    c.check("kernels: report -O2 --batch 1,8 sweeps the optimized graph",
            j is not None and [e["batch"] for e in j["sweep"]] == [1, 8]
            and all("kernels" in e for e in j["sweep"]), r.describe() if j is None else "")
    # html: the kernels table with tiles; svg: a level point per tiled kernel
    html = os.path.join(work, "gpt.html")
    r = rltest.run([rl, "report", gpt, "-O2", "--hw", "generic-cpu", "-o", html], 120)
    ok = r.ok and os.path.exists(html)
    text = open(html).read() if ok else ""
    c.check("kernels: html has the kernels table with tiles", ok and "<h2>Kernels</h2>" in text
            and ("GEMM mr=" in text or "STRIP strip=" in text), r.describe())


def check_scale(c, rl, src, work):
    sys.path.insert(0, os.path.join(src, "bench"))
    try:
        import bench_report_scale as brs
    finally:
        sys.path.pop(0)
    path = os.path.join(work, "decoder.onnx")
    wb = brs.build(path, 2, 4096, 11008, 32000)
    rc, _, rss, err = brs.measure([rl, "report", path, "--hw", "generic-cpu", "--batch", "1,64"])
    c.check(f"scale: report of {wb / 1e9:.2f} GB of weights peaks at {rss / 2**20:.0f} MiB RSS "
            f"(< 300 MiB)", rc == 0 and rss < 300 * 2**20, f"exit {rc}: {err.strip()[:300]}")
    os.remove(path + ".weights")


def check_unused_options(c, rl, src, work):
    model = os.path.join(src, "examples", "mlp.onnx")
    cases = [
        (["report", model, "--weights-max", "10"], "weights-max"),
        (["report", model, "--remarks"], "remarks"),
        (["report", model, "--factorize"], "factorize"),
        (["report", model, "--report", os.path.join(work, "r.json")], "report"),
        (["report", model, "-O2", "--passes", "fold"], "passes"),
        (["diff", model, model, "-O2"], "-O2"),
        (["diff", model, model, "--weights-max", "10"], "weights-max"),
        (["diff", model, model, "-v"], "-v"),
        (["hw", "extra"], "extra"),
        (["ops", "--format", "json"], "--format"),
        ([model, "-o", os.path.join(work, "m.c"), "--batch", "1,8"], "--batch"),
        ([model, "-o", os.path.join(work, "m.c"), "--format", "json"], "--format"),
        ([model, "-o", os.path.join(work, "m.onnx"), "--weights-max", "10"], "weights-max"),
        ([model, "-o", os.path.join(work, "m.c"), "--max-rel-error", "0.1"], "--max-rel-error"),
        ([model, "-o", os.path.join(work, "m.c"), "-O1", "--factorize"], "--factorize"),
        (["run", model, "-d", work, "--report", os.path.join(work, "r.json")], "report"),
        (["run", model, "-d", work, "--batch", "1,2"], "--batch"),
    ]
    for argv, word in cases:
        r = rltest.run([rl] + argv, 60)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("Try ")]
        ok = r.returncode == 1 and len(lines) == 1 and word in lines[0]
        c.check(f"unused option is an error: rlopt {' '.join(os.path.basename(a) for a in argv)}",
                ok, f"exit {r.returncode}: {r.stderr.strip()[:300]}")
    for leftover in ("m.c", "m.onnx", "r.json"):
        c.check(f"unused option: nothing written ({leftover})",
                not os.path.exists(os.path.join(work, leftover)), leftover)


# ---- GPU launch modes ---------------------------------------------------------------


def check_launch(c, rl, src, work):
    """A GPU profile prices kernels as the CUDA backend runs them (replayed
    from a CUDA graph) unless --launch eager; the report says which; the
    time of the whole model differs by (eager - graph) per kernel."""
    model = os.path.join(src, "examples", "gpt_block.onnx")
    # the profile's own figures (hw/h200.xml), read here without rlopt
    import xml.etree.ElementTree as ET
    lat = ET.parse(os.path.join(src, "hw", "h200.xml")).getroot().find("latency")
    t_eager, t_graph = float(lat.get("launch")), float(lat.get("graph"))
    reps = {}
    for mode in ("graph", "eager"):
        j, r = run_json(rl, [model, "--hw", "h200", "--batch", "1", "--launch", mode],
                        os.path.join(work, f"l_{mode}.json"))
        reps[mode] = j
        c.check(f"report --launch {mode} on h200", j is not None and
                j["machine"]["launch_mode"] == mode, r.describe() if j is None else "")
    j, r = run_json(rl, [model, "--hw", "h200", "--batch", "1"], os.path.join(work, "l_def.json"))
    c.check("report on a GPU profile defaults to graph replay",
            j is not None and j["machine"]["launch_mode"] == "graph" and
            j["machine"]["launch_latency"] == j["machine"]["launch_graph"] == t_graph,
            r.describe() if j is None else str(j["machine"]))
    g, e = reps["graph"], reps["eager"]
    if g and e:
        n = g["total"]["kernels"]
        dt = e["total"]["time_s"] - g["total"]["time_s"]
        c.check(f"eager minus graph time is ({t_eager * 1e6:g} us - {t_graph * 1e6:g} us) per kernel",
                n > 0 and abs(dt - n * (t_eager - t_graph)) <= 1e-9 + 1e-6 * e["total"]["time_s"],
                f"{n} nodes, difference {dt:.4g} s")
    r = rltest.run([rl, "report", model, "--hw", "h200", "--batch", "1", "--launch", "graph"], 60)
    c.check("text report names the launch mode", r.ok and
            f"CUDA graph replay, {t_graph * 1e6:g} us per kernel" in r.stdout, r.describe())
    r = rltest.run([rl, "report", model, "--hw", "generic-cpu", "--launch", "graph"], 60)
    c.check("--launch graph on a CPU profile: one-line error, exit 2",
            r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and
            "CPU" in r.stderr.upper() and "graph" in r.stderr, r.describe())
    r = rltest.run([rl, "report", model, "--launch", "sometimes"], 60)
    c.check("--launch with a bad value: usage error, exit 1", r.returncode == 1 and
            "eager or graph" in r.stderr, r.describe())
    out = os.path.join(work, "mlp_eager.cu")
    r = rltest.run([rl, os.path.join(src, "examples", "mlp.onnx"), "-o", out, "--launch",
                    "eager"], 120)
    ok = r.ok and "#define RL_CUDA_NO_GRAPH 1" in open(out).read()
    out2 = os.path.join(work, "mlp_graph.cu")
    r2 = rltest.run([rl, os.path.join(src, "examples", "mlp.onnx"), "-o", out2], 120)
    ok = ok and r2.ok and "#define RL_CUDA_NO_GRAPH 1" not in open(out2).read()
    c.check(".cu built with --launch eager launches kernel by kernel; default replays a graph",
            ok, r.describe() + r2.describe())


# ---- --threads ---------------------------------------------------------------------


def check_threads(c, rl, src, work):
    """--threads N prices the run on N of a CPU profile's cores: the same as
    no option at N = cores (and above, capped), slower at 1 (resnet_small's
    convolutions split across cores); refused for a GPU profile (exit 2) and
    for a bad count (exit 1)."""
    model = os.path.join(src, "examples", "resnet_small.onnx")
    reps = {}
    for t in (None, "1", "96", "500"):
        extra = ["--threads", t] if t else []
        j, r = run_json(rl, [model, "-O2", "--hw", "epyc9654"] + extra,
                        os.path.join(work, f"t_{t}.json"))
        reps[t] = j
        c.check(f"report --threads {t} on epyc9654", j is not None, r.describe())
    if all(reps.values()):
        d, one, full, over = reps[None], reps["1"], reps["96"], reps["500"]
        c.check("threads in the JSON: 96 by default, 1 with --threads 1, capped at the cores",
                (d["machine"]["threads"], one["machine"]["threads"], over["machine"]["threads"]) ==
                (96, 1, 96), str((d["machine"]["threads"], one["machine"]["threads"])))
        c.check("--threads 96 (= cores) prices as the default",
                full["total"]["time_s"] == d["total"]["time_s"])
        c.check("one thread is priced slower than 96",
                one["total"]["time_s"] > 2 * d["total"]["time_s"],
                f'{one["total"]["time_s"]:.4g} vs {d["total"]["time_s"]:.4g} s')
    r = rltest.run([rl, "report", model, "--threads", "1"], 60)
    c.check("text report says the thread count", r.ok and "--threads" in r.stdout, r.describe())
    r = rltest.run([rl, "report", model, "--hw", "h200", "--threads", "2"], 60)
    c.check("--threads on a GPU profile: one-line error, exit 2",
            r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "gpu" in r.stderr,
            r.describe())
    for bad in ("0", "two", "-1", "1.5"):
        r = rltest.run([rl, "report", model, "--threads", bad], 60)
        c.check(f"--threads {bad}: usage error, exit 1", r.returncode == 1 and
                "--threads" in r.stderr, r.describe())


# ---- main form and bad input ------------------------------------------------------


def check_main_form(c, rl, src, work):
    model = os.path.join(src, "examples", "mlp.onnx")
    out = os.path.join(work, "mlp_opt.c")
    rep = os.path.join(work, "mlp_report.json")
    r = rltest.run([rl, model, "-o", out, "--hw", "generic-cpu", "--report", rep], 120)
    ok = r.ok and os.path.exists(rep)
    detail = r.describe() if not r.ok else ""
    if ok:
        with open(rep) as f:
            j = json.load(f)
        passes = {x["pass"] for x in j["remarks"]}
        ok = "roofline" in passes and not schema_errors(j)
        detail = f"passes with remarks: {sorted(passes)}"
    c.check("main form --report FILE.json (with the passes' remarks)", ok, detail)
    html = os.path.join(work, "mlp_report.html")
    r = rltest.run([rl, model, "-o", out, "--report", html], 120)
    ok = r.ok and os.path.exists(html) and "<svg" in open(html).read()
    c.check("main form --report FILE.html", ok, r.describe())


def check_bad(c, rl, src, work):
    model = os.path.join(src, "examples", "mlp.onnx")
    bad_xml = os.path.join(work, "bad.xml")
    with open(bad_xml, "w") as f:
        f.write("<machine name='x'><compute>\n")
    cases = [
        ("unknown --hw", [model, "--hw", "nosuchmachine"], 2, ["h100", "a100"]),
        ("bad --batch list", [model, "--batch", "1,x"], 1, ["--batch"]),
        ("zero --batch", [model, "--batch", "0"], 1, ["--batch"]),
        ("trailing comma --batch", [model, "--batch", "1,"], 1, ["--batch"]),
        ("missing model", [os.path.join(work, "nope.onnx")], 2, ["nope.onnx"]),
        ("malformed profile", [model, "--hw", bad_xml], 2, ["bad.xml"]),
        ("unknown format", [model, "--format", "yaml"], 1, ["yaml"]),
    ]
    for i, (what, args, code, words) in enumerate(cases):
        out = os.path.join(work, f"bad_{i}.json")
        r = rltest.run([rl, "report"] + args + ["-o", out], 60)
        errs = []
        if r.timed_out or r.returncode != code:
            errs.append(f"exit {r.returncode}, want {code}")
        for w in words:
            if w not in r.stderr:
                errs.append(f"stderr lacks {w!r}")
        if os.path.exists(out):
            errs.append("output written")
        c.check(f"bad input: {what}", not errs, "; ".join(errs) + " | " + r.stderr.strip()[:300])
    out = os.path.join(work, "x.pdf")
    r = rltest.run([rl, "report", model, "-o", out], 60)
    c.check("bad input: unknown extension", r.returncode == 1 and not os.path.exists(out),
            r.describe())
    out = os.path.join(work, "nodir", "x.json")
    r = rltest.run([rl, "report", model, "-o", out], 60)
    c.check("bad input: missing output folder", r.returncode == 2 and not os.path.exists(out),
            r.describe())


def check_profile(c, rl, src, work):
    """-DRL_PROFILE: the generated code times its kernels, and names them as
    the report's `kernels` does, in the same order."""
    gpt = os.path.join(src, "examples", "gpt_block.onnx")
    cpath = os.path.join(work, "gpt_prof.c")
    rp = os.path.join(work, "gpt_prof.json")
    r = rltest.run([rl, gpt, "-O2", "-o", cpath, "--report", rp], 300)
    if not c.check("profile: gpt_block -O2 --report runs", r.ok, r.describe()):
        return
    with open(rp) as f:
        names = [k["name"] for k in json.load(f)["kernels"]]
    exe = os.path.join(work, "gpt_prof")
    cc = os.environ.get("CC", "cc")
    r = rltest.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-DRL_PROFILE",
                    "-DRL_HAVE_THREADS", "-I", work, '-DRL_MODEL_HEADER="gpt_prof.h"',
                    "-DRL_PREFIX=gpt_prof", "-DRL_PREFIX_UC=GPT_PROF",
                    os.path.join(src, "bench", "timing_harness.c"), cpath, "-o", exe, "-lm"], 300)
    if not c.check("profile: builds warning-free with -DRL_PROFILE", r.ok, r.describe()):
        return
    r = rltest.run([exe, "--runs", "7", "--threads", "1"], 120)
    rows = [l.split("\t") for l in r.stdout.splitlines() if l.count("\t") == 5] if r.ok else []
    body = [f for f in rows if f[0] != "kernel"]
    c.check("profile: one row per report kernel, in run order",
            [f[0] for f in body] == names, f"profile {[f[0] for f in body]}, report {names}")
    c.check("profile: each kernel called once per timed run (7)",
            body and all(f[1] == "7" for f in body), str(body[:3]))
    ok = bool(body)
    try:
        share = sum(float(f[5]) for f in body)
        ok = ok and abs(share - 1) < 0.01 and all(0 < float(f[4]) <= float(f[3]) <= float(f[2])
                                                  for f in body)
    except ValueError:
        ok = False
    c.check("profile: times positive, min <= mean <= total, shares sum to 1", ok, str(body[:3]))


def main():
    def body(c, args, work):
        check_macs(c, args.rlopt, work)
        check_schema(c, args.rlopt, args.source, work)
        check_sweep(c, args.rlopt, args.source, work)
        check_main_form(c, args.rlopt, args.source, work)
        check_kernels(c, args.rlopt, args.source, work)
        check_unused_options(c, args.rlopt, args.source, work)
        check_launch(c, args.rlopt, args.source, work)
        check_threads(c, args.rlopt, args.source, work)
        check_profile(c, args.rlopt, args.source, work)
        check_scale(c, args.rlopt, args.source, work)
        check_bad(c, args.rlopt, args.source, work)
    return rltest.check_main(__doc__, "rlopt-report.", body)


if __name__ == "__main__":
    sys.exit(main())
