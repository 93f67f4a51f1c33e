#!/usr/bin/env python3
"""No filler in the generated C: the kernels say what they compute, nothing more.

Generates C for the example models (examples/*.onnx) and a deterministic
sample of the onnx node-test models (one model per distinct set of operator
types, sorted by test name, every --stride'th of those), each at -O2, -O0
and -O2 --static, and reads every function the emitter writes per model
(kernels, their _range/_task wrappers, init/run; not the shared runtime
prelude, whose functions are named rl_*). A finding is, per function:

  void-used    `(void)NAME;` while NAME is used in its block anyway
               (in every preprocessor variant: the #if branches and the
               #else branches are checked separately, so a parameter used
               only under RL_VEC keeps its cast);
  zero-index   `const <int type> NAME = 0;`: an index bound to zero that is
               then only added or multiplied (a batch loop of extent 1
               should vanish, not leave its index behind);
  loop-1       `for (... = 0; NAME < 1; ...)`: a loop of extent 1 (unless
               its body continues or breaks it before any inner loop: there
               the loop is the control flow);
  mul-one      a multiplication by the integer literal 1 (`x * 1`, `1 * x`);
  add-zero     an addition of the integer literal 0 (`x + 0`, `0 + x`);
  int-cast     `(float)(0)`, `(double)1`, ...: an integer literal cast to a
               floating type where a float literal (0.0f) says it;
  dead-local   `(void)NAME;` for a local that nothing but its declaration
               names (the declaration is a dead line).

Comments and string literals are ignored. Each finding is printed as
`model[mode]:function:line: pattern: text`, then a count per pattern; the
test passes iff there are none. A model that does not generate in a mode
(it needs --value or a bound dim, or the mode refuses it) is skipped there.
"""

import collections
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import tempfile

import onnx

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

MODES = {"O2": ["-O2"], "O0": ["-O0"], "static": ["-O2", "--static"]}

# ---- C source cutting ------------------------------------------------------


def strip_comments(text):
    """Comments and string/char literals blanked (same length, newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def drop_attributes(s):
    """`__attribute__((...))` groups removed from a declaration line."""
    while True:
        k = s.find("__attribute__")
        if k < 0:
            return s
        j = s.find("(", k)
        if j < 0:
            return s
        depth = 0
        for e in range(j, len(s)):
            depth += s[e] == "("
            depth -= s[e] == ")"
            if depth == 0:
                break
        s = s[:k] + s[e + 1:]


def functions(text):
    """(name, first body line number, body lines) of each function defined
    at file scope: a header line at column 0 followed by a line `{`, the body
    ending at the next line `}` at column 0."""
    lines = text.split("\n")
    res = []
    i = 0
    while i + 1 < len(lines):
        head = lines[i]
        if (lines[i + 1] == "{" and head and head[0] not in " \t#{}" and "(" in head
                and not head.rstrip().endswith(";") and "=" not in head.split("(")[0]):
            m = re.search(r"(\w+)\s*\(", drop_attributes(head))
            j = i + 2
            while j < len(lines) and lines[j] != "}":
                j += 1
            if m:
                res.append((m.group(1), i + 3, lines[i + 2:j]))
            i = j + 1
        else:
            i += 1
    return res


def variants(body):
    """The body's lines under two preprocessor configurations: every
    #if/#ifdef/#ifndef taking its first branch, and every one taking its
    #else (or nothing). Lines are (line index, text)."""
    out = []
    for take_first in (True, False):
        stack = []  # per open #if: is the current branch live
        keep = []
        for k, ln in enumerate(body):
            s = ln.strip()
            if re.match(r"#\s*if", s):
                stack.append(take_first)
            elif re.match(r"#\s*(else|elif)", s) and stack:
                stack[-1] = not take_first if re.match(r"#\s*else", s) else False
            elif re.match(r"#\s*endif", s) and stack:
                stack.pop()
            elif not s.startswith("#") and all(stack):
                keep.append((k, ln))
        out.append(keep)
    return out


INT = r"(?<![\w.])"  # start of a number token
END = r"(?![\w.])"  # end of an integer literal (not 1.0f, 1e-3, 10, 1u)
PATTERNS = [
    ("zero-index", re.compile(r"\bconst\s+(?:size_t|int64_t|int32_t|int|long|ptrdiff_t|uint64_t)\s+\w+\s*=\s*0\s*;")),
    ("loop-1", re.compile(r"\bfor\s*\([^;]*=\s*0\s*;\s*\w+\s*<\s*1\s*;")),
    ("mul-one", re.compile(r"\*\s*1" + END + r"|" + INT + r"(?<!\))1\s*\*(?!=)")),
    ("add-zero", re.compile(r"\+\s*0" + END + r"|" + INT + r"(?<!\))0\s*\+(?![+=])")),
    ("int-cast", re.compile(r"\((?:float|double)\)\s*(?:\(\s*-?\d+\s*\)|-?\d+" + END + ")")),
]


def loop_jumps(body, k):
    """Whether the braced loop opened on line k continues or breaks itself
    (a `continue` or `break` outside the loops nested in it): such a loop
    of extent 1 is control flow, and a plain block could not say it."""
    if not body[k].rstrip().endswith("{"):
        return False
    depth, i = 0, k + 1
    while i < len(body):
        s = body[i].strip()
        if re.match(r"(for|while|do)\b", s):
            if s.endswith("{"):  # a nested braced loop: skip its block
                d, i = 1, i + 1
                while i < len(body) and d > 0:
                    d += body[i].count("{") - body[i].count("}")
                    i += 1
            else:  # its body on this line, or on the next
                i += 1 if s.endswith(";") else 2
            continue
        if re.search(r"\b(continue|break)\b", s):
            return True
        depth += s.count("{") - s.count("}")
        if depth < 0:
            return False
        i += 1
    return False


def check_function(name, first, body):
    """Findings (line number, pattern, text) in one function."""
    found = []
    for k, ln in enumerate(body):
        for pat, rx in PATTERNS:
            if rx.search(ln) and not (pat == "loop-1" and loop_jumps(body, k)):
                found.append((first + k, pat, ln.strip()))
    # (void)NAME;: used anyway (in both preprocessor variants), or a local
    # that nothing but its declaration names; counted in the innermost block
    # around the cast (kernels repeat local names in sibling blocks)
    vs = variants(body)
    for k, ln in enumerate(body):
        m = re.match(r"\s*\(void\)\s*(\w+)\s*;\s*$", ln)
        if not m:
            continue
        lo, depth = k, 0
        while lo > 0:
            lo -= 1
            depth += body[lo].count("{") - body[lo].count("}")
            if depth > 0:
                break
        hi, depth = k, 0
        while hi + 1 < len(body):
            hi += 1
            depth += body[hi].count("{") - body[hi].count("}")
            if depth < 0:
                break
        name = m.group(1)
        word = re.compile(r"\b" + re.escape(name) + r"\b")
        decl = re.compile(r"^\s*(?:const\s+)?[a-z_]\w*\s+(?:\*\s*)*(?:restrict\s+)?(?:[^;]*,\s*)?"
                          + re.escape(name) + r"\s*=[^=]")
        decls = [j for j in range(lo, hi + 1) if j != k and decl.match(body[j])]
        uses = [[j for j, t in v if lo <= j <= hi and j != k and j not in decls and word.search(t)] for v in vs]
        if all(uses):
            found.append((first + k, "void-used", ln.strip()))
        elif decls and not any(uses):
            found.append((first + k, "dead-local", ln.strip()))
    return found


def check_source(text):
    """Findings (function, line, pattern, text) of one generated .c file."""
    res = []
    for name, first, body in functions(strip_comments(text)):
        if name.startswith("rl_"):
            continue  # the shared runtime prelude
        for line, pat, src in check_function(name, first, body):
            res.append((name, line, pat, src))
    return res


# ---- models ----------------------------------------------------------------


def node_sample(stride):
    """Node tests: the first (by name) of each distinct operator-type set,
    then every stride'th of those."""
    node_dir = os.path.join(rltest.onnx_data_dir(), "node")
    seen = set()
    firsts = []
    for n in sorted(os.listdir(node_dir)):
        p = os.path.join(node_dir, n, "model.onnx")
        if not os.path.exists(p):
            continue
        try:
            m = onnx.load(p, load_external_data=False)
        except Exception:  # noqa: BLE001 - an unreadable model is not ours to judge
            continue
        key = frozenset(nd.op_type for nd in m.graph.node)
        if key in seen:
            continue
        seen.add(key)
        firsts.append((n, p))
    return firsts[::stride]


def generate(rlopt, model, mode, tmp):
    """Generate C for model in mode; the .c text, or None if it did not generate."""
    tag = re.sub(r"\W", "_", os.path.basename(os.path.dirname(model)) + "_" +
                 os.path.basename(model)) + "_" + mode
    out = os.path.join(tmp, tag + ".c")
    r = subprocess.run([rlopt, model, "-o", out, "--batch", "1"] + MODES[mode],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or not os.path.exists(out):
        return None, r.stderr.strip().splitlines()[-1:] if r.stderr else []
    with open(out) as f:
        return f.read(), []


def main():
    ap = rltest.make_parser(__doc__.splitlines()[0])
    ap.add_argument("--stride", type=int, default=2,
                    help="take every STRIDE'th node test of the distinct operator sets (default %(default)s)")
    ap.add_argument("--all", action="store_true", help="every node test, not the sample")
    ap.add_argument("--model", action="append", default=[], help="check only these models (paths)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args()
    rlopt = args.rlopt or os.path.join(args.source, "build", "rlopt")

    if args.model:
        models = [(os.path.basename(p), p) for p in args.model]
    else:
        models = [(os.path.basename(p), p) for p in sorted(glob.glob(os.path.join(args.source, "examples", "*.onnx")))]
        if args.all:
            node_dir = os.path.join(rltest.onnx_data_dir(), "node")
            models += [(n, os.path.join(node_dir, n, "model.onnx")) for n in sorted(os.listdir(node_dir))
                       if os.path.exists(os.path.join(node_dir, n, "model.onnx"))]
        else:
            models += node_sample(args.stride)

    tally = rltest.Tally()
    counts = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="rl_filler_") as tmp:
        jobs = [(name, path, mode) for name, path in models for mode in MODES]
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as ex:
            results = ex.map(lambda t: (t, generate(rlopt, t[1], t[2], tmp)), jobs)
            for (name, path, mode), (text, err) in results:
                label = f"{name}[{mode}]"
                if text is None:
                    tally.add("skip")
                    if args.verbose:
                        print(f"skip {label}: does not generate: {' '.join(err)}")
                    continue
                found = check_source(text)
                for fn, line, pat, src in found:
                    print(f"{label}:{fn}:{line}: {pat}: {src}")
                    counts[pat] += 1
                tally.add("fail" if found else "pass")
    print(f"{len(models)} models x {len(MODES)} modes; findings per pattern: " +
          (", ".join(f"{p} {counts[p]}" for p, _ in PATTERNS + [("void-used", None), ("dead-local", None)] if counts[p]) or "none"))
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
