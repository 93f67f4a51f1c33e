"""The quantized model's output error that `rlopt run --quantize` reports.

The quantize pass measures each product's error against float on its own
calibration rows; what ships is the whole model. `rlopt run MODEL -i X.pb -d
OUT --quantize M` also builds and runs the float model (same passes, no
quantize) on the same inputs and prints, per float output, the relative
Frobenius error ||Yq - Yf|| / ||Yf|| and the largest |Yq - Yf| on stderr and
in OUT/quant_error.json. Here, on a seeded two-layer MLP (256 -> 1024 -> 256,
Relu) with two outputs (the hidden activations and the result) and a batch
of 4 seeded normal rows:

  - the figures in quant_error.json (and the stderr line) are recomputed
    from the quantized output_K.pb against onnxruntime's float outputs on
    the same inputs; they must agree within 1e-4 absolute (our float C and
    onnxruntime's float differ by ~1e-7 relative; the quantization error
    measured is 1e-3 to 1e-1), so a figure computed on the wrong tensors,
    or not computed, fails;
  - int4 (blocks of 32) must show a real error (over 1%), int8 a smaller
    one than int4: a figure of 0 or a mixed-up pair fails.
"""

import json
import os
import re
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

D, B = 256, 4
TOL = 1e-4


def make_model(d):
    rng = np.random.default_rng(7)
    w1 = (rng.standard_normal((D, 4 * D)) / np.sqrt(D)).astype(np.float32)
    w2 = (rng.standard_normal((4 * D, D)) / np.sqrt(4 * D)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["a"], name="act"),
             helper.make_node("MatMul", ["a", "w2"], ["y"], name="fc2")]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, D])],
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [B, 4 * D]),
                           helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, D])],
                          [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    path = os.path.join(d, "mlp.onnx")
    onnx.save(m, path)
    x = rng.standard_normal((B, D)).astype(np.float32)
    rltest.write_pb(os.path.join(d, "x.pb"), x, "x")
    return path, x


def check(args, work, path, x, mode, budget):
    out = os.path.join(work, mode)
    r = rltest.run([args.rlopt, "run", path, "-i", os.path.join(work, "x.pb"), "-d", out,
                    "--quantize", mode, "--max-rel-error", budget], timeout=args.timeout)
    if not r.ok:
        return "fail", r.describe(), None
    try:
        rep = json.load(open(os.path.join(out, "quant_error.json")))
    except (OSError, ValueError) as e:
        return "fail", f"quant_error.json: {e}", None
    ref = rltest.ort_reference(path, {"x": x}, threads=1)
    num = den = 0.0
    for i, (o, yf) in enumerate(zip(rep["outputs"], ref)):
        _, yq = rltest.read_pb(os.path.join(out, f"output_{i}.pb"))
        d = yq.astype(np.float64) - yf.astype(np.float64)
        rel = float(np.linalg.norm(d) / np.linalg.norm(yf.astype(np.float64)))
        mx = float(np.max(np.abs(d)))
        num += float(np.sum(d * d))
        den += float(np.sum(np.square(yf.astype(np.float64))))
        if not (abs(o["rel_error"] - rel) <= TOL and abs(o["max_abs_error"] - mx) <= TOL):
            return "fail", (f"output {o['name']}: reported {o['rel_error']:.6g} (max "
                            f"{o['max_abs_error']:.6g}), recomputed {rel:.6g} (max {mx:.6g})"), None
        line = re.search(rf"output '{o['name']}' against the float model on these inputs: "
                         rf"relative error ([0-9.e+-]+)", r.stderr)
        if not line or abs(float(line.group(1)) - rel) > TOL + 1e-3 * rel:
            return "fail", f"stderr has no (or a wrong) line for output {o['name']}:\n{r.stderr}", None
    allrel = float(np.sqrt(num / den))
    if abs(rep["rel_error"] - allrel) > TOL:
        return "fail", f"overall: reported {rep['rel_error']:.6g}, recomputed {allrel:.6g}", None
    return "pass", (f"{mode}: outputs' error a {rep['outputs'][0]['rel_error']:.4g}, "
                    f"y {rep['outputs'][1]['rel_error']:.4g}, all {rep['rel_error']:.4g} "
                    f"(recomputed against onnxruntime within {TOL:g})"), rep["rel_error"]


def main():
    ap = rltest.make_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if not args.rlopt:
        ap.error("--rlopt is required")
    work = tempfile.mkdtemp(prefix="rlopt-quant-outputs.")
    tally = rltest.Tally()
    try:
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            print("SKIP quant_outputs: onnxruntime is not installed (the reference)")
            tally.add("skip")
            return tally.finish()
        path, x = make_model(work)
        got = {}
        for mode, budget in (("int4", "0.2"), ("int8", "0.02")):
            status, msg, e = check(args, work, path, x, mode, budget)
            got[mode] = e
            tally.add(status)
            print(f"{status.upper():4} quant_outputs_{mode}: {msg}", flush=True)
        if got["int4"] is not None and got["int8"] is not None:
            ok = got["int4"] > 0.01 and 0 < got["int8"] < got["int4"]
            tally.add("pass" if ok else "fail")
            print(f"{'PASS' if ok else 'FAIL'} quant_outputs_order: int4 {got['int4']:.4g} > 1% "
                  f"and > int8 {got['int8']:.4g} > 0", flush=True)
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
