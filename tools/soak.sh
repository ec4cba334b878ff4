#!/usr/bin/env bash
# Soak test for a GPU machine: crec run --check over every example for many
# replays, sampling the process's host RSS and the device's used memory near
# the start and at the end; nothing may grow.
#
#   tools/soak.sh [--iters N] [--only NAME[,NAME...]] [BUILD_DIR] [OUT_DIR]
#
# --only runs those examples alone (e.g. --only jacobi), so that a soak can be
# split across commands that each have a time limit.
# N defaults to 1000000 replays per example (each also runs eagerly and is
# compared byte for byte). RSS is read from /proc/PID/status (VmRSS) and device
# memory from nvidia-smi once the run is under way (after 5 s) and again just
# before it ends; a growth above CREC_SOAK_SLACK_KB (default 4096 KiB) of either
# fails the example. Exit status 1 when any example failed or grew.
set -uo pipefail
cd "$(dirname "$0")/.."
. tools/example-args.sh
iters=1000000
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --iters) iters=$2; shift ;;
    --only) only=",$2,"; shift ;;
    -h|--help) sed -n '2,/^# fails the example/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "soak.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
build=${1:-build}
out=${2:-$build/soak-results}
slack=${CREC_SOAK_SLACK_KB:-4096}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
crec="$build/tools/crec"
status=0

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
gpu_kb() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1 | awk '{print $1 * 1024}'; }

for f in examples/*.mlir; do
  n=$(basename "$f" .mlir)
  if [ -n "$only" ] && [ "${only#*,"$n",}" = "$only" ]; then continue; fi
  [ -f "$build/examples/$n.mlir" ] && f="$build/examples/$n.mlir"
  args=(run "$f" --iters "$iters" --check)
  mapfile -t -O "${#args[@]}" args < <(crec_example_args "$n")
  "$crec" "${args[@]}" >"$out/soak_$n.log" 2>&1 &
  pid=$!
  sleep 5
  rss0=$(rss_kb $pid) gpu0=$(gpu_kb)
  rss1=$rss0 gpu1=$gpu0
  # the last sample taken while the process still runs
  while kill -0 $pid 2>/dev/null; do
    r=$(rss_kb $pid) g=$(gpu_kb)
    [ -n "$r" ] && [ "$r" != 0 ] && rss1=$r gpu1=$g
    sleep 2
  done
  wait $pid
  rc=$?
  grow_rss=$((rss1 - rss0)) grow_gpu=$((${gpu1:-0} - ${gpu0:-0}))
  verdict=ok
  [ $rc -eq 0 ] || verdict="FAILED (exit $rc)"
  if [ $grow_rss -gt "$slack" ] || [ $grow_gpu -gt "$slack" ]; then verdict="GREW"; fi
  # a run that ended before the first sample measured nothing: not a pass
  if [ $rc -eq 0 ] && { [ -z "$rss0" ] || [ "$rss0" = 0 ]; }; then verdict="NOT MEASURED (it ended within 5 s: raise --iters)"; fi
  [ "$verdict" = ok ] || status=1
  printf '%-10s %s: host RSS %s -> %s KiB, device %s -> %s KiB\n' "$n" "$verdict" "$rss0" "$rss1" "${gpu0:-?}" "${gpu1:-?}"
done
exit $status
