"""Static mode (`rlopt MODEL -o OUT.c --static`) and views, as a small-target user meets them.

- Each example model builds in static mode and compiles with
  -std=c11 -pedantic -Wall -Wextra -Werror; its object references no malloc,
  free, stdio or pthread symbol (nm -u), and the file includes neither
  stdio.h nor stdlib.h; the header defines NAME_WORKSPACE_BYTES.
- NAME_run_ws on a caller's buffer of NAME_WORKSPACE_BYTES filled with junk
  (twice, different junk) gives the same outputs as the normal build's
  NAME_run_v, bit for bit, when both builds run the same kernels (both
  compiled -DRL_NO_CLONES -ffp-contract=off, so the ISA and contraction are
  the same). Where the normal build takes the packed GEMM or the conv band
  kernels (allocated at NAME_init, so not in static mode) the summation
  order differs: there the static build is checked against onnxruntime
  instead, at test_models_ort.py's tolerance (rtol 1e-3, atol 1e-4).
- Quantized products (gpt_block int8, mlp int4, at batch 1): their prepared
  activation rows come from the workspace; static matches the normal build
  (same quantized kernels; other products may be packed there) at rtol 1e-3.
- A convolution with a padded row over RL_STATIC_STACK_MAX keeps it in the
  workspace, not on the stack.
- The normal build's NAME_run_ws on a caller's workspace equals its NAME_run.
- A model whose weights are made by nodes (rltest.const_made_model: the
  normal build computes them once in NAME_init, the static one per run).
- --static with -o OUT.onnx or --weights-max is a usage error (exit 1).
- Views: a Reshape between two kernels runs no kernel and owns no storage
  (the workspace holds one tensor, not two); outputs match numpy.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.numpy_helper
import onnxruntime as ort
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

HARNESS = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "s.h"
#include "n.h"

static void *slurp(const char *p, size_t n)
{
    FILE *f = fopen(p, "rb");
    void *b = calloc(1, n + 1);
    if (!f || !b || fread(b, 1, n, f) != n) {
        fprintf(stderr, "cannot read %s\n", p);
        exit(2);
    }
    fclose(f);
    return b;
}

static void spill(const char *p, const void *b, size_t n)
{
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0)
        exit(2);
}

int main(void)
{
    void *in[S_NUM_INPUTS + 1], *os[S_NUM_OUTPUTS + 1], *on[S_NUM_OUTPUTS + 1],
         *ow[S_NUM_OUTPUTS + 1];
    char p[64];
    for (int i = 0; i < S_NUM_INPUTS; i++) {
        snprintf(p, sizeof(p), "in%d.bin", i);
        in[i] = slurp(p, s_inputs[i].nbytes);
    }
    for (int i = 0; i < S_NUM_OUTPUTS; i++) {
        os[i] = calloc(1, s_outputs[i].nbytes + 1);
        on[i] = calloc(1, s_outputs[i].nbytes + 1);
        ow[i] = calloc(1, s_outputs[i].nbytes + 1);
    }
    size_t wb = (S_WORKSPACE_BYTES + 63) / 64 * 64;
    unsigned char *ws = aligned_alloc(S_WORKSPACE_ALIGN, wb);
    unsigned char *wn = aligned_alloc(N_WORKSPACE_ALIGN, (N_WORKSPACE_BYTES + 63) / 64 * 64);
    if (!ws || !wn)
        return 2;
    memset(ws, 0xab, wb);
    if (s_run_ws_v(ws, (const void *const *)in, os) != 0)
        return 3;
    memset(ws, 0x7f, wb); /* nothing may carry over between runs */
    if (s_run_ws_v(ws, (const void *const *)in, os) != 0)
        return 3;
    if (s_run_ws_v(ws + 8, (const void *const *)in, os) != -1) /* misaligned */
        return 4;
    if (n_run_v((const void *const *)in, on) != 0)
        return 5;
    memset(wn, 0xcd, N_WORKSPACE_BYTES);
    if (n_run_ws_v(wn, (const void *const *)in, ow) != 0)
        return 6;
    for (int i = 0; i < S_NUM_OUTPUTS; i++) {
        snprintf(p, sizeof(p), "s%d.bin", i);
        spill(p, os[i], s_outputs[i].nbytes);
        snprintf(p, sizeof(p), "n%d.bin", i);
        spill(p, on[i], s_outputs[i].nbytes);
        snprintf(p, sizeof(p), "w%d.bin", i);
        spill(p, ow[i], s_outputs[i].nbytes);
    }
    n_free();
    printf("%llu\n", (unsigned long long)S_WORKSPACE_BYTES);
    return 0;
}
"""

FORBIDDEN = re.compile(r"^(malloc|calloc|realloc|free|aligned_alloc|posix_memalign|.*printf|puts|"
                       r"putchar|fopen|fclose|fread|fwrite|fgetc|fputc|fflush|pthread_.*|sysconf|"
                       r"exit|abort)$")

NP = {TensorProto.FLOAT: np.float32, TensorProto.INT64: np.int64, TensorProto.INT32: np.int32,
      TensorProto.BOOL: np.bool_}


def main():
    ap = rltest.make_parser(__doc__)
    args = ap.parse_args()
    rl, src = args.rlopt, args.source
    cc = os.environ.get("CC", "cc")
    t = rltest.Tally()
    tmp = tempfile.mkdtemp(prefix="rlopt-static-")

    def check(name, ok, detail=""):
        t.add("pass" if ok else "fail")
        print(f"  {'pass' if ok else 'FAIL'}: {name}" + (f": {detail}" if detail and not ok else ""))
        return ok

    try:
        rng = np.random.default_rng(7)
        # a convolution whose padded input row (602 floats, 2408 bytes) is over
        # RL_STATIC_STACK_MAX: in static mode it lives in the workspace
        wide = os.path.join(tmp, "wide_conv.onnx")
        wc = helper.make_graph(
            [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="conv")], "wide",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 600])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 600])],
            [onnx.numpy_helper.from_array(rng.uniform(-1, 1, (3, 2, 3, 3)).astype(np.float32), "w")])
        wm = helper.make_model(wc, opset_imports=[helper.make_opsetid("", 17)])
        wm.ir_version = 8
        onnx.save(wm, wide)
        cases = [(m, os.path.join(src, "examples", m + ".onnx"), [])
                 for m in ("elementwise_chain", "mlp", "gpt_block", "resnet_small")]
        cases.append(("wide_conv", wide, []))
        # quantized products: the prepared activation rows live in the
        # workspace in static mode (NAME_init allocates them otherwise)
        for m, q in (("gpt_block", "int8"), ("mlp", "int4")):
            cases.append((f"{m}_{q}", os.path.join(src, "examples", m + ".onnx"),
                          ["--batch", "1", "--quantize", q, "--max-rel-error", "0.5"]))
        # constants made by nodes: NAME_init computes them in normal mode;
        # static mode (no NAME_init) fills them per run
        cst = os.path.join(tmp, "const_made.onnx")
        onnx.save(rltest.const_made_model(), cst)
        cases.append(("const_made", cst, []))
        for m, model_path, extra in cases:
            d = os.path.join(tmp, m)
            os.makedirs(d)
            r = rltest.run([rl, model_path, "--static", "-o", os.path.join(d, "s.c")] + extra,
                           timeout=300)
            if not check(f"{m}: generate --static", r.ok, r.describe()):
                continue
            r = rltest.run([rl, model_path, "-o", os.path.join(d, "n.c")] + extra, timeout=300)
            if not check(f"{m}: generate normal", r.ok, r.describe()):
                continue
            with open(os.path.join(d, "s.c")) as f:
                s_text = f.read()
            with open(os.path.join(d, "s.h")) as f:
                h_text = f.read()
            with open(os.path.join(d, "n.c")) as f:
                n_text = f.read()
            check(f"{m}: no stdio.h/stdlib.h, NAME_WORKSPACE_BYTES and NAME_run_ws in the header",
                  "<stdio.h>" not in s_text and "<stdlib.h>" not in s_text and
                  "#define S_WORKSPACE_BYTES" in h_text and "int s_run_ws(void *ws" in h_text)
            check(f"{m}: no side file in static mode", not os.path.exists(os.path.join(d, "s.weights")))
            if m == "wide_conv":
                # at the region's base the pointer is s_ws itself, else (s_ws + OFF)
                in_ws = re.search(r"float \*row = \(float \*\)\(void \*\)\(?s_ws\b", s_text)
                check(f"{m}: the 2408-byte row is workspace scratch, not a local array",
                      in_ws is not None and "float row[" not in s_text)
            r = rltest.run([cc, "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O2",
                            "-c", "s.c", "-o", "s_pedantic.o"], timeout=600, cwd=d)
            if not check(f"{m}: static C compiles with -std=c11 -pedantic -Wall -Wextra -Werror",
                         r.ok, r.describe()):
                continue
            r = rltest.run(["nm", "-u", "s_pedantic.o"], timeout=60, cwd=d)
            syms = [ln.split()[-1] for ln in r.stdout.splitlines() if ln.strip()]
            bad = [s for s in syms if FORBIDDEN.match(s)]
            check(f"{m}: no malloc/free/stdio/pthread symbols referenced", r.ok and not bad,
                  f"referenced: {bad}" if r.ok else r.describe())
            # same ISA and contraction in both builds, so only kernel choice can differ
            flags = ["-std=c11", "-O2", "-DRL_NO_CLONES", "-ffp-contract=off"]
            with open(os.path.join(d, "h.c"), "w") as f:
                f.write(HARNESS)
            r = rltest.run([cc] + flags + ["h.c", "s.c", "n.c", "-o", "h", "-lm", "-pthread"],
                           timeout=600, cwd=d)
            if not check(f"{m}: harness builds", r.ok, r.describe()):
                continue
            model = onnx.load(model_path)
            init = {i.name for i in model.graph.initializer}
            feeds = {}
            for k, vi in enumerate([v for v in model.graph.input if v.name not in init]):
                tt = vi.type.tensor_type
                shape = [dd.dim_value for dd in tt.shape.dim]
                dt = NP[tt.elem_type]
                a = (rng.uniform(-1, 1, shape).astype(dt) if dt == np.float32
                     else rng.integers(0, 4, shape).astype(dt))
                feeds[vi.name] = a
                a.tofile(os.path.join(d, f"in{k}.bin"))
            r = rltest.run(["./h"], timeout=300, cwd=d)
            if not check(f"{m}: static and normal builds run (junk-filled, reused workspace; "
                         "misaligned refused)", r.ok, r.describe()):
                continue
            ws_bytes = int(r.stdout.strip())
            outs = model.graph.output
            same_kernels = "rl_gemm_init" not in n_text and "rl_conv_scratch" not in n_text
            sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
            ref = sess.run(None, feeds)
            for i, o in enumerate(outs):
                dt = NP[o.type.tensor_type.elem_type]
                sb = open(os.path.join(d, f"s{i}.bin"), "rb").read()
                nb = open(os.path.join(d, f"n{i}.bin"), "rb").read()
                wb = open(os.path.join(d, f"w{i}.bin"), "rb").read()
                check(f"{m}: output {i}: normal NAME_run_ws equals NAME_run bit for bit", wb == nb)
                if extra and not same_kernels:
                    # quantized: the same quantized kernels, other products
                    # packed in the normal build; onnxruntime runs the float model
                    got = np.frombuffer(sb, dtype=dt).reshape(ref[i].shape)
                    want = np.frombuffer(nb, dtype=dt).reshape(ref[i].shape)
                    ok, why, _, _ = rltest.compare(got, want, rtol=1e-3, atol=1e-4)
                    check(f"{m}: output {i}: static matches the normal build", ok, why)
                elif same_kernels:
                    check(f"{m}: output {i}: static equals normal bit for bit", sb == nb,
                          f"{sum(x != y for x, y in zip(sb, nb))} bytes differ")
                else:
                    got = np.frombuffer(sb, dtype=dt).reshape(ref[i].shape)
                    # the tolerance test_models_ort.py holds these models to
                    ok, why, _, _ = rltest.compare(got, ref[i], rtol=1e-3, atol=1e-4)
                    check(f"{m}: output {i}: static (plain kernels; normal takes packed GEMM/conv "
                          "band) matches onnxruntime", ok, why)
            print(f"  info: {m}: static workspace {ws_bytes} bytes, "
                  f"{'same kernels' if same_kernels else 'plain kernels instead of packed'}")

        # usage errors
        mp = os.path.join(src, "examples", "mlp.onnx")
        r = rltest.run([rl, mp, "--static", "-o", os.path.join(tmp, "x.onnx")], timeout=60)
        check("--static with -o OUT.onnx: usage error", r.returncode == 1 and "--static" in r.stderr,
              r.describe())
        r = rltest.run([rl, mp, "--static", "--weights-max", "0", "-o", os.path.join(tmp, "x.c")],
                       timeout=60)
        check("--static with --weights-max: usage error, nothing written",
              r.returncode == 1 and not os.path.exists(os.path.join(tmp, "x.c")), r.describe())

        # views: Relu -> Reshape -> Relu; the Reshape is a view of the first Relu's output
        d = os.path.join(tmp, "view")
        os.makedirs(d)
        X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])
        Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 256])
        shp = helper.make_tensor("shp", TensorProto.INT64, [2], [16, 256])
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["a"], name="r1"),
                               helper.make_node("Reshape", ["a", "shp"], ["b"], name="view"),
                               helper.make_node("Relu", ["b"], ["y"], name="r2")],
                              "v", [X], [Y], [shp])
        mv = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        mv.ir_version = 8
        vp = os.path.join(d, "v.onnx")
        onnx.save(mv, vp)
        for mode in ("normal", "static"):
            extra = ["--static"] if mode == "static" else []
            # -O0: no fusion, so the Reshape sits between two kernels
            r = rltest.run([rl, vp, "-O0", "-o", os.path.join(d, f"{mode}.c")] + extra, timeout=60)
            if not check(f"view ({mode}): generate", r.ok, r.describe()):
                continue
            c = open(os.path.join(d, f"{mode}.c")).read()
            h = open(os.path.join(d, f"{mode}.h")).read()
            wsb = re.search(r"_WORKSPACE_BYTES (\d+)u", h)
            kernels = re.findall(r"^static (?:RL_TARGETS )?void (k\d+_\w+)\(", c, re.M)
            check(f"view ({mode}): the Reshape runs no kernel and is named a view",
                  "'view' (Reshape): a view of" in c and not any("view" in k for k in kernels),
                  f"kernels {kernels}")
            check(f"view ({mode}): workspace holds one 16 KiB tensor, not two",
                  wsb is not None and int(wsb.group(1)) == 64 * 64 * 4,
                  wsb.group(0) if wsb else "no NAME_WORKSPACE_BYTES")
        # and it computes the right thing
        xin = np.random.default_rng(3).uniform(-1, 1, (64, 64)).astype(np.float32)
        rltest.write_pb(os.path.join(d, "x.pb"), xin, "x")
        r = rltest.run([rl, "run", vp, "-O0", "-i", os.path.join(d, "x.pb"), "-d",
                        os.path.join(d, "out")], timeout=300)
        if check("view: rlopt run", r.ok, r.describe()):
            _, got = rltest.read_pb(os.path.join(d, "out", "output_0.pb"))
            check("view: output equals numpy bit for bit",
                  np.array_equal(got, np.maximum(np.maximum(xin, 0).reshape(16, 256), 0)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(t.finish())


if __name__ == "__main__":
    main()
