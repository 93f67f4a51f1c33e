#!/usr/bin/env bash
# bench/fuzz_all.sh SECONDS [TARGET...] - fuzz every libFuzzer target (onnx,
# machine, tensor, diff) for SECONDS each and print executions and crashes
# per target and in total (tests/fuzz/fuzz_all.sh does the work; its build
# folder is build-fuzz/ beside this repository's build/, override with
# RL_FUZZ_BUILD). Exit 1 on any crash, 77 when clang's libFuzzer is missing.
#   bench/fuzz_all.sh 120          # 4 targets x 2 min
#   bench/fuzz_all.sh 900          # the hour before closing a fuzzing issue
set -euo pipefail
if (($# < 1)) || ! [[ $1 =~ ^[0-9]+$ ]]; then
  echo "usage: bench/fuzz_all.sh SECONDS [TARGET...]" >&2
  exit 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
exec "$src/tests/fuzz/fuzz_all.sh" "$src" "${RL_FUZZ_BUILD:-$src/build/fuzz-all}" "$@"
