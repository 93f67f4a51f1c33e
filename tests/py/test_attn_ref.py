#!/usr/bin/env python3
"""Attention-family kernels at sizes the ONNX node tests do not reach.

The node tests use at most 18 keys and 4 query rows, so they never leave the
first key chunk or the first block of query rows of the float32 Attention
kernel, and their sequences are shorter than one vector (the SiLU of
CausalConvWithState, Swish). Each case here is a one-node model built with
onnx.helper whose shapes cross those boundaries (several 128-key chunks,
blocks of 32 query rows with a partial last one, causal blocks that end at
the diagonal, grouped heads, past keys, masks of every rank, head sizes
that are and are not multiples of the vector width), and FlexAttention with
score_mod / prob_mod graphs (which the reader writes out as MatMul, the
modifier, Softmax and MatMul) at grouped heads, several keys per query,
double and float16; it runs through
`rlopt run` (plus --rlopt-args) and every output is compared with
onnx.reference.ReferenceEvaluator (rtol 1e-3, atol 1e-5; same shape and
dtype).

Ends with "N passed, N failed, N skipped"; exits non-zero on a failure.
"""

import os
import shlex
import shutil
import sys
import tempfile
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

F32, F16, I64, BOOL = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64, TensorProto.BOOL
F64 = TensorProto.DOUBLE
NP = {F32: np.float32, F16: np.float16, F64: np.float64, I64: np.int64, BOOL: np.bool_}
PREVIEW = "ai.onnx.preview"


def case(name, op, inputs, outputs, opset, domain="", **attrs):
    """inputs: [(name or '', dtype, shape)], outputs: [(name or '', dtype)];
    a domain other than the default one is imported at version 1."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    vis, feeds = [], {}
    for nm, et, shape in inputs:
        if not nm:
            continue
        vis.append(helper.make_tensor_value_info(nm, et, shape))
        if et == BOOL:
            feeds[nm] = rng.random(shape) < 0.7
        elif et == I64:
            feeds[nm] = rng.integers(0, attrs.pop("_imax", 8), size=shape).astype(np.int64)
        else:
            feeds[nm] = rng.uniform(-1.0, 1.0, size=shape).astype(NP[et])
    node = helper.make_node(op, [i[0] for i in inputs], [o[0] for o in outputs], domain=domain or None,
                            **attrs)
    outs = [helper.make_tensor_value_info(nm, et, None) for nm, et in outputs if nm]
    g = helper.make_graph([node], name, vis, outs)
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    m = helper.make_model(g, opset_imports=imports)
    ref = ReferenceEvaluator(m).run(None, feeds)
    # declare the output shapes the reference gives (as the node tests do)
    del m.graph.output[:]
    for (nm, et), r in zip([o for o in outputs if o[0]], ref):
        m.graph.output.append(helper.make_tensor_value_info(nm, et, list(r.shape)))
    return name, m, feeds, ref


def mod_graph(name, dt, nodes, inits):
    """A FlexAttention modifier: one [B, H, L, S] tensor "x" in, "y" out."""
    io = [helper.make_tensor_value_info(n, dt, ["B", "H", "L", "S"]) for n in ("x", "y")]
    return helper.make_graph(nodes, name, io[:1], io[1:], inits)


def causal_offset_mod(dt):
    """Where(k_idx <= q_idx + (S - L), x, -inf): the queries are the last L
    of S positions (a decode step after a prefix), from Shape and Range."""
    i64 = lambda n, v, s=(): helper.make_tensor(n, I64, list(s), v)  # noqa: E731
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"]),
        helper.make_node("Gather", ["shp", "i2"], ["L"], axis=0),
        helper.make_node("Gather", ["shp", "i3"], ["S"], axis=0),
        helper.make_node("Sub", ["S", "L"], ["off"]),
        helper.make_node("Range", ["zero", "L", "one"], ["qr"]),
        helper.make_node("Add", ["qr", "off"], ["qo"]),
        helper.make_node("Reshape", ["qo", "qshape"], ["q"]),
        helper.make_node("Range", ["zero", "S", "one"], ["k"]),
        helper.make_node("LessOrEqual", ["k", "q"], ["keep"]),
        helper.make_node("Where", ["keep", "x", "ninf"], ["y"]),
    ]
    inits = [i64("zero", [0]), i64("one", [1]), i64("i2", [2]), i64("i3", [3]),
             i64("qshape", [-1, 1], [2]), helper.make_tensor("ninf", dt, [], [float("-inf")])]
    return mod_graph("causal_offset", dt, nodes, inits)


def softcap_rel_mod(dt, cap):
    """cap * tanh(x / cap) + 0.1 * (q_idx - k_idx)."""
    i64 = lambda n, v, s=(): helper.make_tensor(n, I64, list(s), v)  # noqa: E731
    nodes = [
        helper.make_node("Div", ["x", "cap"], ["xs"]),
        helper.make_node("Tanh", ["xs"], ["t"]),
        helper.make_node("Mul", ["t", "cap"], ["c"]),
        helper.make_node("Shape", ["x"], ["shp"]),
        helper.make_node("Gather", ["shp", "i2"], ["L"], axis=0),
        helper.make_node("Gather", ["shp", "i3"], ["S"], axis=0),
        helper.make_node("Range", ["zero", "L", "one"], ["qr"]),
        helper.make_node("Reshape", ["qr", "qshape"], ["q"]),
        helper.make_node("Range", ["zero", "S", "one"], ["k"]),
        helper.make_node("Sub", ["q", "k"], ["rel"]),
        helper.make_node("Cast", ["rel"], ["relf"], to=dt),
        helper.make_node("Mul", ["relf", "tenth"], ["bias"]),
        helper.make_node("Add", ["c", "bias"], ["y"]),
    ]
    inits = [i64("zero", [0]), i64("one", [1]), i64("i2", [2]), i64("i3", [3]),
             i64("qshape", [-1, 1], [2]), helper.make_tensor("cap", dt, [], [cap]),
             helper.make_tensor("tenth", dt, [], [0.1])]
    return mod_graph("softcap_rel", dt, nodes, inits)


def dropout_like_mod(dt):
    """Zero the probabilities below 1 / (2 S) and scale the rest by 1.25."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], start=3),
        helper.make_node("Cast", ["shp"], ["sf"], to=dt),
        helper.make_node("Mul", ["sf", "two"], ["den"]),
        helper.make_node("Reciprocal", ["den"], ["thr"]),
        helper.make_node("Less", ["x", "thr"], ["small"]),
        helper.make_node("Mul", ["x", "k"], ["big"]),
        helper.make_node("Where", ["small", "zero", "big"], ["y"]),
    ]
    inits = [helper.make_tensor("two", dt, [], [2.0]), helper.make_tensor("k", dt, [], [1.25]),
             helper.make_tensor("zero", dt, [], [0.0])]
    return mod_graph("dropout_like", dt, nodes, inits)


def cases():
    B, H = 1, 4
    yield case("attention_4d_chunks_blocks", "Attention",
               [("Q", F32, [B, H, 70, 32]), ("K", F32, [B, H, 300, 32]), ("V", F32, [B, H, 300, 32])],
               [("Y", F32)], 23)
    yield case("attention_4d_causal_gqa_past", "Attention",
               [("Q", F32, [2, 8, 40, 24]), ("K", F32, [2, 2, 40, 24]), ("V", F32, [2, 2, 40, 40]),
                ("", 0, None), ("pk", F32, [2, 2, 150, 24]), ("pv", F32, [2, 2, 150, 40])],
               [("Y", F32), ("pk_out", F32), ("pv_out", F32)], 23, is_causal=1)
    yield case("attention_3d_mask_softcap_qk", "Attention",
               [("Q", F32, [2, 33, 64]), ("K", F32, [2, 200, 64]), ("V", F32, [2, 200, 48]),
                ("mask", F32, [33, 200])],
               [("Y", F32), ("", 0), ("", 0), ("qk", F32)], 23,
               q_num_heads=4, kv_num_heads=4, softcap=5.0, qk_matmul_output_mode=1)
    # a bool mask with is_causal is not here: the reference turns every
    # allowed position into NaN ((1 - True) * -inf); rlopt adds 0 there
    yield case("attention_4d_bool_mask_short_softmax_out", "Attention",
               [("Q", F32, [1, 2, 50, 16]), ("K", F32, [1, 2, 140, 16]), ("V", F32, [1, 2, 140, 16]),
                ("mask", BOOL, [1, 2, 50, 100])],
               [("Y", F32), ("", 0), ("", 0), ("qk", F32)], 23, qk_matmul_output_mode=3)
    yield case("attention_4d_float_mask3d_causal_bias_out", "Attention",
               [("Q", F32, [1, 2, 50, 16]), ("K", F32, [1, 2, 140, 16]), ("V", F32, [1, 2, 140, 16]),
                ("mask", F32, [2, 50, 120])],
               [("Y", F32), ("", 0), ("", 0), ("qk", F32)], 23, is_causal=1, qk_matmul_output_mode=2)
    yield case("attention_4d_causal_raw_scores", "Attention",
               [("Q", F32, [1, 2, 37, 16]), ("K", F32, [1, 2, 37, 16]), ("V", F32, [1, 2, 37, 16])],
               [("Y", F32), ("", 0), ("", 0), ("qk", F32)], 23, is_causal=1, qk_matmul_output_mode=0)
    yield case("attention_fp16_long", "Attention",
               [("Q", F16, [1, 2, 20, 16]), ("K", F16, [1, 2, 160, 16]), ("V", F16, [1, 2, 160, 16])],
               [("Y", F16)], 23)
    yield case("causal_conv_silu_long", "CausalConvWithState",
               [("x", F32, [2, 3, 37]), ("w", F32, [3, 1, 4]), ("bias", F32, [3]),
                ("ps", F32, [2, 3, 3])],
               [("y", F32), ("state", F32)], 27, activation="silu")
    yield case("swish_long", "Swish", [("x", F32, [5, 23])], [("y", F32)], 24, alpha=0.7)
    yield case("linear_attention_long", "LinearAttention",
               [("q", F32, [2, 21, 64]), ("k", F32, [2, 21, 32]), ("v", F32, [2, 21, 48]),
                ("", 0, None), ("decay", F32, [2, 21, 2]), ("beta", F32, [2, 21, 2])],
               [("y", F32), ("state", F32)], 27, q_num_heads=4, kv_num_heads=2)
    # FlexAttention with modifier graphs: grouped heads, more keys than
    # queries, both modifiers, an explicit scale, double, float16
    yield case("flex_gqa_causal_offset", "FlexAttention",
               [("Q", F32, [2, 8, 40, 24]), ("K", F32, [2, 2, 150, 24]), ("V", F32, [2, 2, 150, 40])],
               [("Y", F32)], 26, PREVIEW, score_mod=causal_offset_mod(F32))
    yield case("flex_score_and_prob_mod_scaled", "FlexAttention",
               [("Q", F32, [1, 4, 33, 16]), ("K", F32, [1, 4, 70, 16]), ("V", F32, [1, 4, 70, 8])],
               [("Y", F32)], 26, PREVIEW, scale=0.3, score_mod=softcap_rel_mod(F32, 2.0),
               prob_mod=dropout_like_mod(F32))
    yield case("flex_double_prob_mod_gqa", "FlexAttention",
               [("Q", F64, [2, 6, 9, 8]), ("K", F64, [2, 3, 21, 8]), ("V", F64, [2, 3, 21, 5])],
               [("Y", F64)], 26, PREVIEW, prob_mod=dropout_like_mod(F64))
    yield case("flex_fp16_score_mod", "FlexAttention",
               [("Q", F16, [1, 2, 12, 16]), ("K", F16, [1, 2, 30, 16]), ("V", F16, [1, 2, 30, 16])],
               [("Y", F16)], 26, PREVIEW, score_mod=softcap_rel_mod(F32, 5.0))


def main():
    ap = rltest.make_parser(__doc__)
    ap.add_argument("--rlopt-args", default="", help="extra rlopt arguments")
    args = ap.parse_args()
    t = rltest.Tally()
    extra = shlex.split(args.rlopt_args)
    tmp = tempfile.mkdtemp(prefix="rlopt-attn-")
    try:
        for name, m, feeds, ref in cases():
            d = os.path.join(tmp, name)
            os.makedirs(d)
            mp = os.path.join(d, "model.onnx")
            onnx.save(m, mp)
            cmd = [args.rlopt, "run", mp, "-d", os.path.join(d, "out")] + extra
            for i, vi in enumerate(m.graph.input):
                p = os.path.join(d, f"in{i}.pb")
                rltest.write_pb(p, feeds[vi.name], vi.name)
                cmd += ["-i", p]
            r = rltest.run(cmd, timeout=300)
            if not r.ok:
                print(f"FAIL {name}: {r.describe()}")
                t.add("fail")
                continue
            ok = True
            for k, want in enumerate(ref):
                _, got = rltest.read_pb(os.path.join(d, "out", f"output_{k}.pb"))
                good, msg, _, _ = rltest.compare(got, want, rtol=1e-3, atol=1e-5)
                if not good:
                    print(f"FAIL {name} output {k}: {msg}")
                    ok = False
            t.add("pass" if ok else "fail")
            if ok and args.verbose:
                print(f"ok   {name}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
