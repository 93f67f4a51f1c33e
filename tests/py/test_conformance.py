#!/usr/bin/env python3
"""ONNX backend node-test conformance for rlopt.

Runs every test under <onnx wheel>/backend/test/data/node/ (one small model,
test_data_set_*/input_K.pb and the expected output_K.pb) through

    rlopt run <test>/model.onnx -i input_0.pb [-i input_1.pb ...] -d <tmp> [--rlopt-args]

and compares <tmp>/output_K.pb with the expected outputs: same shape, same
dtype, values within rtol 1e-3 / atol 1e-7 (the onnx backend-test defaults,
overridden by a data.json beside the model if there is one; onnx 1.22 ships
data.json only for the 'real' model tests, none under node/).

A test is skipped, with its reason printed and counted, when
  - a line of tests/conformance/skips.txt matches it: "<fnmatch pattern> <reason>";
  - it uses an operator that `rlopt ops` does not list ("unsupported operator X");
  - a graph input or output, a constant, or a cast target has a dtype rlopt
    does not compute on ("unsupported dtype X": string, complex, map, sparse
    tensors, a sequence of sequences, ...).
Anything else that does not reproduce the expected outputs is a failure.

Sequence and optional inputs and outputs (of tensors) are files of
SequenceProto and OptionalProto (`rlopt run` reads and writes them, lowering
each to tensors of the generated code); the expected ones are compared
kind by kind: an optional's presence, a sequence's length, then each tensor
as above.

Output: failures as they happen, a per-operator table (op, passed, failed,
skipped), the skip reasons, then the last line "N passed, N failed, N skipped".
Exit status 0 iff nothing failed (and at least --min-pass tests passed).
"""

import collections
import concurrent.futures
import fnmatch
import glob
import json
import os
import re
import shlex
import shutil
import sys
import tempfile

import onnx
from onnx import numpy_helper

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-7

# dtypes rlopt computes on (names as rltest.dtype_name gives them)
SUPPORTED_DTYPES = {
    "float", "double", "float16", "bfloat16",
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "bool",
    # low precision (ir/lowp.c): one element a byte in memory, packed in files
    "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float8e8m0",
    "float4e2m1", "int4", "uint4", "int2", "uint2",
}

# attributes that name a dtype (Cast.to, EyeLike.dtype, QuantizeLinear.output_dtype, ...)
DTYPE_ATTRS = {"to", "dtype", "output_dtype"}


# ---- the supported operator list -------------------------------------------


def parse_ops_def(path):
    """Operator names of the RL_OP(Name, ...) rows of ir/ops.def."""
    ops = []
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*RL_OP\(\s*(\w+)\s*,", line)
            if m:
                dom = ("ai.onnx.ml:" if "RL_OPF_ML" in line else
                       "ai.onnx.preview.training:" if "RL_OPF_TRAIN" in line else "")
                ops.append(dom + m.group(1))
    return ops


def parse_ops_list(text):
    """One operator per line; '#' starts a comment; the first word counts."""
    ops = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            ops.append(line.split()[0])
    return ops


def supported_ops(args):
    if args.ops_file:
        if args.ops_file.endswith(".def"):
            return set(parse_ops_def(args.ops_file)), args.ops_file
        with open(args.ops_file) as f:
            return set(parse_ops_list(f.read())), args.ops_file
    if (args.count_only or args.list_skips) and not args.rlopt:
        path = os.path.join(args.source, "ir", "ops.def")
        return set(parse_ops_def(path)), path
    if not args.rlopt:
        sys.exit("test_conformance: --rlopt is required (or --ops-file)")
    r = rltest.run([args.rlopt, "ops"], timeout=60)
    if not r.ok:
        sys.exit(f"test_conformance: `{args.rlopt} ops` failed: {r.describe()}")
    ops = set(parse_ops_list(r.stdout))
    if not ops:
        sys.exit(f"test_conformance: `{args.rlopt} ops` listed no operators")
    return ops, f"{args.rlopt} ops"


# ---- the skip list -----------------------------------------------------------


def load_skips(path):
    """[(pattern, reason, line number)] from skips.txt; '#' lines are comments."""
    skips = []
    if not os.path.exists(path):
        return skips
    with open(path) as f:
        for no, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 1)
            if len(parts) < 2:
                sys.exit(f"{path}:{no}: a skip needs a pattern and a reason")
            skips.append((parts[0], parts[1].strip(), no))
    return skips


# ---- reading a test --------------------------------------------------------


def op_key(node):
    """op_type for the default domain, 'domain:op_type' for any other."""
    if node.domain in ("", "ai.onnx"):
        return node.op_type
    return f"{node.domain}:{node.op_type}"


def type_problem(tp, outer=True):
    """None if a TypeProto is a tensor of a supported dtype, or (outer) a
    sequence or optional of such tensors, or an optional sequence of them;
    else its name."""
    kind = tp.WhichOneof("value")
    if outer and kind == "optional_type":
        inner = tp.optional_type.elem_type
        if inner.WhichOneof("value") == "sequence_type":
            inner = inner.sequence_type.elem_type
        return type_problem(inner, outer=False)
    if outer and kind == "sequence_type":
        return type_problem(tp.sequence_type.elem_type, outer=False)
    if not outer and kind in ("sequence_type", "optional_type"):
        return "nested " + kind[:-len("_type")]
    if kind != "tensor_type":
        return {"sequence_type": "sequence", "optional_type": "optional", "map_type": "map",
                "sparse_tensor_type": "sparse_tensor"}.get(kind, str(kind))
    return dtype_problem(tp.tensor_type.elem_type)


def dtype_problem(elem_type):
    name = rltest.dtype_name(elem_type)
    return None if name in SUPPORTED_DTYPES else name


def scan_graph(graph, ops, bad_dtypes):
    """Collect operators and unsupported dtypes of a graph and its subgraphs."""
    for t in graph.initializer:
        p = dtype_problem(t.data_type)
        if p:
            bad_dtypes.add(p)
    for n in graph.node:
        ops.add(op_key(n))
        for a in n.attribute:
            if a.type == onnx.AttributeProto.INT and a.name in DTYPE_ATTRS:
                p = dtype_problem(a.i)
                if p:
                    bad_dtypes.add(p)
            elif a.type == onnx.AttributeProto.TENSOR:
                p = dtype_problem(a.t.data_type)
                if p:
                    bad_dtypes.add(p)
            elif a.type == onnx.AttributeProto.GRAPH:
                scan_graph(a.g, ops, bad_dtypes)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    scan_graph(g, ops, bad_dtypes)


class Test:
    """One node test: what it uses and, once run, how it went."""

    def __init__(self, name, path):
        self.name = name
        self.path = path
        self.ops = set()
        self.bad_dtypes = set()
        self.op = None          # the operator it is counted under in the table
        self.n_nodes = 0
        self.rtol = DEFAULT_RTOL
        self.atol = DEFAULT_ATOL
        self.status = None      # "pass", "fail", "skip"
        self.reason = ""        # skip reason or failure account
        self.out_kinds = []     # per graph output: "tensor", "sequence", "optional"

    def load(self):
        model = onnx.load(os.path.join(self.path, "model.onnx"), load_external_data=False)
        g = model.graph
        self.n_nodes = len(g.node)
        if self.n_nodes == 1:
            self.op = op_key(g.node[0])
        scan_graph(g, self.ops, self.bad_dtypes)
        for vi in list(rltest.graph_inputs(model)) + list(g.output):
            p = type_problem(vi.type)
            if p:
                self.bad_dtypes.add(p)
        self.out_kinds = [{"sequence_type": "sequence", "optional_type": "optional"}.get(
            vi.type.WhichOneof("value"), "tensor") for vi in g.output]
        self.first_op = op_key(g.node[0]) if g.node else "(empty)"
        dj = os.path.join(self.path, "data.json")
        if os.path.exists(dj):
            with open(dj) as f:
                data = json.load(f)
            self.rtol = data.get("rtol", self.rtol)
            self.atol = data.get("atol", self.atol)


def norm(s):
    return s.replace("_", "").lower()


def assign_ops(tests):
    """Choose the operator each test is counted under: the one node of a
    single-node test; for an '_expanded' test the operator of the test it
    expands; otherwise the longest ONNX operator name that prefixes the test
    name (ignoring case and underscores); else the first node's operator."""
    by_name = {t.name: t for t in tests}
    schema_ops = sorted({s.name for s in onnx.defs.get_all_schemas_with_history()},
                        key=len, reverse=True)
    for t in tests:
        if t.op:
            continue
        m = re.match(r"(.*?)_expanded(_ver\d+)?$", t.name)
        base = by_name.get(m.group(1)) if m else None
        if base is not None and base.op:
            t.op = base.op
            continue
        stem = norm(t.name[len("test_"):] if t.name.startswith("test_") else t.name)
        for op in schema_ops:
            if stem.startswith(norm(op)):
                t.op = op
                break
        else:
            t.op = t.first_op


def skip_reason(t, skips, ops, skip_hits):
    """The reason t is skipped ("" if it runs); sets t.listed and t.missing."""
    t.listed = False
    t.missing = sorted(t.ops - ops)
    for pattern, reason, no in skips:
        if fnmatch.fnmatchcase(t.name, pattern):
            skip_hits[no] += 1
            t.listed = True
            return reason
    reasons = []
    if t.missing:
        reasons.append("unsupported operator " + ", ".join(t.missing))
    if t.bad_dtypes:
        reasons.append("unsupported dtype " + ", ".join(sorted(t.bad_dtypes)))
    return "; ".join(reasons)


# ---- running a test ----------------------------------------------------------


def read_value(path, kind):
    """A graph output file: ("tensor", array), ("sequence", [array, ...]) or
    ("optional", None | array | [array, ...])."""
    with open(path, "rb") as f:
        data = f.read()
    if kind == "tensor":
        t = onnx.TensorProto()
        t.ParseFromString(data)
        return kind, numpy_helper.to_array(t)
    if kind == "sequence":
        s = onnx.SequenceProto()
        s.ParseFromString(data)
        return kind, numpy_helper.to_list(s)
    o = onnx.OptionalProto()
    o.ParseFromString(data)
    if o.HasField("tensor_value"):
        return kind, numpy_helper.to_array(o.tensor_value)
    if o.HasField("sequence_value"):
        return kind, numpy_helper.to_list(o.sequence_value)
    return kind, None


def compare_value(got, expected, rtol, atol):
    """(ok, message): an optional's presence, a sequence's length and kind,
    then every tensor with rltest.compare."""
    (_, g), (_, e) = got, expected
    if e is None or g is None:
        if (e is None) != (g is None):
            return False, "optional is %s, expected %s" % (
                "empty" if g is None else "present", "empty" if e is None else "present")
        return True, ""
    if isinstance(e, list) != isinstance(g, list):
        return False, "holds a %s, expected a %s" % (
            "sequence" if isinstance(g, list) else "tensor",
            "sequence" if isinstance(e, list) else "tensor")
    if not isinstance(e, list):
        return rltest.compare(g, e, rtol=rtol, atol=atol)[:2]
    if len(g) != len(e):
        return False, f"sequence of {len(g)} tensors, expected {len(e)}"
    for i, (a, b) in enumerate(zip(g, e)):
        ok, msg, _, _ = rltest.compare(a, b, rtol=rtol, atol=atol)
        if not ok:
            return False, f"element {i}: {msg}"
    return True, ""


def pb_files(d, prefix):
    files = glob.glob(os.path.join(d, f"{prefix}_*.pb"))
    return sorted(files, key=lambda p: int(re.search(r"_(\d+)\.pb$", p).group(1)))


def run_test(t, args, extra, tmp_root):
    """Run every test_data_set_* of t; sets t.status and t.reason."""
    sets = sorted(glob.glob(os.path.join(t.path, "test_data_set_*")))
    if not sets:
        t.status, t.reason = "fail", "no test_data_set_* directory"
        return t
    work = tempfile.mkdtemp(prefix=t.name + ".", dir=tmp_root)
    try:
        for ds in sets:
            out = os.path.join(work, os.path.basename(ds))
            os.makedirs(out)
            cmd = [args.rlopt, "run", os.path.join(t.path, "model.onnx")]
            for p in pb_files(ds, "input"):
                cmd += ["-i", p]
            cmd += ["-d", out] + extra
            r = rltest.run(cmd, timeout=args.timeout)
            if not r.ok:
                t.status = "fail"
                t.reason = f"{os.path.basename(ds)}: rlopt run: {r.describe(args.stderr_lines)}"
                return t
            for exp_path in pb_files(ds, "output"):
                k = os.path.basename(exp_path)
                got_path = os.path.join(out, k)
                if not os.path.exists(got_path):
                    t.status, t.reason = "fail", f"{os.path.basename(ds)}: {k} not written"
                    return t
                no = int(re.search(r"_(\d+)\.pb$", k).group(1))
                kind = t.out_kinds[no] if no < len(t.out_kinds) else "tensor"
                try:
                    expected = read_value(exp_path, kind)
                    got = read_value(got_path, kind)
                except Exception as e:  # a malformed output file is rlopt's failure
                    t.status, t.reason = "fail", f"{os.path.basename(ds)}: {k}: cannot read: {e}"
                    return t
                ok, msg = compare_value(got, expected, t.rtol, t.atol)
                if not ok:
                    t.status, t.reason = "fail", f"{os.path.basename(ds)}: {k}: {msg}"
                    return t
        t.status, t.reason = "pass", ""
        return t
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


# ---- report --------------------------------------------------------------------


def print_table(tests, columns=(("pass", "passed"), ("fail", "failed"), ("skip", "skipped"))):
    rows = collections.OrderedDict()
    for t in sorted(tests, key=lambda t: t.op):
        r = rows.setdefault(t.op, collections.Counter())
        r[t.status] += 1
    w = max([len("operator")] + [len(op) for op in rows])
    print(f"{'operator':<{w}}" + "".join(f" {title:>7}" for _, title in columns))
    for op, r in rows.items():
        print(f"{op:<{w}}" + "".join(f" {r[status]:>7}" for status, _ in columns))
    print()


def print_skip_reasons(tests):
    skipped = [t for t in tests if t.status == "skip"]
    listed = collections.Counter(t.reason for t in skipped if t.listed)
    if listed:
        print("skipped by the skip list:")
        for reason, n in sorted(listed.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {n:5d}  {reason}")
    auto = [t for t in skipped if not t.listed]
    needs = collections.Counter(op for t in auto for op in t.missing)
    alone = collections.Counter(t.missing[0] for t in auto if len(t.missing) == 1 and not t.bad_dtypes)
    if needs:
        print("skipped for an unsupported operator (tests using it / tests only it blocks):")
        w = max(len(op) for op in needs)
        for op, n in sorted(needs.items(), key=lambda kv: (-alone[kv[0]], -kv[1], kv[0])):
            print(f"  {op:<{w}}  {n:5d} {alone[op]:5d}")
    dtypes = collections.Counter(d for t in auto for d in t.bad_dtypes)
    if dtypes:
        print("skipped for an unsupported dtype (tests using it):")
        for d, n in sorted(dtypes.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {d:<14} {n:5d}")
    if skipped:
        print()


def main():
    ap = rltest.make_parser(__doc__.split("\n\n")[0])
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="run only tests whose name matches this fnmatch pattern (repeatable)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="parallel workers (default: %(default)s)")
    ap.add_argument("--rlopt-args", default="", help="extra flags for `rlopt run`, one shell-quoted string")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per `rlopt run` (default: %(default)s)")
    ap.add_argument("--skips", default=None, help="skip list (default: <source>/tests/conformance/skips.txt)")
    ap.add_argument("--ops-file", default=None,
                    help="take the supported operators from this file instead of `rlopt ops` "
                         "(ir/ops.def syntax if it ends in .def, else one name per line)")
    ap.add_argument("--data", default=None, help="node test directory (default: the onnx wheel's)")
    ap.add_argument("--list-skips", action="store_true", help="list every skipped test and its reason; run nothing")
    ap.add_argument("--count-only", action="store_true",
                    help="count the tests the operator list (default: <source>/ir/ops.def) and the "
                         "dtypes allow; run nothing")
    ap.add_argument("--min-pass", type=int, default=None, help="fail unless at least this many tests pass")
    ap.add_argument("--stderr-lines", type=int, default=8, help="stderr lines shown per failure")
    ap.add_argument("--keep", action="store_true", help="keep the output directories (printed at the end)")
    args = ap.parse_args()

    node_dir = args.data or os.path.join(rltest.onnx_data_dir(), "node")
    skips_path = args.skips or os.path.join(args.source, "tests", "conformance", "skips.txt")
    skips = load_skips(skips_path)
    ops, ops_from = supported_ops(args)
    extra = shlex.split(args.rlopt_args)

    names = sorted(n for n in os.listdir(node_dir)
                   if os.path.exists(os.path.join(node_dir, n, "model.onnx")))
    all_tests = [Test(n, os.path.join(node_dir, n)) for n in names]
    for t in all_tests:
        t.load()
    assign_ops(all_tests)

    def selected(name):
        return not args.patterns or any(fnmatch.fnmatchcase(name, p) for p in args.patterns)

    tests = [t for t in all_tests if selected(t.name)]
    skip_hits = collections.Counter()
    to_run = []
    for t in tests:
        reason = skip_reason(t, skips, ops, skip_hits)
        if reason:
            t.status, t.reason = "skip", reason
        else:
            to_run.append(t)
    if not args.patterns:
        for pattern, _, no in skips:
            if skip_hits[no] == 0:
                print(f"warning: {skips_path}:{no}: '{pattern}' matches no test")

    print(f"{len(tests)} node tests from {node_dir}")
    print(f"{len(ops)} supported operators from {ops_from}; {len(skips)} entries in {skips_path}")

    if args.list_skips or args.verbose:
        for t in tests:
            if t.status == "skip":
                print(f"SKIP {t.name} [{t.op}]: {t.reason}")
    if args.list_skips or args.count_only:
        for t in to_run:
            t.status = "pass"   # counted as "would run"
        if args.count_only:
            auto = [t for t in tests if not t.missing and not t.bad_dtypes]
            print()
            print_table(tests, (("pass", "run"), ("skip", "skipped")))
            print_skip_reasons(tests)
            print(f"{len(auto)} of {len(tests)} tests use only supported operators and dtypes; "
                  f"{len(to_run)} remain after {os.path.basename(skips_path)}")
        tally = rltest.Tally()
        tally.skipped = len(tests) - len(to_run)
        return tally.finish()

    if to_run and not args.rlopt:
        sys.exit("test_conformance: --rlopt is required to run tests")

    tmp_root = tempfile.mkdtemp(prefix="rlopt-conformance.")
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futs = [pool.submit(run_test, t, args, extra, tmp_root) for t in to_run]
            for fut in concurrent.futures.as_completed(futs):
                t = fut.result()
                if t.status == "fail":
                    print(f"FAIL {t.name} [{t.op}]: {t.reason}", flush=True)
                elif args.verbose:
                    print(f"PASS {t.name}", flush=True)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise
    finally:
        if args.keep:
            print(f"outputs kept in {tmp_root}")
        else:
            shutil.rmtree(tmp_root, ignore_errors=True)

    print()
    print_table(tests)
    print_skip_reasons(tests)
    tally = rltest.Tally()
    for t in tests:
        tally.add(t.status)
    return tally.finish(args.min_pass)


if __name__ == "__main__":
    sys.exit(main())
