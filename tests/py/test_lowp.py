"""Low-precision casts against the onnx reference (ml_dtypes), bit for bit.

Each case is a one-node model (Cast, or BitCast) run through `rlopt run`
twice: with the data as a graph input (the generated code's conversion
helpers, backends/c/emit_lowp.c) and as an initializer (constant
evaluation, ir/lowp.c). The inputs hold every float16 value widened to
float32 (so every float8/float4 rounding midpoint and its neighbours) and
random float32 bit patterns; the results must equal onnx's
ReferenceEvaluator bit for bit (any NaN matches any NaN).

Integer targets (int4, uint4, int2, uint2) get in-range inputs only: onnx
leaves an out-of-range float-to-integer cast undefined, and the backend
test data (wrap) and this ml_dtypes (zero) disagree there.
"""

import os
import shutil
import sys
import tempfile

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

F8 = [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2,
      TensorProto.FLOAT8E5M2FNUZ]
INTS = [TensorProto.INT4, TensorProto.UINT4, TensorProto.INT2, TensorProto.UINT2]
NAME = {v: k for k, v in TensorProto.DataType.items()}


def floats(n_rand=30000, seed=7):
    """every float16 value as float32, then random float32 bit patterns"""
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    r = np.random.default_rng(seed).integers(0, 2**32, n_rand, dtype=np.uint64)
    return np.concatenate([h, r.astype(np.uint32).view(np.float32)])


def cast_model(x, to, const, opset=25, op="Cast", **attrs):
    xt = helper.np_dtype_to_tensor_dtype(x.dtype)
    node = helper.make_node(op, ["x"], ["y"], name="c", to=to, **attrs)
    y = helper.make_tensor_value_info("y", to, list(x.shape))
    if const:
        g = helper.make_graph([node], "g", [], [y], [numpy_helper.from_array(x, "x")])
    else:
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", xt, list(x.shape))],
                              [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=11)


def same_bits(got, exp):
    """(ok, message): equal bits, any NaN matching any NaN"""
    if got.shape != exp.shape or got.dtype != exp.dtype:
        return False, f"got {got.dtype}{list(got.shape)}, expected {exp.dtype}{list(exp.shape)}"
    ut = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    gb, eb = got.view(ut), exp.view(ut)
    bad = gb != eb
    if got.dtype.kind not in "iub":
        with np.errstate(invalid="ignore"):
            gf, ef = got.astype(np.float64), exp.astype(np.float64)
        bad &= ~(np.isnan(gf) & np.isnan(ef))
    n = int(bad.sum())
    if n == 0:
        return True, ""
    i = int(np.argmax(bad.ravel()))
    return False, (f"{n}/{bad.size} differ; first at {i}: got {got.ravel()[i]!r} "
                   f"(0x{int(gb.ravel()[i]):x}), expected {exp.ravel()[i]!r} "
                   f"(0x{int(eb.ravel()[i]):x})")


def main():
    ap = rltest.make_parser(__doc__.split("\n\n")[0])
    args = ap.parse_args()
    t = rltest.Tally()
    d = tempfile.mkdtemp(prefix="rl_lowp_")
    n = [0]

    def case(name, x, to, const=False, **kw):
        n[0] += 1
        m = cast_model(x, to, const, **kw)
        mp = os.path.join(d, f"m{n[0]}.onnx")
        onnx.save(m, mp)
        exp = ReferenceEvaluator(m).run(None, {} if const else {"x": x})[0]
        cmd = [args.rlopt, "run", mp, "-d", os.path.join(d, f"o{n[0]}")]
        if not const:
            xin = os.path.join(d, f"x{n[0]}.pb")
            rltest.write_pb(xin, x, "x")
            cmd += ["-i", xin]
        r = rltest.run(cmd, timeout=300)
        if r.ok:
            _, got = rltest.read_pb(os.path.join(d, f"o{n[0]}", "output_0.pb"))
            ok, msg = same_bits(got, exp)
        else:
            ok, msg = False, r.describe(6)
        label = f"{name} ({'constant' if const else 'run'})"
        t.add("pass" if ok else "fail")
        if not ok or args.verbose:
            print(f"  {'pass' if ok else 'FAIL'}: {label}{': ' + msg if msg else ''}", flush=True)

    try:
        x = floats()
        xc = x[:65536]
        for to in F8:
            for sat in (1, 0):
                for const in (False, True):
                    case(f"float -> {NAME[to]} saturate={sat}", xc if const else x, to, const,
                         saturate=sat)
            case(f"float16 -> {NAME[to]}", xc.astype(np.float16), to)
            case(f"float64 -> {NAME[to]}", x.astype(np.float64) * (1 + 2.0**-30), to)
        case("float -> FLOAT4E2M1", x, TensorProto.FLOAT4E2M1)
        case("float -> FLOAT4E2M1", xc, TensorProto.FLOAT4E2M1, const=True)
        pos = np.abs(x[np.isfinite(x)])
        for mode in ("up", "down", "nearest"):
            for sat in (1, 0):
                case(f"float -> FLOAT8E8M0 round_mode={mode} saturate={sat}", pos,
                     TensorProto.FLOAT8E8M0, saturate=sat, round_mode=mode)
        case("float -> FLOAT8E8M0 (default)", pos[:60000], TensorProto.FLOAT8E8M0, const=True)
        # every code back to float and float16
        for frm in F8 + [TensorProto.FLOAT8E8M0, TensorProto.FLOAT4E2M1]:
            npt = helper.tensor_dtype_to_np_dtype(frm)
            if frm == TensorProto.FLOAT4E2M1:  # all 16 codes, by value
                c = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6],
                             dtype=np.float32).astype(npt)
            else:
                c = np.arange(256, dtype=np.uint8).view(npt)
            for to in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE):
                case(f"{NAME[frm]} -> {NAME[to]}", c, to)
            case(f"{NAME[frm]} -> FLOAT", c, TensorProto.FLOAT, const=True)
        # integer kinds, in range
        for to in INTS:
            info = ml_dtypes.iinfo(helper.tensor_dtype_to_np_dtype(to))
            fx = np.linspace(info.min - 0.9, info.max + 0.9, 77).astype(np.float32)
            case(f"float -> {NAME[to]}", fx, to)
            case(f"float -> {NAME[to]}", fx, to, const=True)
            ix = (np.arange(-40, 40).astype(np.int8) if info.min < 0
                  else np.arange(0, 80).astype(np.uint8))
            case(f"int8 -> {NAME[to]} (wraps)", ix, to)
            v = np.arange(info.min, info.max + 1).astype(helper.tensor_dtype_to_np_dtype(to))
            case(f"{NAME[to]} -> FLOAT", v, TensorProto.FLOAT)
            case(f"{NAME[to]} -> INT32", v, TensorProto.INT32, const=True)
        # BitCast between one-byte kinds and between sub-byte kinds
        b = np.arange(256, dtype=np.uint8)
        for to in F8 + [TensorProto.INT8, TensorProto.FLOAT8E8M0]:
            case(f"BitCast uint8 -> {NAME[to]}", b, to, opset=26, op="BitCast")
        i4 = np.arange(-8, 8).astype(ml_dtypes.int4)
        case("BitCast int4 -> UINT4", i4, TensorProto.UINT4, opset=26, op="BitCast")
        case("BitCast int4 -> FLOAT4E2M1", i4, TensorProto.FLOAT4E2M1, opset=26, op="BitCast")
        u2 = np.arange(0, 4).astype(ml_dtypes.uint2)
        case("BitCast uint2 -> INT2", u2, TensorProto.INT2, opset=26, op="BitCast")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    sys.exit(t.finish())


if __name__ == "__main__":
    main()
