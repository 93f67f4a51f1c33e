"""Weight quantization end to end: --quantize int8|int4|auto against onnxruntime in float.

Each case builds a small model, runs `rlopt run --quantize ...` (generate C,
compile, run) and compares the outputs with onnxruntime's float result. The
tolerance comes from the error budget: the pass guarantees that each node's
output error on its measurement rows is within --max-rel-error E, so a model
of quantized products in a chain is held to a relative Frobenius error of
3 * (sum of the errors the pass measured, each <= E): the errors of a chain
add up to first order, and the factor 3 allows for the test input not being
the measurement rows. A wrong kernel is off by O(1). Cases
also check the remarks (scheme chosen, or why not), that the generated
weights shrink (side file: about 4x for int8, about 7x for int4 in blocks of
128), that `auto` leaves compute-bound nodes in float, and the bad-input
messages and exit codes.
"""

import fnmatch
import functools
import os
import re
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

F32 = TensorProto.FLOAT


def model(nodes, inits, x_shape, y_shape, opset=17):
    g = helper.make_graph(nodes, "q", [helper.make_tensor_value_info("x", F32, x_shape)],
                          [helper.make_tensor_value_info("y", F32, y_shape)],
                          [numpy_helper.from_array(a, n) for n, a in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def rng(seed):
    return np.random.default_rng(seed)


def mlp(seed, dims, batch, relu=True):
    r = rng(seed)
    nodes, inits, h = [], {}, "x"
    for i in range(len(dims) - 1):
        w = (r.standard_normal((dims[i], dims[i + 1])) / np.sqrt(dims[i])).astype(np.float32)
        inits[f"w{i}"] = w
        out = "y" if i == len(dims) - 2 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [h, f"w{i}"], [out if not relu or out == "y"
                                                               else out + "_p"], name=f"fc{i}"))
        if relu and out != "y":
            nodes.append(helper.make_node("Relu", [out + "_p"], [out], name=f"relu{i}"))
        h = out
    return model(nodes, inits, [batch, dims[0]], [batch, dims[-1]])


# Each case: (model, rlopt flags, number of quantized products in a chain (for
# the tolerance; 0: output must match float closely), remark patterns that must
# appear).
def case_int8_gemv():
    return mlp(1, [256, 512, 64], 1), ["--quantize", "int8-channel"], 2, [
        r"remark: quantize: fc0: int8: int8/channel: .*error .* <= 0.01"]


def case_int8_default_blocks():
    # --quantize int8: blocks of 32 (per channel leaves > 1% on a stack's output)
    return mlp(1, [256, 512, 64], 1), ["--quantize", "int8"], 2, [
        r"remark: quantize: fc0: int8: int8/block32: .*error .* <= 0.01",
        r"remark: quantize: fc1: int8: int8/block32: "]


def case_int4_mixed_head_int8():
    # int4-mixed: the product that makes the model output (the head) in int8 blocks
    return mlp(6, [128, 96, 64], 1), ["--quantize", "int4-mixed", "--max-rel-error", "0.2"], 2, [
        r"remark: quantize: fc0: int4: int4/block32: ",
        r"remark: quantize: fc1: int8: int8/block32: "]


def case_int4_partial_block_rows():
    # K = 100: the last block of 32 runs past K; 5 rows: one block of 4, then 1;
    # N = 70: the last task has 6 columns
    return mlp(2, [100, 70, 33], 5), ["--quantize", "int4", "--max-rel-error", "0.2"], 2, [
        r"remark: quantize: fc0: int4: int4/block32"]


def case_scalar_path_no_vectors():
    # the portable loops (tcc, non-GNU compilers): RL_NO_VEC, no threads
    return mlp(13, [100, 70, 33], 5), ["--quantize", "int4", "--max-rel-error", "0.2",
                                       "--cflags", "-DRL_NO_VEC -DRL_NO_THREADS"], 2, [
        r"remark: quantize: fc1: int4"]


def case_int8_block_rows():
    # per-channel int8 over budget (one outlier per column), blocks of 32 within
    r = rng(14)
    w = (r.standard_normal((256, 24)) * 0.05).astype(np.float32)
    w[7, :] = 3.0
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], {"w": w},
              [9, 256], [9, 24])
    return m, ["--quantize", "int8-channel", "--max-rel-error", "0.02"], 1, [
        r"remark: quantize: mm: int8: int8/block32: ", r"int8/channel [\d.e+-]+, int8/block"]


def case_int4_block64_3d():
    r = rng(3)
    w = (r.standard_normal((128, 48)) * 0.1).astype(np.float32)
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], {"w": w},
              [2, 3, 128], [2, 3, 48])
    return m, ["--quantize", "int4", "--block", "64", "--max-rel-error", "0.2"], 1, [
        r"remark: quantize: mm: int4: int4/block64"]


def case_gemm_transb_alpha_bias():
    r = rng(4)
    w = r.standard_normal((40, 64)).astype(np.float32)
    c = r.standard_normal((40,)).astype(np.float32)
    n = helper.make_node("Gemm", ["x", "w", "c"], ["y"], name="gemm", transB=1, alpha=0.5)
    return model([n], {"w": w, "c": c}, [6, 64], [6, 40]), ["--quantize", "int8-channel"], 1, [
        r"remark: quantize: gemm: int8: int8/channel"]


def case_int4_zero_points():
    # all-positive weights: symmetric int4 wastes half its codes, the zero
    # point recovers them; the budget sits between the two
    r = rng(5)
    w = r.uniform(0, 1, (96, 32)).astype(np.float32)
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], {"w": w},
              [1, 96], [1, 32])
    return m, ["--quantize", "int4", "--max-rel-error", "0.05"], 1, [
        r"remark: quantize: mm: int4: int4/block32\+zp", r"tried|int4/block"]


def fp16(m):
    """The model in float16: inputs, outputs and initializers."""
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.elem_type = TensorProto.FLOAT16
    for i, t in enumerate(m.graph.initializer):
        m.graph.initializer[i].CopyFrom(numpy_helper.from_array(
            numpy_helper.to_array(t).astype(np.float16), t.name))
    return m


def case_fp16_int8_chain():
    # float16 weights and activations: widened, packed, QuantMatMul between Casts
    return fp16(mlp(21, [96, 80, 40], 3)), ["--quantize", "int8"], 2, [
        r"remark: quantize: fc0: int8: int8/block32: weight 1\.536e\+04 ->",
        r"remark: quantize: fc1: int8: int8/block32"]


def case_fp16_int4_gemm_bias():
    r = rng(22)
    w = (r.standard_normal((48, 128)) / np.sqrt(128)).astype(np.float32)
    c = r.standard_normal(48).astype(np.float32)
    m = model([helper.make_node("Gemm", ["x", "w", "c"], ["y"], name="gemm", transB=1)],
              {"w": w, "c": c}, [2, 128], [2, 48])
    return fp16(m), ["--quantize", "int4", "--max-rel-error", "0.2"], 1, [
        r"remark: quantize: gemm: int4: int4/block32"]


def case_auto_batch1_quantizes():
    return mlp(6, [512, 512, 512], 1), ["--quantize", "auto", "--hw", "epyc9654",
                                         "--max-rel-error", "0.2"], 2, [
        r"remark: quantize: fc0: int4: .*memory-bound"]


def case_auto_batch512_compute_bound_stays_float():
    return mlp(7, [512, 512, 512], 512), ["--quantize", "auto", "--hw", "epyc9654",
                                           "--max-rel-error", "0.2"], 0, [
        r"remark: quantize: fc0: float: auto: compute-bound on epyc9654 \(intensity"]


def case_nan_weight_stays_float():
    r = rng(8)
    w = r.standard_normal((64, 16)).astype(np.float32)
    w[3, 5] = np.nan
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], {"w": w},
              [1, 64], [1, 16])
    return m, ["--quantize", "int8"], -1, [r"remark: quantize: mm: float: .*NaN or Inf"]


def case_zero_channels():
    # all-zero output channels and blocks: scale 0, no division by zero
    r = rng(9)
    w = r.standard_normal((64, 16)).astype(np.float32)
    w[:, 3] = 0
    w[:32, 7] = 0
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], {"w": w},
              [1, 64], [1, 16])
    return m, ["--quantize", "int4", "--max-rel-error", "0.2"], 1, [r"mm: int4"]


CASES = {k[5:]: v for k, v in list(globals().items()) if k.startswith("case_")}


def check_case(name, fn, args, work):
    import onnxruntime as ort
    m, flags, nq, patterns = fn()
    d = os.path.join(work, name)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    onnx.save(m, path)
    shape = [dd.dim_value for dd in m.graph.input[0].type.tensor_type.shape.dim]
    dt = helper.tensor_dtype_to_np_dtype(m.graph.input[0].type.tensor_type.elem_type)
    x = rng(100).standard_normal(shape).astype(dt)
    rltest.write_pb(os.path.join(d, "in.pb"), x)
    out = os.path.join(d, "out")
    r = rltest.run([args.rlopt, "run", path, "-i", os.path.join(d, "in.pb"), "-d", out,
                    "--remarks"] + flags, args.timeout)
    if r.returncode != 0:
        return "fail", r.describe()
    for p in patterns:
        if not re.search(p, r.stderr):
            return "fail", f"no remark matching {p!r} in:\n{r.stderr}"
    y = rltest.read_pb(os.path.join(out, "output_0.pb"))[1]
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    if nq <= 0:  # in float: as close as the float kernels
        ok, msg, _, _ = rltest.compare(y, ref, rtol=1e-4, atol=1e-5)
        return ("pass", "") if ok else ("fail", msg)
    err = float(np.linalg.norm(y.astype(np.float64) - ref) / np.linalg.norm(ref))
    # the errors the pass measured per node, each within the budget
    errs = [float(e) for e in re.findall(r"error ([0-9.e+-]+) <= ", r.stderr)]
    if len(errs) != nq:
        return "fail", f"{len(errs)} nodes quantized, want {nq}"
    tol = 3 * sum(errs)
    if not err <= tol:
        return "fail", f"relative error {err:.3g} over {tol:.3g}"
    return "pass", f"relative error {err:.3g} (tolerance {tol:.3g})"


def check_shrink(args, work):
    """The side file of the generated weights shrinks: int8 about 4x, int4 in
    blocks of 128 about 7x (codes half a byte, a 4-byte scale per 128)."""
    d = os.path.join(work, "shrink")
    os.makedirs(d)
    path = os.path.join(d, "m.onnx")
    onnx.save(mlp(11, [512, 512, 512], 1), path)
    sizes = {}
    for q in ("none", "int8", "int4"):
        c = os.path.join(d, f"m_{q}.c")
        r = rltest.run([args.rlopt, path, "-o", c, "--weights-max", "0", "--quantize", q,
                        "--block", "128", "--max-rel-error", "0.2"]
                       if q != "none" else [args.rlopt, path, "-o", c, "--weights-max", "0"],
                       args.timeout)
        if r.returncode != 0:
            return "fail", r.describe()
        sizes[q] = os.path.getsize(c[:-2] + ".weights")
    r8, r4 = sizes["none"] / sizes["int8"], sizes["none"] / sizes["int4"]
    if not (3.8 <= r8 <= 4.05 and 6.8 <= r4 <= 8.0):
        return "fail", f"weights shrink {r8:.2f}x (int8), {r4:.2f}x (int4): {sizes}"
    return "pass", f"weights shrink {r8:.2f}x (int8), {r4:.2f}x (int4)"


def check_onnx_formats(args, work):
    """-o OUT.onnx with --onnx-format qdq|matmulnbits: onnx.checker accepts the
    file and onnxruntime (graph optimizations off: the operators' own
    semantics) computes what rlopt's generated C computes on the same
    quantized weights; an opset-17 model refuses qdq for int4 and blocked int8 (exit 2)."""
    import onnxruntime as ort
    d = os.path.join(work, "formats")
    os.makedirs(d)
    r = rng(15)
    K, N = 100, 70  # K: a partial block of 32 and of 64/128
    x = r.standard_normal((3, K)).astype(np.float32)
    xp = os.path.join(d, "x.pb")
    rltest.write_pb(xp, x)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    cases = [("sym", (r.standard_normal((K, N)) / 10).astype(np.float32)),
             ("asym", r.uniform(0, 1, (K, N)).astype(np.float32))]
    done = []
    for wname, w in cases:
        c = r.standard_normal(N).astype(np.float32)
        for opset in (17, 21):
            n = helper.make_node("Gemm", ["x", "w", "c"], ["y"], name="g")
            m = model([n], {"w": w, "c": c}, [3, K], [3, N], opset)
            m.ir_version = 10
            path = os.path.join(d, f"{wname}{opset}.onnx")
            onnx.save(m, path)
            for q, budget in (("int8-channel", "0.02"), ("int8", "0.02"),
                              ("int4", "0.05" if wname == "asym" else "0.3")):
                out = os.path.join(d, f"o_{wname}{opset}_{q}")
                # the float-accumulating kernels (RL_NO_QVNNI): the VNNI ones
                # round x to int16 (about 1e-5), and this compares weights
                rr = rltest.run([args.rlopt, "run", path, "-i", xp, "-d", out, "--quantize", q,
                                 "--max-rel-error", budget, "--cflags", "-DRL_NO_QVNNI"],
                                args.timeout)
                if rr.returncode != 0:
                    return "fail", rr.describe()
                yc = rltest.read_pb(os.path.join(out, "output_0.pb"))[1]
                for fmt in ("qdq", "matmulnbits"):
                    qp = os.path.join(d, f"q_{wname}{opset}_{q}_{fmt}.onnx")
                    rr = rltest.run([args.rlopt, path, "-o", qp, "--quantize", q, "--onnx-format",
                                     fmt, "--max-rel-error", budget], args.timeout)
                    if fmt == "qdq" and q in ("int4", "int8") and opset == 17:  # blocks: opset 21
                        if rr.returncode != 2 or "need opset 21" not in rr.stderr or os.path.exists(qp):
                            return "fail", f"{q} qdq at opset 17: want exit 2; got {rr.describe()}"
                        continue
                    if rr.returncode != 0:
                        return "fail", rr.describe()
                    onnx.checker.check_model(qp, full_check=True)
                    ops = sorted({nd.op_type for nd in onnx.load(qp).graph.node})
                    want = "DequantizeLinear" if fmt == "qdq" else "MatMulNBits"
                    if want not in ops:
                        return "fail", f"{qp}: no {want} in {ops}"
                    y = ort.InferenceSession(qp, so, providers=["CPUExecutionProvider"]).run(
                        None, {"x": x})[0]
                    e = float(np.abs(y - yc).max() / np.abs(yc).max())
                    if not e <= 1e-5:
                        return "fail", f"{qp}: onnxruntime differs from the generated C by {e:.3g}"
                    done.append(f"{wname}/{opset}/{q}/{fmt}")
    return "pass", f"{len(done)} files match the generated C"


def check_kernel_paths(args, work):
    """The three kernels a generated file carries agree on the same packed
    weights: VNNI integer dot products (x rounded to int16 per row: the
    relative difference must stay under 1e-4, a wrong lane or block is off
    by O(1)), the float-accumulating vectors (-DRL_NO_QVNNI) and the scalar
    loops (-DRL_NO_VEC), which must agree to float rounding (1e-5). Shapes
    cover partial units (K % block), partial lane groups (units % 16), blocks
    of 32/64/128, zero points, per-channel int8, several rows, and a row
    holding NaN (the VNNI path hands it to the float kernel: NaN out)."""
    cpu = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    vnni = "avx512_vnni" in cpu
    avx2 = " avx2" in cpu and " fma" in cpu
    d = os.path.join(work, "paths")
    os.makedirs(d)
    configs = [  # K, N, rows, flags
        (600, 40, 3, ["--quantize", "int8-channel"]),
        (1000, 33, 2, ["--quantize", "int8", "--block", "64", "--max-rel-error", "0.007"]),
        (700, 17, 3, ["--quantize", "int4", "--block", "64", "--max-rel-error", "0.3"]),
        (1100, 20, 1, ["--quantize", "int4", "--block", "128", "--max-rel-error", "0.3"]),
        (200, 24, 2, ["--quantize", "int4", "--max-rel-error", "0.05"]),  # zero points
        (203, 19, 3, ["--quantize", "int4", "--max-rel-error", "0.3"]),  # K % 4: a short record
        (598, 21, 2, ["--quantize", "int8", "--max-rel-error", "0.007"]),
        # full lane groups (units >= 16) with zero points, and with float32
        # scales: the AVX2 kernels' groups of 16 against their masked tail
        (1100, 18, 2, ["--quantize", "int4", "--max-rel-error", "0.05"]),
        (1100, 20, 3, ["--quantize", "int8", "--scale-type", "f32", "--max-rel-error", "0.007"]),
    ]
    notes = []
    for ci, (K, N, M, flags) in enumerate(configs):
        r = rng(40 + ci)
        w = r.standard_normal((K, N)).astype(np.float32)
        if "0.05" in flags:
            w = np.abs(w)  # one-signed: the zero point wins
        path = os.path.join(d, f"m{ci}.onnx")
        onnx.save(model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], {"w": w},
                        [M, K], [M, N]), path)
        x = r.standard_normal((M, K)).astype(np.float32)
        x[:, ::7] *= 30  # outliers: the int16 scale is set by them
        if M == 3:
            x[1, 5] = np.nan
        xp = os.path.join(d, f"x{ci}.pb")
        rltest.write_pb(xp, x)
        ys = {}
        # "int": the integer kernels the CPU has (VNNI, else AVX2); "avx2":
        # the AVX2 ones even where VNNI is (-DRL_NO_QAVX512); "avx2p": the
        # same with the rows prepared by the scalar loop instead of AVX2
        for name, cflags in (("int", None), ("avx2", "-DRL_NO_QAVX512"),
                             ("avx2p", "-DRL_NO_QAVX512 -DRL_NO_QPREP_AVX2"), ("vec", "-DRL_NO_QVNNI"),
                             ("scalar", "-DRL_NO_VEC -DRL_NO_THREADS")):
            out = os.path.join(d, f"o{ci}_{name}")
            rr = rltest.run([args.rlopt, "run", path, "-i", xp, "-d", out, "--remarks"] + flags
                            + (["--cflags", cflags] if cflags else []), args.timeout)
            if rr.returncode != 0:
                return "fail", rr.describe()
            if not re.search(r"remark: quantize: mm: int[48]", rr.stderr):
                return "fail", f"config {ci}: not quantized:\n{rr.stderr}"
            ys[name] = rltest.read_pb(os.path.join(out, "output_0.pb"))[1].astype(np.float64)
        fin = np.isfinite(x).all(axis=1)
        for name in ys:
            if np.isfinite(ys[name][~fin]).any() or not np.isfinite(ys[name][fin]).all():
                return "fail", f"config {ci} {name}: NaN rows do not match the input's"
        def rel(a, b):
            return float(np.linalg.norm((a - b)[fin]) / np.linalg.norm(b[fin]))
        if not np.array_equal(ys["avx2p"], ys["avx2"], equal_nan=True):
            # the AVX2 row preparation must give the scalar loop's bytes
            return "fail", (f"config {ci}: AVX2 and scalar row preparation differ: "
                            f"{rel(ys['avx2p'], ys['avx2']):.3g}")
        e_sc = rel(ys["scalar"], ys["vec"])
        e_in = rel(ys["int"], ys["vec"])
        e_a2 = rel(ys["avx2"], ys["vec"])
        if not e_sc <= 1e-5:
            return "fail", f"config {ci}: scalar and vector kernels differ by {e_sc:.3g}"
        if not e_in <= 1e-4:
            return "fail", f"config {ci}: integer ({'VNNI' if vnni else 'AVX2'}) and float kernels differ by {e_in:.3g}"
        if not e_a2 <= 1e-4:
            return "fail", f"config {ci}: AVX2 integer and float kernels differ by {e_a2:.3g}"
        if (vnni or avx2) and not e_in > 0:
            return "fail", f"config {ci}: the integer kernels did not run (identical to float)"
        notes.append(f"{e_in:.1e}/{e_a2:.1e}")
    ran = "VNNI" if vnni else "AVX2" if avx2 else "no"
    if not (vnni or avx2):
        return "pass", ("this CPU has neither AVX-512 VNNI nor AVX2: every build ran the float "
                        "kernels, the integer ones were not exercised")
    return "pass", (f"integer ({ran}) / AVX2 kernels vs float kernels, relative difference "
                    + ", ".join(notes) + ("" if vnni else "; VNNI not exercised (no AVX-512 VNNI)"))


def check_bad_inputs(args, work):
    d = os.path.join(work, "bad")
    os.makedirs(d)
    path = os.path.join(d, "m.onnx")
    onnx.save(mlp(12, [64, 32], 2), path)
    out = os.path.join(d, "m.c")
    usage = [(["--quantize", "bogus"], "--quantize wants none, int8, int4, auto, int8-channel or int4-mixed"),
             (["--quantize", "int8", "--block", "48"], "--block wants 32, 64 or 128"),
             (["--quantize", "int8", "--max-rel-error", "-1"], "--max-rel-error wants"),
             (["--block", "64"], "--block, --scale-type and --calibrate steer --quantize"),
             (["--quantize", "int4", "--scale-type", "f8"], "--scale-type wants f16 or f32"),
             (["--scale-type", "f32"], "--block, --scale-type and --calibrate steer --quantize")]
    for flags, msg in usage:
        r = rltest.run([args.rlopt, path, "-o", out] + flags, args.timeout)
        if r.returncode != 1 or msg not in r.stderr or os.path.exists(out):
            return "fail", f"{flags}: want exit 1 and '{msg}'; got {r.describe()}"
    bad = os.path.join(d, "bad.pb")
    rltest.write_pb(bad, np.zeros((2, 63), np.float32))
    r = rltest.run([args.rlopt, path, "-o", out, "--quantize", "int8", "--calibrate", bad],
                   args.timeout)
    if r.returncode != 2 or "input 'x'" not in r.stderr or os.path.exists(out):
        return "fail", f"mismatched --calibrate: want exit 2 naming input 'x'; got {r.describe()}"
    good = os.path.join(d, "good.pb")
    rltest.write_pb(good, rng(1).standard_normal((2, 64)).astype(np.float32))
    r = rltest.run([args.rlopt, path, "-o", out, "--quantize", "int8", "--calibrate", good,
                    "--remarks"], args.timeout)
    if r.returncode != 0 or "on calibration rows" not in r.stderr:
        return "fail", f"--calibrate: want the error measured on calibration rows; got {r.describe()}"
    return "pass", ""


def check_bad_quantized_onnx(args, work):
    """Already-quantized ONNX input whose scale or zero-point shapes do not fit
    (the issue's bad-input list): exit 2, the message names the node, and
    nothing is written."""
    d = os.path.join(work, "badq")
    os.makedirs(d)
    u8, f32 = (lambda v: np.array(v, np.uint8)), (lambda v: np.array(v, np.float32))

    def dq(scale, zp, axis=1, block=None, opset=13):
        inits = {"w": np.ones((8, 4), np.uint8), "s": f32(scale)}
        ins = ["w", "s"]
        if zp is not None:
            inits["z"] = u8(zp)
            ins.append("z")
        kw = {"axis": axis}
        if block:
            kw["block_size"] = block
        return model([helper.make_node("DequantizeLinear", ins, ["wf"], name="dq_w", **kw),
                      helper.make_node("MatMul", ["x", "wf"], ["y"], name="mm")],
                     inits, [1, 8], [1, 4], opset)

    def qlinear(bs, bz):
        g = helper.make_graph(
            [helper.make_node("QLinearMatMul", ["x", "as", "az", "w", "bs", "bz", "ys", "yz"],
                              ["y"], name="qmm")], "q",
            [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 8])],
            [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 4])],
            [numpy_helper.from_array(a, n) for n, a in
             {"w": np.ones((8, 4), np.uint8), "as": f32(0.1), "az": u8(0), "bs": f32(bs),
              "bz": u8(bz), "ys": f32(0.1), "yz": u8(0)}.items()])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])

    cases = [("per-axis scale of 3 for 4 columns", dq([0.1] * 3, None), "dq_w"),
             ("zero point shape differs from the scale's", dq([0.1] * 4, [0, 0, 0]), "dq_w"),
             ("blocked scale 2 x 4 for K 8 in blocks of 3",
              dq(np.full((2, 4), 0.1), None, axis=0, block=3, opset=21), "dq_w"),
             ("QLinearMatMul b_scale of 3 for 4 columns", qlinear([0.1] * 3, [0] * 3), "qmm"),
             ("QLinearMatMul b_zero_point 2 vs b_scale 4", qlinear([0.1] * 4, [0] * 2), "qmm")]
    for what, m, node in cases:
        path = os.path.join(d, "m.onnx")
        onnx.save(m, path)
        out = os.path.join(d, "m.c")
        r = rltest.run([args.rlopt, path, "-o", out], args.timeout)
        if r.returncode != 2 or f"node '{node}'" not in r.stderr or os.path.exists(out):
            return "fail", f"{what}: want exit 2 naming node '{node}', no output; got {r.describe()}"
    return "pass", ""


def main():
    ap = rltest.make_parser(__doc__.split("\n\n")[0])
    ap.add_argument("-k", dest="patterns", action="append", default=[])
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if not args.rlopt:
        ap.error("--rlopt is required")
    tally = rltest.Tally()
    try:
        import onnxruntime  # noqa: F401
        have_ort = True
    except ImportError:
        have_ort = False
    work = tempfile.mkdtemp(prefix="rlopt-quant.")
    checks = [(n, functools.partial(check_case, n, f)) for n, f in CASES.items()]
    checks += [("shrink", check_shrink), ("kernel_paths", check_kernel_paths),
               ("bad_inputs", check_bad_inputs),
               ("bad_quantized_onnx", check_bad_quantized_onnx),
               ("onnx_formats", check_onnx_formats)]
    try:
        for name, fn in checks:
            if args.patterns and not any(fnmatch.fnmatchcase(name, p) for p in args.patterns):
                continue
            if not have_ort and (name in CASES or name == "onnx_formats"):
                tally.add("skip")
                continue
            try:
                status, msg = fn(args, work)
            except Exception as e:  # one broken case must not hide the others
                status, msg = "fail", f"driver error: {type(e).__name__}: {e}"
            tally.add(status)
            if status != "pass" or args.verbose:
                print(f"{status.upper():4} {name}{': ' + msg if msg else ''}", flush=True)
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
