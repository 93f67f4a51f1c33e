#!/usr/bin/env python3
"""Quantized weights on the CUDA backend, without a GPU.

Models built here (onnx.helper, opset 17) go through `--quantize int8` (blocks),
`int8-channel` or `int4` (the quantize pass rewrites MatMul/Gemm into QuantMatMul over packed
codes, ir/qweights.h) twice:

    rlopt run M.onnx -i ... -d C   --quantize Q --cflags -DRL_NO_QVNNI   (the C backend)
    rlopt run M.onnx -i ... -d CU  --quantize Q --target cuda --emulate

and the emulated CUDA outputs must match the C backend's quantized outputs
at rtol 1e-3, atol 1e-5. Both read the same codes and accumulate in float;
the C reference is built with -DRL_NO_QVNNI because its AVX-512 VNNI path
(taken where the CPU has it) rounds the activations to 16 bits first, an
error of about 1e-5 of the row's largest term, which on small outputs of a
long row exceeds rtol 1e-3 against any float-accumulating kernel. Each .cu must hold the QuantMatMul kernel of the
scheme asked for (checked from its comment: int8 per channel, int8 blocks, int4
symmetric, int4 with zero points) and no serial fallback. The cases cover
K not a multiple of the codes per 32-bit word (the guarded tail), K a
multiple of 4 (128-bit activation loads), more rows than one block takes,
Gemm with transB, bias and a Relu after, blocks of 32 and 64 codes, and
whole groups of 16 units (the kernel with several channels a warp, checked
from its comment too).
With nvcc (PATH or /usr/local/cuda*/bin) the int8 and int4 .cu also compile
for sm_90 and sm_80 with warnings as errors (skipped, with the reason, when
nvcc is absent). Ends with "N passed, N failed, N skipped".
"""

import os
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def cases():
    rng = np.random.default_rng(7)
    out = []

    def add(name, nodes, inputs, inits, args, expect):
        g = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
                               for k, v in inputs.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(a, n) for n, a in inits])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        out.append((name, m, inputs, args, expect if isinstance(expect, tuple) else (expect,)))

    def r(*s):
        return rng.standard_normal(s).astype(np.float32)

    mm = [helper.make_node("MatMul", ["a", "w"], ["y"])]
    gemm = [helper.make_node("Gemm", ["a", "w", "c"], ["t"], transB=1),
            helper.make_node("Relu", ["t"], ["y"])]
    # K = 300: not a multiple of 8 (int4 words) nor of 32 (a unit): the guarded tail
    add("int8_gemv_k300", mm, {"a": r(1, 300)}, [("w", r(300, 70) * 0.1)],
        ["--quantize", "int8-channel"], "int8 weights, one scale per output channel")
    add("int4_gemv_k300", mm, {"a": r(1, 300)}, [("w", r(300, 70) * 0.1)],
        ["--quantize", "int4", "--max-rel-error", "0.2"], "int4 weights, symmetric")
    # 6 rows: two blocks of rows; Gemm transB with bias, Relu after
    add("int8_gemm_rows6_bias_relu", gemm, {"a": r(6, 256)},
        [("w", r(90, 256) * 0.1), ("c", r(90))], ["--quantize", "int8"],
        "int8 weights, symmetric blocks")
    add("int4_gemm_rows6_block64", gemm, {"a": r(6, 256)},
        [("w", r(90, 256) * 0.1), ("c", r(90))],
        ["--quantize", "int4", "--max-rel-error", "0.2", "--block", "64"], "int4 weights, symmetric")
    # weights far from zero: symmetric int4 misses the bound, a zero point per block meets it
    add("int4_zero_points_batch3", mm, {"a": r(3, 2, 200)},
        [("w", rng.uniform(5, 6, (200, 40)).astype(np.float32))],
        ["--quantize", "int4", "--max-rel-error", "0.02"], "int4 weights, a zero point per block")
    # whole groups of 16 units (K a multiple of 16 u): the kernel with 4 channels a warp
    # sharing each load of A, codes made floats from their bits (q + 2^23)
    fast = "channels per warp sharing each load of A"
    add("int8_channel_whole_groups", mm, {"a": r(1, 512)}, [("w", r(512, 70) * 0.1)],
        ["--quantize", "int8-channel"], ("int8 weights, one scale per output channel", fast))
    add("int8_blocks_whole_groups_rows5", mm, {"a": r(5, 512)}, [("w", r(512, 40) * 0.1)],
        ["--quantize", "int8"], ("int8 weights, symmetric blocks", fast))
    add("int4_whole_groups_bias_relu", gemm, {"a": r(2, 1024)},
        [("w", r(33, 1024) * 0.1), ("c", r(33))],
        ["--quantize", "int4", "--max-rel-error", "0.2"], ("int4 weights, symmetric", fast))
    add("int4_zero_points_whole_groups", mm, {"a": r(1, 512)},
        [("w", rng.uniform(5, 6, (512, 40)).astype(np.float32))],
        ["--quantize", "int4", "--max-rel-error", "0.02"], ("int4 weights, a zero point per block", fast))
    return out


def main():
    ap = rltest.make_parser(__doc__)
    ap.add_argument("--gpu", action="store_true",
                    help="run the CUDA build on the GPU instead of emulating it (a device check)")
    args = ap.parse_args()
    rlopt = os.path.abspath(args.rlopt)
    tally = rltest.Tally()
    nvcc = rltest.find_nvcc()
    compiled = set()
    with tempfile.TemporaryDirectory(prefix="rlopt-cuda-quant-") as tmp:
        for name, model, inputs, qargs, expect in cases():
            d = os.path.join(tmp, name)
            os.makedirs(d)
            path = os.path.join(d, "model.onnx")
            with open(path, "wb") as f:
                f.write(model.SerializeToString())
            ins = []
            for k, v in inputs.items():
                p = os.path.join(d, k + ".pb")
                rltest.write_pb(p, v, k)
                ins += ["-i", p]
            outs = {}
            msg = ""
            for tgt, extra in (("c", ["--cflags", "-DRL_NO_QVNNI"]),
                               ("cuda", ["--target", "cuda"] + ([] if args.gpu else ["--emulate"]))):
                res = rltest.run([rlopt, "run", path, "-d", os.path.join(d, tgt)] + ins + qargs + extra,
                                 timeout=300)
                if not res.ok:
                    msg = f"rlopt run ({tgt}): {res.describe()}"
                    break
                outs[tgt] = rltest.read_pb(os.path.join(d, tgt, "output_0.pb"))[1]
            ok = not msg
            if ok:
                ok, msg, _, _ = rltest.compare(outs["cuda"], outs["c"], rtol=1e-3, atol=1e-5)
            cu = os.path.join(d, name + ".cu")
            if ok:
                gen = rltest.run([rlopt, path, "-o", cu] + qargs, timeout=120)
                text = open(cu).read() if gen.ok else ""
                if not gen.ok:
                    ok, msg = False, "rlopt -o: " + gen.describe()
                elif any(e not in text for e in expect) or "dequantized in registers" not in text:
                    ok, msg = False, f"no QuantMatMul kernel with {expect} in the .cu"
                elif " (0 serial)" not in text:
                    ok, msg = False, "a kernel fell back to the serial loop nest"
            print(f"{'ok  ' if ok else 'FAIL'} {name}{'' if ok else ': ' + msg}")
            tally.add("pass" if ok else "fail")
            # nvcc: one int8 and one int4-with-zero-points file, both architectures in one call
            kind = expect[0].split(",")[0] + ("z" if "zero point" in expect[0] else "") + \
                ("/fast" if len(expect) > 1 else "")
            if not ok or kind in compiled or kind == "int4 weights":
                continue
            compiled.add(kind)
            if not nvcc:
                print(f"skip {name} nvcc: nvcc not found on PATH or under /usr/local/cuda*/bin")
                tally.add("skip")
                continue
            c = rltest.run([nvcc, "-gencode", "arch=compute_90,code=sm_90", "-gencode",
                            "arch=compute_80,code=sm_80", "-Werror", "all-warnings", "-Xcompiler",
                            "-Wall,-Wextra,-Werror", "-c", cu, "-o", cu[:-3] + ".o"], timeout=300)
            print(f"{'ok  ' if c.ok else 'FAIL'} {name} nvcc sm_90 + sm_80"
                  + (f" ({c.seconds:.1f} s)" if c.ok else ": " + c.describe(20)))
            tally.add("pass" if c.ok else "fail")
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
