#!/usr/bin/env python3
"""The CUDA backend's numerics without a GPU.

1. Every example model with reference data (examples/NAME.onnx and
   examples/NAME_data/) through

       rlopt run NAME.onnx -i input_0.pb -d OUT --target cuda --emulate

   compared with the expected outputs at the conformance defaults (rtol 1e-3,
   atol 1e-7), the tolerances the C backend is held to.
2. A subset of the ONNX backend node tests (the operators the CUDA backend
   has its own kernels for, and some that run the C emitter's loop nest on
   the GPU) through tests/py/test_conformance.py with
   --rlopt-args="--target cuda --emulate" and the operator list of
   `rlopt ops --target cuda`.

Emulation builds the same .cu with g++ -DRL_CUDA_EMULATE and runs every block
and thread of every kernel on the CPU. Ends with "N passed, N failed, N skipped".
"""

import glob
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rltest  # noqa: E402

# ops with a CUDA kernel of their own (elementwise, fused groups, MatMul,
# Gemm, Conv) and a few shape/normalization ops that run the C loop nest
SUBSET = [
    "test_add*", "test_mul_bcast*", "test_sub*", "test_div_bcast*", "test_relu*",
    "test_sigmoid*", "test_tanh*", "test_erf*", "test_gelu*", "test_clip*", "test_cast_FLOAT_to_FLOAT16*",
    "test_where*", "test_and*", "test_matmul_*", "test_gemm*", "test_conv_*", "test_basic_conv*",
    "test_softmax_axis*", "test_layer_normalization_2d*", "test_transpose_all*", "test_concat_2d*",
    "test_gather_0*", "test_reduce_sum_default*", "test_maxpool_2d_default*",
]


def main():
    ap = rltest.make_parser(__doc__)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args()
    rlopt = os.path.abspath(args.rlopt)
    tally = rltest.Tally()
    with tempfile.TemporaryDirectory(prefix="rlopt-cuda-emu-") as tmp:
        # 1. the examples
        for model in sorted(glob.glob(os.path.join(args.source, "examples", "*.onnx"))):
            name = os.path.basename(model)[:-5]
            data = os.path.join(args.source, "examples", name + "_data")
            if not os.path.isdir(data):
                continue
            ins = sorted(glob.glob(os.path.join(data, "input_*.pb")))
            out = os.path.join(tmp, name)
            cmd = [rlopt, "run", model, "-d", out, "--target", "cuda", "--emulate"]
            for p in ins:
                cmd += ["-i", p]
            r = rltest.run(cmd, timeout=300)
            if not r.ok:
                print(f"FAIL example {name}: {r.describe()}")
                tally.add("fail")
                continue
            bad = []
            for exp in sorted(glob.glob(os.path.join(data, "output_*.pb"))):
                _, e = rltest.read_pb(exp)
                _, a = rltest.read_pb(os.path.join(out, os.path.basename(exp)))
                ok, msg, _, _ = rltest.compare(a, e)
                if not ok:
                    bad.append(f"{os.path.basename(exp)}: {msg}")
            if bad:
                print(f"FAIL example {name}: " + "; ".join(bad))
                tally.add("fail")
            else:
                print(f"ok   example {name} (emulated CUDA matches the reference)")
                tally.add("pass")
        # 2. the node-test subset
        ops = rltest.run([rlopt, "ops", "--target", "cuda"], timeout=60)
        if not ops.ok:
            print(f"FAIL rlopt ops --target cuda: {ops.describe()}")
            tally.add("fail")
            return tally.finish()
        ops_file = os.path.join(tmp, "cuda_ops.txt")
        with open(ops_file, "w") as f:
            f.write(ops.stdout)
        conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_conformance.py")
        cmd = [sys.executable, "-B", conf, "--rlopt", rlopt, "--source", args.source,
               "-j", str(args.jobs), "--ops-file", ops_file,
               "--rlopt-args=--target cuda --emulate"]
        for k in SUBSET:
            cmd += ["-k", k]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        lines = p.stdout.strip().splitlines()
        for line in lines:
            if line.startswith("FAIL") or line.startswith("    "):
                print(line)
        last = lines[-1] if lines else "(no output)"
        print(f"node tests through --target cuda --emulate: {last}")
        try:
            np_, nf, ns = (int(w) for w in last.replace(",", "").split()[0:6:2])
        except ValueError:
            print(p.stderr[-2000:])
            np_, nf, ns = 0, 1, 0
        tally.passed += np_
        tally.failed += nf
        tally.skipped += ns
        if np_ < 100:
            print(f"only {np_} node tests passed through the CUDA emulation (expected >= 100)")
            tally.add("fail")
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
