#!/usr/bin/env python3
"""Single pooling layers: the generated kernel against onnxruntime (and an older rlopt).

For each layer (OP,C,H,K,S,P: MaxPool or AveragePool, channels, square
map, square kernel, stride, pads) this writes a one-node model, generates C
with rlopt (-O2) and, with --old-rlopt, with another rlopt binary (the
before of a before/after), compiles each with `cc -std=c11 -O2` and
bench/timing_harness.c, and times them against onnxruntime
(CPUExecutionProvider, inputs and outputs bound once), interleaved in
--rounds rounds: 1 thread as the minimum thread CPU time per run on every
side (valid on a shared machine; onnxruntime with one intra-op thread runs
in the calling thread), 2 threads as the minimum wall time per run (only
meaningful on an idle machine). Columns: ours, old, onnxruntime at 1
thread, ours/ORT, then ours and ORT at 2 threads and ours 2t/1t (a 2-thread
run must not be slower).

The default layers are the pools of the CNN benchmarks: SqueezeNet's three
MaxPool 3x3/2, ResNet-50's MaxPool 3x3/2 pad 1 and its final AveragePool
7x7 on 7x7.

Usage: bench_pool.py [--rlopt build/rlopt] [--old-rlopt PATH] [--runs N]
                     [--rounds R] [LAYER ...]     LAYER: max,64,111,3,2,0
"""
import argparse
import os
import sys
import tempfile

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
from bench_conv_layers import build, ort_ms, ort_side, run_ours  # noqa: E402

LAYERS = ["max,64,111,3,2,0", "max,128,55,3,2,0", "max,256,27,3,2,0", "max,64,112,3,2,1",
          "avg,2048,7,7,1,0"]


def model(path, op, C, H, K, S, P):
    O = (H + 2 * P - K) // S + 1
    n = helper.make_node("MaxPool" if op == "max" else "AveragePool", ["x"], ["y"],
                         kernel_shape=[K, K], strides=[S, S], pads=[P] * 4, name="pool")
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, H])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, O, O])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rlopt", default=os.path.join(SOURCE, "build", "rlopt"))
    ap.add_argument("--old-rlopt", help="another rlopt binary, timed beside (the before)")
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("layers", nargs="*", default=LAYERS)
    a = ap.parse_args()
    old = a.old_rlopt
    print("layer                              ours 1t   old 1t   ORT 1t  ours/ORT |  ours 2t   ORT 2t"
          "  ratio | ours 2t/1t   (ms)")
    with tempfile.TemporaryDirectory() as work:
        for i, spec in enumerate(a.layers):
            f = spec.split(",")
            op, (C, H, K, S, P) = f[0], [int(t) for t in f[1:6]]
            if op not in ("max", "avg"):
                sys.exit(f"bench_pool.py: {spec}: the op is max or avg")
            p = os.path.join(work, f"p{i}.onnx")
            model(p, op, C, H, K, S, P)
            exe = build(a.rlopt, p, os.path.join(work, f"p{i}"), "")
            exe_old = build(old, p, os.path.join(work, f"p{i}_old"), "") if old else None
            o1, o2 = ort_side(p, 1, C, H), ort_side(p, 2, C, H)
            best = [None] * 5
            for _ in range(a.rounds):
                r1 = float(run_ours(exe, a.runs, 1)["cpu_min_s"]) * 1e3
                r0 = float(run_ours(exe_old, a.runs, 1)["cpu_min_s"]) * 1e3 if old else float("nan")
                r2 = float(run_ours(exe, a.runs, 2)["min_s"]) * 1e3
                q1 = ort_ms(o1, a.runs, True)
                q2 = ort_ms(o2, a.runs, False)
                best = [x if b is None or x != x else min(b, x) for b, x in zip(best, (r1, r0, r2, q1, q2))]
            r1, r0, r2, q1, q2 = best
            name = f"{'MaxPool' if op == 'max' else 'AveragePool'} {K}x{K}/{S} p{P} {C}x{H}x{H}"
            print(f"{name:34s} {r1:8.4f} {r0:8.4f} {q1:8.4f}  {r1 / q1:6.2f}  | {r2:8.4f} {q2:8.4f} "
                  f"{r2 / q2:6.2f} | {r2 / r1:6.2f}", flush=True)


if __name__ == "__main__":
    main()
