"""The generated C as a user meets it, and `rlopt run`'s failure modes.

- Determinism: the same model and options give byte-identical .c and .h.
- The examples' generated code compiles with gcc and clang under
  -std=c11 -Wall -Wextra -Werror -O2.
- Side-file weights (--weights-max 0): NAME.weights is written, the program
  reads it at init, and the outputs equal the embedded build's bit for bit.
- examples/run_mlp.c links the generated MLP and runs.
- Unbound symbolic dims: a clear error naming the dim and the flag; --batch
  binds them.
- `rlopt run` bad input: an input .pb of the wrong dtype or shape, a missing
  input, a compiler that is not found or fails (its error is shown), a
  program that crashes or hangs (reported, time-limited); no outputs left.
- Threads: bit-identical outputs at 1, 2 and 3 threads; --cc/--cflags reach
  the compiler without a shell.
- Constants made by nodes (ConstantOfShape, Range, Expand over 65536
  elements, which fold.c leaves): computed once in NAME_init, not per run;
  the conv reading them packs (or Winograd-transforms) its weights at init;
  outputs equal onnxruntime's.
- Portability: tcc (the scalar path) and aarch64 under qemu-user (generic
  vectors, no x86 dispatch) match the gcc build.
"""

import filecmp
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402


def cst_model(tmp, check, rl):
    """rltest.const_made_model(): where the generated C computes the
    constants, and the outputs against onnxruntime (test_static.py runs the
    same model in static mode)."""
    import onnxruntime as ort
    d = os.path.join(tmp, "cst")
    os.makedirs(d)
    mp = os.path.join(d, "cst.onnx")
    onnx.save(rltest.const_made_model(), mp)
    x = np.random.default_rng(11).standard_normal((1, 64, 14, 14)).astype(np.float32)
    xin = os.path.join(d, "x.pb")
    rltest.write_pb(xin, x, "x")
    ref = ort.InferenceSession(mp, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    r = rltest.run([rl, mp, "-o", os.path.join(d, "cst.c")], timeout=120)
    if not r.ok:
        check("rlopt on constants made by nodes", False, r.describe())
        return
    with open(os.path.join(d, "cst.c")) as f:
        src = f.read()
    init = src[src.index("int cst_init("):src.index("void cst_free(")]
    run = src[src.index("int cst_run_v("):]
    run = run[:run.index("\n}\n")]
    made = [k for k in ("ConstantOfShape", "Range", "Expand") if k in init]
    check("constant-making nodes run once in NAME_init, not in the run",
          made == ["ConstantOfShape", "Range", "Expand"] and "ConstantOfShape" not in run
          and "Range" not in run and "_cst +" in run, f"in init: {made}")
    # the 3x3 64->128 on 14x14 takes the Winograd form (its weights
    # transformed at init, each 3x3 read through `g`); a Conv in another form
    # packs them into _wp
    packs = [ln for ln in init.splitlines()
             if ("_wp[" in ln and " = " in ln) or "const float *g = " in ln]
    check("the conv reading them packs its weights at init, from what NAME_init computed",
          ("weights packed at init" in src or "Winograd-transformed at init" in src)
          and any("_cst + " in ln for ln in packs), str(packs))
    od = os.path.join(d, "out")
    r = rltest.run([rl, "run", mp, "-i", xin, "-d", od], timeout=300)
    if not r.ok:
        check("rlopt run, constants made by nodes", False, r.describe())
        return
    for k in (0, 1):
        ok, why, _, _ = rltest.compare(rltest.read_pb(os.path.join(od, f"output_{k}.pb"))[1], ref[k],
                                       rtol=1e-4, atol=1e-5)
        check(f"rlopt run: output {k} of constants made by nodes matches onnxruntime", ok, why)


def transpose_model(tmp, check, rl):
    """The transposes of attention heads, big enough to be split across
    threads (emit_shape.c emit_transpose: 2 x 32768 elements or more): the
    head split (0, 2, 1, 3), K's (0, 2, 3, 1) and one that moves the inner
    axis outermost, the last two in tiles of 16 x 16 (emit_tiled_copy, with
    part tiles); and a small one, 4x16x12 -> 4x12x16, whose tile dims hold
    one tile each (no loop over them: e26a5c1 closed a brace too few there).
    Each output equals numpy's transpose bit for bit at 1, 2 and 3 threads."""
    from onnx import TensorProto, helper
    d = os.path.join(tmp, "transpose")
    os.makedirs(d)
    perms = {"a": ("x", [0, 2, 1, 3]), "b": ("x", [0, 2, 3, 1]), "c": ("x", [3, 1, 0, 2]),
             "e": ("x2", [0, 2, 1])}
    shp = {"x": [2, 96, 12, 72], "x2": [4, 16, 12]}  # 72: a part tile of 8
    outs = {k: [shp[x][i] for i in p] for k, (x, p) in perms.items()}
    g = helper.make_graph(
        [helper.make_node("Transpose", [x], [k], perm=p) for k, (x, p) in perms.items()],
        "transpose", [helper.make_tensor_value_info(x, TensorProto.FLOAT, v) for x, v in shp.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, o) for k, o in outs.items()])
    mp = os.path.join(d, "transpose.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), mp)
    rng = np.random.default_rng(9)
    xs = {x: rng.standard_normal(v).astype(np.float32) for x, v in shp.items()}
    feeds = []
    for x, v in xs.items():
        pb = os.path.join(d, f"{x}.pb")
        rltest.write_pb(pb, v, x)
        feeds += ["-i", pb]
    c = os.path.join(d, "transpose.c")
    r = rltest.run([rl, mp, "-o", c], timeout=120)
    check("transposes: rlopt", r.ok, r.describe())
    if r.ok:
        src = open(c).read()
        check("transposes: three split across threads (range kernels), three in tiles",
              src.count("Transpose): X0") == 4 and src.count("_range(const float") >= 3
              and src.count("tiles of 16 x 16") == 3)
    for nt in (1, 2, 3):
        od = os.path.join(d, f"out{nt}")
        r = rltest.run([rl, "run", mp, "--threads", str(nt), "-d", od] + feeds, timeout=300)
        check(f"transposes: rlopt run --threads {nt}", r.ok, r.describe())
        if not r.ok:
            continue
        for k, (name, (x, p)) in enumerate(perms.items()):
            got = rltest.read_pb(os.path.join(od, f"output_{k}.pb"))[1]
            check(f"transposes: {x} perm {p} at {nt} threads equals numpy's",
                  np.array_equal(got, xs[x].transpose(p)))


def column_conv_model(tmp, check, rl):
    """A 1-D convolution written as N x C x L x 1 (jax2tf, Keras) after a
    Mul(x, x), then a nearest 2x Resize: the Conv runs as the 1-D Conv over
    the same memory (rows of L, not of 1: emit_conv.c), the Mul's kernel
    reads its one input once and the Resize copies (emit_image.c; an unused
    load and unused tap counts were -Wunused-variable warnings). The C
    compiles warning-free under gcc and clang and matches onnxruntime at -O2
    and -O0."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    d = os.path.join(tmp, "colconv")
    os.makedirs(d)
    rng = np.random.default_rng(5)
    w = numpy_helper.from_array(rng.standard_normal((96, 64, 5, 1)).astype(np.float32) * 0.1, "w")
    b = numpy_helper.from_array(rng.standard_normal(96).astype(np.float32), "b")
    sc = numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "sc")
    g = helper.make_graph(
        [helper.make_node("Mul", ["x", "x"], ["sq"]),
         helper.make_node("Conv", ["sq", "w", "b"], ["c"], kernel_shape=[5, 1]),
         helper.make_node("Resize", ["c", "", "sc"], ["y"], mode="nearest")], "colconv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 100, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 96, 192, 2])], [w, b, sc])
    mp = os.path.join(d, "colconv.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), mp)
    x = rng.standard_normal((1, 64, 100, 1)).astype(np.float32)
    xin = os.path.join(d, "x.pb")
    rltest.write_pb(xin, x, "x")
    ref = ort.InferenceSession(mp, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for opt in ("-O2", "-O0"):
        c = os.path.join(d, f"colconv{opt[1:]}.c")
        r = rltest.run([rl, mp, opt, "-o", c], timeout=120)
        check(f"column conv {opt}: rlopt", r.ok, r.describe())
        if not r.ok:
            continue
        for cc in ("gcc", "clang"):
            if not shutil.which(cc):
                t_skip = f"{cc} not installed"
                print(f"  skip: column conv {opt}: {t_skip}")
                continue
            r = rltest.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-c", c, "-o",
                            c[:-2] + ".o"], timeout=300)
            check(f"column conv {opt}: {cc} -Wall -Wextra -Werror compiles", r.ok, r.describe())
        od = os.path.join(d, "out" + opt)
        r = rltest.run([rl, "run", mp, opt, "-i", xin, "-d", od], timeout=300)
        check(f"column conv {opt}: rlopt run", r.ok, r.describe())
        if r.ok:
            ok, why, _, _ = rltest.compare(rltest.read_pb(os.path.join(od, "output_0.pb"))[1], ref,
                                           rtol=1e-4, atol=1e-4)
            check(f"column conv {opt}: matches onnxruntime", ok, why)


def main():
    ap = rltest.make_parser(__doc__)
    args = ap.parse_args()
    rl, src = args.rlopt, args.source
    t = rltest.Tally()
    tmp = tempfile.mkdtemp(prefix="rlopt-cg-")

    def check(name, ok, detail=""):
        t.add("pass" if ok else "fail")
        print(f"  {'pass' if ok else 'FAIL'}: {name}" + (f": {detail}" if detail and not ok else ""))

    try:
        models = os.path.join(tmp, "models")
        r = rltest.run([sys.executable, "-B", os.path.join(src, "examples", "gen_models.py"),
                        "--out", models, "--no-check"], timeout=300)
        if not r.ok:
            check("generate example models", False, r.describe())
            sys.exit(t.finish())

        # determinism, and warning-free with both compilers
        for m in ("gpt_block", "mlp", "resnet_small"):
            outs = []
            for k in (1, 2):
                d = os.path.join(tmp, f"{m}_{k}")
                os.makedirs(d)
                r = rltest.run([rl, os.path.join(models, m + ".onnx"), "-o", os.path.join(d, m + ".c")],
                               timeout=120)
                outs.append(d)
            same = all(filecmp.cmp(os.path.join(outs[0], m + e), os.path.join(outs[1], m + e), shallow=False)
                       for e in (".c", ".h"))
            check(f"{m}: byte-identical output on two runs", r.ok and same, r.describe())
            for cc in ("gcc", "clang"):
                if not shutil.which(cc):
                    t.add("skip")
                    print(f"  skip: {m}: {cc} not installed")
                    continue
                r = rltest.run([cc, "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O2", "-c",
                                os.path.join(outs[0], m + ".c"), "-o", os.path.join(outs[0], m + ".o")],
                               timeout=300)
                check(f"{m}: {cc} -std=c11 -pedantic -Wall -Wextra -Werror compiles", r.ok, r.describe())

        # side-file weights give the same outputs as embedded ones
        mlp = os.path.join(models, "mlp.onnx")
        x = np.random.default_rng(3).standard_normal((1, 256)).astype(np.float32)
        xin = os.path.join(tmp, "x.pb")
        rltest.write_pb(xin, x, "x")
        res = {}
        # (explicit for embedded: `rlopt run` sends constants past 1 MiB to the side file)
        for mode, extra in (("embedded", ["--weights-max", str(1 << 30)]),
                            ("side", ["--weights-max", "0"])):
            od = os.path.join(tmp, "run_" + mode)
            r = rltest.run([rl, "run", mlp, "-i", xin, "-d", od] + extra, timeout=300)
            res[mode] = rltest.read_pb(os.path.join(od, "output_0.pb"))[1] if r.ok else None
            check(f"rlopt run, {mode} weights", r.ok, r.describe())
        if res.get("embedded") is not None and res.get("side") is not None:
            check("side-file weights equal embedded weights bit for bit",
                  np.array_equal(res["embedded"], res["side"]))
        # threads: every example gives the same bits at 1, 2 and 3 threads
        # (kernels split outer loops only; a reduction is never divided)
        rng = np.random.default_rng(5)
        for m in ("mlp", "gpt_block", "resnet_small", "elementwise_chain"):
            mp = os.path.join(models, m + ".onnx")
            mi = onnx.load(mp, load_external_data=False).graph
            inits = {i.name for i in mi.initializer}
            feeds = []
            for k, inp in enumerate(i for i in mi.input if i.name not in inits):
                shp = [d.dim_value for d in inp.type.tensor_type.shape.dim]
                pb = os.path.join(tmp, f"thr_{m}_{k}.pb")
                rltest.write_pb(pb, rng.standard_normal(shp).astype(np.float32), inp.name)
                feeds += ["-i", pb]
            got = {}
            for nt in (1, 2, 3):
                od = os.path.join(tmp, f"thr_{m}_{nt}")
                r = rltest.run([rl, "run", mp, "--threads", str(nt), "-d", od] + feeds, timeout=300)
                if not r.ok:
                    check(f"{m}: rlopt run --threads {nt}", False, r.describe())
                    continue
                got[nt] = rltest.read_pb(os.path.join(od, "output_0.pb"))[1]
            if len(got) == 3:
                check(f"{m}: bit-identical outputs at 1, 2 and 3 threads",
                      np.array_equal(got[1], got[2]) and np.array_equal(got[1], got[3]))
        # constants the model computes (weights made by ConstantOfShape and
        # Range, too big for fold.c to keep): NAME_init computes them once,
        # the run only reads them (the conv packs them at init)
        cst_model(tmp, check, rl)
        column_conv_model(tmp, check, rl)
        transpose_model(tmp, check, rl)
        # portable paths: a compiler that is neither gcc nor clang (tcc: no
        # GNU vectors, no target_clones, the scalar #else code) and aarch64
        # (cross gcc, run under qemu-user: generic vectors, no x86 dispatch)
        # give the x86 gcc build's outputs within the conformance tolerance
        arm = ("aarch64-linux-gnu-gcc", "qemu-aarch64")
        armcc = os.path.join(tmp, "armcc.sh")
        with open(armcc, "w") as f:
            f.write("#!/bin/sh\n"
                    "# cross-compile for aarch64; 'model' becomes a qemu-user launcher\n"
                    "out=; prev=\n"
                    "for a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n"
                    "aarch64-linux-gnu-gcc -Wall -Wextra -Werror \"$@\" -o \"$out.arm\" || exit 1\n"
                    "printf '#!/bin/sh\\nexec qemu-aarch64 -L /usr/aarch64-linux-gnu \"$0.arm\" \"$@\"\\n' > \"$out\"\n"
                    "chmod +x \"$out\"\n")
        os.chmod(armcc, 0o755)
        for m in ("mlp", "gpt_block", "resnet_small"):
            mp = os.path.join(models, m + ".onnx")
            feeds = []
            for k in range(8):
                pb = os.path.join(tmp, f"thr_{m}_{k}.pb")
                if os.path.exists(pb):
                    feeds += ["-i", pb]
            ref = None
            for label, ccargs, need in (("gcc", ["--cc", "gcc"], ("gcc",)),
                                        ("tcc", ["--cc", "tcc"], ("tcc",)),
                                        ("aarch64", ["--cc", armcc], arm)):
                if not all(shutil.which(x) for x in need):
                    check(f"{m}: {label} is installed (scripts/deps.sh --test)", False)
                    continue
                od = os.path.join(tmp, f"port_{m}_{label}")
                r = rltest.run([rl, "run", mp, "-d", od] + ccargs + feeds, timeout=600)
                if not r.ok:
                    check(f"{m}: builds and runs with {label}", False, r.describe())
                    continue
                got = rltest.read_pb(os.path.join(od, "output_0.pb"))[1]
                if ref is None:
                    ref = got
                    continue
                ok, msg, _, _ = rltest.compare(got, ref, rtol=1e-3, atol=1e-5)
                check(f"{m}: {label} build matches the gcc build (rtol 1e-3, atol 1e-5)", ok, msg)
        sd = os.path.join(tmp, "side")
        os.makedirs(sd)
        r = rltest.run([rl, mlp, "-o", os.path.join(sd, "mlp_opt.c"), "--weights-max", "0"], timeout=120)
        check("--weights-max 0 writes NAME.weights", r.ok and os.path.exists(os.path.join(sd, "mlp_opt.weights")),
              r.describe())
        # the default: 16 MiB embedded at most (64 MiB as string literals are
        # 200 MB of C and seconds of cc); a 20 MiB weight goes to the side file
        # and the .c stays small
        from onnx import numpy_helper
        wbig = np.random.default_rng(3).standard_normal((1280, 4096)).astype(np.float32)
        big = helper.make_model(helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"])], "big",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1280])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4096])],
            [numpy_helper.from_array(wbig, "w")]), opset_imports=[helper.make_opsetid("", 17)])
        bp = os.path.join(sd, "big.onnx")
        onnx.save(big, bp)
        r = rltest.run([rl, bp, "-o", os.path.join(sd, "big.c")], timeout=120)
        csize = os.path.getsize(os.path.join(sd, "big.c")) if r.ok else -1
        check("a 20 MiB weight goes to NAME.weights by default, the .c stays under 1 MB",
              r.ok and os.path.exists(os.path.join(sd, "big.weights")) and 0 < csize < 1 << 20,
              f"{r.describe()} .c {csize} bytes")

        # the example program that links generated code
        ed = os.path.join(tmp, "example")
        os.makedirs(ed)
        r = rltest.run([rl, mlp, "-o", os.path.join(ed, "mlp_opt.c")], timeout=120)
        if r.ok:
            r = rltest.run(["cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I", ed, "-o",
                            os.path.join(ed, "run_mlp"), os.path.join(src, "examples", "run_mlp.c"),
                            os.path.join(ed, "mlp_opt.c"), "-lm"], timeout=300)
        if r.ok:
            r = rltest.run([os.path.join(ed, "run_mlp")], timeout=60)
        check("examples/run_mlp.c links the generated MLP and runs", r.ok and "argmax" in r.stdout,
              r.describe())

        # unbound symbolic dims
        dyn = os.path.join(models, "tiny_mlp_dynamic.onnx")
        r = rltest.run([rl, dyn, "-o", os.path.join(tmp, "dyn.c")], timeout=60)
        check("unbound dim: exit 2 naming the dim and --batch",
              r.returncode == 2 and "batch" in r.stderr and "--batch" in r.stderr, r.describe())
        r = rltest.run([rl, dyn, "-o", os.path.join(tmp, "dyn.c"), "--batch", "4"], timeout=60)
        h = open(os.path.join(tmp, "dyn.h")).read() if r.ok else ""
        check("--batch 4 binds it", r.ok and "4x8" in h, r.describe())

        # rlopt run bad input
        relu = helper.make_model(helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]),
            opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        rp = os.path.join(tmp, "relu.onnx")
        onnx.save(relu, rp)
        good = os.path.join(tmp, "good.pb")
        rltest.write_pb(good, np.ones((2, 3), np.float32), "x")
        bad_dt = os.path.join(tmp, "bad_dt.pb")
        rltest.write_pb(bad_dt, np.ones((2, 3), np.int64), "x")
        bad_sh = os.path.join(tmp, "bad_sh.pb")
        rltest.write_pb(bad_sh, np.ones((3, 2), np.float32), "x")

        def run_case(name, argv, code, words, env=None):
            od = os.path.join(tmp, "o_" + name.replace(" ", "_"))
            e = dict(os.environ)
            e.update(env or {})
            r = rltest.run([rl, "run", rp] + argv + ["-d", od], timeout=120, env=e)
            left = os.listdir(od) if os.path.isdir(od) else []
            ok = r.returncode == code and all(w in r.stderr for w in words) and not left
            check(f"run: {name}: exit {code}", ok, f"exit {r.returncode}, left {left}: {r.stderr.strip()[:300]}")

        # one symbol on several axes must get one size from the input files
        nn = helper.make_model(helper.make_graph(
            [helper.make_node("Add", ["x", "y"], ["z"], name="add")], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "N"]),
             helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "N"])],
            [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", "N"])]),
            opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        nnp = os.path.join(tmp, "nn.onnx")
        onnx.save(nn, nnp)
        p23, p22, p33 = (os.path.join(tmp, f"nn{k}.pb") for k in ("23", "22", "33"))
        rltest.write_pb(p23, np.ones((2, 3), np.float32), "x")
        rltest.write_pb(p22, np.ones((2, 2), np.float32), "x")
        rltest.write_pb(p33, np.ones((3, 3), np.float32), "y")
        for name, files in (("two axes of one input", [p23, p23]), ("two inputs", [p22, p33])):
            od = os.path.join(tmp, "o_nn_" + name.replace(" ", "_"))
            argv = [rl, "run", nnp, "-d", od]
            for f in files:
                argv += ["-i", f]
            r = rltest.run(argv, timeout=120)
            check(f"run: symbol 'N' bound to two sizes ({name}): exit 2 naming it and both sizes",
                  r.returncode == 2 and "'N'" in r.stderr and "3" in r.stderr and "2" in r.stderr
                  and (not os.path.isdir(od) or not os.listdir(od)), r.describe())
        run_case("input dtype mismatch", ["-i", bad_dt], 2, ["int64", "float32"])
        run_case("input shape mismatch", ["-i", bad_sh], 2, ["3x2", "2x3"])
        run_case("missing input", [], 2, ["1 input"])
        run_case("compiler not found", ["-i", good], 4, ["not found"], {"CC": "/nonexistent/cc"})
        run_case("compiler fails (its error shown)", ["-i", good], 4, ["failed", "| "],
                 {"CC": "cc -DRL_BROKEN=\"#error\" -include /nonexistent/header.h"})
        # a program that crashes: a C compiler wrapper that injects a segfault
        wrap = os.path.join(tmp, "crashcc.sh")
        with open(wrap, "w") as f:
            f.write("#!/bin/sh\nprintf 'static void c(void) __attribute__((constructor));"
                    "static void c(void){__builtin_trap();}\\n' > crash.c\n"
                    "exec cc \"$@\" crash.c\n")
        os.chmod(wrap, 0o755)
        hang = os.path.join(tmp, "hangcc.sh")
        with open(hang, "w") as f:
            f.write("#!/bin/sh\nprintf '#include <unistd.h>\\nstatic void h(void) __attribute__((constructor));"
                    "static void h(void){for(;;)sleep(1);}\\n' > hang.c\n"
                    "exec cc \"$@\" hang.c\n")
        os.chmod(hang, 0o755)
        # --cc / --cflags go to the compiler without a shell: metacharacters stay text
        pwned = os.path.join(tmp, "pwned")
        run_case("--cflags with shell metacharacters is not run by a shell",
                 ["-i", good, "--cflags", f"-DX=1;touch {pwned};$(touch {pwned})"], 4, ["failed"])
        check("--cflags: nothing was executed", not os.path.exists(pwned))
        od = os.path.join(tmp, "o_cflags")
        r = rltest.run([rl, "run", rp, "-i", good, "-d", od, "-v", "--cc", "gcc", "--cflags", "-O3 -DRL_NO_CLONES"],
                       timeout=120)
        check("run -v prints the compile command with --cc and --cflags",
              r.ok and "gcc -std=c11 -O2 -O3 -DRL_NO_CLONES" in r.stderr, r.describe())
        run_case("program crashes", ["-i", good], 4, ["crashed"], {"CC": wrap})
        run_case("program hangs (time limit)", ["-i", good, "--timeout", "3"], 4, ["timed out"], {"CC": hang})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(t.finish())


if __name__ == "__main__":
    main()
