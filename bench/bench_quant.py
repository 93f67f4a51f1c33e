#!/usr/bin/env python3
"""bench_quant.py - weight quantization where bytes bind, measured in one run:
a batch-1 decoder-style MLP stack with over 1 GiB of fp32 weights generated
float, --quantize int8 and --quantize int4, against onnxruntime's own int8
and 4-bit models, with the model outputs' error; `--quantize auto` on the same
stack at batch 1 and batch 512; optionally (--gemv) the single-GEMV case.

    python bench/bench_quant.py [--rlopt build/rlopt] [--layers L] [--hidden D]
                                [--intermediate F] [--vocab V] [--threads 1,2]
                                [--seconds 1] [--cc cc] [--hw epyc9654]
                                [--predict-hw probe|PROFILE] [--gemv] [--size G]
                                [--probe] [--keep]

The stack (--layers L blocks, default: the fewest whose fp32 weights reach
1 GiB at D 2048, F 5632, V 8192; 8 blocks: 1.17 GB, 36x the 32 MiB LLC of
the host it was written on):

    x [1, D] -> L x { h = LayerNorm(x); x = x + W_down (silu(h W_gate) * (h W_up)) }
             -> LayerNorm -> logits = h W_head [1, V]

a Llama-style pre-norm SwiGLU MLP block with its residual, weights Gaussian,
initialized the way GPT-2 initializes (each matrix's entries N(0, 1/fan_in),
the residual branch's W_down scaled by 1/sqrt(2 L) so the stream does not
grow with depth), written once as external data and read back through
numpy.memmap (never two copies in this process; its peak was not measured:
sampled during the onnxruntime step it held 1.4 GB, rlopt 0.85 GB).

What it does, in a temporary folder:
  1. Generates C four times: float, --quantize int8 (blocks of --block),
     --quantize int4 (blocks of --block, symmetric; the guard budget
     --int4-error) and --quantize int4-mixed (int4, the head int8 in blocks;
     --no-mixed skips it), float16 scales unless --scale-type-f32, weights
     in the side file (--weights-max 0).
  2. Compiles each with bench/timing_harness.c at plain `cc -O2` and times
     it at each thread count (median over --seconds; one thread: its CPU
     time, --wall for wall time; more threads: wall time).
  3. Checks each output (the logits) against a float64 numpy forward of
     the float model on the harness's own input: the relative error
     ||y - ref|| / ||ref|| is the error a user sees.
  4. onnxruntime on the same model and thread counts: float, its
     quantize_dynamic int8 model (per-channel QInt8 weights), and a
     MatMulNBits 4-bit model with accuracy_level 4 (written by rlopt
     --onnx-format matmulnbits: onnxruntime's own 4-bit quantizer needs the
     onnx_ir package, which the venv lacks), with their errors too.
  5. Prints measured and predicted speedups side by side. Predicted: the
     whole model's time in `rlopt report -O2 [--quantize ..] --hw P
     --threads T` for each thread count T, float over quantized, where P
     (--predict-hw) is the profile of the machine that runs the benchmark:
     by default `rlopt probe` run here first (a prediction for a 96-core
     EPYC says nothing about what this host measures: there the quantized
     weights fit its 384 MB L3). The code is generated for --hw (default
     epyc9654, as in the earlier runs).
  6. `--quantize auto` on --hw at batch 1 (memory-bound: quantized) and
     batch 512 (compute-bound: stays float), each node's remark.

The machine may be shared: figures move between runs; ratios within one run
are what to read.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def sh(cmd, timeout=900, cwd=None):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        sys.stderr.write("command failed: %s\n%s%s" % (" ".join(cmd), r.stdout[-3000:],
                                                         r.stderr[-3000:]))
        sys.exit(1)
    return r


def kv(text):
    out = {}
    for ln in text.splitlines():
        p = ln.split()
        if len(p) == 2:
            try:
                out[p[0]] = float(p[1])
            except ValueError:
                pass
    return out


def llc_bytes():
    best = 0
    for i in range(8):
        try:
            with open(f"/sys/devices/system/cpu/cpu0/cache/index{i}/size") as f:
                s = f.read().strip()
        except OSError:
            break
        m = re.match(r"(\d+)([KMG]?)", s)
        if m:
            best = max(best, int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)])
    return best


def save_model(path, nodes, inits, x_shape, y_shape):
    from onnx import TensorProto, helper, numpy_helper, save
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
                          [numpy_helper.from_array(a, n) for n, a in inits.items()])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def remarks(stderr, node=None):
    rs = [ln for ln in stderr.splitlines() if ln.startswith("remark: quantize:")]
    return [r for r in rs if node is None or r.startswith(f"remark: quantize: {node}:")]


def predict_profile(args, work):
    """The profile predictions are made on (--predict-hw), probed once."""
    if getattr(args, "_prof", None):
        return args._prof
    if args.predict_hw == "probe":
        xml = os.path.join(work, "host.xml")
        print("probing this machine (rlopt probe) for the predictions ...", flush=True)
        sh([args.rlopt, "probe", "-o", xml])
        args._prof = xml
    else:
        args._prof = args.predict_hw
    return args._prof


def report_total(args, prof, path, t, flags, work, batch=None):
    """(the model's predicted time, the quantize pass's summary (before, after))
    from `rlopt report -O2 --hw prof --threads t`."""
    import json
    rj = os.path.join(work, "pred.json")
    sh([args.rlopt, "report", path, "--hw", prof, "--threads", str(t), "-O2", "--format", "json",
        "-o", rj] + (["--batch", str(batch)] if batch else []) + flags)
    j = json.load(open(rj))
    summ = (0.0, 0.0)
    for rm in j.get("remarks", []):
        if rm["pass"] == "quantize" and rm["verdict"] == "summary":
            summ = summary_pred(rm["msg"])
    return j["total"]["time_s"], summ


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rlopt", default=os.path.join(ROOT, "build", "rlopt"))
    ap.add_argument("--layers", type=int, default=0,
                    help="MLP blocks (default: the fewest reaching 1 GiB of fp32 weights)")
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--intermediate", type=int, default=5632)
    ap.add_argument("--vocab", type=int, default=8192, help="the head's outputs (0: no head)")
    ap.add_argument("--block", type=int, default=32, help="--block for int4")
    ap.add_argument("--auto-batch", type=int, default=512,
                    help="the batch at which --quantize auto should leave the stack float")
    ap.add_argument("--gemv", action="store_true",
                    help="also the single GEMV [1,G] x [G,G] (the earlier benchmark)")
    ap.add_argument("--no-stack", dest="stack", action="store_false", help="skip the MLP stack")
    ap.add_argument("--size", type=int, default=0, help="GEMV G (default: fp32 weights >= 4x LLC)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--hw", default="epyc9654",
                    help="profile the code is generated for, and `auto` decides on")
    ap.add_argument("--predict-hw", default="probe",
                    help="profile the predictions are made on: `probe` (default: `rlopt probe` "
                         "this machine first) or a profile name or .xml")
    ap.add_argument("--int4-error", type=float, default=0.15,
                    help="--max-rel-error for int4 (int4 on Gaussian weights: about 0.09)")
    ap.add_argument("--int8-error", type=float, default=0.01,
                    help="--max-rel-error for int8 (blocks of --block: about 0.005 per product)")
    ap.add_argument("--probe", action="store_true", help="also run `rlopt probe`")
    ap.add_argument("--no-mixed", dest="mixed", action="store_false",
                    help="skip --quantize int4-mixed (int4 MLPs, an int8 head) on the stack")
    ap.add_argument("--scale-type-f32", dest="scale32", action="store_true",
                    help="float32 scales (--scale-type f32) instead of the default float16")
    ap.add_argument("--wall", dest="cpu_time", action="store_false",
                    help="time one thread by the wall clock too (default: its CPU time)")
    ap.add_argument("--no-ort", dest="ort", action="store_false", help="skip onnxruntime")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    work = tempfile.mkdtemp(prefix="bench-quant.")
    try:
        if args.stack:
            run_stack(args, threads, work)
        if args.gemv:
            run(args, threads, work)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


# ---- the decoder-style MLP stack ---------------------------------------------

class ExtWeights:
    """fp32 initializers written back to back into one external data file, so
    the model never sits in memory twice (numpy array + protobuf copy)."""

    def __init__(self, folder, fname):
        self.fname = fname
        self.f = open(os.path.join(folder, fname), "wb")
        self.inits = []
        self.where = {}

    def add(self, name, arr):
        from onnx import TensorProto
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        off = self.f.tell()
        self.f.write(arr.tobytes())
        self.f.write(b"\0" * (-self.f.tell() % 64))  # 64-byte aligned, as onnx writes them
        t = TensorProto()
        t.name = name
        t.data_type = TensorProto.FLOAT
        t.dims.extend(arr.shape)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", self.fname), ("offset", str(off)),
                     ("length", str(arr.nbytes))):
            e = t.external_data.add()
            e.key, e.value = k, v
        self.inits.append(t)
        self.where[name] = (off, arr.shape)
        return name

    def close(self):
        self.f.close()


def stack_layers(args):
    D, F, V = args.hidden, args.intermediate, args.vocab
    if args.layers:
        return args.layers
    L = 1
    while 4 * (L * 3 * D * F + D * V) < 2 ** 30:
        L += 1
    return L


def build_stack(folder, L, D, F, V, seed=0):
    """Write stack.onnx + stack.data (see the module docstring); returns the
    fp32 weight bytes and a loader name -> array (memmap) for the reference."""
    from onnx import TensorProto, helper
    rng = np.random.default_rng(seed)
    w = ExtWeights(folder, "stack.data")
    nodes = []

    def gauss(shape, std):
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(std)

    def ln(x, tag):
        w.add(f"{tag}.scale", 1 + gauss([D], 0.1))
        w.add(f"{tag}.bias", gauss([D], 0.02))
        nodes.append(helper.make_node("LayerNormalization", [x, f"{tag}.scale", f"{tag}.bias"],
                                      [f"{tag}.y"], name=tag, axis=-1, epsilon=1e-5))
        return f"{tag}.y"

    def mm(x, arr, tag):
        w.add(f"{tag}.w", arr)
        nodes.append(helper.make_node("MatMul", [x, f"{tag}.w"], [f"{tag}.y"], name=tag))
        return f"{tag}.y"

    def op(kind, ins, tag):
        nodes.append(helper.make_node(kind, ins, [f"{tag}.y"], name=tag))
        return f"{tag}.y"

    x = "x"
    for i in range(L):
        p = f"l{i}"
        h = ln(x, f"{p}.ln")
        g = mm(h, gauss([D, F], 1 / np.sqrt(D)), f"{p}.gate")
        u = mm(h, gauss([D, F], 1 / np.sqrt(D)), f"{p}.up")
        sg = op("Sigmoid", [g], f"{p}.sig")
        g = op("Mul", [g, sg], f"{p}.silu")
        g = op("Mul", [g, u], f"{p}.glu")
        dn = mm(g, gauss([F, D], 1 / np.sqrt(F) / np.sqrt(2 * L)), f"{p}.down")
        x = op("Add", [x, dn], f"{p}.res")
    y = ln(x, "final.ln")
    ydim = D
    if V:
        y = mm(y, gauss([D, V], 1 / np.sqrt(D)), "head")
        ydim = V
    w.close()
    g = helper.make_graph(nodes, "mlp_stack",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", D])],
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, ["batch", ydim])],
                          w.inits)
    g.output[0].name = y
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with open(os.path.join(folder, "stack.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    data = np.memmap(os.path.join(folder, "stack.data"), dtype=np.uint8, mode="r")

    def get(name):
        off, shape = w.where[name]
        n = int(np.prod(shape))
        return data[off:off + 4 * n].view(np.float32).reshape(shape)
    wbytes = sum(4 * int(np.prod(s)) for _, s in w.where.values())
    return wbytes, get, y


def stack_reference(get, x, L, V):
    """float64 forward of the float model."""
    x = x.astype(np.float64)

    def ln(v, tag):
        mu = v.mean(-1, keepdims=True)
        var = ((v - mu) ** 2).mean(-1, keepdims=True)
        return (v - mu) / np.sqrt(var + 1e-5) * get(f"{tag}.scale") + get(f"{tag}.bias")

    for i in range(L):
        p = f"l{i}"
        h = ln(x, f"{p}.ln")
        g = h @ get(f"{p}.gate.w").astype(np.float64)
        u = h @ get(f"{p}.up.w").astype(np.float64)
        a = g / (1 + np.exp(-g)) * u
        x = x + a @ get(f"{p}.down.w").astype(np.float64)
    y = ln(x, "final.ln")
    if V:
        y = y @ get("head.w").astype(np.float64)
    return y


def rel_err(y, ref):
    return float(np.linalg.norm(y.astype(np.float64) - ref) / np.linalg.norm(ref))


def summary_pred(stderr):
    """(time before, time after) of the quantized nodes: the summary remark."""
    m = re.search(r"predicted time ([\d.e+-]+) -> ([\d.e+-]+) s", stderr)
    return (float(m.group(1)), float(m.group(2))) if m else (0.0, 0.0)


def node_errors(stderr):
    return [float(m) for m in re.findall(r", error ([\d.e+-]+) <=", stderr)]


def ort_time(mp, x, t, seconds, cpu_time):
    import time

    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = t
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(mp, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    for _ in range(2):
        y = sess.run(None, {name: x})[0]
    ts = []
    end = time.monotonic() + seconds
    while time.monotonic() < end or len(ts) < 3:
        c0, w0 = time.thread_time(), time.monotonic()
        sess.run(None, {name: x})
        ts.append(time.thread_time() - c0 if t == 1 and cpu_time else time.monotonic() - w0)
    del sess
    return float(np.median(ts)), y


def run_stack(args, threads, work):
    import json

    from onnx import helper
    llc = llc_bytes()
    D, F, V = args.hidden, args.intermediate, args.vocab
    L = stack_layers(args)
    wbytes, get, yname = build_stack(work, L, D, F, V)
    path = os.path.join(work, "stack.onnx")
    print(f"MLP stack: {L} x (LayerNorm, SwiGLU {D} -> {F} -> {D}, residual), LayerNorm"
          + (f", head {D} -> {V}" if V else "") + f"; batch 1; {wbytes / 1e9:.3f} GB "
          f"({wbytes / 2**30:.2f} GiB) of fp32 weights"
          + (f", {wbytes / llc:.0f}x the {llc >> 20} MiB last-level cache" if llc else ""))
    exe = os.path.join(work, "stream_limit")
    sh([args.cc, "-O2", "-march=native", "-pthread", os.path.join(HERE, "stream_limit.c"), "-o", exe])
    lim = kv(sh([exe, "--read"]).stdout)

    prof = predict_profile(args, work)
    t_float_pred = {t: report_total(args, prof, path, t, [], work, 1)[0] for t in threads}

    variants = [("float", []), ("int8", ["--quantize", "int8", "--block", str(args.block),
                                         "--max-rel-error", str(args.int8_error)]),
                ("int4", ["--quantize", "int4", "--block", str(args.block),
                          "--max-rel-error", str(args.int4_error)])]
    if args.mixed:  # int4 MLPs, the head (it makes the logits) int8 in blocks
        variants.append(("int4mix", ["--quantize", "int4-mixed", "--block", str(args.block),
                                     "--max-rel-error", str(args.int4_error)]))
    if args.scale32:
        variants = [(n, f + ["--scale-type", "f32"] if f else f) for n, f in variants]
    res = {}
    for name, flags in variants:
        d = os.path.join(work, name)
        os.makedirs(d)
        c = os.path.join(d, "st.c")
        r = sh([args.rlopt, path, "--batch", "1", "-o", c, "--weights-max", "0", "--hw", args.hw,
                "--remarks"] + flags)
        # predicted: the report of the quantized model on the profile of
        # this machine, at each thread count; and the pass's own summary
        # (its nodes' before and after): the two agree when the pass prices
        # its candidates as the report prices the kernels
        pred, pass_pred = {}, {}
        for t in threads:
            if not flags:
                pred[t] = pass_pred[t] = 1.0
                continue
            tq, (tb, ta) = report_total(args, prof, path, t, flags, work, 1)
            pred[t] = t_float_pred[t] / tq
            pass_pred[t] = t_float_pred[t] / (t_float_pred[t] - tb + ta) if ta else 0.0
        exe = os.path.join(d, "bench")
        sh([args.cc, "-std=c11", "-O2", "-pthread", "-DRL_HAVE_THREADS", "-I", d,
            '-DRL_MODEL_HEADER="st.h"', "-DRL_PREFIX=st", "-DRL_PREFIX_UC=ST",
            os.path.join(HERE, "timing_harness.c"), c, "-o", exe, "-lm"])
        times = {}
        for t in threads:
            dump = os.path.join(d, f"dump{t}")
            os.makedirs(dump)
            out = kv(sh([exe, "--seconds", str(args.seconds), "--threads", str(t), "--dump", dump,
                         "--weights", os.path.join(d, "st.weights")], cwd=d).stdout)
            times[t] = out["cpu_median_s"] if t == 1 and args.cpu_time else out["median_s"]
        x = np.fromfile(os.path.join(dump, "input_0.bin"), dtype=np.float32).reshape(1, D)
        y = np.fromfile(os.path.join(dump, "output_0.bin"), dtype=np.float32)
        if name == "float":
            ref = stack_reference(get, x, L, V).reshape(-1)
        ne = node_errors(r.stderr)
        schemes = sorted(set(re.findall(r"quantize: \S+: int[48]: (\S+):", r.stderr)))
        res[name] = dict(schemes=schemes, times=times,
                         wbytes=os.path.getsize(os.path.join(d, "st.weights")),
                         err=rel_err(y, ref), pred=pred, pass_pred=pass_pred, nodes=ne,
                         nq=len(ne))
        if not args.keep:  # the side file is as large as the weights
            shutil.rmtree(d, ignore_errors=True)

    ort_res = {}
    if args.ort:
        try:
            import onnx
            from onnxruntime.quantization import QuantType, quantize_dynamic
            q8 = os.path.join(work, "ort_int8.onnx")
            quantize_dynamic(path, q8, weight_type=QuantType.QInt8, per_channel=True)
            q4 = os.path.join(work, "ort_int4.onnx")
            sh([args.rlopt, path, "--batch", "1", "-o", q4, "--quantize", "int4", "--block",
                str(args.block), "--max-rel-error", str(args.int4_error),
                "--onnx-format", "matmulnbits"])
            m4 = onnx.load(q4)
            for nd in m4.graph.node:
                if nd.op_type == "MatMulNBits":
                    nd.attribute.append(helper.make_attribute("accuracy_level", 4))
            onnx.save(m4, q4)
            del m4
            for name, mp in (("float", path), ("int8", q8), ("int4", q4)):
                for t in threads:
                    s, y = ort_time(mp, x, t, args.seconds, args.cpu_time)
                    ort_res[(name, t)] = s
                ort_res[(name, "err")] = rel_err(y.reshape(-1), ref)
        except Exception as e:  # the peer is optional
            print(f"(onnxruntime comparison skipped: {type(e).__name__}: {e})")

    print(f"machine: read-only stream (bench/stream_limit.c, this run) "
          f"{lim.get('stream_read_GBps', 0):.1f} GB/s on 1 thread, "
          f"{lim.get('stream_read_all_GBps', 0):.1f} GB/s on {int(lim.get('read_threads', 0))}; "
          f"one thread timed by its CPU time" if args.cpu_time else "")
    print(f"\n{'weights':<8} {'file MB':>8} {'shrink':>7} {'out err':>9} " +
          " ".join(f"{'t=' + str(t) + ' ms':>9} {'GB/s':>6} {'x float':>7} {'pred':>6}"
                   for t in threads))
    f0 = res["float"]
    for name, _ in variants:
        r = res[name]
        cols = []
        for t in threads:
            s = r["times"][t]
            cols.append(f"{s * 1e3:>9.2f} {r['wbytes'] / s / 1e9:>6.1f} "
                        f"{f0['times'][t] / s:>6.2f}x {r['pred'][t]:>5.2f}x")
        print(f"{name:<8} {r['wbytes'] / 1e6:>8.1f} {f0['wbytes'] / r['wbytes']:>6.2f}x "
              f"{r['err']:>9.2e} " + " ".join(cols))
    print("predicted on " + prof + ": " + ", ".join(
        f"float t={t} {t_float_pred[t] * 1e3:.2f} ms" for t in threads))
    for name in [v[0] for v in variants[1:]]:
        r = res[name]
        if r["nodes"]:
            print(f"  {name}: {r['nq']} products quantized ({', '.join(r['schemes'])}); "
                  f"the guard's per-product error "
                  f"{min(r['nodes']):.3g}..{max(r['nodes']):.3g}; the model's output "
                  f"(logits) error {r['err']:.3g}")
        for t in threads:
            meas = f0["times"][t] / r["times"][t]
            p = r["pred"][t]
            print(f"  {name} t={t}: measured {meas:.2f}x, predicted {p:.2f}x (report; the pass's "
                  f"summary {r['pass_pred'][t]:.2f}x), predicted/measured {p / meas:.2f}: "
                  f"{'same direction' if (meas > 1) == (p > 1) else 'DISAGREE'}")
    if ort_res:
        print("\nonnxruntime on the same model (int8: quantize_dynamic per channel; int4: "
              "MatMulNBits, accuracy_level 4):")
        for name in ("float", "int8", "int4"):
            for t in threads:
                o = ort_res.get((name, t))
                ours = res[name]["times"][t]
                print(f"  {name} t={t}: ours {ours * 1e3:.2f} ms (err {res[name]['err']:.2e}), "
                      f"onnxruntime {o * 1e3:.2f} ms (err {ort_res[(name, 'err')]:.2e}): "
                      f"ours {o / ours:.2f}x as fast")

    print(f"\n--quantize auto on {args.hw}, the same stack:")
    for b in (1, args.auto_batch):
        rj = os.path.join(work, f"auto{b}.json")
        sh([args.rlopt, "report", path, "--batch", str(b), "--hw", args.hw, "-O2", "--quantize",
            "auto", "--max-rel-error", str(args.int4_error), "--format", "json", "-o", rj])
        rems = [rm for rm in json.load(open(rj))["remarks"] if rm["pass"] == "quantize"]
        kinds = {}
        for rm in rems:
            kinds[rm["verdict"]] = kinds.get(rm["verdict"], 0) + 1
        print(f"  batch {b}: " + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())))
        shown = set()
        for rm in rems:  # one remark per verdict and layer position (l0, head, summary)
            key = (rm["verdict"], re.sub(r"^l\d+\.", "", rm["node"] or ""))
            if key in shown:
                continue
            shown.add(key)
            print(f"    {rm['node']}: {rm['verdict']}: {rm['msg']}")


# ---- the single GEMV ----------------------------------------------------------

def run(args, threads, work):
    llc = llc_bytes()
    G = args.size
    if not G:
        G = 6144
        while 4 * G * G < 4 * llc:
            G += 1024
    rng = np.random.default_rng(0)
    W = (rng.standard_normal((G, G)) / np.sqrt(G)).astype(np.float32)
    path = os.path.join(work, "gv.onnx")
    from onnx import helper
    save_model(path, [helper.make_node("MatMul", ["x", "w"], ["y"], name="gemv")], {"w": W},
               [1, G], [1, G])
    print(f"batch-1 GEMV [1,{G}] x [{G},{G}]: {4 * G * G / 1e6:.0f} MB of fp32 weights "
          f"({4 * G * G / llc:.1f}x the {llc >> 20} MiB last-level cache)" if llc else "")

    # machine limit, measured now
    exe = os.path.join(work, "stream_limit")
    sh([args.cc, "-O2", "-march=native", "-pthread", os.path.join(HERE, "stream_limit.c"), "-o", exe])
    lim = kv(sh([exe, "--read"]).stdout)
    probe = None
    if args.probe:
        xml = os.path.join(work, "host.xml")
        sh([args.rlopt, "probe", "-o", xml])
        m = re.search(r"DRAM read ([\d.]+)", open(xml).read())
        probe = float(m.group(1)) if m else None

    variants = [("float", []), ("int8", ["--quantize", "int8"]),
                ("int4", ["--quantize", "int4", "--max-rel-error", str(args.int4_error)])]
    prof = predict_profile(args, work)
    res = {}
    for name, flags in variants:
        d = os.path.join(work, name)
        os.makedirs(d)
        c = os.path.join(d, "gv.c")
        r = sh([args.rlopt, path, "-o", c, "--weights-max", "0", "--hw", args.hw, "--remarks"] + flags)
        rem = remarks(r.stderr, "gemv")
        wbytes = os.path.getsize(os.path.join(d, "gv.weights"))
        exe = os.path.join(d, "bench")
        sh([args.cc, "-std=c11", "-O2", "-pthread", "-DRL_HAVE_THREADS", "-I", d,
            '-DRL_MODEL_HEADER="gv.h"', "-DRL_PREFIX=gv", "-DRL_PREFIX_UC=GV",
            os.path.join(HERE, "timing_harness.c"), c, "-o", exe, "-lm"])
        times = {}
        for t in threads:
            dump = os.path.join(d, f"dump{t}")
            os.makedirs(dump)
            out = kv(sh([exe, "--seconds", str(args.seconds), "--threads", str(t), "--dump", dump,
                         "--weights", os.path.join(d, "gv.weights")], cwd=d).stdout)
            # one thread: its CPU time (a shared machine deschedules it; the
            # wall time then measures the other tenants); more: wall time
            times[t] = out["cpu_median_s"] if t == 1 and args.cpu_time else out["median_s"]
        x = np.fromfile(os.path.join(dump, "input_0.bin"), dtype=np.float32)
        y = np.fromfile(os.path.join(dump, "output_0.bin"), dtype=np.float32)
        ref = x.astype(np.float64) @ W.astype(np.float64)
        err = float(np.linalg.norm(y - ref) / np.linalg.norm(ref))
        pt = {t: report_total(args, prof, path, t, flags, work)[0] for t in threads}
        res[name] = dict(times=times, wbytes=wbytes, err=err, rem=rem[0] if rem else "", pt=pt)

    # onnxruntime on the same product: its quantize_dynamic int8 model, and
    # the MatMulNBits int4 file rlopt writes (accuracy_level 4: int8 dot
    # products on A quantized per block, onnxruntime's fastest CPU path)
    ort_t = {}
    try:
        import onnx
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
        q8 = os.path.join(work, "ort_int8.onnx")
        quantize_dynamic(path, q8, weight_type=QuantType.QInt8)
        q4 = os.path.join(work, "ort_int4.onnx")
        sh([args.rlopt, path, "-o", q4, "--quantize", "int4", "--max-rel-error",
            str(args.int4_error), "--onnx-format", "matmulnbits"])
        m4 = onnx.load(q4)
        for nd in m4.graph.node:
            if nd.op_type == "MatMulNBits":
                nd.attribute.append(onnx.helper.make_attribute("accuracy_level", 4))
        onnx.save(m4, q4)
        x = np.random.default_rng(1).uniform(-1, 1, (1, G)).astype(np.float32)
        import time
        for name, mp in (("ort float", path), ("ort int8", q8), ("ort int4", q4)):
            for t in threads:
                so = ort.SessionOptions()
                so.intra_op_num_threads = t
                sess = ort.InferenceSession(mp, so, providers=["CPUExecutionProvider"])
                for _ in range(2):
                    sess.run(None, {"x": x})
                ts = []
                end = time.monotonic() + args.seconds
                while time.monotonic() < end or len(ts) < 3:
                    c0, w0 = time.thread_time(), time.monotonic()
                    sess.run(None, {"x": x})
                    ts.append(time.thread_time() - c0 if t == 1 and args.cpu_time
                              else time.monotonic() - w0)
                ort_t[(name, t)] = float(np.median(ts))
    except Exception as e:  # the peer is optional
        print(f"(onnxruntime comparison skipped: {type(e).__name__}: {e})")

    print(f"\nmachine: read-only stream (bench/stream_limit.c, this run) "
          f"{lim.get('stream_read_GBps', 0):.1f} GB/s on 1 thread, "
          f"{lim.get('stream_read_all_GBps', 0):.1f} GB/s on {int(lim.get('read_threads', 0))}"
          + (f"; rlopt probe DRAM read {probe:.1f} GB/s" if probe else ""))
    print(f"\n{'weights':<8} {'file MB':>8} {'shrink':>7} {'err':>9} " +
          " ".join(f"{'t=' + str(t) + ' ms':>9} {'GB/s':>6} {'x float':>7} {'pred':>6}"
                   for t in threads))
    f0 = res["float"]
    for name, _ in variants:
        r = res[name]
        cols = []
        for t in threads:
            s = r["times"][t]
            cols.append(f"{s * 1e3:>9.2f} {r['wbytes'] / s / 1e9:>6.1f} "
                        f"{f0['times'][t] / s:>6.2f}x {f0['pt'][t] / r['pt'][t]:>5.2f}x")
        print(f"{name:<8} {r['wbytes'] / 1e6:>8.1f} {f0['wbytes'] / r['wbytes']:>6.2f}x "
              f"{r['err']:>9.2e} " + " ".join(cols))
    print("predicted on " + prof + ": " + ", ".join(
        f"{n} t={t} {res[n]['pt'][t] * 1e3:.3f} ms" for n, _ in variants for t in threads))
    if ort_t:
        print()
        for name in ("float", "int8", "int4"):
            for t in threads:
                o = ort_t.get((f"ort {name}", t))
                if o:
                    ours = res[name]["times"][t]
                    print(f"  {name} t={t}: ours {ours * 1e3:.2f} ms, onnxruntime "
                          f"{'quantize_dynamic ' if name == 'int8' else 'MatMulNBits ' if name == 'int4' else ''}"
                          f"{o * 1e3:.2f} ms: ours {o / ours:.2f}x as fast")
    for name in ("int8", "int4"):
        r = res[name]
        for t in threads:
            meas = f0["times"][t] / r["times"][t]
            p = f0["pt"][t] / r["pt"][t]
            print(f"  {name} t={t}: measured {meas:.2f}x, predicted {p:.2f}x on {prof}, "
                  f"predicted/measured {p / meas:.2f}: "
                  f"{'same direction' if (meas > 1) == (p > 1) else 'DISAGREE'}")

    # auto at batch 1 and 64
    print(f"\n--quantize auto on {args.hw}, MLP 1024 -> 1024 -> 1024:")
    W1 = (rng.standard_normal((1024, 1024)) / 32).astype(np.float32)
    W2 = (rng.standard_normal((1024, 1024)) / 32).astype(np.float32)
    for b in (1, 64):
        p = os.path.join(work, f"mlp{b}.onnx")
        save_model(p, [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
                       helper.make_node("Relu", ["h"], ["hr"], name="relu"),
                       helper.make_node("MatMul", ["hr", "w2"], ["y"], name="fc2")],
                   {"w1": W1, "w2": W2}, [b, 1024], [b, 1024])
        r = sh([args.rlopt, p, "-o", os.path.join(work, f"mlp{b}.c"), "--hw", args.hw,
                "--quantize", "auto", "--max-rel-error", str(args.int4_error), "--remarks"])
        print(f"  batch {b}:")
        for rem in remarks(r.stderr):
            print("    " + rem[len("remark: quantize: "):])


if __name__ == "__main__":
    main()
