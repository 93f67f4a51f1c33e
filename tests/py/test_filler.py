#!/usr/bin/env python3
"""No filler in the generated C: the kernels say what they compute, nothing more.

Generates C for the example models (examples/*.onnx) and a deterministic
sample of the onnx node-test models (one model per distinct set of operator
types, sorted by test name, every --stride'th of those), each at -O2, -O0
and -O2 --static (the examples also at -O2 with --quantize int8 and int4,
where the rl_q* runtime appears), and reads every function the file
defines: kernels, their _range/_task wrappers, init/run and the shared
runtime prelude (rl_*: thread pool, vector math, GEMM and conv micro-kernels,
quantized products, low-precision helpers). A finding is, per function:

  void-used    `(void)NAME;` while NAME is used in its block anyway
               (in every preprocessor variant: the #if branches and the
               #else branches are checked separately, so a parameter used
               only under RL_VEC keeps its cast);
  zero-index   `const <int type> NAME = 0;`: an index bound to zero that is
               then only added or multiplied (a batch loop of extent 1
               should vanish, not leave its index behind);
  loop-1       `for (... = 0; NAME < 1; ...)` or `for (... = 0; NAME < S;
               NAME += S)`: a loop of one iteration (unless
               its body continues or breaks it before any inner loop: there
               the loop is the control flow);
  mul-one      a multiplication by the integer literal 1 (`x * 1`, `1 * x`);
  add-zero     an addition of the integer literal 0 (`x + 0`, `0 + x`);
  int-cast     `(float)(0)`, `(double)1`, ...: an integer literal cast to a
               floating type where a float literal (0.0f) says it;
  dead-local   `(void)NAME;` for a local that nothing but its declaration
               names (the declaration is a dead line);
  float-cast   `(float)(ev1)`, `(float)c[j]`, `(float)(s / 256.0f)`: a cast to
               float (double) of an operand that is one already (names and
               array elements of that type by the function's declarations,
               literals, + - * /);
  int-float    `row[q] = 0;`, `float d = 0;`: an integer literal assigned to
               a float or double (0.0f says it);
  nested-block `for (...) { { ... } }`, `{ {`: a block whose only statement
               is another block.

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
# the examples also with quantized weights: the rl_q* runtime (int8 and int4
# blocks, the VNNI and portable paths) appears only there
QUANT_MODES = {"int8": ["-O2", "--quantize", "int8"], "int4": ["-O2", "--quantize", "int4"]}
ALL_MODES = {**MODES, **QUANT_MODES}

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
    """(name, first body line number, body lines, header text) of each
    function defined at file scope: a header at column 0 (one line, or a few
    when its parameters wrap) followed by a line `{`, the body ending at the
    next line `}` at column 0."""
    lines = text.split("\n")
    res = []
    i = 0
    while i + 1 < len(lines):
        head = lines[i]
        if head and head[0] not in " \t#{}" and "(" in head and "=" not in head.split("(")[0]:
            e = i  # the header's last line: up to 4 continuation lines
            while (e < len(lines) and e - i < 5 and lines[e] != "{" and not lines[e].rstrip().endswith(";")
                   and (e == i or lines[e][:1] in " \t")):
                e += 1
            if e < len(lines) and e > i and lines[e] == "{":
                header = " ".join(ln.strip() for ln in lines[i:e])
                m = re.search(r"(\w+)\s*\(", drop_attributes(header))
                j = e + 1
                while j < len(lines) and lines[j] != "}":
                    j += 1
                if m:
                    res.append((m.group(1), e + 2, lines[e + 1:j], header))
                i = j + 1
                continue
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
    ("loop-1", re.compile(r"\bfor\s*\([^;]*=\s*0\s*;\s*\w+\s*<\s*1\s*;"
                          r"|\bfor\s*\([^;]*=\s*0\s*;\s*(\w+)\s*<\s*(\d+)\s*;\s*\1\s*\+=\s*\2\s*\)")),
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


# ---- the floating-point residue: types of names, casts, literals, blocks ----

TYPE_WORDS = {"const", "static", "register", "volatile", "restrict", "unsigned", "signed", "struct"}


def split_top(s, sep=","):
    """s split at the separators outside (), [] and {}."""
    out, depth, cur = [], 0, []
    for c in s:
        depth += c in "([{"
        depth -= c in ")]}"
        if c == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    out.append("".join(cur))
    return out


def declarators(decl):
    """(type word, [(name, stars or brackets?, initializer or None)]) of one
    declaration `const float a = 1.0f, *b, c[4]`, or None if it is none."""
    m = re.match(r"\s*((?:(?:const|static|register|volatile|unsigned|signed)\s+)*)([A-Za-z_]\w*)\b(.*)$", decl, re.S)
    if not m or m.group(2) in TYPE_WORDS or m.group(2) in ("return", "goto", "case", "else", "do", "sizeof"):
        return None
    res = []
    for d in split_top(m.group(3)):
        dm = re.match(r"\s*((?:\*\s*(?:const\s+|restrict\s+)*)*)([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*)(?:=\s*(.*?))?\s*$", d, re.S)
        if not dm:
            return None
        res.append((dm.group(2), bool(dm.group(1) or dm.group(3)), dm.group(4)))
    return m.group(2), res


def statement_tail(piece):
    """The last statement's text in piece (a line cut at `;`): after the
    last block brace, an initializer's braces (`= {0}`) kept."""
    start, init = 0, 0
    for i, c in enumerate(piece):
        if c == "{":
            prev = piece[:i].rstrip()[-1:]
            if init or prev in ("=", ","):
                init += 1
            else:
                start = i + 1
        elif c == "}":
            if init:
                init -= 1
            else:
                start = i + 1
    return piece[start:]


def float_names(header, body):
    """Names of the function's float scalars ({name: 'float'|'double'}) and of
    its pointers to and arrays of them ({name: type}); a name declared with
    two types anywhere in the function is in neither (its sibling blocks
    disagree)."""
    kinds = collections.defaultdict(set)  # name -> {(type, indirect)}
    params = header[header.find("(") + 1:header.rfind(")")] if "(" in header else ""
    stmts = split_top(params) + [statement_tail(t) for ln in body if not ln.strip().startswith("#")
                                 for t in ln.split(";")]
    for st in stmts:
        st = re.sub(r"^\s*for\s*\(", "", st)
        dc = declarators(st)
        if not dc:
            continue
        typ, ds = dc
        for name, ind, _init in ds:
            kinds[name].add((typ, ind))
    scal = {n: next(iter(k))[0] for n, k in kinds.items() if len(k) == 1 and next(iter(k)) in (("float", False), ("double", False))}
    elem = {n: next(iter(k))[0] for n, k in kinds.items() if len(k) == 1 and next(iter(k)) in (("float", True), ("double", True))}
    return scal, elem


FLIT = re.compile(r"(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][+-]?\d+)?[fF]?$")


def floating_expr(e, typ, scal, elem):
    """Whether e (a cast's operand) is already of type typ: names of that type,
    elements of its arrays, literals of that type, + - * / and parentheses."""
    e = e.strip()
    i, n = 0, len(e)
    seen = False
    while i < n:
        c = e[i]
        if c.isspace() or c in "+-*/()":
            i += 1
            continue
        m = re.match(r"[A-Za-z_]\w*", e[i:])
        if m:
            w = m.group(0)
            j = i + len(w)
            while j < n and e[j] == " ":
                j += 1
            if j < n and e[j] == "[":  # an element: skip its subscript
                if elem.get(w) != typ:
                    return False
                depth = 0
                while j < n:
                    depth += e[j] == "["
                    depth -= e[j] == "]"
                    j += 1
                    if depth == 0:
                        break
            elif scal.get(w) != typ:
                return False
            i, seen = j, True
            continue
        m = re.match(r"[\d.][\w.]*(?:[eE][+-]\d+[fF]?)?", e[i:])
        if m:
            lit = m.group(0)
            if not FLIT.match(lit) or (typ == "float") != lit.lower().endswith("f"):
                return False
            i, seen = i + len(lit), True
            continue
        return False
    return seen


def float_residue(header, body, first):
    """Findings (line, pattern, text):
      float-cast  `(float)(ev1)`, `(float)(s / 256.0f)`: a cast to float (or
                  double) of an operand of that type already;
      int-float   `row[q] = 0;`, `float d = 0;`: an integer literal assigned
                  to a float (a float literal, 0.0f, says it);
      nested-block  `{ {`: a block whose only statement is another block
                  (where two unit loops stood)."""
    found = []
    scal, elem = float_names(header, body)
    for k, ln in enumerate(body):
        if ln.strip().startswith("#"):
            continue
        for m in re.finditer(r"\((float|double)\)\s*", ln):
            rest = ln[m.end():]
            if rest.startswith("("):
                depth = 0
                for e, c in enumerate(rest):
                    depth += c == "("
                    depth -= c == ")"
                    if depth == 0:
                        break
                operand = rest[1:e]
            else:
                om = re.match(r"[A-Za-z_]\w*(?:\s*\[[^\]]*\])?", rest)
                operand = om.group(0) if om else ""
            if operand and floating_expr(operand, m.group(1), scal, elem):
                found.append((first + k, "float-cast", ln.strip()))
                break
        intlit = r"-?(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*"
        for m in re.finditer(r"(?<![\w.>])([A-Za-z_]\w*)\s*(\[[^\]=]*\])?\s*=\s*(" + intlit + r")\s*(?=[;,)])", ln):
            name, sub = m.group(1), m.group(2)
            if (sub and name in elem) or (not sub and name in scal):
                found.append((first + k, "int-float", ln.strip()))
                break
    # nested-block: scan the body's braces, telling blocks from initializers
    text = "\n".join("" if ln.strip().startswith("#") else ln for ln in body)
    line_of = [0] * (len(text) + 1)
    ln_no = 0
    for i, c in enumerate(text):
        line_of[i] = ln_no
        ln_no += c == "\n"
    stack = []  # (position, is a block)
    blocks = {}  # position of a block's { -> position of its }
    for i, c in enumerate(text):
        if c == "{":
            j = i - 1
            while j >= 0 and text[j].isspace():
                j -= 1
            prev = text[j] if j >= 0 else ";"
            block = (not stack or stack[-1][1]) and (
                prev in ";{}" or re.search(r"\b(else|do)$", text[:j + 1]) is not None)
            if prev == ")" and (not stack or stack[-1][1]):
                depth, p = 0, j
                while p >= 0:
                    depth += text[p] == ")"
                    depth -= text[p] == "("
                    if depth == 0:
                        break
                    p -= 1
                block = re.search(r"\b(if|for|while|switch)\s*$", text[:p]) is not None
            stack.append((i, block))
        elif c == "}" and stack:
            o, block = stack.pop()
            if block:
                blocks[o] = i
    for o, cl in blocks.items():
        a = o + 1
        while a < cl and text[a].isspace():
            a += 1
        if a in blocks:
            b = blocks[a] + 1
            while b < cl and text[b].isspace():
                b += 1
            if b == cl:
                found.append((first + line_of[o], "nested-block", body[line_of[o]].strip()))
    return found


def check_function(name, first, body, header=""):
    """Findings (line number, pattern, text) in one function."""
    found = float_residue(header, body, first)
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
        decl = re.compile(r"^\s*(?:const\s+)?[a-z_]\w*\s+(?:\*\s*)*(?:restrict\s+)?(?:[^;]*,\s*(?:\*\s*)*)?"
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
    for name, first, body, header in functions(strip_comments(text)):
        for line, pat, src in check_function(name, first, body, header):
            res.append((name, line, pat, src))
    return res


# one instance of every pattern, and lines that look alike but are none: the
# checker must find exactly the former (run first, so a checker that finds
# nothing cannot pass the test)
SELF_CHECK = """\
static void rl_probe(const float *restrict a, float *restrict y, int64_t n,
                     double g)
{
    const size_t o = 0;
    float s = 0, t[4] = {0}, u = 1.5f;
    double h = 2;
    for (size_t r = 0; r < 1; r++)
        y[r * 1] = a[r + 0] + (float)(0);
    for (size_t q = 0; q < 4; q += 4)
        y[q] = a[q];
    for (size_t p = 0; p < 8; p += 4)
        y[p] = a[p];
    for (int64_t i = 0; i < n; i++) {
        {
            y[i] = (float)(u * a[i]) + (float)(int8_t)a[i] + (float)g;
        }
    }
    t[1] = 0;
    t[2] = 0.0f;
    s = (float)h;
    (void)n;
    int dead = 3;
    (void)dead;
    y[0] = s + u + t[0] + (float)o;
}
"""
SELF_EXPECT = {"zero-index": 1, "loop-1": 2, "mul-one": 1, "add-zero": 1, "int-cast": 1,
               "void-used": 1, "dead-local": 1, "float-cast": 1, "int-float": 3,
               "nested-block": 1}


def self_check():
    """Whether check_source finds SELF_EXPECT in SELF_CHECK; prints what differs."""
    got = collections.Counter(pat for _fn, _line, pat, _src in check_source(SELF_CHECK))
    if got == collections.Counter(SELF_EXPECT):
        return True
    print(f"checker self-check: expected {dict(sorted(SELF_EXPECT.items()))}, found {dict(sorted(got.items()))}")
    return False


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
    r = subprocess.run([rlopt, model, "-o", out, "--batch", "1"] + ALL_MODES[mode],
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
    tally.add("pass" if self_check() else "fail")
    with tempfile.TemporaryDirectory(prefix="rl_filler_") as tmp:
        jobs = [(name, path, mode) for name, path in models for mode in MODES]
        jobs += [(name, path, mode) for name, path in models if os.path.dirname(path) ==
                 os.path.join(args.source, "examples") for mode in QUANT_MODES]
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
    names = [p for p, _ in PATTERNS] + ["void-used", "dead-local", "float-cast", "int-float", "nested-block"]
    print(f"{len(models)} models x {len(MODES)} modes (+ examples x {len(QUANT_MODES)} quantized); "
          "findings per pattern: " + (", ".join(f"{p} {counts[p]}" for p in names if counts[p]) or "none"))
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
