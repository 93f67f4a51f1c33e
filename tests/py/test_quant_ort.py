#!/usr/bin/env python3
"""Quantized models end to end against onnxruntime (and numpy where
onnxruntime has no kernel).

The ONNX node tests of the quantization operators are tiny (a 2 x 4 by
4 x 3 QLinearMatMul); these models have the shapes that take the blocked
integer product's other paths (row and column tails, several column
blocks, threads, batch broadcasting, per-row and per-column zero points)
and the QDQ form real exporters write, whose constant DequantizeLinear the
fold pass turns into a float weight at -O2:

  qdq_matmul      x -> Q -> DQ -> MatMul(DQ(int8 weight, per column)) -> Add
  qdq_blocked     MatMul(x, DQ(int8 weight 512 x 256, blocked along K, block 32))
  qdq_tensor      Gemm(x, DQ(uint8 weight, one scale and zero point), transB)
  qlinear_matmul  QLinearMatMul 67 x 300 by 300 x 520, uint8 x int8 (against the
                  ONNX reference evaluator: onnxruntime rounds one near-tie differently)
  matmul_integer  MatMulInteger [2,3,9,40] x [3,40,33], per-row/column zero points
  dynamic_quant   DynamicQuantizeLinear -> MatMulInteger (quantize_dynamic's form)
  qlinear_conv    QLinearConv 2 x 8 x 12 x 12, per-channel weight scales, bias
                  (both against the ONNX reference evaluator: onnxruntime's
                  u8 x s8 kernels saturate on AVX2 CPUs without VNNI)
  lowp_qdq        QuantizeLinear/DequantizeLinear with float8 (all four), float4e2m1,
                  int4/uint4/int2/uint2, per row, on inputs and on constants, edge
                  values (ties, -0, inf, NaN, saturate=0), against the ONNX
                  reference evaluator; low-precision outputs compare exactly

Each runs through `rlopt run` at -O2 and at -O0; integer outputs must match
exactly, float outputs within rtol 1e-4 / atol 1e-5. With --rlopt-args the
flags replace the two levels. At -O2 the qdq_ models must also report their
weight's DequantizeLinear folded (`--remarks`).
"""

import os
import shlex
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

OPSET = 21


def tinfo(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits, opset=OPSET):
    g = helper.make_graph(nodes, "q", inputs, outputs,
                          [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    onnx.checker.check_model(m)
    return m


def case_qdq_matmul(rng):
    K, N = 96, 80
    w = rng.integers(-127, 128, size=(K, N)).astype(np.int8)
    ws = (rng.random(N) * 0.02 + 0.005).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w", "ws"], ["wd"], axis=1),
        helper.make_node("MatMul", ["xd", "wd"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["y"]),
    ]
    inits = [("xs", np.array(0.05, np.float32)), ("xz", np.array(3, np.uint8)),
             ("w", w), ("ws", ws), ("b", b)]
    m = model(nodes, [tinfo("x", TensorProto.FLOAT, [4, K])],
              [tinfo("y", TensorProto.FLOAT, [4, N])], inits)
    return m, [("x", rng.standard_normal((4, K)).astype(np.float32) * 3)], None


def case_qdq_blocked(rng):
    # 131072 weights: past the evaluator's limit, folded by the fold pass itself
    M, K, N, B = 3, 256, 512, 32
    w = rng.integers(-128, 128, size=(N, K)).astype(np.int8)
    ws = (rng.random((N, K // B)) * 0.02 + 0.001).astype(np.float32)
    wz = rng.integers(-5, 5, size=(N, K // B)).astype(np.int8)
    # the weight is stored N x K, blocked along K (axis 1), as MatMulNBits-style
    # exporters write it; a Transpose gives the K x N operand
    nodes = [
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=1, block_size=B),
        helper.make_node("Transpose", ["wd"], ["wt"], perm=[1, 0]),
        helper.make_node("MatMul", ["x", "wt"], ["y"]),
    ]
    inits = [("w", w), ("ws", ws), ("wz", wz)]
    m = model(nodes, [tinfo("x", TensorProto.FLOAT, [M, K])],
              [tinfo("y", TensorProto.FLOAT, [M, N])], inits)
    return m, [("x", rng.standard_normal((M, K)).astype(np.float32))], None


def case_qdq_tensor(rng):
    K, N = 64, 40
    w = rng.integers(0, 256, size=(N, K)).astype(np.uint8)
    nodes = [
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"]),
        helper.make_node("Gemm", ["x", "wd"], ["y"], transB=1),
    ]
    inits = [("w", w), ("ws", np.array(0.007, np.float32)), ("wz", np.array(121, np.uint8))]
    m = model(nodes, [tinfo("x", TensorProto.FLOAT, [2, K])],
              [tinfo("y", TensorProto.FLOAT, [2, N])], inits)
    return m, [("x", rng.standard_normal((2, K)).astype(np.float32))], None


def case_qlinear_matmul(rng):
    M, K, N = 67, 300, 520
    nodes = [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
                              ["y"])]
    inits = [("as", np.array(0.02, np.float32)), ("az", np.array(131, np.uint8)),
             ("b", rng.integers(-128, 128, size=(K, N)).astype(np.int8)),
             ("bs", np.array(0.01, np.float32)), ("bz", np.array(-3, np.int8)),
             ("ys", np.array(0.9, np.float32)), ("yz", np.array(120, np.uint8))]
    m = model(nodes, [tinfo("a", TensorProto.UINT8, [M, K])],
              [tinfo("y", TensorProto.UINT8, [M, N])], inits)
    feeds = [("a", rng.integers(0, 256, size=(M, K)).astype(np.uint8))]
    # onnxruntime requantizes in float and lands one off the reference's
    # double arithmetic on a rare near-tie; rlopt follows the ONNX reference
    from onnx.reference import ReferenceEvaluator
    return m, feeds, ReferenceEvaluator(m).run(None, dict(feeds))


def case_matmul_integer(rng):
    A = rng.integers(0, 256, size=(2, 3, 9, 40)).astype(np.uint8)
    Bw = rng.integers(-128, 128, size=(3, 40, 33)).astype(np.int8)
    az = rng.integers(0, 256, size=(9,)).astype(np.uint8)
    bz = rng.integers(-128, 128, size=(33,)).astype(np.int8)
    nodes = [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])]
    m = model(nodes, [tinfo("a", TensorProto.UINT8, list(A.shape))],
              [tinfo("y", TensorProto.INT32, [2, 3, 9, 33])],
              [("b", Bw), ("az", az), ("bz", bz)])
    # per-row zero points of A as the operator defines them (onnxruntime
    # takes only scalars here): numpy is the reference
    ref = (A.astype(np.int32) - az.astype(np.int32)[:, None]) @ (
        Bw.astype(np.int32) - bz.astype(np.int32))
    return m, [("a", A)], [ref.astype(np.int32)]


def case_dynamic_quant(rng):
    K, N = 64, 300
    w = rng.integers(-128, 128, size=(K, N)).astype(np.int8)
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulInteger", ["xq", "w", "xz"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["xs", "ws"], ["sc"]),
        helper.make_node("Mul", ["accf", "sc"], ["y"]),
    ]
    inits = [("w", w), ("ws", np.array(0.013, np.float32))]
    m = model(nodes, [tinfo("x", TensorProto.FLOAT, [5, K])],
              [tinfo("y", TensorProto.FLOAT, [5, N]), tinfo("xq", TensorProto.UINT8, [5, K])],
              inits)
    feeds = [("x", rng.standard_normal((5, K)).astype(np.float32))]
    return m, feeds, u8s8_reference(m, feeds)


def u8s8_reference(m, feeds):
    """The ONNX reference evaluator's outputs for a uint8 x int8 product.
    Not onnxruntime's: on a CPU with AVX2 but no VNNI (Zen 3, measured) its
    u8 x s8 kernels sum byte pairs in vpmaddubsw's saturating int16, and
    476 of dynamic_quant's 1500 outputs were off the exact result by up to
    5.7 (qlinear_conv: 519 of 864, up to 23 steps); the integer sums here
    are exact, so the reference evaluator is exact too."""
    from onnx.reference import ReferenceEvaluator
    return ReferenceEvaluator(m).run(None, dict(feeds))


def case_qlinear_conv(rng):
    N, C, H, M = 2, 8, 12, 6
    w = rng.integers(-128, 128, size=(M, C, 3, 3)).astype(np.int8)
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"],
                              ["y"], pads=[1, 1, 1, 1], strides=[1, 2])]
    inits = [("xs", np.array(0.03, np.float32)), ("xz", np.array(128, np.uint8)),
             ("w", w), ("ws", (rng.random(M) * 0.01 + 0.002).astype(np.float32)),
             ("wz", np.zeros(M, np.int8)), ("ys", np.array(0.4, np.float32)),
             ("yz", np.array(100, np.uint8)),
             ("B", rng.integers(-500, 500, size=(M,)).astype(np.int32))]
    m = model(nodes, [tinfo("x", TensorProto.UINT8, [N, C, H, H])],
              [tinfo("y", TensorProto.UINT8, [N, M, H, 6])], inits)
    feeds = [("x", rng.integers(0, 256, size=(N, C, H, H)).astype(np.uint8))]
    return m, feeds, u8s8_reference(m, feeds)


# the low-precision quantized dtypes: (onnx elem type, kind, integer range)
LOWP = [
    (TensorProto.FLOAT8E4M3FN, "f8", None), (TensorProto.FLOAT8E4M3FNUZ, "f8", None),
    (TensorProto.FLOAT8E5M2, "f8", None), (TensorProto.FLOAT8E5M2FNUZ, "f8", None),
    (TensorProto.FLOAT4E2M1, "f4", None),
    (TensorProto.INT4, "int", (-8, 7)), (TensorProto.UINT4, "int", (0, 15)),
    (TensorProto.INT2, "int", (-2, 1)), (TensorProto.UINT2, "int", (0, 3)),
]


def case_lowp_qdq(rng):
    """QuantizeLinear to and DequantizeLinear from every low-precision type,
    per row (axis 0), each on a graph input (the C kernel) and on a constant
    (constant evaluation), against the ONNX reference evaluator."""
    R, C = 3, 48
    from onnx.helper import tensor_dtype_to_np_dtype as np_of
    sc = np.array([1.0, 0.37, 3.1], np.float32)
    # ties, signed zeros, subnormal and huge quotients, infinities and NaN
    edge = np.array([0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 0.25, 0.75, 1.25, 5.0, -5.0, 6.5,
                     1e-9, -1e-9, 300.0, -300.0, 1e6, -1e6, 57344.0, 61440.0, 464.0,
                     np.inf, -np.inf, np.nan], np.float32)
    x = (rng.standard_normal((R, C)) * 4).astype(np.float32)
    x[:, :edge.size] = edge[None, :] * sc[:, None]
    x[1, :edge.size] = edge  # not multiples of the scale
    xi = np.where(np.isfinite(x), x, 0).astype(np.float32)  # int kinds: NaN/inf undefined
    nodes, outs, inits = [], [], [("sc", sc), ("sh", sc.astype(np.float16)), ("xc", x),
                                  ("xic", xi)]
    feeds = [("x", x), ("xi", xi)]
    ins = [tinfo("x", TensorProto.FLOAT, [R, C]), tinfo("xi", TensorProto.FLOAT, [R, C])]

    def out(name, t):
        outs.append(tinfo(name, t, [R, C]))

    for t, kind, rng_ in LOWP:
        nm = helper.tensor_dtype_to_string(t).split(".")[-1].lower()
        npt = np_of(t)
        if kind == "int":
            z = rng.integers(rng_[0], rng_[1] + 1, size=R).astype(npt)
            codes = rng.integers(rng_[0], rng_[1] + 1, size=(R, C)).astype(npt)
        else:
            if kind == "f4":
                z = np.array([0.0, 0.5, -1.0], np.float32).astype(npt)
            else:
                z = np.zeros(R, npt)
            ncode = 16 if kind == "f4" else 256
            codes = rng.integers(0, ncode, size=(R, C)).astype(np.uint8)
            codes[0, :min(C, ncode)] = np.arange(min(C, ncode))
            codes = codes.view(npt)
        src = "xi" if kind == "int" else "x"
        inits += [(f"z_{nm}", z), (f"c_{nm}", codes)]
        feeds.append((f"d_{nm}", codes))
        ins.append(tinfo(f"d_{nm}", t, [R, C]))
        for v, xin in (("run", src), ("const", src + "c")):
            nodes.append(helper.make_node("QuantizeLinear", [xin, "sc", f"z_{nm}"],
                                          [f"q_{nm}_{v}"], axis=0))
            out(f"q_{nm}_{v}", t)
            d_in = f"d_{nm}" if v == "run" else f"c_{nm}"
            nodes.append(helper.make_node("DequantizeLinear", [d_in, "sc", f"z_{nm}"],
                                          [f"dq_{nm}_{v}"], axis=0))
            out(f"dq_{nm}_{v}", TensorProto.FLOAT)
            if kind == "f8":
                # saturate=0, no zero point; dequantized to float16
                nodes.append(helper.make_node("QuantizeLinear", [xin, "sc"], [f"qn_{nm}_{v}"],
                                              axis=0, saturate=0, output_dtype=t))
                out(f"qn_{nm}_{v}", t)
                nodes.append(helper.make_node("DequantizeLinear", [d_in, "sh"],
                                              [f"dh_{nm}_{v}"], axis=0))
                out(f"dh_{nm}_{v}", TensorProto.FLOAT16)
    m = model(nodes, ins, outs, inits)
    from onnx.reference import ReferenceEvaluator
    with np.errstate(all="ignore"):
        ref = ReferenceEvaluator(m).run(None, dict(feeds))
    return m, feeds, ref


def lowp_compare(got, expected):
    """Exact compare of low-precision arrays (ml_dtypes): integer kinds by
    value, float kinds by code, any NaN code matching any NaN."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.dtype != expected.dtype or got.shape != expected.shape:
        return False, f"{got.dtype}{list(got.shape)} != expected {expected.dtype}{list(expected.shape)}"
    if "int" in expected.dtype.name:
        bad = got.astype(np.int32) != expected.astype(np.int32)
    else:
        mask = 0xF if "float4" in expected.dtype.name else 0xFF
        gb, eb = got.view(np.uint8) & mask, expected.view(np.uint8) & mask
        with np.errstate(all="ignore"):
            nan = np.isnan(got.astype(np.float32)) & np.isnan(expected.astype(np.float32))
        bad = (gb != eb) & ~nan
    if not bad.any():
        return True, ""
    idx = np.unravel_index(int(np.argmax(bad)), bad.shape)
    return False, (f"{int(bad.sum())}/{bad.size} differ; first at {list(map(int, idx))}: got "
                   f"{got[idx]!r} ({got.view(np.uint8)[idx]:#x}), expected {expected[idx]!r} "
                   f"({expected.view(np.uint8)[idx]:#x})")


def is_lowp(a):
    return np.asarray(a).dtype.itemsize == 1 and np.asarray(a).dtype.name not in (
        "int8", "uint8", "bool")


CASES = [
    ("qdq_matmul", case_qdq_matmul),
    ("qdq_blocked", case_qdq_blocked),
    ("qdq_tensor", case_qdq_tensor),
    ("qlinear_matmul", case_qlinear_matmul),
    ("matmul_integer", case_matmul_integer),
    ("dynamic_quant", case_dynamic_quant),
    ("qlinear_conv", case_qlinear_conv),
    ("lowp_qdq", case_lowp_qdq),
]


def ort_run(path, feeds):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, dict(feeds))


def check(name, m, feeds, ref, args, flags, work):
    d = os.path.join(work, name + "".join(f.strip("-") for f in flags))
    out = os.path.join(d, "out")
    os.makedirs(out)
    path = os.path.join(d, name + ".onnx")
    onnx.save(m, path)
    if ref is None:
        ref = ort_run(path, feeds)
    cmd = [args.rlopt, "run", path]
    for k, (iname, a) in enumerate(feeds):
        p = os.path.join(d, f"input_{k}.pb")
        rltest.write_pb(p, a, iname)
        cmd += ["-i", p]
    cmd += ["-d", out] + flags
    r = rltest.run(cmd, timeout=args.timeout)
    if not r.ok:
        return False, f"rlopt run: {r.describe()}"
    if name.startswith("qdq_") and "--remarks" in flags and not any(
            "DequantizeLinear" in ln and "folded" in ln
            for ln in (r.stdout + r.stderr).splitlines()):
        return False, "the weight's DequantizeLinear was not folded at -O2"
    for k, expected in enumerate(ref):
        _, got = rltest.read_pb(os.path.join(out, f"output_{k}.pb"))
        if is_lowp(expected):
            ok, msg = lowp_compare(got, expected)
        else:
            ok, msg, _, _ = rltest.compare(got, np.asarray(expected), rtol=1e-4, atol=1e-5)
        if not ok:
            return False, f"output {k}: {msg}"
    return True, ""


def main():
    ap = rltest.make_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--rlopt-args", default=None,
                    help="flags for `rlopt run` (default: one run with -O2 --remarks, one with -O0)")
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args()
    if not args.rlopt:
        ap.error("--rlopt is required")
    levels = [shlex.split(args.rlopt_args)] if args.rlopt_args is not None else \
        [["-O2", "--remarks"], ["-O0"]]
    work = tempfile.mkdtemp(prefix="rlopt-quant.")
    tally = rltest.Tally()
    try:
        for name, make in CASES:
            m, feeds, ref = make(np.random.default_rng(7))
            for flags in levels:
                try:
                    ok, msg = check(name, m, feeds, ref, args, flags, work)
                except Exception as e:  # one broken case must not hide the others
                    ok, msg = False, f"driver error: {type(e).__name__}: {e}"
                tally.add("pass" if ok else "fail")
                label = f"{name} {' '.join(flags)}"
                print(f"{'PASS' if ok else 'FAIL'} {label:<32} {msg}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
