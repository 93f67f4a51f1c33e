#!/usr/bin/env python3
"""Models of kinds the examples do not cover, written here with onnx.helper
for bench_ort.py and bench_cnn_split.py (seeded normal weights):

  bert2.onnx    a 2-layer BERT-base-shaped encoder at sequence 128: pre-norm
                LayerNormalization, Q/K/V/O MatMuls with bias, 12 heads
                (Reshape/Transpose), scaled QK^T, Softmax, the erf GELU
                spelled out (Mul, Erf, Add, Mul), 768 -> 3072 -> 768, residuals
  rnn.onnx      a batch-1 LSTM (256 units, input 128) then a GRU (256 units)
                over 64 steps: the recurrences are chains of GEMVs
  mbv2.onnx     a MobileNet-v2-shaped CNN at 224x224: inverted residual blocks
                (1x1 expand, 3x3 depthwise, 1x1 project, Clip(0, 6)) in the
                paper's seven stages, 1x1 to 1280, GlobalAveragePool, Gemm

Usage: unseen_models.py [--out DIR]     (default: build/unseen)
then e.g. bench/bench_ort.py --models build/unseen/rnn.onnx --variants plain --ours-threads 2
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))


class Builder:
    def __init__(self, seed):
        self.rs = np.random.RandomState(seed)
        self.inits, self.nodes = [], []

    def w(self, name, *shape, scale=None):
        if scale is None:  # He-style for weights, small for biases
            scale = np.sqrt(2.0 / np.prod(shape[1:])) if len(shape) > 1 else 0.01
        a = (self.rs.randn(*shape) * scale).astype(np.float32)
        self.inits.append(nh.from_array(a, name))
        return name

    def const(self, name, arr):
        self.inits.append(nh.from_array(np.asarray(arr), name))
        return name

    def n(self, op, ins, **kw):
        out = f"t{len(self.nodes)}"
        self.nodes.append(h.make_node(op, ins, [out], name=f"n{len(self.nodes)}", **kw))
        return out

    def model(self, name, inputs, outputs, opset):
        g = h.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
        onnx.checker.check_model(m)
        return m


def bert2():
    S, D, H, F, L = 128, 768, 12, 3072, 2
    b = Builder(0)
    b.const("shape_heads", np.array([1, S, H, D // H], np.int64))
    b.const("shape_back", np.array([1, S, D], np.int64))
    b.const("scale", np.array(1 / np.sqrt(D // H), np.float32))
    b.const("half", np.array(0.5, np.float32))
    b.const("one", np.array(1.0, np.float32))
    b.const("rsqrt2", np.array(1 / np.sqrt(2), np.float32))
    x = "x"
    for i in range(L):
        ln = b.n("LayerNormalization", [x, b.w(f"g{i}", D, scale=1), b.w(f"be{i}", D)],
                 axis=-1, epsilon=1e-5)
        proj = {}
        for p in "qkvo":
            proj[p] = (b.w(f"w{p}{i}", D, D, scale=0.02), b.w(f"b{p}{i}", D))
        q, k, v = (b.n("Add", [b.n("MatMul", [ln, proj[p][0]]), proj[p][1]]) for p in "qkv")
        qh = b.n("Transpose", [b.n("Reshape", [q, "shape_heads"])], perm=[0, 2, 1, 3])
        kh = b.n("Transpose", [b.n("Reshape", [k, "shape_heads"])], perm=[0, 2, 3, 1])
        vh = b.n("Transpose", [b.n("Reshape", [v, "shape_heads"])], perm=[0, 2, 1, 3])
        p = b.n("Softmax", [b.n("Mul", [b.n("MatMul", [qh, kh]), "scale"])], axis=-1)
        o = b.n("Reshape", [b.n("Transpose", [b.n("MatMul", [p, vh])], perm=[0, 2, 1, 3]),
                            "shape_back"])
        a = b.n("Add", [b.n("Add", [b.n("MatMul", [o, proj["o"][0]]), proj["o"][1]]), x])
        ln2 = b.n("LayerNormalization", [a, b.w(f"g2{i}", D, scale=1), b.w(f"be2{i}", D)],
                  axis=-1, epsilon=1e-5)
        f1 = b.n("Add", [b.n("MatMul", [ln2, b.w(f"w1{i}", D, F, scale=0.02)]), b.w(f"b1{i}", F)])
        gelu = b.n("Mul", [b.n("Mul", [f1, "half"]),
                           b.n("Add", [b.n("Erf", [b.n("Mul", [f1, "rsqrt2"])]), "one"])])
        f2 = b.n("Add", [b.n("MatMul", [gelu, b.w(f"w2{i}", F, D, scale=0.02)]), b.w(f"b2{i}", D)])
        x = b.n("Add", [f2, a])
    b.nodes.append(h.make_node("Identity", [x], ["y"], name="out"))
    return b.model("bert2", [h.make_tensor_value_info("x", T.FLOAT, [1, S, D])],
                   [h.make_tensor_value_info("y", T.FLOAT, [1, S, D])], 17)


def rnn():
    S, I, H = 64, 128, 256
    b = Builder(0)
    b.w("W", 1, 4 * H, I, scale=0.05)
    b.w("R", 1, 4 * H, H, scale=0.05)
    b.w("B", 1, 8 * H, scale=0.05)
    b.w("W2", 1, 3 * H, H, scale=0.05)
    b.w("R2", 1, 3 * H, H, scale=0.05)
    b.const("ax", np.array([1], np.int64))
    b.nodes += [h.make_node("LSTM", ["x", "W", "R", "B"], ["Y", "Yh"], hidden_size=H, name="lstm"),
                h.make_node("Squeeze", ["Y", "ax"], ["Ys"], name="squeeze"),
                h.make_node("GRU", ["Ys", "W2", "R2"], ["Y2", "Y2h"], hidden_size=H, name="gru")]
    return b.model("rnn", [h.make_tensor_value_info("x", T.FLOAT, [S, 1, I])],
                   [h.make_tensor_value_info("Y2", T.FLOAT, [S, 1, 1, H])], 17)


def mbv2():
    b = Builder(0)
    b.const("lo", np.array(0, np.float32))
    b.const("hi", np.array(6, np.float32))

    def conv(x, cin, cout, k, s, g=1, act=True):
        i = len(b.nodes)
        y = b.n("Conv", [x, b.w(f"w{i}", cout, cin // g, k, k), b.w(f"b{i}", cout)],
                kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4, group=g)
        return b.n("Clip", [y, "lo", "hi"]) if act else y

    x, cin = conv("x", 3, 32, 3, 2), 32
    for t, c, reps, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                          (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for r in range(reps):
            st, hid = (s if r == 0 else 1), cin * t
            y = conv(x, cin, hid, 1, 1) if t != 1 else x
            y = conv(conv(y, hid, hid, 3, st, g=hid), hid, c, 1, 1, act=False)
            x = b.n("Add", [x, y]) if st == 1 and cin == c else y
            cin = c
    x = b.n("Flatten", [b.n("GlobalAveragePool", [conv(x, cin, 1280, 1, 1)])])
    b.nodes.append(h.make_node("Gemm", [x, b.w("fcw", 1000, 1280), b.w("fcb", 1000)], ["y"],
                               transB=1, name="fc"))
    return b.model("mbv2", [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 224, 224])],
                   [h.make_tensor_value_info("y", T.FLOAT, [1, 1000])], 13)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.normpath(os.path.join(HERE, "..", "build", "unseen")))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name, fn in (("bert2", bert2), ("rnn", rnn), ("mbv2", mbv2)):
        path = os.path.join(a.out, name + ".onnx")
        onnx.save(fn(), path)
        print(path)


if __name__ == "__main__":
    main()
