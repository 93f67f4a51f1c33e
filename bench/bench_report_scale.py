#!/usr/bin/env python3
"""bench_report_scale.py - does `rlopt report` stay cheap on a 7B-shaped model?

Builds a Llama-7B-shaped fp16 decoder with onnx.helper: token ids [batch, 1]
-> Gather of a vocab x hidden embedding -> LAYERS blocks (LayerNorm; q, k, v
and o projections hidden x hidden; an elementwise stand-in for attention at
sequence length 1; LayerNorm; SwiGLU MLP with gate and up hidden x
intermediate and down intermediate x hidden; two residual adds) -> LayerNorm
-> lm_head hidden x vocab. Defaults: 32 layers, hidden 4096, intermediate
11008, vocab 32000: 6.74 G parameters, 13.5 GB of fp16 weights in one external
data file. The file is made with a seek + truncate, a sparse file: it costs no
disk, and reading it returns zeros (the report does not care about values, and
the rewrite judge's error estimates of zero weights are cheap either way).

Then it runs, each in a fresh child, and measures wall time and peak RSS
(os.wait4's rusage of that child):

  1. rlopt report MODEL --hw H                     (batch 1)
  2. rlopt report MODEL --hw H --batch 1,8,64,512  (a batch sweep)

and prints PASS/FAIL against the criteria (default: under 10 s and 1 GiB peak
RSS each). A peak RSS near the weight size means something reads every weight
(each touched page of the mmap'd file counts).

It is a benchmark: the criteria are printed; it exits 1 only when rlopt fails
or, with --strict, when a criterion fails.

With --quantize MODE (e.g. auto, int4) it runs, instead, the decode step at
batch 1 through the passes fold, roofline and quantize (`--passes
fold,roofline,quantize --quantize MODE --max-rel-error E`: not -O2, whose
dedupe and cse would merge the identical all-zero weights of q/k/v and
gate/up and hide their bytes) and prints each quantized node's scheme, the
model's bytes and predicted time before (same passes without quantize) and
after, and the wall time and peak RSS of the quantizing run. The weights
read as zeros, so the measured errors are 0 and say nothing; bytes and
times are what this run is for (e.g. --hw h200 --quantize auto: every
projection is memory-bound at batch 1).

With --quantize MODE --write it runs instead `rlopt MODEL -o q.onnx --batch 1
--passes fold,roofline,quantize --quantize MODE --onnx-format matmulnbits` (the model quantized and written with
external data: q.onnx and q.onnx.data next to it) and prints its wall time,
peak RSS, the weight bytes read and written, and whether onnx.checker accepts
q.onnx (by path: the data is not loaded). The quantize pass spills the packed
codes to a temporary file ($TMPDIR) and the writer streams them, so both the
output and the spill need disk: about 2 x 0.28 bytes per fp16 weight (int4,
blocks of 32). --data-dir puts the model and the output there (default: a
temporary folder).

Usage: bench_report_scale.py --rlopt build/rlopt [--hw generic-cpu]
         [--layers 32] [--hidden 4096] [--intermediate 11008] [--vocab 32000]
         [--max-seconds 10] [--max-rss-mib 1024] [--keep] [--strict]
         [--quantize auto|int8|int4 [--max-rel-error 0.15] [--write]]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import onnx
from onnx import TensorProto, helper

F16 = TensorProto.FLOAT16


class Weights:
    """External fp16 initializers laid out back to back in one file."""

    def __init__(self, fname):
        self.fname = fname
        self.offset = 0
        self.inits = []

    def add(self, name, dims):
        n = 1
        for d in dims:
            n *= d
        t = TensorProto()
        t.name = name
        t.data_type = F16
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", self.fname), ("offset", str(self.offset)),
                     ("length", str(2 * n))):
            e = t.external_data.add()
            e.key, e.value = k, v
        self.offset += 2 * n
        self.offset = (self.offset + 63) // 64 * 64  # aligned, as onnx writes them
        self.inits.append(t)
        return name


def build(path, layers, hidden, inter, vocab):
    """Write the model and its sparse weight file; returns the weight bytes."""
    d = os.path.dirname(path)
    wname = os.path.basename(path) + ".weights"
    w = Weights(wname)
    nodes = []
    inits_small = []

    def ln(x, tag):
        s = w.add(f"{tag}.scale", [hidden])
        b = w.add(f"{tag}.bias", [hidden])
        nodes.append(helper.make_node("LayerNormalization", [x, s, b], [f"{tag}.y"],
                                      name=tag, axis=-1, epsilon=1e-5))
        return f"{tag}.y"

    def mm(x, wn, dims, tag):
        w.add(wn, dims)
        nodes.append(helper.make_node("MatMul", [x, wn], [f"{tag}.y"], name=tag))
        return f"{tag}.y"

    def op(kind, ins, tag, **kw):
        nodes.append(helper.make_node(kind, ins, [f"{tag}.y"], name=tag, **kw))
        return f"{tag}.y"

    w.add("embed", [vocab, hidden])
    x = op("Gather", ["embed", "ids"], "embed.gather", axis=0)
    for i in range(layers):
        p = f"l{i}"
        h = ln(x, f"{p}.ln1")
        q = mm(h, f"{p}.wq", [hidden, hidden], f"{p}.q")
        k = mm(h, f"{p}.wk", [hidden, hidden], f"{p}.k")
        v = mm(h, f"{p}.wv", [hidden, hidden], f"{p}.v")
        # attention at sequence length 1, as elementwise work on [b, 1, hidden]
        s = op("Mul", [q, k], f"{p}.qk")
        s = op("Softmax", [s], f"{p}.softmax", axis=-1)
        a = op("Mul", [s, v], f"{p}.pv")
        o = mm(a, f"{p}.wo", [hidden, hidden], f"{p}.o")
        x = op("Add", [x, o], f"{p}.res1")
        h = ln(x, f"{p}.ln2")
        g = mm(h, f"{p}.wg", [hidden, inter], f"{p}.gate")
        u = mm(h, f"{p}.wu", [hidden, inter], f"{p}.up")
        sg = op("Sigmoid", [g], f"{p}.sig")
        g = op("Mul", [g, sg], f"{p}.silu")
        g = op("Mul", [g, u], f"{p}.glu")
        dn = mm(g, f"{p}.wd", [inter, hidden], f"{p}.down")
        x = op("Add", [x, dn], f"{p}.res2")
    h = ln(x, "final.ln")
    y = mm(h, "lm_head", [hidden, vocab], "lm_head")
    graph = helper.make_graph(
        nodes, "decoder",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 1])],
        [helper.make_tensor_value_info(y, F16, ["batch", 1, vocab])],
        w.inits + inits_small)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    # the sparse weight file: a seek and a truncate, no data written
    with open(os.path.join(d, wname), "wb") as f:
        f.truncate(w.offset)
    return w.offset


def measure(argv):
    """Run argv in a fresh child: (returncode, wall seconds, peak RSS bytes, stderr).

    Under GNU time when it is there (its %M is the child's own peak; a child
    forked from this Python process carries Python's pages as its recorded
    maximum across the exec), else os.wait4's figure, an upper bound."""
    if os.access("/usr/bin/time", os.X_OK):
        t = time.perf_counter()
        r = subprocess.run(["/usr/bin/time", "-f", "RLPEAK %M"] + argv,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.perf_counter() - t
        lines = r.stderr.decode(errors="replace").splitlines()
        if lines and lines[-1].startswith("RLPEAK "):
            return r.returncode, wall, int(lines[-1].split()[1]) * 1024, "\n".join(lines[:-1])
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, wall, ru.ru_maxrss * 1024, err.decode(errors="replace")


def quantize_step(args, path, work):
    """The decode step (batch 1) priced before and after --quantize."""
    import json
    totals = {}
    for what, extra in (("float", ["--passes", "fold,roofline"]),
                        (args.quantize, ["--passes", "fold,roofline,quantize", "--quantize",
                                         args.quantize, "--max-rel-error", args.max_rel_error])):
        out = os.path.join(work, f"{what}.json")
        argv = [args.rlopt, "report", path, "--hw", args.hw, "--format", "json", "-o", out] + extra
        rc, wall, rss, err = measure(argv)
        if rc != 0:
            print(f"{what}: rlopt failed (exit {rc}): {err.strip()[:500]}")
            return 1
        r = json.load(open(out))
        totals[what] = r["total"]
        print(f"{what:>8}: report {wall:6.1f} s wall, peak RSS {rss / 2**20:7.1f} MiB; the step "
              f"moves {r['total']['bytes'] / 1e9:.3f} GB, predicted {r['total']['time_s'] * 1e3:.3f} ms "
              f"on {args.hw}")
        rems = [m for m in r["remarks"] if m["pass"] == "quantize"]
        kinds = {}
        for m in rems:
            key = m["verdict"] + (": " + m["msg"].split(":")[0] if m["verdict"] in ("int8", "int4")
                                  else "")
            kinds.setdefault(key, []).append(m["node"])
        for k, nodes in sorted(kinds.items()):
            if k == "summary":
                print(f"          {rems[-1]['msg']}")
                continue
            print(f"          {k}: {len(nodes)} nodes ({', '.join(nodes[:4])}"
                  f"{', ...' if len(nodes) > 4 else ''})")
    b0, b1 = totals["float"]["bytes"], totals[args.quantize]["bytes"]
    t0, t1 = totals["float"]["time_s"], totals[args.quantize]["time_s"]
    print(f"decode step on {args.hw}: bytes {b0 / 1e9:.3f} -> {b1 / 1e9:.3f} GB ({b0 / b1:.2f}x "
          f"fewer), predicted time {t0 * 1e3:.3f} -> {t1 * 1e3:.3f} ms ({t0 / t1:.2f}x)")
    return 0


def write_step(args, path, work):
    """Quantize and write the model with external data; time and peak RSS."""
    q = os.path.join(work, "q.onnx")
    # the model imports opset 17: DequantizeLinear with block_size needs 21, so
    # the file gets com.microsoft MatMulNBits
    argv = [args.rlopt, path, "-o", q, "--batch", "1", "--passes", "fold,roofline,quantize",
            "--quantize", args.quantize, "--max-rel-error", args.max_rel_error, "--hw", args.hw,
            "--onnx-format", "matmulnbits", "--remarks"]
    rc, wall, rss, err = measure(argv)
    if rc != 0:
        print(f"write: rlopt failed (exit {rc}): {err.strip()[-500:]}")
        return 1
    nq = sum(1 for ln in err.splitlines() if ln.startswith("remark: quantize:")
             and (": int4:" in ln or ": int8:" in ln))
    data = q + ".data"
    qb = os.path.getsize(q)
    db = os.path.getsize(data) if os.path.exists(data) else 0
    st = os.stat(path + ".weights")
    ok_m = rss < args.max_rss_mib * 2**20
    print(f"   -o q.onnx ({args.quantize}): {wall:7.1f} s wall, peak RSS {rss / 2**20:7.1f} MiB "
          f"({'PASS' if ok_m else 'FAIL'} < {args.max_rss_mib:g} MiB); {nq} products quantized; "
          f"read {st.st_size / 1e9:.2f} GB of weights, wrote q.onnx {qb / 1e6:.2f} MB + "
          f"q.onnx.data {db / 1e9:.3f} GB")
    try:
        onnx.checker.check_model(q)
        print("   onnx.checker accepts q.onnx (external data by path)")
    except Exception as e:  # noqa: BLE001 - report whatever the checker says
        print(f"   onnx.checker rejects q.onnx: {str(e)[:300]}")
        return 1
    return 1 if args.strict and not ok_m else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rlopt", required=True)
    ap.add_argument("--hw", default="generic-cpu")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--intermediate", type=int, default=11008)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--batches", default="1,8,64,512")
    ap.add_argument("--max-seconds", type=float, default=10.0)
    ap.add_argument("--max-rss-mib", type=float, default=1024.0)
    ap.add_argument("--keep", action="store_true", help="keep the model folder")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a criterion fails")
    ap.add_argument("--quantize", help="time the quantize pass on the decode step instead")
    ap.add_argument("--max-rel-error", default="0.15", help="with --quantize")
    ap.add_argument("--write", action="store_true",
                    help="with --quantize: write the quantized model (-o, external data)")
    ap.add_argument("--data-dir", help="folder for the model and outputs (default: a temp folder)")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="rlopt-scale.", dir=args.data_dir)
    try:
        path = os.path.join(work, "decoder.onnx")
        t = time.perf_counter()
        wb = build(path, args.layers, args.hidden, args.intermediate, args.vocab)
        st = os.stat(path + ".weights")
        print(f"model: {args.layers} layers, hidden {args.hidden}, intermediate "
              f"{args.intermediate}, vocab {args.vocab}, fp16: {wb / 1e9:.2f} GB of weights "
              f"({st.st_blocks * 512 / 1e6:.1f} MB on disk), built in "
              f"{time.perf_counter() - t:.1f} s")
        if args.quantize and args.write:
            return write_step(args, path, work)
        if args.quantize:
            return quantize_step(args, path, work)
        fails = 0
        for what, extra in (("batch 1", []), (f"sweep {args.batches}", ["--batch", args.batches])):
            argv = [args.rlopt, "report", path, "--hw", args.hw] + extra
            rc, wall, rss, err = measure(argv)
            if rc != 0:
                print(f"{what}: rlopt failed (exit {rc}): {err.strip()[:500]}")
                return 1
            ok_t = wall < args.max_seconds
            ok_m = rss < args.max_rss_mib * 2**20
            fails += (not ok_t) + (not ok_m)
            print(f"{what:>24}: {wall:6.2f} s ({'PASS' if ok_t else 'FAIL'} < "
                  f"{args.max_seconds:g} s), peak RSS {rss / 2**20:7.1f} MiB "
                  f"({'PASS' if ok_m else 'FAIL'} < {args.max_rss_mib:g} MiB)")
        if args.keep:
            print(f"kept {work}")
        return 1 if args.strict and fails else 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
