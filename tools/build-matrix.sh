#!/usr/bin/env bash
# Builds this checkout's HEAD, freshly cloned, with GCC 12 and Clang 19 in each
# of CMake's four build types (Debug, Release, RelWithDebInfo, MinSizeRel),
# warnings as errors (-DCREC_WERROR=ON), and runs the CPU suites of each. One
# line per build: its warnings, its time and Criterion's summary.
#
#   tools/build-matrix.sh [WORK_DIR]
#
# WORK_DIR (default: a new temporary folder, removed at the end) holds the
# clone and one build at a time. Needs what tools/setup.sh installs. Exit status
# 1 when a build or its suites failed.
set -uo pipefail
case "${1:-}" in -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
[ -n "${1:-}" ] || trap 'rm -rf "$work"' EXIT
git clone -q "$here" "$work/src" || { echo "build-matrix.sh: cannot clone $here" >&2; exit 2; }
cd "$work/src"
echo "build matrix of $(git rev-parse --short HEAD) in $work/src"
status=0
for cc in gcc clang-19; do
  for type in Debug Release RelWithDebInfo MinSizeRel; do
    dir=build-$cc-$type
    began=$SECONDS
    if cmake -S . -B "$dir" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE="$type" -DCREC_WERROR=ON >"$dir.configure.log" 2>&1 &&
      cmake --build "$dir" -j"$(nproc)" >"$dir.build.log" 2>&1; then
      warnings=$(grep -c "warning:" "$dir.build.log")
      summary=$("$dir/tests/crec_tests" -j"$(nproc)" 2>&1 | grep 'Synthesis' | tail -1)
      echo "$cc $type: built, $warnings warnings, $((SECONDS - began)) s; $summary"
      case "$summary" in *"Failing: 0 | Crashing: 0"*) ;; *) status=1 ;; esac
    else
      echo "$cc $type: FAILED ($work/src/$dir.configure.log, $dir.build.log):"
      grep -m3 -E "error|warning" "$dir.configure.log" "$dir.build.log"
      status=1
    fi
    rm -rf "$dir"
  done
done
exit $status
