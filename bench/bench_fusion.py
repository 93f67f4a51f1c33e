#!/usr/bin/env python3
"""bench_fusion.py - what elementwise and epilogue fusion buy, measured in one run.

Three parts, every ratio measured within this one run (see ../shared/STYLE.md):

1. examples/elementwise_chain.onnx (10 elementwise ops over 4M float32):
   - predicted bytes: -O0 from the ONNX graph itself (every node reads each
     input once and writes its outputs once, the cost model's unfused
     baseline; `rlopt report -O0` printed beside it) and -O2 from the fuse
     pass's summary remark (`rlopt --remarks`); criterion: -O2 <= 1/5 of -O0;
   - speed: the C generated at -O0 and at -O2, compiled with the same flags
     into shared objects, loaded into this process and timed interleaved,
     best of N; the outputs must agree; criterion: -O2 at least 3x faster.
     Default flags: -O2 -march=native -fno-math-errno -fno-trapping-math.
     The generated code reads neither errno nor the floating-point exception
     flags, so the last two change no result; they let gcc vectorize sqrtf
     (else a libm call guards errno) and float selects such as Relu and Clip
     (else -ftrapping-math keeps them as branches). The chain is timed with
     plain -O2 as well (what `rlopt run` uses), for reference.
2. Bandwidth: a memory-bound chain of ten cheap elementwise ops over 64M
   floats (256 MiB in, 256 MiB out) generated at -O2 (one fused kernel),
   against
   - a single-thread STREAM-like copy (y[i] = x[i] over the same two
     256 MiB arrays, same compiler and flags, ordinary stores like the
     generated code's; memcpy's non-temporal stores printed for reference)
     timed interleaved with it: the 70% criterion is measured against THIS
     number, because the generated code runs on one thread;
   - `rlopt probe -o TMP.xml`: the single-thread DRAM copy rate from the
     profile's comment, and the all-thread DRAM figures of the profile's
     main-memory level (read_bw/write_bw); printed for reference, the
     all-thread figure is not reachable by one thread on a multi-core host.
   Bytes are counted as STREAM counts them: read + written, no write-allocate.
   The example chain is timed the same way for reference: its Tanh and Sqrt
   make it compute-bound on one core, so bandwidth is not what binds it.
3. examples/gpt_block.onnx: kernels at -O0 and -O2, the fuse pass's remarks
   (every LayerNorm/Softmax/GELU region and epilogue as one kernel), the
   predicted bytes (`rlopt report -O0`, and the fuse pass's before and
   after), and the end-to-end time of -O0, -O2 and onnxruntime (CPU
   provider, 1 thread, inputs bound once with IOBinding), interleaved, best
   of N per round, median of 5 rounds with fresh copies of the generated
   code (this model runs from L1/L2, where buffer placement alone moves a
   run by 10-20%); outputs checked against onnxruntime (rtol 1e-3, atol 1e-4).

Times are thread CPU time (time.thread_time around each call, best of N):
on a shared machine it leaves out the time the thread waits for a core;
wall-clock best and median are printed beside it.

Usage: bench_fusion.py [--rlopt build/rlopt] [--cc cc] [--cflags FLAGS] [--plain FLAGS]
                       [--reps N] [--big-elems N] [--probe-xml FILE | --no-probe]
                       [--no-gpt] [--only chain|bandwidth|gpt] [--keep]
Exit status: 0 when every criterion holds, 1 when one fails, 2 on an error.
"""

import argparse
import ctypes
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

import numpy as np
import onnx
from onnx import helper, shape_inference

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, ".."))
sys.dont_write_bytecode = True

ELEM_BYTES = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}


def die(msg):
    print(f"bench_fusion: {msg}", file=sys.stderr)
    sys.exit(2)


def sh(cmd, timeout=600):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        die(f"{' '.join(shlex.quote(c) for c in cmd)} failed ({p.returncode}):\n"
            f"{(p.stderr or p.stdout).strip()[:2000]}")
    return p


# ---- predicted bytes ----------------------------------------------------------


def onnx_bytes_unfused(path):
    """Sum over nodes of (distinct inputs + outputs) bytes: -O0's kernels."""
    m = shape_inference.infer_shapes(onnx.load(path))
    g = m.graph
    info = {}
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        info[vi.name] = (tt.elem_type, dims)
    for t in g.initializer:
        info[t.name] = (t.data_type, list(t.dims))

    def nbytes(name):
        et, dims = info[name]
        if any(d is None for d in dims):
            die(f"{path}: '{name}' has a symbolic shape")
        return int(np.prod(dims, dtype=np.int64)) * ELEM_BYTES.get(et, 4)

    total = 0
    for n in g.node:
        total += sum(nbytes(x) for x in dict.fromkeys(n.input) if x)
        total += sum(nbytes(y) for y in n.output if y)
    return total


def report_bytes(args, model, work):
    """Predicted bytes of the unoptimized model by the cost model:
    `rlopt report MODEL -O0 -o X.json`, total.bytes; None if unavailable."""
    out = os.path.join(work, "report_o0.json")
    p = subprocess.run([args.rlopt, "report", model, "-O0", "-o", out], capture_output=True,
                       text=True, timeout=600)
    if p.returncode != 0 or not os.path.exists(out):
        return None
    import json

    with open(out) as f:
        return int(json.load(f)["total"]["bytes"])


def fuse_summary(remarks):
    m = re.search(r"^remark: fuse: -: summary: .*\[bytes (\d+) -> (\d+)\]", remarks, re.M)
    if not m:
        die("no summary remark from the fuse pass (is it in the -O2 pipeline?)")
    return int(m.group(1)), int(m.group(2))


# ---- generated code in this process -------------------------------------------


def generate(args, model, c_path, flags):
    p = sh([args.rlopt, model, "-o", c_path, "--remarks"] + flags)
    return p.stderr


def count_kernels(c_path):
    with open(c_path) as f:
        return sum(1 for ln in f if ln.startswith("static void k"))


def build_so(args, c_path, cflags=None, tag=""):
    so = c_path[:-2] + tag + ".so"
    sh([args.cc, "-std=c11"] + (cflags or args.cflags) +
       ["-shared", "-fPIC", "-o", so, c_path, "-lm"])
    return so


class Compiled:
    """A generated model loaded with ctypes; run() calls PREFIX_run_v."""

    def __init__(self, so, prefix, ins, outs):
        self.lib = ctypes.CDLL(so)
        self.run_v = getattr(self.lib, prefix + "_run_v")
        self.run_v.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.run_v.restype = ctypes.c_int
        # one thread: the figures are thread CPU time of the calling thread,
        # which would leave out a thread pool's workers
        if hasattr(self.lib, prefix + "_set_threads"):
            st = getattr(self.lib, prefix + "_set_threads")
            st.argtypes = [ctypes.c_int]
            st.restype = ctypes.c_int
            if st(1) != 0:
                die(f"{so}: {prefix}_set_threads(1) failed")
        init = getattr(self.lib, prefix + "_init")
        init.argtypes = [ctypes.c_char_p]
        if init(None) != 0:
            die(f"{so}: {prefix}_init failed")
        self.ins, self.outs = ins, outs
        self.pin = (ctypes.c_void_p * max(1, len(ins)))(*[a.ctypes.data for a in ins])
        self.pout = (ctypes.c_void_p * max(1, len(outs)))(*[a.ctypes.data for a in outs])

    def __call__(self):
        if self.run_v(self.pin, self.pout) != 0:
            die("a generated run failed")


class Timing:
    """Seconds per call of one function: best thread CPU time (`cpu`, what the
    ratios use: it leaves out time the thread was descheduled on a shared
    machine) and best and median wall-clock time."""

    def __init__(self, cpu, wall, wall_median):
        self.cpu, self.wall, self.wall_median = cpu, wall, wall_median

    def __str__(self):
        return (f"{fmt_t(self.cpu)} (wall best {fmt_t(self.wall)}, "
                f"median {fmt_t(self.wall_median)})")


def fmt_t(s):
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} us"


def best_interleaved(fns, reps, inner=None):
    """Time each function `reps` times, round-robin, so that every variant
    sees the same machine; returns a Timing per function. inner: calls per
    sample (default 1)."""
    inner = inner or [1] * len(fns)
    cpu = [[] for _ in fns]
    wall = [[] for _ in fns]
    for fn, k in zip(fns, inner):  # warm up caches, pages, branch predictors
        for _ in range(k):
            fn()
    for _ in range(reps):
        for i, (fn, k) in enumerate(zip(fns, inner)):
            c = time.thread_time()
            t = time.perf_counter()
            for _ in range(k):
                fn()
            wall[i].append((time.perf_counter() - t) / k)
            cpu[i].append((time.thread_time() - c) / k)
    return [Timing(min(c), min(w), float(np.median(w))) for c, w in zip(cpu, wall)]


def calls_for(fn, target_s=0.002):
    t = time.perf_counter()
    fn()
    dt = max(time.perf_counter() - t, 1e-7)
    return max(1, int(target_s / dt))


# ---- the parts -----------------------------------------------------------------


def part_chain(args, work, verdicts):
    model = os.path.join(SOURCE, "examples", "elementwise_chain.onnx")
    print("== 1. examples/elementwise_chain.onnx: 10 elementwise ops over 4M float32")
    b0 = onnx_bytes_unfused(model)
    rb = report_bytes(args, model, work)
    c0 = os.path.join(work, "chain_o0.c")
    c2 = os.path.join(work, "chain_o2.c")
    generate(args, model, c0, ["-O0"])
    rem = generate(args, model, c2, ["-O2"])
    before, b2 = fuse_summary(rem)
    print(f"predicted bytes  -O0 {b0:>12,d}  ({count_kernels(c0)} kernels; each node's inputs and "
          f"outputs; `rlopt report -O0`: {rb if rb is None else f'{rb:,d}'}; the fuse pass's "
          f"count before fusing {before:,d})")
    print(f"                 -O2 {b2:>12,d}  ({count_kernels(c2)} kernels)")
    ok = b2 * 5 <= b0
    print(f"                 ratio -O2/-O0 = {b2 / b0:.3f} (criterion <= 0.200): "
          f"{'PASS' if ok else 'FAIL'}")
    verdicts.append(("chain predicted bytes -O2 <= 1/5 of -O0", ok))

    n = 4194304
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    for k, flags in enumerate([args.cflags] + ([args.plain] if args.plain != args.cflags else [])):
        y0 = np.empty(n, np.float32)
        y2 = np.empty(n, np.float32)
        m0 = Compiled(build_so(args, c0, flags, f"_{k}"), "chain_o0", [x], [y0])
        m2 = Compiled(build_so(args, c2, flags, f"_{k}"), "chain_o2", [x], [y2])
        t0, t2 = best_interleaved([m0, m2], args.reps)
        diff = float(np.max(np.abs(y0.astype(np.float64) - y2)))
        ok_eq = np.allclose(y2, y0, rtol=1e-5, atol=1e-6)
        speed = t0.cpu / t2.cpu
        ok = speed >= 3.0 and ok_eq
        what = "criterion >= 3x" if k == 0 else "for reference, not the criterion"
        print(f"measured with cc {' '.join(flags)}: best of {args.reps}, interleaved")
        print(f"                 -O0 {t0}")
        print(f"                 -O2 {t2}")
        print(f"                 speedup -O2 vs -O0 = {speed:.2f}x thread CPU time, "
              f"{t0.wall / t2.wall:.2f}x wall ({what}): "
              f"{'PASS' if ok else 'FAIL' if k == 0 else 'below 3x'}; outputs differ by at most "
              f"{diff:.2g}")
        print(f"                 -O2 streams {2 * n * 4 / 2**20:.0f} MiB in {fmt_t(t2.cpu)} = "
              f"{2 * n * 4 / t2.cpu / 1e9:.1f} GB/s")
        if k == 0:
            verdicts.append(("chain -O2 >= 3x faster than -O0", ok))


def big_chain_model(path, n):
    """examples/elementwise_chain.onnx with n elements."""
    m = onnx.load(os.path.join(SOURCE, "examples", "elementwise_chain.onnx"))
    for vi in list(m.graph.input) + list(m.graph.output):
        vi.type.tensor_type.shape.dim[0].dim_value = n
    onnx.save(m, path)


def arith_chain_model(path, n):
    """Ten cheap elementwise ops (no transcendental) over n floats: a chain
    whose fused kernel is memory-bound on any CPU."""
    from onnx import TensorProto, numpy_helper

    inits, nodes = [], []

    def const(name, v):
        inits.append(numpy_helper.from_array(np.array(v, np.float32), name))
        return name

    h = "x"
    steps = [("Mul", 1.5), ("Add", 0.25), ("Relu", None), ("Sub", 0.5), ("Mul", -2.0),
             ("Abs", None), ("Add", 1e-3), ("Clip", (0.0, 4.0)), ("Neg", None), ("Mul", 0.5)]
    for i, (op, c) in enumerate(steps):
        out = "y" if i == len(steps) - 1 else f"t{i}"
        if c is None:
            ins = [h]
        elif op == "Clip":
            ins = [h, const(f"lo{i}", c[0]), const(f"hi{i}", c[1])]
        else:
            ins = [h, const(f"c{i}", c)]
        nodes.append(helper.make_node(op, ins, [out], name=f"{op.lower()}_{i}"))
        h = out
    g = helper.make_graph(nodes, "arith_chain",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(m, path)


# Compiled with -fno-tree-loop-distribute-patterns: gcc keeps the loop (with
# plain stores, as in generated code) instead of calling memcpy, whose large
# copies use non-temporal stores (rl_bench_memcpy, printed for reference).
COPY_C = """
#include <stddef.h>
#include <string.h>
/* STREAM-like copy, one thread: y = x with ordinary (write-allocate) stores;
 * n a multiple of 64, the inner loop's literal trip count lets -O2
 * vectorize it (gcc's -O2 cost model takes no loop that needs a tail) */
void rl_bench_copy(const float *restrict x, float *restrict y, size_t n)
{
    for (size_t i = 0; i < n; i += 64)
        for (size_t j = 0; j < 64; j++)
            y[i + j] = x[i + j];
}
void rl_bench_memcpy(const float *restrict x, float *restrict y, size_t n)
{
    memcpy(y, x, n * sizeof(float));
}
"""


def probe_figures(args, work):
    """(single-thread DRAM copy GB/s or None, all-thread copy GB/s or None,
    DRAM read_bw, write_bw in GB/s) from a probe profile."""
    path = args.probe_xml
    if not path:
        path = os.path.join(work, "probe.xml")
        print("running `rlopt probe` (up to 30 s) ...", flush=True)
        sh([args.rlopt, "probe", "-o", path], timeout=300)
    text = open(path).read()
    root = ET.fromstring(text.encode())
    levels = root.findall("./memory/level")
    if not levels:
        die(f"{path}: no memory levels")
    dram = levels[-1]
    rd = float(dram.get("read_bw")) / 1e9
    wr = float(dram.get("write_bw", dram.get("read_bw"))) / 1e9
    m1 = re.search(r"DRAM read ([\d.]+), write ([\d.]+), copy ([\d.]+) GB/s", text)
    mall = re.search(r"copy \(read\+write bytes\):.*DRAM ([\d.]+) GB/s", text)
    return (float(m1.group(3)) if m1 else None, float(mall.group(1)) if mall else None,
            rd, wr, path)


def part_bandwidth(args, work, verdicts):
    n = args.big_elems // 64 * 64
    mib = n * 4 / 2**20
    print(f"\n== 2. bandwidth: fused chains over {n:,d} floats ({mib:.0f} MiB in, "
          f"{mib:.0f} MiB out), against a 1-thread copy of the same arrays")
    cp_c = os.path.join(work, "copy.c")
    with open(cp_c, "w") as f:
        f.write(COPY_C)
    lib = ctypes.CDLL(build_so(args, cp_c, args.cflags + ["-fno-tree-loop-distribute-patterns"]))
    lib.rl_bench_copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.rl_bench_memcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    y = np.empty(n, np.float32)
    y[:] = 0  # touch the pages before timing
    px, py = x.ctypes.data, y.ctypes.data

    def copy():
        lib.rl_bench_copy(px, py, n)

    def mcopy():
        lib.rl_bench_memcpy(px, py, n)

    chains = [("arith_big", arith_chain_model,
               "10 cheap ops (Mul Add Relu Sub Mul Abs Add Clip Neg Mul)", True),
              ("chain_big", big_chain_model,
               "examples/elementwise_chain.onnx (with Tanh and Sqrt)", False)]
    nbytes = 2 * n * 4
    reps = max(3, args.reps // 2)
    print(f"cc {' '.join(args.cflags)}; best of {reps}, interleaved; bytes read + written")
    results = {}
    for name, build, what, criterion in chains:
        model = os.path.join(work, name + ".onnx")
        build(model, n)
        c2 = os.path.join(work, name + ".c")
        generate(args, model, c2, ["-O2"])
        nk = count_kernels(c2)
        m2 = Compiled(build_so(args, c2), name, [x], [y])
        tf, tc = best_interleaved([m2, copy], reps)
        fused = nbytes / tf.cpu / 1e9
        copy_bw = nbytes / tc.cpu / 1e9
        frac = fused / copy_bw
        results[name] = fused
        print(f"{what}: {nk} kernel(s)")
        print(f"  fused kernel   {fused:6.1f} GB/s  {tf}")
        print(f"  1-thread copy  {copy_bw:6.1f} GB/s  {tc}")
        if criterion:
            ok = frac >= 0.70
            print(f"  fused / single-thread copy measured now = {frac * 100:.0f}%  "
                  f"<- the 70% criterion: {'PASS' if ok else 'FAIL'}")
            verdicts.append(("fused memory-bound chain >= 70% of single-thread streaming copy",
                             ok))
        else:
            print(f"  fused / single-thread copy = {frac * 100:.0f}% (reference: Tanh and Sqrt "
                  f"make this chain compute-bound on one core, {tf.cpu / n * 1e9:.2f} ns per "
                  f"element against {tc.cpu / n * 1e9:.2f} ns to copy one)")
    (tm,) = best_interleaved([mcopy], reps)
    print(f"memcpy (non-temporal stores, no write-allocate) {nbytes / tm.cpu / 1e9:.1f} GB/s "
          f"{tm} (reference)")
    if args.no_probe:
        return
    one, allc, rd, wr, path = probe_figures(args, work)
    fused = results["arith_big"]
    # the probe's main-memory level for this kernel's mix (half read, half write)
    mix = 2 / (1 / rd + 1 / wr)
    print(f"rlopt probe ({path}), against the memory-bound chain's {fused:.1f} GB/s:")
    if one:
        print(f"  1 thread, DRAM copy {one:.1f} GB/s -> {fused / one * 100:.0f}% (reference)")
    if allc:
        print(f"  all threads, DRAM copy {allc:.1f} GB/s -> {fused / allc * 100:.0f}% "
              f"(reference; one thread cannot reach an all-core figure)")
    print(f"  all threads, DRAM level read_bw {rd:.1f}, write_bw {wr:.1f} GB/s (half/half "
          f"mix {mix:.1f}) -> {fused / mix * 100:.0f}% (reference)")


def part_gpt(args, work, verdicts):
    import onnxruntime as ort

    model = os.path.join(SOURCE, "examples", "gpt_block.onnx")
    print("\n== 3. examples/gpt_block.onnx end to end")
    c0 = os.path.join(work, "gpt_o0.c")
    c2 = os.path.join(work, "gpt_o2.c")
    generate(args, model, c0, ["-O0"])
    rem = generate(args, model, c2, ["-O2"])
    for ln in rem.splitlines():
        if ln.startswith(("remark: fuse:", "remark: patterns:")) and (
                "applied" in ln or "summary" in ln):
            print("  " + ln)
    before, after = fuse_summary(rem)
    rb = report_bytes(args, model, work)
    print(f"kernels -O0 {count_kernels(c0)}, -O2 {count_kernels(c2)}; predicted bytes (cost "
          f"model): -O0 {rb if rb is None else f'{rb:,d}'} (`rlopt report -O0`), -O2 before "
          f"fusing {before:,d} (after cleanup and patterns), after fusing {after:,d}: "
          f"{before - after:,d} saved by fusion")
    x = np.random.default_rng(2).standard_normal((1, 16, 64)).astype(np.float32)
    so0, so2 = build_so(args, c0), build_so(args, c2)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"x": x})[0]
    # A run of this size sits in L1/L2 and its time depends on where the
    # buffers land (4 KiB aliasing between workspace, weights and inputs):
    # several rounds, each with fresh copies of the shared objects (new
    # addresses, new workspaces), best of N within a round, median of rounds.
    rounds = 5
    reps = max(2 * args.reps, 30)
    per = []
    ok = True
    for r in range(rounds):
        y0 = np.empty((1, 16, 64), np.float32)
        y2 = np.empty((1, 16, 64), np.float32)
        yr = np.empty((1, 16, 64), np.float32)
        copies = []
        for src, tag in ((so0, "gpt_o0"), (so2, "gpt_o2")):
            dst = src[:-3] + f"_r{r}.so"
            shutil.copyfile(src, dst)
            copies.append((dst, tag))
        m0 = Compiled(copies[0][0], copies[0][1], [x], [y0])
        m2 = Compiled(copies[1][0], copies[1][1], [x], [y2])
        bind = sess.io_binding()
        bind.bind_cpu_input("x", x)
        bind.bind_output("y", "cpu", 0, np.float32, list(yr.shape), yr.ctypes.data)

        def ort_run(bind=bind):
            sess.run_with_iobinding(bind)

        fns = [m0, m2, ort_run]
        inner = [calls_for(f) for f in fns]
        per.append(best_interleaved(fns, reps, inner))
        ok &= bool(np.allclose(y2, ref, rtol=1e-3, atol=1e-4) and
                   np.allclose(y0, ref, rtol=1e-3, atol=1e-4))
    print(f"cc {' '.join(args.cflags)}; {rounds} rounds (fresh copies of the code), each best of "
          f"{reps} interleaved samples; thread CPU time per run:")
    names = ["-O0", "-O2", "onnxruntime, 1 thread"]
    med = []
    for i, nm in enumerate(names):
        xs = sorted(p[i].cpu for p in per)
        med.append(float(np.median(xs)))
        print(f"  {nm:<22} median {fmt_t(med[i])}  (rounds: "
              f"{', '.join(fmt_t(v) for v in xs)})")
    print(f"speedup (median of rounds) -O2 vs -O0 {med[0] / med[1]:.2f}x, -O2 vs onnxruntime "
          f"{med[2] / med[1]:.2f}x; outputs {'match' if ok else 'DO NOT match'} onnxruntime "
          f"(max abs err {float(np.max(np.abs(y2 - ref))):.2g})")
    verdicts.append(("gpt_block -O0/-O2 outputs match onnxruntime", ok))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rlopt", default=os.path.join(SOURCE, "build", "rlopt"))
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--cflags", default="-O2 -march=native -fno-math-errno -fno-trapping-math",
                    help="flags for the generated C (default: %(default)s)")
    ap.add_argument("--plain", default="-O2",
                    help="second flag set the chain is also timed with, for reference "
                         "(default: %(default)s, as `rlopt run`)")
    ap.add_argument("--reps", type=int, default=15, help="timed runs per variant (default: %(default)s)")
    ap.add_argument("--big-elems", type=int, default=64 * 2**20,
                    help="elements of the bandwidth chain (default: %(default)s = 256 MiB)")
    ap.add_argument("--probe-xml", default=None, help="use this probe profile instead of probing")
    ap.add_argument("--no-probe", action="store_true", help="skip `rlopt probe`")
    ap.add_argument("--no-gpt", action="store_true", help="skip the GPT block")
    ap.add_argument("--only", choices=["chain", "bandwidth", "gpt"], default=None,
                    help="run one part only")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()
    args.cflags = shlex.split(args.cflags)
    args.plain = shlex.split(args.plain)
    if not os.access(args.rlopt, os.X_OK):
        die(f"rlopt not found at {args.rlopt} (use --rlopt)")
    work = tempfile.mkdtemp(prefix="rl_bench_fusion_")
    verdicts = []
    try:
        if args.only in (None, "chain"):
            part_chain(args, work, verdicts)
        if args.only in (None, "bandwidth"):
            part_bandwidth(args, work, verdicts)
        if args.only == "gpt" or (args.only is None and not args.no_gpt):
            part_gpt(args, work, verdicts)
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print()
    for what, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}  {what}")
    sys.exit(0 if all(ok for _, ok in verdicts) else 1)


if __name__ == "__main__":
    main()
