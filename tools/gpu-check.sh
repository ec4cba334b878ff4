#!/usr/bin/env bash
# Runs the GPU suites and the benchmarks from an existing build, for a GPU
# machine: tools/gpu-check.sh [BUILD_DIR] [OUT_DIR]. Logs and JSON go to OUT_DIR
# (default: BUILD_DIR/gpu-results); the last lines summarize.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-$build/gpu-results}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0
nvidia-smi -L 2>/dev/null || true
echo "== GPU suites"
"$build/tests/crec_gpu_tests" --verbose -j8 >"$out/gpu_tests.log" 2>&1 || status=1
grep -E '^\[(FAIL|SKIP)\]|Assertion|Synthesis' "$out/gpu_tests.log" | head -40
for b in replay control library; do
  exe="$build/tools/bench/crec_bench_$b"
  [ -x "$exe" ] || continue
  echo "== crec_bench_$b"
  "$exe" --json "$out/bench_$b.json" >"$out/bench_$b.txt" 2>&1 || status=1
  cat "$out/bench_$b.txt"
done
exit $status
