#!/usr/bin/env python3
"""Single-Conv layers: channels-on-vector kernel against band mode, one core.

For each layer (C, H, M, K, S, P: input channels, square map, output
channels, square kernel, stride, pads) this writes a one-Conv model with a
bias and constant weights, generates C twice with rlopt (`-O2`: the tile
pass picks the form, channels on the lanes for these small maps; `--passes
fold,dce`: no tile pass, band mode), compiles both with `cc -std=c11 -O2`
and bench/timing_harness.c, and prints the minimum thread CPU time per run
at 1 thread (the harness's cpu_min_s, min over 3 launches: the least
disturbed measure on a shared machine; this project's machines expose no
hardware counters to `perf stat`) and the new/old ratio.

Usage: bench_conv_layers.py [--rlopt build/rlopt] [--runs N] [LAYER ...]
  LAYER is C,H,M,K,S,P, e.g. 512,7,512,3,1,1 (default: ResNet-50's and
  SqueezeNet's small-map layers).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, ".."))
LAYERS = ["512,7,512,3,1,1", "2048,7,512,1,1,0", "256,14,256,3,1,1", "1024,14,256,1,1,0",
          "256,14,512,3,2,1", "512,13,1000,1,1,0", "64,13,256,3,1,1"]


def model(path, C, H, M, K, S, P):
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((M, C, K, K)) / np.sqrt(C * K * K)).astype(np.float32)
    b = rng.standard_normal(M).astype(np.float32)
    O = (H + 2 * P - K) // S + 1
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[K, K], strides=[S, S],
                            pads=[P] * 4, name="conv")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, H])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, M, O, O])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


def build(rlopt, onnx_path, d, passes):
    os.makedirs(d, exist_ok=True)
    subprocess.run([rlopt, onnx_path, "-o", os.path.join(d, "m.c")] + (["--passes", passes] if passes else []),
                   check=True, capture_output=True)
    exe = os.path.join(d, "run")
    subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-O2", "-I", d, '-DRL_MODEL_HEADER="m.h"',
                    "-DRL_PREFIX=m", "-DRL_PREFIX_UC=M", "-DRL_HAVE_THREADS",
                    os.path.join(HERE, "timing_harness.c"), os.path.join(d, "m.c"), "-o", exe, "-lm",
                    "-pthread"], check=True)
    return exe


def cpu_ms(exe, runs):
    best = None
    for _ in range(3):
        r = subprocess.run([exe, "--runs", str(runs), "--warmup", "3", "--threads", "1"],
                           capture_output=True, text=True, check=True)
        kv = dict(line.split()[:2] for line in r.stdout.splitlines() if len(line.split()) >= 2)
        v = float(kv["cpu_min_s"]) * 1e3
        best = v if best is None else min(best, v)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rlopt", default=os.path.join(SOURCE, "build", "rlopt"))
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("layers", nargs="*", default=LAYERS)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        for i, spec in enumerate(a.layers):
            C, H, M, K, S, P = (int(v) for v in spec.split(","))
            p = os.path.join(work, f"l{i}.onnx")
            model(p, C, H, M, K, S, P)
            old = cpu_ms(build(a.rlopt, p, os.path.join(work, f"l{i}_band"), "fold,dce"), a.runs)
            new = cpu_ms(build(a.rlopt, p, os.path.join(work, f"l{i}_cv"), ""), a.runs)
            print(f"Conv {K}x{K}/{S} {C}->{M} on {H}x{H}: band {old:.3f} ms, chosen form {new:.3f} ms, "
                  f"new/old {new / old:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
