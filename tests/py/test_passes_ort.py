#!/usr/bin/env python3
"""End-to-end checks of the cleanup and pattern passes against onnxruntime.

Each case is a small model built here with onnx.helper: LayerNorm written
out (Pow and Mul-self variants, opset 17 attributes and opset 18 inputs),
erf-GELU and tanh-GELU in their common orderings, written-out Softmax,
Conv+BatchNormalization, Gemm+BN, MatMul(+Add)+BN, duplicate subexpressions
and duplicate weights, constant folding (Shape arithmetic, Transpose/Cast of
a large initializer, a weight times a scale), plus the shapes passes get
wrong: shared values, graph outputs in the middle of a chain, values that
are both graph outputs and consumed, broadcasting from rank 0 to rank 6,
and dtype changes inside a chain. For every case:

  1. onnxruntime runs the model on random inputs (fixed seed): the reference;
  2. `rlopt run MODEL -O2` and `rlopt run MODEL -O0` must both match it
     (rtol 1e-3, atol 1e-4, same shape and dtype);
  3. `rlopt MODEL -o OUT.onnx --remarks` must print the expected remarks on
     stderr (`remark: PASS: NODE: VERDICT: MSG ...`), and OUT.onnx must pass
     onnx.checker and give the same results in onnxruntime;
  4. where the case says so, `rlopt MODEL -o OUT.c --remarks` must print the
     remarks the C path expects (rewrites the ONNX path declines).

Ends with "N passed, N failed, N skipped"; exits non-zero on a failure.
"""

import fnmatch
import os
import re
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

F32 = TensorProto.FLOAT
F64 = TensorProto.DOUBLE


# ---- building models --------------------------------------------------------


class B:
    """A graph under construction: nodes, initializers, unique names."""

    def __init__(self, seed=0):
        self.nodes = []
        self.inits = []
        self.rng = np.random.default_rng(seed)
        self.k = 0

    def name(self, base):
        self.k += 1
        return f"{base}_{self.k}"

    def init(self, base, arr, exact_name=False):
        n = base if exact_name else self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def f(self, base, v, dt=np.float32):
        return self.init(base, np.array(v, dtype=dt))

    def op(self, op_type, inputs, outputs=None, name=None, **attrs):
        name = name or self.name(op_type.lower())
        if outputs is None:
            outputs = [name + "_out"]
        elif isinstance(outputs, str):
            outputs = [outputs]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=name, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def model(self, inputs, outputs, opset):
        g = helper.make_graph(self.nodes, "test", inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="test_passes_ort")
        m.ir_version = 8 if opset < 19 else 9 if opset < 21 else 10
        onnx.checker.check_model(m)
        return m


def vi(name, shape, dt=F32):
    return helper.make_tensor_value_info(name, dt, shape)


def reduce(b, op, x, axes, opset, keepdims=1):
    """Reduce* with axes as attribute or input, as the opset wants."""
    since = 13 if op == "ReduceSum" else 18
    if opset >= since:
        return b.op(op, [x, b.init("axes", np.array(axes, dtype=np.int64))], keepdims=keepdims)
    return b.op(op, [x], axes=axes, keepdims=keepdims)


def layernorm(b, x, D, opset, axes=(-1,), square="pow", recip=False, gamma=True, beta=True,
              eps=1e-5, dt=np.float32, gshape=None, out=None):
    m = reduce(b, "ReduceMean", x, list(axes), opset)
    d = b.op("Sub", [x, m])
    if square == "pow":
        p = b.op("Pow", [d, b.f("two", 2.0, dt)])
    else:
        p = b.op("Mul", [d, d])
    v = reduce(b, "ReduceMean", p, list(axes), opset)
    ve = b.op("Add", [v, b.f("eps", eps, dt)])
    s = b.op("Sqrt", [ve])
    if recip:
        r = b.op("Reciprocal", [s])
        y = b.op("Mul", [d, r], outputs=None if (gamma or beta) else out)
    else:
        y = b.op("Div", [d, s], outputs=None if (gamma or beta) else out)
    if gamma:
        g = b.init("gamma", (1 + 0.1 * b.rng.standard_normal(gshape or D)).astype(dt))
        y = b.op("Mul", [y, g], outputs=None if beta else out)
    if beta:
        bb = b.init("beta", (0.1 * b.rng.standard_normal(gshape or D)).astype(dt))
        y = b.op("Add", [bb, y], outputs=out)
    return y


def gelu_erf(b, x, form, div=True, out=None):
    if div:
        t = b.op("Div", [x, b.f("sqrt2", 1.4142)])
    else:
        t = b.op("Mul", [b.f("rsqrt2", 0.7071), x])
    e = b.op("Erf", [t])
    a = b.op("Add", [b.f("one", 1.0), e])
    half = b.f("half", 0.5)
    if form == 1:  # (x * a) * 0.5
        m = b.op("Mul", [x, a])
        return b.op("Mul", [m, half], outputs=out)
    if form == 2:  # (x * 0.5) * a
        h = b.op("Mul", [half, x])
        return b.op("Mul", [h, a], outputs=out)
    h = b.op("Mul", [a, half])  # x * (a * 0.5)
    return b.op("Mul", [x, h], outputs=out)


def gelu_tanh(b, x, cube="pow", out=None):
    if cube == "pow":
        p = b.op("Pow", [x, b.f("three", 3.0)])
    else:
        sq = b.op("Mul", [x, x])
        p = b.op("Mul", [x, sq])
    q = b.op("Mul", [b.f("c", 0.044715), p])
    r = b.op("Add", [x, q])
    s = b.op("Mul", [r, b.f("k", 0.7978845608)])
    t = b.op("Tanh", [s])
    a = b.op("Add", [t, b.f("one", 1.0)])
    h = b.op("Mul", [x, b.f("half", 0.5)])
    return b.op("Mul", [h, a], outputs=out)


def softmax(b, x, axis, opset, out=None):
    mx = reduce(b, "ReduceMax", x, [axis], opset)
    d = b.op("Sub", [x, mx])
    e = b.op("Exp", [d])
    s = reduce(b, "ReduceSum", e, [axis], opset)
    return b.op("Div", [e, s], outputs=out)


def bn(b, x, C, out="y", eps=1e-5):
    sc = b.init("bn_scale", (1 + 0.2 * b.rng.standard_normal(C)).astype(np.float32))
    bi = b.init("bn_bias", (0.2 * b.rng.standard_normal(C)).astype(np.float32))
    me = b.init("bn_mean", (0.2 * b.rng.standard_normal(C)).astype(np.float32))
    va = b.init("bn_var", (0.5 + b.rng.random(C)).astype(np.float32))
    return b.op("BatchNormalization", [x, sc, bi, me, va], outputs=out, epsilon=eps)


def w(b, base, shape, scale=0.3):
    return b.init(base, (scale * b.rng.standard_normal(shape)).astype(np.float32))


# ---- the cases ---------------------------------------------------------------
# Each returns (model, onnx_remarks, c_remarks): regexes that must match some
# remark line printed for `-o OUT.onnx` and for `-o OUT.c` (None: not checked).

LN_APPLIED = r"remark: patterns: .*: applied: \d+ nodes are a written-out LayerNormalization"
GELU_APPLIED = r"remark: patterns: .*: applied: \d+ nodes are a written-out {} GELU"
SM_APPLIED = r"remark: patterns: .*: applied: \d+ nodes are a written-out Softmax"


def case_layernorm_pow():
    b = B(1)
    layernorm(b, "x", 16, 17, out="y")
    return b.model([vi("x", [2, 5, 16])], [vi("y", [2, 5, 16])], 17), [LN_APPLIED], [LN_APPLIED]


def case_layernorm_mulself_recip_opset18():
    b = B(2)
    layernorm(b, "x", [4, 8], 18, axes=(-2, -1), square="mul", recip=True, beta=False,
              gshape=[4, 8], out="y")
    return b.model([vi("x", [3, 4, 8])], [vi("y", [3, 4, 8])], 18), [LN_APPLIED], None


def case_layernorm_no_gamma_no_beta():
    b = B(3)
    layernorm(b, "x", 8, 17, gamma=False, beta=False, out="y")
    return b.model([vi("x", [6, 8])], [vi("y", [6, 8])], 17), [LN_APPLIED], None


def case_layernorm_intermediate_is_output():
    # x - mean is also a graph output: the pattern must stay written out
    b = B(4)
    m = reduce(b, "ReduceMean", "x", [-1], 17)
    d = b.op("Sub", ["x", m], outputs="d")
    p = b.op("Pow", [d, b.f("two", 2.0)])
    v = reduce(b, "ReduceMean", p, [-1], 17)
    s = b.op("Sqrt", [b.op("Add", [v, b.f("eps", 1e-5)])])
    b.op("Div", [d, s], outputs="y")
    model = b.model([vi("x", [4, 16])], [vi("y", [4, 16]), vi("d", [4, 16])], 17)
    return model, [r"remark: patterns: .*: rejected: looks like a written-out LayerNormalization"
                   r".*graph output"], None


def case_layernorm_double_in_cast_chain():
    # dtype changes inside the chain: float -> double LayerNorm -> float
    b = B(5)
    xd = b.op("Cast", ["x"], to=F64)
    y = layernorm(b, xd, 16, 17, dt=np.float64)
    b.op("Cast", [y], outputs="y", to=F32)
    return b.model([vi("x", [3, 16])], [vi("y", [3, 16])], 17), [LN_APPLIED], None


def case_gelu_erf_forms_opset20():
    b = B(6)
    h = b.op("MatMul", ["x", w(b, "w1", [16, 32])])
    g1 = gelu_erf(b, h, 1, div=True)
    g2 = gelu_erf(b, g1, 2, div=False)
    gelu_erf(b, g2, 3, div=True, out="y")
    pat = GELU_APPLIED.format("erf")
    return b.model([vi("x", [4, 16])], [vi("y", [4, 32])], 20), [pat], [pat]


def case_gelu_erf_opset17():
    # opset 17 has no Gelu: written ONNX keeps the pattern, the C path rewrites
    b = B(7)
    gelu_erf(b, "x", 1, out="y")
    model = b.model([vi("x", [2, 3, 8])], [vi("y", [2, 3, 8])], 17)
    return (model, [r"remark: patterns: .*: declined: .*opset 17 and Gelu needs 20"],
            [GELU_APPLIED.format("erf")])


def case_gelu_tanh_opset20():
    b = B(8)
    g1 = gelu_tanh(b, "x", cube="pow")
    gelu_tanh(b, g1, cube="mul", out="y")
    pat = GELU_APPLIED.format("tanh")
    return b.model([vi("x", [5, 12])], [vi("y", [5, 12])], 20), [pat], [pat]


def case_gelu_shared_input_and_output():
    # x feeds the GELU and another consumer; the GELU result is a graph output
    # and is consumed further
    b = B(9)
    h = b.op("Add", ["x", w(b, "bias", [8])])
    g = gelu_erf(b, h, 2, out="g")
    b.op("Add", [g, h], outputs="y")
    model = b.model([vi("x", [3, 8])], [vi("g", [3, 8]), vi("y", [3, 8])], 20)
    return model, [GELU_APPLIED.format("erf")], None


def case_softmax_last_axis_opset13():
    b = B(10)
    softmax(b, "x", -1, 13, out="y")
    return b.model([vi("x", [2, 3, 10])], [vi("y", [2, 3, 10])], 13), [SM_APPLIED], None


def case_softmax_axis1_opset18():
    b = B(11)
    softmax(b, "x", 1, 18, out="y")
    return b.model([vi("x", [2, 7, 5])], [vi("y", [2, 7, 5])], 18), [SM_APPLIED], None


def case_softmax_opset11():
    b = B(12)
    softmax(b, "x", 2, 11, out="y")
    return b.model([vi("x", [2, 3, 6])], [vi("y", [2, 3, 6])], 11), [SM_APPLIED], None


def case_softmax_axis0_opset11():
    # not the last axis before opset 13: ONNX output declines, C rewrites
    b = B(13)
    softmax(b, "x", 0, 11, out="y")
    model = b.model([vi("x", [4, 5])], [vi("y", [4, 5])], 11)
    return (model, [r"remark: patterns: .*: declined: .*Softmax needs 13"], [SM_APPLIED])


BN_FOLD = r"remark: fold: .*: folded: BatchNormalization folded into {}"


def case_conv_bn():
    b = B(14)
    c = b.op("Conv", ["x", w(b, "cw", [6, 3, 3, 3]), w(b, "cb", [6])], pads=[1, 1, 1, 1])
    bn(b, c, 6)
    return b.model([vi("x", [2, 3, 8, 8])], [vi("y", [2, 6, 8, 8])], 13), [BN_FOLD.format("Conv")], None


def case_conv_nobias_bn_group():
    b = B(15)
    c = b.op("Conv", ["x", w(b, "cw", [8, 2, 3, 3])], group=2)
    r = bn(b, c, 8, out=None)
    b.op("Relu", [r], outputs="y")
    return (b.model([vi("x", [1, 4, 6, 6])], [vi("y", [1, 8, 4, 4])], 13),
            [BN_FOLD.format("Conv") + r".*bias added"], None)


def case_depthwise_bn_clip_residual():
    # depthwise on 20x20 (the flat form) with BN folded in, then Clip(0, 6)
    # and a residual add run as its fused epilogue
    b = B(17)
    c = b.op("Conv", ["x", w(b, "cw", [8, 1, 3, 3])], pads=[1, 1, 1, 1], group=8)
    r = bn(b, c, 8, out=None)
    lo = b.init("lo", np.array(0.0, np.float32))
    hi = b.init("hi", np.array(6.0, np.float32))
    k = b.op("Clip", [r, lo, hi])
    b.op("Add", [k, "x"], outputs="y")
    return (b.model([vi("x", [2, 8, 20, 20])], [vi("y", [2, 8, 20, 20])], 13),
            [BN_FOLD.format("Conv")], None)


WINO = r"remark: tile: .*: conv-winograd: Conv form: Winograd F\(2x2, 3x3\)"


def case_winograd_bn_residual_relu():
    # 3x3/1 16->16 on 26x30 (odd tiles a row: 15), 2 images: the Winograd
    # form, BN folded into it, the residual Add and Relu in its epilogue
    b = B(18)
    c = b.op("Conv", ["x", w(b, "cw", [16, 16, 3, 3])], pads=[1, 1, 1, 1])
    r = bn(b, c, 16, out=None)
    a = b.op("Add", [r, "x"])
    b.op("Relu", [a], outputs="y")
    return (b.model([vi("x", [2, 16, 26, 30])], [vi("y", [2, 16, 26, 30])], 13),
            [BN_FOLD.format("Conv"), WINO], None)


def case_winograd_sigmoid_epilogue():
    # 3x3/1 8->12 on 31x31 (odd rows: the last tiles' second row cut): the
    # Winograd form with a Sigmoid epilogue run on each output row
    b = B(19)
    c = b.op("Conv", ["x", w(b, "cw", [12, 8, 3, 3]), w(b, "cb", [12])], pads=[1, 1, 1, 1])
    b.op("Sigmoid", [c], outputs="y")
    return (b.model([vi("x", [1, 8, 31, 31])], [vi("y", [1, 12, 31, 31])], 13), [WINO], None)


def case_conv_bn_shared_output():
    # the Conv output is also a graph output: BN must not be folded
    b = B(16)
    b.op("Conv", ["x", w(b, "cw", [4, 3, 1, 1])], outputs="c")
    bn(b, "c", 4)
    model = b.model([vi("x", [1, 3, 5, 5])], [vi("y", [1, 4, 5, 5]), vi("c", [1, 4, 5, 5])], 13)
    return model, [r"remark: fold: .*: declined: BatchNormalization not folded into Conv"], None


def case_gemm_bn():
    b = B(17)
    g = b.op("Gemm", ["x", w(b, "gw", [10, 12]), w(b, "gc", [10])], transB=1, alpha=0.5, beta=2.0)
    bn(b, g, 10)
    return b.model([vi("x", [4, 12])], [vi("y", [4, 10])], 13), [BN_FOLD.format("Gemm")], None


def case_matmul_add_bn():
    b = B(18)
    m = b.op("MatMul", ["x", w(b, "mw", [12, 6])])
    a = b.op("Add", [w(b, "mb", [6]), m])
    bn(b, a, 6)
    return b.model([vi("x", [5, 12])], [vi("y", [5, 6])], 13), [BN_FOLD.format("MatMul")], None


def case_matmul_bn():
    b = B(19)
    m = b.op("MatMul", ["x", w(b, "mw", [12, 6])])
    bn(b, m, 6)
    return b.model([vi("x", [5, 12])], [vi("y", [5, 6])], 15), [BN_FOLD.format("MatMul")], None


def case_cse_duplicates():
    # the same Mul twice (on duplicate weights), chains of duplicates, a Split
    # (several outputs) twice, and a duplicate whose output is a graph output
    b = B(20)
    c = np.float32(b.rng.standard_normal((3, 8)))
    w1 = b.init("scale_a", c)
    w2 = b.init("scale_b", c.copy())
    m1 = b.op("Mul", ["x", w1])
    m2 = b.op("Mul", ["x", w2])
    t1 = b.op("Tanh", [m1])
    t2 = b.op("Tanh", [m2])
    s1 = b.op("Split", [t1], outputs=["s1a", "s1b"], axis=1, num_outputs=2)
    s2 = b.op("Split", [t2], outputs=["s2a", "s2b"], axis=1, num_outputs=2)
    a = b.op("Add", [s1[0], s2[1]])
    c2 = b.op("Add", [s2[0], s1[1]])
    b.op("Mul", [a, c2], outputs="y")
    b.op("Tanh", [m1], outputs="t_out")  # duplicate of t1, but a graph output
    model = b.model([vi("x", [3, 8])], [vi("y", [3, 4]), vi("t_out", [3, 8])], 18)
    return model, [r"remark: dedupe: scale_b.*: merged: initializer 'scale_b.*same content",
                   r"remark: cse: .*: merged: same Mul",
                   r"remark: cse: .*: merged: same Split",
                   r"remark: cse: .*: declined: same Tanh .*'t_out' is a graph output"], None


def case_dedupe_weights():
    b = B(21)
    W = (0.3 * b.rng.standard_normal((16, 16))).astype(np.float32)
    h = b.op("MatMul", ["x", b.init("w_enc", W)])
    h = b.op("Relu", [h])
    b.op("MatMul", [h, b.init("w_dec", W.copy())], outputs="y")
    return (b.model([vi("x", [2, 16])], [vi("y", [2, 16])], 17),
            [r"remark: dedupe: w_dec.*: merged: .*1024 bytes.*\[bytes 2048 -> 1024\]"], None)


def case_fold_shapes_and_big_weights():
    # Shape arithmetic, Constant nodes, a Transpose + Cast of a big
    # initializer (over the evaluator's limits), a weight times a scale
    b = B(22)
    big = (0.05 * b.rng.standard_normal((300, 300))).astype(np.float64)
    wt = b.op("Transpose", [b.init("big_w", big)], perm=[1, 0])
    wt = b.op("Cast", [wt], to=F32)
    wt = b.op("Mul", [wt, b.op("Constant", [], value=numpy_helper.from_array(
        np.array(0.5, dtype=np.float32)))])
    h = b.op("MatMul", ["x", wt])
    sh = b.op("Shape", [h])
    n0 = b.op("Gather", [sh, b.init("i0", np.array([0], dtype=np.int64))], axis=0)
    tgt = b.op("Concat", [n0, b.init("m1", np.array([20, 15], dtype=np.int64))], axis=0)
    b.op("Reshape", [h, tgt], outputs="y")
    model = b.model([vi("x", [2, 300])], [vi("y", [2, 20, 15])], 17)
    return model, [r"remark: fold: .*: folded: Transpose of constants \(computed",
                   r"remark: fold: .*: folded: Cast of constants",
                   r"remark: fold: .*: folded: Shape of a static shape",
                   r"remark: fold: .*: folded: Constant node"], None


def case_fold_cap_expand():
    # a huge Expand of a scalar must stay a node
    b = B(23)
    e = b.op("Expand", [b.f("z", 0.25), b.init("shape", np.array([256, 1100], dtype=np.int64))])
    b.op("Add", ["x", e], outputs="y")
    model = b.model([vi("x", [256, 1100])], [vi("y", [256, 1100])], 13)
    return model, [r"remark: fold: .*: declined: Expand would materialize 1126400 bytes"], None


def case_graph_output_mid_chain_rank6_broadcast():
    # a graph output in the middle of a chain that is also consumed;
    # broadcasting from rank 0 to rank 6; constant subchains folded
    b = B(24)
    s0 = b.f("s0", 1.5)  # rank 0
    k = b.op("Mul", [s0, b.f("s1", 2.0)])  # folded constant
    a = b.op("Add", ["x", k], outputs="mid")
    v6 = b.init("v6", (b.rng.standard_normal((1, 3, 1, 2, 1, 4))).astype(np.float32))
    m = b.op("Mul", [a, v6])
    m2 = b.op("Mul", [a, v6])  # CSE duplicate
    b.op("Sub", [m, m2], outputs=None)
    b.op("Add", [m, m2], outputs="y")
    model = b.model([vi("x", [2, 1, 5, 2, 3, 4])], [vi("mid", [2, 1, 5, 2, 3, 4]),
                                                  vi("y", [2, 3, 5, 2, 3, 4])], 17)
    return model, [r"remark: fold: .*: folded: Mul of constants",
                   r"remark: cse: .*: merged: same Mul"], None


def case_constant_output():
    # a graph output that folding turns into an initializer
    b = B(25)
    b.op("Constant", [], outputs="c", value=numpy_helper.from_array(
        np.arange(6, dtype=np.float32).reshape(2, 3)))
    b.op("Add", ["x", "c"], outputs="y")
    model = b.model([vi("x", [2, 3])], [vi("y", [2, 3]), vi("c", [2, 3])], 13)
    return model, [r"remark: fold: .*: folded: Constant node"], None


CASES = {k[len("case_"):]: v for k, v in globals().items() if k.startswith("case_")}


# ---- running ----------------------------------------------------------------


def random_feeds(model, rng):
    feeds = []
    for v in rltest.graph_inputs(model):
        tt = v.type.tensor_type
        shape = [d.dim_value for d in tt.shape.dim]
        dt = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        feeds.append((v.name, rng.standard_normal(shape).astype(dt)))
    return feeds


def ort_run(path, feeds):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    # the reference must not fuse anything itself
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, dict(feeds))


def compare_all(got, ref, args, what):
    for k, (a, e) in enumerate(zip(got, ref)):
        ok, msg, _, _ = rltest.compare(np.asarray(a), np.asarray(e), rtol=args.rtol, atol=args.atol)
        if not ok:
            return f"{what}: output {k}: {msg}"
    return None


def rlopt_run(args, path, feeds, d, level):
    out = os.path.join(d, f"out{level}")
    os.makedirs(out)
    cmd = [args.rlopt, "run", path, level]
    for k, (n, a) in enumerate(feeds):
        p = os.path.join(d, f"in_{k}.pb")
        rltest.write_pb(p, a, n)
        cmd += ["-i", p]
    cmd += ["-d", out]
    r = rltest.run(cmd, timeout=args.timeout)
    if not r.ok:
        return None, f"rlopt run {level}: {r.describe()}"
    got = []
    k = 0
    while os.path.exists(os.path.join(out, f"output_{k}.pb")):
        got.append(rltest.read_pb(os.path.join(out, f"output_{k}.pb"))[1])
        k += 1
    return got, None


def check_remarks(stderr, patterns, what):
    lines = [ln for ln in stderr.splitlines() if ln.startswith("remark: ")]
    for p in patterns or []:
        if not any(re.search(p, ln) for ln in lines):
            shown = "\n".join("      " + ln for ln in lines[:20])
            return f"{what}: no remark matches /{p}/; remarks were:\n{shown}"
    return None


def check_case(name, fn, args, work):
    model, onnx_remarks, c_remarks = fn()
    d = os.path.join(work, name)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    feeds = random_feeds(model, np.random.default_rng(args.seed))
    ref = ort_run(path, feeds)
    for level in ("-O2", "-O0"):
        got, err = rlopt_run(args, path, feeds, d, level)
        if err:
            return "fail", err
        if len(got) != len(ref):
            return "fail", f"rlopt run {level}: {len(got)} outputs, expected {len(ref)}"
        err = compare_all(got, ref, args, f"rlopt run {level}")
        if err:
            return "fail", err
    # the ONNX path: remarks, a valid model, same results
    opt = os.path.join(d, "opt.onnx")
    r = rltest.run([args.rlopt, path, "-o", opt, "--remarks"], timeout=args.timeout)
    if not r.ok:
        return "fail", f"rlopt -o OUT.onnx: {r.describe()}"
    err = check_remarks(r.stderr, onnx_remarks, "-o OUT.onnx")
    if err:
        return "fail", err
    try:
        onnx.checker.check_model(onnx.load(opt), full_check=True)
    except Exception as e:
        return "fail", f"optimized ONNX fails the checker: {str(e).splitlines()[0]}"
    try:
        got = ort_run(opt, feeds)
    except Exception as e:
        return "fail", f"onnxruntime cannot run the optimized ONNX: {str(e).splitlines()[0]}"
    err = compare_all(got, ref, args, "optimized ONNX in onnxruntime")
    if err:
        return "fail", err
    if c_remarks:
        r = rltest.run([args.rlopt, path, "-o", os.path.join(d, "opt.c"), "--remarks"],
                       timeout=args.timeout)
        if not r.ok:
            return "fail", f"rlopt -o OUT.c: {r.describe()}"
        err = check_remarks(r.stderr, c_remarks, "-o OUT.c")
        if err:
            return "fail", err
    return "pass", ""


def main():
    ap = rltest.make_parser(__doc__.split("\n\n")[0])
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="run only cases whose name matches this fnmatch pattern (repeatable)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per rlopt call")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()
    if not args.rlopt:
        ap.error("--rlopt is required")
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print("onnxruntime is not installed: every case skipped")
        t = rltest.Tally()
        for _ in CASES:
            t.add("skip")
        return t.finish()
    work = tempfile.mkdtemp(prefix="rlopt-passes.")
    tally = rltest.Tally()
    try:
        for name, fn in CASES.items():
            if args.patterns and not any(fnmatch.fnmatchcase(name, p) for p in args.patterns):
                continue
            try:
                status, msg = check_case(name, fn, args, work)
            except Exception as e:  # a bug in one case must not hide the others
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
