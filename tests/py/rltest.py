"""Shared helpers for rlopt's Python test drivers (no pytest).

Each driver is a plain script run by ctest as
    <venv python> tests/py/test_X.py --rlopt PATH --source DIR --build DIR [flags]
and ends with one line, exactly ``N passed, N failed, N skipped``; it exits
non-zero when anything failed. This module holds what the drivers share:
the argument parser, locating the ONNX test data shipped in the onnx wheel,
TensorProto .pb files, subprocesses with timeouts, and array comparison with
numpy.testing.assert_allclose semantics.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

# ---- arguments ------------------------------------------------------------


def make_parser(description):
    """The flags every driver takes; add driver-specific ones to the result."""
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--rlopt", default=None, help="path of the rlopt executable")
    ap.add_argument("--source", default=os.path.normpath(os.path.join(here, "..", "..")),
                    help="rlopt source tree (default: %(default)s)")
    ap.add_argument("--build", default=None, help="rlopt build tree (informational)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every test and skip")
    return ap


def add_model_args(ap, seed_help="seed of the inputs"):
    """The flags of the drivers that run whole models against onnxruntime
    (test_models_ort.py, test_real_models.py)."""
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="check only models whose name matches this fnmatch pattern (repeatable)")
    ap.add_argument("--rlopt-args", default="", help="extra flags for `rlopt run`, one shell-quoted string")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per model (default: %(default)s)")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0, help=seed_help + " (default: %(default)s)")
    ap.add_argument("--stderr-lines", type=int, default=12, help="stderr lines shown per failure")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (printed at the end)")


def ort_reference(path, feeds, threads=0):
    """onnxruntime's CPU outputs for feeds (a dict or (name, array) pairs);
    threads 0: its default intra-op thread count."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    if threads:
        so.intra_op_num_threads = threads
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, dict(feeds))


def compare_outputs(out_dir, names, expected, rtol, atol):
    """Compare `rlopt run -d out_dir`'s output_K.pb with expected[K] (named
    names[K]); returns (None, worst abs err, worst rel err) when all match,
    else (a one-line reason, 0, 0)."""
    worst_abs = worst_rel = 0.0
    for k, (oname, want) in enumerate(zip(names, expected)):
        p = os.path.join(out_dir, f"output_{k}.pb")
        if not os.path.exists(p):
            return f"output_{k}.pb ({oname}) not written", 0.0, 0.0
        try:
            _, got = read_pb(p)
        except Exception as e:
            return f"output_{k}.pb ({oname}): cannot read: {e}", 0.0, 0.0
        ok, msg, mabs, mrel = compare(got, np.asarray(want), rtol=rtol, atol=atol)
        if not ok:
            return f"output {oname}: {msg}", 0.0, 0.0
        worst_abs = max(worst_abs, mabs or 0.0)
        worst_rel = max(worst_rel, mrel or 0.0)
    return None, worst_abs, worst_rel


# ---- ONNX test data -------------------------------------------------------


def find_nvcc():
    """nvcc on PATH, else the newest /usr/local/cuda*/bin/nvcc; None when absent."""
    p = shutil.which("nvcc")
    if p:
        return p
    for c in sorted(glob.glob("/usr/local/cuda*/bin/nvcc"), reverse=True):
        if os.access(c, os.X_OK):
            return c
    return None


def onnx_data_dir():
    """The backend test data that ships inside the onnx wheel."""
    d = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    if not os.path.isdir(d):
        raise FileNotFoundError(f"onnx backend test data not found at {d}")
    return d


def read_pb(path):
    """Read a TensorProto .pb file; returns (name, numpy array)."""
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def write_pb(path, arr, name=""):
    """Write a numpy array as a TensorProto .pb file (atomically)."""
    t = numpy_helper.from_array(np.asarray(arr), name)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(t.SerializeToString())
    os.replace(tmp, path)


def graph_inputs(model):
    """Graph inputs that are real inputs (not initializers), in order."""
    inits = {i.name for i in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in inits]


def dtype_name(elem_type):
    """ONNX TensorProto.DataType number -> lower-case name ('float', 'int64', ...)."""
    try:
        return onnx.TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"dtype{elem_type}"


# ---- subprocesses ---------------------------------------------------------


class RunResult:
    def __init__(self, cmd, returncode, stdout, stderr, timed_out, seconds):
        self.cmd = cmd
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out
        self.seconds = seconds

    @property
    def ok(self):
        return not self.timed_out and self.returncode == 0

    def describe(self, max_lines=8):
        """One-paragraph account of a failed run: exit status, then stderr's first lines."""
        if self.timed_out:
            head = f"timed out after {self.seconds:.0f} s"
        elif self.returncode is None:
            head = "could not start"
        elif self.returncode < 0:
            head = f"killed by signal {-self.returncode}"
        else:
            head = f"exit status {self.returncode}"
        text = (self.stderr or "").strip() or (self.stdout or "").strip()
        lines = text.splitlines()
        body = "\n".join("    " + ln for ln in lines[:max_lines])
        if len(lines) > max_lines:
            body += f"\n    ... ({len(lines) - max_lines} more lines)"
        return head + ("\n" + body if body else "")


def run(cmd, timeout, cwd=None, env=None):
    """Run cmd (a list) with a timeout, capturing text output; never raises for
    a non-zero exit or a timeout."""
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                             env=env, text=True, errors="replace", start_new_session=True)
    except OSError as e:
        return RunResult(cmd, None, "", f"{cmd[0]}: {e}", False, 0.0)
    try:
        out, err = p.communicate(timeout=timeout)
        return RunResult(cmd, p.returncode, out, err, False, time.monotonic() - t0)
    except subprocess.TimeoutExpired:
        # kill the whole process group the child leads (it may have spawned a
        # compiler or the compiled program), then collect what it printed
        try:
            os.killpg(p.pid, 9)
        except OSError:
            p.kill()
        out, err = p.communicate()
        return RunResult(cmd, p.returncode, out, err, True, time.monotonic() - t0)


# ---- comparison -----------------------------------------------------------


def _is_exact(dt):
    return dt == np.bool_ or np.issubdtype(dt, np.integer)


def _as_float64(a):
    # float16 is a numpy type; bfloat16 and float8 come from ml_dtypes and
    # convert with astype as well
    return np.asarray(a).astype(np.float64)


def compare(actual, expected, rtol=1e-3, atol=1e-7):
    """Compare like numpy.testing.assert_allclose(actual, expected, rtol, atol)
    with equal_nan=True: |a - e| <= atol + rtol * |e| elementwise, NaN where the
    other has NaN, +-inf exactly where the other has the same inf. Shapes and
    dtypes must match exactly; bool and integer arrays must be equal.

    Returns (ok, message, max_abs_err, max_rel_err); message is "" when ok.
    """
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    if actual.shape != expected.shape:
        return False, f"shape {list(actual.shape)} != expected {list(expected.shape)}", None, None
    if actual.dtype != expected.dtype:
        return False, f"dtype {actual.dtype} != expected {expected.dtype}", None, None
    if actual.size == 0:
        return True, "", 0.0, 0.0
    if actual.dtype == object:
        ok = bool(np.array_equal(actual, expected))
        return ok, "" if ok else "values differ", None, None
    if _is_exact(actual.dtype):
        bad = actual != expected
        nbad = int(np.count_nonzero(bad))
        if expected.dtype == np.bool_:
            diff = bad.astype(np.float64)
        else:
            diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
        max_abs = float(diff.max())
        if nbad == 0:
            return True, "", 0.0, 0.0
        idx = np.unravel_index(int(np.argmax(bad)), bad.shape)
        return (False, f"{nbad}/{actual.size} elements differ (exact compare); first at "
                f"{list(map(int, idx))}: got {actual[idx].item()!r}, expected {expected[idx].item()!r}",
                max_abs, None)

    a = _as_float64(actual)
    e = _as_float64(expected)
    a_nan, e_nan = np.isnan(a), np.isnan(e)
    a_inf, e_inf = np.isinf(a), np.isinf(e)
    finite = ~(a_nan | e_nan | a_inf | e_inf)
    nonfinite_bad = (a_nan != e_nan) | ((a_inf | e_inf) & ~(a_nan | e_nan) & (a != e))
    bad = nonfinite_bad.copy()
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(finite, np.abs(a - e), 0.0)
        tol = atol + rtol * np.abs(np.where(finite, e, 0.0))
        rel = np.where(finite & (e != 0), diff / np.where(e != 0, np.abs(e), 1.0), 0.0)
    bad |= finite & (diff > tol)
    max_abs = float(diff.max())
    max_rel = float(rel.max())
    nbad = int(np.count_nonzero(bad))
    if nbad == 0:
        return True, "", max_abs, max_rel
    idx = np.unravel_index(int(np.argmax(bad)), bad.shape)
    nf = int(np.count_nonzero(nonfinite_bad))
    nf_text = f" ({nf} NaN/inf mismatches)" if nf else ""
    return (False, f"{nbad}/{actual.size} elements outside rtol={rtol:g} atol={atol:g}{nf_text}; "
            f"max abs err {max_abs:.3g}, max rel err {max_rel:.3g} (finite elements); first at "
            f"{list(map(int, idx))}: got {a[idx].item()!r}, expected {e[idx].item()!r}", max_abs, max_rel)


# ---- results --------------------------------------------------------------


class Tally:
    """Counts results and prints the final summary line."""

    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = 0

    def add(self, status):
        if status == "pass":
            self.passed += 1
        elif status == "fail":
            self.failed += 1
        elif status == "skip":
            self.skipped += 1
        else:
            raise ValueError(status)

    def summary_line(self):
        return f"{self.passed} passed, {self.failed} failed, {self.skipped} skipped"

    def finish(self, min_pass=None):
        """Print the final line and return the exit status for sys.exit."""
        short = min_pass is not None and self.passed < min_pass
        if short:
            print(f"only {self.passed} tests passed, fewer than --min-pass {min_pass}")
        print(self.summary_line(), flush=True)
        return 1 if self.failed or short else 0


class Checks:
    """Named checks counted in a Tally: a failure prints `FAIL name: detail`,
    a pass `ok   name` when verbose; check() returns ok."""

    def __init__(self, verbose):
        self.tally = Tally()
        self.verbose = verbose

    def check(self, name, ok, detail=""):
        self.tally.add("pass" if ok else "fail")
        if not ok:
            print(f"FAIL {name}: {detail}")
        elif self.verbose:
            print(f"ok   {name}")
        return ok


def check_main(doc, prefix, body):
    """A check driver's main: parse the common arguments (--rlopt required),
    run body(checks, args, work) in a fresh temporary folder (removed after),
    print the summary line and return the exit status."""
    ap = make_parser(doc.split("\n\n")[0])
    args = ap.parse_args()
    if not args.rlopt:
        ap.error("--rlopt is required")
    c = Checks(args.verbose)
    work = tempfile.mkdtemp(prefix=prefix)
    try:
        body(c, args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return c.tally.finish()


def const_made_model():
    """A model whose constants are made by nodes too big for fold.c to keep
    (as the onnx light models make their weights): Conv weight =
    ConstantOfShape(0.01) + Reshape(Range * 1e-5) (distinct values, so a
    wrong packing shows; 73728 of them, over the shape evaluator's 65536,
    so nothing folds), and an Expand of a constant as a second output.
    Input x [1, 64, 14, 14]; outputs y [1, 128, 14, 14], e [1, 64, 128, 3]."""
    from onnx import TensorProto, helper
    T = helper.make_tensor
    nodes = [
        helper.make_node("ConstantOfShape", ["wshape"], ["w0"],
                         value=T("v", TensorProto.FLOAT, [1], [0.01])),
        helper.make_node("Range", ["r0", "rn", "r1"], ["r"]),
        helper.make_node("Mul", ["r", "rs"], ["rsc"]),
        helper.make_node("Reshape", ["rsc", "wshape"], ["w1"]),
        helper.make_node("Add", ["w0", "w1"], ["w"]),
        helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]),
        helper.make_node("Expand", ["b", "bshape"], ["e"]),
    ]
    inits = [T("wshape", TensorProto.INT64, [4], [128, 64, 3, 3]),
             T("r0", TensorProto.FLOAT, [], [0.0]), T("r1", TensorProto.FLOAT, [], [1.0]),
             T("rn", TensorProto.FLOAT, [], [float(128 * 64 * 9)]),
             T("rs", TensorProto.FLOAT, [], [1e-5]),
             T("b", TensorProto.FLOAT, [1, 1, 1, 3], [1.0, -2.0, 0.5]),
             T("bshape", TensorProto.INT64, [4], [1, 64, 128, 3])]
    g = helper.make_graph(
        nodes, "cst", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 14, 14])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 128, 14, 14]),
         helper.make_tensor_value_info("e", TensorProto.FLOAT, [1, 64, 128, 3])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m
