#!/usr/bin/env bash
# The main job on one shipped example, after tools/setup.sh:
#   tools/demo.sh [PROG.mlir [crec options...]]     (default: examples/chain.mlir --input x=iota)
#  - on a GPU: crec run --check (100 replays, each compared with the eager
#    executor byte for byte), then crec bench;
#  - without a GPU: the program's summary, and crec saying that no device is available;
#  - either way: the program's graph as a self-contained HTML page, and where it is.
# BUILD_DIR (default build/) says where crec was built.
set -uo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
crec="$build_dir/tools/crec"
if [ ! -x "$crec" ]; then
  echo "demo: $crec is not built: run tools/setup.sh first" >&2
  exit 2
fi
if [ $# -gt 0 ]; then
  example=$1
  shift
  options=("$@")
else
  example=examples/chain.mlir
  options=(--input x=iota)
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "\$ $crec run $example ${options[*]} --check --iters 100"
# stdout through tee; stderr stays on the terminal, where crec draws its progress bar
"$crec" run "$example" "${options[@]}" --check --iters 100 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || exit "$rc"
if ! grep -q "no CUDA device is available" "$log"; then
  echo
  echo "\$ $crec bench $example ${options[*]} --iters 200"
  "$crec" bench "$example" "${options[@]}" --iters 200 || exit $?
fi
html="$build_dir/$(basename "$example" .mlir).html"
if ! command -v dot >/dev/null; then
  # tools/setup.sh installs Graphviz; a GPU machine set up otherwise may lack it
  echo
  echo "(no HTML page: Graphviz's dot is not installed; tools/setup.sh installs it)"
  exit 0
fi
echo
echo "\$ $crec dump $example --format html -o $html"
"$crec" dump "$example" --format html -o "$html" || exit $?
echo "the graph of $example is in $html (file://$(realpath "$html")): open it in a browser and click a node for its details"
