#!/usr/bin/env bash
# Runs crec_fuzz_lower for SECONDS from a build with -DCREC_FUZZ=ON, then prints
# one summary line. Exits 1 when the fuzzer found a crash or a leak (the input
# is under BUILD_DIR/tests/fuzz/findings/); timeouts and out-of-memory inputs
# are kept there and counted but do not fail the run (on a loaded machine they
# may be the machine's, not crec's). The corpus grows in
# BUILD_DIR/tests/fuzz/corpus/, seeded from seeds/ at the first run.
# Extra arguments go to libFuzzer.
#   usage: tests/fuzz/run.sh BUILD_DIR SECONDS [libFuzzer options...]
set -euo pipefail
usage="usage: tests/fuzz/run.sh BUILD_DIR SECONDS [libFuzzer options...]"
build=${1:?$usage}
secs=${2:?$usage}
shift 2
dir=$build/tests/fuzz
exe=$dir/crec_fuzz_lower
[ -x "$exe" ] || { echo "run.sh: $exe is not built (configure with -DCMAKE_C_COMPILER=clang-19 -DCREC_FUZZ=ON)" >&2; exit 2; }
mkdir -p "$dir/corpus" "$dir/findings"
[ -n "$(ls -A "$dir/corpus")" ] || cp "$dir"/seeds/*.mlir "$dir/corpus/"
log=$dir/fuzz.log
count() { find "$dir/findings" -type f -name "$1-*" | wc -l; }
crashes0=$(count crash) leaks0=$(count leak) timeouts0=$(count timeout) ooms0=$(count oom)
# -fork=1: one fuzzing process at a time, restarted after a timeout or an OOM so
# the run goes on; a crash or a leak ends it. -timeout: a lowering that compiles
# a few kernels takes well under a second. -rss_limit_mb: LLVM and MLIR are large.
rc=0
"$exe" "$dir/corpus" -fork=1 -ignore_timeouts=1 -ignore_ooms=1 -dict="$dir/mlir.dict" -max_total_time="$secs" \
  -timeout=20 -rss_limit_mb=4096 -max_len=8192 -artifact_prefix="$dir/findings/" "$@" >"$log" 2>&1 || rc=$?
execs=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$log" | tail -1)
crashes=$(( $(count crash) - crashes0 )) leaks=$(( $(count leak) - leaks0 ))
timeouts=$(( $(count timeout) - timeouts0 )) ooms=$(( $(count oom) - ooms0 ))
echo "fuzz_lower: ${secs}s, ${execs:-?} executions, corpus $(find "$dir/corpus" -type f | wc -l) inputs;" \
     "crashes $crashes, leaks $leaks, timeouts $timeouts, OOMs $ooms (log: $log)"
if [ "$crashes" -ne 0 ] || [ "$leaks" -ne 0 ] || { [ "$rc" -ne 0 ] && ! grep -q 'INFO: fuzzed for' "$log"; }; then
  grep -E '^==[0-9]+==ERROR|^SUMMARY|Test unit written|^fuzz_lower:|deadly signal|ERROR: libFuzzer|^    #[0-9] ' "$log" |
    head -30 >&2 || true
  echo "fuzz_lower: FAILED (exit $rc): reproduce with $exe FILE" >&2
  exit 1
fi
