#!/usr/bin/env python3
"""End-to-end check of whole models against onnxruntime.

Models: the nine 'light' models that ship with onnx
(<onnx wheel>/backend/test/data/light/light_*.onnx: AlexNet, DenseNet-121,
Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512, whose
weights are made by ConstantOfShape nodes) and the examples gpt_block, mlp and
resnet_small, generated into a temporary folder by examples/gen_models.py.

For each model: a random normal input per graph input (fixed seed; symbolic
dims bound to 1), the reference from onnxruntime's CPU provider, then

    rlopt run MODEL -i input_0.pb [...] -d OUT [--rlopt-args]

and OUT/output_K.pb compared with the reference (rtol 1e-3, atol 1e-4; same
shape and dtype). Prints one line per model with the max abs/rel error and
the final line "N passed, N failed, N skipped"; exits non-zero on a failure.
"""

import fnmatch
import glob
import os
import shlex
import shutil
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import helper

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

EXAMPLES = ["gpt_block", "mlp", "resnet_small"]


def random_inputs(model, seed):
    """[(name, array)] for the model's real graph inputs, in order."""
    rng = np.random.default_rng(seed)
    feeds = []
    for vi in rltest.graph_inputs(model):
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]
        dt = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if dt == np.bool_:
            a = rng.random(shape) < 0.5
        elif np.issubdtype(dt, np.integer):
            a = rng.integers(0, 10, size=shape).astype(dt)
        else:
            a = rng.standard_normal(shape).astype(dt)
        feeds.append((vi.name, a))
    return feeds


def check_model(name, path, args, extra, work):
    """Returns (status, message)."""
    model = onnx.load(path, load_external_data=False)
    outputs = [o.name for o in model.graph.output]
    feeds = random_inputs(model, args.seed)
    try:
        ref = rltest.ort_reference(path, feeds)
    except Exception as e:  # the oracle cannot run it: nothing to compare with
        return "skip", f"onnxruntime cannot run it: {str(e).splitlines()[0]}"

    d = os.path.join(work, name)
    out = os.path.join(d, "out")
    os.makedirs(out)
    cmd = [args.rlopt, "run", path]
    for k, (iname, a) in enumerate(feeds):
        p = os.path.join(d, f"input_{k}.pb")
        rltest.write_pb(p, a, iname)
        cmd += ["-i", p]
    cmd += ["-d", out] + extra
    r = rltest.run(cmd, timeout=args.timeout)
    secs = f"{r.seconds:.1f} s"
    if not r.ok:
        return "fail", f"rlopt run ({secs}): {r.describe(args.stderr_lines)}"
    err, worst_abs, worst_rel = rltest.compare_outputs(out, outputs, ref, args.rtol, args.atol)
    if err:
        return "fail", f"{err} ({secs})"
    return "pass", f"max abs err {worst_abs:.3g}, max rel err {worst_rel:.3g} ({secs})"


def main():
    ap = rltest.make_parser(__doc__.split("\n\n")[0])
    rltest.add_model_args(ap, "seed of the random inputs")
    args = ap.parse_args()
    if not args.rlopt:
        ap.error("--rlopt is required")
    extra = shlex.split(args.rlopt_args)

    def selected(name):
        return not args.patterns or any(fnmatch.fnmatchcase(name, p) for p in args.patterns)

    work = tempfile.mkdtemp(prefix="rlopt-models.")
    tally = rltest.Tally()
    try:
        models = []
        for p in sorted(glob.glob(os.path.join(rltest.onnx_data_dir(), "light", "light_*.onnx"))):
            models.append((os.path.basename(p)[:-len(".onnx")], p))
        wanted = [m for m in EXAMPLES if selected(m)]
        if wanted:
            ex_dir = os.path.join(work, "examples")
            gen = os.path.join(args.source, "examples", "gen_models.py")
            r = rltest.run([sys.executable, gen, "--out", ex_dir, "--no-data"] + wanted, timeout=600)
            if not r.ok:
                print(f"FAIL examples/gen_models.py: {r.describe()}")
                for m in wanted:
                    tally.add("fail")
            else:
                models += [(m, os.path.join(ex_dir, m + ".onnx")) for m in wanted]
        models = [(n, p) for n, p in models if selected(n)]
        if not models and not tally.failed:
            print("no model matches the -k patterns")
        w = max([len(n) for n, _ in models] + [1])
        for name, path in models:
            t0 = time.monotonic()
            try:
                status, msg = check_model(name, path, args, extra, work)
            except Exception as e:  # a bug here must not hide the other models
                status, msg = "fail", f"driver error: {type(e).__name__}: {e}"
            tally.add(status)
            if args.verbose:
                msg += f" [total {time.monotonic() - t0:.1f} s]"
            print(f"{status.upper():4} {name:<{w}}  {msg}", flush=True)
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
