#!/usr/bin/env python3
"""Static-shape copies of the real models, for bench_ort.py.

tests/py/test_real_models.py copies the .onnx files of five PyPI packages
into BUILD/real_models/ (see the README's "Real models"); most have a
symbolic batch or image size, which `rlopt MODEL -o X.c` refuses to leave
unbound. This writes copies with the input sizes the test uses into OUT
(default BUILD/real_static/), so that

    build/venv/bin/python bench/real_static.py
    build/venv/bin/python bench/bench_ort.py --rlopt build/rlopt --variants plain \\
        --models $(ls -d build/real_static/*.onnx | paste -sd,)

times each against onnxruntime at 1 and 2 threads. Models whose inputs are
already static (silero's) are left out: they are a few milliseconds of
control flow.

Usage: real_static.py [--build BUILD] [--out OUT]
"""
import argparse
import os
import sys

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))

# model -> the first input's shape (as tests/py/test_real_models.py feeds it)
SHAPES = {
    "ppocr_cls": [1, 3, 48, 192],
    "ppocrv4_rec": [1, 3, 48, 320],
    "ppocrv4_det": [1, 3, 320, 320],
    "ddddocr_ocr": [1, 1, 64, 160],
    "ddddocr_det": [1, 3, 416, 416],
    "nudenet_320n": [1, 3, 320, 320],
    "magika": [1, 2048],
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--out", help="output folder (default BUILD/real_static)")
    args = ap.parse_args()
    src = os.path.join(args.build, "real_models")
    out = args.out or os.path.join(args.build, "real_static")
    if not os.path.isdir(src):
        sys.exit(f"real_static.py: {src} is missing: run tests/py/test_real_models.py first")
    os.makedirs(out, exist_ok=True)
    for name, dims in SHAPES.items():
        path = os.path.join(src, name + ".onnx")
        if not os.path.exists(path):
            print(f"skip {name}: not in {src}")
            continue
        m = onnx.load(path)
        inp = m.graph.input[0]
        shape = inp.type.tensor_type.shape.dim
        if len(shape) != len(dims):
            sys.exit(f"real_static.py: {path}: input '{inp.name}' has rank {len(shape)}, "
                     f"expected {len(dims)}")
        for d, v in zip(shape, dims):
            d.ClearField("dim_param")
            d.dim_value = v
        onnx.save(m, os.path.join(out, name + ".onnx"))
        print(f"{name}: {inp.name} {dims}")


if __name__ == "__main__":
    main()
