#!/usr/bin/env bash
# Installs what crec needs on Debian 12 (only what is missing), then configures
# and builds crec into $BUILD_DIR (default: build/). Extra CMake arguments go in
# $CMAKE_ARGS. Needs the CUDA 13 toolkit at /usr/local/cuda (headers and nvcc;
# no GPU or driver is needed to build).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}

# clang-19 and libclang-rt-19-dev (libFuzzer, the sanitizers): CI's Clang build and fuzzing run;
# python3-pytest, python3-numpy and python3-jsonschema: the Python package's tests (python/tests);
# llvm-19-tools: FileCheck-19, for tools/mlir-check.sh;
# python3-venv and python3-pip: the Python wheel (pip install ./python into a venv; CI's wheel stage);
# python3-dev: Python's headers, for crec.torch's compiled call path (python/src/_crec_fast.c)
pkgs="cmake make gcc g++ pkg-config libcriterion-dev libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools graphviz chromium
      clang-19 libclang-rt-19-dev python3 python3-dev python3-pytest python3-numpy python3-jsonschema python3-venv python3-pip"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "setup: installing$missing" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "setup: error: the CUDA 13 toolkit (nvcc) is not at /usr/local/cuda nor on PATH" >&2
  exit 2
fi
export PATH="/usr/local/cuda/bin:$PATH"

# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
