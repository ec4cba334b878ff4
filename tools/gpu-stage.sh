#!/usr/bin/env bash
# Stages a stripped copy of a build for the GPU machine, small enough to carry
# (the device tool carries at most 64 MiB with .gpu-deps): the libraries, every
# test, tool and benchmark binary, and the MLIR inputs the suites and examples
# read from the build tree. tools/gpu-stage.sh [BUILD_DIR] [STAGE_DIR]
# (defaults: build, .stage; STAGE_DIR/build is the copy). On the GPU machine:
#   rm -rf build && mv .stage/build build && source .gpu-deps/unpack.sh && tools/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
b=${1:-build}
stage=${2:-.stage}
[ -d "$b" ] || { echo "gpu-stage.sh: no build folder $b" >&2; exit 2; }
rm -rf "$stage"
mkdir -p "$stage/build"
(cd "$b" && find . -type f \( -name '*.so*' -o -perm -u+x \) -not -path '*/CMakeFiles/*' -not -path './_*' \
   -not -name '*.a') | while read -r f; do
  mkdir -p "$stage/build/$(dirname "$f")"
  cp "$b/$f" "$stage/build/$f"
  strip --strip-debug "$stage/build/$f" 2>/dev/null || true
done
(cd "$b" && find . -maxdepth 1 -name 'libcrec.so*' -type l) | while read -r f; do cp -P "$b/$f" "$stage/build/$f"; done
# crec.torch's compiled call path, where the build made it (python/src/_crec_fast.c)
for f in "$b"/_crec_fast*.so; do [ -f "$f" ] && cp "$f" "$stage/build/"; done
mkdir -p "$stage/build/tests" "$stage/build/examples"
cp -r "$b/tests/mlir" "$stage/build/tests/"
cp "$b"/examples/*.mlir "$b"/examples/*.ptx "$stage/build/examples/"
du -sh "$stage" | awk '{print "gpu-stage.sh: " $1 " in '"$stage"'"}'
