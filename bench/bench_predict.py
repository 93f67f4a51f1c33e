#!/usr/bin/env python3
"""bench_predict.py - does the cost model predict what runs? Predicted against
measured time, kernel by kernel and model by model, at 1 and 2 threads.

Kernels (one model each, made with onnx.helper; activations are graph inputs,
weights initializers as in a real model): fused elementwise chains with and
without transcendental ops, a single Add, in cache and out of it; batch-1
GEMV in cache and out; GEMM at three sizes; Conv 3x3 and 1x1; Softmax;
LayerNormalization; ReduceSum and ReduceMean; then the example models end to
end (examples/gen_models.py).

  prediction  `rlopt report MODEL -O2 --hw PROFILE --format json`: total
              time_s and the bound (with its level) of the kernel that takes
              the most time. PROFILE at T threads: the probed profile (all
              cores) for T = cores, its one-core variant (one core's
              bandwidth per level, core_read_bw/core_write_bw, the single-
              thread peaks, a core's share of the private caches and the
              whole shared last cache, cores=1) for T = 1. The probe's
              <calibration> rates (the emitted code's exp, tanh, division,
              GEMM, ...) price the arithmetic; a profile without them is
              priced from the peak and the report says so.
  measurement `rlopt MODEL -O2`, compiled `cc -O2` (what users compile
              with) with bench/timing_harness.c, NAME_set_threads(T), median
              wall time per run, the lowest of --repeats such medians (each
              over --seconds / --repeats): on a shared machine another
              process holds a core for tens of milliseconds at a time, and a
              T-thread run measured while it does waits for that core (on the
              2-core host, resnet_small at 2 threads read 186-215 us, its
              1-thread time, while its second core was taken, 113-128 us
              when it was free); the prediction is for T free cores. The
              `spread` column is the highest median over the lowest.

Printed per kernel and thread count: measured/predicted, the predicted bound,
and for a memory-bound kernel the bandwidth it reached as a share of the
level it was priced at (its bytes at that level for a tiled kernel) (the bound agrees with the measurement when that
share is at least 50%). A ratio outside [0.5, 2] gets a reason. The summary:
median |measured/predicted - 1| over kernels (target <= 0.25), kernels off by
more than 2x, and the example models' ratios (target within 30%).

It is a benchmark, not a test: it exits 0 unless something fails to
generate, build or run.

Usage: bench_predict.py --rlopt build/rlopt [--hw FILE.xml] [--seconds S]
                        [--repeats N] [--threads 1,2] [--kernels a,b] [--no-models | --no-kernels]
                        [--per-kernel]
                        [--keep]
"""

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
F = TensorProto.FLOAT


def vi(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


def model(nodes, inputs, outputs, inits=()):
    if not isinstance(nodes, (list, tuple)):
        nodes = [nodes]
    g = helper.make_graph(list(nodes), "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def rnd(name, shape, seed, scale=0.1):
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def add_model(n):
    return model(helper.make_node("Add", ["a", "b"], ["y"], name="add"),
                 [vi("a", [n]), vi("b", [n])], [vi("y", [n])])


def chain_model(n, trans):
    """8 elementwise ops on x [n] that fuse into one kernel; with trans:
    Sigmoid, Tanh, Sqrt(Abs) and a Div among them."""
    if trans:
        ops = [("Sigmoid", None), ("Mul", 1.5), ("Tanh", None), ("Abs", None), ("Sqrt", None),
               ("Add", 1.0), ("Div", "x"), ("Sub", 0.25)]
    else:
        ops = [("Mul", 1.5), ("Add", 0.25), ("Max", -0.5), ("Sub", 0.125), ("Mul", 0.75),
               ("Add", 0.5), ("Min", 2.0), ("Abs", None)]
    nodes, inits, cur = [], [], "x"
    for i, (op, arg) in enumerate(ops):
        out = "y" if i == len(ops) - 1 else f"t{i}"
        ins = [cur]
        if isinstance(arg, float):
            inits.append(numpy_helper.from_array(np.array([arg], np.float32), f"c{i}"))
            ins.append(f"c{i}")
        elif arg == "x":
            ins.append("x")
        nodes.append(helper.make_node(op, ins, [out], name=f"op{i}"))
        cur = out
    return model(nodes, [vi("x", [n])], [vi("y", [n])], inits)


def matmul_model(m, k, n):
    return model(helper.make_node("MatMul", ["a", "w"], ["y"], name="matmul"),
                 [vi("a", [m, k])], [vi("y", [m, n])], [rnd("w", [k, n], 1)])


def softmax_model(r, c):
    return model(helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=-1),
                 [vi("x", [r, c])], [vi("y", [r, c])])


def layernorm_model(r, c):
    return model(helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], name="ln", axis=-1),
                 [vi("x", [r, c])], [vi("y", [r, c])],
                 [rnd("s", [c], 2, 1.0), rnd("b", [c], 3)])


def reduce_model(op, r, c):
    if op == "ReduceSum":  # axes an input from opset 13; an attribute for the others until 18
        return model(helper.make_node(op, ["x", "ax"], ["y"], name="reduce", keepdims=0),
                     [vi("x", [r, c])], [vi("y", [r])],
                     [numpy_helper.from_array(np.array([1], np.int64), "ax")])
    return model(helper.make_node(op, ["x"], ["y"], name="reduce", keepdims=0, axes=[1]),
                 [vi("x", [r, c])], [vi("y", [r])])


def conv_model(c, h, m, k):
    return model(helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[k // 2] * 4),
                 [vi("x", [1, c, h, h])], [vi("y", [1, m, h, h])],
                 [rnd("w", [m, c, k, k], 4), rnd("b", [m], 5)])


# name, model, what it exercises. Elementwise sizes: 16 KiB per tensor (L1),
# 512 KiB (L2/L3), 64 MiB (main memory).
KERNELS = [
    ("add_L1", lambda: add_model(1 << 12), "Add, 16 KiB per tensor"),
    ("add_DRAM", lambda: add_model(1 << 24), "Add, 64 MiB per tensor"),
    ("chain_L2", lambda: chain_model(1 << 17, False), "8 plain ops fused, 512 KiB"),
    ("chain_DRAM", lambda: chain_model(1 << 24, False), "8 plain ops fused, 64 MiB"),
    ("chain_tr_L2", lambda: chain_model(1 << 17, True), "8 ops with sigmoid/tanh/sqrt/div, 512 KiB"),
    ("chain_tr_DRAM", lambda: chain_model(1 << 22, True), "8 ops with sigmoid/tanh/sqrt/div, 16 MiB"),
    ("gemv_L2", lambda: matmul_model(1, 256, 512), "batch-1 MatMul, 512 KiB of weights"),
    ("gemv_DRAM", lambda: matmul_model(1, 4096, 8192), "batch-1 MatMul, 128 MiB of weights"),
    ("gemm_128", lambda: matmul_model(128, 128, 128), "MatMul 128^3"),
    ("gemm_512", lambda: matmul_model(512, 512, 512), "MatMul 512^3"),
    ("gemm_1024", lambda: matmul_model(1024, 1024, 1024), "MatMul 1024^3"),
    ("conv3x3", lambda: conv_model(64, 56, 64, 3), "Conv 64->64 3x3 on 56x56"),
    ("conv1x1", lambda: conv_model(256, 28, 128, 1), "Conv 256->128 1x1 on 28x28"),
    ("softmax", lambda: softmax_model(256, 4096), "Softmax 256x4096 (4 MiB)"),
    ("layernorm", lambda: layernorm_model(256, 4096), "LayerNormalization 256x4096"),
    ("reducesum", lambda: reduce_model("ReduceSum", 4096, 4096), "ReduceSum over 64 MiB"),
    ("reducemean", lambda: reduce_model("ReduceMean", 256, 1024), "ReduceMean over 1 MiB"),
]

MODELS = ["elementwise_chain", "mlp", "gpt_block", "resnet_small"]


def sh(cmd, timeout, what):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{what}: timed out after {timeout} s")
    if r.returncode != 0:
        raise RuntimeError(f"{what}: exit {r.returncode}: {(r.stderr or r.stdout).strip()[:400]}")
    return r.stdout


# ---- profiles -----------------------------------------------------------------


def one_core_profile(src, dst):
    """The probed profile with single-thread figures (see the module doc)."""
    text = open(src).read()
    tree = ET.parse(src)
    root = tree.getroot()
    threads = max(1, int(root.get("cores", "1")))
    num = r"([0-9.]+)"
    dram = re.search(r"DRAM read " + num + r", write " + num + r", copy " + num + r" GB/s", text)
    fp32 = re.search(r"fp32 FMA " + num + r",", text)
    fp64 = re.search(r"fp64 FMA " + num + r" GFLOP/s", text)
    how = []
    levels = list(root.iter("level"))
    core = 0
    for lvl in levels:
        last = lvl is levels[-1]
        if lvl.get("core_read_bw"):
            # one core's rates, measured by the probe (core_read_bw/core_write_bw)
            lvl.set("read_bw", lvl.get("core_read_bw"))
            lvl.set("write_bw", lvl.get("core_write_bw") or lvl.get("core_read_bw"))
            core += 1
        elif last and dram:
            lvl.set("read_bw", repr(float(dram.group(1)) * 1e9))
            lvl.set("write_bw", repr(float(dram.group(2)) * 1e9))
            how.append("DRAM: measured single-thread")
        else:
            for k in ("read_bw", "write_bw"):
                if lvl.get(k):
                    lvl.set(k, repr(float(lvl.get(k)) / threads))
        for k in ("core_read_bw", "core_write_bw"):
            lvl.attrib.pop(k, None)
        # a core's share of the private levels; the last cache is shared
        if not last and (lvl is not levels[-2] or len(levels) < 3):
            lvl.set("capacity", repr(max(4096.0, float(lvl.get("capacity")) / threads)))
    if core:
        how.append(f"{core} levels: one core's rates (core_read_bw/core_write_bw)")
    for pk in root.iter("peak"):
        p = pk.get("precision")
        if p == "fp32" and fp32:
            pk.set("flops", repr(float(fp32.group(1)) * 1e9))
        elif p == "fp64" and fp64:
            pk.set("flops", repr(float(fp64.group(1)) * 1e9))
        else:
            pk.set("flops", repr(float(pk.get("flops")) / threads))
    how.append("fp32/fp64 peak: measured single-thread" if fp32 else f"peaks / {threads}")
    root.set("name", "host-1core")
    root.set("cores", "1")
    d = root.find("description")
    if d is not None:
        d.text = (d.text or "") + " (one core)"
    tree.write(dst, encoding="UTF-8", xml_declaration=True)
    return threads, ", ".join(how)


def predict(rl, model_path, hw):
    """total time, the kernel that takes the most, the machine, every kernel"""
    out = sh([rl, "report", model_path, "-O2", "--hw", hw, "--format", "json"], 300, "rlopt report")
    j = json.loads(out)
    kern = j.get("kernels") or []
    top = max(kern, key=lambda k: k.get("time_s", 0)) if kern else None
    return j["total"]["time_s"], top, j["machine"], kern


# ---- measuring ------------------------------------------------------------------


def build(rl, cc, work, name, src, profile=False):
    c_path = os.path.join(work, name + ".c")
    if not os.path.exists(c_path):
        sh([rl, src, "-O2", "-o", c_path], 600, f"rlopt {name}")
    exe = os.path.join(work, name + ("_prof" if profile else "") + "_bench")
    sh([cc, "-O2", "-pthread", "-DRL_HAVE_THREADS", "-I", work] + (["-DRL_PROFILE"] if profile else []) + [
        f'-DRL_MODEL_HEADER="{name}.h"', f"-DRL_PREFIX={name}",
        f"-DRL_PREFIX_UC={name.upper()}", os.path.join(HERE, "timing_harness.c"), c_path,
        "-o", exe, "-lm"], 900, f"cc {name}")
    return exe


def measure(exe, work, threads, seconds, pred, repeats):
    """The lowest of `repeats` medians of the wall time per run, each over
    seconds / repeats, and the highest over the lowest (the spread); runs
    predicted under 50 us are timed in back-to-back groups (the clock reads
    would dominate one run)."""
    weights = exe[:-len("_bench")] + ".weights"
    inner = max(1, min(10000, int(50e-6 / pred))) if pred > 0 else 1
    cmd = [exe, "--seconds", str(seconds / max(1, repeats)), "--warmup", "2", "--threads",
           str(threads), "--inner", str(inner)]
    if os.path.exists(weights):
        cmd += ["--weights", weights]
    meds = []
    for _ in range(max(1, repeats)):
        out = sh(cmd, 900, f"run {os.path.basename(exe)}")
        vals = dict(line.split()[:2] for line in out.splitlines() if len(line.split()) >= 2)
        meds.append(float(vals["median_s"]))
    return min(meds), max(meds) / min(meds)


def per_kernel(exe, threads, seconds, kern):
    """Each kernel's measured time (the generated code built with
    -DRL_PROFILE, NAME_profile's table) beside its predicted time. The
    minimum over the calls is the measurement (on a shared machine another
    process's time lands in some of them), the mean beside it."""
    weights = exe[:-len("_prof_bench")] + ".weights"
    cmd = [exe, "--seconds", str(seconds), "--warmup", "2", "--threads", str(threads)]
    if os.path.exists(weights):
        cmd += ["--weights", weights]
    out = sh(cmd, 900, f"run {os.path.basename(exe)}")
    meas = {}
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) == 6 and f[0] != "kernel":
            meas[f[0]] = (float(f[4]), float(f[3]))
    print(f"  {'kernel':<36} {'bound':<8} {'predicted':>10} {'min':>10} {'mean':>10} {'ratio':>6}")
    for k in kern:
        m = meas.get(k["name"])
        if not m:
            continue
        p = k.get("time_s", 0)
        r = m[0] / p if p > 0 else float("inf")
        print(f"  {k['name'][:36]:<36} {k.get('bound', '-'):<8} {p * 1e6:>8.4g}us {m[0] * 1e6:>8.4g}us "
              f"{m[1] * 1e6:>8.4g}us {r:>6.2f}")


def level_of(node, machine):
    """The memory level a memory-bound kernel was priced at: (name, read bw of
    the cores the kernel runs on). A kernel on k of the machine's cores gets
    min(level, k x one core's rate) where the profile gives one core's rate
    (as the cost model prices it), else k / cores of the level; a report
    without the kernel's thread count: the whole level."""
    levels = machine["memory"]
    b = node.get("bound_level")
    lv = next((x for x in levels if x["name"] == b), levels[-1])
    bw, k, cores = lv["read_bw"], node.get("threads"), machine.get("cores") or 1
    if k:
        if lv.get("core_read_bw"):
            bw = min(bw, k * lv["core_read_bw"])
        else:
            bw = bw * min(k, cores) / cores
    return lv["name"], bw


def reason(ratio, node, machine, pred, meas, ws):
    """Why a prediction is off by more than 2x."""
    if 0.5 <= ratio <= 2:
        return ""
    lat = machine["launch_latency"]
    if pred > 0 and lat / pred > 0.5:
        return "latency: the call overhead is most of the prediction"
    if node["bound"] == "compute" and ratio > 2:
        return (f"kernel quality: {node['flops'] / meas / 1e9:.3g} GFLOP/s reached, below the "
                f"calibrated rate the prediction assumes")
    if node["bound"] == "memory" and ratio > 2:
        name, bw = level_of(node, machine)
        return (f"bandwidth: {ws / meas / 1e9:.3g} GB/s reached against {bw / 1e9:.3g} GB/s of "
                f"{name}")
    if ratio < 0.5:
        return "cache or prefetch: faster than the level the bytes were priced at"
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rlopt", required=True, help="path of the rlopt executable")
    ap.add_argument("--hw", help="a probed profile (default: run `rlopt probe` into the work folder)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--seconds", type=float, default=0.5, help="timing per kernel and thread count")
    ap.add_argument("--repeats", type=int, default=3,
                    help="medians taken (over --seconds / N each); the lowest is reported")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--kernels", help="comma-separated subset")
    ap.add_argument("--no-models", action="store_true", help="skip the example models")
    ap.add_argument("--no-kernels", action="store_true", help="skip the single kernels (models only)")
    ap.add_argument("--per-kernel", action="store_true",
                    help="for the example models, also each kernel's predicted and measured time "
                         "(the code built with -DRL_PROFILE)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()
    rl = os.path.abspath(args.rlopt)
    src = os.path.dirname(HERE)
    work = tempfile.mkdtemp(prefix="rlopt-predict.")
    threads = [int(t) for t in args.threads.split(",")]
    try:
        host = os.path.join(work, "host.xml")
        if args.hw:
            shutil.copy(args.hw, host)
        else:
            print("probing this machine (rlopt probe, with the emitted code's rates) ...", flush=True)
            sh([rl, "probe", "-o", host], 900, "rlopt probe")
        one = os.path.join(work, "host1.xml")
        cores, how = one_core_profile(host, one)
        cal = "calibration" in open(host).read()
        print(f"profile: {args.hw or 'rlopt probe'} ({cores} cores); 1-thread variant: {how}; "
              f"compute priced {'from the calibrated rates' if cal else 'from the peak (no <calibration>)'}")
        prof = {t: (one if t == 1 else host) for t in threads}
        for t in threads:
            if t not in (1, cores):
                print(f"note: {t} threads priced with the all-core profile ({cores} cores)")
        want = set(args.kernels.split(",")) if args.kernels else None
        jobs = []
        for name, make, what in KERNELS:
            if (want and name not in want) or args.no_kernels:
                continue
            path = os.path.join(work, name + ".onnx")
            onnx.save(make(), path)
            jobs.append((name, path, what, False))
        if not args.no_models and not want:
            sh([sys.executable, os.path.join(src, "examples", "gen_models.py"), "--out", work, "--no-data",
                "--no-check"] + MODELS, 600,
               "gen_models")
            for mname in MODELS:
                jobs.append((mname, os.path.join(work, mname + ".onnx"), "example model", True))
        hdr = (f"{'kernel':<14} {'T':>2} {'bound':<14} {'predicted':>10} {'measured':>10} "
               f"{'spread':>6} {'ratio':>6} {'bw share':>8}  reason")
        print("\n" + hdr)
        krows, mrows = [], []
        for name, path, what, is_model in jobs:
            exe = build(rl, args.cc, work, name, path)
            pexe = build(rl, args.cc, work, name, path, profile=True) if is_model and args.per_kernel else None
            for t in threads:
                pred, node, mach, kern = predict(rl, path, prof[t])
                meas, spread = measure(exe, work, t, args.seconds, pred, args.repeats)
                r = meas / pred if pred > 0 else float("inf")
                bound = node["bound"] if node else "-"
                share = ""
                ws = (node.get("bytes_read", 0) + node.get("bytes_write", 0)) if node else 0
                # a tiled kernel's bytes at the level that binds (a row op's
                # passes re-read x there), else its bytes in and out
                for lv in (node or {}).get("levels", []):
                    if lv["name"] == node.get("bound_level") and lv.get("bytes"):
                        ws = lv["bytes"]
                if node and node["bound"] == "memory" and not is_model:
                    lname, bw = level_of(node, mach)
                    bound = f"memory ({lname})"
                    share = f"{100 * ws / meas / bw:.0f}%"
                why = reason(r, node, mach, pred, meas, ws) if node and not is_model else ""
                (mrows if is_model else krows).append((name, t, r))
                print(f"{name:<14} {t:>2} {bound:<14} {pred * 1e6:>8.4g}us {meas * 1e6:>8.4g}us "
                      f"{spread:>6.2f} {r:>6.2f} {share:>8}  {why}", flush=True)
                if pexe:
                    per_kernel(pexe, t, args.seconds, kern)
        if krows:
            dev = statistics.median(abs(r - 1) for _, _, r in krows)
            off = [(n, t, r) for n, t, r in krows if not 0.5 <= r <= 2]
            print(f"\nkernels: median |measured/predicted - 1| = {dev:.2f} over {len(krows)} "
                  f"(target <= 0.25: {'PASS' if dev <= 0.25 else 'FAIL'}); off by more than 2x: "
                  f"{len(off)}" + (" (" + ", ".join(f"{n}@{t}t" for n, t, _ in off) + ")" if off else ""))
        for t in threads:
            rs = [(n, r) for n, tt, r in mrows if tt == t]
            if rs:
                ok = all(abs(r - 1) <= 0.30 for _, r in rs)
                print(f"models at {t} thread(s): " + ", ".join(f"{n} {r:.2f}" for n, r in rs) +
                      f" (target within 30%: {'PASS' if ok else 'FAIL'})")
    except RuntimeError as e:
        print(f"bench_predict: {e}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"work folder: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
