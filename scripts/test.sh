#!/usr/bin/env bash
# test.sh - install what is missing, build (warnings are errors), run every
# test: unit tests (plain and ASan/UBSan), fuzz-corpus replay, the ONNX
# backend node-test conformance, the light models and examples against
# onnxruntime. Ends with CTest's summary line.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${RLOPT_BUILD:-$here/build}
export RLOPT_BUILD=$build
"$here/scripts/deps.sh" --test
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRL_WERROR=ON \
      -DRL_PYTHON="$build/venv/bin/python" >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j"$(nproc)" --timeout 3000
