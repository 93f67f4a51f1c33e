"""Bad input is the normal case: every malformed model, flag or file gets a
one-line message naming the file (and the node where there is one) and the
reason, a documented exit code, and no output file created or overwritten.

Each case builds its input in a fresh temporary folder, runs rlopt, and
checks: the exit code, that stderr is exactly one line, that the line names
the file and contains the expected words, and that the output path does not
exist afterwards (or, for the overwrite case, still holds its old bytes).
"""

import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

OPSET = [helper.make_opsetid("", 17)]


def vi(name, shape, dt=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dt, shape)


def model(nodes, inputs, outputs, inits=(), ir=8, check=False):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=OPSET, ir_version=ir)
    if check:
        onnx.checker.check_model(m)
    return m


def relu_model():
    return model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [2, 3])],
                 [vi("y", [2, 3])])


def save(m, path):
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def ext_model(d, location, nbytes_file, length=None):
    """A MatMul whose weight lives in external data at `location`."""
    w = TensorProto()
    w.name = "w"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([4, 4])
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", str(length or 64))):
        e = w.external_data.add()
        e.key, e.value = k, v
    if nbytes_file is not None:
        p = os.path.normpath(os.path.join(d, location))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(b"\0" * nbytes_file)
    return model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [vi("x", [1, 4])],
                 [vi("y", [1, 4])], inits=[w])


def cases():
    """(name, builder(dir) -> (argv tail, model path), expected exit, words, out name)"""
    C = []

    def add(name, build, code, words, out="out.c"):
        C.append((name, build, code, words, out))

    def write_bytes(data):
        def b(d):
            p = os.path.join(d, "m.onnx")
            with open(p, "wb") as f:
                f.write(data)
            return p
        return b

    def write_model(mk):
        def b(d):
            p = os.path.join(d, "m.onnx")
            save(mk(d), p)
            return p
        return b

    add("missing file", lambda d: os.path.join(d, "nope.onnx"), 2, ["nope.onnx", "cannot open"])
    add("empty file", write_bytes(b""), 2, ["empty"])
    rng = np.random.default_rng(1)
    add("random bytes", write_bytes(bytes(rng.integers(0, 256, 4096, dtype=np.uint8))), 2, [])
    full = relu_model().SerializeToString()
    add("truncated protobuf", write_bytes(full[: len(full) // 2]), 2, [])
    add("model without a graph", write_bytes(helper.make_model(
        helper.make_graph([], "g", [], []), opset_imports=OPSET).SerializeToString()[:0] +
        onnx.ModelProto(ir_version=8, opset_import=OPSET).SerializeToString()), 2, ["no graph"])

    def unknown_ops(d):
        return model([helper.make_node("Bernoulli", ["x"], ["v"], name="t"),
                      helper.make_node("Relu", ["v"], ["r"], name="r"),
                      helper.make_node("FancyOp", ["r"], ["y"], name="f", domain="com.example"),
                      helper.make_node("RandomUniformLike", ["x"], ["z"], name="nz")],
                     [vi("x", [4]), vi("k", [1], TensorProto.INT64)], [vi("y", [2]), vi("z", [1, 4])])
    add("unknown operators (all listed)", write_model(unknown_ops), 2,
        ["Bernoulli", "com.example::FancyOp", "RandomUniformLike", "unsupported operator"])
    add("wrong number of inputs", write_model(lambda d: model(
        [helper.make_node("Relu", ["x", "x"], ["y"], name="r2")], [vi("x", [2])], [vi("y", [2])])),
        2, ["r2", "inputs"])
    add("input nothing produces", write_model(lambda d: model(
        [helper.make_node("Add", ["x", "ghost"], ["y"], name="a")], [vi("x", [2])], [vi("y", [2])])),
        2, ["ghost", "'a'"])
    add("two producers of one name", write_model(lambda d: model(
        [helper.make_node("Relu", ["x"], ["t"], name="n1"), helper.make_node("Neg", ["x"], ["t"], name="n2"),
         helper.make_node("Abs", ["t"], ["y"], name="n3")], [vi("x", [2])], [vi("y", [2])])),
        2, ["'t'", "n2"])
    add("a cycle", write_model(lambda d: model(
        [helper.make_node("Add", ["x", "b"], ["a"], name="c1"), helper.make_node("Relu", ["a"], ["b"], name="c2"),
         helper.make_node("Abs", ["a"], ["y"], name="c3")], [vi("x", [2])], [vi("y", [2])])),
        2, ["cycle"])
    add("incompatible shapes (MatMul 3x4 by 5x6)", write_model(lambda d: model(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], [vi("a", [3, 4]), vi("b", [5, 6])],
        [vi("y", [3, 6])])), 2, ["'mm'", "MatMul", "4", "5"])
    add("negative dimension", write_model(lambda d: model(
        [helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [2, -3])], [vi("y", [2, 3])])),
        2, ["dimension"])

    def flex_mod_shape(d):
        io = [vi(n, ["B", "H", "L", "S"]) for n in ("s", "r")]
        mod = helper.make_graph([helper.make_node("ReduceMax", ["s"], ["r"], keepdims=1)], "m", io[:1], io[1:])
        node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], name="fa", domain="ai.onnx.preview",
                                score_mod=mod)
        g = helper.make_graph([node], "g", [vi("q", [1, 2, 3, 4]), vi("k", [1, 2, 5, 4]), vi("v", [1, 2, 5, 4])],
                              [vi("y", [1, 2, 3, 4])])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 26),
                                                   helper.make_opsetid("ai.onnx.preview", 1)], ir_version=8)
    add("FlexAttention score_mod that changes the shape", write_model(flex_mod_shape), 2,
        ["'fa'", "FlexAttention", "score_mod", "keep the shape"])

    def overflow(d):
        w = TensorProto()
        w.name = "w"
        w.data_type = TensorProto.FLOAT
        w.dims.extend([1 << 31, 1 << 31])
        w.raw_data = b"\0" * 16
        return model([helper.make_node("Add", ["x", "w"], ["y"], name="a")], [vi("x", [1])],
                     [vi("y", [1])], inits=[w])
    add("overflowing dimensions", write_model(overflow), 2, ["overflow"])
    add("external data file missing", write_model(lambda d: ext_model(d, "weights.bin", None)),
        2, ["weights.bin"])
    add("external data shorter than offset+length", write_model(lambda d: ext_model(d, "w.bin", 10)),
        2, ["w.bin", "shorter"])
    add("external data absolute location", write_model(lambda d: ext_model(d, "/etc/passwd", None)),
        2, ["absolute"])
    add("external data escapes with ../", write_model(lambda d: ext_model(d, "../outside.bin", 64)),
        2, ["escapes"])

    def symlink_escape(d):
        outside = os.path.join(os.path.dirname(d), os.path.basename(d) + "_outside.bin")
        with open(outside, "wb") as f:
            f.write(b"\0" * 64)
        os.symlink(outside, os.path.join(d, "link.bin"))
        return ext_model(d, "link.bin", None)
    add("external data symlink pointing outside", write_model(symlink_escape), 2, ["outside"])

    def missing_dir(d):
        p = os.path.join(d, "m.onnx")
        save(relu_model(), p)
        return p
    add("output path in a missing folder", missing_dir, 2, ["does not exist"], out="no/such/dir/out.c")
    return C


def run_case(rl, name, build, code, words, out):
    d = tempfile.mkdtemp(prefix="rlopt-bad-")
    try:
        mpath = build(d)
        opath = os.path.join(d, out)
        r = rltest.run([rl, mpath, "-o", opath], timeout=60)
        errs = []
        if r.returncode != code:
            errs.append(f"exit {r.returncode}, expected {code}")
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        if len(lines) != 1:
            errs.append(f"{len(lines)} lines on stderr, expected 1: {r.stderr!r}")
        msg = lines[0] if lines else ""
        # the file at fault: the model, or the output path when that is bad
        named = opath if "/" in out else mpath
        if os.path.basename(named) not in msg:
            errs.append(f"message does not name the file: {msg!r}")
        for w in words:
            if w not in msg:
                errs.append(f"message lacks {w!r}: {msg!r}")
        for f in (opath, opath[:-2] + ".h"):
            if os.path.exists(f):
                errs.append(f"{os.path.basename(f)} was written")
        left = [f for f in os.listdir(d) if ".tmp" in f]
        if left:
            errs.append(f"temporary files left: {left}")
        return errs, msg
    finally:
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(d + "_outside.bin", ignore_errors=True)
        if os.path.exists(d + "_outside.bin"):
            os.unlink(d + "_outside.bin")


def flag_cases(rl, t):
    """Usage errors: exit 1, one line."""
    d = tempfile.mkdtemp(prefix="rlopt-bad-")
    try:
        mp = os.path.join(d, "m.onnx")
        save(relu_model(), mp)
        # an existing output is not overwritten when generation fails
        old = os.path.join(d, "keep.c")
        with open(old, "w") as f:
            f.write("old contents\n")
        bad = os.path.join(d, "bad.onnx")
        save(model([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
                   [vi("a", [3, 4]), vi("b", [5, 6])], [vi("y", [3, 6])]), bad)
        r = rltest.run([rl, bad, "-o", old], timeout=60)
        with open(old) as f:
            kept = f.read() == "old contents\n"
        status = "pass" if r.returncode == 2 and kept else "fail"
        print(f"  {status}: existing output kept on failure (exit {r.returncode}, kept={kept})")
        t.add(status)
        for argv, what in (([mp, "-o", os.path.join(d, "o.c"), "--bogus"], "unknown flag"),
                           ([mp, "-o", os.path.join(d, "o.c"), "--batch", "x"], "bad --batch"),
                           ([mp, "-o", os.path.join(d, "o.c"), "--shape", "x=2xq"], "bad --shape"),
                           ([mp], "no output"), ([mp, "-o", os.path.join(d, "o.txt")], "bad output extension"),
                           (["run", mp, "-d", d], "run without -i count check is input error"),
                           (["run", mp, "-d", d, "--threads", "0"], "--threads 0"),
                           (["run", mp, "-d", d, "--threads", "two"], "--threads two"),
                           (["run", mp, "-d", d, "--threads", "-3"], "--threads -3"),
                           (["run", mp, "-d", d, "--threads"], "--threads without a value"),
                           ([mp, "-o", os.path.join(d, "o.c"), "--batch", "1,8"], "--batch list in the main form"),
                           ([mp, "-o", os.path.join(d, "o.c"), "--format", "json"], "--format without --report"),
                           (["report", mp, "--weights-max", "10"], "report --weights-max (unused)"),
                           (["report", mp, "-O2", "--passes", "fold"], "report -O2 with --passes"),
                           (["report", mp, "--dump-after", "fold"], "report --dump-after without passes"),
                           (["diff", mp, mp, "-O2"], "diff -O2 (no passes)"),
                           (["hw", "x"], "hw with an argument"),
                           (["ops", "-v"], "ops with an option"),
                           (["report", mp, "--per-node", "--bogus"], "report unknown flag"),):
            r = rltest.run([rl] + argv, timeout=60)
            want = 2 if what.startswith("run") else 1
            lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("Try ")]
            ok = r.returncode == want and len(lines) == 1
            print(f"  {'pass' if ok else 'fail'}: {what}: exit {r.returncode} (want {want}): {lines[:1]}")
            t.add("pass" if ok else "fail")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = rltest.make_parser(__doc__)
    args = ap.parse_args()
    rl = args.rlopt
    t = rltest.Tally()
    for name, build, code, words, out in cases():
        errs, msg = run_case(rl, name, build, code, words, out)
        status = "fail" if errs else "pass"
        t.add(status)
        print(f"  {status}: {name}: {msg}")
        for e in errs:
            print(f"      {e}")
    flag_cases(rl, t)
    sys.exit(t.finish())


if __name__ == "__main__":
    main()
