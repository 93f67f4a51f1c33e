"""`rlopt diff` on the rewrite pairs of examples/gen_rewrites.py, and
`--factorize` checked numerically through `rlopt run`.

The pairs are generated into a temporary folder. For each one the test
checks the exit code, the JSON fields per batch (batch, flops_ratio,
bytes_ratio, time_ratio, verdict), and the ratios and verdicts against values
computed here by hand from the cost model's formula and the numbers of the
machine profile (read from hw/<name>.xml):

    one kernel: t = max(flops / peak, read / (bw_r * eff) + write / (bw_w * eff)) + launch
                    (+ fork on a multi-core CPU: these kernels all split across the cores)

fp32, contiguous, main memory, multiply-add = 2 FLOPs, each tensor once.
It also checks that each pair is an honest rewrite (onnxruntime gives the same
outputs), --fail-on-slowdown (exit 3), the same file twice (neutral, exit 0),
and the bad inputs: different inputs or outputs, a dim the batch cannot bind,
a static model at another batch (exit 2, one line naming what differs), and
usage errors (exit 1). Last, --factorize: the factorized model runs through
`rlopt run` and matches the original, and `rlopt diff` of the written
factorized model agrees with the factorize remark's predicted time ratio.

Ends with "N passed, N failed, N skipped"; exits non-zero on any failure.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402


class Failure(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Failure(msg)


def near(a, b, rel=1e-6):
    return abs(a - b) <= rel * abs(b)


# ---- the cost model, by hand -------------------------------------------------


class Machine:
    """The numbers of a hw/<name>.xml profile that the fp32 formula needs."""

    def __init__(self, source, name, launch="graph"):
        root = ET.parse(os.path.join(source, "hw", name + ".xml")).getroot()
        self.peak = {}
        for p in root.iter("peak"):
            self.peak[(p.get("precision"), p.get("unit"))] = float(p.get("flops"))
        self.cpu = root.get("kind") == "cpu"
        levels = list(root.iter("level"))
        # (capacity, read, write) per level; on a CPU a kernel's bytes come
        # from the closest cache holding its working set (ir/cost.c)
        self.levels = [(float(l.get("capacity")), float(l.get("read_bw")),
                        float(l.get("write_bw") or l.get("read_bw"))) for l in levels]
        self.eff = float(root.find("efficiency").get("contiguous"))
        # per kernel: a GPU kernel replayed from a CUDA graph (the default,
        # as the CUDA backend runs) costs the `graph` figure, an eager launch
        # (--launch eager) or a CPU call the `launch` figure
        lat = root.find("latency")
        self.launch = float(lat.get("graph") if launch == "graph" and not self.cpu and
                            lat.get("graph") else lat.get("launch"))
        # a CPU kernel split across the thread pool pays its fork/join too
        cores = int(root.get("cores") or 1)
        self.fork = float(lat.get("fork") or 0) if self.cpu and cores > 1 else 0.0
        self.fp32 = max(self.peak.get(("fp32", "vector"), 0), self.peak.get(("fp32", "matrix"), 0))

    def kernel(self, flops, rd, wr):
        _, bw_r, bw_w = self.levels[-1]
        for cap, r, w in (self.levels[:-1] if self.cpu else []):
            if rd + wr <= cap:
                bw_r, bw_w = r, w
                break
        return max(flops / self.fp32, rd / (bw_r * self.eff) + wr / (bw_w * self.eff)) \
            + self.launch + self.fork


def verdict(r):
    return "speedup" if r < 0.95 else "slowdown" if r > 1.05 else "neutral"


def tucker_hand(m, b):
    """3x3 Conv 32->32 on bx32x112x112 vs Tucker-2 8/8 (P = b*112*112)."""
    P, C, R = b * 112 * 112, 32, 8
    k0 = (2 * P * C * C * 9, 4 * (P * C + 9 * C * C), 4 * P * C)
    ks = [(2 * P * C * R, 4 * (P * C + R * C), 4 * P * R),
          (2 * P * R * R * 9, 4 * (P * R + 9 * R * R), 4 * P * R),
          (2 * P * R * C, 4 * (P * R + C * R), 4 * P * C)]
    return k0, ks


def lowrank_hand(m, b):
    """MatMul bx4096 by 4096x4096 vs rank 1024: bytes 4(d^2+2bd) -> 4(2dr+2bd+2br)."""
    d, r = 4096, 1024
    k0 = (2 * b * d * d, 4 * (b * d + d * d), 4 * b * d)
    ks = [(2 * b * d * r, 4 * (b * d + d * r), 4 * b * r),
          (2 * b * r * d, 4 * (b * r + r * d), 4 * b * d)]
    return k0, ks


def dwsep_hand(m, b):
    """3x3 Conv 256->256 on bx256x14x14 vs depthwise 3x3 + pointwise 1x1."""
    P, C = b * 14 * 14, 256
    k0 = (2 * P * C * C * 9, 4 * (P * C + 9 * C * C), 4 * P * C)
    ks = [(2 * P * C * 9, 4 * (P * C + 9 * C), 4 * P * C),
          (2 * P * C * C, 4 * (P * C + C * C), 4 * P * C)]
    return k0, ks


def hand_ratios(m, k0, ks):
    f0, b0, t0 = k0[0], k0[1] + k0[2], m.kernel(*k0)
    f1 = sum(k[0] for k in ks)
    b1 = sum(k[1] + k[2] for k in ks)
    t1 = sum(m.kernel(*k) for k in ks)
    return f1 / f0, b1 / b0, t1 / t0


# ---- running rlopt ---------------------------------------------------------


class Ctx:
    def __init__(self, args, tmp):
        self.rlopt = args.rlopt
        self.source = args.source
        self.tmp = tmp
        self.pairs = os.path.join(tmp, "pairs")

    def run(self, *argv, timeout=300):
        return rltest.run([self.rlopt, *argv], timeout)

    def diff(self, a, b, *flags):
        return self.run("diff", os.path.join(self.pairs, a), os.path.join(self.pairs, b), *flags)

    def diff_json(self, a, b, *flags, code=0):
        r = self.diff(a, b, "--format", "json", *flags)
        expect(r.returncode == code, f"exit {r.returncode}, wanted {code}: {r.describe()}")
        try:
            doc = json.loads(r.stdout)
        except ValueError as e:
            raise Failure(f"not JSON ({e}): {r.stdout[:400]}")
        for row in doc["batches"]:
            for key in ("batch", "flops_ratio", "bytes_ratio", "time_ratio", "verdict"):
                expect(key in row, f"JSON batch entry lacks '{key}': {row}")
        return doc


def one_line_error(r, code, *words):
    expect(r.returncode == code, f"exit {r.returncode}, wanted {code}: {r.describe()}")
    lines = r.stderr.strip().splitlines()
    expect(len(lines) == 1, f"stderr is {len(lines)} lines, wanted 1:\n{r.stderr}")
    for w in words:
        expect(w in lines[0], f"'{w}' not in the message: {lines[0]}")
    expect(r.stdout == "", f"output on failure: {r.stdout[:200]}")


# ---- the cases ---------------------------------------------------------------


def check_pair(c, a, b, hand, hw, batches, verdicts, launch=None):
    m = Machine(c.source, hw, launch or "graph")
    flags = ["--launch", launch] if launch else []
    doc = c.diff_json(a, b, "--hw", hw, "--batch", ",".join(map(str, batches)), *flags)
    expect(doc["machine"] == hw, f"machine {doc['machine']}")
    expect([row["batch"] for row in doc["batches"]] == batches, f"batches {doc['batches']}")
    for row, want in zip(doc["batches"], verdicts):
        fr, br, tr = hand_ratios(m, *hand(m, row["batch"]))
        got = (row["flops_ratio"], row["bytes_ratio"], row["time_ratio"])
        for name, g, h in zip(("flops", "bytes", "time"), got, (fr, br, tr)):
            expect(near(g, h), f"batch {row['batch']}: {name} ratio {g}, by hand {h}")
        expect(verdict(tr) == want, f"by hand the verdict is {verdict(tr)}, the test wants {want}")
        expect(row["verdict"] == want, f"batch {row['batch']}: verdict {row['verdict']}, wanted {want}")
        expect(row["fewer_flops_but_slower"] == (want == "slowdown" and fr < 1),
               f"fewer_flops_but_slower {row['fewer_flops_but_slower']}")
    return doc


def t_tucker_gpu(c):
    """Tucker-2: 8.5x fewer FLOPs; with eager launches a slowdown at batch 1
    on h100 (launches and intermediates), speedup at 64 once the dense Conv's
    arithmetic dominates. Replayed from a CUDA graph (1 us a kernel, the
    default) batch 1 is neutral on h100 and a small speedup on h200."""
    check_pair(c, "conv3x3_dense.onnx", "conv3x3_tucker2.onnx", tucker_hand, "h100", [1, 64],
               ["neutral", "speedup"])
    check_pair(c, "conv3x3_dense.onnx", "conv3x3_tucker2.onnx", tucker_hand, "h200", [1, 64],
               ["speedup", "speedup"])
    for hw in ("h100", "h200"):
        doc = check_pair(c, "conv3x3_dense.onnx", "conv3x3_tucker2.onnx", tucker_hand, hw, [1, 64],
                         ["slowdown", "speedup"], launch="eager")
    row = doc["batches"][0]
    kinds = sorted((n["change"], (n.get("before") or n.get("after"))["name"])
                   for n in row["changed_nodes"])
    expect(kinds == [("added", "conv_tk1"), ("added", "conv_tk2"), ("added", "conv_tk3"),
                     ("removed", "conv")], f"changed nodes {kinds}")


def t_tucker_cpu(c):
    """On the CPU profile the dense Conv is compute-bound: a speedup at batch 1."""
    doc = check_pair(c, "conv3x3_dense.onnx", "conv3x3_tucker2.onnx", tucker_hand, "generic-cpu",
                     [1], ["speedup"])
    expect(doc["batches"][0]["before"]["limit"] == "compute", f"{doc['batches'][0]['before']}")


def t_lowrank(c):
    """Rank d/4: batch 1 memory-bound speedup (bytes halve); batch 1024
    compute-bound speedup (FLOPs halve, bytes x0.75)."""
    doc = check_pair(c, "matmul_dense.onnx", "matmul_lowrank.onnx", lowrank_hand, "h100",
                     [1, 1024], ["speedup", "speedup"])
    b1, b1024 = doc["batches"]
    expect(b1["before"]["limit"] == "memory", f"batch 1 limit {b1['before']}")
    expect(b1024["before"]["limit"] == "compute" and b1024["after"]["limit"] == "compute",
           f"batch 1024 limits {b1024['before']} {b1024['after']}")
    expect(abs(b1024["time_ratio"] - b1024["flops_ratio"]) < 0.02,
           f"batch 1024 time ratio {b1024['time_ratio']} is not the FLOPs ratio")
    check_pair(c, "matmul_dense.onnx", "matmul_lowrank.onnx", lowrank_hand, "generic-cpu", [1],
               ["speedup"])


def t_dwsep(c):
    """Depthwise-separable at batch 1 on a GPU: 8.7x fewer FLOPs, slower with
    eager launches (the extra launch costs more than the arithmetic saved);
    replayed from a CUDA graph the extra kernel costs 1 us and it is faster."""
    doc = check_pair(c, "conv_dense256.onnx", "conv_dwsep256.onnx", dwsep_hand, "h100", [1],
                     ["slowdown"], launch="eager")
    expect(doc["batches"][0]["fewer_flops_but_slower"], "not flagged fewer FLOPs, but slower")
    check_pair(c, "conv_dense256.onnx", "conv_dwsep256.onnx", dwsep_hand, "h100", [1],
               ["speedup"], launch="graph")


def t_text(c):
    r = c.diff("conv3x3_dense.onnx", "conv3x3_tucker2.onnx", "--hw", "h100", "--batch", "1,64",
               "--launch", "eager")
    expect(r.returncode == 0, r.describe())
    for s in ("batch 1: slowdown", "fewer FLOPs, but slower", "batch 64: speedup", "- conv ",
              "+ conv_tk2", "limit latency -> latency",
              "verdict: batch 1 slowdown"):
        expect(s in r.stdout, f"'{s}' not in the text report:\n{r.stdout}")


def t_fail_on_slowdown(c):
    r = c.diff("conv3x3_dense.onnx", "conv3x3_tucker2.onnx", "--hw", "h100", "--batch", "1,64",
               "--launch", "eager", "--fail-on-slowdown")
    expect(r.returncode == 3, f"exit {r.returncode}, wanted 3: {r.describe()}")
    expect("batch 1: slowdown" in r.stdout, "the report is still printed")
    r = c.diff("conv3x3_dense.onnx", "conv3x3_tucker2.onnx", "--hw", "h100", "--batch", "64",
               "--fail-on-slowdown")
    expect(r.returncode == 0, f"speedup only: exit {r.returncode}: {r.describe()}")
    c.diff_json("conv_dense256.onnx", "conv_dwsep256.onnx", "--hw", "h100", "--batch", "1",
                "--launch", "eager", "--fail-on-slowdown", code=3)


def t_same_file(c):
    for f in ("conv3x3_dense.onnx", "conv_dwsep256.onnx"):
        doc = c.diff_json(f, f, "--hw", "h100", "--fail-on-slowdown")
        expect([r["batch"] for r in doc["batches"]] == [1, 64, 1024], "default batches 1,64,1024")
        for row in doc["batches"]:
            expect(row["verdict"] == "neutral", f"verdict {row['verdict']}")
            expect(row["flops_ratio"] == 1 and row["bytes_ratio"] == 1 and row["time_ratio"] == 1,
                   f"ratios {row}")
            expect(row["changed_nodes"] == [], f"changed nodes {row['changed_nodes']}")
        expect(doc["slowdown"] is False, "slowdown flag")


def write_model(path, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(m, path)
    return path


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def relu(path, xname="x", xshape=("batch", 8), yname="y", yshape=("batch", 8)):
    return write_model(path, [helper.make_node("Relu", [xname], [yname], name="r")],
                       [vi(xname, list(xshape))], [vi(yname, list(yshape))])


def t_bad_inputs(c):
    d = os.path.join(c.tmp, "bad")
    os.makedirs(d, exist_ok=True)
    base = relu(os.path.join(d, "base.onnx"))
    other_in = relu(os.path.join(d, "in.onnx"), xname="x2")
    other_shape = relu(os.path.join(d, "shape.onnx"), xshape=("batch", 9), yshape=("batch", 9))
    other_out = relu(os.path.join(d, "out.onnx"), yname="z")
    seq = relu(os.path.join(d, "seq.onnx"), xshape=("batch", "seq"), yshape=("batch", "seq"))
    static = relu(os.path.join(d, "static.onnx"), xshape=(1, 8), yshape=(1, 8))
    run = lambda *a: c.run("diff", *a, "--hw", "h100")  # noqa: E731
    one_line_error(run(base, other_in), 2, "input 'x'", "input 'x2'", "only in")
    one_line_error(run(base, other_shape), 2, "input 'x'", "batchx8", "batchx9")
    one_line_error(run(base, other_out), 2, "output 'y'", "output 'z'")
    one_line_error(run(seq, seq, "--batch", "4"), 2, "seq")
    one_line_error(run(static, static, "--batch", "64"), 2, "64", "'x'")
    r = run(static, static, "--batch", "1", "--format", "json")
    expect(r.returncode == 0, r.describe())
    r = run(static, static, "--format", "json")
    expect(r.returncode == 0 and json.loads(r.stdout)["batches"][0]["batch"] == 1, r.describe())
    one_line_error(run(base, os.path.join(d, "missing.onnx")), 2, "missing.onnx")
    r = run(base)
    expect(r.returncode == 1, f"one model: exit {r.returncode}")
    r = run(base, base, "--format", "xml")
    expect(r.returncode == 1, f"--format xml: exit {r.returncode}")
    r = run(base, base, "--bogus")
    expect(r.returncode == 1, f"--bogus: exit {r.returncode}")


def t_pairs_are_exact(c):
    """Each pair computes the same function (onnxruntime, batch 2)."""
    import onnxruntime as ort
    rng = np.random.default_rng(7)
    for a, b, shape in (("conv3x3_dense.onnx", "conv3x3_tucker2.onnx", (2, 32, 112, 112)),
                        ("matmul_dense.onnx", "matmul_lowrank.onnx", (2, 4096)),
                        ("conv_dense256.onnx", "conv_dwsep256.onnx", (2, 256, 14, 14))):
        x = rng.standard_normal(shape).astype(np.float32)
        ya = ort.InferenceSession(os.path.join(c.pairs, a)).run(None, {"x": x})[0]
        yb = ort.InferenceSession(os.path.join(c.pairs, b)).run(None, {"x": x})[0]
        err = np.linalg.norm(ya - yb) / np.linalg.norm(ya)
        expect(err < 1e-4, f"{a} vs {b}: relative error {err}")


def remark_ratio(stderr, verdict_word):
    m = re.search(r"remark: factorize: \S+: " + verdict_word + r": (\S+ r=\S+): .*time x([0-9.e+-]+)",
                  stderr)
    return m


def t_factorize_run(c):
    """--factorize through rlopt run matches the original; the written model
    diffs to the ratio the remark predicted."""
    d = os.path.join(c.tmp, "fact")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(11)
    # a 512x512 weight of exact rank 64 and the Tucker-2 pair's dense Conv
    u = rng.standard_normal((512, 64)).astype(np.float32) / 8
    v = rng.standard_normal((64, 512)).astype(np.float32) / 8
    mm = write_model(os.path.join(d, "mm.onnx"),
                     [helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")],
                     [vi("x", ["batch", 512])], [vi("y", ["batch", 512])],
                     [numpy_helper.from_array(u @ v, "w")])
    # a Gemm with B transposed, alpha, beta and a bias C
    gm = write_model(os.path.join(d, "gemm.onnx"),
                     [helper.make_node("Gemm", ["x", "b", "c"], ["y"], name="fc", transB=1,
                                       alpha=0.5, beta=2.0)],
                     [vi("x", ["batch", 512])], [vi("y", ["batch", 512])],
                     [numpy_helper.from_array(np.ascontiguousarray((u @ v).T), "b"),
                      numpy_helper.from_array(rng.standard_normal(512).astype(np.float32), "c")])
    # a 1x1 Conv 64->64 with a rank-8 weight and a bias
    cu = rng.standard_normal((64, 8)).astype(np.float32)
    cv = rng.standard_normal((8, 64)).astype(np.float32)
    c11 = write_model(os.path.join(d, "conv1x1.onnx"),
                      [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="pw")],
                      [vi("x", ["batch", 64, 56, 56])], [vi("y", ["batch", 64, 56, 56])],
                      [numpy_helper.from_array((cu @ cv).reshape(64, 64, 1, 1), "w"),
                       numpy_helper.from_array(rng.standard_normal(64).astype(np.float32), "b")])
    conv = os.path.join(c.pairs, "conv3x3_dense.onnx")
    for model, shape, want in ((mm, (1, 512), "lowrank r=64"),
                               (gm, (1, 512), "lowrank r=64"),
                               (c11, (1, 64, 56, 56), "lowrank r=8"),
                               (conv, (1, 32, 112, 112), "tucker2 r=8/8")):
        x = rng.standard_normal(shape).astype(np.float32)
        inp = os.path.join(d, "in.pb")
        rltest.write_pb(inp, x, "x")
        o0, o1 = os.path.join(d, "o0"), os.path.join(d, "o1")
        for o in (o0, o1):
            shutil.rmtree(o, ignore_errors=True)
        r = c.run("run", model, "-i", inp, "-d", o0, "-O0")
        expect(r.returncode == 0, f"run -O0: {r.describe()}")
        r = c.run("run", model, "-i", inp, "-d", o1, "--factorize", "--hw", "generic-cpu",
                  "--remarks")
        expect(r.returncode == 0, f"run --factorize: {r.describe()}")
        m = remark_ratio(r.stderr, "applied")
        expect(m and m.group(1) == want, f"no 'applied: {want}' remark:\n{r.stderr[-2000:]}")
        predicted = float(m.group(2))
        y0 = rltest.read_pb(os.path.join(o0, "output_0.pb"))[1]
        y1 = rltest.read_pb(os.path.join(o1, "output_0.pb"))[1]
        ok, msg, _, _ = rltest.compare(y1, y0, rtol=1e-3, atol=1e-4)
        expect(ok, f"{os.path.basename(model)}: factorized output differs: {msg}")
        # the factorized model written out (bound at batch 1, as is the
        # original written with -O0), judged by diff: the same ratio
        out, orig = os.path.join(d, "f.onnx"), os.path.join(d, "orig.onnx")
        r = c.run(model, "-o", out, "--factorize", "--hw", "generic-cpu", "--batch", "1")
        expect(r.returncode == 0, f"write --factorize: {r.describe()}")
        r = c.run(model, "-o", orig, "-O0", "--batch", "1")
        expect(r.returncode == 0, f"write -O0: {r.describe()}")
        r = c.run("diff", orig, out, "--hw", "generic-cpu", "--format", "json")
        expect(r.returncode == 0, f"diff: {r.describe()}")
        row = json.loads(r.stdout)["batches"][0]
        expect(row["verdict"] == "speedup", f"diff verdict {row['verdict']}")
        expect(near(row["time_ratio"], predicted, 5e-3),
               f"diff time ratio {row['time_ratio']} vs predicted {predicted}")
    # h100 at batch 1: the same 512x512 product is launch-bound; not applied
    r = c.run(mm, "-o", os.path.join(d, "g.onnx"), "--factorize", "--hw", "h100", "--batch", "1",
              "--remarks")
    expect(r.returncode == 0, r.describe())
    expect(remark_ratio(r.stderr, "rejected") and "under 10%" in r.stderr,
           f"not rejected on h100:\n{r.stderr[-1500:]}")


TESTS = [t_tucker_gpu, t_tucker_cpu, t_lowrank, t_dwsep, t_text, t_fail_on_slowdown, t_same_file,
         t_bad_inputs, t_pairs_are_exact, t_factorize_run]


def main():
    ap = rltest.make_parser(__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    tally = rltest.Tally()
    if not args.rlopt or not os.path.exists(args.rlopt):
        print(f"rlopt not found: {args.rlopt}")
        tally.add("fail")
        return tally.finish()
    tmp = tempfile.mkdtemp(prefix="rlopt-diff-")
    try:
        gen = os.path.join(args.source, "examples", "gen_rewrites.py")
        p = subprocess.run([sys.executable, gen, "--out", os.path.join(tmp, "pairs"),
                            "--only", "tucker,lowrank,dwsep"],
                           capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            print(f"FAIL gen_rewrites.py: {p.stderr.strip()}")
            tally.add("fail")
            return tally.finish()
        c = Ctx(args, tmp)
        for t in TESTS:
            try:
                t(c)
                tally.add("pass")
                if args.verbose:
                    print(f"pass {t.__name__}")
            except Failure as e:
                tally.add("fail")
                print(f"FAIL {t.__name__}: {e}")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
