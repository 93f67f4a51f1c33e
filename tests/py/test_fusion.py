#!/usr/bin/env python3
"""Elementwise and epilogue fusion, end to end against onnxruntime.

Each case is a small model built here with onnx.helper (opset 17) that puts
the fuse pass in a situation it must get right: values shared by two ops of
a group, graph outputs in the middle of a chain, values that are graph
outputs and consumed too, broadcasting from rank 0 to rank 6, dtype changes
(Cast to int32 and float16) inside a chain, Where and Clip in chains,
comparisons and bools, Gemm + bias + Relu, Conv + residual Add + Relu,
batched MatMul epilogues, and the cases that must NOT fuse (different
iteration spaces, a path that leaves the group and comes back).

For every case:
  1. `rlopt MODEL -o M.c --remarks` (-O2): the generated C must have the
     expected number of kernels (`static void k...`) and of fused kernels
     (`k<N>_fused_...`): the proof that fusion happened (or did not); with
     --rlopt-args naming -O0 or -O1 only the results are checked;
  2. `rlopt run MODEL -i ... -d OUT` (-O2, plus --rlopt-args) and every output
     compared with onnxruntime's (rtol 1e-3, atol 1e-4; same shape and dtype).
A case whose model onnxruntime cannot run is skipped with the reason.

Ends with "N passed, N failed, N skipped"; exits non-zero on a failure.
"""

import os
import re
import shlex
import shutil
import sys
import tempfile
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

F32, F16, I32, I64, BOOL = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32,
                            TensorProto.INT64, TensorProto.BOOL)
NP = {F32: np.float32, F16: np.float16, I32: np.int32, I64: np.int64, BOOL: np.bool_}


class Case:
    """A model under construction, and what fusing it must give."""

    def __init__(self, name, kernels, fused, doc):
        self.name, self.kernels, self.fused, self.doc = name, kernels, fused, doc
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.feeds = []
        self.n = 0
        self.rtol = None  # a case's own tolerance, where the oracle differs by design

    def inp(self, name, et, shape, lo=-2.0, hi=2.0):
        self.inputs.append(helper.make_tensor_value_info(name, et, shape))
        if et == BOOL:
            a = self.rng.random(shape) < 0.5
        elif et in (I32, I64):
            a = self.rng.integers(-20, 20, size=shape).astype(NP[et])
        else:
            a = self.rng.uniform(lo, hi, size=shape).astype(NP[et])
        self.feeds.append((name, np.asarray(a)))
        return name

    def const(self, value, et=F32, name=None):
        name = name or f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=NP[et]), name))
        return name

    def rand(self, shape, scale=0.5, name=None):
        return self.const(self.rng.standard_normal(shape) * scale, F32, name)

    def op(self, op_type, ins, n_out=1, **attrs):
        self.n += 1
        outs = [f"{op_type.lower()}{self.n}_{k}" for k in range(n_out)]
        self.nodes.append(helper.make_node(op_type, ins, outs, name=f"{op_type}_{self.n}",
                                           **attrs))
        return outs[0] if n_out == 1 else outs

    def out(self, value, et, shape):
        self.outputs.append(helper.make_tensor_value_info(value, et, shape))

    def model(self):
        g = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        onnx.checker.check_model(m, full_check=True)
        return m


# ---- the cases ------------------------------------------------------------------


def case_dag():
    c = Case("dag_shared_value", 1, 1, "x feeds two ops of the group; a value used twice")
    x = c.inp("x", F32, [64, 33])
    a = c.op("Mul", [x, c.const(2.0)])
    b = c.op("Add", [x, c.const(1.0)])
    m = c.op("Mul", [a, b])
    s = c.op("Sigmoid", [m])
    y = c.op("Sub", [s, a])
    c.out(y, F32, [64, 33])
    return c


def case_mid_output():
    c = Case("graph_output_mid_chain", 1, 1, "a value in the middle of the chain is a graph output")
    x = c.inp("x", F32, [1000])
    t = c.op("Relu", [x])
    u = c.op("Mul", [t, c.const(3.0)])
    y = c.op("Tanh", [u])
    c.out(t, F32, [1000])
    c.out(y, F32, [1000])
    return c


def case_output_consumed():
    c = Case("output_and_consumed", 1, 1, "graph outputs that the group also consumes, "
             "one listed twice")
    x = c.inp("x", F32, [7, 9])
    t = c.op("Add", [x, c.const(0.5)])
    sq = c.op("Mul", [t, t])
    e = c.op("Exp", [c.op("Neg", [sq])])
    y = c.op("Add", [e, t])
    c.out(t, F32, [7, 9])
    c.out(y, F32, [7, 9])
    c.out(e, F32, [7, 9])
    return c


def case_broadcast_ranks():
    c = Case("broadcast_rank0_to_rank6", 1, 1, "inputs of rank 0, 1, 3, 5 and 6 broadcast "
             "into one rank-6 group")
    shape = [2, 3, 1, 4, 3, 5]
    x = c.inp("x", F32, shape)
    s = c.inp("s", F32, [])                     # rank 0, a graph input
    b = c.rand([5], name="b1")                  # rank 1
    w = c.rand([4, 1, 5], name="w3")            # rank 3 with a broadcast dim
    v = c.rand([3, 1, 4, 1, 1], name="v5")      # rank 5
    z = c.inp("z", F32, [2, 1, 1, 1, 3, 1])     # rank 6, mostly broadcast
    t = c.op("Mul", [x, s])
    t = c.op("Add", [t, b])
    t = c.op("Mul", [t, w])
    t = c.op("Sub", [t, v])
    t = c.op("Add", [t, z])
    y = c.op("Relu", [t])
    c.out(y, F32, shape)
    return c


def case_cast_chain():
    c = Case("cast_inside_chain", 1, 1, "float -> int32 -> float and float -> float16 -> "
             "float inside one chain (rounding as each op would store it)")
    x = c.inp("x", F32, [4, 250], lo=-40, hi=40)
    t = c.op("Mul", [x, c.const(1.7)])
    i = c.op("Cast", [t], to=I32)
    i = c.op("Add", [i, c.const(3, I32)])
    i = c.op("Mul", [i, c.const(-2, I32)])
    f = c.op("Cast", [i], to=F32)
    h = c.op("Cast", [c.op("Div", [x, c.const(3.0)])], to=F16)
    h = c.op("Add", [h, c.const(0.1, F16)])
    h = c.op("Cast", [h], to=F32)
    y = c.op("Add", [f, h])
    c.out(y, F32, [4, 250])
    c.out(i, I32, [4, 250])
    return c


def case_where_clip():
    c = Case("where_clip_in_chain", 1, 1, "comparison, Where, Clip with constant and "
             "graph-input bounds, bool logic")
    x = c.inp("x", F32, [3, 40])
    y = c.inp("y", F32, [40])
    lo = c.inp("lo", F32, [])
    gt = c.op("Greater", [x, c.const(0.0)])
    ny = c.op("Not", [c.op("Less", [c.op("Add", [x, y]), c.const(-1.0)])])
    both = c.op("And", [gt, ny])
    w = c.op("Where", [both, c.op("Mul", [x, c.const(2.0)]), y])
    k = c.op("Clip", [w, c.const(-1.0), c.const(1.5)])
    k2 = c.op("Clip", [c.op("Add", [k, x]), lo])
    r = c.op("Add", [k2, c.const(1.0)])
    c.out(r, F32, [3, 40])
    c.out(both, BOOL, [3, 40])
    return c


def case_int_chain():
    c = Case("int64_chain", 1, 1, "integer Add/Mul/Div/Mod/Abs chain (truncating division, "
             "Python-style Mod)")
    x = c.inp("x", I64, [6, 7])
    d = c.inp("d", I64, [7])
    t = c.op("Mul", [x, c.const(3, I64)])
    t = c.op("Add", [t, d])
    q = c.op("Div", [t, c.const(4, I64)])
    m = c.op("Mod", [t, c.const(5, I64)])
    y = c.op("Sub", [c.op("Abs", [q]), m])
    c.out(y, I64, [6, 7])
    return c


def case_float16_chain():
    c = Case("float16_chain", 1, 1, "float16 in and out: every op rounds to half, as the "
             "unfused kernels and numpy do; onnxruntime's CPU provider runs the chain in "
             "float32 (it inserts Casts around its float16 ops) and rounds once, so the two "
             "differ by a few half ulps: rtol 1e-2 here")
    c.rtol = 1e-2
    x = c.inp("x", F16, [513])
    t = c.op("Mul", [x, c.const(1.3, F16)])
    t = c.op("Add", [t, c.const(0.7, F16)])
    t = c.op("Relu", [t])
    y = c.op("Sqrt", [t])
    c.out(y, F16, [513])
    return c


def case_gemm_bias_relu():
    c = Case("gemm_bias_relu", 1, 1, "Gemm (transB, fully connected) + bias Add + Relu: "
             "epilogue in the output loop")
    x = c.inp("x", F32, [5, 32])
    h = c.op("Gemm", [x, c.rand([16, 32])], transB=1)
    h = c.op("Add", [h, c.rand([16])])
    y = c.op("Relu", [h])
    c.out(y, F32, [5, 16])
    return c


def case_gemm_c_scale():
    c = Case("gemm_c_alpha_scale_clip", 1, 1, "Gemm with C, alpha, beta (i-k-j rows of 4 "
             "and a tail row), then Mul by a per-column scale and Clip")
    x = c.inp("x", F32, [7, 24])
    h = c.op("Gemm", [x, c.rand([24, 40]), c.rand([40])], alpha=0.5, beta=2.0)
    h = c.op("Mul", [h, c.rand([1, 40])])
    y = c.op("Clip", [h, c.const(-0.5), c.const(0.5)])
    c.out(y, F32, [7, 40])
    return c


def case_matmul_batched():
    c = Case("matmul_batched_scale_residual", 1, 1, "batched MatMul, scale, residual Add "
             "(an input that broadcasts over the batch)")
    x = c.inp("x", F32, [2, 3, 8, 16])
    r = c.inp("r", F32, [3, 8, 12])
    h = c.op("MatMul", [x, c.rand([16, 12])])
    h = c.op("Mul", [h, c.const(0.25)])
    y = c.op("Add", [h, r])
    c.out(y, F32, [2, 3, 8, 12])
    return c


def case_matmul_wide_gelu():
    c = Case("matmul_wide_gelu", 1, 1, "MatMul with N > 512 (column blocks) + bias + erf "
             "GELU written out (a DAG epilogue: the biased value is used twice)")
    x = c.inp("x", F32, [3, 32])
    h = c.op("MatMul", [x, c.rand([32, 600])])
    h = c.op("Add", [h, c.rand([600])])
    t = c.op("Div", [h, c.const(np.sqrt(2.0))])
    t = c.op("Erf", [t])
    t = c.op("Add", [t, c.const(1.0)])
    t = c.op("Mul", [h, t])
    y = c.op("Mul", [t, c.const(0.5)])
    c.out(y, F32, [3, 600])
    return c


def case_conv_residual():
    c = Case("conv_add_relu_residual", 1, 1, "Conv (direct, padded) + residual Add of its "
             "input + Relu")
    x = c.inp("x", F32, [1, 4, 9, 11])
    h = c.op("Conv", [x, c.rand([4, 4, 3, 3]), c.rand([4])], pads=[1, 1, 1, 1],
             kernel_shape=[3, 3])
    h = c.op("Add", [h, x])
    y = c.op("Relu", [h])
    c.out(y, F32, [1, 4, 9, 11])
    return c


def case_conv_plane_channel():
    c = Case("conv_plane_channel_scale", 1, 1, "small-plane Conv (plane mode) + per-channel "
             "scale [C,1,1] + shift + LeakyRelu")
    x = c.inp("x", F32, [2, 3, 6, 6])
    h = c.op("Conv", [x, c.rand([8, 3, 3, 3])], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    h = c.op("Mul", [h, c.rand([8, 1, 1])])
    h = c.op("Add", [h, c.rand([1, 8, 1, 1])])
    y = c.op("LeakyRelu", [h], alpha=0.1)
    c.out(y, F32, [2, 8, 6, 6])
    return c


def case_conv1x1_rowbroadcast():
    c = Case("conv1x1_row_broadcast", 1, 1, "1x1 Conv (flattened plane) + an input that "
             "varies along H only: indexed per element in the epilogue")
    x = c.inp("x", F32, [1, 6, 8, 8])
    h = c.op("Conv", [x, c.rand([5, 6, 1, 1])], kernel_shape=[1, 1])
    h = c.op("Add", [h, c.rand([1, 1, 8, 1])])
    y = c.op("Sigmoid", [h])
    c.out(y, F32, [1, 5, 8, 8])
    return c


def case_conv3d_gather():
    c = Case("conv3d_epilogue", 1, 1, "3-D Conv (gather form, one output at a time) + Relu")
    x = c.inp("x", F32, [1, 2, 4, 5, 3])
    h = c.op("Conv", [x, c.rand([3, 2, 2, 2, 2])], kernel_shape=[2, 2, 2])
    y = c.op("Relu", [h])
    c.out(y, F32, [1, 3, 3, 4, 2])
    return c


def case_conv_relu_band():
    c = Case("conv_relu_band", 1, 1, "Conv (band mode, padded: the sums through acc) + Relu "
             "alone: the FMA tiles apply it to the final sums")
    x = c.inp("x", F32, [1, 8, 40, 40])
    h = c.op("Conv", [x, c.rand([8, 8, 3, 3]), c.rand([8])], pads=[1, 1, 1, 1],
             kernel_shape=[3, 3])
    y = c.op("Relu", [h])
    c.out(y, F32, [1, 8, 40, 40])
    return c


def case_conv1x1_relu_chunks():
    c = Case("conv1x1_relu_chunks", 1, 1, "1x1 Conv (band mode, sums straight into the "
             "output, input channels in chunks) + Relu on the last chunk's sums")
    x = c.inp("x", F32, [1, 512, 40, 40])
    h = c.op("Conv", [x, c.rand([8, 512, 1, 1], 0.1), c.rand([8])], kernel_shape=[1, 1])
    y = c.op("Relu", [h])
    c.out(y, F32, [1, 8, 40, 40])
    return c


def case_conv1x1_residual_chunks():
    c = Case("conv1x1_residual_chunks", 1, 1, "1x1 Conv (band mode, sums straight into the "
             "output, input channels in chunks) + residual Add (residual first) + Relu: the "
             "FMA tiles add the residual to the last chunk's sums")
    x = c.inp("x", F32, [1, 512, 40, 40])
    r = c.inp("r", F32, [1, 8, 40, 40])
    h = c.op("Conv", [x, c.rand([8, 512, 1, 1], 0.1), c.rand([8])], kernel_shape=[1, 1])
    h = c.op("Add", [r, h])
    y = c.op("Relu", [h])
    c.out(y, F32, [1, 8, 40, 40])
    return c


def case_conv1x1_residual_sum():
    c = Case("conv1x1_residual_sum", 1, 1, "1x1 Conv (band mode, one chunk) + Sum with its "
             "input, no Relu: the residual in the FMA tiles")
    x = c.inp("x", F32, [1, 16, 32, 32])
    h = c.op("Conv", [x, c.rand([16, 16, 1, 1], 0.3), c.rand([16])], kernel_shape=[1, 1])
    y = c.op("Sum", [h, x])
    c.out(y, F32, [1, 16, 32, 32])
    return c


def case_conv_relu_chanvec():
    c = Case("conv_relu_chanvec", 1, 1, "small-plane Conv (channels on 16 lanes, chunks "
             "of 28 input channels, the last one short) + Relu in the tiles")
    x = c.inp("x", F32, [1, 40, 7, 7])
    h = c.op("Conv", [x, c.rand([40, 40, 3, 3], 0.2), c.rand([40])], pads=[1, 1, 1, 1],
             kernel_shape=[3, 3])
    y = c.op("Relu", [h])
    c.out(y, F32, [1, 40, 7, 7])
    return c


def case_conv_affine_chanvec():
    c = Case("conv_affine_relu_chanvec", 1, 1, "small-plane Conv without bias (channels on the "
             "lanes, 40 = 32 + 8 channels, chunks of input channels) + per-channel Mul [C,1,1] + "
             "Add [1,C,1,1] + Relu: an unfolded BatchNormalization, applied by the tiles")
    x = c.inp("x", F32, [1, 72, 7, 7])
    h = c.op("Conv", [x, c.rand([40, 72, 3, 3], 0.2)], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    h = c.op("Mul", [c.const(c.rng.uniform(0.5, 1.5, [40, 1, 1]), F32), h])
    h = c.op("Add", [h, c.rand([1, 40, 1, 1])])
    y = c.op("Relu", [h])
    c.out(y, F32, [1, 40, 7, 7])
    return c


def case_conv_affine_band():
    c = Case("conv_affine_band", 1, 1, "Conv (band mode, padded: the sums through acc) + "
             "per-channel Mul + Add, no Relu: in the FMA tiles")
    x = c.inp("x", F32, [1, 8, 40, 40])
    h = c.op("Conv", [x, c.rand([8, 8, 3, 3]), c.rand([8])], pads=[1, 1, 1, 1],
             kernel_shape=[3, 3])
    h = c.op("Mul", [h, c.const(c.rng.uniform(0.5, 1.5, [8, 1, 1]), F32)])
    y = c.op("Add", [h, c.rand([8, 1, 1])])
    c.out(y, F32, [1, 8, 40, 40])
    return c


def case_conv1x1_affine_residual_chunks():
    c = Case("conv1x1_affine_residual_chunks", 1, 1, "1x1 Conv (band mode, sums straight into "
             "the output, input channels in chunks) + per-channel Mul + Add + residual Add + "
             "Relu: all in the FMA tiles on the last chunk's sums")
    x = c.inp("x", F32, [1, 512, 40, 40])
    r = c.inp("r", F32, [1, 8, 40, 40])
    h = c.op("Conv", [x, c.rand([8, 512, 1, 1], 0.1)], kernel_shape=[1, 1])
    h = c.op("Mul", [h, c.const(c.rng.uniform(0.5, 1.5, [8, 1, 1]), F32)])
    h = c.op("Add", [h, c.rand([8, 1, 1])])
    h = c.op("Add", [r, h])
    y = c.op("Relu", [h])
    c.out(y, F32, [1, 8, 40, 40])
    return c


def case_conv_affine_residual_chanvec():
    c = Case("conv_affine_residual_chanvec", 1, 1, "small-plane 3x3 Conv without bias "
             "(channels on the lanes, 40 = 32 + 8; 7x7 rows tiled across rows) + per-channel "
             "Mul + Add + residual Add + Relu: Mul and Add in the tiles, the residual and Relu "
             "in the transpose")
    x = c.inp("x", F32, [1, 24, 7, 7])
    r = c.inp("r", F32, [1, 40, 7, 7])
    h = c.op("Conv", [x, c.rand([40, 24, 3, 3], 0.2)], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    h = c.op("Mul", [h, c.const(c.rng.uniform(0.5, 1.5, [40, 1, 1]), F32)])
    h = c.op("Add", [h, c.rand([40, 1, 1])])
    h = c.op("Add", [r, h])
    y = c.op("Relu", [h])
    c.out(y, F32, [1, 40, 7, 7])
    return c


def case_conv_residual_sum_chanvec():
    c = Case("conv_residual_sum_chanvec", 1, 1, "small-plane 3x3/2 Conv (channels on the "
             "lanes, rows of 5 tiled across rows) + Sum with a tensor of its shape, no Relu: "
             "the residual in the transpose")
    x = c.inp("x", F32, [2, 64, 9, 9])
    r = c.inp("r", F32, [2, 32, 5, 5])
    h = c.op("Conv", [x, c.rand([32, 64, 3, 3], 0.1), c.rand([32])], pads=[1, 1, 1, 1],
             strides=[2, 2], kernel_shape=[3, 3])
    y = c.op("Sum", [h, r])
    c.out(y, F32, [2, 32, 5, 5])
    return c


def case_epilogue_two_outputs():
    c = Case("epilogue_writes_two_values", 1, 1, "MatMul + bias, then the biased value is "
             "a graph output and also feeds a Relu and a bool mask: one epilogue, 3 outputs")
    x = c.inp("x", F32, [6, 20])
    h = c.op("MatMul", [x, c.rand([20, 9])])
    h = c.op("Add", [h, c.rand([9])])
    y = c.op("Relu", [h])
    m = c.op("Greater", [h, c.const(0.1)])
    c.out(y, F32, [6, 9])
    c.out(h, F32, [6, 9])
    c.out(m, BOOL, [6, 9])
    return c


def case_no_fuse_broadcast():
    c = Case("no_fuse_different_shapes", 2, 0, "a [1,N] op feeding a [M,N] op: different "
             "iteration spaces stay two kernels")
    x = c.inp("x", F32, [1, 50])
    z = c.inp("z", F32, [20, 50])
    a = c.op("Exp", [x])
    y = c.op("Add", [a, z])
    c.out(y, F32, [20, 50])
    return c


def case_no_fuse_cycle():
    c = Case("no_fuse_path_leaves_group", 3, 0, "Relu feeds a ReduceSum and a Mul that also "
             "reads the sum: fusing Relu and Mul would need a cycle")
    x = c.inp("x", F32, [6, 10])
    a = c.op("Relu", [x])
    s = c.op("ReduceSum", [a, c.const([1], I64)], keepdims=1)
    y = c.op("Mul", [a, s])
    c.out(y, F32, [6, 10])
    return c


def case_epilogue_blocked():
    c = Case("no_epilogue_product_reused", 3, 1, "the MatMul's output is also a graph output: "
             "no epilogue, but its elementwise consumers still fuse")
    x = c.inp("x", F32, [4, 8])
    h = c.op("MatMul", [x, c.rand([8, 8])])
    t = c.op("Add", [h, c.const(1.0)])
    y = c.op("Tanh", [t])
    u = c.op("Exp", [x])
    c.out(h, F32, [4, 8])
    c.out(y, F32, [4, 8])
    c.out(u, F32, [4, 8])
    return c


CASES = [case_dag, case_mid_output, case_output_consumed, case_broadcast_ranks,
         case_cast_chain, case_where_clip, case_int_chain, case_float16_chain,
         case_gemm_bias_relu, case_gemm_c_scale, case_matmul_batched, case_matmul_wide_gelu,
         case_conv_residual, case_conv_plane_channel, case_conv1x1_rowbroadcast,
         case_conv3d_gather, case_conv_relu_band, case_conv1x1_relu_chunks, case_conv_relu_chanvec,
         case_conv1x1_residual_chunks, case_conv1x1_residual_sum,
         case_conv_affine_chanvec, case_conv_affine_band, case_conv1x1_affine_residual_chunks,
         case_conv_affine_residual_chanvec, case_conv_residual_sum_chanvec,
         case_epilogue_two_outputs, case_no_fuse_broadcast, case_no_fuse_cycle,
         case_epilogue_blocked]


# ---- running one ------------------------------------------------------------------


def check(case, args, extra, work):
    d = os.path.join(work, case.name)
    os.makedirs(os.path.join(d, "out"))
    path = os.path.join(d, "model.onnx")
    onnx.save(case.model(), path)
    try:
        ref = rltest.ort_reference(path, case.feeds, threads=1)
    except Exception as e:
        return "skip", f"onnxruntime cannot run it: {str(e).splitlines()[0]}"

    # 1. fusion happened (or not) as expected
    c_path = os.path.join(d, "model.c")
    r = rltest.run([args.rlopt, path, "-o", c_path, "--remarks"] + extra, timeout=args.timeout)
    if not r.ok:
        return "fail", f"rlopt -o model.c: {r.describe(args.stderr_lines)}"
    with open(c_path) as f:
        # kernel entries: a vectorized one is `static RL_TARGETS void k...`, a
        # threaded one also has a `k..._range` body and a `k..._task` adapter
        names = [n for n in re.findall(r"^static (?:RL_TARGETS )?void (k\w+)\(", f.read(), re.M)
                 if not n.endswith(("_range", "_task"))]
    fused = [n for n in names if "_fused_" in n]
    fusing = not any(a in ("-O0", "-O1") or a.startswith("--passes") for a in extra)
    if fusing and (len(names) != case.kernels or len(fused) != case.fused):
        applied = [ln for ln in r.stderr.splitlines() if ln.startswith("remark: fuse:")]
        return "fail", (f"{len(names)} kernels ({len(fused)} fused), expected {case.kernels} "
                        f"({case.fused} fused): {', '.join(names)}\n    " + "\n    ".join(applied))

    # 2. same results as onnxruntime
    cmd = [args.rlopt, "run", path]
    for k, (name, a) in enumerate(case.feeds):
        p = os.path.join(d, f"input_{k}.pb")
        rltest.write_pb(p, a, name)
        cmd += ["-i", p]
    cmd += ["-d", os.path.join(d, "out")] + extra
    r = rltest.run(cmd, timeout=args.timeout)
    if not r.ok:
        return "fail", f"rlopt run: {r.describe(args.stderr_lines)}"
    worst = 0.0
    for k, expected in enumerate(ref):
        p = os.path.join(d, "out", f"output_{k}.pb")
        if not os.path.exists(p):
            return "fail", f"output_{k}.pb not written"
        _, got = rltest.read_pb(p)
        ok, msg, mabs, _ = rltest.compare(got, np.asarray(expected), rtol=case.rtol or args.rtol,
                                          atol=args.atol)
        if not ok:
            return "fail", f"output {k} ({case.outputs[k].name}): {msg}"
        worst = max(worst, mabs or 0.0)
    return "pass", f"{len(names)} kernels ({len(fused)} fused); max abs err {worst:.3g}"


def main():
    ap = rltest.make_parser(__doc__.split("\n\n")[0])
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="run only cases whose name contains this text (repeatable)")
    ap.add_argument("--rlopt-args", default="",
                    help="extra flags for rlopt (both the -o and the run call)")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--stderr-lines", type=int, default=12)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()
    if not args.rlopt:
        ap.error("--rlopt is required")
    extra = shlex.split(args.rlopt_args)
    work = tempfile.mkdtemp(prefix="rlopt-fusion.")
    tally = rltest.Tally()
    try:
        for build in CASES:
            case = build()
            if args.patterns and not any(p in case.name for p in args.patterns):
                continue
            try:
                status, msg = check(case, args, extra, work)
            except Exception as e:  # a bug here must not hide the other cases
                status, msg = "fail", f"driver error: {type(e).__name__}: {e}"
            tally.add(status)
            print(f"{status.upper():4} {case.name:<34} {msg}", flush=True)
            if args.verbose:
                print(f"     {case.doc}")
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
