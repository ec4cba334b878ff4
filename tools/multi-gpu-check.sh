#!/usr/bin/env bash
# Runs the multi-GPU tests and benchmark from an existing build on a machine
# with several GPUs; builds nothing:
#
#   tools/multi-gpu-check.sh [BUILD_DIR] [OUT_DIR] [RANKS]     (defaults: build, BUILD_DIR/multi-gpu-results, 2)
#
# 1. crec_multi_tests on one rank (200 replays), at most 90 s;
# 2. crec_multi_tests on RANKS ranks (1,000 replays), at most 240 s;
# 3. crec_bench_multi on RANKS ranks, at most 180 s.
# Each run goes through tools/crec-launch --timeout (which stops every rank and
# exits 124) inside timeout(1), so a hang costs its budget and no more. Logs:
# OUT_DIR/<run>.log (all ranks, prefixed), OUT_DIR/<run>/rank<R>.log, the
# benchmark's JSON in OUT_DIR/bench_multi.json, the GPUs in OUT_DIR/gpus.txt.
# The last lines summarize; the exit status is 0 when every run passed.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-$build/multi-gpu-results}
ranks=${3:-2}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off (crec-launch sets it too)
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
{ nvidia-smi -L && nvidia-smi topo -m; } >"$out/gpus.txt" 2>&1
cat "$out/gpus.txt"

status=0
summary=""
# run NAME SECONDS RANKS PROGRAM [ARGS...]
run() {
  local name=$1 limit=$2 n=$3
  shift 3
  echo "== $name: $n rank(s), at most ${limit}s"
  local t0=$SECONDS
  timeout -k 10 $((limit + 30)) tools/crec-launch -n "$n" --timeout "$limit" --log-dir "$out/$name" -- "$@" \
    >"$out/$name.log" 2>&1
  local st=$?
  grep -E '^\[rank [0-9]+\] (ok|skip|FAIL|note)|crec-launch:|Assertion|error' "$out/$name.log" | head -60
  summary="$summary$name: exit $st after $((SECONDS - t0))s"$'\n'
  [ "$st" -eq 0 ] || status=1
}

run tests_1_rank 90 1 "$build/tests/crec_multi_tests" --iterations 200
run "tests_${ranks}_ranks" 240 "$ranks" "$build/tests/crec_multi_tests"
run "bench_${ranks}_ranks" 180 "$ranks" "$build/tools/bench/crec_bench_multi" --json "$out/bench_multi.json"
echo "== crec_bench_multi, rank 0"
sed -n 's/^\[rank 0\] //p' "$out/bench_${ranks}_ranks.log"
echo "== summary"
printf '%s' "$summary"
if grep -qE 'skip .*: (no CUDA device|NCCL is missing)|nothing measured' "$out"/*.log; then
  echo "nothing ran for real here (no CUDA device or no NCCL): this is no pass" >&2
  status=1
fi
[ $status -eq 0 ] && echo "all multi-GPU runs passed" || echo "FAILED: see $out" >&2
exit $status
