"""Value binding (issue 13): an integer input whose data decides a shape.

- `--value NAME=FILE.pb` (main form) specializes the model on that input's
  data; the generated NAME_run still takes the input and returns -2, running
  nothing, when a call passes other data (checked by compiling the generated
  C with a small caller);
- `rlopt run --value` with a different -i tensor fails (exit 4) naming the
  bound input instead of writing outputs;
- `rlopt run` binds by itself an integer input that decides a shape, says so
  on stderr, and the outputs match numpy (MelWeightMatrix: onnx.reference);
  it never binds a float input, nor an integer input no shape depends on
  (MelWeightMatrix's sample_rate);
- bad --value: unknown input, another dtype, another shape, a missing file
  (exit 2, one line, nothing written), a malformed flag, an ONNX output
  (exit 1).
"""

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402


def save(m, path):
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def ramp_model():
    """y = float(range(0, n)) * s: n (int64 scalar) decides y's length."""
    n = helper.make_tensor_value_info("n", TensorProto.INT64, [])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = [helper.make_tensor("zero", TensorProto.INT64, [], [0]),
             helper.make_tensor("one", TensorProto.INT64, [], [1])]
    nodes = [helper.make_node("Range", ["zero", "n", "one"], ["r"], name="ramp"),
             helper.make_node("Cast", ["r"], ["rf"], name="tofloat", to=TensorProto.FLOAT),
             helper.make_node("Mul", ["rf", "s"], ["y"], name="scale")]
    return model(nodes, [n, s], [y], inits)


def float_limit_model():
    """y = range(0, lim): a float input decides the shape (never auto-bound)."""
    lim = helper.make_tensor_value_info("lim", TensorProto.FLOAT, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
             helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])]
    return model([helper.make_node("Range", ["zero", "lim", "one"], ["y"], name="ramp")],
                 [lim], [y], inits)


def mel_model():
    """MelWeightMatrix with no declared output shape: num_mel_bins and
    dft_length decide it; sample_rate (an integer too) and the edges do not."""
    ins = [helper.make_tensor_value_info(n, t, []) for n, t in
           [("num_mel_bins", TensorProto.INT64), ("dft_length", TensorProto.INT64),
            ("sample_rate", TensorProto.INT64), ("lower_edge_hertz", TensorProto.FLOAT),
            ("upper_edge_hertz", TensorProto.FLOAT)]]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node("MelWeightMatrix", [i.name for i in ins], ["y"], name="mel")
    return model([node], ins, [y])


def int_data_model():
    """y = k + k: a small integer input that decides no shape."""
    k = helper.make_tensor_value_info("k", TensorProto.INT64, [3])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [3])
    return model([helper.make_node("Add", ["k", "k"], ["y"], name="twice")], [k], [y])


CALLER = r"""
#include <stdint.h>
#include <stdio.h>
#include "m.h"
int main(void)
{
    int64_t five = 5, six = 6;
    float s = 2.0f, y[5];
    int a = m_run(&five, &s, y);
    if (a != 0 || y[4] != 8.0f)
        return 1;
    y[0] = -1.0f;
    int b = m_run(&six, &s, y);
    printf("%d %d %g\n", a, b, y[0]);
    return b == -2 && y[0] == -1.0f ? 0 : 2;
}
"""


def main():
    ap = rltest.make_parser(__doc__)
    args = ap.parse_args()
    rl = args.rlopt
    t = rltest.Tally()
    d = tempfile.mkdtemp(prefix="rl_valbind_")
    try:
        def check(name, ok, detail):
            t.add("pass" if ok else "fail")
            print(f"  {'pass' if ok else 'fail'}: {name}: {detail}")

        mp = os.path.join(d, "ramp.onnx")
        save(ramp_model(), mp)
        n5, n6 = os.path.join(d, "n5.pb"), os.path.join(d, "n6.pb")
        rltest.write_pb(n5, np.array(5, dtype=np.int64), "n")
        rltest.write_pb(n6, np.array(6, dtype=np.int64), "n")
        s2 = os.path.join(d, "s.pb")
        rltest.write_pb(s2, np.array(2.0, dtype=np.float32), "s")

        # rlopt run binds n by itself, says so, and computes the right thing
        out = os.path.join(d, "out")
        r = rltest.run([rl, "run", mp, "-i", n5, "-i", s2, "-d", out], timeout=120)
        ok = r.returncode == 0 and "'n'" in r.stderr and "'s'" not in r.stderr
        if ok:
            _, got = rltest.read_pb(os.path.join(out, "output_0.pb"))
            ok = got.shape == (5,) and np.array_equal(got, np.arange(5, dtype=np.float32) * 2)
        check("run binds the integer input that decides a shape", ok, r.describe(3))

        # --value, main form: the generated C checks the bound input
        cfile = os.path.join(d, "m.c")
        r = rltest.run([rl, mp, "--value", f"n={n5}", "-o", cfile], timeout=60)
        ok = r.returncode == 0
        check("--value n=FILE -o OUT.c", ok, r.describe(3))
        if ok:
            with open(os.path.join(d, "m.h")) as f:
                hdr = f.read()
            check("the header documents the bound input and -2", "bound at build time" in hdr
                  and "-2" in hdr, hdr[:300])
            with open(os.path.join(d, "caller.c"), "w") as f:
                f.write(CALLER)
            cc = os.environ.get("CC", "cc")
            cr = subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o",
                                 "caller", "caller.c", "m.c", "-lm"], cwd=d,
                                capture_output=True, text=True, timeout=120)
            check("the generated C compiles warning-free", cr.returncode == 0, cr.stderr[-400:])
            if cr.returncode == 0:
                pr = subprocess.run([os.path.join(d, "caller")], capture_output=True, text=True,
                                    timeout=60)
                check("m_run: 0 for the bound value, -2 (nothing written) for another",
                      pr.returncode == 0, f"exit {pr.returncode}: {pr.stdout.strip()}")

        # rlopt run --value with another -i tensor: the run-time check fires
        out2 = os.path.join(d, "out2")
        r = rltest.run([rl, "run", mp, "--value", f"n={n5}", "-i", n6, "-i", s2, "-d", out2],
                       timeout=120)
        check("run --value n=5 with -i n=6 fails at run time", r.returncode == 4
              and "bound" in r.stderr and not os.path.exists(os.path.join(out2, "output_0.pb")),
              r.describe(3))

        # a float input that decides a shape is never bound by itself
        fp = os.path.join(d, "flim.onnx")
        save(float_limit_model(), fp)
        lim = os.path.join(d, "lim.pb")
        rltest.write_pb(lim, np.array(4.0, dtype=np.float32), "lim")
        r = rltest.run([rl, "run", fp, "-i", lim, "-d", os.path.join(d, "out3")], timeout=120)
        check("a float input is not bound by itself", r.returncode == 2
              and "decides a shape" not in r.stderr, r.describe(3))
        # ...but --value binds it when the user asks
        r = rltest.run([rl, "run", fp, "--value", f"lim={lim}", "-i", lim, "-d",
                        os.path.join(d, "out4")], timeout=120)
        ok = r.returncode == 0
        if ok:
            _, got = rltest.read_pb(os.path.join(d, "out4", "output_0.pb"))
            ok = np.array_equal(got, np.arange(4, dtype=np.float32))
        check("--value binds a float input on request", ok, r.describe(3))

        # MelWeightMatrix: only the inputs its shape needs are bound
        from onnx.reference import ReferenceEvaluator
        mm = mel_model()
        melp = os.path.join(d, "mel.onnx")
        save(mm, melp)
        feeds = {"num_mel_bins": np.array(10, dtype=np.int64),
                 "dft_length": np.array(64, dtype=np.int64),
                 "sample_rate": np.array(16000, dtype=np.int64),
                 "lower_edge_hertz": np.array(20.0, dtype=np.float32),
                 "upper_edge_hertz": np.array(7600.0, dtype=np.float32)}
        files = []
        for k, v in feeds.items():
            files += ["-i", os.path.join(d, k + ".pb")]
            rltest.write_pb(files[-1], v, k)
        r = rltest.run([rl, "run", melp, *files, "-d", os.path.join(d, "out6")], timeout=120)
        ok = (r.returncode == 0 and "'num_mel_bins'" in r.stderr and "'dft_length'" in r.stderr
              and "'sample_rate'" not in r.stderr and "hertz" not in r.stderr)
        msg = r.describe(4)
        if ok:
            _, got = rltest.read_pb(os.path.join(d, "out6", "output_0.pb"))
            want = ReferenceEvaluator(mm).run(None, feeds)[0]
            ok, msg, _, _ = rltest.compare(got, want)
            ok = ok and got.shape == (33, 10)
        check("MelWeightMatrix: binds num_mel_bins and dft_length only, matches the reference",
              ok, msg)

        # an integer input no shape depends on stays an input
        ip = os.path.join(d, "idata.onnx")
        save(int_data_model(), ip)
        kp = os.path.join(d, "k.pb")
        rltest.write_pb(kp, np.array([1, 2, 3], dtype=np.int64), "k")
        r = rltest.run([rl, "run", ip, "-i", kp, "-d", os.path.join(d, "out5")], timeout=120)
        check("an integer input that decides no shape is not bound", r.returncode == 0
              and "decides a shape" not in r.stderr, r.describe(3))

        # bad --value
        n32 = os.path.join(d, "n32.pb")
        rltest.write_pb(n32, np.array(5, dtype=np.int32), "n")
        n2 = os.path.join(d, "n2.pb")
        rltest.write_pb(n2, np.array([5, 5], dtype=np.int64), "n")
        bad = os.path.join(d, "bad.c")
        for what, val, code, needle in [
                ("unknown input", f"zz={n5}", 2, "'zz'"),
                ("another dtype", f"n={n32}", 2, "int32"),
                ("another shape", f"n={n2}", 2, "--value n="),
                ("a missing file", f"n={os.path.join(d, 'none.pb')}", 2, "none.pb"),
                ("no '='", "n", 1, "NAME=FILE"),
        ]:
            r = rltest.run([rl, mp, "--value", val, "-o", bad], timeout=60)
            err = r.stderr.strip()
            check(f"bad --value: {what}", r.returncode == code and needle in err
                  and len(err.splitlines()) <= 2 and not os.path.exists(bad), r.describe(3))
        r = rltest.run([rl, mp, "--value", f"n={n5}", "-o", os.path.join(d, "m.onnx")],
                       timeout=60)
        check("--value with -o OUT.onnx is refused", r.returncode == 1
              and "--value" in r.stderr, r.describe(3))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    sys.exit(t.finish())


if __name__ == "__main__":
    main()
