#!/usr/bin/env python3
"""Sequence and optional graph inputs and outputs (frontends/onnx/onnx.h),
beyond the ONNX node tests:

- `rlopt run` reads SequenceProto and OptionalProto input files and writes
  outputs of the same kinds; a model with a sequence input of elements of
  different shapes, sequence and tensor outputs, matches the onnx reference
  evaluator at -O0 and -O2;
- an optional input present (a tensor) and absent (an empty OptionalProto),
  passed through to an optional output and tested with OptionalHasElement;
- SequenceAt, SequenceInsert and SequenceErase at run-time positions
  (negative ones too, int64 and int32) over elements of one shape match the
  reference;
- bad input is one line naming the file and the reason, exit status 2: a
  truncated SequenceProto, a sequence of sequences, an optional sequence
  given a tensor, a run-time position among elements of different shapes;
- the main form binds a sequence input with --seq NAME=LEN and an optional
  one with --optional NAME; the generated header lists the tensors each
  became and compiles warning-free; a sequence input with no length, or
  --seq naming no such input, is a one-line error.
"""

import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def tensor_type(dt, shape):
    return helper.make_tensor_type_proto(dt, shape)


def seq_vi(name, dt, shape):
    return helper.make_value_info(name, helper.make_sequence_type_proto(tensor_type(dt, shape)))


def opt_vi(name, dt, shape, seq=False):
    inner = tensor_type(dt, shape)
    if seq:
        inner = helper.make_sequence_type_proto(inner)
    return helper.make_value_info(name, helper.make_optional_type_proto(inner))


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


def model(nodes, inputs, outputs, opset=18):
    g = helper.make_graph(nodes, "seqio", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="test_seqio")
    m.ir_version = 8
    return m


def const(name, value):
    return helper.make_node("Constant", [], [name], name=name + "_c",
                            value=numpy_helper.from_array(np.asarray(value), name))


# ---- files -----------------------------------------------------------------------


def write_value(path, value, kind):
    """value: an array (tensor), a list of arrays (sequence), or for an
    optional None / an array / a list."""
    if kind == "sequence":
        p = numpy_helper.from_list([np.asarray(a) for a in value], "")
    elif kind == "optional":
        if value is None:
            p = onnx.OptionalProto()
            p.elem_type = onnx.OptionalProto.UNDEFINED
        elif isinstance(value, list):
            p = onnx.OptionalProto()
            p.elem_type = onnx.OptionalProto.SEQUENCE
            p.sequence_value.CopyFrom(numpy_helper.from_list(value, ""))
        else:
            p = onnx.OptionalProto()
            p.elem_type = onnx.OptionalProto.TENSOR
            p.tensor_value.CopyFrom(numpy_helper.from_array(np.asarray(value), ""))
    else:
        p = numpy_helper.from_array(np.asarray(value), "")
    with open(path, "wb") as f:
        f.write(p.SerializeToString())


def read_value(path, kind):
    with open(path, "rb") as f:
        data = f.read()
    if kind == "sequence":
        s = onnx.SequenceProto()
        s.ParseFromString(data)
        return numpy_helper.to_list(s)
    if kind == "optional":
        o = onnx.OptionalProto()
        o.ParseFromString(data)
        if o.HasField("tensor_value"):
            return numpy_helper.to_array(o.tensor_value)
        if o.HasField("sequence_value"):
            return numpy_helper.to_list(o.sequence_value)
        return None
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def kind_of(vi_):
    return {"sequence_type": "sequence", "optional_type": "optional"}.get(
        vi_.type.WhichOneof("value"), "tensor")


def run_rlopt(rl, d, name, m, feeds, extra=()):
    """`rlopt run` on feeds (in graph-input order); (outputs or None, result)."""
    mp = os.path.join(d, name + ".onnx")
    onnx.save(m, mp)
    out = os.path.join(d, name + "_out")
    cmd = [rl, "run", mp, "-d", out] + list(extra)
    for k, (vi_, value) in enumerate(zip(m.graph.input, feeds)):
        p = os.path.join(d, f"{name}_in{k}.pb")
        write_value(p, value, kind_of(vi_))
        cmd += ["-i", p]
    r = rltest.run(cmd, timeout=120)
    if not r.ok:
        return None, r
    return [read_value(os.path.join(out, f"output_{k}.pb"), kind_of(o))
            for k, o in enumerate(m.graph.output)], r


def same(got, want):
    """(ok, message) for a tensor, a list of tensors or None."""
    if want is None or got is None:
        return (got is None) == (want is None), f"got {got!r}, want {want!r}"
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return False, f"got {got!r}, want a sequence of {len(want)}"
        for i, (a, b) in enumerate(zip(got, want)):
            ok, msg, _, _ = rltest.compare(a, np.asarray(b))
            if not ok:
                return False, f"element {i}: {msg}"
        return True, f"sequence of {len(want)} matches"
    ok, msg, _, _ = rltest.compare(got, np.asarray(want))
    return ok, msg or "matches"


# ---- models ----------------------------------------------------------------------


def seq_model():
    """x: a sequence of float[N_i]; y = x with t appended and every element
    doubled; n = its length; total = the sum of the concatenation."""
    body = helper.make_graph([helper.make_node("Add", ["e", "e"], ["e2"], name="dbl")],
                             "body", [vi("e", F, ["L"])], [vi("e2", F, ["L"])])
    nodes = [
        helper.make_node("SequenceInsert", ["x", "t"], ["xt"], name="append"),
        helper.make_node("SequenceMap", ["xt"], ["y"], name="map", body=body),
        helper.make_node("SequenceLength", ["y"], ["n"], name="len"),
        helper.make_node("ConcatFromSequence", ["y"], ["cat"], name="cat", axis=0),
        helper.make_node("ReduceSum", ["cat"], ["total"], name="sum", keepdims=0),
    ]
    return model(nodes, [seq_vi("x", F, ["L"]), vi("t", F, [2])],
                 [seq_vi("y", F, None), vi("n", I64, []), vi("total", F, [])])


def opt_model():
    """o: an optional float[3]; has = OptionalHasElement(o); p = o."""
    nodes = [helper.make_node("OptionalHasElement", ["o"], ["has"], name="has"),
             helper.make_node("Identity", ["o"], ["p"], name="pass")]
    return model(nodes, [opt_vi("o", F, [3])], [vi("has", TensorProto.BOOL, []),
                                                opt_vi("p", F, [3])])


def opt_seq_model():
    """o: an optional sequence; y = its element 0."""
    nodes = [helper.make_node("OptionalGetElement", ["o"], ["s"], name="get"),
             const("zero", np.int64(0)),
             helper.make_node("SequenceAt", ["s", "zero"], ["y"], name="at")]
    return model(nodes, [opt_vi("o", F, [2], seq=True)], [vi("y", F, [2])])


def runtime_pos_model(shape=(2,)):
    """Insert t at p, erase at q, take at r: each position a graph input."""
    nodes = [helper.make_node("SequenceInsert", ["x", "t", "p"], ["xi"], name="ins"),
             helper.make_node("SequenceErase", ["x", "q"], ["xe"], name="erase"),
             helper.make_node("SequenceAt", ["x", "r"], ["y"], name="at_runtime")]
    return model(nodes, [seq_vi("x", F, list(shape)), vi("t", F, [2]), vi("p", I64, []),
                         vi("q", TensorProto.INT32, []), vi("r", I64, [])],
                 [seq_vi("xi", F, [2]), seq_vi("xe", F, [2]), vi("y", F, [2])])


# ---- driver --------------------------------------------------------------------


def main():
    ap = rltest.make_parser(__doc__.split("\n\n")[0])
    args = ap.parse_args()
    rl = args.rlopt
    t = rltest.Tally()
    d = tempfile.mkdtemp(prefix="rl_seqio_")
    rng = np.random.default_rng(7)

    def check(name, ok, detail):
        t.add("pass" if ok else "fail")
        print(f"  {'pass' if ok else 'fail'}: {name}: {detail}")

    def against_ref(name, m, feeds, extra=()):
        got, r = run_rlopt(rl, d, name, m, feeds, extra)
        if got is None:
            return check(name, False, r.describe(4))
        ref = ReferenceEvaluator(m)
        want = ref.run(None, {vi_.name: v for vi_, v in zip(m.graph.input, feeds)})
        for k, (a, b) in enumerate(zip(got, want)):
            ok, msg = same(a, b)
            if not ok:
                return check(name, False, f"output {k}: {msg}")
        check(name, True, f"{len(want)} outputs match the onnx reference")

    def one_line_error(name, cmd, words):
        r = rltest.run(cmd, timeout=120)
        err = r.stderr.strip()
        ok = r.returncode == 2 and len(err.splitlines()) == 1 and all(w in err for w in words)
        check(name, ok, err or r.describe(3))

    try:
        m = seq_model()
        xs = [rng.standard_normal(n).astype(np.float32) for n in (3, 1, 4)]
        tt = rng.standard_normal(2).astype(np.float32)
        for opt in ("-O0", "-O2"):
            against_ref(f"sequence in and out {opt}", m, [xs, tt], [opt])
        against_ref("empty sequence in", m, [[], tt])

        m = opt_model()
        for value in (rng.standard_normal(3).astype(np.float32), None):
            got, r = run_rlopt(rl, d, "opt", m, [value])
            state = "present" if value is not None else "absent"
            if got is None:
                check(f"optional input {state}", False, r.describe(4))
                continue
            ok1, m1 = same(got[0], np.array(value is not None))
            ok2, m2 = same(got[1], value)
            check(f"optional input {state}: OptionalHasElement and pass-through", ok1 and ok2,
                  m1 if not ok1 else m2)

        got, r = run_rlopt(rl, d, "optseq", opt_seq_model(),
                           [[np.arange(2, dtype=np.float32), np.ones(2, np.float32)]])
        ok, msg = same(got[0], np.arange(2, dtype=np.float32)) if got else (False, r.describe(4))
        check("optional sequence input present", ok, msg)

        m = runtime_pos_model()
        xs = [rng.standard_normal(2).astype(np.float32) for _ in range(3)]
        # (not insert at 3 = the length: the reference evaluator takes the
        # position modulo the length and inserts at the front, where the
        # operator's definition appends)
        for p, q, r_ in ((0, 0, 0), (2, 2, 2), (-1, -3, -2), (-3, -1, -3), (1, 1, 1)):
            feeds = [xs, tt, np.array(p, np.int64), np.array(q, np.int32),
                     np.array(r_, np.int64)]
            for opt in ("-O0", "-O2"):
                against_ref(f"run-time positions insert {p} erase {q} at {r_} {opt}", m, feeds,
                            [opt])

        # bad files and models
        mp = os.path.join(d, "seq.onnx")
        onnx.save(seq_model(), mp)
        tp = os.path.join(d, "t.pb")
        write_value(tp, tt, "tensor")
        good = os.path.join(d, "good_seq.pb")
        write_value(good, xs, "sequence")
        with open(good, "rb") as f:
            data = f.read()
        trunc = os.path.join(d, "truncated_seq.pb")
        with open(trunc, "wb") as f:
            f.write(data[:len(data) // 2])
        one_line_error("truncated SequenceProto", [rl, "run", mp, "-i", trunc, "-i", tp, "-d",
                                                   os.path.join(d, "o1")],
                       ["truncated_seq.pb", "SequenceProto"])
        nested = os.path.join(d, "nested_seq.pb")
        s = onnx.SequenceProto()
        s.elem_type = onnx.SequenceProto.SEQUENCE
        s.sequence_values.add().CopyFrom(numpy_helper.from_list(xs))
        with open(nested, "wb") as f:
            f.write(s.SerializeToString())
        one_line_error("sequence of sequences", [rl, "run", mp, "-i", nested, "-i", tp, "-d",
                                                 os.path.join(d, "o2")],
                       ["nested_seq.pb", "sequence of sequences"])
        op = os.path.join(d, "optseq.onnx")
        onnx.save(opt_seq_model(), op)
        ot = os.path.join(d, "opt_tensor.pb")
        write_value(ot, tt, "optional")
        one_line_error("optional sequence given a tensor", [rl, "run", op, "-i", ot, "-d",
                                                            os.path.join(d, "o3")],
                       ["opt_tensor.pb", "optional sequence"])
        rp = os.path.join(d, "rtpos.onnx")
        onnx.save(runtime_pos_model(["L"]), rp)
        ragged = os.path.join(d, "ragged.pb")
        write_value(ragged, [np.ones(2, np.float32), np.ones(3, np.float32)], "sequence")
        cmd = [rl, "run", rp, "-i", ragged, "-i", tp]
        for k, v in enumerate((np.int64(0), np.int32(0), np.int64(0))):
            p = os.path.join(d, f"pos{k}.pb")
            write_value(p, np.array(v), "tensor")
            cmd += ["-i", p]
        one_line_error("run-time position among shapes 2 and 3",
                       cmd + ["-d", os.path.join(d, "o4")], ["ins", "run-time", "2 and 3"])

        # the main form: --seq and --optional
        cpath = os.path.join(d, "m.c")
        one_line_error("sequence input without a length", [rl, mp, "-o", cpath],
                       ["'x'", "--seq x=LEN"])
        one_line_error("--seq naming no input", [rl, mp, "--seq", "nosuch=2", "--dim", "L=3",
                                                 "-o", cpath], ["nosuch"])
        r = rltest.run([rl, mp, "--seq", "x=2", "--dim", "L=3", "-o", cpath], timeout=120)
        hdr = open(os.path.join(d, "m.h")).read() if r.ok else ""
        ok = r.ok and "x.0 float32[3]" in hdr and "x.1 float32[3]" in hdr and \
            "input x: sequence of 2 tensors, inputs 0 to 1" in hdr and \
            "output y: sequence of 3 tensors" in hdr
        check("--seq x=2: the header lists x.0 and x.1", ok, r.describe(3) if not r.ok else
              "x.0, x.1 and y's 3 tensors in the header")
        cc = shutil.which(os.environ.get("CC", "cc"))
        if r.ok and cc:
            c = rltest.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-c", cpath,
                            "-o", os.path.join(d, "m.o")], timeout=300)
            check("--seq x=2: the generated C compiles warning-free", c.ok, c.describe(3))
        om = os.path.join(d, "opt.onnx")
        onnx.save(opt_model(), om)
        for flag, words in ((["--optional", "o"], ["input o: optional, present: input 0"]),
                            ([], ["input o: optional, absent", "output p: optional, absent"])):
            r = rltest.run([rl, om] + flag + ["-o", cpath], timeout=120)
            hdr = open(os.path.join(d, "m.h")).read() if r.ok else ""
            check(f"optional input {'present' if flag else 'absent'} in the header",
                  r.ok and all(w in hdr for w in words), r.describe(3) if not r.ok else hdr[:0]
                  + "; ".join(words))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    sys.exit(t.finish())


if __name__ == "__main__":
    main()
