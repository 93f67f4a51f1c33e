#!/usr/bin/env bash
# gpu_pack.sh - pack rlopt for a lent GPU machine (issue 12).
#
#   bench/gpu_pack.sh [BUILD_DIR]        (default BUILD_DIR: build)
#
# The lent machine (a CUDA image: nvcc, Python with onnx and onnxruntime)
# has none of rlopt's build dependencies (protobuf-c, libxml2, xxHash,
# LAPACKE) and cannot install them. This writes .devcarry/ in the source
# tree: the built rlopt, stripped, and lib.tar.xz with every shared library
# it loads that the image may lack (ldd), about 14 MB together. It adds
# /.devcarry/ to .git/info/exclude so the folder never travels by itself;
# name it in the device tool's `carry`, and begin the command with
#   tar -C .devcarry -xJf .devcarry/lib.tar.xz; export LD_LIBRARY_PATH=$PWD/.devcarry/lib
# then run bench/gpu_check.sh .devcarry (it takes .devcarry/rlopt as the build).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$ROOT/build}
[ -x "$B/rlopt" ] || { echo "gpu_pack: no $B/rlopt (build first)" >&2; exit 2; }
D=$ROOT/.devcarry
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$D" "$W/lib"
cp "$B/rlopt" "$D/rlopt"
strip "$D/rlopt"
ldd "$B/rlopt" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
  case $(basename "$lib") in
    # the image's own: glibc, and libraries every image has in a newer version (an older
    # libstdc++ first on LD_LIBRARY_PATH would break the image's Python and nvcc)
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
    libstdc++.so*|libgcc_s.so*|libz.so*|liblzma.so*) ;;
    *) cp -L "$lib" "$W/lib/";;
  esac
done
tar -C "$W" -cJf "$D/lib.tar.xz" lib
mkdir -p "$ROOT/.git/info"
grep -qx '/.devcarry/' "$ROOT/.git/info/exclude" 2>/dev/null || echo '/.devcarry/' >>"$ROOT/.git/info/exclude"
echo "gpu_pack: $(du -sh "$D" | cut -f1) in $D ($(ls "$W/lib" | wc -l) libraries)"
