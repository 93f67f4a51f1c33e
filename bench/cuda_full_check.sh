#!/usr/bin/env bash
# cuda_full_check.sh - the CUDA backend's whole check without a GPU (issue 12),
# too slow for CI on two cores (py.test_cuda_emulate and py.test_cuda_nvcc run
# a stated subset of it):
#
#   bench/cuda_full_check.sh [BUILD_DIR] [-j N]
#
# 1. every ONNX node test whose operators `rlopt ops --target cuda` lists,
#    through `rlopt run --target cuda --emulate`, compared with the expected
#    outputs at the conformance suite's tolerances (tests/py/test_conformance.py);
# 2. the .cu of every node test that rlopt emits for CUDA, compiled with nvcc
#    for sm_90 and sm_80 (-Werror all-warnings, host -Wall -Wextra -Werror),
#    N files at a time; refusals (one line, exit 2) are counted, not failed.
# Prints each part's tally; exit 0 when nothing failed.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$ROOT/build}; [ $# -gt 0 ] && shift
J=2; [ "${1:-}" = "-j" ] && J=${2:-2}
PY="$B/venv/bin/python"; [ -x "$PY" ] || PY=python3
NVCC=$(command -v nvcc || ls -d /usr/local/cuda*/bin/nvcc 2>/dev/null | sort | tail -1)
W=$(mktemp -d /tmp/rlopt-cuda-full.XXXXXX)
trap 'rm -rf "$W"' EXIT
"$B/rlopt" ops --target cuda >"$W/ops.txt" || exit 2
status=0
echo "== node tests through --target cuda --emulate"
"$PY" -B "$ROOT/tests/py/test_conformance.py" --rlopt "$B/rlopt" --source "$ROOT" -j "$J" \
  --ops-file "$W/ops.txt" --rlopt-args="--target cuda --emulate" | grep -E "^FAIL|passed" || status=1
[ "${PIPESTATUS[0]}" = 0 ] || status=1
if [ -z "$NVCC" ]; then echo "no nvcc: the compile half is skipped"; exit $status; fi
echo "== nvcc sm_90 + sm_80 on every node test's .cu"
NODE=$("$PY" -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend/test/data/node'))")
one() {  # test folder
  local t; t=$(basename "$1")
  if ! "$B/rlopt" "$1/model.onnx" -o "$W/$t.cu" 2>/dev/null; then echo "refused $t"; return 0; fi
  if "$NVCC" -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80 \
       -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -c "$W/$t.cu" -o "$W/$t.o" \
       >"$W/$t.log" 2>&1; then echo "ok $t"; else echo "FAIL $t: $(grep -m1 error "$W/$t.log")"; fi
  rm -f "$W/$t.cu" "$W/$t.h" "$W/$t.o" "$W/$t.weights"
}
export -f one; export B W NVCC
find "$NODE" -mindepth 1 -maxdepth 1 -name 'test_*' -print0 | sort -z | xargs -0 -P "$J" -I{} bash -c 'one {}' >"$W/nvcc.txt"
grep "^FAIL" "$W/nvcc.txt"
echo "nvcc: $(grep -c '^ok' "$W/nvcc.txt") compiled, $(grep -c '^FAIL' "$W/nvcc.txt") failed, $(grep -c '^refused' "$W/nvcc.txt") refused by rlopt"
grep -q "^FAIL" "$W/nvcc.txt" && status=1
exit $status
