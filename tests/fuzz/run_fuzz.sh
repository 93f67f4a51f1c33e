#!/usr/bin/env bash
# run_fuzz.sh SRC BUILD SECONDS - build the libFuzzer target with clang and
# fuzz the ONNX frontend for SECONDS, starting from the seed corpus (copied,
# so the repository's corpus is not modified). Exit 77 (CTest: skipped) with
# the reason when clang or its fuzzer runtime is missing.
set -euo pipefail
src=$1 build=$2 secs=$3
if ! command -v clang >/dev/null; then
  echo "skipped: clang is not installed (apt-get install clang)"; exit 77
fi
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}' |
     clang -x c -fsanitize=fuzzer - -o /tmp/rl-fuzz-check.$$ 2>/dev/null; then
  echo "skipped: clang's libFuzzer runtime is missing (apt-get install libclang-rt-14-dev)"; exit 77
fi
rm -f /tmp/rl-fuzz-check.$$
CC=clang cmake -S "$src" -B "$build" -DRL_FUZZ=ON -DRL_SANITIZE_TESTS=OFF -DRL_PYTHON=/bin/false >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz_onnx >/dev/null
work=$build/corpus-work; rm -rf "$work"; mkdir -p "$work"
cp "$src"/tests/fuzz/corpus/* "$work"/
cd "$build"
"$build/tests/fuzz/fuzz_onnx" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 \
   -print_final_stats=1 "$work" 2>&1 | tail -n 15
