"""Quantizing a large external-data model in bounded memory.

Generates, in the build folder (--build, else a temporary folder), a
decoder-shaped model: LAYERS blocks of attention projections (q, k, v, o:
D x D) and an MLP (D x 4D, 4D x D) with residual adds, its fp32 weights in one
external data file of 192 MiB, written tensor by tensor (never all in memory
here either; the size keeps the test within a minute on a loaded machine:
the pass spends about 0.7 us per weight measuring the int4 candidates). Then

    rlopt model.onnx -o q.onnx --passes fold,dedupe,cse,patterns,dce,roofline,quantize
          --quantize int4 --max-rel-error 0.2

(the -O2 passes up to quantize except `judge`: judge keeps the weights it
samples resident today - the full -O2 pipeline peaked at 110% of the data
on a 480 MiB model - which is judge's to fix, not quantize's)

under a child-resource measurement (getrusage RUSAGE_CHILDREN: the peak
resident set of rlopt) and checks:

  - every product was quantized (one remark per node), q.onnx passes
    onnx.checker and holds DequantizeLinear nodes with int4 weights;
  - rlopt's peak RSS stays under 70% of the external data it read: the
    weights are mmapped, each is read while its codes are packed and its
    pages are handed back (MADV_PAGEOUT) after, so the resident set is the
    packed output (int4: about 1/6.4 of fp32), its copy in the protobuf
    being written, one weight and a fixed ~40 MiB, not the model (measured:
    59% here, 50% at 480 MiB where the fixed part weighs less). The figure
    and the ratio are printed.

Then the same at one layer with float16 weights (24 MiB of fp16
external data; A and Y float16): every product quantized (widened from
float16 as it is packed; QuantMatMul between Casts), q.onnx passes the
checker and onnxruntime runs it, its output within twice the root sum of
squares of the errors the pass measured of the float16 model's own
onnxruntime output.
Its peak RSS is printed, not held to the 70%: at this size the fixed part
and the one-weight float32 copy the pass reads through outweigh the data.

The files are deleted at the end (--keep keeps them). About 220 MiB of disk.
"""

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

D, LAYERS = 1024, 4  # 12 D^2 fp32 weights per layer: 48 MiB; 4 layers: 192 MiB


def write_model(d, layers=LAYERS, half=False):
    """The model and its external data, one tensor at a time."""
    data = os.path.join(d, "model.data")
    dt = TensorProto.FLOAT16 if half else TensorProto.FLOAT
    inits, nodes = [], []
    rng = np.random.default_rng(0)
    off = 0
    h = "x"
    with open(data, "wb") as f:
        def weight(name, k, n):
            nonlocal off
            a = (rng.standard_normal((k, n), dtype=np.float32) / np.sqrt(k)).astype(
                np.float16 if half else np.float32)
            f.write(a.tobytes())
            t = onnx.TensorProto(name=name, data_type=dt, dims=[k, n])
            t.data_location = TensorProto.EXTERNAL
            for key, v in (("location", "model.data"), ("offset", str(off)),
                           ("length", str(a.nbytes))):
                e = t.external_data.add()
                e.key, e.value = key, v
            off += a.nbytes
            inits.append(t)
            return name
        for i in range(layers):
            p = f"l{i}_"
            for proj in ("q", "k", "v"):
                nodes.append(helper.make_node("MatMul", [h, weight(p + proj + "_w", D, D)],
                                              [p + proj], name=p + proj))
            nodes.append(helper.make_node("Add", [p + "q", p + "k"], [p + "qk"], name=p + "qk"))
            nodes.append(helper.make_node("Add", [p + "qk", p + "v"], [p + "att"], name=p + "att"))
            nodes.append(helper.make_node("MatMul", [p + "att", weight(p + "o_w", D, D)],
                                          [p + "o"], name=p + "o"))
            nodes.append(helper.make_node("Add", [h, p + "o"], [p + "r1"], name=p + "r1"))
            nodes.append(helper.make_node("MatMul", [p + "r1", weight(p + "up_w", D, 4 * D)],
                                          [p + "up"], name=p + "up"))
            nodes.append(helper.make_node("Relu", [p + "up"], [p + "act"], name=p + "act"))
            nodes.append(helper.make_node("MatMul", [p + "act", weight(p + "down_w", 4 * D, D)],
                                          [p + "down"], name=p + "down"))
            out = "y" if i == layers - 1 else p + "out"
            nodes.append(helper.make_node("Add", [p + "r1", p + "down"], [out], name=p + "out"))
            h = out
    g = helper.make_graph(nodes, "decoder",
                          [helper.make_tensor_value_info("x", dt, [1, D])],
                          [helper.make_tensor_value_info("y", dt, [1, D])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    path = os.path.join(d, "model.onnx")
    onnx.save(m, path)
    return path, off


def check_fp16(args, work):
    d = os.path.join(work, "fp16")
    os.makedirs(d)
    path, nbytes = write_model(d, layers=1, half=True)
    q = os.path.join(d, "q.onnx")
    r = subprocess.run([args.rlopt, path, "-o", q, "--passes",
                        "fold,dedupe,cse,patterns,dce,roofline,quantize", "--quantize", "int4",
                        "--max-rel-error", "0.2", "--remarks"], capture_output=True, text=True,
                       timeout=args.timeout)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    if r.returncode != 0:
        return "fail", f"rlopt exit {r.returncode}: {r.stderr[-2000:]}"
    errs = [float(e) for e in re.findall(r"remark: quantize: \S+: int4: .*error ([0-9.e+-]+) <=",
                                         r.stderr)]
    if len(errs) != 6:
        return "fail", f"{len(errs)} of 6 float16 products quantized:\n{r.stderr[-2000:]}"
    onnx.checker.check_model(q)
    try:
        import onnxruntime as ort
    except ImportError:
        return "pass", "onnxruntime missing: q.onnx checked, not run"
    x = np.random.default_rng(1).standard_normal((1, D)).astype(np.float16)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    y = ort.InferenceSession(q, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    if y.dtype != np.float16:
        return "fail", f"q.onnx output is {y.dtype}, want float16"
    ref = ref.astype(np.float64)
    err = float(np.linalg.norm(y.astype(np.float64) - ref) / np.linalg.norm(ref))
    # independent rounding errors add in quadrature to first order; twice that
    # (0.43 here) still fails an output that is wrong (relative error ~1.4)
    tol = 2 * float(np.sqrt(np.sum(np.square(errs))))
    if not err <= tol:
        return "fail", f"q.onnx off the float16 model by {err:.3g} (allowed {tol:.3g})"
    return "pass", (f"{nbytes / 2**20:.0f} MiB of fp16 external weights -> q.onnx "
                    f"{os.path.getsize(q) / 2**20:.1f} MiB, error {err:.3g} vs the fp16 model "
                    f"(allowed {tol:.3g}); peak RSS of the runs so far "
                    f"{peak / 2**20:.0f} MiB")


def main():
    ap = rltest.make_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--timeout", type=float, default=600.0)
    args = ap.parse_args()
    if not args.rlopt:
        ap.error("--rlopt is required")
    base = args.build if args.build and os.path.isdir(args.build) else None
    work = tempfile.mkdtemp(prefix="rlopt-quant-stream.", dir=base)
    tally = rltest.Tally()
    try:
        t0 = time.monotonic()
        path, nbytes = write_model(work)
        gen_s = time.monotonic() - t0
        q = os.path.join(work, "q.onnx")
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.monotonic()
        r = subprocess.run([args.rlopt, path, "-o", q, "--passes",
                            "fold,dedupe,cse,patterns,dce,roofline,quantize", "--quantize", "int4",
                            "--max-rel-error", "0.2", "--remarks"], capture_output=True, text=True,
                           timeout=args.timeout)
        run_s = time.monotonic() - t0
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB on Linux
        status, msg = "pass", ""
        nq = len(re.findall(r"remark: quantize: \S+: int4:", r.stderr))
        want = 6 * LAYERS
        if r.returncode != 0:
            status, msg = "fail", f"rlopt exit {r.returncode}: {r.stderr[-2000:]}"
        elif nq != want:
            status, msg = "fail", f"{nq} of {want} products quantized"
        elif before * 1024 >= peak and before:
            status, msg = "fail", "could not measure rlopt's peak RSS (an earlier child was larger)"
        else:
            onnx.checker.check_model(q)
            m = onnx.load(q)
            dq = [n for n in m.graph.node if n.op_type == "DequantizeLinear"]
            codes = {t.name: t.data_type for t in m.graph.initializer}
            if len(dq) != want or not all(codes.get(n.input[0]) == TensorProto.INT4 for n in dq):
                status, msg = "fail", f"q.onnx: {len(dq)} DequantizeLinear nodes, want {want} over int4"
            elif not peak < 0.7 * nbytes:
                status, msg = "fail", (f"peak RSS {peak / 2**20:.0f} MiB for {nbytes / 2**20:.0f} MiB "
                                       f"of weights (over 70%)")
            else:
                msg = (f"{nbytes / 2**20:.0f} MiB of fp32 external weights -> q.onnx "
                       f"{os.path.getsize(q) / 2**20:.0f} MiB; rlopt peak RSS {peak / 2**20:.0f} MiB "
                       f"({100 * peak / nbytes:.0f}% of the data); {run_s:.1f} s "
                       f"(generating the model: {gen_s:.1f} s)")
        tally.add(status)
        print(f"{status.upper():4} stream_int4{': ' + msg if msg else ''}", flush=True)
        status, msg = check_fp16(args, work)
        tally.add(status)
        print(f"{status.upper():4} stream_int4_fp16{': ' + msg if msg else ''}", flush=True)
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
