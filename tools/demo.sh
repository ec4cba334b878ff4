#!/usr/bin/env bash
# The main job on one shipped example (default examples/chain.mlir), after tools/setup.sh:
#  - on a GPU: crec run --check (replay against eager, byte for byte), then crec bench;
#  - without a GPU: the program's summary, and its graph as a self-contained HTML page.
set -uo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
crec="$build_dir/tools/crec"
example=${1:-examples/chain.mlir}
out=$("$crec" run --check --iters 100 "$example" 2>&1)
rc=$?
printf '%s\n' "$out"
[ $rc -eq 0 ] || exit $rc
if printf '%s' "$out" | grep -q "no CUDA device is available"; then
  html="$build_dir/$(basename "$example" .mlir).html"
  "$crec" dump --format html -o "$html" "$example" || exit $?
  echo "the graph of $example is in $html: open it in a browser and click a node for its details"
else
  "$crec" bench --iters 200 "$example"
fi
