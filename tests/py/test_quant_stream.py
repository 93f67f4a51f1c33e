"""Quantizing a large external-data model in bounded memory.

Generates, in the build folder (--build, else a temporary folder), a
decoder-shaped model: LAYERS blocks of attention projections (q, k, v, o:
D x D) and an MLP (D x 4D, 4D x D) with residual adds, its fp32 weights in one
external data file of 192 MiB, written tensor by tensor and synced to disk
(a real model's weights are clean pages: dirty ones cannot be handed back).
Then, each under GNU time (its %M: rlopt's own peak RSS; a child forked from
this Python process would carry Python's ~100 MiB as its floor),

    rlopt model.onnx -O0 -o base.onnx             (the base: read, rewrite)
    rlopt model.onnx -o q.onnx --quantize int4 --max-rel-error 0.2   (-O2)

and checks:

  - every product was quantized (one remark per node); q.onnx is small and
    its tensors live in q.onnx.data next to it (location "q.onnx.data"), no
    temporary file is left; onnx.checker accepts it (by path) and it holds
    DequantizeLinear nodes over int4 weights;
  - rlopt's peak RSS stays under the base's + 64 MiB: the weights are
    mmapped and paged out as each is read (quantize, judge), the packed codes
    spill to a temporary file, and the writer streams each tensor to
    q.onnx.data, so the resident set is one weight's float32 copy and a fixed
    part, not the model (measured: 48 MiB against the base's 10 MiB, for
    192 MiB of weights);
  - onnxruntime runs q.onnx (loading q.onnx.data) and its output is within
    twice the root sum of squares of the per-product errors the pass
    measured of the float model's onnxruntime output;
  - a write that fails (OUT.onnx.data's name taken by a folder) exits 2
    naming it and leaves neither OUT.onnx nor a temporary file.

Then the same at one layer with float16 weights and an MLP of 9D (44 MiB of
fp16 external data; A and Y float16; up and down are 9.4M elements, so the
pass widens and packs them in strips of output channels): every product
quantized (widened from float16 as it is packed; QuantMatMul between Casts),
q.onnx passes the checker and onnxruntime runs it, its output within twice
the root sum of squares of the errors the pass measured of the float16
model's own onnxruntime output. Its peak RSS is printed, not held to a bound.

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


def write_model(d, layers=LAYERS, half=False, mlp=4):
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
            nodes.append(helper.make_node("MatMul", [p + "r1", weight(p + "up_w", D, mlp * D)],
                                          [p + "up"], name=p + "up"))
            nodes.append(helper.make_node("Relu", [p + "up"], [p + "act"], name=p + "act"))
            nodes.append(helper.make_node("MatMul", [p + "act", weight(p + "down_w", mlp * D, D)],
                                          [p + "down"], name=p + "down"))
            out = "y" if i == layers - 1 else p + "out"
            nodes.append(helper.make_node("Add", [p + "r1", p + "down"], [out], name=p + "out"))
            h = out
        # on disk, as a real model's weights are: pages still dirty in the
        # cache cannot be handed back (MADV_PAGEOUT skips them), and the
        # peak would measure the page cache's writeback instead of rlopt
        f.flush()
        os.fsync(f.fileno())
    g = helper.make_graph(nodes, "decoder",
                          [helper.make_tensor_value_info("x", dt, [1, D])],
                          [helper.make_tensor_value_info("y", dt, [1, D])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    path = os.path.join(d, "model.onnx")
    onnx.save(m, path)
    return path, off


TIME = "/usr/bin/time"  # GNU time: %M is its child's peak RSS


def peak_of(argv, timeout):
    """(returncode, stderr, peak RSS bytes) of argv in a fresh child.

    A child forked from this Python process starts with Python's resident
    set as its recorded maximum (Linux keeps ru_maxrss across exec, and
    subprocess forks or vforks Python itself), about 100 MiB with numpy and
    onnxruntime loaded: that would hide rlopt's own peak. GNU time forks
    from a small process, so its %M is rlopt's; without it, wait4's figure
    (an upper bound) is used."""
    if os.access(TIME, os.X_OK):
        r = subprocess.run([TIME, "-f", "RLPEAK %M"] + argv, capture_output=True, text=True,
                           timeout=timeout)
        lines = r.stderr.splitlines()
        if lines and lines[-1].startswith("RLPEAK "):
            return r.returncode, "\n".join(lines[:-1]), int(lines[-1].split()[1]) * 1024
        return r.returncode, r.stderr, 0
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.communicate(timeout=timeout)[1]  # the largest child so far, below
    return p.returncode, err.decode(errors="replace"), \
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def check_fp16(args, work):
    d = os.path.join(work, "fp16")
    os.makedirs(d)
    # an MLP of 9D: up and down are 9.4M elements each, past the pass's
    # 8M-element float32 copy, so they are widened and packed in strips of
    # output channels (passes/quantize.c STRIP_FLOATS); onnxruntime's output
    # below checks the strips were packed into the right channels
    path, nbytes = write_model(d, layers=1, half=True, mlp=9)
    q = os.path.join(d, "q.onnx")
    rc, err, peak = peak_of([args.rlopt, path, "-o", q, "--quantize", "int4",
                             "--max-rel-error", "0.2", "--remarks"], args.timeout)
    if rc != 0:
        return "fail", f"rlopt exit {rc}: {err[-2000:]}"
    errs = [float(e) for e in re.findall(r"remark: quantize: \S+: int4: .*error ([0-9.e+-]+) <=",
                                         err)]
    if len(errs) != 6:
        return "fail", f"{len(errs)} of 6 float16 products quantized:\n{err[-2000:]}"
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
                    f"(allowed {tol:.3g}); peak RSS {peak / 2**20:.0f} MiB")


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
        # the base: rlopt reading the model and writing it back unchanged
        # (-O0: every weight read once and streamed to base.onnx.data)
        rc0, err0, base = peak_of([args.rlopt, path, "-O0", "-o", os.path.join(work, "base.onnx")],
                                  args.timeout)
        t0 = time.monotonic()
        rc, err, peak = peak_of([args.rlopt, path, "-o", q, "--quantize", "int4",
                                 "--max-rel-error", "0.2", "--remarks"], args.timeout)
        run_s = time.monotonic() - t0
        status, msg = "pass", ""
        errs = [float(e) for e in re.findall(
            r"remark: quantize: \S+: int4: .*error ([0-9.e+-]+) <=", err)]
        want = 6 * LAYERS
        data = q + ".data"
        if rc0 != 0:
            status, msg = "fail", f"rlopt -O0 exit {rc0}: {err0[-2000:]}"
        elif rc != 0:
            status, msg = "fail", f"rlopt exit {rc}: {err[-2000:]}"
        elif len(errs) != want:
            status, msg = "fail", f"{len(errs)} of {want} products quantized"
        elif not os.path.exists(data) or os.path.getsize(q) > 1 << 20:
            status, msg = "fail", "q.onnx holds its weights inline, no q.onnx.data next to it"
        elif [f for f in os.listdir(work) if ".tmp" in f]:
            status, msg = "fail", f"temporary files left: {os.listdir(work)}"
        else:
            onnx.checker.check_model(q)  # by path: external data checked in place
            m = onnx.load(q, load_external_data=False)
            dq = [n for n in m.graph.node if n.op_type == "DequantizeLinear"]
            codes = {t.name: t for t in m.graph.initializer}
            ext = [t for t in m.graph.initializer
                   if t.data_location == TensorProto.EXTERNAL]
            locs = {e.value for t in ext for e in t.external_data if e.key == "location"}
            if len(dq) != want or not all(codes[n.input[0]].data_type == TensorProto.INT4
                                          for n in dq if n.input[0] in codes):
                status, msg = "fail", f"q.onnx: {len(dq)} DequantizeLinear nodes, want {want} over int4"
            elif locs != {"q.onnx.data"} or len(ext) < want:
                status, msg = "fail", f"external data: {len(ext)} tensors in {locs}"
            elif not peak < base + 64 * 2**20:
                status, msg = "fail", (f"peak RSS {peak / 2**20:.0f} MiB for {nbytes / 2**20:.0f} MiB "
                                       f"of weights, over the -O0 rewrite's {base / 2**20:.0f} MiB "
                                       f"+ 64 MiB")
            else:
                # onnxruntime runs q.onnx (loading q.onnx.data) and agrees
                # with the float model within twice the root sum of squares
                # of the errors the pass measured per product
                msg = ""
                try:
                    import onnxruntime as ort
                    so = ort.SessionOptions()
                    so.intra_op_num_threads = 1
                    x = np.random.default_rng(1).standard_normal((1, D)).astype(np.float32)
                    ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(
                        None, {"x": x})[0].astype(np.float64)
                    y = ort.InferenceSession(q, so, providers=["CPUExecutionProvider"]).run(
                        None, {"x": x})[0].astype(np.float64)
                    e = float(np.linalg.norm(y - ref) / np.linalg.norm(ref))
                    tol = 2 * float(np.sqrt(np.sum(np.square(errs))))
                    if not e <= tol:
                        status, msg = "fail", f"q.onnx off the float model by {e:.3g} (allowed {tol:.3g})"
                    else:
                        msg = f"; onnxruntime runs it: error {e:.3g} (allowed {tol:.3g})"
                except ImportError:
                    msg = "; onnxruntime missing: q.onnx checked, not run"
                if status == "pass":
                    msg = (f"{nbytes / 2**20:.0f} MiB of fp32 external weights -> q.onnx "
                           f"{os.path.getsize(q) / 2**10:.0f} KiB + q.onnx.data "
                           f"{os.path.getsize(data) / 2**20:.0f} MiB (-O2); rlopt peak RSS "
                           f"{peak / 2**20:.0f} MiB ({100 * peak / nbytes:.0f}% of the data; "
                           f"the -O0 rewrite {base / 2**20:.0f} MiB); {run_s:.1f} s "
                           f"(generating the model: {gen_s:.1f} s)" + msg)
        tally.add(status)
        print(f"{status.upper():4} stream_int4{': ' + msg if msg else ''}", flush=True)
        # nothing half-written: OUT.onnx.data cannot be made (a folder holds
        # its name), so the rename of the finished data file fails; rlopt
        # exits 2 naming it, and neither OUT.onnx nor a temporary is left
        bad = os.path.join(work, "bad")
        os.makedirs(os.path.join(bad, "out.onnx.data"))
        rcb, errb, _ = peak_of([args.rlopt, path, "-O0", "-o", os.path.join(bad, "out.onnx")],
                               args.timeout)
        left = sorted(f for f in os.listdir(bad) if f != "out.onnx.data")
        ok = rcb == 2 and "out.onnx.data" in errb and not left
        tally.add("pass" if ok else "fail")
        print(f"{'PASS' if ok else 'FAIL'} stream_write_failure: exit {rcb}, "
              f"{errb.strip()[:200]!r}, left {left}", flush=True)
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
