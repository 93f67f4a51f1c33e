#!/usr/bin/env python3
"""Single-Conv layers: the chosen kernel against band mode, or against onnxruntime.

For each layer (C, H, M, K, S, P: input channels, square map, output
channels, square kernel, stride, pads) this writes a one-Conv model with a
bias and constant weights, generates C twice with rlopt (`-O2`: the tile
pass picks the form, channels on the lanes for these small maps; `--passes
fold,dce`: no tile pass, band mode), compiles both with `cc -std=c11 -O2`
and bench/timing_harness.c, and prints the minimum thread CPU time per run
at 1 thread (the harness's cpu_min_s, min over 3 launches: the least
disturbed measure on a shared machine; this project's machines expose no
hardware counters to `perf stat`) and the new/old ratio.

With --ort (issue 9's per-layer view) each layer is the -O2 kernel against
onnxruntime (CPUExecutionProvider, ORT_ENABLE_ALL, sequential, inputs and
outputs bound once) at 1 and 2 threads, interleaved in --rounds rounds:
1 thread is the minimum thread CPU time per run on both sides (ORT with one
intra-op thread runs in the calling thread), 2 threads the minimum wall
time per run (thread CPU time would miss the worker). Columns ours/ORT at 1
and 2 threads, and ours 2t/1t (a 2-thread run must not be slower).
--relu appends a Relu (fused by both sides into the conv's epilogue).
--affine drops the bias and appends a per-channel Mul and Add (a
BatchNormalization that cannot go into the weights: the light_* models make
their weights with ConstantOfShape at load time; onnxruntime folds the two
into the Conv, rlopt runs them as the Conv's epilogue).

Usage: bench_conv_layers.py [--rlopt build/rlopt] [--runs N] [--ort] [--relu] [--affine]
                            [--model NAME|PATH] [LAYER ...]
  LAYER is C,H,M,K,S,P[,G], e.g. 512,7,512,3,1,1 (default: ResNet-50's and
  SqueezeNet's small-map layers); --model takes the distinct Conv layers of
  a model instead (light_resnet50, light_squeezenet: the onnx wheel's light
  models; or a path), each with its count in the model.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import bench_ort  # noqa: E402  (ort_session)

LAYERS = ["512,7,512,3,1,1", "2048,7,512,1,1,0", "256,14,256,3,1,1", "1024,14,256,1,1,0",
          "256,14,512,3,2,1", "512,13,1000,1,1,0", "64,13,256,3,1,1"]


def model(path, C, H, M, K, S, P, G=1, relu=False, affine=False):
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((M, C // G, K, K)) / np.sqrt(C // G * K * K)).astype(np.float32)
    b = rng.standard_normal(M).astype(np.float32)
    O = (H + 2 * P - K) // S + 1
    inits = [numpy_helper.from_array(w, "w")]
    if affine:  # no bias; a per-channel Mul and Add after the Conv (an unfolded BN)
        s = rng.uniform(0.5, 1.5, (M, 1, 1)).astype(np.float32)
        inits += [numpy_helper.from_array(s, "s"), numpy_helper.from_array(b.reshape(M, 1, 1), "t")]
        nodes = [helper.make_node("Conv", ["x", "w"], ["c0"], kernel_shape=[K, K], strides=[S, S],
                                  pads=[P] * 4, group=G, name="conv"),
                 helper.make_node("Mul", ["c0", "s"], ["c1"], name="mul"),
                 helper.make_node("Add", ["c1", "t"], ["c" if relu else "y"], name="add")]
    else:
        inits.append(numpy_helper.from_array(b, "b"))
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if relu else "y"], kernel_shape=[K, K],
                                  strides=[S, S], pads=[P] * 4, group=G, name="conv")]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"], name="relu"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, H])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, M, O, O])], inits)
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


def run_ours(exe, runs, threads=1):
    r = subprocess.run([exe, "--runs", str(runs), "--warmup", "3", "--threads", str(threads)],
                       capture_output=True, text=True, check=True)
    return dict(line.split()[:2] for line in r.stdout.splitlines() if len(line.split()) >= 2)


def cpu_ms(exe, runs):
    return min(float(run_ours(exe, runs)["cpu_min_s"]) * 1e3 for _ in range(3))


def ort_side(path, threads, C, H):
    sess = bench_ort.ort_session(path, threads)
    x = np.random.default_rng(2).uniform(-1, 1, (1, C, H, H)).astype(np.float32)
    bind = sess.io_binding()
    bind.bind_cpu_input("x", x)
    bind.bind_output("y", "cpu")
    for _ in range(3):
        sess.run_with_iobinding(bind)
    return sess, bind


def ort_ms(side, runs, cpu):
    sess, bind = side
    clock = time.thread_time if cpu else time.perf_counter
    best = None
    for _ in range(runs):
        t0 = clock()
        sess.run_with_iobinding(bind)
        t = clock() - t0
        best = t if best is None else min(best, t)
    return best * 1e3


def model_layers(name):
    """the distinct Conv layers of a model as (spec, count)"""
    path = name
    if not os.path.exists(path):
        sys.path.insert(0, os.path.join(SOURCE, "tests", "py"))
        import rltest

        path = os.path.join(rltest.onnx_data_dir(), "light", name + ".onnx")
    m = onnx.shape_inference.infer_shapes(onnx.load(path))
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output)}
    seen = {}
    for nd in m.graph.node:
        if nd.op_type != "Conv":
            continue
        a = {x.name: helper.get_attribute_value(x) for x in nd.attribute}
        x, y = shapes[nd.input[0]], shapes[nd.output[0]]
        k, st = a["kernel_shape"], a.get("strides", [1, 1])
        pads = a.get("pads", [0, 0, 0, 0])
        if len(x) != 4 or x[2] != x[3] or k[0] != k[1] or st[0] != st[1] or len(set(pads)) != 1:
            print(f"skipped {nd.name}: not a square 2-D layer this tool can rebuild", file=sys.stderr)
            continue
        spec = f"{x[1]},{x[2]},{y[1]},{k[0]},{st[0]},{pads[0]},{a.get('group', 1)}"
        seen[spec] = seen.get(spec, 0) + 1
    return list(seen.items())


def vs_ort(a, work, layers):
    print("layer (count)                              ours 1t    ORT 1t  ratio |  ours 2t    ORT 2t  ratio | ours 2t/1t")
    tot = [0.0] * 4
    for i, (spec, cnt) in enumerate(layers):
        v = [int(t) for t in spec.split(",")]
        C, H, M, K, S, P = v[:6]
        G = v[6] if len(v) > 6 else 1
        p = os.path.join(work, f"l{i}.onnx")
        model(p, C, H, M, K, S, P, G, a.relu, a.affine)
        exe = build(a.rlopt, p, os.path.join(work, f"l{i}"), "")
        o1 = ort_side(p, 1, C, H)
        o2 = ort_side(p, 2, C, H)
        best = [None] * 4
        for _ in range(a.rounds):
            r1 = float(run_ours(exe, a.runs, 1)["cpu_min_s"]) * 1e3
            r2 = float(run_ours(exe, a.runs, 2)["min_s"]) * 1e3
            q1 = ort_ms(o1, a.runs, True)
            q2 = ort_ms(o2, a.runs, False)
            best = [x if b is None else min(b, x) for b, x in zip(best, (r1, r2, q1, q2))]
        for j in range(4):
            tot[j] += best[j] * cnt
        name = f"{K}x{K}/{S} {C}->{M}{'' if G == 1 else f' g{G}'} on {H}x{H} ({cnt})"
        print(f"{name:40s} {best[0]:8.3f} {best[2]:8.3f}  {best[0] / best[2]:5.2f} | {best[1]:8.3f} "
              f"{best[3]:8.3f}  {best[1] / best[3]:5.2f} | {best[1] / best[0]:5.2f}", flush=True)
    print(f"{'sum x count':40s} {tot[0]:8.3f} {tot[2]:8.3f}  {tot[0] / tot[2]:5.2f} | {tot[1]:8.3f} "
          f"{tot[3]:8.3f}  {tot[1] / tot[3]:5.2f} | {tot[1] / tot[0]:5.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rlopt", default=os.path.join(SOURCE, "build", "rlopt"))
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds with --ort")
    ap.add_argument("--ort", action="store_true", help="against onnxruntime at 1 and 2 threads")
    ap.add_argument("--relu", action="store_true", help="a Relu after each Conv")
    ap.add_argument("--affine", action="store_true",
                    help="no bias; a per-channel Mul and Add after each Conv (a BatchNormalization "
                         "that could not go into the weights, as in the light_* models)")
    ap.add_argument("--model", help="the distinct Conv layers of this model")
    ap.add_argument("layers", nargs="*")
    a = ap.parse_args()
    layers = model_layers(a.model) if a.model else [(s, 1) for s in (a.layers or LAYERS)]
    with tempfile.TemporaryDirectory() as work:
        if a.ort:
            vs_ort(a, work, layers)
            return 0
        for i, (spec, _) in enumerate(layers):
            v = [int(t) for t in spec.split(",")]
            C, H, M, K, S, P = v[:6]
            p = os.path.join(work, f"l{i}.onnx")
            model(p, C, H, M, K, S, P, v[6] if len(v) > 6 else 1, a.relu, a.affine)
            old = cpu_ms(build(a.rlopt, p, os.path.join(work, f"l{i}_band"), "fold,dce"), a.runs)
            new = cpu_ms(build(a.rlopt, p, os.path.join(work, f"l{i}_cv"), ""), a.runs)
            print(f"Conv {K}x{K}/{S} {C}->{M} on {H}x{H}: band {old:.3f} ms, chosen form {new:.3f} ms, "
                  f"new/old {new / old:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
