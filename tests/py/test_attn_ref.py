#!/usr/bin/env python3
"""Attention-family kernels at sizes the ONNX node tests do not reach.

The node tests use at most 18 keys and 4 query rows, so they never leave the
first key chunk or the first block of query rows of the float32 Attention
kernel, and their sequences are shorter than one vector (the SiLU of
CausalConvWithState, Swish). Each case here is a one-node model built with
onnx.helper whose shapes cross those boundaries (several 128-key chunks,
blocks of 32 query rows with a partial last one, causal blocks that end at
the diagonal, grouped heads, past keys, masks of every rank, head sizes
that are and are not multiples of the vector width); it runs through
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
NP = {F32: np.float32, F16: np.float16, I64: np.int64, BOOL: np.bool_}


def case(name, op, inputs, outputs, opset, **attrs):
    """inputs: [(name or '', dtype, shape)], outputs: [(name or '', dtype)]."""
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
    node = helper.make_node(op, [i[0] for i in inputs], [o[0] for o in outputs], **attrs)
    outs = [helper.make_tensor_value_info(nm, et, None) for nm, et in outputs if nm]
    g = helper.make_graph([node], name, vis, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    ref = ReferenceEvaluator(m).run(None, feeds)
    # declare the output shapes the reference gives (as the node tests do)
    del m.graph.output[:]
    for (nm, et), r in zip([o for o in outputs if o[0]], ref):
        m.graph.output.append(helper.make_tensor_value_info(nm, et, list(r.shape)))
    return name, m, feeds, ref


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
