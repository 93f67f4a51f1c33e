"""rlopt - the roofline-guided ONNX optimizer and C code generator, from Python.

Each function runs the `rlopt` executable that ships inside this package (an
argument list, never a shell) and returns what its JSON says:

    import rlopt
    rep = rlopt.optimize("model.onnx", "build/model_opt.c", hw="generic-cpu", batch=1)
    rep["total"]["time_s"], rep["remarks"][:3]
    rlopt.report("model.onnx", hw="h100", batch=[1, 8, 64])["crossings"]
    rlopt.diff("dense.onnx", "tucker2.onnx", hw="h100", batch=[1, 64])["batches"]
    rlopt.run("model.onnx", {"x": np.ones((1, 256), np.float32)})["y"]

A model is a path or an in-memory onnx.ModelProto (written to a temporary
file, so its weights must be inside it). Values are checked before rlopt
runs: a bad one raises ValueError (or TypeError for an unknown keyword); a
failure of rlopt itself raises RloptError with rlopt's one-line message and
its exit code (1 usage, 2 bad input, 3 diff slowdown, 4 generated program
failed). The executable is $RLOPT_EXE when set, else the packaged one, else
`rlopt` on PATH; cmake_dir() is the CMake package for find_package(rlopt).
"""

import json
import math
import os
import re
import shutil
import subprocess
import tempfile

__all__ = ["optimize", "report", "diff", "run", "RloptError", "executable", "hw_dir",
           "cmake_dir", "__version__"]
try:
    from importlib.metadata import version as _version
    __version__ = _version("rlopt")
except Exception:  # not installed as a distribution (a source checkout)
    __version__ = "0.1.0"

_HERE = os.path.dirname(os.path.abspath(__file__))
_DATA = os.path.join(_HERE, "_data")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_PASSES_RE = re.compile(r"^[a-z][a-z0-9_-]*$")


class RloptError(RuntimeError):
    """rlopt failed: .message is its one-line error, .returncode its exit
    code, .argv the command, .stderr everything it printed there."""

    def __init__(self, message, returncode, argv=(), stderr=""):
        super().__init__("%s (exit %d)" % (message, returncode))
        self.message = message
        self.returncode = returncode
        self.argv = list(argv)
        self.stderr = stderr


def executable():
    """Path of the rlopt executable these functions run."""
    env = os.environ.get("RLOPT_EXE")
    if env:
        return env
    packaged = os.path.join(_DATA, "bin", "rlopt")
    if os.access(packaged, os.X_OK):
        return packaged
    found = shutil.which("rlopt")
    if found:
        return found
    raise RloptError("rlopt: executable not found (not in the package, $RLOPT_EXE unset, "
                     "none on PATH)", 127)


def hw_dir():
    """The packaged machine profiles (NAME.xml usable as hw=NAME)."""
    return os.path.join(_DATA, "share", "rlopt", "hw")


def cmake_dir():
    """The packaged CMake package: cmake -Drlopt_DIR=<this> (or put
    os.path.dirname of _data in CMAKE_PREFIX_PATH)."""
    for lib in ("lib", "lib64"):
        d = os.path.join(_DATA, lib, "cmake", "rlopt")
        if os.path.isdir(d):
            return d
    return os.path.join(_DATA, "lib", "cmake", "rlopt")


# ---- checking values before they reach an argv ---------------------------

def _pos_int(what, v, limit=1 << 30):
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError("%s must be a positive int, not %r" % (what, v))
    if not 0 < v < limit:
        raise ValueError("%s must be between 1 and %d, not %d" % (what, limit - 1, v))
    return v


def _batch_arg(v, allow_list):
    if isinstance(v, (list, tuple)):
        if not allow_list:
            raise ValueError("batch must be one positive int here, not a list")
        if not v or len(v) > 16:
            raise ValueError("batch list must hold 1 to 16 values, not %d" % len(v))
        return ",".join(str(_pos_int("batch", b)) for b in v)
    return str(_pos_int("batch", v))


def _path_arg(what, p):
    """A path as one argv item rlopt cannot take for an option."""
    if not isinstance(p, (str, os.PathLike)):
        raise TypeError("%s must be a path or an onnx.ModelProto, not %s" % (what, type(p).__name__))
    p = os.fspath(p)
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    if not p or "\0" in p:
        raise ValueError("%s: empty path or NUL byte in %r" % (what, p))
    return os.path.join(os.curdir, p) if p.startswith("-") else p


def _hw_arg(hw):
    if isinstance(hw, os.PathLike) or (isinstance(hw, str) and hw.endswith(".xml")):
        p = os.path.abspath(os.fspath(hw))
        if not os.path.isfile(p):
            raise ValueError("hw profile %r not found" % os.fspath(hw))
        return p
    if not isinstance(hw, str) or not _NAME_RE.match(hw):
        raise ValueError("hw must be a profile name (letters, digits, . _ -; see `rlopt hw`) "
                         "or a path to a .xml profile, not %r" % (hw,))
    return hw


def _common_args(hw, batch, allow_list, opts, allowed):
    args = []
    if hw is not None:
        args += ["--hw", _hw_arg(hw)]
    if batch is not None:
        args += ["--batch", _batch_arg(batch, allow_list)]
    unknown = sorted(set(opts) - set(allowed))
    if unknown:
        raise TypeError("unknown option%s %s (allowed: %s)" % (
            "s" if len(unknown) > 1 else "", ", ".join(unknown), ", ".join(sorted(allowed))))
    for k, v in opts.items():
        if v is None or v is False:
            continue
        if k == "shape":
            for name, dims in dict(v).items():
                if not isinstance(name, str) or not name or "\0" in name:
                    raise ValueError("shape: bad input name %r" % (name,))
                if isinstance(dims, int) or not dims:
                    raise ValueError("shape[%r] must be a sequence of positive ints" % name)
                args += ["--shape", "%s=%s" % (name, "x".join(
                    str(_pos_int("shape[%r]" % name, d)) for d in dims))]
        elif k == "dim":
            for sym, n in dict(v).items():
                if not isinstance(sym, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_.:-]*$", sym):
                    raise ValueError("dim: bad symbol name %r" % (sym,))
                args += ["--dim", "%s=%d" % (sym, _pos_int("dim[%r]" % sym, n))]
        elif k == "weights_max":
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError("weights_max must be an int >= 0, not %r" % (v,))
            args += ["--weights-max", str(v)]
        elif k == "passes":
            names = v.split(",") if isinstance(v, str) else list(v)
            if not names or not all(isinstance(n, str) and _PASSES_RE.match(n) for n in names):
                raise ValueError("passes must be pass names such as ['fold', 'dce'], not %r" % (v,))
            args += ["--passes", ",".join(names)]
        elif k == "factorize":
            if v is not True:
                raise ValueError("factorize must be True or False, not %r" % (v,))
            args += ["--factorize"]
        elif k == "max_rel_error":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v > 0):
                raise ValueError("max_rel_error must be a positive finite number, not %r" % (v,))
            args += ["--max-rel-error", repr(float(v))]
    return args


# ---- running rlopt ---------------------------------------------------------

class _Model:
    """A model argument as a path; an in-memory ModelProto becomes a file in
    a private temporary folder that lives as long as the context."""

    def __init__(self, model, what="model"):
        self.model, self.what, self.tmp, self.path = model, what, None, None

    def __enter__(self):
        m = self.model
        if hasattr(m, "SerializeToString") and callable(m.SerializeToString):
            self.tmp = tempfile.TemporaryDirectory(prefix="rlopt-")
            name = self.what if re.match(r"^[A-Za-z0-9_]+$", self.what) else "model"
            self.path = os.path.join(self.tmp.name, name + ".onnx")
            with open(self.path, "wb") as f:
                f.write(m.SerializeToString())
        else:
            self.path = _path_arg(self.what, m)
        return self.path

    def __exit__(self, *exc):
        if self.tmp:
            self.tmp.cleanup()


def _call(argv, timeout=None):
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RloptError("rlopt: timed out after %s s" % timeout, 124, argv) from None
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode != 0:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        msg = next((ln for ln in reversed(lines) if ln.startswith("rlopt")), None)
        if msg is None:
            msg = lines[-1] if lines else "rlopt: exit %d" % p.returncode
        raise RloptError(msg, p.returncode, argv, err)
    return p.stdout.decode("utf-8", "replace")


def optimize(model, out, hw=None, batch=None, opt=2, **opts):
    """Optimize `model` and write `out` (.c: OUT.c and OUT.h, plus OUT.weights
    for large constants; .onnx: the optimized model). Returns the report dict
    of the optimized graph (rlopt-report-1 JSON, with the passes' remarks).
    opts: shape={name: dims}, dim={sym: n}, weights_max=bytes,
    passes=[names] (instead of opt), factorize=True, max_rel_error=e."""
    allowed = ("shape", "dim", "weights_max", "passes", "factorize", "max_rel_error")
    args = _common_args(hw, batch, False, opts, allowed)
    if opts.get("passes") is None:
        if isinstance(opt, bool) or opt not in (0, 1, 2):
            raise ValueError("opt must be 0, 1 or 2, not %r" % (opt,))
        args.append("-O%d" % opt)
    out = _path_arg("out", out)
    if not (out.endswith(".c") or out.endswith(".onnx")):
        raise ValueError("out must end in .c or .onnx, not %r" % out)
    with _Model(model) as path, tempfile.TemporaryDirectory(prefix="rlopt-") as tmp:
        rep = os.path.join(tmp, "report.json")
        _call([executable(), path, "-o", out, "--report", rep] + args)
        with open(rep, encoding="utf-8") as f:
            return json.load(f)


def report(model, hw=None, batch=None, opt=None, **opts):
    """The roofline report (rlopt report --format json) as a dict: of the
    model as loaded, or with opt=0/1/2 or passes=[...] of the graph those
    passes make. batch may be a list, which sweeps it. opts: shape, dim,
    passes."""
    args = _common_args(hw, batch, True, opts, ("shape", "dim", "passes"))
    if opt is not None:
        if isinstance(opt, bool) or opt not in (0, 1, 2) or opts.get("passes") is not None:
            raise ValueError("opt must be 0, 1 or 2 (and not given with passes), not %r" % (opt,))
        args.append("-O%d" % opt)
    with _Model(model) as path, tempfile.TemporaryDirectory(prefix="rlopt-") as tmp:
        rep = os.path.join(tmp, "report.json")
        _call([executable(), "report", path, "--format", "json", "-o", rep] + args)
        with open(rep, encoding="utf-8") as f:
            return json.load(f)


def diff(before, after, hw=None, batch=None):
    """Judge the rewrite `before` -> `after` (rlopt diff --format json): a
    dict with a verdict per batch; batch may be a list."""
    args = _common_args(hw, batch, True, {}, ())
    with _Model(before, "before") as a, _Model(after, "after") as b:
        return json.loads(_call([executable(), "diff", a, b, "--format", "json"] + args))


def run(model, inputs, threads=None, timeout=None, cc=None, cflags=None):
    """Generate C for `model`, compile and run it on `inputs` (a dict from
    each graph input's name to a numpy array) and return {output name: numpy
    array}. threads: for the generated code; timeout: seconds for compiling
    and running; cc: the compiler; cflags: a list of extra compiler flags."""
    from . import _tensor  # numpy, imported only here
    if not isinstance(inputs, dict):
        raise TypeError("inputs must be a dict {input name: numpy array}")
    args = []
    if threads is not None:
        args += ["--threads", str(_pos_int("threads", threads, 1025))]
    if timeout is not None:
        args += ["--timeout", str(_pos_int("timeout", timeout, 86401))]
    if cc is not None:
        if not isinstance(cc, (str, os.PathLike)) or not os.fspath(cc) or \
                re.search(r"[\s\0]", os.fspath(cc)) or os.fspath(cc).startswith("-"):
            raise ValueError("cc must be a compiler name or path without spaces, not %r" % (cc,))
        args += ["--cc", os.fspath(cc)]
    if cflags is not None:
        if isinstance(cflags, str) or not all(isinstance(x, str) for x in cflags):
            raise ValueError("cflags must be a list of strings, one flag each")
        for x in cflags:
            if not x or re.search(r"[\s\0'\"\\]", x):
                raise ValueError("cflags: %r is empty or has spaces, quotes or backslashes" % x)
        if cflags:
            args += ["--cflags", " ".join(cflags)]
    with _Model(model) as path, tempfile.TemporaryDirectory(prefix="rlopt-run-") as tmp:
        with open(path, "rb") as f:
            try:
                names = _tensor.model_input_names(f.read())
            except _tensor.WireError as e:
                raise RloptError("rlopt: %s: not an ONNX model (%s)" % (path, e), 2) from None
        missing = [n for n in names if n not in inputs]
        extra = [n for n in inputs if n not in names]
        if missing or extra:
            raise ValueError("inputs: the model takes %s; missing %s, unknown %s" % (
                names, missing or "none", extra or "none"))
        argv = [executable(), "run", path]
        for k, n in enumerate(names):
            p = os.path.join(tmp, "input_%d.pb" % k)
            with open(p, "wb") as f:
                f.write(_tensor.encode_tensor(n, inputs[n]))
            argv += ["-i", p]
        outdir = os.path.join(tmp, "out")
        os.mkdir(outdir)
        _call(argv + ["-d", outdir] + args)
        result, k = {}, 0
        while os.path.exists(os.path.join(outdir, "output_%d.pb" % k)):
            with open(os.path.join(outdir, "output_%d.pb" % k), "rb") as f:
                name, arr = _tensor.decode_tensor(f.read())
            result[name or "output_%d" % k] = arr
            k += 1
        return result
