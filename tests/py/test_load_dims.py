"""What a user meets first when loading an exported model (issue 13):

- a `-1` dimension (as some exporters write) is an unnamed symbol, bound by
  --shape or by the input files of `rlopt run`, never a load error; so is
  each '?' (paddle2onnx writes it on every unknown axis: two '?' axes may
  differ);
- one symbol bound to two different sizes on two axes is a load error that
  names the symbol and both sizes;
- the unsupported-operator error lists operators inside subgraphs (an If's
  branches) as well as the top-level ones;
- `-1` dims are bound by --dim too (their symbol is VALUE_dimAXIS), and a
  symbol two axes bind differently is a load error through `rlopt run` as
  well (not a failure inside the compiled program);
- `rlopt run -i` files are matched to the inputs by the names inside them
  (by position when unnamed), `-i a.pb b.pb` works like repeated -i, and
  --calibrate files are matched by name the same way;
- a model of an IR version newer than the reader knows loads with a warning
  (and an unknown operator in it is still the usual error);
- messages about an unbound dimension name the dimension that is unbound,
  and offer --batch only when it is the batch (a bound batch with a free
  width gets --dim W=N).
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


def sub_two_inputs():
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    return model([helper.make_node("Sub", ["a", "b"], ["y"], name="s")], [a, b], [y])


def matmul_calib():
    """y = a @ W + b with inputs of different shapes (a 1x16, b 1x32)."""
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 16])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])
    w = helper.make_tensor("w", TensorProto.FLOAT, [16, 32],
                           np.random.default_rng(3).standard_normal(16 * 32).astype(np.float32))
    g = helper.make_graph([helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
                           helper.make_node("Add", ["t", "b"], ["y"], name="add")], "g", [a, b], [y],
                          initializer=[w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def matmul_free_width():
    """x [batch, seq, 4] @ W: with --batch bound, seq is what is free."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 8], [0.5] * 32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g", [x], [y],
                          initializer=[w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


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

        # -1 bound by --dim (the unnamed symbol is VALUE_dimAXIS)
        mp = os.path.join(d, "m1.onnx")
        r = rltest.run([rl, mp, "--dim", "x_dim0=6", "-o", os.path.join(d, "m1d.c")], timeout=60)
        ok = r.returncode == 0
        if ok:
            with open(os.path.join(d, "m1d.h")) as f:
                ok = "6x3" in f.read()
        check("-1 dim bound by --dim", ok, r.describe(3))

        # one symbol, two sizes, through rlopt run: a load error, one line
        mp = os.path.join(d, "m2.onnx")
        xin = os.path.join(d, "x34.pb")
        rltest.write_pb(xin, np.zeros((3, 4), dtype=np.float32), "x")
        r = rltest.run([rl, "run", mp, "-i", xin, "-d", os.path.join(d, "o2")], timeout=120)
        err = r.stderr.strip()
        check("one symbol, two sizes, rlopt run", r.returncode == 2 and "'n'" in err and "3" in err
              and "4" in err and len(err.splitlines()) == 1 and "program" not in err, err)

        # -i files by the names inside them, in any order; by position unnamed
        mp = os.path.join(d, "sub.onnx")
        save(sub_two_inputs(), mp)
        av = np.arange(6, dtype=np.float32).reshape(2, 3)
        bv = np.full((2, 3), 10, dtype=np.float32)
        pa, pb = os.path.join(d, "a.pb"), os.path.join(d, "b.pb")
        rltest.write_pb(pa, av, "a")
        rltest.write_pb(pb, bv, "b")
        ua, ub = os.path.join(d, "ua.pb"), os.path.join(d, "ub.pb")
        rltest.write_pb(ua, av)
        rltest.write_pb(ub, bv)
        for label, argv in (("named files in reverse, -i b a", ["-i", pb, pa]),
                            ("named files in reverse, -i b -i a", ["-i", pb, "-i", pa]),
                            ("unnamed files by position, -i a b", ["-i", ua, ub]),
                            ("-i before the model", None)):
            out = os.path.join(d, "o_" + str(abs(hash(label))))
            cmd = [rl, "run", mp] + argv + ["-d", out] if argv else \
                [rl, "run", "-i", pb, pa, mp, "-d", out]
            r = rltest.run(cmd, timeout=120)
            ok = r.returncode == 0
            if ok:
                _, got = rltest.read_pb(os.path.join(out, "output_0.pb"))
                ok = np.array_equal(got, av - bv)
            check(label, ok, r.describe(3))
        r = rltest.run([rl, "run", mp, "-i", ub, ua, "-d", os.path.join(d, "o_pos")], timeout=120)
        ok = r.returncode == 0
        if ok:
            _, got = rltest.read_pb(os.path.join(d, "o_pos", "output_0.pb"))
            ok = np.array_equal(got, bv - av)
        check("unnamed files stay in the order given", ok, r.describe(3))

        # --calibrate files by name too (their shapes differ, so the order shows)
        mp = os.path.join(d, "mmc.onnx")
        save(matmul_calib(), mp)
        ca, cb = os.path.join(d, "ca.pb"), os.path.join(d, "cb.pb")
        rng = np.random.default_rng(5)
        rltest.write_pb(ca, rng.standard_normal((1, 16)).astype(np.float32), "a")
        rltest.write_pb(cb, rng.standard_normal((1, 32)).astype(np.float32), "b")
        r = rltest.run([rl, mp, "--quantize", "int8", "--calibrate", cb + "," + ca,
                        "-o", os.path.join(d, "mmc.c")], timeout=120)
        check("--calibrate files by name", r.returncode == 0, r.describe(3))

        # a newer IR version loads with a warning; an unknown operator in it
        # is still the one-line unsupported-operator error
        mp = os.path.join(d, "ir99.onnx")
        m = relu_minus_one()
        m.ir_version = 99
        save(m, mp)
        r = rltest.run([rl, mp, "--shape", "x=2x3", "-o", os.path.join(d, "ir99.c")], timeout=60)
        check("ir_version 99 loads with a warning", r.returncode == 0 and "warning" in r.stderr
              and "ir_version 99" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
              r.describe(3))
        m.graph.node[0].op_type = "NoSuchOp"
        save(m, mp)
        r = rltest.run([rl, mp, "--shape", "x=2x3", "-o", os.path.join(d, "ir99.c")], timeout=60)
        check("ir_version 99 with an unknown operator", r.returncode == 2
              and "NoSuchOp" in r.stderr, r.describe(3))

        # the unbound dimension is named: a bound batch with a free seq
        mp = os.path.join(d, "fw.onnx")
        save(matmul_free_width(), mp)
        r = rltest.run([rl, mp, "--batch", "2", "-o", os.path.join(d, "fw.c")], timeout=60)
        err = r.stderr.strip()
        check("unbound width named, no --batch offered", r.returncode == 2 and "'seq'" in err
              and "--dim seq=N" in err and "--batch" not in err, err)
        r = rltest.run([rl, mp, "--batch", "2", "--remarks", "-o", os.path.join(d, "fw_out.onnx")],
                       timeout=60)
        lines = [ln for ln in (r.stdout + r.stderr).splitlines()
                 if "remark" in ln and ("bind" in ln or "unbound" in ln)]
        check("remarks name the free dim", len(lines) >= 2 and all(
            "'seq'" in ln and "--dim seq=N" in ln and "--batch" not in ln for ln in lines),
            "\n".join(lines) or r.describe(6))
        r = rltest.run([rl, mp, "--dim", "seq=5", "-o", os.path.join(d, "fw2.c")], timeout=60)
        err = r.stderr.strip()
        check("an unbound batch offers --batch", r.returncode == 2 and "'batch'" in err
              and "--batch N" in err, err)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    sys.exit(t.finish())


if __name__ == "__main__":
    main()
