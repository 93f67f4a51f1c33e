#!/usr/bin/env python3
"""quant_error.py - where the quantized stack's output error comes from.

    python bench/quant_error.py [--layers L] [--hidden D] [--intermediate F]
                                [--vocab V] [--block 32]

Builds bench_quant.py's decoder-style stack (same seed, same weights: L x
{x + W_down(silu(W_gate LN(x)) * W_up LN(x))}, LN, head) and runs float64
forwards of it with some products' weights replaced by their dequantized
copies (numpy re-implementations of rlopt's packers in ir/qweights.c: the
same scales, the same scale search, round half away from zero), so each
line isolates one source of the logits' relative error:

  - which products are quantized (all, only the MLPs, only the head);
  - the scheme (int8 per channel, int8 in blocks, int4 in blocks, int4 with
    zero points, and the int8 per-channel scale chosen for least squared
    error instead of max|w| / 127);
  - fp16 instead of fp32 scales (the scale rounded to half precision);
  - the activations' int16 rounding of the VNNI kernels (x per row to
    max|x| / 32767 before each quantized product).

The weights-only lines are what any kernel would give on these weights;
bench_quant.py measures the generated code's own output against the same
float64 reference (they agree to a few percent of the error itself).
Everything is deterministic; the input is one seeded row, uniform in
[-1, 1) like bench_quant's harness (--input normal: N(0, 1)).
"""
import argparse
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_quant  # noqa: E402


def rnd(x):
    """round half away from zero, as ir/qweights.c"""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def half(s):
    return s.astype(np.float16).astype(np.float32)


def q_int8(w, block, f16, mse=False):
    """w [K, N] -> dequantized; block 0: one scale per output channel"""
    K, N = w.shape
    b = K if block == 0 else block
    wb = w.reshape(K // b, b, N)
    amax = np.abs(wb).max(1, keepdims=True)
    s = amax / np.float32(127)
    if mse:  # least squared error over clipped ranges (0.70 .. 1.00 of max|w|)
        best, bs = None, s
        for f in np.linspace(0.7, 1.0, 16):
            sc = s * np.float32(f)
            sc = half(sc) if f16 else sc
            inv = np.where(sc > 0, 1 / np.where(sc > 0, sc, 1), 0)
            e = ((np.clip(rnd(wb * inv), -127, 127) * sc - wb) ** 2).sum(1, keepdims=True)
            if best is None:
                best, bs = e, sc
            else:
                bs = np.where(e < best, sc, bs)
                best = np.minimum(e, best)
        s = bs
    s = half(s) if f16 else s
    inv = np.where(s > 0, 1 / np.where(s > 0, s, 1), 0)
    return (np.clip(rnd(wb * inv), -127, 127) * s).reshape(K, N)


def q_int4(w, block, f16, asym):
    """ir/qweights.c's int4. Symmetric: scale max|w| / 7, negative when the
    largest weight is positive and larger than the most negative one's
    magnitude (it then lands on code -8), tried at 64/64, 62/64 .. 50/64,
    72/64 .. 66/64 of it. Zero points: (max - min) / 15, then 1 - t/64 of
    it for t = 1..8. Least squared error per block, ties keep the earlier."""
    K, N = w.shape
    wb = w.reshape(K // block, block, N)
    mn = np.minimum(wb.min(1, keepdims=True), 0)
    mx = np.maximum(wb.max(1, keepdims=True), 0)
    if asym:
        s0 = (mx - mn) / np.float32(15)
        fs = [1 - t / 64 for t in range(9)]
    else:
        s0 = np.abs(wb).max(1, keepdims=True) / np.float32(7)
        s0 = np.where(mx > -mn, -s0, s0)
        fs = [(72 - 2 * ((t + 4) % 12)) / 64 for t in range(12)]
    lo = mn

    def deq(s):
        s = half(s) if f16 else s
        inv = np.where(s != 0, 1 / np.where(s != 0, s, 1), 0)
        z = np.clip(rnd(-lo * inv), 0, 15) if asym else np.float32(8)
        return (np.clip(rnd(wb * inv + z), 0, 15) - z) * s

    best, be = None, None
    for f in fs:
        d = deq(s0 * np.float32(f))
        e = ((d - wb) ** 2).sum(1, keepdims=True)
        if best is None:
            best, be = d, e
            continue
        take = e < be
        best = np.where(take, d, best)
        be = np.where(take, e, be)
    return best.reshape(K, N)


def act16(x):
    s = np.abs(x).max(-1, keepdims=True) / 32767
    return rnd(x / np.where(s > 0, s, 1)) * s


def forward(get, x, L, V, quant, which, acts):
    """float64 forward; products in `which` ('mlp', 'head') use quant(w),
    a dict name -> dequantized weight made once per scheme"""
    x = x.astype(np.float64)

    def ln(v, tag):
        mu = v.mean(-1, keepdims=True)
        var = ((v - mu) ** 2).mean(-1, keepdims=True)
        return (v - mu) / np.sqrt(var + 1e-5) * get(f"{tag}.scale") + get(f"{tag}.bias")

    def mm(a, name, part):
        w = np.asarray(get(name))
        if part in which:
            w = quant[name]
            if acts:
                a = act16(a)
        return a @ w.astype(np.float64)

    for i in range(L):
        p = f"l{i}"
        h = ln(x, f"{p}.ln")
        g = mm(h, f"{p}.gate.w", "mlp")
        u = mm(h, f"{p}.up.w", "mlp")
        x = x + mm(g / (1 + np.exp(-g)) * u, f"{p}.down.w", "mlp")
    y = ln(x, "final.ln")
    return mm(y, "head.w", "head") if V else y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=0)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--intermediate", type=int, default=5632)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--quick", action="store_true", help="only the lines the README quotes")
    ap.add_argument("--input", choices=("uniform", "normal"), default="uniform",
                    help="the input row: uniform in [-1, 1) as bench_quant's harness (default), "
                         "or N(0, 1)")
    args = ap.parse_args()
    L = bench_quant.stack_layers(args)
    D, F, V, B = args.hidden, args.intermediate, args.vocab, args.block
    work = tempfile.mkdtemp(prefix="quant-error.")
    try:
        wbytes, get, _ = bench_quant.build_stack(work, L, D, F, V)
        r = np.random.default_rng(1)
        # bench/timing_harness.c fills inputs uniform in [-1, 1): the residual
        # stream starts smaller than with N(0, 1), so the MLPs' share (and
        # their error's) of the logits is larger
        x = (r.uniform(-1, 1, (1, D)) if args.input == "uniform"
             else r.standard_normal((1, D))).astype(np.float32)
        ref = forward(get, x, L, V, None, (), False)
        print(f"stack: {L} x SwiGLU {D} -> {F} -> {D} with residuals, head {D} -> {V}, "
              f"{wbytes / 1e9:.3f} GB fp32; logits relative error vs the float64 forward:")
        rows = [
            ("int8 per channel", lambda w: q_int8(w, 0, False)),
            ("int8 per channel, MSE scale", lambda w: q_int8(w, 0, False, mse=True)),
            (f"int8 blocks of {B}", lambda w: q_int8(w, B, False)),
            (f"int8 blocks of {B}, fp16 scales", lambda w: q_int8(w, B, True)),
            (f"int4 blocks of {B}", lambda w: q_int4(w, B, False, False)),
            (f"int4 blocks of {B}, fp16 scales", lambda w: q_int4(w, B, True, False)),
            (f"int4 blocks of {B} + zero points", lambda w: q_int4(w, B, False, True)),
        ]
        if args.quick:
            rows = [rows[0], rows[2], rows[3], rows[4], rows[5]]
        print(f"{'weights':<36} {'all':>9} {'MLPs only':>10} {'head only':>10} {'all+act16':>10}")
        res = {}
        names = [f"l{i}.{k}.w" for i in range(L) for k in ("gate", "up", "down")] + \
            (["head.w"] if V else [])
        for name, qf in rows:
            deq = {n: qf(np.asarray(get(n))) for n in names}
            e = [bench_quant.rel_err(forward(get, x, L, V, deq, wh, ac), ref)
                 for wh, ac in ((("mlp", "head"), False), (("mlp",), False), (("head",), False),
                                (("mlp", "head"), True))]
            res[name] = e
            print(f"{name:<36} {e[0]:>9.3%} {e[1]:>10.3%} {e[2]:>10.3%} {e[3]:>10.3%}", flush=True)
        # the mix llama.cpp uses: 4-bit MLPs, a wider output head
            del deq
        deq = {n: q_int4(np.asarray(get(n)), B, True, False) if n != "head.w" else
               q_int8(np.asarray(get(n)), B, True) for n in names}
        e = bench_quant.rel_err(forward(get, x, L, V, deq, ("mlp", "head"), False), ref)
        print(f"{'int4 MLPs + int8/block head, fp16 sc':<36} {e:>9.3%}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
