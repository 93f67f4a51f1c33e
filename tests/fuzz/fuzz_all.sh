#!/usr/bin/env bash
# fuzz_all.sh SRC BUILD SECONDS [TARGET...] - build every libFuzzer target
# (fuzz_onnx, fuzz_machine, fuzz_tensor, fuzz_diff; see CMakeLists.txt) with clang and
# fuzz each for SECONDS, one after the other, from a copy of its seed
# corpus (the repository's is not modified; new inputs stay in
# BUILD/corpus-work/TARGET). Prints one line per target with executions and
# crashes, then the totals; crash inputs are kept in BUILD/artifacts/TARGET.
# Exit 1 on any crash, 77 (skipped) when clang or its fuzzer runtime is
# missing. For the long run before closing a fuzzing issue, e.g.
#   tests/fuzz/fuzz_all.sh . /tmp/fuzz 900      # 4 targets x 15 min = 1 h
set -euo pipefail
src=$(cd "$1" && pwd) build=$2 secs=$3
shift 3
targets=("$@")
((${#targets[@]})) || targets=(onnx machine tensor diff)
if ! command -v clang >/dev/null; then
  echo "skipped: clang is not installed (apt-get install clang)"; exit 77
fi
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}' |
     clang -x c -fsanitize=fuzzer - -o /tmp/rl-fuzz-check.$$ 2>/dev/null; then
  echo "skipped: clang's libFuzzer runtime is missing (apt-get install libclang-rt-14-dev)"; exit 77
fi
rm -f /tmp/rl-fuzz-check.$$
mkdir -p "$build"
build=$(cd "$build" && pwd)
CC=clang cmake -S "$src" -B "$build" -DRL_FUZZ=ON -DRL_SANITIZE_TESTS=OFF -DRL_PYTHON=/bin/false >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >/dev/null
declare -A corpus=([onnx]=corpus [machine]=corpus_machine [tensor]=corpus_tensor [diff]=corpus_diff)
total_exec=0 total_crash=0
printf '%-10s %12s %8s %s\n' target executions crashes seconds
for t in "${targets[@]}"; do
  work=$build/corpus-work/$t art=$build/artifacts/$t
  mkdir -p "$work" "$art"
  cp -n "$src/tests/fuzz/${corpus[$t]}"/* "$work"/ 2>/dev/null || true
  log=$build/fuzz_$t.log
  set +e
  (cd "$build" && "$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 \
     -max_len=65536 -print_final_stats=1 -artifact_prefix="$art/" "$work" >"$log" 2>&1)
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  crashes=$(find "$art" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
              -o -name 'oom-*' \) | wc -l)
  ((rc == 0)) || ((crashes > 0)) || crashes=1   # died without an artifact
  printf '%-10s %12s %8d %s\n' "$t" "${execs:-?}" "$crashes" "$secs"
  total_exec=$((total_exec + ${execs:-0})) total_crash=$((total_crash + crashes))
  ((crashes == 0)) || tail -n 30 "$log"
done
printf '%-10s %12d %8d\n' total "$total_exec" "$total_crash"
((total_crash == 0))
