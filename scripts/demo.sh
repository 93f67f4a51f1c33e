#!/usr/bin/env bash
# demo.sh - install what is missing, build rlopt, and run the main job on an
# example model: the per-node report, then C generated, compiled and linked
# into examples/run_mlp.c.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${RLOPT_BUILD:-$here/build}
"$here/scripts/deps.sh"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target rlopt
rl=$build/rlopt
model=$here/examples/mlp.onnx
echo "== rlopt report examples/mlp.onnx"
"$rl" report "$model"
echo "== rlopt examples/mlp.onnx -o $build/mlp_opt.c"
"$rl" "$model" -o "$build/mlp_opt.c"
cc -std=c11 -O2 -Wall -Wextra -I"$build" -o "$build/run_mlp" "$here/examples/run_mlp.c" "$build/mlp_opt.c" -lm
echo "== $build/run_mlp"
"$build/run_mlp"
