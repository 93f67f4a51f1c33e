#!/usr/bin/env bash
# gpu_check.sh - the CUDA backend on a real GPU, in one call (issue 12).
#
#   bench/gpu_check.sh [--compile-only] [BUILD_DIR]        (default BUILD_DIR: build)
#
# Meant for a session that is lent a GPU (an H200): one prepared run, about
# 100 s there (bench/gpu_pack.sh packs a built rlopt for a machine that cannot
# build it). It
#   1. builds rlopt if BUILD_DIR has none;
#   2. writes the sweep's models (build/venv's onnx): fused elementwise
#      y = 2x + 1 over 64 MB, 256 MB, 1 GB and 4 GB of x; a batch-1 GEMV
#      1 x 8192 by 8192 x 8192 in float32 and with --quantize int8 / int4
#      (int4 with --max-rel-error 0.1: these normal weights miss the default
#      1e-2 at 4 bits, and the node would stay float);
#      a 4096^3 float16 GEMM (tensor cores), and the same model written with
#      --cuda-library cublas (the baseline); a chain of 100 kernels (-O0, so
#      nothing fuses) built twice: replayed as a CUDA graph and --launch eager;
#   3. emits each .cu with rlopt and compiles it with a small timing driver
#      (MODEL_run_resident: no copies), plus a cuBLAS float16 GEMM and a
#      device-to-device copy for the measured HBM bandwidth;
#   4. on a GPU: runs the examples with `rlopt run --target cuda` against the
#      C backend's outputs, times every sweep model (the minimum over reps),
#      and prints measured against predicted time (`rlopt report --hw h200`
#      with the same -O level and options as the .cu)
#      per kernel with the issue's targets PASS/FAIL:
#        fused elementwise >= 85% of the measured HBM bandwidth,
#        batch-1 GEMV >= 80% of it, graph replay < 1 us per kernel on the
#        100-kernel chain, float16 GEMM >= 60% of cuBLAS in the same run
#        (cuBLAS: the gemm16 model built with --cuda-library cublas, timed by
#        the same driver; ref.cu's direct cublasGemmEx is printed beside it).
# Without a GPU (or with --compile-only) it stops after step 3 with
# "no GPU: ..." and exit status 3: everything compiled (nvcc -arch=sm_90),
# nothing measured. Exit 0: all checks ran and passed; 1: a check failed;
# 2: a build or run step failed.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
COMPILE_ONLY=0
if [ "${1:-}" = "--compile-only" ]; then COMPILE_ONLY=1; shift; fi
B=$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd || echo "${1:-$ROOT/build}")
NVCC=$(command -v nvcc || ls -d /usr/local/cuda*/bin/nvcc 2>/dev/null | sort | tail -1)
PY="$B/venv/bin/python"; [ -x "$PY" ] || PY=python3
W=$(mktemp -d /tmp/rlopt-gpu-check.XXXXXX)
trap 'rm -rf "$W"' EXIT
die() { echo "gpu_check: $*" >&2; exit 2; }
[ -n "$NVCC" ] || die "nvcc not found (install the CUDA toolkit, e.g. the cuda-toolkit package)"
if [ ! -x "$B/rlopt" ]; then
  cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build "$B" -j"$(nproc)" --target rlopt >/dev/null || die "building rlopt failed"
fi
RL="$B/rlopt"
GPU=0
if [ $COMPILE_ONLY = 0 ] && command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; then
  GPU=1
fi
ARCH=sm_90; [ $GPU = 1 ] && ARCH=native
cd "$W" || die "no work folder"
echo "gpu_check: work in $W, nvcc $("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), -arch=$ARCH"

# ---- 2. the sweep's models ---------------------------------------------------
"$PY" - <<'EOF' || die "writing the models failed (onnx in $PY?)"
import numpy as np, onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
def save(name, nodes, ins, outs, inits=()):
    g = h.make_graph(nodes, name, ins, outs, list(inits))
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8), name + ".onnx")
def vi(n, t, s): return h.make_tensor_value_info(n, t, s)
two, one = nh.from_array(np.float32(2), "two"), nh.from_array(np.float32(1), "one")
for tag, mb in (("64M", 64), ("256M", 256), ("1G", 1024), ("4G", 4096)):
    n = mb << 18  # floats in mb MiB
    save("ew_" + tag, [h.make_node("Mul", ["x", "two"], ["t"]), h.make_node("Add", ["t", "one"], ["y"])],
         [vi("x", T.FLOAT, [n])], [vi("y", T.FLOAT, None)], [two, one])
w = (np.random.default_rng(1).standard_normal((8192, 8192)) * 0.02).astype(np.float32)
save("gemv", [h.make_node("MatMul", ["a", "w"], ["y"])], [vi("a", T.FLOAT, [1, 8192])],
     [vi("y", T.FLOAT, None)], [nh.from_array(w, "w")])
save("gemm16", [h.make_node("MatMul", ["a", "b"], ["y"])],
     [vi("a", T.FLOAT16, [4096, 4096]), vi("b", T.FLOAT16, [4096, 4096])], [vi("y", T.FLOAT16, None)])
nodes, prev = [], "x"
for i in range(100):
    nodes.append(h.make_node("Sigmoid" if i % 2 else "Neg", [prev], [f"t{i}"]))
    prev = f"t{i}"
nodes[-1].output[0] = "y"
save("chain", nodes, [vi("x", T.FLOAT, [1024])], [vi("y", T.FLOAT, None)])
EOF

# ---- 3. emit and compile -------------------------------------------------------
# name  model  rlopt options
CASES="ew_64M ew_64M
ew_256M ew_256M
ew_1G ew_1G
ew_4G ew_4G
gemv gemv
gemv_int8 gemv --quantize int8
gemv_int4 gemv --quantize int4 --max-rel-error 0.1
gemm16_cublas gemm16 --cuda-library cublas
gemm16 gemm16
chain_graph chain -O0
chain_eager chain -O0 --launch eager"
cat >driver.cu <<'EOF'
/* timing driver: MODEL_init, one run on random inputs, then the minimum over
 * tries of MODEL_run_resident(reps) (no copies), printed in seconds per run */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include MODEL_H
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define F(s) CAT(MODEL, s)
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 10, nin = NIN, nout = NOUT;
    void *in[16], *out[16];
    for (int i = 0; i < nin; i++) {
        size_t n = F(_inputs)[i].nbytes;
        in[i] = malloc(n);
        if (!in[i]) return 2;
        unsigned s = 12345u + i;
        if (F(_inputs)[i].onnx_dtype == 10) /* float16: values in [-1, 1) */
            for (size_t k = 0; k < n / 2; k++) { s = s * 1103515245u + 12345u; ((uint16_t *)in[i])[k] = (uint16_t)(0x3800 | ((s >> 16) & 0x3ff) | ((s >> 8) & 0x8000)); }
        else
            for (size_t k = 0; k < n / 4; k++) { s = s * 1103515245u + 12345u; ((float *)in[i])[k] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f; }
    }
    for (int i = 0; i < nout; i++)
        if (!(out[i] = malloc(F(_outputs)[i].nbytes))) return 2;
    if (F(_init)(NULL) || F(_run_v)((const void *const *)in, out) || F(_run_resident)(2)) {
        fprintf(stderr, "run failed: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 2;
    }
    double best = 1e30;
    for (int t = 0; t < 5; t++) {
        double t0 = now();
        if (F(_run_resident)(reps)) return 2;
        double dt = (now() - t0) / reps;
        best = dt < best ? dt : best;
    }
    printf("%.9g\n", best);
    F(_free)();
    return 0;
}
EOF
cat >ref.cu <<'EOF'
/* references measured in the same run: device-to-device copy bandwidth
 * (bytes read + written per second) and cuBLAS float16 GEMM 4096^3 with float
 * accumulation (seconds), minimum over tries */
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>
int main(void)
{
    int n;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) { printf("no GPU\n"); return 3; }
    size_t bytes = (size_t)1 << 31;
    void *a, *b;
    if (cudaMalloc(&a, bytes) || cudaMalloc(&b, bytes)) return 2;
    cudaMemset(a, 0, bytes);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    float best = 1e30f, ms;
    for (int t = 0; t < 6; t++) {
        cudaEventRecord(e0); cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice); cudaEventRecord(e1);
        cudaEventSynchronize(e1); cudaEventElapsedTime(&ms, e0, e1); best = ms < best ? ms : best;
    }
    printf("hbm_bytes_per_s %.6g\n", 2.0 * bytes / (best * 1e-3));
    const int N = 4096;
    __half *x = (__half *)a, *y = x + (size_t)N * N, *z = (__half *)b;
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 2;
    float al = 1, be = 0;
    best = 1e30f;
    for (int t = 0; t < 8; t++) {
        cudaEventRecord(e0);
        if (cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &al, y, CUDA_R_16F, N, x, CUDA_R_16F, N,
                         &be, z, CUDA_R_16F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
            return 2;
        cudaEventRecord(e1); cudaEventSynchronize(e1); cudaEventElapsedTime(&ms, e0, e1);
        if (t) best = ms < best ? ms : best;
    }
    printf("cublas_gemm16_s %.6g\n", best * 1e-3);
    cublasDestroy(h);
    return 0;
}
EOF
NVFLAGS="-arch=$ARCH -O3 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror"
pids=""
echo "$CASES" | while read -r name model opts; do
  mkdir -p "$name"
  # shellcheck disable=SC2086
  "$RL" "$model.onnx" -o "$name/$name.cu" $opts 2>"$name/rlopt.err" || { echo "FAIL rlopt $name: $(head -1 "$name/rlopt.err")"; continue; }
  # the report prices the graph as loaded unless told the passes: the same -O level as the .cu
  ropts="-O2 $opts"; case $opts in *-O0*) ropts=$opts;; *--cuda-library*) ropts="-O2";; esac
  # shellcheck disable=SC2086
  "$RL" report "$model.onnx" --hw h200 --format json $ropts >"$name/report.json" 2>/dev/null
done
compile() {  # name
  local n=$1 up
  up=$(echo "$n" | tr a-z A-Z)
  [ -f "$n/$n.cu" ] || return 1
  ( cd "$n" && "$NVCC" $NVFLAGS -c "$n.cu" -o "$n.o" 2>nvcc.err &&
    "$NVCC" $NVFLAGS -I. -DMODEL="$n" -DMODEL_H="\"$n.h\"" -DNIN="${up}_NUM_INPUTS" -DNOUT="${up}_NUM_OUTPUTS" \
      -c ../driver.cu -o driver.o 2>>nvcc.err &&
    "$NVCC" -arch=$ARCH "$n.o" driver.o -o run $(case $n in *cublas*) echo -lcublas;; esac) 2>>nvcc.err ) ||
    { echo "FAIL nvcc $n: $(grep -m2 -i error "$n/nvcc.err")"; return 1; }
}
jobs_max=$(( $(nproc) > 8 ? 8 : $(nproc) ))
for name in $(echo "$CASES" | cut -d' ' -f1); do
  compile "$name" & pids="$pids $!"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do sleep 0.2; done
done
"$NVCC" -arch=$ARCH -O3 ref.cu -o ref -lcublas 2>ref.err & pids="$pids $!"
fail=0
for p in $pids; do wait "$p" || fail=1; done
[ $fail = 0 ] || die "a model or driver did not compile (above)"
echo "gpu_check: compiled $(echo "$CASES" | wc -l) models, their drivers and the cuBLAS/bandwidth reference (nvcc -arch=$ARCH, warnings as errors)"
if [ $GPU = 0 ]; then
  why="nvidia-smi finds none"; [ $COMPILE_ONLY = 1 ] && why="--compile-only"
  echo "no GPU: nothing run or measured ($why); the .cu files, drivers and reference compiled"
  exit 3
fi

# ---- 4. on the GPU -----------------------------------------------------------------
status=0
for ex in "$ROOT"/examples/*.onnx; do
  name=$(basename "$ex" .onnx); data="$ROOT/examples/${name}_data"
  [ -d "$data" ] || continue
  ins=""; for p in "$data"/input_*.pb; do ins="$ins -i $p"; done
  mkdir -p "ex_$name"
  # shellcheck disable=SC2086
  if "$RL" run "$ex" $ins -d "ex_$name/c" >/dev/null 2>"ex_$name.err" &&
     "$RL" run "$ex" $ins -d "ex_$name/gpu" --target cuda >/dev/null 2>>"ex_$name.err" &&
     "$PY" - "ex_$name/c" "ex_$name/gpu" <<'EOF'
import glob, os, sys
import numpy as np, onnx
from onnx import numpy_helper
bad = []
for p in sorted(glob.glob(os.path.join(sys.argv[1], "output_*.pb"))):
    t = [onnx.TensorProto(), onnx.TensorProto()]
    for k, d in enumerate(sys.argv[1:3]):
        t[k].ParseFromString(open(os.path.join(d, os.path.basename(p)), "rb").read())
    a, b = (numpy_helper.to_array(x).astype(np.float64) for x in t)
    if a.shape != b.shape or not np.allclose(b, a, rtol=1e-3, atol=1e-5):
        bad.append(os.path.basename(p))
sys.exit(1 if bad else 0)
EOF
  then echo "PASS example $name: the GPU's outputs match the C backend's (rtol 1e-3, atol 1e-5)"
  else echo "FAIL example $name: $(head -1 "ex_$name.err")"; status=1
  fi
done
./ref >ref.out || die "the reference program failed: $(cat ref.out)"
HBM=$(awk '/hbm_bytes_per_s/ {print $2}' ref.out)
CUB=$(awk '/cublas_gemm16_s/ {print $2}' ref.out)
calc() { awk "BEGIN { printf \"%.6g\", ($1) }"; }                     # numbers in any notation
verdict() { awk "BEGIN { exit !($1) }" && echo PASS || echo FAIL; }   # a condition
printf "measured HBM copy bandwidth %s GB/s; cuBLAS float16 GEMM 4096^3 %s ms\n" \
  "$(calc "$HBM / 1e9")" "$(calc "$CUB * 1e3")"
printf "%-12s %12s %12s %9s  %s\n" kernel "measured us" "predicted us" meas/pred target
for name in $(echo "$CASES" | cut -d' ' -f1); do
  reps=20; case $name in ew_4G|gemm16*) reps=5;; chain*) reps=200;; esac
  t=$(cd "$name" && ./run $reps) || { echo "FAIL run $name"; status=1; continue; }
  pred=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['total']['time_s'])" \
         "$name/report.json" 2>/dev/null || echo 0)
  v=""
  case $name in
    ew_*) case $name in ew_64M) mb=64;; ew_256M) mb=256;; ew_1G) mb=1024;; *) mb=4096;; esac
          bw=$(calc "2 * $mb * 1048576 / $t")
          v="$(verdict "$bw >= 0.85 * $HBM") $(calc "100 * $bw / $HBM")% of HBM (>= 85%)";;
    gemv*) wb=$(( 8192 * 8192 * 4 ))
          case $name in gemv_int8) wb=$(( 8192 * 8192 ));; gemv_int4) wb=$(( 8192 * 4096 ));; esac
          bw=$(calc "$wb / $t")
          v="$(verdict "$bw >= 0.80 * $HBM") $(calc "100 * $bw / $HBM")% of HBM on the weights (>= 80%)";;
    gemm16_cublas) CUBM=$t
          v="info the .cu with --cuda-library cublas (graph replay); the direct cuBLAS call: $(calc "$CUB * 1e6") us";;
    gemm16) base=${CUBM:-$CUB}
          v="$(verdict "$base / $t >= 0.60") $(calc "100 * $base / $t")% of cuBLAS (--cuda-library cublas, same driver; >= 60%)";;
    chain_graph) v="$(verdict "$t / 100 < 1e-6") $(calc "$t / 100 * 1e6") us per kernel replayed (< 1 us)";;
    chain_eager) v="info $(calc "$t / 100 * 1e6") us per kernel, eager (synchronized per launch)";;
  esac
  case $v in FAIL*) status=1;; esac
  printf "%-12s %12s %12s %9s  %s\n" "$name" "$(calc "$t * 1e6")" "$(calc "$pred * 1e6")" \
    "$(calc "$pred > 0 ? $t / $pred : 0")" "$v"
done
exit $status
