#!/usr/bin/env python3
"""bench_ort.py - rlopt's generated C against onnxruntime, and both against
this machine's limits.

For each model:

  1. rlopt MODEL -o WORK/NAME.c [--rlopt-args]      (the C and NAME.h)
  2. cc -O2 -march=native (and plain -O2) bench/timing_harness.c NAME.c: the
     harness fills the inputs from NAME_inputs[] with a fixed pseudo-random
     pattern and times NAME_run_v (see bench/timing_harness.c)
  3. one harness run dumps its inputs and outputs; onnxruntime runs on the same
     inputs and the outputs must match (rtol 1e-3, atol 1e-4), else MISMATCH
  4. timing, interleaved in rounds (ours per variant, ORT 1 thread, ORT all
     threads; the same number of runs N each), best of the rounds' medians
  5. the machine limit: bytes the model must move at least (inputs, weights,
     outputs) over the measured stream bandwidth, and MatMul/Gemm/Conv FLOPs
     over the measured FMA peak (bench/stream_limit.c)

ORT: CPUExecutionProvider, ORT_ENABLE_ALL, inter_op_num_threads=1,
intra_op_num_threads=1 or os.cpu_count(), inputs and outputs bound once with
IOBinding (no per-run numpy conversion). Our side runs with NAME_set_threads
(--ours-threads, default 1) when the generated header declares it.

Models: gpt_block, mlp, resnet_small, elementwise_chain (examples/gen_models.py)
and any light_* model shipped in the onnx wheel (weights made by
ConstantOfShape: the generated C fills them on every run, ORT folds them once).

It is a benchmark, not a test: it exits 0 unless something fails to generate,
build, run or match.

Usage: bench_ort.py --rlopt build/rlopt [--models a,b] [--runs N]
                    [--rlopt-args "-O0"] [--variants native,plain] [--profile]
"""

import argparse
import math
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(SOURCE, "tests", "py"))
import rltest  # noqa: E402

EXAMPLES = ["gpt_block", "mlp", "resnet_small", "elementwise_chain"]
DEFAULT_MODELS = EXAMPLES + ["light_resnet50", "light_squeezenet"]
VARIANTS = {
    "native": ["-O2", "-march=native"],
    "plain": ["-O2"],
    # what `rlopt run` uses: ISO C turns off FMA contraction (-ffp-contract=off)
    "c11native": ["-std=c11", "-O2", "-march=native"],
}
RTOL, ATOL = 1e-3, 1e-4


class BenchError(Exception):
    pass


def sh(cmd, timeout, cwd=None, what=None):
    r = rltest.run(cmd, timeout=timeout, cwd=cwd)
    if not r.ok:
        raise BenchError(f"{what or cmd[0]}: {r.describe(12)}\n    command: {shlex.join(cmd)}")
    return r


def parse_kv(text):
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return out


# ---- machine limits -------------------------------------------------------


def machine_limits(work, cc):
    exe = os.path.join(work, "stream_limit")
    sh([cc, "-O2", "-march=native", "-pthread", os.path.join(HERE, "stream_limit.c"), "-o", exe], 300,
       what="compile stream_limit.c")
    r = sh([exe], 300, what="stream_limit")
    return parse_kv(r.stdout), r.stdout


# ---- model cost: bytes it must move, FLOPs of the dense ops ----------------


def _elem_size(elem_type):
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).itemsize
    except Exception:
        return 4


def _dims(tt):
    if not tt.HasField("shape"):
        return None
    dims = []
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(d.dim_value)
    return dims


def model_cost(path):
    """(bytes, flops): bytes of the real inputs, weights (initializers,
    Constant values, ConstantOfShape outputs) and outputs; flops = 2 * MACs of
    MatMul, Gemm and Conv (other ops not counted)."""
    model = onnx.load(path)
    inf = onnx.shape_inference.infer_shapes(model, data_prop=True)
    g = inf.graph
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if vi.type.HasField("tensor_type"):
            d = _dims(vi.type.tensor_type)
            if d is not None:
                shapes[vi.name] = (d, vi.type.tensor_type.elem_type)
    for t in g.initializer:
        shapes[t.name] = (list(t.dims), t.data_type)

    def nbytes(name):
        if name not in shapes:
            return 0
        d, et = shapes[name]
        return int(np.prod(d, dtype=np.int64)) * _elem_size(et)

    total = sum(nbytes(vi.name) for vi in rltest.graph_inputs(model))
    total += sum(nbytes(t.name) for t in g.initializer)
    total += sum(nbytes(o.name) for o in g.output)
    flops = 0
    for n in g.node:
        if n.op_type in ("Constant", "ConstantOfShape"):
            total += sum(nbytes(o) for o in n.output)
        y = shapes.get(n.output[0]) if n.output else None
        if y is None:
            continue
        ny = int(np.prod(y[0], dtype=np.int64))
        a = shapes.get(n.input[0]) if n.input else None
        if n.op_type == "MatMul" and a:
            flops += 2 * ny * a[0][-1]
        elif n.op_type == "Gemm" and a:
            trans_a = next((at.i for at in n.attribute if at.name == "transA"), 0)
            flops += 2 * ny * (a[0][0] if trans_a else a[0][1])
        elif n.op_type == "Conv" and len(n.input) > 1 and n.input[1] in shapes:
            w = shapes[n.input[1]][0]
            flops += 2 * ny * int(np.prod(w[1:], dtype=np.int64))
    return total, flops


# ---- our side ---------------------------------------------------------------


def generate(args, name, path, work):
    c = os.path.join(work, name + ".c")
    sh([args.rlopt, path, "-o", c] + shlex.split(args.rlopt_args), 600, what=f"rlopt {name}")
    with open(os.path.join(work, name + ".h")) as f:
        hdr = f.read()
    m = re.search(r"#define (\w+)_NUM_INPUTS ", hdr)
    if not m:
        raise BenchError(f"{name}.h: no NAME_NUM_INPUTS macro")
    weights = os.path.join(work, name + ".weights")
    # NAME_set_threads: the harness calls it when built with RL_HAVE_THREADS
    threaded = re.search(rf"\b{re.escape(name)}_set_threads\s*\(", hdr) is not None
    return c, m.group(1), (weights if os.path.exists(weights) else None), threaded


def build(args, name, c, upper, work, variant, extra=()):
    exe = os.path.join(work, f"{name}_{variant}")
    if args.threaded:
        extra = list(extra) + ["-pthread", "-DRL_HAVE_THREADS"]
    cmd = [args.cc] + VARIANTS.get(variant, []) + list(extra) + [
        "-I", work, f'-DRL_MODEL_HEADER="{name}.h"', f"-DRL_PREFIX={name}",
        f"-DRL_PREFIX_UC={upper}", os.path.join(HERE, "timing_harness.c"), c, "-o", exe, "-lm"]
    sh(cmd, 1200, what=f"cc {variant} {name}")
    return exe


def harness(exe, weights, flags, cwd, threads=0):
    cmd = [exe] + flags + (["--weights", weights] if weights else [])
    if threads:
        cmd += ["--threads", str(threads)]
    return parse_kv(sh(cmd, 3600, cwd=cwd, what=os.path.basename(exe)).stdout)


# ---- onnxruntime ------------------------------------------------------------


def ort_session(path, threads, profile_prefix=None):
    """onnxruntime on the CPU as the benches time it: `threads` intra-op
    threads, sequential, every graph optimization; with profile_prefix its
    per-node profile is written (SessionOptions.enable_profiling)"""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


class OrtSide:
    def __init__(self, path, threads, feeds):
        self.sess = ort_session(path, threads)
        self.feeds = feeds
        self.binding = self.sess.io_binding()
        for k, v in feeds.items():
            self.binding.bind_cpu_input(k, v)
        for o in self.sess.get_outputs():
            self.binding.bind_output(o.name, "cpu")
        for _ in range(2):
            self.sess.run_with_iobinding(self.binding)

    def time(self, n):
        """per-run wall and thread CPU times of n runs"""
        wt, ct = [], []
        run, b = self.sess.run_with_iobinding, self.binding
        for _ in range(n):
            c0 = time.thread_time()  # outside the wall-clock window (a system call)
            w0 = time.perf_counter()
            run(b)
            w1 = time.perf_counter()
            c1 = time.thread_time()
            wt.append(w1 - w0)
            ct.append(c1 - c0)
        return {"median_s": statistics.median(wt), "min_s": min(wt),
                "cpu_median_s": statistics.median(ct), "cpu_min_s": min(ct)}


def read_dumped_inputs(model, dump):
    feeds = {}
    for k, vi in enumerate(rltest.graph_inputs(model)):
        tt = vi.type.tensor_type
        dt = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]
        raw = np.fromfile(os.path.join(dump, f"input_{k}.bin"), dtype=dt)
        if raw.size != int(np.prod(shape, dtype=np.int64)):
            raise BenchError(f"input {k} ({vi.name}): {raw.size} elements, model says {shape}")
        feeds[vi.name] = raw.reshape(shape)
    return feeds


def verify(name, variant, sess, feeds, dump):
    ref = sess.run(None, feeds)
    problems = []
    worst = 0.0
    for k, (o, e) in enumerate(zip(sess.get_outputs(), ref)):
        e = np.asarray(e)
        got = np.fromfile(os.path.join(dump, f"output_{k}.bin"), dtype=e.dtype)
        if got.size != e.size:
            problems.append(f"output {k} ({o.name}): {got.size} elements, ORT gives {e.size}")
            continue
        ok, msg, mabs, _ = rltest.compare(got.reshape(e.shape), e, rtol=RTOL, atol=ATOL)
        worst = max(worst, mabs or 0.0)
        if not ok:
            problems.append(f"output {k} ({o.name}): {msg}")
    if problems:
        bar = "!" * 72
        print(f"{bar}\nMISMATCH {name} [{variant}] vs onnxruntime (rtol {RTOL:g}, atol {ATOL:g}):")
        for p in problems:
            print("    " + p)
        print(bar, flush=True)
        return False
    print(f"  {name} [{variant}]: outputs match onnxruntime (max abs err {worst:.3g})", flush=True)
    return True


# ---- profiling --------------------------------------------------------------


def kernel_table(c_path):
    """kernel function name -> (node, op, shapes) from the generated comments"""
    pat = re.compile(r"/\* node '(.*?)' \((\w+)\): (.*?) \*/\nstatic void (k\d+_\w+)\(")
    with open(c_path) as f:
        text = f.read()
    table = {m.group(4): (m.group(1), m.group(2), m.group(3)) for m in pat.finditer(text)}
    # fused kernels: "/* fused: Conv 'name' with its epilogue ...\n *   ...\n * X0 ... -> Y0 ...\n */"
    # (an anchored group, named after its anchor op) or "/* fused: 3 elementwise ONNX nodes ..."
    fpat = re.compile(r"/\* fused: (?:(\w+) '([^'\n]*)'|(\d+ elementwise))[^\n]*\n"
                      r"(?: \*   [^\n]*\n)*? \* (X0 [^\n]*?)\n \*/\nstatic void (k\d+_\w+)\(")
    for m in fpat.finditer(text):
        op = m.group(1) or "fused elementwise"
        table[m.group(5)] = (m.group(2) or "", op, re.sub(r" '[^']*'", "", m.group(4)))
    return table


def kernel_flops(op, shapes):
    """2 * MACs of a Conv/MatMul/Gemm kernel from its comment's shapes
    ("X0 float32[1x16x32x32], X1 float32[32x16x3x3] -> Y0 float32[1x32x16x16]");
    0 for other ops (Gemm assumed without transA)"""
    dims = {m.group(1): [int(d) for d in m.group(2).split("x") if d]
            for m in re.finditer(r"(\w+) \w+\[([\dx]*)\]", shapes)}
    y, x0, x1 = dims.get("Y0"), dims.get("X0"), dims.get("X1")
    if not y or not x0:
        return 0
    ny = int(np.prod(y, dtype=np.int64))
    if op == "Conv" and x1:
        return 2 * ny * int(np.prod(x1[1:], dtype=np.int64))
    if op in ("MatMul", "Gemm"):
        return 2 * ny * x0[-1]
    return 0


def profile(args, name, c, upper, weights, work, run_s, top=12):
    """perf with DWARF call graphs on a build where each kernel is its own
    symbol (-fno-inline; no clones, -fno-ipa-cp; and no identical-code folding,
    -fno-ipa-icf, which would merge same-shape kernels into one), so the libm
    calls a kernel makes count towards it (inclusive time)"""
    if not shutil.which("perf"):
        print("  (perf not found: no profile)")
        return
    exe = build(args, name, c, upper, work, args.variant_list[0], extra=["-g", "-fno-inline", "-fno-ipa-cp", "-fno-ipa-icf"])
    data = os.path.join(work, name + ".perf.data")
    cmd = ["perf", "record", "-q", "--call-graph", "dwarf", "-F", "499", "-o", data, "--", exe,
           "--seconds", "2"] + (["--weights", weights] if weights else []) + \
          (["--threads", str(args.ours_threads)] if args.threaded else [])
    sh(cmd, 600, cwd=work, what="perf record")
    r = sh(["perf", "report", "-i", data, "--stdio", "--children", "--sort", "symbol", "-g", "none"],
           600, what="perf report")
    kt = kernel_table(c)
    incl, self_ = {}, {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+\[.\]\s+(\S+)", line)
        if m:
            incl[m.group(3)] = incl.get(m.group(3), 0.0) + float(m.group(1))
            self_[m.group(3)] = self_.get(m.group(3), 0.0) + float(m.group(2))
    run = incl.get(f"{name}_run_v", 0.0)
    if run <= 0:
        print(f"  (profile: no samples in {name}_run_v)")
        return
    # a kernel and its compiler clone (k12_n3.constprop.0), one calling the
    # other, both show the clone's time inclusively: keep the larger
    per_kernel = {}
    for sym, pct in incl.items():
        base = sym.split(".")[0]
        if base in kt:
            per_kernel[base] = max(per_kernel.get(base, 0.0), pct)
    # kernels do not nest: their inclusive times plus run_v's own add up to
    # the run (run_v's inclusive figure is lower when DWARF unwinding through a
    # big stack frame fails, so it is not the denominator)
    run = sum(per_kernel.values()) + self_.get(f"{name}_run_v", 0.0)
    rows, by_op = [], {}
    for base, pct in per_kernel.items():
        node, op, shapes = kt[base]
        share = 100.0 * pct / run
        rows.append((share, base, op, shapes))
        by_op[op] = by_op.get(op, 0.0) + share
    rows.sort(key=lambda x: -x[0])
    glue = 100.0 * self_.get(f"{name}_run_v", 0.0) / run
    print(f"  profile of {name}_run_v (perf, -fno-inline build; inclusive share of run time, "
          f"libm calls included; GFLOP/s = the kernel's MatMul/Gemm/Conv FLOPs over its share "
          f"of the thread-CPU median {fmt_s(run_s)}):")
    print(f"    {'share':>6}  {'kernel':<24} {'op':<18} {'GFLOP/s':>7}  shapes")
    for share, sym, op, shapes in rows[:top]:
        fl = kernel_flops(op, shapes)
        rate = f"{fl / (share / 100.0 * run_s) / 1e9:7.1f}" if fl and share > 0 else f"{'':7}"
        print(f"    {share:5.1f}%  {sym:<24} {op:<18} {rate}  {shapes[:100]}")
    print(f"    ({len(rows)} kernels sampled; {name}_run_v itself {glue:.1f}%)")
    print("    by operator: " + ", ".join(f"{op} {p:.1f}%" for op, p in
                                         sorted(by_op.items(), key=lambda x: -x[1])[:10]))
    libm = sorted(((self_.get(k, 0.0), k) for k in self_ if not k.split(".")[0] in kt
                   and not k.startswith(("main", "_start", "__libc", name, "fill", "rng_"))),
                  reverse=True)[:4]
    if libm and libm[0][0] > 1.0:
        print("    hottest non-kernel functions (self): " +
              ", ".join(f"{k} {100.0 * v / run:.1f}%" for v, k in libm if v > 0.5))


# ---- main -------------------------------------------------------------------


def fmt_s(x):
    if x is None:
        return "-"
    if x >= 1:
        return f"{x:.3f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.3f} ms"
    return f"{x * 1e6:.1f} us"


def model_paths(args, work):
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    ex = [n for n in names if n in EXAMPLES]
    paths = {}
    if ex:
        d = os.path.join(work, "examples")
        sh([sys.executable, os.path.join(SOURCE, "examples", "gen_models.py"), "--out", d,
            "--no-data", "--no-check"] + ex, 600, what="examples/gen_models.py")
        for n in ex:
            paths[n] = os.path.join(d, n + ".onnx")
    for n in names:
        if n in paths:
            continue
        p = os.path.join(rltest.onnx_data_dir(), "light", n + ".onnx")
        if n.startswith("light_") and os.path.exists(p):
            paths[n] = p
        elif os.path.exists(n):
            paths[os.path.basename(n)[:-5] if n.endswith(".onnx") else os.path.basename(n)] = n
        else:
            raise BenchError(f"unknown model {n!r} (examples: {', '.join(EXAMPLES)}; "
                             f"light_*: the onnx wheel's light models; or a path)")
    return [(n, paths[n]) for n in names if n in paths] + \
           [(k, v) for k, v in paths.items() if k not in names]


def bench_model(args, name, path, work, limits):
    print(f"\n== {name}", flush=True)
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    t0 = time.monotonic()
    c, upper, weights, args.threaded = generate(args, name, path, d)
    th = args.ours_threads if args.threaded else 0
    gen_s = time.monotonic() - t0
    exes = {}
    for v in args.variant_list:
        t0 = time.monotonic()
        exes[v] = build(args, name, c, upper, d, v)
        print(f"  built [{v}] in {time.monotonic() - t0:.1f} s "
              f"(rlopt {gen_s:.1f} s, {os.path.getsize(c) / 1e6:.1f} MB of C)", flush=True)

    model = onnx.load(path)
    ok = True
    est = {}
    feeds = None
    for v, exe in exes.items():
        dump = os.path.join(d, f"io_{v}")
        r = harness(exe, weights, ["--runs", "2", "--warmup", "0", "--dump", dump], d, th)
        est[v] = r["median_s"]
        if feeds is None:
            feeds = read_dumped_inputs(model, dump)
            ort1 = OrtSide(path, 1, feeds)
            nthreads = os.cpu_count() or 1
            ortn = OrtSide(path, nthreads, feeds)
        ok &= verify(name, v, ort1.sess, feeds, dump)

    if args.runs:
        n = args.runs
    else:
        t_ort = ort1.time(3)["median_s"]
        slowest = max(list(est.values()) + [t_ort])
        n = max(3, min(100000, int(math.ceil(args.seconds / max(slowest, 1e-7)))))
    nt = f"ORT-{nthreads}t" if nthreads > 1 else "ORT-all(1t)"  # a distinct key on 1 CPU
    sides = [f"ours[{v}]" for v in exes] + ["ORT-1t", nt]
    per_round = {s: [] for s in sides}
    for _ in range(args.rounds):
        for v, exe in exes.items():
            per_round[f"ours[{v}]"].append(harness(exe, weights, ["--runs", str(n), "--warmup", "1"], d,
                                                   th))
        per_round["ORT-1t"].append(ort1.time(n))
        per_round[nt].append(ortn.time(n))
    best = {s: {k: min(r[k] for r in rs) for k in ("median_s", "min_s", "cpu_median_s", "cpu_min_s")}
            for s, rs in per_round.items()}

    ours = best[f"ours[{args.variant_list[0]}]"]["median_s"]
    o1 = best["ORT-1t"]["median_s"]
    on = best[nt]["median_s"]
    print(f"  {n} runs per side, {args.rounds} interleaved rounds; best of the rounds' medians "
          f"(wall clock); min = fastest single run")
    w = max(len(s) for s in sides)
    print(f"  {'side':<{w}}  {'median':>10}  {'min':>10}  {'cpu median':>10}  {'/ ORT-1t':>8}  "
          f"{'/ ORT-' + str(nthreads) + 't':>8}")
    for s in sides:
        b = best[s]
        cpu = fmt_s(b["cpu_median_s"]) if s != nt or nthreads == 1 else "-"
        print(f"  {s:<{w}}  {fmt_s(b['median_s']):>10}  {fmt_s(b['min_s']):>10}  {cpu:>10}  "
              f"{b['median_s'] / o1:>8.2f}  {b['median_s'] / on:>8.2f}")
    res = {"name": name, "n": n, "ours": ours, "ort1": o1, "ortn": on, "ok": ok, "best": best,
           "threads": nthreads,
           "cpu_ratio": best[f"ours[{args.variant_list[0]}]"]["cpu_median_s"] /
           best["ORT-1t"]["cpu_median_s"]}
    if limits:
        nbytes, flops = model_cost(path)
        # a model whose bytes fit comfortably in the last-level cache is fed
        # from there in a warm loop: its limit is the cache's bandwidth
        llc = limits.get("llc_bytes", 0)
        if llc and nbytes <= 0.5 * llc and limits.get("stream_llc_GBps"):
            bw, level = limits["stream_llc_GBps"], "LLC"
        else:
            bw, level = limits["stream_bw_GBps"], "DRAM"
        t_mem = nbytes / (bw * 1e9)
        t_flop = flops / (limits["fma_gflops"] * 1e9)
        lim = max(t_mem, t_flop)
        res.update(bytes=nbytes, flops=flops, limit=lim, bound="memory" if t_mem >= t_flop else "compute")
        cpu_ours = best[f"ours[{args.variant_list[0]}]"]["cpu_median_s"]
        print(f"  machine limit: {nbytes / 1e6:.2f} MB at {bw:.1f} GB/s ({level}) = "
              f"{fmt_s(t_mem)}; {flops / 1e9:.3f} GFLOP (MatMul/Gemm/Conv) at "
              f"{limits['fma_gflops']:.1f} GFLOP/s = {fmt_s(t_flop)}; limit {fmt_s(lim)} "
              f"({res['bound']}-bound)")
        cpu_o1 = best["ORT-1t"]["cpu_median_s"]
        print(f"  ours/limit {ours / lim:.1f}x (wall), {cpu_ours / lim:.1f}x (thread CPU); "
              f"ORT-1t/limit {o1 / lim:.1f}x (wall), {cpu_o1 / lim:.1f}x (thread CPU)")
    if args.profile or (ours / o1 > args.profile_over):
        try:
            profile(args, name, c, upper, weights, d,
                    best[f"ours[{args.variant_list[0]}]"]["cpu_median_s"])
        except BenchError as e:
            print(f"  (profile failed: {e})")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rlopt", default=None, help="rlopt executable (default: <source>/build/rlopt)")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help="comma-separated (default: %(default)s)")
    ap.add_argument("--runs", type=int, default=0,
                    help="timed runs per side and round (default: so the slowest side runs ~--seconds)")
    ap.add_argument("--seconds", type=float, default=1.0, help="target seconds per side and round")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default: %(default)s)")
    ap.add_argument("--rlopt-args", default="", help='extra rlopt flags, one string, e.g. "-O0"')
    ap.add_argument("--variants", default="native,plain",
                    help="compiler flag sets for our side: " + ", ".join(
                        f"{k} ({' '.join(v)})" for k, v in VARIANTS.items()) +
                    "; the first is the one compared (default: %(default)s)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--ours-threads", type=int, default=1,
                    help="NAME_set_threads for our side, when the header has it (default: 1)")
    ap.add_argument("--no-limit", action="store_true", help="skip the machine-limit measurement")
    ap.add_argument("--profile", action="store_true", help="perf-profile our code on every model")
    ap.add_argument("--profile-over", type=float, default=5.0,
                    help="profile when ours/ORT-1t exceeds this (default: %(default)s)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()
    args.rlopt = args.rlopt or os.path.join(SOURCE, "build", "rlopt")
    if not os.access(args.rlopt, os.X_OK):
        ap.error(f"rlopt not found at {args.rlopt} (use --rlopt)")
    args.rlopt = os.path.abspath(args.rlopt)
    args.variant_list = [v for v in args.variants.split(",") if v]
    for v in args.variant_list:
        if v not in VARIANTS:
            ap.error(f"unknown variant {v!r}")

    import onnxruntime as ort

    model_name = ""
    try:
        model_name = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                           if ln.startswith("model name")), "")
    except OSError:
        pass
    print(f"machine: {os.cpu_count()} CPUs, {model_name}; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, rlopt {args.rlopt} "
          f"{args.rlopt_args}".rstrip())
    work = tempfile.mkdtemp(prefix="rlopt-bench.")
    failed = []
    results = []
    try:
        try:
            models = model_paths(args, work)
        except BenchError as e:
            print(f"bench_ort.py: {e}", file=sys.stderr)
            return 1
        limits = None
        if not args.no_limit:
            try:
                limits, text = machine_limits(work, args.cc)
            except BenchError as e:
                print(f"FAIL machine limits: {e}", flush=True)
                failed.append("stream_limit")
                limits, text = None, ""
            if limits:
                print("machine limits (bench/stream_limit.c, one core):\n" +
                      "".join("  " + ln + "\n" for ln in text.splitlines()), end="")
        for name, path in models:
            try:
                r = bench_model(args, name, path, work, limits)
                results.append(r)
                if not r["ok"]:
                    failed.append(f"{name}: outputs do not match onnxruntime")
            except BenchError as e:
                print(f"FAIL {name}: {e}", flush=True)
                failed.append(f"{name}: {str(e).splitlines()[0]}")
        if results:
            print(f"\nsummary (best-of-{args.rounds} medians, wall clock; ours = "
                  f"[{args.variant_list[0]}]; cpu:/1t = the same ratio in thread CPU time)")
            hdr = (f"  {'model':<18} {'ours':>10} {'ORT-1t':>10} {'ORT-Nt':>10} {'ours/1t':>8} "
                   f"{'ours/Nt':>8} {'cpu:/1t':>8}")
            if limits:
                hdr += f" {'limit':>10} {'ours/limit':>10}"
            print(hdr)
            for r in results:
                line = (f"  {r['name']:<18} {fmt_s(r['ours']):>10} {fmt_s(r['ort1']):>10} "
                        f"{fmt_s(r['ortn']):>10} {r['ours'] / r['ort1']:>8.2f} "
                        f"{r['ours'] / r['ortn']:>8.2f} {r['cpu_ratio']:>8.2f}")
                if limits:
                    line += f" {fmt_s(r['limit']):>10} {r['ours'] / r['limit']:>10.1f}"
                if not r["ok"]:
                    line += "  MISMATCH"
                print(line)
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if failed:
        print("\nFAILED:\n" + "".join(f"  {f}\n" for f in failed), end="")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
