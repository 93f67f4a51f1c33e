#!/usr/bin/env python3
"""The CUDA backend's numerics without a GPU.

1. Models built here (onnx.helper, opset 17) whose shapes reach what the
   node tests do not: MatMul/Gemm with partial 64 x 64 tiles, batch
   broadcasting and transposes, float16/bfloat16 products on WMMA and on
   mma.sync (whose emulation checks the m16n8k16 fragment layout; the
   pipelined kernel with every transpose pair), GEMV forms, Pad in
   every mode, products written with --cuda-library cublas, Conv with groups, strides, dilations and a
   fused Relu epilogue, reductions with constant axes (one block per output),
   Softmax/LayerNorm rows longer than a block, a fused elementwise chain with
   broadcasting. Reference: onnxruntime on the same inputs.
2. Every example model with reference data (examples/NAME.onnx and
   examples/NAME_data/) through

       rlopt run NAME.onnx -i input_0.pb -d OUT --target cuda --emulate

   compared with the expected outputs at the conformance defaults (rtol 1e-3,
   atol 1e-7), the tolerances the C backend is held to.
3. Bad input: a CPU profile, an op the CUDA backend cannot emit, --emulate
   without --target cuda, --cuda-library with a C target or an unknown
   library: exit status, one line, no file written.
4. A subset of the ONNX backend node tests (the operators the CUDA backend
   has its own kernels for, and some that run the C emitter's loop nest on
   the GPU) through tests/py/test_conformance.py with
   --rlopt-args="--target cuda --emulate" and the operator list of
   `rlopt ops --target cuda`.

Emulation builds the same .cu with g++ -DRL_CUDA_EMULATE and runs every block
and thread of every kernel on the CPU. With --gpu (a session lent a GPU) parts 1
and 2 run on the GPU instead (nvcc, no --emulate), the cases -j at a time: the
GPU-only code (ldmatrix addresses, cp.async, the launches) is checked there.
-k PATTERN runs only the built cases that match. Ends with "N passed, N failed,
N skipped".
"""

import concurrent.futures
import fnmatch
import glob
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F32 = TensorProto.FLOAT

# ops with a CUDA kernel of their own (elementwise, fused groups, MatMul,
# Gemm, Conv) and a few shape/normalization ops that run the C loop nest
SUBSET = [
    "test_add*", "test_mul_bcast*", "test_sub*", "test_div_bcast*", "test_relu*",
    "test_sigmoid*", "test_tanh*", "test_erf*", "test_gelu*", "test_clip*", "test_cast_FLOAT_to_FLOAT16*",
    "test_where*", "test_and*", "test_matmul_*", "test_gemm*", "test_conv_*", "test_basic_conv*",
    "test_softmax_axis*", "test_layer_normalization_2d*", "test_transpose_all*", "test_concat_2d*",
    "test_gather_0*", "test_reduce_sum_default*", "test_maxpool_2d_default*",
    # the C loop nest on the GPU with the kernel's own helpers as device code
    "test_resize_upsample_scales_linear*", "test_resize_downsample_scales_cubic_antialias*",
    "test_upsample_nearest*", "test_gridsample_bilinear*",
    # the attention, quantization, recurrent and detection families' loop nests
    "test_attention_4d_with_qk_matmul_bias*", "test_lstm_defaults*", "test_qlinearmatmul_2D*",
    "test_roialign_aligned_false*",
    # Pad's own kernel: pads (and axes) at run time, every mode
    "test_constant_pad*", "test_edge_pad*", "test_reflect_pad*", "test_wrap_pad*",
]


def build_cases():
    """(name, model, {input: array}, expected or None for onnxruntime's) per case."""
    rng = np.random.default_rng(12)
    cases = []

    def add(name, nodes, inputs, outputs, inits=(), expected=None, args=()):
        g = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info(k, F32, list(v.shape)) for k, v in inputs.items()],
                              [helper.make_tensor_value_info(k, F32, None) for k in outputs],
                              [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        cases.append((name, m, inputs, expected, list(args)))

    def r(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    # products: tiled (more than 4 rows) and GEMV (up to 4 rows, both B layouts)
    add("matmul_partial_tiles", [helper.make_node("MatMul", ["a", "b"], ["y"])],
        {"a": r(70, 90), "b": r(90, 130)}, ["y"])
    # without the tile pass (-O0): the default 64 x 64 tile
    add("matmul_default_tile_O0", [helper.make_node("MatMul", ["a", "b"], ["y"])],
        {"a": r(130, 70), "b": r(70, 100)}, ["y"], args=["-O0"])
    add("matmul_batch_bcast", [helper.make_node("MatMul", ["a", "b"], ["y"])],
        {"a": r(2, 1, 33, 40), "b": r(3, 40, 17)}, ["y"])
    add("gemm_trans_bias_relu",
        [helper.make_node("Gemm", ["a", "w", "c"], ["t"], transA=1, transB=1, alpha=0.5, beta=2.0),
         helper.make_node("Relu", ["t"], ["y"])],
        {"a": r(96, 80)}, ["y"], [("w", r(72, 96)), ("c", r(72))])
    add("conv_group_stride_dilation_relu",
        [helper.make_node("Conv", ["x", "w", "b"], ["t"], group=2, strides=[2, 1], dilations=[1, 2],
                          pads=[1, 2, 0, 1]),
         helper.make_node("Relu", ["t"], ["y"])],
        {"x": r(2, 4, 11, 9)}, ["y"], [("w", r(6, 2, 3, 3)), ("b", r(6))])
    add("conv1d_same_upper", [helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER",
                                               strides=[2])],
        {"x": r(1, 3, 20)}, ["y"], [("w", r(5, 3, 4))])
    for op in ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2", "ReduceLogSumExp"]:
        add(f"{op.lower()}_axes_0_2", [helper.make_node(op, ["x"], ["y"], axes=[0, 2], keepdims=0)]
            if op != "ReduceSum" else
            [helper.make_node(op, ["x", "ax"], ["y"], keepdims=1)],
            {"x": r(5, 7, 300)}, ["y"], [("ax", np.array([0, 2], np.int64))] if op == "ReduceSum" else [])
    add("softmax_long_rows", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
        {"x": r(6, 700) * 4}, ["y"])
    add("logsoftmax_short_rows", [helper.make_node("LogSoftmax", ["x"], ["y"], axis=-1)],
        {"x": r(9, 5)}, ["y"])
    add("layernorm_long_rows", [helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"],
                                                 axis=-1, epsilon=1e-3)],
        {"x": r(3, 1000) + 2}, ["y"], [("s", r(1000)), ("b", r(1000))])
    add("elementwise_bcast_chain",
        [helper.make_node("Mul", ["x", "s"], ["t"]), helper.make_node("Add", ["t", "c"], ["u"]),
         helper.make_node("Tanh", ["u"], ["y"])],
        {"x": r(4, 3, 50)}, ["y"], [("s", r(3, 1)), ("c", r(50))])
    add("transpose_3d", [helper.make_node("Transpose", ["x"], ["y"], perm=[2, 0, 1])],
        {"x": r(3, 40, 7)}, ["y"])
    # GEMV forms: float4 columns with K split over thread rows and a tail (B K x N, N a
    # multiple of 4), elements of A strided (transA), one element per lane (K odd)
    add("gemv_rows_float4_residual", [helper.make_node("MatMul", ["a", "b"], ["t"]),
                                      helper.make_node("Add", ["t", "z"], ["y"])],
        {"a": r(3, 1000), "z": r(3, 72)}, ["y"], [("b", r(1000, 72) * 0.1)])
    add("gemv_transa_transb", [helper.make_node("Gemm", ["a", "w"], ["y"], transA=1, transB=1)],
        {"a": r(300, 2)}, ["y"], [("w", r(40, 300) * 0.1)])
    add("gemv_transb_odd_k", [helper.make_node("Gemm", ["a", "w"], ["y"], transB=1)],
        {"a": r(1, 301)}, ["y"], [("w", r(9, 301) * 0.1)])
    add("gemv_transb_bias_tanh",
        [helper.make_node("Gemm", ["a", "w", "c"], ["t"], transB=1),
         helper.make_node("Tanh", ["t"], ["y"])],
        {"a": r(1, 300)}, ["y"], [("w", r(70, 300) * 0.1), ("c", r(70))])
    add("gemv_batched_rows", [helper.make_node("MatMul", ["a", "b"], ["y"])],
        {"a": r(3, 2, 50)}, ["y"], [("b", r(50, 33))])
    # float16 on tensor cores (WMMA): the reference is the float32 product rounded to float16
    a16, b16 = r(70, 40).astype(np.float16), r(40, 90).astype(np.float16)
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "wmma",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [70, 40])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
                          [numpy_helper.from_array(b16, "b")])
    cases.append(("matmul_float16_wmma",
                  helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                  {"a": a16}, (a16.astype(np.float32) @ b16.astype(np.float32)).astype(np.float16), []))
    # bfloat16 on tensor cores (the same WMMA kernel): exact products of bfloat16 inputs
    # summed in float, rounded once to bfloat16
    import ml_dtypes  # onnx's own dependency: numpy's bfloat16
    abf, bbf = r(70, 40).astype(ml_dtypes.bfloat16), r(40, 90).astype(ml_dtypes.bfloat16)
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "wmma_bf16",
                          [helper.make_tensor_value_info("a", TensorProto.BFLOAT16, [70, 40])],
                          [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, None)],
                          [numpy_helper.from_array(bbf, "b")])
    cases.append(("matmul_bfloat16_wmma",
                  helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                  {"a": abf}, (abf.astype(np.float32) @ bbf.astype(np.float32)).astype(ml_dtypes.bfloat16),
                  []))
    # mma.sync (the tile pass's block tile): the emulation gathers each warp's fragments by
    # the m16n8k16 layout, so these check that layout as well as the sums
    a16, b16 = r(130, 200).astype(np.float16), r(200, 150).astype(np.float16)
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "mma16",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [130, 200])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
                          [numpy_helper.from_array(b16, "b")])
    cases.append(("matmul_float16_mma",
                  helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                  {"a": a16}, (a16.astype(np.float32) @ b16.astype(np.float32)).astype(np.float16), []))
    # K and N multiples of 8: 16-byte tile loads, B's transposed into shared memory
    a16, b16 = r(3, 70, 160).astype(np.float16), r(160, 104).astype(np.float16)
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "mma16b",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [3, 70, 160])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
                          [numpy_helper.from_array(b16, "b")])
    cases.append(("matmul_float16_batched_mma",
                  helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                  {"a": a16}, (a16.astype(np.float32) @ b16.astype(np.float32)).astype(np.float16), []))
    abf, bbf = r(200, 130).astype(ml_dtypes.bfloat16), r(150, 200).astype(ml_dtypes.bfloat16)
    cbf = r(150).astype(ml_dtypes.bfloat16)
    g = helper.make_graph([helper.make_node("Gemm", ["a", "b", "c"], ["t"], transA=1, transB=1, alpha=0.5),
                           helper.make_node("Relu", ["t"], ["y"])], "mma_bf16",
                          [helper.make_tensor_value_info("a", TensorProto.BFLOAT16, [200, 130])],
                          [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, None)],
                          [numpy_helper.from_array(bbf, "b"), numpy_helper.from_array(cbf, "c")])
    ref = np.maximum(0.5 * (abf.astype(np.float32).T @ bbf.astype(np.float32).T) + cbf.astype(np.float32), 0)
    cases.append(("gemm_bfloat16_trans_bias_relu_mma",
                  helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                  {"a": abf}, ref.astype(ml_dtypes.bfloat16), []))
    # the pipelined mma.sync kernel (cp.async stages, ldmatrix fragments: emulated as
    # per-thread pair reads in the same layout): stored rows a multiple of 8 elements,
    # partial block tiles in M and N, a partial last K tile, every transpose pair
    for ta in (0, 1):
        for tb in (0, 1):
            dt, npdt = ((TensorProto.BFLOAT16, ml_dtypes.bfloat16) if ta and tb else
                        (TensorProto.FLOAT16, np.float16))
            a, b = r(200, 264).astype(npdt), r(264, 136).astype(npdt)
            ain, bin_ = (a.T.copy() if ta else a), (b.T.copy() if tb else b)
            g = helper.make_graph([helper.make_node("Gemm", ["a", "b"], ["y"], transA=ta, transB=tb)],
                                  "pipe", [helper.make_tensor_value_info("a", dt, list(ain.shape)),
                                           helper.make_tensor_value_info("b", dt, list(bin_.shape))],
                                  [helper.make_tensor_value_info("y", dt, None)])
            cases.append((f"gemm_{'bfloat16' if ta and tb else 'float16'}_ta{ta}_tb{tb}_mma_pipe",
                          helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                          {"a": ain, "b": bin_}, (a.astype(np.float32) @ b.astype(np.float32)).astype(npdt),
                          []))
    add("slice_steps", [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
        {"x": r(6, 20, 9)}, ["y"], [("st", np.array([1, -2], np.int64)), ("en", np.array([19, 0], np.int64)),
                                    ("ax", np.array([1, 2], np.int64)), ("sp", np.array([3, -2], np.int64))])
    add("gather_negative_indices", [helper.make_node("Gather", ["x", "i"], ["y"], axis=1)],
        {"x": r(3, 10, 4)}, ["y"], [("i", np.array([[0, -1], [4, -10]], np.int64))])
    add("concat_axis1", [helper.make_node("Concat", ["x", "c"], ["y"], axis=1)],
        {"x": r(2, 3, 5)}, ["y"], [("c", r(2, 4, 5))])
    add("split_uneven_then_add",
        [helper.make_node("Split", ["x", "sz"], ["a", "b"], axis=2),
         helper.make_node("Mul", ["a", "a"], ["y"])],
        {"x": r(2, 3, 11)}, ["y"], [("sz", np.array([4, 7], np.int64))])
    add("expand_rows", [helper.make_node("Expand", ["x", "sh"], ["y"])],
        {"x": r(3, 1)}, ["y"], [("sh", np.array([2, 3, 6], np.int64))])
    # Pad's own kernel, pads known at generation: reflect past one edge, edge with a
    # negative (cropping) pad, constant with a value
    add("pad_reflect", [helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")],
        {"x": r(2, 5, 6)}, ["y"], [("p", np.array([0, 4, 2, 1, 0, 5], np.int64))])
    add("pad_edge_crop", [helper.make_node("Pad", ["x", "p"], ["y"], mode="edge")],
        {"x": r(3, 4, 7)}, ["y"], [("p", np.array([1, -1, 3, 0, 2, -2], np.int64))])
    add("pad_constant_value", [helper.make_node("Pad", ["x", "p", "v"], ["y"])],
        {"x": r(2, 3, 4)}, ["y"], [("p", np.array([1, 0, 2, 0, 3, 1], np.int64)),
                                   ("v", np.array(1.5, np.float32))])
    # pads at run time that disagree with the declared output shape: zeros, as the C backend
    g = helper.make_graph([helper.make_node("Pad", ["x", "p", "v"], ["y"])], "pad_rt",
                          [helper.make_tensor_value_info("x", F32, [2, 3]),
                           helper.make_tensor_value_info("p", TensorProto.INT64, [4])],
                          [helper.make_tensor_value_info("y", F32, [2, 5])],
                          [numpy_helper.from_array(np.array(7.0, np.float32), "v")])
    cases.append(("pad_runtime_pads_disagree",
                  helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                  {"x": r(2, 3), "p": np.array([0, 1, 0, 0], np.int64)}, np.zeros((2, 5), np.float32), []))
    # --cuda-library cublas: the GPU calls cuBLAS, emulation still runs rlopt's kernel
    # (and the post kernel's Gemm C and epilogue are only in the GPU build)
    add("gemm_trans_bias_relu_cublas",
        [helper.make_node("Gemm", ["a", "w", "c"], ["t"], transA=1, transB=1, alpha=0.5, beta=2.0),
         helper.make_node("Relu", ["t"], ["y"])],
        {"a": r(96, 80)}, ["y"], [("w", r(72, 96)), ("c", r(72))], args=["--cuda-library", "cublas"])
    add("matmul_batched_cublas", [helper.make_node("MatMul", ["a", "b"], ["y"])],
        {"a": r(3, 33, 40)}, ["y"], [("b", r(40, 17))], args=["--cuda-library", "cublas"])
    # ... and with -DRL_CUDA_EMULATE_CUBLAS: the cuBLAS calls the GPU build makes, emulated
    # column-major on the CPU, then the post kernels (Gemm's C, the epilogue): this checks
    # the operand order, transposes, leading dims and batch strides passed to cuBLAS
    emu = ["--cuda-library", "cublas", "--cflags", "-DRL_CUDA_EMULATE_CUBLAS"]
    add("gemm_trans_bias_relu_cublas_emulated",
        [helper.make_node("Gemm", ["a", "w", "c"], ["t"], transA=1, transB=1, alpha=0.5, beta=2.0),
         helper.make_node("Relu", ["t"], ["y"])],
        {"a": r(96, 80)}, ["y"], [("w", r(72, 96)), ("c", r(72))], args=emu)
    add("gemm_transb_residual_cublas_emulated",
        [helper.make_node("Gemm", ["a", "w"], ["t"], transB=1),
         helper.make_node("Add", ["t", "z"], ["y"])],
        {"a": r(20, 30), "z": r(20, 12)}, ["y"], [("w", r(12, 30))], args=emu)
    add("gemm_transa_cublas_emulated", [helper.make_node("Gemm", ["a", "w"], ["y"], transA=1)],
        {"a": r(30, 7)}, ["y"], [("w", r(30, 11))], args=emu)
    add("matmul_batched_cublas_emulated", [helper.make_node("MatMul", ["a", "b"], ["y"])],
        {"a": r(3, 33, 40), "b": r(3, 40, 17)}, ["y"], args=emu)
    add("matmul_bcast_a_cublas_emulated", [helper.make_node("MatMul", ["a", "b"], ["y"])],
        {"a": r(9, 40), "b": r(2, 3, 40, 5)}, ["y"], args=emu)
    a16, b16 = r(3, 33, 40).astype(np.float16), r(40, 27).astype(np.float16)
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "blas16",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [3, 33, 40])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
                          [numpy_helper.from_array(b16, "b")])
    cases.append(("matmul_float16_batched_cublas_emulated",
                  helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                  {"a": a16}, (a16.astype(np.float32) @ b16.astype(np.float32)).astype(np.float16), emu))
    return cases


def run_cases(rlopt, tmp, tally, patterns=(), gpu=False, jobs=1):
    todo = [c for c in build_cases() if not patterns or any(fnmatch.fnmatch(c[0], p) for p in patterns)]
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as ex:
        for ok, line in ex.map(lambda c: run_case(rlopt, tmp, gpu, *c), todo):
            print(line)
            tally.add("pass" if ok else "fail")


def run_case(rlopt, tmp, gpu, name, model, inputs, ref, args):
    """One case: (passed, the line that says so)."""
    d = os.path.join(tmp, "case_" + name)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    if ref is None:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        expected = sess.run(None, inputs)
    else:
        expected = [ref]
    cmd = [rlopt, "run", path, "-d", os.path.join(d, "out"), "--target", "cuda"] + \
        ([] if gpu else ["--emulate"]) + args
    for k, v in inputs.items():
        p = os.path.join(d, k + ".pb")
        rltest.write_pb(p, v, k)
        cmd += ["-i", p]
    res = rltest.run(cmd, timeout=300)
    if not res.ok:
        return False, f"FAIL case {name}: {res.describe()}"
    _, got = rltest.read_pb(os.path.join(d, "out", "output_0.pb"))
    half = got.dtype == np.float16  # one float16 rounding apart at most, plus the sum's order
    bf = got.dtype.name == "bfloat16"  # one bfloat16 rounding (2^-8) apart at most
    if bf:
        got, expected = got.astype(np.float32), [np.asarray(expected[0]).astype(np.float32)]
    ok, msg, _, _ = rltest.compare(got, expected[0], rtol=8e-3 if bf else 2e-3 if half else 1e-3,
                                   atol=8e-3 if bf else 2e-3 if half else 1e-5)
    # every case has a parallel CUDA kernel: none may fall back to the serial loop nest
    cu = os.path.join(d, "m.cu")
    gen_args = [a for i, a in enumerate(args)  # run's --cflags X does not apply to -o
                if a != "--cflags" and (i == 0 or args[i - 1] != "--cflags")]
    gen = rltest.run([rlopt, path, "-o", cu] + gen_args, timeout=120)
    if not gen.ok:
        ok, msg = False, "rlopt -o m.cu: " + gen.describe()
    else:
        with open(cu) as f:
            text = f.read()
        if "; serial:" in text or " (0 serial)" not in text:
            ok, msg = False, "a kernel fell back to the serial loop nest"
        elif "--cuda-library" in args and "rl_blas_check(cublas" not in text:
            ok, msg = False, "--cuda-library cublas: no cuBLAS call in the .cu"
        elif name.endswith("_mma") and "mma.sync m16n8k16" not in text:
            ok, msg = False, "the product did not take the mma.sync kernel"
        elif name.endswith("_mma_pipe") and "by cp.async in" not in text:
            ok, msg = False, "the product did not take the pipelined mma.sync kernel"
        elif name.startswith("pad_") and "(Pad; one thread per output element)" not in text:
            ok, msg = False, "Pad did not get its own kernel"
    return ok, f"{'ok  ' if ok else 'FAIL'} case {name}{'' if ok else ': ' + msg}"


def bad_inputs(rlopt, source, tmp, tally):
    node = os.path.join(rltest.onnx_data_dir(), "node")
    mlp = os.path.join(source, "examples", "mlp.onnx")
    out = os.path.join(tmp, "bad.cu")
    checks = [
        ("cpu profile refused", [rlopt, mlp, "-o", out, "--hw", "generic-cpu"], 2, "GPU profile"),
        # a data-dependent output extent: the CUDA header's dims are static
        ("unsupported op named", [rlopt, os.path.join(node, "test_nonzero_example", "model.onnx"),
                                  "-o", out], 2, "(NonZero)"),
        ("--emulate needs --target cuda", [rlopt, "run", mlp, "-i", "x.pb", "-d", tmp, "--emulate"],
         1, "--target cuda"),
        ("--target cuda wants .cu", [rlopt, mlp, "-o", os.path.join(tmp, "x.c"), "--target", "cuda"],
         1, "OUT.cu"),
        ("--cuda-library with a C target", [rlopt, mlp, "-o", os.path.join(tmp, "x.c"),
                                            "--cuda-library", "cublas"], 1, "--cuda-library"),
        ("--cuda-library unknown value", [rlopt, mlp, "-o", out, "--cuda-library", "mkl"], 1,
         "cublas or none"),
        ("run --cuda-library needs --target cuda", [rlopt, "run", mlp, "-i", "x.pb", "-d", tmp,
                                                    "--cuda-library", "cublas"], 1, "--target cuda"),
    ]
    for name, cmd, code, text in checks:
        r = rltest.run(cmd, timeout=60)
        lines = (r.stderr or "").strip().splitlines()
        left = [f for f in os.listdir(tmp) if f.startswith("bad.") or f.startswith("x.")]
        # errors are one line; usage errors (exit 1) may add "Try 'rlopt --help'."
        ok = (r.returncode == code and lines and text in lines[0] and not left and
              (len(lines) == 1 or (code == 1 and len(lines) == 2)))
        print(f"{'ok  ' if ok else 'FAIL'} bad input: {name}"
              + ("" if ok else f": exit {r.returncode}, stderr {lines!r}, files {left}"))
        tally.add("pass" if ok else "fail")


def main():
    ap = rltest.make_parser(__doc__)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="run only the built cases whose name matches this fnmatch pattern "
                         "(repeatable); the bad inputs, examples and node tests are then left out")
    ap.add_argument("--gpu", action="store_true",
                    help="build for and run on the GPU (no --emulate): the built cases and the "
                         "examples only (a device check; the bad inputs and node tests do not "
                         "depend on the GPU)")
    args = ap.parse_args()
    rlopt = os.path.abspath(args.rlopt)
    tally = rltest.Tally()
    with tempfile.TemporaryDirectory(prefix="rlopt-cuda-emu-") as tmp:
        run_cases(rlopt, tmp, tally, args.patterns, args.gpu, args.jobs)
        if args.patterns:
            print("-k: only the built cases ran (no bad inputs, examples or node tests)")
            return tally.finish()
        if not args.gpu:
            bad_inputs(rlopt, args.source, tmp, tally)
        # 2. the examples
        examples = [(os.path.basename(m)[:-5], m, [])
                    for m in sorted(glob.glob(os.path.join(args.source, "examples", "*.onnx")))]
        # the weights in NAME.weights, uploaded by init, instead of embedded
        examples.append(("mlp", os.path.join(args.source, "examples", "mlp.onnx"),
                         ["--weights-max", "0"]))
        for name, model, extra in examples:
            data = os.path.join(args.source, "examples", name + "_data")
            if not os.path.isdir(data):
                continue
            ins = sorted(glob.glob(os.path.join(data, "input_*.pb")))
            out = os.path.join(tmp, name + ("_side" if extra else ""))
            name += " (side file)" if extra else ""
            cmd = [rlopt, "run", model, "-d", out, "--target", "cuda"] + \
                ([] if args.gpu else ["--emulate"]) + extra
            for p in ins:
                cmd += ["-i", p]
            r = rltest.run(cmd, timeout=300)
            if not r.ok:
                print(f"FAIL example {name}: {r.describe()}")
                tally.add("fail")
                continue
            bad = []
            for exp in sorted(glob.glob(os.path.join(data, "output_*.pb"))):
                _, e = rltest.read_pb(exp)
                _, a = rltest.read_pb(os.path.join(out, os.path.basename(exp)))
                ok, msg, _, _ = rltest.compare(a, e)
                if not ok:
                    bad.append(f"{os.path.basename(exp)}: {msg}")
            if bad:
                print(f"FAIL example {name}: " + "; ".join(bad))
                tally.add("fail")
            else:
                print(f"ok   example {name} ({'the GPU' if args.gpu else 'emulated CUDA'} matches the reference)")
                tally.add("pass")
        if args.gpu:
            print("--gpu: the node-test subset is left to the emulated run")
            return tally.finish()
        # 3. the node-test subset
        ops = rltest.run([rlopt, "ops", "--target", "cuda"], timeout=60)
        if not ops.ok:
            print(f"FAIL rlopt ops --target cuda: {ops.describe()}")
            tally.add("fail")
            return tally.finish()
        ops_file = os.path.join(tmp, "cuda_ops.txt")
        with open(ops_file, "w") as f:
            f.write(ops.stdout)
        conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_conformance.py")
        cmd = [sys.executable, "-B", conf, "--rlopt", rlopt, "--source", args.source,
               "-j", str(args.jobs), "--ops-file", ops_file,
               "--rlopt-args=--target cuda --emulate"]
        for k in SUBSET:
            cmd += ["-k", k]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        lines = p.stdout.strip().splitlines()
        for line in lines:
            if line.startswith("FAIL") or line.startswith("    "):
                print(line)
        last = lines[-1] if lines else "(no output)"
        print(f"node tests through --target cuda --emulate: {last}")
        try:
            np_, nf, ns = (int(w) for w in last.replace(",", "").split()[0:6:2])
        except ValueError:
            print(p.stderr[-2000:])
            np_, nf, ns = 0, 1, 0
        tally.passed += np_
        tally.failed += nf
        tally.skipped += ns
        if np_ < 100:
            print(f"only {np_} node tests passed through the CUDA emulation (expected >= 100)")
            tally.add("fail")
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
