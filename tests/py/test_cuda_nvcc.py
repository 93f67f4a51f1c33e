#!/usr/bin/env python3
"""Every .cu the CUDA backend writes compiles with nvcc, warnings as errors.

For the example models, a set of ONNX node-test models (elementwise and
fused groups, MatMul, Gemm, Conv, pooling, normalization, shape ops, and
GridSample, Resize and LSTM through the C loop nest, Pad), a float16 Gemm and
a bfloat16 MatMul (the WMMA tensor-core kernel) and a float16 MatMul and a
bfloat16 Gemm on the mma.sync kernel (inline PTX m16n8k16), runs
`rlopt MODEL -o X.cu` and then

    nvcc -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80
         -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -c X.cu

(device code for Hopper and Ampere in one call, so the host side goes through
the host compiler, with -Wall -Wextra, once), and the emulation build, g++ -std=c++17 -x c++
-DRL_CUDA_EMULATE -Wall -Wextra -Werror -c X.cu, which needs no CUDA. Two
products written with --cuda-library cublas (float32 cublasSgemm with the post
kernel, batched float16 cublasGemmStridedBatchedEx) are also linked, with a
small main calling NAME_init, against -lcublas. nvcc is
found on PATH, else under /usr/local/cuda*/bin; without it the nvcc cases
are skipped with that reason printed. Ends with
"N passed, N failed, N skipped".
"""

import glob
import os
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

NODE_TESTS = [
    "test_add_bcast", "test_gelu_tanh_1", "test_gemm_all_attributes", "test_matmul_4d",
    "test_conv_with_strides_padding", "test_softmax_axis_1", "test_layer_normalization_3d_axis1_epsilon",
    "test_transpose_all_permutations_3", "test_maxpool_2d_pads", "test_reduce_mean_keepdims_example",
    "test_cast_FLOAT_to_FLOAT16", "test_and_bcast4v3d",
    # the C loop nest on the GPU, with the kernel's own helpers as device code
    "test_gridsample_reflection_padding", "test_resize_downsample_scales_cubic_antialias",
    "test_lstm_defaults",
    # Pad's own kernel: static reflect pads, run-time pads and axes
    "test_reflect_pad", "test_constant_pad_axes",
]
ARCHS = ["sm_90", "sm_80"]


def float16_gemm(path):
    """A float16 Gemm with a fused Relu: the tensor-core (WMMA) kernel."""
    b = np.random.default_rng(1).standard_normal((40, 90)).astype(np.float16)
    g = helper.make_graph([helper.make_node("Gemm", ["a", "b", "c"], ["t"], alpha=0.5),
                           helper.make_node("Relu", ["t"], ["y"])], "f16",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [70, 40])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
                          [numpy_helper.from_array(b, "b"),
                           numpy_helper.from_array(np.ones(90, np.float16), "c")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def bfloat16_matmul(path):
    """A bfloat16 MatMul: the tensor-core kernel with bfloat16 fragments."""
    import ml_dtypes  # onnx's own dependency
    b = np.random.default_rng(2).standard_normal((48, 70)).astype(ml_dtypes.bfloat16)
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "bf16",
                          [helper.make_tensor_value_info("a", TensorProto.BFLOAT16, [66, 48])],
                          [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, None)],
                          [numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def mma_models(tmp):
    """float16 and bfloat16 products large enough for the tile pass's GPU block tile:
    the mma.sync.aligned.m16n8k16 kernel (inline PTX, sm_80 and sm_90)."""
    import ml_dtypes  # onnx's own dependency
    out = []
    for name, tp, dt in (("float16_matmul_mma", TensorProto.FLOAT16, np.float16),
                         ("bfloat16_gemm_mma", TensorProto.BFLOAT16, ml_dtypes.bfloat16)):
        b = np.random.default_rng(4).standard_normal((150, 200)).astype(dt)
        node = (helper.make_node("MatMul", ["a", "b"], ["y"]) if tp == TensorProto.FLOAT16 else
                helper.make_node("Gemm", ["a", "b"], ["y"], transB=1))
        if tp == TensorProto.FLOAT16:
            b = b.T.copy()
        g = helper.make_graph([node], name, [helper.make_tensor_value_info("a", tp, [130, 200])],
                              [helper.make_tensor_value_info("y", tp, None)],
                              [numpy_helper.from_array(b, "b")])
        p = os.path.join(tmp, name + ".onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), p)
        out.append((name, p))
    # rows a multiple of 8 elements: the pipelined kernel (cp.async stages in dynamic shared
    # memory over 48 KiB, ldmatrix), A transposed (ldmatrix .trans on both operands)
    b = np.random.default_rng(5).standard_normal((264, 136)).astype(np.float16)
    g = helper.make_graph([helper.make_node("Gemm", ["a", "b"], ["y"], transA=1)], "pipe16",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [264, 200])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
                          [numpy_helper.from_array(b, "b")])
    p = os.path.join(tmp, "float16_gemm_mma_pipe.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), p)
    out.append(("float16_gemm_mma_pipe", p))
    return out


def cublas_models(tmp):
    """Products for --cuda-library cublas: a float32 Gemm (transB, beta C, a fused Relu:
    cublasSgemm, then the post kernel) and a batched float16 MatMul with a broadcast B
    (cublasGemmStridedBatchedEx, stride 0 for B)."""
    rng = np.random.default_rng(3)
    g = helper.make_graph([helper.make_node("Gemm", ["a", "w", "c"], ["t"], transB=1, beta=2.0),
                           helper.make_node("Relu", ["t"], ["y"])], "blas32",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [37, 29])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(rng.standard_normal((45, 29)).astype(np.float32), "w"),
                           numpy_helper.from_array(rng.standard_normal(45).astype(np.float32), "c")])
    p32 = os.path.join(tmp, "blas32.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), p32)
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "blas16",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [3, 33, 40])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
                          [numpy_helper.from_array(rng.standard_normal((40, 27)).astype(np.float16), "b")])
    p16 = os.path.join(tmp, "blas16.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), p16)
    # a product the pipelined kernel would take (its shared-memory opt-in is emulation's too)
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "blas16p",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [256, 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
                          [numpy_helper.from_array(rng.standard_normal((256, 256)).astype(np.float16), "b")])
    p16p = os.path.join(tmp, "blas16p.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), p16p)
    return [("cublas_gemm_relu", p32), ("cublas_float16_batched", p16), ("cublas_float16_pipe", p16p)]


# a program that links against the .cu's API (cuBLAS resolved at link time)
LINK_MAIN = """#include <stdio.h>
int PFX_init(const char *);
void PFX_free(void);
int main(void) { int r = PFX_init(NULL); printf("init %d\\n", r); PFX_free(); return r != 0; }
"""


def main():
    ap = rltest.make_parser(__doc__)
    args = ap.parse_args()
    rlopt = os.path.abspath(args.rlopt)
    tally = rltest.Tally()
    models = [(os.path.basename(m)[:-5], m)
              for m in sorted(glob.glob(os.path.join(args.source, "examples", "*.onnx")))
              if os.path.isdir(m[:-5] + "_data")]
    node = os.path.join(rltest.onnx_data_dir(), "node")
    models += [(t, os.path.join(node, t, "model.onnx")) for t in NODE_TESTS]
    nvcc = rltest.find_nvcc()
    if not nvcc:
        print("skip: nvcc not found on PATH or under /usr/local/cuda*/bin "
              "(install the CUDA toolkit to run the nvcc half of this check)")
    with tempfile.TemporaryDirectory(prefix="rlopt-cuda-nvcc-") as tmp:
        models.append(("float16_gemm_wmma", float16_gemm(os.path.join(tmp, "f16.onnx"))))
        models.append(("bfloat16_matmul_wmma", bfloat16_matmul(os.path.join(tmp, "bf16.onnx"))))
        models += mma_models(tmp)
        blas = cublas_models(tmp)
        models += blas
        for name, model in models:
            cu = os.path.join(tmp, name + ".cu")
            lib = (name, model) in blas
            r = rltest.run([rlopt, model, "-o", cu] + (["--cuda-library", "cublas"] if lib else []),
                           timeout=120)
            if not r.ok:
                print(f"FAIL {name}: rlopt -o {name}.cu: {r.describe()}")
                tally.add("fail")
                continue
            e = rltest.run(["g++", "-std=c++17", "-x", "c++", "-DRL_CUDA_EMULATE", "-Wall", "-Wextra",
                            "-Werror", "-c", cu, "-o", os.path.join(tmp, name + ".emu.o")], timeout=300)
            print(f"{'ok  ' if e.ok else 'FAIL'} {name} g++ -DRL_CUDA_EMULATE -Wall -Wextra"
                  + ("" if e.ok else ": " + e.describe(20)))
            tally.add("pass" if e.ok else "fail")
            if not nvcc:
                tally.add("skip")
                continue
            # both architectures in one call: the host side is compiled once
            gencode = []
            for arch in ARCHS:
                gencode += ["-gencode", f"arch=compute_{arch[3:]},code={arch}"]
            c = rltest.run([nvcc] + gencode + ["-Werror", "all-warnings",
                            "-Xcompiler", "-Wall,-Wextra,-Werror", "-c", cu,
                            "-o", os.path.join(tmp, f"{name}.o")], timeout=300)
            secs = c.seconds
            if c.ok and lib:  # and it links with cuBLAS
                main_c = os.path.join(tmp, name + "_main.c")
                with open(main_c, "w") as f:
                    f.write(LINK_MAIN.replace("PFX", name))
                c = rltest.run([nvcc, f"-arch={ARCHS[0]}", os.path.join(tmp, f"{name}.o"), main_c,
                                "-o", os.path.join(tmp, name + ".exe"), "-lcublas"], timeout=300)
                secs += c.seconds
            if c.ok:
                print(f"ok   {name} nvcc {' + '.join(ARCHS)}{' (linked with -lcublas)' if lib else ''}"
                      f" ({secs:.1f} s)")
                tally.add("pass")
            else:
                print(f"FAIL {name} nvcc {' + '.join(ARCHS)}: {c.describe(20)}")
                tally.add("fail")
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
