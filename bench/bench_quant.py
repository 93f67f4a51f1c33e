#!/usr/bin/env python3
"""bench_quant.py - batch-1 GEMV over float, int8 and int4 weights through the
generated C, against the machine's read bandwidth, and `--quantize auto` at
batch 1 and batch 64, measured in one run.

    python bench/bench_quant.py [--rlopt build/rlopt] [--size G] [--threads 1,2]
                                [--seconds 1] [--cc cc] [--hw epyc9654] [--probe] [--keep]

What it does, in a temporary folder:
  1. Writes MatMul [1,G] x [G,G] (G: fp32 weights >= 4x the last-level cache,
     at least 6144: 151 MB) and generates C three times: float, --quantize
     int8 (one scale per output channel) and --quantize int4 (blocks of 32),
     weights in the side file (--weights-max 0); prints the side files' sizes.
  2. Compiles each with bench/timing_harness.c at plain `cc -O2` and times it
     at each thread count (median of runs over --seconds); checks each
     output against numpy's float product on the harness's own input.
  3. Prints time (one thread: its CPU time, which leaves out the time a
     shared machine deschedules it; --wall for wall time), weight bytes per second, speedup over float measured and
     predicted (the quantize pass's remark: predicted time before and after
     on --hw), and the read-only streaming limit of bench/stream_limit.c
     measured in the same run (one thread, all threads), plus `rlopt probe`'s
     DRAM read figure with --probe.
  4. onnxruntime on the same product, same thread counts: float, its
     quantize_dynamic int8 model, and the MatMulNBits int4 file rlopt writes
     with accuracy_level 4 added (onnxruntime's own 4-bit quantizer needs the
     onnx_ir package, which the venv lacks).
  5. A two-layer MLP of 1024 at batch 1 and batch 64 with --quantize auto on
     --hw (a CPU profile): prints each node's verdict and the numbers behind
     it; at batch 64 the products are compute-bound and stay float.

The machine is shared: figures move between runs; ratios within one run are
what to read.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def sh(cmd, timeout=900, cwd=None):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        sys.stderr.write("command failed: %s\n%s%s" % (" ".join(cmd), r.stdout[-3000:],
                                                         r.stderr[-3000:]))
        sys.exit(1)
    return r


def kv(text):
    out = {}
    for ln in text.splitlines():
        p = ln.split()
        if len(p) == 2:
            try:
                out[p[0]] = float(p[1])
            except ValueError:
                pass
    return out


def llc_bytes():
    best = 0
    for i in range(8):
        try:
            with open(f"/sys/devices/system/cpu/cpu0/cache/index{i}/size") as f:
                s = f.read().strip()
        except OSError:
            break
        m = re.match(r"(\d+)([KMG]?)", s)
        if m:
            best = max(best, int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)])
    return best


def save_model(path, nodes, inits, x_shape, y_shape):
    from onnx import TensorProto, helper, numpy_helper, save
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
                          [numpy_helper.from_array(a, n) for n, a in inits.items()])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def remarks(stderr, node=None):
    rs = [ln for ln in stderr.splitlines() if ln.startswith("remark: quantize:")]
    return [r for r in rs if node is None or r.startswith(f"remark: quantize: {node}:")]


def predicted(rem):
    m = re.search(r"\[time ([\d.e+-]+) s -> ([\d.e+-]+) s\]", rem)
    return (float(m.group(1)), float(m.group(2))) if m else (None, None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rlopt", default=os.path.join(ROOT, "build", "rlopt"))
    ap.add_argument("--size", type=int, default=0, help="G (default: fp32 weights >= 4x LLC)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--hw", default="epyc9654", help="profile for the predictions")
    ap.add_argument("--int4-error", type=float, default=0.15,
                    help="--max-rel-error for int4 (int4 on Gaussian weights: about 0.09)")
    ap.add_argument("--probe", action="store_true", help="also run `rlopt probe`")
    ap.add_argument("--wall", dest="cpu_time", action="store_false",
                    help="time one thread by the wall clock too (default: its CPU time)")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    work = tempfile.mkdtemp(prefix="bench-quant.")
    try:
        run(args, threads, work)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def run(args, threads, work):
    llc = llc_bytes()
    G = args.size
    if not G:
        G = 6144
        while 4 * G * G < 4 * llc:
            G += 1024
    rng = np.random.default_rng(0)
    W = (rng.standard_normal((G, G)) / np.sqrt(G)).astype(np.float32)
    path = os.path.join(work, "gv.onnx")
    from onnx import helper
    save_model(path, [helper.make_node("MatMul", ["x", "w"], ["y"], name="gemv")], {"w": W},
               [1, G], [1, G])
    print(f"batch-1 GEMV [1,{G}] x [{G},{G}]: {4 * G * G / 1e6:.0f} MB of fp32 weights "
          f"({4 * G * G / llc:.1f}x the {llc >> 20} MiB last-level cache)" if llc else "")

    # machine limit, measured now
    exe = os.path.join(work, "stream_limit")
    sh([args.cc, "-O2", "-march=native", "-pthread", os.path.join(HERE, "stream_limit.c"), "-o", exe])
    lim = kv(sh([exe, "--read"]).stdout)
    probe = None
    if args.probe:
        xml = os.path.join(work, "host.xml")
        sh([args.rlopt, "probe", "-o", xml])
        m = re.search(r"DRAM read ([\d.]+)", open(xml).read())
        probe = float(m.group(1)) if m else None

    variants = [("float", []), ("int8", ["--quantize", "int8"]),
                ("int4", ["--quantize", "int4", "--max-rel-error", str(args.int4_error)])]
    res = {}
    for name, flags in variants:
        d = os.path.join(work, name)
        os.makedirs(d)
        c = os.path.join(d, "gv.c")
        r = sh([args.rlopt, path, "-o", c, "--weights-max", "0", "--hw", args.hw, "--remarks"] + flags)
        rem = remarks(r.stderr, "gemv")
        wbytes = os.path.getsize(os.path.join(d, "gv.weights"))
        exe = os.path.join(d, "bench")
        sh([args.cc, "-std=c11", "-O2", "-pthread", "-DRL_HAVE_THREADS", "-I", d,
            '-DRL_MODEL_HEADER="gv.h"', "-DRL_PREFIX=gv", "-DRL_PREFIX_UC=GV",
            os.path.join(HERE, "timing_harness.c"), c, "-o", exe, "-lm"])
        times = {}
        for t in threads:
            dump = os.path.join(d, f"dump{t}")
            os.makedirs(dump)
            out = kv(sh([exe, "--seconds", str(args.seconds), "--threads", str(t), "--dump", dump,
                         "--weights", os.path.join(d, "gv.weights")], cwd=d).stdout)
            # one thread: its CPU time (a shared machine deschedules it; the
            # wall time then measures the other tenants); more: wall time
            times[t] = out["cpu_median_s"] if t == 1 and args.cpu_time else out["median_s"]
        x = np.fromfile(os.path.join(dump, "input_0.bin"), dtype=np.float32)
        y = np.fromfile(os.path.join(dump, "output_0.bin"), dtype=np.float32)
        ref = x.astype(np.float64) @ W.astype(np.float64)
        err = float(np.linalg.norm(y - ref) / np.linalg.norm(ref))
        res[name] = dict(times=times, wbytes=wbytes, err=err, rem=rem[0] if rem else "")

    # onnxruntime on the same product: its quantize_dynamic int8 model, and
    # the MatMulNBits int4 file rlopt writes (accuracy_level 4: int8 dot
    # products on A quantized per block, onnxruntime's fastest CPU path)
    ort_t = {}
    try:
        import onnx
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
        q8 = os.path.join(work, "ort_int8.onnx")
        quantize_dynamic(path, q8, weight_type=QuantType.QInt8)
        q4 = os.path.join(work, "ort_int4.onnx")
        sh([args.rlopt, path, "-o", q4, "--quantize", "int4", "--max-rel-error",
            str(args.int4_error), "--onnx-format", "matmulnbits"])
        m4 = onnx.load(q4)
        for nd in m4.graph.node:
            if nd.op_type == "MatMulNBits":
                nd.attribute.append(onnx.helper.make_attribute("accuracy_level", 4))
        onnx.save(m4, q4)
        x = np.random.default_rng(1).uniform(-1, 1, (1, G)).astype(np.float32)
        import time
        for name, mp in (("ort float", path), ("ort int8", q8), ("ort int4", q4)):
            for t in threads:
                so = ort.SessionOptions()
                so.intra_op_num_threads = t
                sess = ort.InferenceSession(mp, so, providers=["CPUExecutionProvider"])
                for _ in range(2):
                    sess.run(None, {"x": x})
                ts = []
                end = time.monotonic() + args.seconds
                while time.monotonic() < end or len(ts) < 3:
                    c0, w0 = time.thread_time(), time.monotonic()
                    sess.run(None, {"x": x})
                    ts.append(time.thread_time() - c0 if t == 1 and args.cpu_time
                              else time.monotonic() - w0)
                ort_t[(name, t)] = float(np.median(ts))
    except Exception as e:  # the peer is optional
        print(f"(onnxruntime comparison skipped: {type(e).__name__}: {e})")

    print(f"\nmachine: read-only stream (bench/stream_limit.c, this run) "
          f"{lim.get('stream_read_GBps', 0):.1f} GB/s on 1 thread, "
          f"{lim.get('stream_read_all_GBps', 0):.1f} GB/s on {int(lim.get('read_threads', 0))}"
          + (f"; rlopt probe DRAM read {probe:.1f} GB/s" if probe else ""))
    print(f"\n{'weights':<8} {'file MB':>8} {'shrink':>7} {'err':>9} " +
          " ".join(f"{'t=' + str(t) + ' ms':>9} {'GB/s':>6} {'x float':>7}" for t in threads) +
          f" {'predicted':>9}")
    f0 = res["float"]
    for name, _ in variants:
        r = res[name]
        tb, ta = predicted(r["rem"])
        pred = f"{tb / ta:.2f}x" if tb and ta else "-"
        cols = []
        for t in threads:
            s = r["times"][t]
            cols.append(f"{s * 1e3:>9.2f} {r['wbytes'] / s / 1e9:>6.1f} "
                        f"{f0['times'][t] / s:>6.2f}x")
        print(f"{name:<8} {r['wbytes'] / 1e6:>8.1f} {f0['wbytes'] / r['wbytes']:>6.2f}x "
              f"{r['err']:>9.2e} " + " ".join(cols) + f" {pred:>9}")
    if ort_t:
        print()
        for name in ("float", "int8", "int4"):
            for t in threads:
                o = ort_t.get((f"ort {name}", t))
                if o:
                    ours = res[name]["times"][t]
                    print(f"  {name} t={t}: ours {ours * 1e3:.2f} ms, onnxruntime "
                          f"{'quantize_dynamic ' if name == 'int8' else 'MatMulNBits ' if name == 'int4' else ''}"
                          f"{o * 1e3:.2f} ms: ours {o / ours:.2f}x as fast")
    for name in ("int8", "int4"):
        r = res[name]
        tb, ta = predicted(r["rem"])
        for t in threads:
            meas = f0["times"][t] / r["times"][t]
            agree = (meas > 1) == (tb / ta > 1) if tb and ta else False
            print(f"  {name} t={t}: measured {meas:.2f}x, predicted {tb / ta:.2f}x on {args.hw}: "
                  f"{'same direction' if agree else 'DISAGREE'}")

    # auto at batch 1 and 64
    print(f"\n--quantize auto on {args.hw}, MLP 1024 -> 1024 -> 1024:")
    W1 = (rng.standard_normal((1024, 1024)) / 32).astype(np.float32)
    W2 = (rng.standard_normal((1024, 1024)) / 32).astype(np.float32)
    for b in (1, 64):
        p = os.path.join(work, f"mlp{b}.onnx")
        save_model(p, [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
                       helper.make_node("Relu", ["h"], ["hr"], name="relu"),
                       helper.make_node("MatMul", ["hr", "w2"], ["y"], name="fc2")],
                   {"w1": W1, "w2": W2}, [b, 1024], [b, 1024])
        r = sh([args.rlopt, p, "-o", os.path.join(work, f"mlp{b}.c"), "--hw", args.hw,
                "--quantize", "auto", "--max-rel-error", str(args.int4_error), "--remarks"])
        print(f"  batch {b}:")
        for rem in remarks(r.stderr):
            print("    " + rem[len("remark: quantize: "):])


if __name__ == "__main__":
    main()
