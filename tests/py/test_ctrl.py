"""Control flow, sequences and optionals (frontends/onnx/onnx_subgraph.c),
beyond what the ONNX node tests cover:

- an If whose condition is a build-time constant builds only its branch (the
  other branch's nodes are not in the generated C); a run-time If nested in a
  Loop body reads outer-scope values and matches onnxruntime for both values
  of the condition;
- Scan with reversed input and output directions and non-zero axes, and a
  Scan over a symbolic length that `rlopt run` binds from the input file;
- sequences of tensors inside a model with tensor inputs and outputs
  (SplitToSequence, SequenceErase, SequenceInsert, SequenceAt,
  SequenceLength, ConcatFromSequence) match onnxruntime;
- bad input is a one-line error naming the node and the reason: branches of
  different shapes under a run-time condition, a Loop whose run-time trip
  count nothing bounds, a Loop whose run-time condition leaves a scan
  output's length unknown, a trip count above the unroll limit, a run-time
  position among elements of different shapes (among elements of one shape it
  is a select, tests/py/test_seqio.py).
"""

import os
import shutil
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

F = TensorProto.FLOAT
I64 = TensorProto.INT64
B = TensorProto.BOOL


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


def const(name, arr):
    arr = np.asarray(arr)
    dt = {np.dtype(np.float32): F, np.dtype(np.int64): I64, np.dtype(np.bool_): B}[arr.dtype]
    return helper.make_node("Constant", [], [name], name=name + "_c",
                            value=helper.make_tensor(name + "_t", dt, arr.shape,
                                                     arr.flatten().tolist()))


def model(nodes, inputs, outputs, opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def save(m, path):
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


# ---- models ------------------------------------------------------------------


def if_const():
    """y = x * 2 when a constant true, else x + 100 (never built)."""
    tb = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["t"], name="then_mul")],
                           "then", [], [vi("t", F, [3])])
    eb = helper.make_graph([helper.make_node("Add", ["x", "hundred"], ["e"],
                                             name="else_add_never_built")],
                           "else", [], [vi("e", F, [3])])
    nodes = [const("c", np.array(True)), const("two", np.float32(2)),
             const("hundred", np.float32(100)),
             helper.make_node("If", ["c"], ["y"], name="if0", then_branch=tb, else_branch=eb)]
    return model(nodes, [vi("x", F, [3])], [vi("y", F, [3])])


def loop_with_if():
    """Loop 3 times over an accumulator; the body's If (run-time condition
    `flag`, an outer-scope value two levels up) adds x or subtracts it."""
    tb = helper.make_graph([helper.make_node("Add", ["acc_in", "x"], ["a"], name="ta")],
                           "then", [], [vi("a", F, [2])])
    eb = helper.make_graph([helper.make_node("Sub", ["acc_in", "x"], ["s"], name="es")],
                           "else", [], [vi("s", F, [2])])
    body = helper.make_graph(
        [helper.make_node("If", ["flag"], ["acc_out"], name="inner_if", then_branch=tb,
                          else_branch=eb),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
         helper.make_node("Mul", ["acc_out", "x"], ["row"], name="row")],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("acc_in", F, [2])],
        [vi("cond_out", B, []), vi("acc_out", F, [2]), vi("row", F, [2])])
    nodes = [const("n", np.int64(3)),
             helper.make_node("Loop", ["n", "", "acc0"], ["acc", "rows"], name="loop0",
                              body=body)]
    return model(nodes, [vi("flag", B, []), vi("x", F, [2]), vi("acc0", F, [2])],
                 [vi("acc", F, [2]), vi("rows", F, [3, 2])])


def scan_reverse(sym=False):
    """Running sum over axis 1 of x, read backwards, written backwards on axis 1."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "e"], ["s_out"], name="acc"),
         helper.make_node("Identity", ["s_out"], ["o"], name="o")],
        "body", [vi("s_in", F, [2]), vi("e", F, [2])],
        [vi("s_out", F, [2]), vi("o", F, [2])])
    n = "T" if sym else 4
    nodes = [helper.make_node("Scan", ["s0", "x"], ["s", "ys"], name="scan0", body=body,
                              num_scan_inputs=1, scan_input_axes=[1],
                              scan_input_directions=[1], scan_output_axes=[1],
                              scan_output_directions=[1])]
    return model(nodes, [vi("s0", F, [2]), vi("x", F, [2, n])],
                 [vi("s", F, [2]), vi("ys", F, [2, n])])


def sequences():
    """Split x [5,2] into rows, drop row 1, put x[0]*10 in front, take the
    last, concatenate with a new axis, and count."""
    nodes = [
        helper.make_node("SplitToSequence", ["x"], ["rows"], name="split", axis=0, keepdims=0),
        const("one", np.int64(1)),
        helper.make_node("SequenceErase", ["rows", "one"], ["rows2"], name="erase"),
        const("zero", np.int64(0)),
        helper.make_node("SequenceAt", ["rows2", "zero"], ["r0"], name="at0"),
        const("ten", np.float32(10)),
        helper.make_node("Mul", ["r0", "ten"], ["r0x"], name="mul"),
        helper.make_node("SequenceInsert", ["rows2", "r0x", "zero"], ["rows3"], name="insert"),
        const("last", np.int64(-1)),
        helper.make_node("SequenceAt", ["rows3", "last"], ["lastrow"], name="at_last"),
        helper.make_node("ConcatFromSequence", ["rows3"], ["stacked"], name="cat", axis=0,
                         new_axis=1),
        helper.make_node("SequenceLength", ["rows3"], ["len"], name="len"),
    ]
    return model(nodes, [vi("x", F, [5, 2])],
                 [vi("stacked", F, [5, 2]), vi("lastrow", F, [2]), vi("len", I64, [])])


def if_shapes_differ():
    tb = helper.make_graph([const("a", np.zeros(3, np.float32))], "then", [], [vi("a", F, [3])])
    eb = helper.make_graph([const("b", np.zeros(4, np.float32))], "else", [], [vi("b", F, [4])])
    return model([helper.make_node("If", ["c"], ["y"], name="bad_if", then_branch=tb,
                                   else_branch=eb)], [vi("c", B, [])], [vi("y", F, None)])


def loop_unbounded():
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="k"),
         helper.make_node("Add", ["v_in", "v_in"], ["v_out"], name="dbl")],
        "body", [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [1])],
        [vi("c_out", B, []), vi("v_out", F, [1])])
    return model([helper.make_node("Loop", ["m", "", "v0"], ["v"], name="runaway", body=body)],
                 [vi("m", I64, []), vi("v0", F, [1])], [vi("v", F, [1])])


def loop_cond_scan_undeclared():
    """Trip count 4, a run-time condition, and a scan output of no declared
    length: how many rows it has is known only at run time."""
    body = helper.make_graph(
        [helper.make_node("Less", ["i", "stop"], ["c_out"], name="lt"),
         helper.make_node("Identity", ["v_in"], ["v_out"], name="same"),
         helper.make_node("Identity", ["v_in"], ["row"], name="row")],
        "body", [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [1])],
        [vi("c_out", B, []), vi("v_out", F, [1]), vi("row", F, [1])])
    return model([const("m", np.int64(4)),
                  helper.make_node("Loop", ["m", "", "v0"], ["v", "rows"], name="cond_loop",
                                   body=body)],
                 [vi("v0", F, [1]), vi("stop", I64, [])],
                 [vi("v", F, [1]), vi("rows", F, None)])


def loop_too_long():
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="k"),
         helper.make_node("Identity", ["v_in"], ["v_out"], name="same")],
        "body", [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [1])],
        [vi("c_out", B, []), vi("v_out", F, [1])])
    return model([const("m", np.int64(100000)),
                  helper.make_node("Loop", ["m", "", "v0"], ["v"], name="long_loop", body=body)],
                 [vi("v0", F, [1])], [vi("v", F, [1])])


def seq_runtime_position():
    """A run-time position selects among elements of one shape (a Where per
    element); among shapes 2 and 3 the result's shape would depend on it."""
    return model([helper.make_node("SequenceConstruct", ["x", "z"], ["s"], name="mk"),
                  helper.make_node("SequenceAt", ["s", "p"], ["y"], name="at_runtime")],
                 [vi("x", F, [2]), vi("z", F, [3]), vi("p", I64, [])], [vi("y", F, None)])


# ---- driver --------------------------------------------------------------------


def run_rlopt(rl, d, name, m, feeds, extra=()):
    """Save m, run it through `rlopt run` on feeds; the outputs (or the result)."""
    mp = os.path.join(d, name + ".onnx")
    save(m, mp)
    cmd = [rl, "run", mp, "-d", os.path.join(d, name + "_out")] + list(extra)
    for k, arr in enumerate(feeds.values()):
        p = os.path.join(d, f"{name}_in{k}.pb")
        rltest.write_pb(p, arr)
        cmd += ["-i", p]
    r = rltest.run(cmd, timeout=120)
    if not r.ok:
        return None, r
    outs = []
    for k in range(len(m.graph.output)):
        outs.append(rltest.read_pb(os.path.join(d, name + "_out", f"output_{k}.pb"))[1])
    return outs, r


def against_ort(rl, d, name, m, feeds, extra=()):
    got, r = run_rlopt(rl, d, name, m, feeds, extra)
    if got is None:
        return False, r.describe(4)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    for k, (a, b) in enumerate(zip(got, want)):
        ok, msg, _, _ = rltest.compare(a, np.asarray(b))
        if not ok:
            return False, f"output {k}: {msg}"
    return True, f"{len(want)} outputs match onnxruntime"


def main():
    ap = rltest.make_parser(__doc__.split("\n\n")[0])
    args = ap.parse_args()
    rl = args.rlopt
    t = rltest.Tally()
    d = tempfile.mkdtemp(prefix="rl_ctrl_")
    rng = np.random.default_rng(13)

    def check(name, ok, detail):
        t.add("pass" if ok else "fail")
        print(f"  {'pass' if ok else 'fail'}: {name}: {detail}")

    def one_line_error(name, m, feeds, words):
        got, r = run_rlopt(rl, d, name, m, feeds)
        err = r.stderr.strip()
        ok = got is None and r.returncode == 2 and len(err.splitlines()) == 1 and \
            all(w in err for w in words)
        check(name, ok, err or r.describe(3))

    try:
        x3 = rng.standard_normal(3).astype(np.float32)
        m = if_const()
        ok, why = against_ort(rl, d, "if_const", m, {"x": x3}, ["-O0"])
        check("constant If runs its branch", ok, why)
        cpath = os.path.join(d, "if_const.c")
        save(m, os.path.join(d, "if_const_gen.onnx"))
        r = rltest.run([rl, os.path.join(d, "if_const_gen.onnx"), "-O0", "-o", cpath], timeout=60)
        src = open(cpath).read() if r.ok else ""
        check("constant If builds no other branch", r.ok and "then_mul" in src and
              "else_add_never_built" not in src, r.describe(3))

        m = loop_with_if()
        for flag in (True, False):
            feeds = {"flag": np.array(flag), "x": rng.standard_normal(2).astype(np.float32),
                     "acc0": rng.standard_normal(2).astype(np.float32)}
            for opt in ("-O0", "-O2"):
                ok, why = against_ort(rl, d, f"loop_if_{flag}{opt}", m, feeds, [opt])
                check(f"run-time If in a Loop body, flag={flag} {opt}", ok, why)

        x = rng.standard_normal((2, 4)).astype(np.float32)
        s0 = rng.standard_normal(2).astype(np.float32)
        ok, why = against_ort(rl, d, "scan_rev", scan_reverse(), {"s0": s0, "x": x})
        check("Scan with reversed directions and axis 1", ok, why)
        x = rng.standard_normal((2, 6)).astype(np.float32)
        ok, why = against_ort(rl, d, "scan_sym", scan_reverse(True), {"s0": s0, "x": x})
        check("Scan over a length bound by the input file", ok, why)

        x = rng.standard_normal((5, 2)).astype(np.float32)
        ok, why = against_ort(rl, d, "seq", sequences(), {"x": x})
        check("sequence operators between tensor inputs and outputs", ok, why)

        one_line_error("if_shapes_differ", if_shapes_differ(), {"c": np.array(True)},
                       ["bad_if", "shapes 3 and 4"])
        one_line_error("loop_unbounded", loop_unbounded(),
                       {"m": np.array(3, np.int64), "v0": np.ones(1, np.float32)},
                       ["runaway", "run-time", "bound"])
        one_line_error("loop_cond_scan_undeclared", loop_cond_scan_undeclared(),
                       {"v0": np.ones(1, np.float32), "stop": np.array(2, np.int64)},
                       ["cond_loop", "scan outputs' length"])
        one_line_error("loop_too_long", loop_too_long(), {"v0": np.ones(1, np.float32)},
                       ["long_loop", "100000", "4096"])
        one_line_error("seq_runtime_position", seq_runtime_position(),
                       {"x": np.ones(2, np.float32), "z": np.ones(3, np.float32),
                        "p": np.array(0, np.int64)},
                       ["at_runtime", "run-time value", "shapes 2 and 3"])
    finally:
        shutil.rmtree(d, ignore_errors=True)
    sys.exit(t.finish())


if __name__ == "__main__":
    main()
