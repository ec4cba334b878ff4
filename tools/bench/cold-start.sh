#!/usr/bin/env bash
# Cold starts: how long `crec run` takes to reach its first replay, read from
# `crec run --timings`, for three ways in:
#   cold    MLIR, with an empty persistent cache (CREC_CACHE_DIR) and an empty
#           CUDA JIT cache (CUDA_CACHE_PATH)
#   warm    MLIR again, with both caches as the cold run left them
#   crecb   a program file that `crec compile --cubin` wrote for this chip
#           (no lowering, no PTX to compile)
# Each is run ROUNDS times (default 5; a cold round starts from empty caches);
# the medians are printed, then the ratios to cold.
#
#   tools/bench/cold-start.sh [--rounds N] [BUILD_DIR] [PROGRAM.mlir [run options...]]
#
# Default program: examples/jacobi.mlir with its example inputs. Columns, in ms
# since the process started: main (the executable and its libraries loaded),
# program (lowered or read), device (CUDA up, buffers filled; run beside the
# lowering), recorded, first (the first replay done); then the modules the
# record loaded and those the driver compiled from PTX.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/example-args.sh
rounds=5
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "cold-start.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
build=${1:-build}
prog=${2:-examples/jacobi.mlir}
shift 2 2>/dev/null || shift $#
opts=("$@")
if [ ${#opts[@]} -eq 0 ]; then
  mapfile -t opts < <(crec_example_args "$(basename "$prog" .mlir)")
fi
crec="$build/tools/crec"
[ -x "$crec" ] || { echo "cold-start.sh: no $crec (build first)" >&2; exit 2; }
export LD_LIBRARY_PATH="$PWD/$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# one_run NAME FILE: runs crec run FILE --timings, appends "NAME main program device recorded first loaded jit"
one_run() {
  local name=$1 file=$2 log="$work/$1.log"
  if ! "$crec" run "$file" "${opts[@]}" --timings >"$log" 2>&1; then
    echo "cold-start.sh: crec run $file failed:" >&2
    tail -3 "$log" >&2
    exit 1
  fi
  grep -q 'first replay' "$log" || { echo "cold-start.sh: no device run (see below)" >&2; tail -2 "$log" >&2; exit 1; }
  awk -v n="$name" '
    $1 == "main" { m = $2 } $1 == "program" { p = $2 } $1 == "device" { d = $2 }
    $1 == "recorded" { r = $2; l = $3; j = $(NF - 8) } $1 == "first" { f = $3 }
    END { print n, m, p, d, r, f, l, j }' "$log" >>"$work/rows"
}

chip=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
for r in $(seq 1 "$rounds"); do
  export CREC_CACHE_DIR="$work/cache$r" CUDA_CACHE_PATH="$work/cuda$r"
  one_run cold "$prog"
  one_run warm "$prog"
  if [ "$r" = 1 ]; then
    args=(compile "$prog" -o "$work/prog.crecb" --cubin)
    [ -n "$chip" ] && args+=(--chip "sm_$chip")
    "$crec" "${args[@]}" >"$work/compile.log" 2>&1 || { echo "cold-start.sh: crec compile failed:" >&2; cat "$work/compile.log" >&2; exit 1; }
  fi
  one_run crecb "$work/prog.crecb"
done

echo "cold starts of crec run $prog (${opts[*]}), median of $rounds rounds; ms since the process started"
printf '%-6s %8s %8s %8s %9s %8s %7s %5s\n' way main program device recorded first modules jit
for way in cold warm crecb; do
  awk -v w="$way" '$1 == w' "$work/rows" | sort -k6,6n | awk -v w="$way" -v n="$rounds" '
    { a[NR] = $0 } END { split(a[int((n + 1) / 2)], f, " "); printf "%-6s %8s %8s %8s %9s %8s %7s %5s\n", w, f[2], f[3], f[4], f[5], f[6], f[7], f[8] }'
done | tee "$work/medians"
awk '{ first[$1] = $6; prog[$1] = $3; dev[$1] = $4 }
  END {
    printf "first replay: warm %.3fx, crecb %.3fx of cold\n", first["warm"] / first["cold"], first["crecb"] / first["cold"]
    printf "program ready: warm %.3fx, crecb %.3fx of cold\n", prog["warm"] / prog["cold"], prog["crecb"] / prog["cold"]
    printf "after the device was up (record and first replay): cold %.1f, warm %.1f, crecb %.1f ms\n",
      first["cold"] - dev["cold"], first["warm"] - dev["warm"], first["crecb"] - dev["crecb"]
  }' "$work/medians"
