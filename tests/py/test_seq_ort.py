#!/usr/bin/env python3
"""The recurrent and signal family against onnxruntime, beyond the node tests.

The ONNX node tests cover RNN, GRU and LSTM only forward, with default
activations and full-length sequences; DFT and STFT only real input and
default lengths; TfIdfVectorizer only TF. Each case here is a small model
built with onnx.helper for what they leave out: reverse and bidirectional
layers, batch-first layout, per-row sequence_lens, initial states, clip,
non-default activations with alpha/beta, GRU's linear_before_reset, LSTM's
input_forget and Y_c; DFT with complex input, a dft_length that pads or
truncates, odd irfft lengths and a constant axis input; STFT of a complex
signal; Det of singular and pivoting matrices; TfIdfVectorizer IDF/TFIDF
with weights and trigrams; TreeEnsemble's average/min/max aggregates and
missing-value routing; the training optimizers at step 0 and later.

The reference is onnxruntime (graph optimizations off) where it runs the
op, else onnx's reference evaluator (the training domain). `rlopt run` at
-O2 and -O0 must match it within rtol 1e-3, atol 1e-5. Ends with
"N passed, N failed, N skipped"; exits non-zero on a failure. Cases named
*split* (a step's GEMV split across threads) must also give the same bytes
with --threads 1 and 2.
"""

import fnmatch
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

F32 = TensorProto.FLOAT
I64 = TensorProto.INT64
I32 = TensorProto.INT32


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=(), opsets=(("", 22),)):
    g = helper.make_graph(nodes, "seq", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                          producer_name="test_seq_ort")
    m.ir_version = 10
    return m


# ---- recurrent layers --------------------------------------------------------


def rnn_case(op, direction="forward", layout=0, S=4, Bt=3, I=5, H=6, lens=None, h0=False,
             c0=False, peep=False, clip=None, acts=None, alpha=None, beta=None, lbr=None,
             input_forget=None, outs=("Y", "Y_h", "Y_c"), bias=True, fan_in=False):
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    D = 2 if direction == "bidirectional" else 1
    xs = [Bt, S, I] if layout else [S, Bt, I]
    ins = [vi("X", F32, xs), vi("W", F32, [D, G * H, I]), vi("R", F32, [D, G * H, H])]
    names = ["X", "W", "R"]
    feeds = {}
    if fan_in:
        # weights scaled by 1/sqrt(fan-in), as trained layers are: with standard normal
        # weights over 128 inputs and units, rlopt (before and after its projections were
        # split across threads) and onnxruntime parted by up to 1.1e-3 on outputs of 0.09
        # within 12 GRU steps, 4e-5 on 1.6e-3 within 16 LSTM steps
        rng = np.random.default_rng(7)
        feeds["W"] = (rng.standard_normal([D, G * H, I]) / np.sqrt(I)).astype(np.float32)
        feeds["R"] = (rng.standard_normal([D, G * H, H]) / np.sqrt(H)).astype(np.float32)
    if bias:
        ins.append(vi("B", F32, [D, 2 * G * H]))
    names.append("B" if bias else "")
    if lens is not None:
        ins.append(vi("L", I32, [Bt]))
        feeds["L"] = np.array(lens, dtype=np.int32)
    names.append("L" if lens is not None else "")
    hs = [Bt, D, H] if layout else [D, Bt, H]
    if h0:
        ins.append(vi("H0", F32, hs))
    names.append("H0" if h0 else "")
    if op == "LSTM":
        if c0:
            ins.append(vi("C0", F32, hs))
        names.append("C0" if c0 else "")
        if peep:
            ins.append(vi("P", F32, [D, 3 * H]))
        names.append("P" if peep else "")
    while names and names[-1] == "":
        names.pop()
    attrs = {"hidden_size": H, "direction": direction, "layout": layout}
    for k, v in (("clip", clip), ("activations", acts), ("activation_alpha", alpha),
                 ("activation_beta", beta), ("linear_before_reset", lbr),
                 ("input_forget", input_forget)):
        if v is not None:
            attrs[k] = v
    ys = [Bt, S, D, H] if layout else [S, D, Bt, H]
    n_out = 3 if op == "LSTM" else 2
    onames = [o if o in outs else "" for o in ("Y", "Y_h", "Y_c")[:n_out]]
    outputs = [vi(o, F32, ys if o == "Y" else hs) for o in onames if o]
    while onames[-1] == "":
        onames.pop()
    node = helper.make_node(op, names, onames, **attrs)
    return model([node], ins, outputs), feeds


RNN_CASES = {
    "rnn_bidir_relu_lens": lambda: rnn_case("RNN", "bidirectional", lens=[4, 2, 3], h0=True,
                                            acts=["Relu", "Tanh"]),
    "rnn_reverse_layout1_clip": lambda: rnn_case("RNN", "reverse", layout=1, clip=0.7),
    "rnn_leakyrelu_alpha": lambda: rnn_case("RNN", acts=["LeakyRelu"], alpha=[0.3], bias=False),
    "gru_bidir_lbr_lens": lambda: rnn_case("GRU", "bidirectional", lens=[1, 4, 0], h0=True,
                                           lbr=1),
    "gru_reverse_hardsigmoid": lambda: rnn_case("GRU", "reverse", acts=["HardSigmoid", "Softsign"],
                                                alpha=[0.3], beta=[0.4]),
    "gru_layout1_clip": lambda: rnn_case("GRU", layout=1, clip=1.5, h0=True),
    "lstm_bidir_peep_lens": lambda: rnn_case("LSTM", "bidirectional", lens=[3, 4, 1], h0=True,
                                             c0=True, peep=True),
    "lstm_reverse_forget_clip": lambda: rnn_case("LSTM", "reverse", input_forget=1, clip=2.0,
                                                 peep=True),
    "lstm_layout1_bidir": lambda: rnn_case("LSTM", "bidirectional", layout=1, h0=True, c0=True),
    # whole vectors of units: GRU's vector update (rl_vsigmoid, rl_vtanh)
    "gru_h32_bidir_lbr_lens": lambda: rnn_case("GRU", "bidirectional", H=32, lens=[1, 4, 0],
                                               h0=True, lbr=1),
    "gru_h32_clip_nobias": lambda: rnn_case("GRU", H=32, clip=1.5, bias=False, h0=True),
    # a step's GEMVs split across threads (rows x H >= 65536: rnn_gemv)
    "gru_h256_split_gemv": lambda: rnn_case("GRU", S=3, Bt=2, I=8, H=256, h0=True),
    "lstm_h128_split_gemv": lambda: rnn_case("LSTM", "bidirectional", S=3, Bt=2, I=8, H=128,
                                             peep=True, lens=[3, 2]),
    # the input projections' SGEMM blocks split across threads (rnn_xw: 2 or more blocks,
    # which cg_gemm_plan makes from 4 MFLOP)
    "lstm_h128_split_xw": lambda: rnn_case("LSTM", S=16, Bt=2, I=128, H=128, h0=True, c0=True,
                                           fan_in=True),
    "gru_h128_split_xw": lambda: rnn_case("GRU", "bidirectional", S=12, Bt=2, I=128, H=128,
                                          lens=[12, 9], fan_in=True),
    "lstm_yc_only": lambda: rnn_case("LSTM", outs=("Y_c",)),
    # H a whole number of 16-float vectors: the vector cell (rl_vsigmoid, rl_vtanh)
    "lstm_h16_bidir_peep_clip_lens": lambda: rnn_case("LSTM", "bidirectional", H=16, lens=[3, 4, 1],
                                                      h0=True, c0=True, peep=True, clip=3.0),
    "lstm_h32_reverse_forget_layout1": lambda: rnn_case("LSTM", "reverse", layout=1, H=32, I=20,
                                                        input_forget=1),
    "lstm_acts": lambda: rnn_case("LSTM", acts=["HardSigmoid", "Elu", "Softplus"], alpha=[0.25, 0.9],
                                  beta=[0.45]),
}


# ---- DFT, STFT, Det ----------------------------------------------------------


def dft_case(shape, opset=20, axis=None, length=None, inverse=0, onesided=0, out_len=None):
    ins = [vi("x", F32, shape)]
    inits = []
    names = ["x", ""]
    if length is not None:
        inits.append(numpy_helper.from_array(np.array(length, dtype=np.int64), "len"))
        names[1] = "len"
    attrs = {"inverse": inverse, "onesided": onesided}
    if opset >= 20:
        if axis is not None:
            inits.append(numpy_helper.from_array(np.array(axis, dtype=np.int64), "axis"))
            names.append("axis")
    elif axis is not None:
        attrs["axis"] = axis
    while names[-1] == "":
        names.pop()
    node = helper.make_node("DFT", names, ["y"], **attrs)
    return model([node], ins, [vi("y", F32, None)], inits, (("", opset),)), {}


def stft_case(n=64, cplx=False, frame=16, step=6, window=True, onesided=1):
    ins = [vi("s", F32, [2, n, 2 if cplx else 1])]
    inits = [numpy_helper.from_array(np.array(step, dtype=np.int64), "step")]
    names = ["s", "step", "", ""]
    if window:
        w = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(frame) / frame)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, "win"))
        names[2] = "win"
    else:
        inits.append(numpy_helper.from_array(np.array(frame, dtype=np.int64), "flen"))
        names[3] = "flen"
    while names[-1] == "":
        names.pop()
    node = helper.make_node("STFT", names, ["y"], onesided=onesided)
    return model([node], ins, [vi("y", F32, None)], inits, (("", 17),)), {}


def det_case():
    a = np.random.default_rng(3).standard_normal((5, 4, 4)).astype(np.float32)
    a[1, 2] = a[1, 0] * 2          # singular
    a[2, 0, 0] = 0                 # needs a pivot
    a[3] = np.eye(4)[[1, 0, 3, 2]]  # a permutation: det 1
    ins = [vi("x", F32, [5, 4, 4])]
    return model([helper.make_node("Det", ["x"], ["y"])], ins, [vi("y", F32, [5])]), {"x": a}


SIGNAL_CASES = {
    "dft_complex_pad": lambda: dft_case([2, 6, 3, 2], axis=1, length=9),
    "dft_real_truncate_onesided": lambda: dft_case([3, 11, 1], axis=1, length=8, onesided=1),
    "dft_default_axis": lambda: dft_case([2, 4, 7, 2]),
    "dft_irfft_odd": lambda: dft_case([2, 5, 3, 2], axis=1, length=9, inverse=1, onesided=1),
    "dft_opset17_inverse_axis2": lambda: dft_case([2, 3, 8, 2], opset=17, axis=2, inverse=1),
    "stft_window": lambda: stft_case(),
    "stft_complex_twosided": lambda: stft_case(cplx=True, onesided=0, window=False, frame=10,
                                               step=7),
    "det_pivots": det_case,
}


# ---- TfIdfVectorizer, ai.onnx.ml ---------------------------------------------


def tfidf_case(mode, weights=True, mn=1, mx=3, skip=2):
    pool = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 2, 3, 4]  # 4 unigrams, 3 bigrams, 1 trigram (2 3 4)
    attrs = dict(mode=mode, min_gram_length=mn, max_gram_length=mx, max_skip_count=skip,
                 ngram_counts=[0, 4, 10], ngram_indexes=[0, 1, 2, 3, 7, 4, 5, 6],
                 pool_int64s=pool)
    if weights:
        attrs["weights"] = [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75, 2.5]
    x = np.array([[2, 3, 4, 5, 6, 7, 8, 6, 7, 2, 3, 4], [4, 5, 6, 2, 9, 3, 4, 5, 2, 3, 9, 4]],
                 dtype=np.int64)
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)
    return model([node], [vi("x", I64, [2, 12])], [vi("y", F32, [2, 8])], (), (("", 9),)), {"x": x}


def tree_case(agg, miss=False):
    # two trees over 3 features, 3 targets
    attrs = dict(
        n_targets=3, aggregate_function=agg, post_transform=0, tree_roots=[0, 3],
        nodes_featureids=[0, 1, 2, 2, 0],
        nodes_modes=numpy_helper.from_array(np.array([0, 3, 1, 4, 2], dtype=np.uint8), "m"),
        nodes_splits=numpy_helper.from_array(np.array([0.1, -0.3, 0.5, 0.0, -0.2],
                                                      dtype=np.float32), "s"),
        nodes_truenodeids=[1, 0, 2, 0, 4], nodes_trueleafs=[0, 1, 1, 1, 1],
        nodes_falsenodeids=[2, 1, 3, 4, 5], nodes_falseleafs=[0, 1, 1, 0, 1],
        leaf_targetids=[0, 1, 2, 0, 1, 2], leaf_weights=numpy_helper.from_array(
            np.array([1.5, -2.0, 0.25, 4.0, 3.0, -1.0], dtype=np.float32), "w"))
    if miss:
        attrs["nodes_missing_value_tracks_true"] = [1, 0, 1, 0, 1]
    x = np.random.default_rng(7).standard_normal((8, 3)).astype(np.float32)
    x[0, 0] = np.nan
    x[1, 2] = np.nan
    x[2, 2] = 0.0
    node = helper.make_node("TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", **attrs)
    return model([node], [vi("x", F32, [8, 3])], [vi("y", F32, [8, 3])], (),
                 (("", 21), ("ai.onnx.ml", 5))), {"x": x}


def ml_small_case():
    nodes = [helper.make_node("Binarizer", ["x"], ["b"], domain="ai.onnx.ml", threshold=-0.2),
             helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["z"], domain="ai.onnx.ml")]
    ins = [vi("x", F32, [2, 3, 5]), vi("i", I64, [4])]
    outs = [vi("b", F32, [2, 3, 5]), vi("z", F32, [2, 3, 4])]
    return model(nodes, ins, outs, (), (("ai.onnx.ml", 1),)), {"i": np.array([4, 0, 2, 4])}


ML_CASES = {
    "tfidf_idf_trigrams": lambda: tfidf_case("IDF"),
    "tfidf_tfidf_weights": lambda: tfidf_case("TFIDF"),
    "tfidf_idf_noweights_skip0": lambda: tfidf_case("IDF", weights=False, skip=0),
    "tree_average_missing": lambda: tree_case(0, miss=True),
    "tree_min": lambda: tree_case(2),
    "tree_max": lambda: tree_case(3),
    "ml_binarizer_afe": ml_small_case,
}


# ---- training optimizers ---------------------------------------------------------


def optim_case(op, t, **attrs):
    per = {"Adagrad": ["X", "G", "H"], "Adam": ["X", "G", "V", "H"], "Momentum": ["X", "G", "V"]}[op]
    shapes = [[3], [2, 2]]
    ins = [vi("R", F32, []), vi("T", I64, [])]
    names = ["R", "T"]
    feeds = {"R": np.array(0.1, dtype=np.float32), "T": np.array(t, dtype=np.int64)}
    for p in per:
        for k, s in enumerate(shapes):
            ins.append(vi(f"{p}{k}", F32, s))
            names.append(f"{p}{k}")
            if p in ("H",):
                feeds[f"{p}{k}"] = np.abs(np.random.default_rng(k).standard_normal(s)).astype(np.float32)
    outs = []
    for p in per[:1] + per[2:]:
        for k, s in enumerate(shapes):
            outs.append(vi(f"{p}{k}_new", F32, s))
    node = helper.make_node(op, names, [o.name for o in outs], domain="ai.onnx.preview.training",
                            **attrs)
    return model([node], ins, outs, (), (("ai.onnx.preview.training", 1),)), feeds


TRAIN_CASES = {
    "adagrad_t3": lambda: optim_case("Adagrad", 3, decay_factor=0.2, epsilon=1e-4,
                                     norm_coefficient=0.01),
    "adam_t0": lambda: optim_case("Adam", 0, alpha=0.8, beta=0.9, epsilon=1e-3),
    "adam_t5_post": lambda: optim_case("Adam", 5, alpha=0.8, beta=0.95, epsilon=1e-3,
                                       norm_coefficient=0.02, norm_coefficient_post=0.1),
    "momentum_t0": lambda: optim_case("Momentum", 0, alpha=0.9, beta=0.5, mode="standard",
                                      norm_coefficient=0.0),
    "nesterov_t2": lambda: optim_case("Momentum", 2, alpha=0.9, beta=0.5, mode="nesterov",
                                      norm_coefficient=0.05),
}

CASES = {**RNN_CASES, **SIGNAL_CASES, **ML_CASES, **TRAIN_CASES}


# ---- running -----------------------------------------------------------------------


def make_feeds(m, given, rng):
    feeds = []
    for v in rltest.graph_inputs(m):
        if v.name in given:
            feeds.append((v.name, np.asarray(given[v.name])))
            continue
        tt = v.type.tensor_type
        shape = [d.dim_value for d in tt.shape.dim]
        dt = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        feeds.append((v.name, rng.standard_normal(shape).astype(dt)))
    return feeds


def layout0_twin(m, feeds):
    """onnxruntime runs recurrent layers only with layout 0: the same node
    with layout 0, inputs transposed to it, and a function that transposes
    the outputs back."""
    t = onnx.ModelProto()
    t.CopyFrom(m)
    node = t.graph.node[0]
    for a in node.attribute:
        if a.name == "layout":
            a.i = 0
    swap = {"X": (1, 0, 2), "H0": (1, 0, 2), "C0": (1, 0, 2)}
    for v in t.graph.input:
        if v.name in swap:
            d = v.type.tensor_type.shape.dim
            d[0].dim_value, d[1].dim_value = d[1].dim_value, d[0].dim_value
    for v in t.graph.output:
        d = v.type.tensor_type.shape.dim
        if v.name == "Y":
            dims = [x.dim_value for x in d]
            for k, x in enumerate([dims[1], dims[2], dims[0], dims[3]]):
                d[k].dim_value = x
        else:
            d[0].dim_value, d[1].dim_value = d[1].dim_value, d[0].dim_value
    f2 = [(n, a.transpose(swap[n]) if n in swap else a) for n, a in feeds]
    outs = [v.name for v in t.graph.output]

    def back(res):
        return [r.transpose(2, 0, 1, 3) if n == "Y" else r.transpose(1, 0, 2)
                for n, r in zip(outs, res)]
    return t, f2, back


def reference(path, m, feeds):
    node = m.graph.node[0]
    if node.op_type in ("RNN", "GRU", "LSTM") and any(a.name == "layout" and a.i == 1
                                                        for a in node.attribute):
        t, f2, back = layout0_twin(m, feeds)
        tp = path + ".layout0.onnx"
        onnx.save(t, tp)
        res, who = reference(tp, t, f2)
        return back(res), who + " (layout 0, transposed)"
    if not any(o.domain == "ai.onnx.preview.training" for o in m.opset_import):
        try:
            import onnxruntime as ort

            so = ort.SessionOptions()
            so.log_severity_level = 3
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            return sess.run(None, dict(feeds)), "onnxruntime"
        except ImportError:
            pass
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(m).run(None, dict(feeds)), "onnx reference"


def rlopt_run(args, path, feeds, d, level, extra=()):
    out = os.path.join(d, f"out{level}" + "".join(extra))
    os.makedirs(out)
    cmd = [args.rlopt, "run", path, level, *extra]
    for k, (n, a) in enumerate(feeds):
        p = os.path.join(d, f"in_{k}.pb")
        rltest.write_pb(p, a, n)
        cmd += ["-i", p]
    cmd += ["-d", out]
    r = rltest.run(cmd, timeout=args.timeout)
    if not r.ok:
        return None, f"rlopt run {level}: {r.describe()}"
    got = []
    k = 0
    while os.path.exists(os.path.join(out, f"output_{k}.pb")):
        got.append(rltest.read_pb(os.path.join(out, f"output_{k}.pb"))[1])
        k += 1
    return got, None


def check_case(name, fn, args, work):
    m, given = fn()
    d = os.path.join(work, name)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    onnx.save(m, path)
    feeds = make_feeds(m, given, np.random.default_rng(args.seed))
    try:
        ref, who = reference(path, m, feeds)
    except Exception as e:
        return "fail", f"the reference cannot run the case: {str(e).splitlines()[0]}"
    for level in ("-O2", "-O0"):
        got, err = rlopt_run(args, path, feeds, d, level)
        if err:
            return "fail", err
        if len(got) != len(ref):
            return "fail", f"rlopt run {level}: {len(got)} outputs, {who} gives {len(ref)}"
        for k, (a, e) in enumerate(zip(got, ref)):
            e = np.asarray(e)
            ok, msg, _, _ = rltest.compare(np.asarray(a), e.astype(a.dtype) if e.dtype != a.dtype
                                           and e.dtype == np.float64 else e,
                                           rtol=args.rtol, atol=args.atol)
            if not ok:
                return "fail", f"rlopt run {level}: output {k} against {who}: {msg}"
    if "split" in name:
        # work split across threads: the same bytes at 1 and 2 threads
        outs = []
        for t in ("1", "2"):
            got, err = rlopt_run(args, path, feeds, d, "-O2", ("--threads", t))
            if err:
                return "fail", err
            outs.append(got)
        for k, (a, b) in enumerate(zip(*outs)):
            if a.tobytes() != b.tobytes():
                return "fail", f"output {k} differs between 1 and 2 threads"
    return "pass", ""


def main():
    ap = rltest.make_parser(__doc__.split("\n\n")[0])
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="run only cases whose name matches this fnmatch pattern (repeatable)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per rlopt call")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()
    if not args.rlopt:
        ap.error("--rlopt is required")
    tally = rltest.Tally()
    work = tempfile.mkdtemp(prefix="rl_seq_")
    try:
        for name, fn in CASES.items():
            if args.patterns and not any(fnmatch.fnmatch(name, p) for p in args.patterns):
                continue
            status, why = check_case(name, fn, args, work)
            tally.add(status)
            if status != "pass" or args.verbose:
                print(f"{status.upper()} {name}{': ' + why if why else ''}", flush=True)
    finally:
        if args.keep:
            print(f"work folder: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
