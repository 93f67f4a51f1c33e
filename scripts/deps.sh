#!/usr/bin/env bash
# deps.sh - install what rlopt needs on Debian 12, only what is missing.
#   scripts/deps.sh          build dependencies (apt)
#   scripts/deps.sh --test   also the Python test oracles in BUILD/venv and the
#                            wheels whose models tests/py/test_real_models.py runs
# Needs root for apt-get (as CI and the README's commands run).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${RLOPT_BUILD:-$here/build}

pkgs=(build-essential cmake pkg-config clang
      libprotobuf-c-dev protobuf-c-compiler libonnx-dev
      libxml2-dev libxml2-utils libxxhash-dev libcriterion-dev liblapacke-dev
      python3 python3-venv python3-pip libclang-rt-14-dev
      groff-base)  # groff: tests/py/test_install.py lints doc/rlopt.1
# the tests also build generated code with a compiler that is neither gcc nor
# clang (tcc) and for aarch64 (cross gcc, run under qemu-user)
if [[ ${1:-} == --test ]]; then
  pkgs+=(tcc gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ${1:-} == --test ]]; then
  mkdir -p "$build"
  py=$build/venv/bin/python
  if [[ ! -x $py ]] || ! "$py" -c 'import onnx, onnxruntime, numpy; assert onnx.__version__ == "1.22.0"' 2>/dev/null; then
    echo "deps: creating $build/venv with onnx==1.22.0, onnxruntime, numpy"
    rm -rf "$build/venv"
    # prefer Debian's python3 (has venv); fall back to whatever python3 is first
    sysp=/usr/bin/python3; [[ -x $sysp ]] || sysp=python3
    "$sysp" -m venv "$build/venv"
    "$py" -m pip install -q --disable-pip-version-check onnx==1.22.0 onnxruntime numpy
  fi
  # real models shipped inside PyPI packages (tests/py/test_real_models.py):
  # only the wheels, for their .onnx files (--no-deps: no torch, no opencv);
  # if pip cannot get them the test skips them, naming the package
  real=(rapidocr_onnxruntime==1.4.4 ddddocr==1.6.1 nudenet==3.4.2 magika==1.0.3
        silero-vad==6.2.3)
  if ! "$py" -m pip install -q --disable-pip-version-check --no-deps "${real[@]}"; then
    echo "deps: could not install ${real[*]}; test_real_models will skip them"
  fi
fi
