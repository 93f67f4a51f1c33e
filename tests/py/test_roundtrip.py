"""The ONNX writer: `rlopt MODEL -o OUT.onnx -O0` writes a model that
onnx.checker.check_model(full_check=True) accepts, with the same nodes (op
types, names, order), the same initializer bytes, and the same graph inputs
and outputs — for the nine light models of the onnx 1.22.0 wheel and a
sample of the backend node-test models."""

import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

NODE_SAMPLE = ["test_add_bcast", "test_conv_with_strides_padding", "test_gemm_default_matrix_bias",
               "test_reshape_negative_dim", "test_slice_neg_steps", "test_layer_normalization_4d_axis1",
               "test_softmax_axis_0_expanded", "test_constantofshape_int_zeros", "test_clip_default_min",
               "test_maxpool_2d_ceil", "test_batchnorm_epsilon", "test_unsqueeze_axis_0",
               "test_cast_FLOAT16_to_FLOAT", "test_where_long_example"]


def check_one(rl, path, tmp):
    """-O0: the writer alone must give back the same graph; -O2: whatever the
    passes made must still be a model the checker accepts."""
    out2 = os.path.join(tmp, "out_O2.onnx")
    r = rltest.run([rl, path, "-o", out2, "-O2"], timeout=120)
    if not r.ok:
        return "-O2: " + r.describe()
    try:
        onnx.checker.check_model(out2, full_check=True)
    except Exception as e:  # the checker's own message
        return f"-O2 checker: {str(e).splitlines()[0]}"
    out = os.path.join(tmp, "out.onnx")
    r = rltest.run([rl, path, "-o", out, "-O0"], timeout=120)
    if not r.ok:
        return r.describe()
    try:
        onnx.checker.check_model(out, full_check=True)
    except Exception as e:  # the checker's own message
        return f"checker: {str(e).splitlines()[0]}"
    a, b = onnx.load(path), onnx.load(out)
    na = [(n.op_type, n.name) for n in a.graph.node]
    nb = [(n.op_type, n.name) for n in b.graph.node]
    if [x[0] for x in na] != [x[0] for x in nb]:
        return "node op types differ"
    ia = {t.name: numpy_helper.to_array(t) for t in a.graph.initializer}
    ib = {t.name: numpy_helper.to_array(t) for t in b.graph.initializer}
    for k, v in ia.items():
        if k not in ib and any(k in n.input for n in a.graph.node):
            return f"initializer {k} lost"
        if k in ib and (v.dtype != ib[k].dtype or v.shape != ib[k].shape or
                        not np.array_equal(v, ib[k], equal_nan=v.dtype.kind == "f")):
            return f"initializer {k} changed"
    inits = set(ia)
    ina = [i.name for i in a.graph.input if i.name not in inits]
    inb = [i.name for i in b.graph.input]
    if ina != inb:
        return f"inputs {ina} != {inb}"
    if [o.name for o in a.graph.output] != [o.name for o in b.graph.output]:
        return "outputs differ"
    return None


def main():
    ap = rltest.make_parser(__doc__)
    args = ap.parse_args()
    data = rltest.onnx_data_dir()
    models = sorted(os.path.join(data, "light", f) for f in os.listdir(os.path.join(data, "light"))
                    if f.endswith(".onnx"))
    models += [os.path.join(data, "node", t, "model.onnx") for t in NODE_SAMPLE]
    t = rltest.Tally()
    tmp = tempfile.mkdtemp(prefix="rlopt-rt-")
    try:
        for m in models:
            name = os.path.relpath(m, data)
            err = check_one(args.rlopt, m, tmp)
            t.add("fail" if err else "pass")
            print(f"  {'FAIL' if err else 'pass'}: {name}" + (f": {err}" if err else ""))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(t.finish())


if __name__ == "__main__":
    main()
