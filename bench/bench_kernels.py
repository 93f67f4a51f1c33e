#!/usr/bin/env python3
"""bench_kernels.py - the results issue 9 asks for, measured in one run.

For each model, the generated C against onnxruntime, all timed in the same
process tree, interleaved in rounds (the side order rotated every round), each
side's figure the best of the rounds' medians (wall clock; thread and process
CPU time beside it):

  O2-1t      rlopt -O2 (default), compiled `cc -O2` (what users compile with;
             gcc's default dialect, gnu17), NAME_set_threads(1)
  O2-2t      the same binary, NAME_set_threads(2)           (--threads)
  O3n-1t     the same C compiled `cc -O3 -march=native`, 1 thread
  unfused    (elementwise chains and gpt_block) rlopt --passes <the -O2
             pipeline minus fuse>, compiled `cc -O2`, 1 thread
  ORT-1t     onnxruntime, CPU provider, intra_op_num_threads=1
  ORT-2t     onnxruntime, intra_op_num_threads=2              (--threads)

and the ratios with a PASS/FAIL mark against issue 9's targets:

  O2-1t / ORT-1t       <= 1.00  (the elementwise chains: <= 0.35)
  O2-2t / ORT-2t       <= 1.00
  O2-1t / O3n-1t       <= 1.10
  O2-1t / unfused-1t   <= 1.00  (fusion never slower)
  GEMV bandwidth       weight bytes / time >= 80% of the read-only streaming
                       loop of bench/stream_limit.c measured in this run
                       (1 thread vs 1 thread, 2 threads vs all CPUs); the
                       `rlopt probe` DRAM read figures printed beside it

Every output of ours (each build, 1 and 2 threads) is checked against
onnxruntime on the same inputs (rtol 1e-3, atol 1e-4); a mismatch is printed
and makes the exit status 1.

Models (--models a,b): the examples (gpt_block, mlp, resnet_small,
elementwise_chain; made by examples/gen_models.py in the work folder), the
onnx wheel's light_resnet50 and light_squeezenet, and two made here:
  gemv       batch-1 MatMul [1,K] x [K,K], K so the fp32 weights are at least
             4x the last-level cache (sysfs), weights in a side file
  ew_chain   14 elementwise ops (Abs, Add, Sqrt, Sigmoid, Mul, Tanh, Div, Sub,
             Neg, Exp) over 1M floats, every op within its domain
and, only when asked, sgemm1024 ([1024,1024] x [1024,1024] MatMul: GFLOP/s
against the one-core FMA peak and 2t/1t; the OpenBLAS comparison is done
elsewhere), or a path to an .onnx file.

Usage: bench_kernels.py [--rlopt build/rlopt] [--quick] [--models a,b]
                        [--rounds R] [--seconds S] [--runs N] [--threads T]
                        [--no-probe] [--keep] [--fail-on-target]
Exit status: 0; 1 when something fails to generate, build, run or match
onnxruntime; 3 with --fail-on-target when a target is missed.
"""

import argparse
import concurrent.futures
import math
import os
import re
import shlex
import shutil
import statistics
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import bench_ort  # noqa: E402  (sh, parse_kv, fmt_s, ort_session, model_paths)
from bench_ort import BenchError, fmt_s, parse_kv, sh  # noqa: E402

rltest = bench_ort.rltest

EXAMPLES = bench_ort.EXAMPLES
BENCH_MODELS = ["gemv", "ew_chain"]
DEFAULT_MODELS = EXAMPLES + ["light_resnet50", "light_squeezenet"] + BENCH_MODELS
FUSION_MODELS = {"elementwise_chain", "ew_chain", "gpt_block"}
CHAIN_MODELS = {"elementwise_chain", "ew_chain"}
RTOL, ATOL = 1e-3, 1e-4

# compiler flags of our builds (plus -pthread when the generated C uses it)
CFLAGS = {"O2": ["-O2"], "O3n": ["-O3", "-march=native"]}

T_ORT = 1.00       # ours / ORT, same thread count
T_CHAIN = 0.35     # elementwise chains, ours-1t / ORT-1t
T_NATIVE = 1.10    # -O2 / -O3 -march=native
T_FUSE = 1.00      # fused / unfused
T_BW = 0.80        # GEMV bandwidth / read-only streaming bandwidth


# ---- bench-only models --------------------------------------------------------


def llc_bytes():
    """largest cache of cpu0 in sysfs (the last level), 0 if unknown"""
    best = 0
    for i in range(8):
        try:
            with open(f"/sys/devices/system/cpu/cpu0/cache/index{i}/size") as f:
                s = f.read().strip()
        except OSError:
            break
        m = re.match(r"(\d+)([KMG]?)", s)
        if m:
            v = int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]
            best = max(best, v)
    return best


def save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, path)


def gemv_model(path, k):
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((k, k), dtype=np.float32) / np.float32(math.sqrt(k)))
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="gemv")], "gemv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, k])],
        [numpy_helper.from_array(w, "w")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def sgemm_model(path, n=1024):
    rng = np.random.default_rng(8)
    b = (rng.standard_normal((n, n), dtype=np.float32) / np.float32(math.sqrt(n)))
    g = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="sgemm")], "sgemm",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])],
        [numpy_helper.from_array(b, "b")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def ew_chain_model(path, rows=1024, cols=1024):
    """14 elementwise ops over rows*cols floats (inputs in [-1, 1) from the
    harness; every op is fed values inside its domain):
        a = |x|;  s = sqrt(a + 1e-3);  m = s * sigmoid(x)
        q = tanh(2x) / (1 + a);  r = (m - q) * 0.5;  y = r + exp(-a)"""
    inits = []

    def c(name, v):
        inits.append(numpy_helper.from_array(np.array(v, np.float32), name))
        return name

    nodes = [
        helper.make_node("Abs", ["x"], ["a"], name="abs"),
        helper.make_node("Add", ["a", c("eps", 1e-3)], ["a_eps"], name="add_eps"),
        helper.make_node("Sqrt", ["a_eps"], ["s"], name="sqrt"),
        helper.make_node("Sigmoid", ["x"], ["g"], name="sigmoid"),
        helper.make_node("Mul", ["s", "g"], ["m"], name="mul_sg"),
        helper.make_node("Mul", ["x", c("two", 2.0)], ["x2"], name="mul_2"),
        helper.make_node("Tanh", ["x2"], ["t"], name="tanh"),
        helper.make_node("Add", ["a", c("one", 1.0)], ["a1"], name="add_1"),
        helper.make_node("Div", ["t", "a1"], ["q"], name="div"),
        helper.make_node("Sub", ["m", "q"], ["d"], name="sub"),
        helper.make_node("Mul", ["d", c("half", 0.5)], ["r"], name="mul_half"),
        helper.make_node("Neg", ["a"], ["na"], name="neg"),
        helper.make_node("Exp", ["na"], ["e"], name="exp"),
        helper.make_node("Add", ["r", "e"], ["y"], name="add_out"),
    ]
    g = helper.make_graph(
        nodes, "ew_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, cols])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, cols])], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


class Spec:
    """a model to bench: name, path, extra rlopt flags, a description"""

    def __init__(self, name, path, rlopt_args=(), desc="", weight_bytes=0, flops=0):
        self.name, self.path, self.rlopt_args, self.desc = name, path, list(rlopt_args), desc
        self.weight_bytes, self.flops = weight_bytes, flops


def resolve_models(args, work):
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    d = os.path.join(work, "models")
    os.makedirs(d, exist_ok=True)
    specs = {}
    for n in names:
        p = os.path.join(d, n + ".onnx")
        if n == "gemv":
            llc = llc_bytes() or (32 << 20)
            # fp32 weights (4 K^2 bytes) >= 4x the LLC; K a multiple of 512
            k = int(math.ceil(math.sqrt(4 * llc / 4) / 512.0)) * 512
            gemv_model(p, k)
            wb = 4 * k * k
            specs[n] = Spec(n, p, ["--weights-max", str(1 << 20)],
                            f"batch-1 MatMul [1,{k}] x [{k},{k}], {wb / 2**20:.0f} MiB fp32 weights "
                            f"= {wb / llc:.1f}x the last-level cache ({llc / 2**20:.0f} MiB, sysfs); "
                            f"weights in a side file", weight_bytes=wb, flops=2 * k * k)
        elif n == "ew_chain":
            ew_chain_model(p)
            specs[n] = Spec(n, p, [], "14 elementwise ops (Abs, Add, Sqrt, Sigmoid, Mul, Tanh, "
                            "Div, Sub, Neg, Exp) over [1024,1024] floats")
        elif n == "sgemm1024":
            sgemm_model(p)
            specs[n] = Spec(n, p, ["--weights-max", str(1 << 20)],
                            "MatMul [1024,1024] x [1024,1024] (B constant, side file)",
                            flops=2 * 1024 ** 3)
    rest = [n for n in names if n not in specs]
    if rest:
        class A:
            models = ",".join(rest)
        for n, p in bench_ort.model_paths(A, work):
            specs[n] = Spec(n, p)
    return [specs[n] for n in names if n in specs] + \
           [s for k, s in specs.items() if k not in names]


# ---- our side ---------------------------------------------------------------


def pipeline_passes(rlopt, model, work):
    """the pass names in pipeline order, from rlopt's own error message for an
    unknown pass"""
    r = rltest.run([rlopt, model, "-o", os.path.join(work, "probe_passes.c"),
                    "--passes", "no_such_pass"], timeout=300)
    m = re.search(r"\(passes: ([^)]*)\)", r.stderr or "")
    if not m:
        raise BenchError(f"cannot read the pass list from rlopt: {r.describe(4)}")
    return [p.strip() for p in m.group(1).split(",") if p.strip()]


class Ours:
    """one generated C file (a folder), its builds"""

    def __init__(self, args, spec, folder, extra):
        os.makedirs(folder, exist_ok=True)
        self.folder, self.name = folder, spec.name
        self.c = os.path.join(folder, spec.name + ".c")
        t0 = time.monotonic()
        sh([args.rlopt, spec.path, "-o", self.c] + spec.rlopt_args + list(extra), 1200,
           what=f"rlopt {spec.name} {' '.join(extra)}".rstrip())
        self.gen_s = time.monotonic() - t0
        with open(os.path.join(folder, spec.name + ".h")) as f:
            hdr = f.read()
        m = re.search(r"#define (\w+)_NUM_INPUTS ", hdr)
        if not m:
            raise BenchError(f"{spec.name}.h: no NAME_NUM_INPUTS macro")
        self.upper = m.group(1)
        # the C prefix (rlopt makes it from the file name: a valid identifier)
        m = re.search(r"\bint (\w+)_init\(", hdr)
        self.prefix = m.group(1) if m else spec.name
        self.has_threads = re.search(rf"\b{re.escape(self.prefix)}_set_threads\s*\(", hdr) is not None
        w = os.path.join(folder, spec.name + ".weights")
        self.weights = w if os.path.exists(w) else None
        with open(self.c) as f:
            text = f.read()
        self.uses_pthread = "pthread" in text
        self.kernels = sum(1 for ln in text.splitlines() if ln.startswith("static void k"))
        self.text = text
        self.exes = {}

    def build_cmd(self, args, variant):
        exe = os.path.join(self.folder, f"{self.name}_{variant}")
        cmd = [args.cc] + CFLAGS[variant] + (["-pthread"] if self.uses_pthread else []) + \
              (["-DRL_HAVE_THREADS"] if self.has_threads else []) + [
            "-I", self.folder, f'-DRL_MODEL_HEADER="{self.name}.h"', f"-DRL_PREFIX={self.prefix}",
            f"-DRL_PREFIX_UC={self.upper}", os.path.join(HERE, "timing_harness.c"), self.c,
            "-o", exe, "-lm"]
        return exe, cmd

    def run(self, variant, flags, threads):
        cmd = [self.exes[variant]] + flags + (["--weights", self.weights] if self.weights else [])
        if self.has_threads:
            cmd += ["--threads", str(threads)]
        elif threads != 1:
            raise BenchError("no NAME_set_threads in the generated header")
        r = sh(cmd, 3600, cwd=self.folder, what=f"{os.path.basename(cmd[0])} --threads {threads}")
        return parse_kv(r.stdout)


def build_all(args, jobs):
    """jobs: [(Ours, variant)]; compiles them --jobs at a time; returns the
    lines for the ones built and (label, BenchError) for the ones that failed"""
    def one(job):
        ours, v = job
        exe, cmd = ours.build_cmd(args, v)
        t0 = time.monotonic()
        try:
            sh(cmd, 1800, what=f"cc {' '.join(CFLAGS[v])} {ours.name}" +
               (f" ({ours.tag})" if ours.tag else ""))
        except BenchError as e:
            return ours, v, None, e
        return ours, v, exe, time.monotonic() - t0

    done, bad = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        for ours, v, exe, dt in ex.map(one, jobs):
            label = f"{v}{'' if ours.tag == '' else '/' + ours.tag}"
            if exe is None:
                bad.append((label, dt))
                continue
            ours.exes[v] = exe
            done.append(f"{label} {dt:.1f} s")
    return done, bad


# ---- onnxruntime -------------------------------------------------------------


class OrtSide:
    def __init__(self, path, threads, feeds):
        self.sess = bench_ort.ort_session(path, threads)
        self.binding = self.sess.io_binding()
        for k, v in feeds.items():
            self.binding.bind_cpu_input(k, v)
        for o in self.sess.get_outputs():
            self.binding.bind_output(o.name, "cpu")
        for _ in range(2):
            self.sess.run_with_iobinding(self.binding)

    def time(self, n):
        wt, ct, pt = [], [], []
        run, b = self.sess.run_with_iobinding, self.binding
        for _ in range(n):
            # the CPU clocks (system calls, 0.5 us each here) outside the
            # wall-clock window, as in timing_harness.c
            p0, c0 = time.process_time(), time.thread_time()
            w0 = time.perf_counter()
            run(b)
            w1 = time.perf_counter()
            c1, p1 = time.thread_time(), time.process_time()
            wt.append(w1 - w0)
            ct.append(c1 - c0)
            pt.append(p1 - p0)
        return {"median_s": statistics.median(wt), "min_s": min(wt),
                "cpu_median_s": statistics.median(ct), "cpu_min_s": min(ct),
                "proc_cpu_median_s": statistics.median(pt)}


def check_outputs(sess, ref, dump, label):
    """(ok, text) of our dumped outputs against onnxruntime's"""
    problems, worst = [], 0.0
    for k, (o, e) in enumerate(zip(sess.get_outputs(), ref)):
        e = np.asarray(e)
        try:
            got = np.fromfile(os.path.join(dump, f"output_{k}.bin"), dtype=e.dtype)
        except OSError as ex:
            problems.append(f"output {k} ({o.name}): {ex}")
            continue
        if got.size != e.size:
            problems.append(f"output {k} ({o.name}): {got.size} elements, ORT gives {e.size}")
            continue
        ok, msg, mabs, _ = rltest.compare(got.reshape(e.shape), e, rtol=RTOL, atol=ATOL)
        worst = max(worst, mabs or 0.0)
        if not ok:
            problems.append(f"output {k} ({o.name}): {msg}")
    if problems:
        bar = "!" * 72
        print(f"{bar}\nMISMATCH {label} vs onnxruntime (rtol {RTOL:g}, atol {ATOL:g}):")
        for p in problems:
            print("    " + p)
        print(bar, flush=True)
        return False, worst
    return True, worst


# ---- one model ---------------------------------------------------------------


def mark(ratio, target):
    if ratio is None:
        return "n/a"
    return "PASS" if ratio <= target else "FAIL"


def bench_model(args, spec, work, limits, passes):
    print(f"\n== {spec.name}" + (f": {spec.desc}" if spec.desc else ""), flush=True)
    d = os.path.join(work, spec.name)
    fused = Ours(args, spec, os.path.join(d, "o2"), [])
    fused.tag = ""
    unf = None
    if spec.name in FUSION_MODELS and not args.no_fusion:
        nofuse = [p for p in passes if p not in ("fuse", "factorize")]
        unf = Ours(args, spec, os.path.join(d, "nofuse"), ["--passes", ",".join(nofuse)])
        unf.tag = "unfused"
        # the full list must reproduce the default -O2 code, else "minus
        # fuse" would not be what it says
        same = Ours(args, spec, os.path.join(d, "o2list"),
                    ["--passes", ",".join(p for p in passes if p != "factorize")])
        if same.text != fused.text:
            print(f"  note: --passes {','.join(p for p in passes if p != 'factorize')} does not "
                  f"generate the same C as the default -O2; the unfused side may differ in more "
                  f"than fusion")
    desc = (f"  rlopt {fused.gen_s:.1f} s: {fused.kernels} kernels, "
            f"{os.path.getsize(fused.c) / 1e6:.1f} MB of C"
            + (f", weights in {os.path.basename(fused.weights)} "
               f"({os.path.getsize(fused.weights) / 1e6:.1f} MB)" if fused.weights else ""))
    if unf:
        desc += f"; unfused ({'--passes ' + ','.join(nofuse)}): {unf.kernels} kernels"
    print(desc)
    if not fused.has_threads:
        print(f"  note: {spec.name}.h has no {spec.name}_set_threads: 1-thread sides only "
              f"(the generated code is single-threaded)")
    errors = []  # (what, first line): a side that fails is dropped, the rest go on
    t0 = time.monotonic()
    jobs = [(fused, "O2"), (fused, "O3n")] + ([(unf, "O2")] if unf else [])
    done, bad = build_all(args, jobs)
    print("  built: " + ", ".join(done) + f" ({time.monotonic() - t0:.0f} s)", flush=True)
    for what, e in bad:
        print(f"FAIL {spec.name}: {e}", flush=True)
        errors.append(f"{spec.name}: {str(e).splitlines()[0]}")

    # sides: name -> callable(n) -> dict of figures
    T = args.threads
    plan = [("O2-1t", fused, "O2", 1)]
    if fused.has_threads:
        plan.append((f"O2-{T}t", fused, "O2", T))
    plan.append(("O3n-1t", fused, "O3n", 1))
    if unf:
        plan.append(("unfused-1t", unf, "O2", 1))
    plan = [p for p in plan if p[2] in p[1].exes]

    # correctness: every build and thread count against ORT on the same inputs
    model = onnx.load(spec.path, load_external_data=True)
    ok, est, feeds, ref, worst = True, {}, None, None, 0.0
    checked = []
    for side, ours, v, th in list(plan):
        dump = os.path.join(ours.folder, f"io_{v}_{th}t")
        try:
            r = ours.run(v, ["--runs", "2", "--warmup", "0", "--dump", dump], th)
        except BenchError as e:
            print(f"FAIL {spec.name} [{side}]: {e}", flush=True)
            errors.append(f"{spec.name} [{side}]: {str(e).splitlines()[0]}")
            plan.remove((side, ours, v, th))
            continue
        est[side] = r["min_s"]
        if feeds is None:
            feeds = bench_ort.read_dumped_inputs(model, dump)
            ort1 = OrtSide(spec.path, 1, feeds)
            ortn = OrtSide(spec.path, T, feeds)
            ref = ort1.sess.run(None, feeds)
        good, w = check_outputs(ort1.sess, ref, dump, f"{spec.name} [{side}]")
        ok &= good
        worst = max(worst, w)
        checked.append(side)
    if feeds is None:
        raise BenchError("no build of ours ran: " + "; ".join(errors))
    if ok:
        print(f"  outputs of {', '.join(checked)} match onnxruntime (max abs err {worst:.3g})")
    if {"O2-1t", f"O2-{T}t"} <= set(checked):
        # the generated code promises bit-identical results for any thread
        # count (where not documented otherwise): say whether they are
        same = all(open(os.path.join(fused.folder, "io_O2_1t", f"output_{k}.bin"), "rb").read() ==
                   open(os.path.join(fused.folder, f"io_O2_{T}t", f"output_{k}.bin"), "rb").read()
                   for k in range(len(ref)))
        print(f"  O2-{T}t outputs bit-identical to O2-1t: {'yes' if same else 'NO'}")
    sides = [s for s, *_ in plan] + ["ORT-1t", f"ORT-{T}t"]
    est["ORT-1t"] = ort1.time(3)["min_s"]
    est[f"ORT-{T}t"] = ortn.time(3)["min_s"]

    if args.runs:
        n = args.runs
    else:
        n = max(args.min_runs, min(100000, int(math.ceil(args.seconds / max(max(est.values()), 1e-7)))))
    runners = {s: (lambda n, o=o, v=v, th=th: o.run(v, ["--runs", str(n), "--warmup", "1"], th))
               for s, o, v, th in plan}
    runners["ORT-1t"] = ort1.time
    runners[f"ORT-{T}t"] = ortn.time
    per_round = {s: [] for s in sides}
    order0 = list(sides)
    reads = []
    if spec.weight_bytes and args.stream_exe:
        # the read-only loop over as many bytes as the weights, as one more
        # side of the rounds: the GEMV and its reference see the same machine
        mib = str(max(1, int(math.ceil(spec.weight_bytes / 2**20))))
        runners["read-loop"] = lambda n: parse_kv(sh([args.stream_exe, "--read", mib], 600,
                                                     what="stream_limit --read").stdout)
        order0.append("read-loop")
    t0 = time.monotonic()
    for r in range(args.rounds):
        order = order0[r % len(order0):] + order0[:r % len(order0)]
        for s in order:
            if s not in runners:
                continue
            try:
                x = runners[s](n)
            except BenchError as e:  # a crash or failure in one round drops the side
                print(f"FAIL {spec.name} [{s}], round {r + 1}: {e}", flush=True)
                errors.append(f"{spec.name} [{s}]: {str(e).splitlines()[0]}")
                del runners[s]
                per_round.pop(s, None)
                continue
            if s == "read-loop":
                reads.append(x)
            else:
                per_round[s].append(x)
    sides = [s for s in sides if s in per_round]
    timed_s = time.monotonic() - t0
    keys = ("median_s", "min_s", "cpu_median_s", "proc_cpu_median_s")
    best = {s: {k: min(x.get(k, math.inf) for x in rs) for k in keys} for s, rs in per_round.items()}
    spread = {s: max(x["median_s"] for x in rs) / min(x["median_s"] for x in rs)
              for s, rs in per_round.items()}

    print(f"  {n} runs per side, {args.rounds} interleaved rounds (order rotated; {timed_s:.0f} s), "
          f"best of the rounds' medians; cpu = thread CPU (1t), process CPU (all threads, {T}t); "
          f"spread = worst/best round median")
    w = max(len(s) for s in sides)
    print(f"  {'side':<{w}}  {'median':>10}  {'min':>10}  {'cpu median':>10}  {'spread':>6}")
    for s in sides:
        b = best[s]
        cpu = b["proc_cpu_median_s"] if s.endswith(f"-{T}t") and T != 1 else b["cpu_median_s"]
        print(f"  {s:<{w}}  {fmt_s(b['median_s']):>10}  {fmt_s(b['min_s']):>10}  "
              f"{fmt_s(cpu):>10}  {spread[s]:>6.2f}")

    def ratio(a, b, key="median_s"):
        if a not in best or b not in best:
            return None
        return best[a][key] / best[b][key]

    res = {"name": spec.name, "ok": ok, "best": best, "n": n, "checks": [], "errors": errors}
    t1 = T_CHAIN if spec.name in CHAIN_MODELS else T_ORT
    rows = [("O2-1t / ORT-1t", "O2-1t", "ORT-1t", t1, "cpu_median_s"),
            (f"O2-{T}t / ORT-{T}t", f"O2-{T}t", f"ORT-{T}t", T_ORT, "proc_cpu_median_s"),
            ("O2-1t / O3n-1t", "O2-1t", "O3n-1t", T_NATIVE, "cpu_median_s")]
    if unf:
        rows.append(("fused / unfused (O2, 1t)", "O2-1t", "unfused-1t", T_FUSE, "cpu_median_s"))
    print("  ratios (wall-clock medians; cpu: the same ratio in CPU time):")
    for label, a, b, target, ck in rows:
        rw = ratio(a, b)
        rc = ratio(a, b, ck)
        m = mark(rw, target)
        if rw is None:
            txt = "n/a (no set_threads)" if not fused.has_threads and f"-{T}t" in a else \
                  "n/a (a side failed)"
        else:
            txt = f"{rw:6.3f}  (cpu {rc:.3f})"
        note = ""
        if m == "FAIL" and rw <= target * max(spread[a], spread[b]):
            note = "  (within the rounds' spread: rerun)"
        print(f"    {label:<26} {txt:<24} target <= {target:.2f}  {m}{note}")
        res["checks"].append((f"{spec.name}: {label}", rw, target, m))
    res["ratios"] = {label: ratio(a, b) for label, a, b, *_ in rows}

    if spec.weight_bytes and (limits or reads):
        ref = dict(limits or {})
        if reads:
            # the best of the rounds, as for every side
            for k in ("stream_read_GBps", "stream_read_all_GBps", "read_threads"):
                ref[k] = max(x.get(k, 0.0) for x in reads)
            ref["where"] = (f"the read-only loop of bench/stream_limit.c over "
                            f"{spec.weight_bytes / 1e6:.0f} MB, one more side of the rounds, best of "
                            f"{len(reads)}")
        else:
            ref["where"] = "the read-only loop of bench/stream_limit.c at the start of the run"
        gemv_bandwidth(args, spec, best, ref, res)
    if spec.name == "sgemm1024" and limits and "O2-1t" in best:
        fl = spec.flops
        g1 = fl / best["O2-1t"]["median_s"] / 1e9
        gc = fl / best["O2-1t"]["cpu_median_s"] / 1e9
        peak = limits.get("fma_gflops", 0)
        line = f"  SGEMM: O2-1t {g1:.1f} GFLOP/s = {100 * g1 / peak:.0f}% of the one-core FMA peak " \
               f"({peak:.1f} GFLOP/s, stream_limit; target >= 70%; in thread CPU time " \
               f"{gc:.1f} GFLOP/s = {100 * gc / peak:.0f}%)"
        if f"O2-{T}t" in best:
            line += f"; {T}t/1t speedup {best['O2-1t']['median_s'] / best[f'O2-{T}t']['median_s']:.2f}x " \
                    f"(target >= 1.8x)"
        print(line + "; OpenBLAS: not timed here")
    return res


def gemv_bandwidth(args, spec, best, limits, res):
    T = args.threads
    print(f"  GEMV bandwidth: {spec.weight_bytes / 1e6:.1f} MB of weights / median time, against "
          f"{limits['where']}:")
    for side, key, what in (("O2-1t", "stream_read_GBps", "1 thread"),
                            (f"O2-{T}t", "stream_read_all_GBps",
                             f"{int(limits.get('read_threads', 0))} threads")):
        if side not in best or not limits.get(key):
            continue
        bw = spec.weight_bytes / best[side]["median_s"] / 1e9
        ref = limits[key]
        frac = bw / ref
        m = "PASS" if frac >= T_BW else "FAIL"
        cpu = ""
        if side == "O2-1t":
            bc = spec.weight_bytes / best[side]["cpu_median_s"] / 1e9
            cpu = f"; in thread CPU time {bc:.1f} GB/s = {100 * bc / ref:.1f}%"
        print(f"    {side:<8} {bw:6.1f} GB/s = {100 * frac:5.1f}% of {ref:.1f} GB/s ({what})   "
              f"target >= {100 * T_BW:.0f}%  {m}{cpu}")
        res["checks"].append((f"{spec.name}: {side} bandwidth / read loop ({what})", frac,
                              T_BW, m))
        res.setdefault("bw", {})[side] = (bw, frac)
    if args.probe_figures:
        p = args.probe_figures
        for side in ("O2-1t", f"O2-{T}t"):
            if side in best:
                bw = spec.weight_bytes / best[side]["median_s"] / 1e9
                ref = p.get("read_1t") if side == "O2-1t" else p.get("read_all")
                if ref:
                    print(f"    {side:<8} vs `rlopt probe` DRAM read "
                          f"{'1 thread' if side == 'O2-1t' else 'all threads'} {ref:.1f} GB/s: "
                          f"{100 * bw / ref:.1f}% (reference)")


# ---- machine figures ----------------------------------------------------------


def machine_limits(args, work):
    exe = os.path.join(work, "stream_limit")
    sh([args.cc, "-O2", "-march=native", "-pthread", os.path.join(HERE, "stream_limit.c"),
        "-o", exe], 300, what="compile stream_limit.c")
    args.stream_exe = exe
    r = sh([exe], 600, what="stream_limit")
    return parse_kv(r.stdout), r.stdout


def probe_figures(args, work):
    """`rlopt probe`: DRAM read bandwidth, single thread (comment) and all
    threads (the DRAM level's read_bw)"""
    xml = os.path.join(work, "host.xml")
    r = rltest.run([args.rlopt, "probe", "-o", xml], timeout=300)
    if not r.ok or not os.path.exists(xml):
        print(f"  (rlopt probe failed: {r.describe(3)})")
        return None
    out = {}
    text = open(xml).read()
    m = re.search(r"DRAM read ([\d.]+)", text)
    if m:
        out["read_1t"] = float(m.group(1))
    try:
        root = ET.fromstring(text)
        for lv in root.iter("level"):
            if lv.get("name") == "DRAM" and lv.get("read_bw"):
                out["read_all"] = float(lv.get("read_bw")) / 1e9
    except ET.ParseError:
        pass
    return out


# ---- main ---------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rlopt", default=None, help="rlopt executable (default: <source>/build/rlopt)")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help="comma-separated (default: %(default)s; also sgemm1024 or a path)")
    ap.add_argument("--quick", action="store_true",
                    help="2 rounds of ~0.15 s per side (default: 5 rounds of ~1 s)")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    ap.add_argument("--seconds", type=float, default=None, help="target seconds per side and round")
    ap.add_argument("--runs", type=int, default=0, help="timed runs per side and round (fixed)")
    ap.add_argument("--threads", type=int, default=2, help="the multi-thread sides (default: 2)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--jobs", type=int, default=2, help="parallel compiles (default: 2)")
    ap.add_argument("--no-probe", action="store_true", help="skip `rlopt probe`")
    ap.add_argument("--no-fusion", action="store_true", help="skip the unfused builds")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--fail-on-target", action="store_true",
                    help="exit 3 when a target is missed (default: only print FAIL)")
    args = ap.parse_args()
    if args.rounds is None:
        args.rounds = 2 if args.quick else 5
    if args.seconds is None:
        args.seconds = 0.15 if args.quick else 1.0
    args.min_runs = 3 if args.quick else 5
    if args.threads < 2:
        ap.error("--threads wants 2 or more (the 1-thread sides are always timed)")
    args.rlopt = os.path.abspath(args.rlopt or os.path.join(SOURCE, "build", "rlopt"))
    if not os.access(args.rlopt, os.X_OK):
        ap.error(f"rlopt not found at {args.rlopt} (use --rlopt)")

    import onnxruntime as ort

    t_start = time.monotonic()
    model_name = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                       if ln.startswith("model name")), "")
    print(f"bench_kernels.py {'--quick ' if args.quick else ''}({args.rounds} rounds, "
          f"~{args.seconds:g} s per side and round)")
    print(f"machine: {os.cpu_count()} CPUs, {model_name}; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    cc_ver = rltest.run([args.cc, "--version"], timeout=30).stdout.splitlines()[:1]
    print(f"cc: {args.cc} ({cc_ver[0] if cc_ver else '?'}); onnxruntime {ort.__version__}, "
          f"onnx {onnx.__version__}; rlopt {args.rlopt}")
    work = tempfile.mkdtemp(prefix="rlopt-kbench.")
    failed, results = [], []
    try:
        try:
            specs = resolve_models(args, work)
            passes = pipeline_passes(args.rlopt, specs[0].path, work) if specs else []
        except BenchError as e:
            print(f"bench_kernels.py: {e}", file=sys.stderr)
            return 1
        print(f"rlopt passes: {', '.join(passes)} (unfused = these minus fuse and factorize)")
        limits = None
        args.stream_exe = None
        try:
            limits, text = machine_limits(args, work)
            print("machine figures (bench/stream_limit.c, same run): "
                  f"read-only loop {limits.get('stream_read_GBps', 0):.1f} GB/s (1 thread), "
                  f"{limits.get('stream_read_all_GBps', 0):.1f} GB/s "
                  f"({int(limits.get('read_threads', 0))} threads); copy/triad "
                  f"{limits.get('stream_bw_GBps', 0):.1f} GB/s; LLC "
                  f"{limits.get('llc_bytes', 0) / 2**20:.0f} MiB; FMA peak "
                  f"{limits.get('fma_gflops', 0):.1f} GFLOP/s (1 core, "
                  f"{int(limits.get('fma_vector_bits', 0))}-bit)")
        except BenchError as e:
            print(f"FAIL machine limits: {e}", flush=True)
            failed.append("stream_limit")
        args.probe_figures = None
        if not args.no_probe:
            args.probe_figures = probe_figures(args, work)
            if args.probe_figures:
                p = args.probe_figures
                print(f"rlopt probe (same run): DRAM read {p.get('read_1t', 0):.1f} GB/s (1 thread), "
                      f"{p.get('read_all', 0):.1f} GB/s (all threads)")
        for spec in specs:
            try:
                t0 = time.monotonic()
                r = bench_model(args, spec, work, limits, passes)
                print(f"  ({spec.name}: {time.monotonic() - t0:.0f} s in all)", flush=True)
                results.append(r)
                failed.extend(r["errors"])
                if not r["ok"]:
                    failed.append(f"{spec.name}: outputs do not match onnxruntime")
            except BenchError as e:
                print(f"FAIL {spec.name}: {e}", flush=True)
                failed.append(f"{spec.name}: {str(e).splitlines()[0]}")
        if results:
            summary(args, results)
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\ntotal {time.monotonic() - t_start:.0f} s; load average now "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    missed = [c for r in results for c in r["checks"] if c[3] == "FAIL"]
    if failed:
        print("\nFAILED (build, run or match):\n" + "".join(f"  {f}\n" for f in failed), end="")
        return 1
    if missed and args.fail_on_target:
        return 3
    return 0


def summary(args, results):
    T = args.threads
    print(f"\nsummary (wall-clock, best of {args.rounds} interleaved rounds' medians; "
          f"ratios marked against issue 9's targets)")
    hdr = (f"  {'model':<17} {'O2-1t':>10} {f'O2-{T}t':>10} {'O3n-1t':>10} {'ORT-1t':>10} "
           f"{f'ORT-{T}t':>10}  {'1t/ORT':>11}  {f'{T}t/ORT':>11}  {'O2/O3n':>11}  "
           f"{'fused/unf':>11}  outputs")
    print(hdr)

    def cell(v, target):
        if v is None:
            return f"{'-':>11}"
        return f"{v:6.2f} {mark(v, target):<4}"

    for r in results:
        b = r["best"]
        g = lambda s: fmt_s(b[s]["median_s"]) if s in b else "-"  # noqa: E731
        rt = r["ratios"]
        t1 = T_CHAIN if r["name"] in CHAIN_MODELS else T_ORT
        print(f"  {r['name']:<17} {g('O2-1t'):>10} {g(f'O2-{T}t'):>10} {g('O3n-1t'):>10} "
              f"{g('ORT-1t'):>10} {g(f'ORT-{T}t'):>10}  {cell(rt.get('O2-1t / ORT-1t'), t1)}  "
              f"{cell(rt.get(f'O2-{T}t / ORT-{T}t'), T_ORT)}  "
              f"{cell(rt.get('O2-1t / O3n-1t'), T_NATIVE)}  "
              f"{cell(rt.get('fused / unfused (O2, 1t)'), T_FUSE)}  "
              f"{'match' if r['ok'] else 'MISMATCH'}")
        for side, (bw, frac) in r.get("bw", {}).items():
            print(f"  {'':<17} GEMV {side}: {bw:.1f} GB/s = {100 * frac:.0f}% of the read-only loop "
                  f"({mark(-frac, -T_BW)}, target >= {100 * T_BW:.0f}%)")
    checks = [c for r in results for c in r["checks"] if c[3] != "n/a"]
    npass = sum(1 for c in checks if c[3] == "PASS")
    print(f"  targets: {npass} of {len(checks)} PASS"
          f" (1t/ORT: <= {T_ORT:.2f}, chains <= {T_CHAIN:.2f}; {T}t/ORT <= {T_ORT:.2f}; "
          f"O2/O3n <= {T_NATIVE:.2f}; fused/unfused <= {T_FUSE:.2f}; GEMV >= {100 * T_BW:.0f}%)")
    for c in checks:
        if c[3] == "FAIL":
            print(f"    FAIL {c[0]}: {c[1]:.3f} (target {'>=' if 'bandwidth' in c[0] else '<='} "
                  f"{c[2]:.2f})")


if __name__ == "__main__":
    sys.exit(main())
