#!/usr/bin/env python3
"""Generate rlopt's example models.

Every model is built with onnx.helper from weights drawn by
numpy.random.default_rng(<fixed seed>), so the bytes written are the same on
every run (opset 17, IR version 8, no timestamps, no value_info).

  gpt_block.onnx          GPT-style decoder block: x [1,16,64] -> y [1,16,64]
                          (d_model 64, 4 heads, d_ff 256, causal mask, erf GELU)
  mlp.onnx                batch-1 MLP: x [1,256] -> Gemm/MatMul/Gemm -> softmax [1,10]
  resnet_small.onnx       small residual CNN: x [1,3,32,32] -> logits [1,10]
  elementwise_chain.onnx  10 elementwise ops over x [4194304] (memory-bound)
  tiny_mlp_dynamic.onnx   x [batch,8] -> MatMul+Add+Relu -> y [batch,4]

For the static models except elementwise_chain (whose input alone is 16 MiB)
it also writes a reference test set in the layout of the ONNX backend tests:
<model>_data/input_0.pb (normal random input, fixed seed) and
<model>_data/output_0.pb (computed by onnxruntime on the CPU).

Usage: gen_models.py [--out DIR] [--no-data] [--no-check]
"""

import argparse
import hashlib
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
F32 = TensorProto.FLOAT


class Builder:
    """Collects nodes and initializers; names nodes <prefix>/<op>_<n>."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.count = {}

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def weight(self, name, shape, fan_in, gain=1.0):
        w = self.rng.standard_normal(shape) * (gain / np.sqrt(fan_in))
        return self.init(name, w.astype(np.float32))

    def bias(self, name, n, scale=0.1):
        return self.init(name, (self.rng.standard_normal(n) * scale).astype(np.float32))

    def scalar(self, name, v):
        return self.init(name, np.array(v, dtype=np.float32))

    def i64(self, name, vals):
        return self.init(name, np.array(vals, dtype=np.int64))

    def op(self, op_type, inputs, outputs=None, name=None, **attrs):
        n = self.count.get(op_type, 0)
        self.count[op_type] = n + 1
        if name is None:
            name = f"{op_type.lower()}_{n}"
        if outputs is None:
            outputs = [name]
        elif isinstance(outputs, str):
            outputs = [outputs]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=name, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def model(self, graph_name, inputs, outputs, doc):
        graph = helper.make_graph(self.nodes, graph_name, inputs, outputs, self.inits)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            ir_version=IR_VERSION,
            producer_name="rlopt-examples",
            producer_version="1",
            doc_string=doc,
        )
        return model


def gpt_block():
    S, D, H, F = 16, 64, 4, 256
    dh = D // H
    b = Builder(seed=1)

    def layernorm(x, tag):
        g = b.init(f"{tag}.gamma", (1.0 + 0.1 * b.rng.standard_normal(D)).astype(np.float32))
        beta = b.bias(f"{tag}.beta", D)
        return b.op("LayerNormalization", [x, g, beta], name=tag, axis=-1, epsilon=1e-5)

    # attention
    h = layernorm("x", "ln_1")
    qkv = b.op("MatMul", [h, b.weight("attn.c_attn.weight", (D, 3 * D), D)], name="attn.c_attn.matmul")
    qkv = b.op("Add", [qkv, b.bias("attn.c_attn.bias", 3 * D)], name="attn.c_attn.add")
    q, k, v = b.op("Split", [qkv, b.i64("attn.split_sizes", [D, D, D])],
                   outputs=["attn.q", "attn.k", "attn.v"], name="attn.split", axis=-1)
    heads_shape = b.i64("attn.heads_shape", [1, S, H, dh])
    q = b.op("Reshape", [q, heads_shape], name="attn.q.reshape")
    q = b.op("Transpose", [q], name="attn.q.transpose", perm=[0, 2, 1, 3])      # [1,H,S,dh]
    k = b.op("Reshape", [k, heads_shape], name="attn.k.reshape")
    kt = b.op("Transpose", [k], name="attn.k.transpose", perm=[0, 2, 3, 1])     # [1,H,dh,S]
    v = b.op("Reshape", [v, heads_shape], name="attn.v.reshape")
    v = b.op("Transpose", [v], name="attn.v.transpose", perm=[0, 2, 1, 3])      # [1,H,S,dh]
    s = b.op("MatMul", [q, kt], name="attn.qk")                                  # [1,H,S,S]
    s = b.op("Mul", [s, b.scalar("attn.scale", 1.0 / np.sqrt(dh))], name="attn.scale_mul")
    mask = np.triu(np.full((S, S), -1e9, dtype=np.float32), k=1).reshape(1, 1, S, S)
    s = b.op("Add", [s, b.init("attn.causal_mask", mask)], name="attn.mask_add")
    p = b.op("Softmax", [s], name="attn.softmax", axis=-1)
    a = b.op("MatMul", [p, v], name="attn.pv")                                   # [1,H,S,dh]
    a = b.op("Transpose", [a], name="attn.merge.transpose", perm=[0, 2, 1, 3])  # [1,S,H,dh]
    a = b.op("Reshape", [a, b.i64("attn.merge_shape", [1, S, D])], name="attn.merge.reshape")
    a = b.op("MatMul", [a, b.weight("attn.c_proj.weight", (D, D), D)], name="attn.c_proj.matmul")
    a = b.op("Add", [a, b.bias("attn.c_proj.bias", D)], name="attn.c_proj.add")
    r = b.op("Add", ["x", a], name="residual_1")

    # MLP with the exact (erf) GELU written out: 0.5 * x * (1 + erf(x / sqrt(2)))
    h = layernorm(r, "ln_2")
    h = b.op("MatMul", [h, b.weight("mlp.c_fc.weight", (D, F), D)], name="mlp.c_fc.matmul")
    h = b.op("Add", [h, b.bias("mlp.c_fc.bias", F)], name="mlp.c_fc.add")
    t = b.op("Div", [h, b.scalar("mlp.gelu.sqrt2", np.sqrt(2.0))], name="mlp.gelu.div")
    t = b.op("Erf", [t], name="mlp.gelu.erf")
    t = b.op("Add", [t, b.scalar("mlp.gelu.one", 1.0)], name="mlp.gelu.add")
    t = b.op("Mul", [h, t], name="mlp.gelu.mul")
    t = b.op("Mul", [t, b.scalar("mlp.gelu.half", 0.5)], name="mlp.gelu.half_mul")
    t = b.op("MatMul", [t, b.weight("mlp.c_proj.weight", (F, D), F)], name="mlp.c_proj.matmul")
    t = b.op("Add", [t, b.bias("mlp.c_proj.bias", D)], name="mlp.c_proj.add")
    b.op("Add", [r, t], outputs="y", name="residual_2")

    return b.model(
        "gpt_block",
        [helper.make_tensor_value_info("x", F32, [1, S, D])],
        [helper.make_tensor_value_info("y", F32, [1, S, D])],
        "GPT-style decoder block: seq 16, d_model 64, 4 heads, d_ff 256, causal self-attention.",
    )


def mlp():
    b = Builder(seed=2)
    h = b.op("Gemm", ["x", b.weight("fc1.weight", (512, 256), 256, gain=np.sqrt(2)),
                      b.bias("fc1.bias", 512)], name="fc1", transB=1)
    h = b.op("Relu", [h], name="fc1.relu")
    h = b.op("MatMul", [h, b.weight("fc2.weight", (512, 512), 512, gain=np.sqrt(2))], name="fc2.matmul")
    h = b.op("Add", [h, b.bias("fc2.bias", 512)], name="fc2.add")
    h = b.op("Relu", [h], name="fc2.relu")
    h = b.op("Gemm", [h, b.weight("fc3.weight", (10, 512), 512), b.bias("fc3.bias", 10)],
             name="fc3", transB=1)
    b.op("Softmax", [h], outputs="y", name="softmax", axis=-1)
    return b.model(
        "mlp",
        [helper.make_tensor_value_info("x", F32, [1, 256])],
        [helper.make_tensor_value_info("y", F32, [1, 10])],
        "Batch-1 MLP 256-512-512-10: memory-bound weight streaming.",
    )


def resnet_small():
    b = Builder(seed=3)

    def conv(x, tag, cin, cout, k, stride=1, bias=False, relu_gain=True):
        w = b.weight(f"{tag}.weight", (cout, cin, k, k), cin * k * k, gain=np.sqrt(2) if relu_gain else 1.0)
        ins = [x, w] + ([b.bias(f"{tag}.bias", cout)] if bias else [])
        return b.op("Conv", ins, name=tag, kernel_shape=[k, k], strides=[stride, stride],
                    pads=[k // 2] * 4)

    def bn(x, tag, c):
        scale = (1.0 + 0.1 * b.rng.standard_normal(c)).astype(np.float32)
        shift = (0.1 * b.rng.standard_normal(c)).astype(np.float32)
        mean = (0.1 * b.rng.standard_normal(c)).astype(np.float32)
        var = b.rng.uniform(0.5, 1.5, c).astype(np.float32)
        ins = [x, b.init(f"{tag}.scale", scale), b.init(f"{tag}.bias", shift),
               b.init(f"{tag}.mean", mean), b.init(f"{tag}.var", var)]
        return b.op("BatchNormalization", ins, name=tag, epsilon=1e-5)

    def block(x, tag, cin, cout, stride):
        h = b.op("Relu", [bn(conv(x, f"{tag}.conv1", cin, cout, 3, stride), f"{tag}.bn1", cout)],
                 name=f"{tag}.relu1")
        h = bn(conv(h, f"{tag}.conv2", cout, cout, 3), f"{tag}.bn2", cout)
        skip = x
        if stride != 1 or cin != cout:
            skip = conv(x, f"{tag}.proj", cin, cout, 1, stride, bias=True, relu_gain=False)
        h = b.op("Add", [h, skip], name=f"{tag}.add")
        return b.op("Relu", [h], name=f"{tag}.relu2")

    h = b.op("Relu", [bn(conv("x", "stem.conv", 3, 16, 3), "stem.bn", 16)], name="stem.relu")
    h = block(h, "layer1", 16, 16, 1)
    h = block(h, "layer2", 16, 32, 2)
    h = b.op("GlobalAveragePool", [h], name="pool")
    h = b.op("Flatten", [h], name="flatten", axis=1)
    b.op("Gemm", [h, b.weight("fc.weight", (10, 32), 32), b.bias("fc.bias", 10)],
         outputs="y", name="fc", transB=1)
    return b.model(
        "resnet_small",
        [helper.make_tensor_value_info("x", F32, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", F32, [1, 10])],
        "Small residual CNN: stem, two residual blocks (second strided with 1x1 projection), GAP, FC.",
    )


def elementwise_chain():
    n = 4194304
    b = Builder(seed=4)
    h = b.op("Mul", ["x", b.scalar("c_mul", 1.5)], name="mul_0")
    h = b.op("Add", [h, b.scalar("c_add", 0.25)], name="add_0")
    h = b.op("Relu", [h], name="relu_0")
    h = b.op("Sub", [h, b.scalar("c_sub", 0.5)], name="sub_0")
    h = b.op("Mul", [h, b.scalar("c_mul2", -2.0)], name="mul_1")
    h = b.op("Tanh", [h], name="tanh_0")
    h = b.op("Abs", [h], name="abs_0")
    h = b.op("Add", [h, b.scalar("c_eps", 1e-3)], name="add_1")
    h = b.op("Sqrt", [h], name="sqrt_0")
    b.op("Neg", [h], outputs="y", name="neg_0")
    assert len(b.nodes) == 10
    return b.model(
        "elementwise_chain",
        [helper.make_tensor_value_info("x", F32, [n])],
        [helper.make_tensor_value_info("y", F32, [n])],
        "Ten elementwise operators over 4M floats: the textbook case for fusion.",
    )


def tiny_mlp_dynamic():
    b = Builder(seed=5)
    h = b.op("MatMul", ["x", b.weight("fc.weight", (8, 4), 8)], name="fc.matmul")
    h = b.op("Add", [h, b.bias("fc.bias", 4)], name="fc.add")
    b.op("Relu", [h], outputs="y", name="relu")
    return b.model(
        "tiny_mlp_dynamic",
        [helper.make_tensor_value_info("x", F32, ["batch", 8])],
        [helper.make_tensor_value_info("y", F32, ["batch", 4])],
        "x [batch,8] -> MatMul+Add+Relu -> y [batch,4]: a symbolic batch dimension.",
    )


# name -> (builder, write a reference data set)
MODELS = {
    "gpt_block": (gpt_block, True),
    "mlp": (mlp, True),
    "resnet_small": (resnet_small, True),
    "elementwise_chain": (elementwise_chain, False),
    "tiny_mlp_dynamic": (tiny_mlp_dynamic, False),
}


def ort_run(model_bytes, feeds):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def random_feed(model, rng, batch=1):
    feeds = {}
    for vi in model.graph.input:
        shape = [d.dim_value if d.HasField("dim_value") else batch
                 for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def write_atomic(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=here, help="output directory (default: %(default)s)")
    ap.add_argument("--no-data", action="store_true", help="do not write the <model>_data test sets")
    ap.add_argument("--no-check", action="store_true", help="skip onnx.checker and the onnxruntime run")
    ap.add_argument("models", nargs="*", help=f"subset of: {', '.join(MODELS)}")
    args = ap.parse_args()

    for m in args.models:
        if m not in MODELS:
            ap.error(f"unknown model {m!r}")
    os.makedirs(args.out, exist_ok=True)
    for i, (name, (build, with_data)) in enumerate(MODELS.items()):
        if args.models and name not in args.models:
            continue
        model = build()
        data = model.SerializeToString(deterministic=True)
        if not args.no_check:
            onnx.checker.check_model(model, full_check=True)
        path = os.path.join(args.out, f"{name}.onnx")
        write_atomic(path, data)
        outs = None
        if not args.no_check or (with_data and not args.no_data):
            feeds = random_feed(model, np.random.default_rng(100 + i), batch=3)
            outs = ort_run(data, feeds)
            for o in outs:
                if not np.all(np.isfinite(o)):
                    sys.exit(f"gen_models: {name}: onnxruntime output is not finite")
        if with_data and not args.no_data:
            ddir = os.path.join(args.out, f"{name}_data")
            os.makedirs(ddir, exist_ok=True)
            for k, vi in enumerate(model.graph.input):
                t = numpy_helper.from_array(feeds[vi.name], vi.name)
                write_atomic(os.path.join(ddir, f"input_{k}.pb"), t.SerializeToString())
            for k, vi in enumerate(model.graph.output):
                t = numpy_helper.from_array(outs[k], vi.name)
                write_atomic(os.path.join(ddir, f"output_{k}.pb"), t.SerializeToString())
        print(f"{path}: {len(model.graph.node)} nodes, {len(data)} bytes, "
              f"sha256 {hashlib.sha256(data).hexdigest()[:16]}")


if __name__ == "__main__":
    main()
