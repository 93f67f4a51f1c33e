#!/usr/bin/env python3
"""Write tests/fuzz/corpus_diff: `rlopt diff` pairs in fuzz_diff.c's layout
(options byte, 16-bit little-endian length of BEFORE, BEFORE, AFTER).
Run from the repository root; deterministic."""
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.normpath(os.path.join(here, "..", ".."))
out = os.path.join(here, "corpus_diff")


def rd(p):
    with open(os.path.join(root, p), "rb") as f:
        return f.read()


pairs = {
    "rewrite_tucker2": (0, "examples/rewrites/conv3x3_dense.onnx", "examples/rewrites/conv3x3_tucker2.onnx"),
    "same_twice": (2, "examples/elementwise_chain.onnx", "examples/elementwise_chain.onnx"),
    "symbolic_batch": (1, "examples/tiny_mlp_dynamic.onnx", "examples/tiny_mlp_dynamic.onnx"),
    "interface_differs": (0, "tests/fuzz/corpus/seed_test_add.onnx", "tests/fuzz/corpus/seed_test_matmul_2d.onnx"),
    "conv_vs_gemm": (3, "tests/fuzz/corpus/seed_test_conv_with_strides_padding.onnx",
                     "tests/fuzz/corpus/seed_test_gemm_default_matrix_bias.onnx"),
    "loop_vs_scan": (0, "tests/fuzz/corpus/seed_test_loop11.onnx", "tests/fuzz/corpus/seed_test_scan_sum.onnx"),
}
os.makedirs(out, exist_ok=True)
for name, (flags, a, b) in pairs.items():
    da, db = rd(a), rd(b)
    assert len(da) < 65536
    with open(os.path.join(out, name + ".bin"), "wb") as f:
        f.write(bytes([flags]) + struct.pack("<H", len(da)) + da + db)
with open(os.path.join(out, "short.bin"), "wb") as f:
    f.write(b"\x01\xff")
with open(os.path.join(out, "truncated_before.bin"), "wb") as f:
    f.write(b"\x00\xff\xff" + rd("examples/elementwise_chain.onnx")[:300])
