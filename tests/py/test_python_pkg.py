"""The Python package: `pip wheel .` (scikit-build-core) and the `rlopt`
module, installed into a throwaway venv, against the command line's JSON.

Outer part (run by ctest under build/venv's python):
  1. makes a venv in a temporary folder whose path also sees build/venv's
     site-packages (numpy, onnx, onnxruntime), installs scikit-build-core
     there from PyPI (skips, with the reason, when that fails: offline);
  2. builds the wheel into BUILD/wheel (CMake build folder BUILD/skbuild,
     kept, so a rerun compiles little) and installs it into that venv;
  3. reruns this file with the venv's python and --inner.
Inner part, for examples/mlp.onnx and examples/gpt_block.onnx: optimize,
report, diff and run each equal what the packaged binary prints as JSON (or
writes as TensorProto) for the same arguments, from a path and from an
in-memory ModelProto; run() agrees with onnxruntime; the console script and
cmake_dir() work; errors carry rlopt's message and exit code; hostile
arguments raise ValueError before anything runs; the hand-written TensorProto
codec agrees with onnx.numpy_helper.

Ends with "N passed, N failed, N skipped"; exits non-zero on any failure.
"""

import glob
import json
import os
import re
import shutil
import site
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402


class Checks:
    def __init__(self, verbose):
        self.tally = rltest.Tally()
        self.verbose = verbose

    def __call__(self, name, ok, detail=""):
        self.tally.add("pass" if ok else "fail")
        if not ok:
            print(f"FAIL {name}" + (f"\n    {detail}" if detail else ""), flush=True)
        elif self.verbose:
            print(f"ok   {name}", flush=True)
        return bool(ok)

    def raises(self, name, exc, fn, *a, **kw):
        try:
            fn(*a, **kw)
        except exc as e:
            return self(name, True) and e
        except Exception as e:  # noqa: BLE001 - the wrong kind is the failure
            return self(name, False, f"raised {type(e).__name__}: {e}")
        return self(name, False, "no exception")


# ---- outer: build and install the wheel ----------------------------------

def outer(args):
    c = Checks(args.verbose)
    src, build = os.path.abspath(args.source), os.path.abspath(args.build)
    tmp = tempfile.mkdtemp(prefix="rlopt-pypkg-")
    try:
        venv = os.path.join(tmp, "venv")
        r = rltest.run([sys.executable, "-m", "venv", venv], 300)
        if not c("make a throwaway venv", r.ok, r.describe()):
            return c.tally.finish()
        py = os.path.join(venv, "bin", "python")
        # venvs do not chain: point this one at build/venv's packages
        sp = rltest.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], 60)
        with open(os.path.join(sp.stdout.strip(), "_rlopt_oracles.pth"), "w") as f:
            f.write("\n".join(site.getsitepackages()) + "\n")
        pip = [py, "-m", "pip", "--disable-pip-version-check", "-q"]
        r = rltest.run(pip + ["install", "scikit-build-core>=0.10"], 600)
        if not r.ok:
            print("skip: scikit-build-core cannot be installed (offline?):\n    " +
                  (r.stderr.strip().splitlines() or ["?"])[-1])
            c.tally.add("skip")
            return c.tally.finish()
        wheel_dir = os.path.join(build, "wheel")
        for old in glob.glob(os.path.join(wheel_dir, "rlopt-*.whl")):
            os.remove(old)
        r = rltest.run(pip + ["wheel", src, "-w", wheel_dir, "--no-deps", "--no-build-isolation",
                              f"--config-settings=build-dir={os.path.join(build, 'skbuild')}"], 1800)
        wheels = glob.glob(os.path.join(wheel_dir, "rlopt-*.whl"))
        tail = "\n    ".join((r.stdout + r.stderr).splitlines()[-40:])  # pip puts the cause last
        if not c("pip wheel . builds rlopt-*.whl", r.ok and len(wheels) == 1, tail):
            return c.tally.finish()
        r = rltest.run(pip + ["install", "--no-deps", wheels[0]], 300)
        if not c("pip install the wheel", r.ok, r.describe()):
            return c.tally.finish()
        r = rltest.run([py, "-B", os.path.abspath(__file__), "--inner", "--source", src,
                        "--rlopt", args.rlopt or "", "--build", build] +
                       (["-v"] if args.verbose else []), 1800, cwd=tmp)
        m = re.search(r"^(\d+) passed, (\d+) failed, (\d+) skipped$", r.stdout, re.M)
        sys.stdout.write(r.stdout[:m.start()] if m else r.stdout)  # one summary line: ours
        if not c("inner checks ran", m, r.describe(30)):
            return c.tally.finish()
        c.tally.passed += int(m.group(1))
        c.tally.failed += int(m.group(2))
        c.tally.skipped += int(m.group(3))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return c.tally.finish()


# ---- inner: the module against the command line ---------------------------

def cli_json(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, (json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else None), p.stderr


def inner(args):
    import onnx
    from onnx import numpy_helper

    import rlopt
    from rlopt import _tensor

    c = Checks(args.verbose)
    src = os.path.abspath(args.source)
    ex = os.path.join(src, "examples")
    tmp = tempfile.mkdtemp(prefix="rlopt-inner-")
    exe = rlopt.executable()
    site_dir = os.path.dirname(os.path.abspath(rlopt.__file__))
    c("the module runs its packaged binary", exe.startswith(site_dir) and os.access(exe, os.X_OK), exe)
    bindir = os.path.dirname(sys.executable)
    r = rltest.run([os.path.join(bindir, "rlopt"), "hw"], 60, cwd=tmp)
    c("console script `rlopt hw` reads the packaged profiles",
      r.ok and os.path.realpath(rlopt.hw_dir()) in r.stdout, r.describe() + r.stdout[:200])
    if args.rlopt:
        v1 = rltest.run([args.rlopt, "--version"], 30).stdout
        v2 = rltest.run([sys.executable, "-m", "rlopt", "--version"], 30).stdout
        c("python -m rlopt --version equals the build's", v1 and v1 == v2, f"{v1!r} vs {v2!r}")
    c("cmake_dir() holds rlopt-config.cmake",
      os.path.isfile(os.path.join(rlopt.cmake_dir(), "rlopt-config.cmake")), rlopt.cmake_dir())

    models = {"mlp": os.path.join(ex, "mlp.onnx"), "gpt_block": os.path.join(ex, "gpt_block.onnx")}
    for name, path in models.items():
        proto = onnx.load(path)
        # report
        rc, want, err = cli_json([exe, "report", path, "--hw", "h100", "--format", "json"])
        got = rlopt.report(path, hw="h100")
        c(f"{name}: report() == `rlopt report --format json`", rc == 0 and got == want, err)
        got = rlopt.report(proto, hw="h100")
        same = {k: v for k, v in got.items() if k != "model"} == \
            {k: v for k, v in (want or {}).items() if k != "model"}
        c(f"{name}: report(ModelProto) == the CLI's, but for the temporary path", same)
        rc, want, err = cli_json([exe, "report", path, "--hw", "h100", "-O2", "--format", "json"])
        c(f"{name}: report(opt=2) == `rlopt report -O2 --format json`",
          rc == 0 and rlopt.report(path, hw="h100", opt=2) == want, err)
        # optimize, to C
        d1, d2 = os.path.join(tmp, name + "_py"), os.path.join(tmp, name + "_cli")
        os.makedirs(d1)
        os.makedirs(d2)
        got = rlopt.optimize(path, os.path.join(d1, "m.c"), hw="generic-cpu", batch=1)
        rj = os.path.join(d2, "r.json")
        p = subprocess.run([exe, path, "-o", os.path.join(d2, "m.c"), "--report", rj, "--hw",
                            "generic-cpu", "--batch", "1", "-O2"], capture_output=True, text=True)
        want = json.load(open(rj)) if p.returncode == 0 else None
        c(f"{name}: optimize() == `rlopt -o m.c --report r.json`", got == want, p.stderr)
        same = all(open(os.path.join(d1, f), "rb").read() == open(os.path.join(d2, f), "rb").read()
                   for f in ("m.c", "m.h"))
        c(f"{name}: optimize() writes the same m.c and m.h", same)
        got = rlopt.optimize(path, os.path.join(d1, "m1.c"), opt=1)
        c(f"{name}: optimize(opt=1) runs fewer passes than -O2",
          {x["pass"] for x in got.get("remarks", [])} <= {"fold", "dedupe", "cse", "patterns", "dce"})
        # optimize to ONNX from a ModelProto, then diff against the original
        opt_onnx = os.path.join(d1, "opt.onnx")
        rlopt.optimize(proto, opt_onnx)
        rc, want, err = cli_json([exe, "diff", path, opt_onnx, "--hw", "h100", "--format", "json"])
        got = rlopt.diff(path, opt_onnx, hw="h100")
        c(f"{name}: diff() == `rlopt diff --format json`", rc == 0 and got == want, err)
        got = rlopt.diff(proto, opt_onnx, hw="h100")
        c(f"{name}: diff(ModelProto, path) gives the same verdicts",
          want and [b["verdict"] for b in got["batches"]] == [b["verdict"] for b in want["batches"]])
        # run, against the CLI's TensorProto outputs and onnxruntime
        inits = {i.name for i in proto.graph.initializer}
        rng = np.random.default_rng(7)
        feeds = {}
        for vi in proto.graph.input:
            if vi.name in inits:
                continue
            shape = [d.dim_value or 1 for d in vi.type.tensor_type.shape.dim]
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
        got = rlopt.run(path, feeds, threads=1)
        ind, outd = os.path.join(tmp, name + "_in"), os.path.join(tmp, name + "_out")
        os.makedirs(ind)
        os.makedirs(outd)
        argv = [exe, "run", path]
        for k, (n, a) in enumerate(feeds.items()):
            rltest.write_pb(os.path.join(ind, f"input_{k}.pb"), a, n)
            argv += ["-i", os.path.join(ind, f"input_{k}.pb")]
        p = subprocess.run(argv + ["-d", outd, "--threads", "1"], capture_output=True, text=True)
        want = dict(rltest.read_pb(f) for f in sorted(glob.glob(os.path.join(outd, "output_*.pb"))))
        c(f"{name}: run() == `rlopt run` outputs, bit for bit",
          p.returncode == 0 and list(got) == list(want) and
          all(np.array_equal(got[k], want[k]) for k in want), p.stderr)
        got2 = rlopt.run(proto, feeds)
        c(f"{name}: run(ModelProto) gives the same outputs",
          list(got2) == list(got) and all(np.array_equal(got2[k], got[k]) for k in got))
        try:
            import onnxruntime as ort
            ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
            outs = [o.name for o in proto.graph.output]
            ok = all(np.allclose(got[n], r, rtol=1e-4, atol=1e-5) for n, r in zip(outs, ref))
            c(f"{name}: run() agrees with onnxruntime", ok)
        except ImportError:
            c.tally.add("skip")

    a = os.path.join(ex, "rewrites", "conv3x3_dense.onnx")
    b = os.path.join(ex, "rewrites", "conv3x3_tucker2.onnx")
    if os.path.isfile(a) and os.path.isfile(b):
        rc, want, err = cli_json([exe, "diff", a, b, "--hw", "h100", "--batch", "1,64", "--format", "json"])
        c("diff(batch=[1, 64]) on the Tucker-2 pair == the CLI's",
          rc == 0 and rlopt.diff(a, b, hw="h100", batch=[1, 64]) == want, err)

    # errors from rlopt: its message and exit code
    mlp = models["mlp"]
    missing = os.path.join(tmp, "absent.onnx")
    p = subprocess.run([exe, "report", missing, "--format", "json"], capture_output=True, text=True)
    e = c.raises("report() of a missing file raises RloptError", rlopt.RloptError, rlopt.report, missing)
    c("  ... with rlopt's line and exit code 2",
      e and e.returncode == 2 and e.message == p.stderr.strip().splitlines()[-1], e and e.message)
    junk = os.path.join(tmp, "junk.onnx")
    with open(junk, "wb") as f:
        f.write(b"\x0a\xff\xff\xff\xff not a model")
    e = c.raises("run() of a corrupt model raises RloptError", rlopt.RloptError, rlopt.run, junk, {})
    c("  ... with exit code 2", e and e.returncode == 2, e and str(e))
    e = c.raises("diff() of unrelated models raises RloptError", rlopt.RloptError, rlopt.diff,
                 mlp, models["gpt_block"])
    c("  ... with exit code 2 and a one-line message",
      e and e.returncode == 2 and e.message.startswith("rlopt") and "\n" not in e.message, e and str(e))

    # hostile and wrong values: refused before rlopt runs
    out = os.path.join(tmp, "h.c")
    x = {"x": np.zeros((1, 256), np.float32)}
    for title, fn, kw in [
        ("batch=0", rlopt.optimize, dict(batch=0)),
        ("batch=True", rlopt.optimize, dict(batch=True)),
        ("batch='1; rm -rf ~'", rlopt.optimize, dict(batch="1; rm -rf ~")),
        ("batch=1.5", rlopt.report, dict(batch=1.5)),
        ("batch list in optimize", rlopt.optimize, dict(batch=[1, 8])),
        ("hw='-O0' (an option)", rlopt.report, dict(hw="-O0")),
        ("hw='../../etc/passwd'", rlopt.report, dict(hw="../../etc/passwd")),
        ("hw='$(reboot)'", rlopt.report, dict(hw="$(reboot)")),
        ("opt=3", rlopt.optimize, dict(opt=3)),
        ("weights_max=-1", rlopt.optimize, dict(weights_max=-1)),
        ("passes='fold;dce'", rlopt.optimize, dict(passes="fold;dce")),
        ("shape with a zero dim", rlopt.report, dict(shape={"x": (0, 256)})),
        ("max_rel_error=nan", rlopt.optimize, dict(factorize=True, max_rel_error=float("nan"))),
    ]:
        args_ = (mlp, out) if fn is rlopt.optimize else (mlp,)
        c.raises(f"ValueError for {title}", ValueError, fn, *args_, **kw)
    c("  ... and nothing was written", not os.path.exists(out) and not os.path.exists(out[:-1] + "h"))
    c.raises("ValueError for out='m.txt'", ValueError, rlopt.optimize, mlp, os.path.join(tmp, "m.txt"))
    c.raises("TypeError for an unknown option", TypeError, rlopt.optimize, mlp, out, fast=True)
    c.raises("ValueError for run() with a missing input", ValueError, rlopt.run, mlp, {})
    c.raises("ValueError for run() with an unknown input", ValueError, rlopt.run, mlp, dict(x, y=x["x"]))
    c.raises("ValueError for threads=0", ValueError, rlopt.run, mlp, x, threads=0)
    c.raises("ValueError for cflags with a shell command", ValueError, rlopt.run, mlp, x,
             cflags=["-O2; touch pwned"])
    c.raises("ValueError for cc with arguments", ValueError, rlopt.run, mlp, x, cc="cc -o /etc/x")
    c("  ... and nothing ran a shell", not os.path.exists(os.path.join(tmp, "pwned")))
    # a model path that looks like an option is still a path
    dash = os.path.join(tmp, "-mlp.onnx")
    shutil.copy(mlp, dash)
    old = os.getcwd()
    os.chdir(tmp)
    try:
        c("a model named '-mlp.onnx' is read as a file", rlopt.report("-mlp.onnx")["model"] == "./-mlp.onnx")
    finally:
        os.chdir(old)

    # the TensorProto codec against onnx's
    ok = True
    for a in [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([-3, 7], np.int64),
              np.array(2.5, np.float64), np.array([True, False]), np.arange(4, dtype=np.float16),
              np.array([1, 255], np.uint8), np.zeros((0, 3), np.float32)]:
        t = onnx.TensorProto()
        t.ParseFromString(_tensor.encode_tensor("t", a))
        back = numpy_helper.to_array(t)
        n2, a2 = _tensor.decode_tensor(numpy_helper.from_array(a, "u").SerializeToString())
        ok &= t.name == "t" and back.dtype == a.dtype and np.array_equal(back, a)
        ok &= n2 == "u" and a2.dtype == a.dtype and a2.shape == a.shape and np.array_equal(a2, a)
    t = onnx.helper.make_tensor("f", onnx.TensorProto.FLOAT, [2], [1.5, -2.0])  # float_data
    n3, a3 = _tensor.decode_tensor(t.SerializeToString())
    ok &= n3 == "f" and np.array_equal(a3, np.array([1.5, -2.0], np.float32))
    c("TensorProto codec agrees with onnx.numpy_helper", ok)
    c("model_input_names() agrees with onnx", all(
        _tensor.model_input_names(open(p, "rb").read()) ==
        [i.name for i in onnx.load(p).graph.input if i.name not in
         {t.name for t in onnx.load(p).graph.initializer}] for p in models.values()))
    shutil.rmtree(tmp, ignore_errors=True)
    return c.tally.finish()


def main():
    ap = rltest.make_parser(__doc__)
    ap.add_argument("--inner", action="store_true", help=argparse_hidden())
    args = ap.parse_args()
    return inner(args) if args.inner else outer(args)


def argparse_hidden():
    import argparse
    return argparse.SUPPRESS


if __name__ == "__main__":
    sys.exit(main())
