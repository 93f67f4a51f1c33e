"""What a user meets first when loading an exported model (issue 13):

- a `-1` dimension (as some exporters write) is an unnamed symbol, bound by
  --shape or by the input files of `rlopt run`, never a load error; so is
  each '?' (paddle2onnx writes it on every unknown axis: two '?' axes may
  differ);
- one symbol bound to two different sizes on two axes is a load error that
  names the symbol and both sizes;
- the unsupported-operator error lists operators inside subgraphs (an If's
  branches) as well as the top-level ones.
"""

import os
import shutil
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402


def save(m, path):
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def model(nodes, inputs, outputs, opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def relu_minus_one():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    x.type.tensor_type.shape.dim[0].Clear()
    x.type.tensor_type.shape.dim[0].dim_value = -1
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return model([helper.make_node("Relu", ["x"], ["y"], name="r")], [x], [y])


def relu_question_dims():
    """paddle2onnx's way: '?' on every unknown axis (PP-OCR's classifier)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "?", "?"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return model([helper.make_node("Relu", ["x"], ["y"], name="r")], [x], [y])


def add_same_symbol():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "n"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return model([helper.make_node("Relu", ["x"], ["y"], name="r")], [x], [y])


def if_with_unknown_inside():
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    out = helper.make_tensor_value_info("o", TensorProto.FLOAT, [2])
    k = helper.make_tensor("k", TensorProto.FLOAT, [2], [1.0, 2.0])
    then_g = helper.make_graph([helper.make_node("Constant", [], ["o"], value=k),
                                ], "then", [], [out])
    else_g = helper.make_graph([helper.make_node("Bernoulli", ["k2"], ["o"], name="b")],
                               "else", [], [out])
    return model([helper.make_node("If", ["c"], ["y"], name="if0", then_branch=then_g,
                                   else_branch=else_g)], [c], [y])


def main():
    ap = rltest.make_parser(__doc__)
    args = ap.parse_args()
    rl = args.rlopt
    t = rltest.Tally()
    d = tempfile.mkdtemp(prefix="rl_dims_")
    try:
        def check(name, ok, detail):
            t.add("pass" if ok else "fail")
            print(f"  {'pass' if ok else 'fail'}: {name}: {detail}")

        mp = os.path.join(d, "m1.onnx")
        save(relu_minus_one(), mp)
        r = rltest.run([rl, mp, "--shape", "x=4x3", "-o", os.path.join(d, "m1.c")], timeout=60)
        check("-1 dim bound by --shape", r.returncode == 0, r.describe(3))
        xin = os.path.join(d, "x.pb")
        rltest.write_pb(xin, np.array([[-1, 2, -3]] * 5, dtype=np.float32), "x")
        out = os.path.join(d, "out")
        r = rltest.run([rl, "run", mp, "-i", xin, "-d", out], timeout=120)
        ok = r.returncode == 0
        if ok:
            _, got = rltest.read_pb(os.path.join(out, "output_0.pb"))
            ok = got.shape == (5, 3) and float(got.sum()) == 10.0
        check("-1 dim bound by the input file", ok, r.describe(3))

        mp = os.path.join(d, "m1q.onnx")
        save(relu_question_dims(), mp)
        xin = os.path.join(d, "xq.pb")
        rltest.write_pb(xin, np.full((1, 3, 2, 5), -1.0, dtype=np.float32), "x")
        out = os.path.join(d, "outq")
        r = rltest.run([rl, "run", mp, "-i", xin, "-d", out], timeout=120)
        ok = r.returncode == 0
        if ok:
            _, got = rltest.read_pb(os.path.join(out, "output_0.pb"))
            ok = got.shape == (1, 3, 2, 5) and float(got.sum()) == 0.0
        check("'?' dims are unrelated unnamed symbols", ok, r.describe(3))

        mp = os.path.join(d, "m2.onnx")
        save(add_same_symbol(), mp)
        r = rltest.run([rl, mp, "--shape", "x=3x4", "-o", os.path.join(d, "m2.c")], timeout=60)
        err = r.stderr.strip()
        check("one symbol, two sizes", r.returncode != 0 and "'n'" in err and "3" in err
              and "4" in err and len(err.splitlines()) == 1, err)

        mp = os.path.join(d, "m3.onnx")
        save(if_with_unknown_inside(), mp)
        r = rltest.run([rl, mp, "-o", os.path.join(d, "m3.c")], timeout=60)
        err = r.stderr.strip()
        check("operators inside subgraphs are listed", r.returncode != 0
              and "Bernoulli" in err, err)  # If itself is supported (onnx_subgraph.c)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    sys.exit(t.finish())


if __name__ == "__main__":
    main()
