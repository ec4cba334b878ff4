#!/usr/bin/env bash
# Soak test for a GPU machine: crec run --check over every example for many
# replays, sampling the process's host RSS and its device memory near the
# start and at the end; nothing may grow.
#
#   tools/soak.sh [--iters N] [--only NAME[,NAME...]] [--jobs J] [BUILD_DIR] [OUT_DIR]
#
# --only runs those examples alone (e.g. --only jacobi), so that a soak can be
# split across commands that each have a time limit. --jobs runs up to J
# examples at once (default 1): they share the GPU, so the whole soak takes
# about the sum of their device time rather than of their wall times.
# N defaults to 1000000 replays per example (each also runs eagerly and is
# compared byte for byte). RSS is read from /proc/PID/status (VmRSS) and the
# process's device memory from nvidia-smi --query-compute-apps once the run is
# under way (after 5 s) and again just before it ends; a growth above
# CREC_SOAK_SLACK_KB (default 4096 KiB) of either fails the example. Where
# nvidia-smi does not list the process (a container sees other PIDs), --jobs 1
# reads the whole device's used memory instead, and with more jobs the device
# side is NOT MEASURED, which fails the example too. Exit status 1 when any
# example failed, grew or went unmeasured.
set -uo pipefail
cd "$(dirname "$0")/.."
. tools/example-args.sh
iters=1000000
only=""
jobs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --iters) iters=$2; shift ;;
    --only) only=",$2,"; shift ;;
    --jobs) jobs=$2; shift ;;
    -h|--help) sed -n '2,/^# example failed or grew/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "soak.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
case "$jobs" in '' | *[!0-9]* | 0) echo "soak.sh: --jobs takes a count of at least 1, not '$jobs'" >&2; exit 2 ;; esac
build=${1:-build}
out=${2:-$build/soak-results}
slack=${CREC_SOAK_SLACK_KB:-4096}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
crec="$build/tools/crec"

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# the device memory process $1 uses, in KiB; with one job, the whole device's where nvidia-smi
# does not list the process; empty when it cannot be told
gpu_kb() {
  local kb
  kb=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
    awk -F', *' -v pid="$1" '$1 == pid { kb += $2 * 1024; seen = 1 } END { if (seen) print kb }')
  if [ -z "$kb" ] && [ "$jobs" -eq 1 ]; then
    kb=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1 | awk '{print $1 * 1024}')
  fi
  echo "$kb"
}

# soak_one NAME FILE: runs one example, samples it, writes its verdict line to $out/soak_NAME.verdict
soak_one() {
  local n=$1 f=$2
  local args=(run "$f" --iters "$iters" --check)
  mapfile -t -O "${#args[@]}" args < <(crec_example_args "$n")
  "$crec" "${args[@]}" >"$out/soak_$n.log" 2>&1 &
  local pid=$!
  sleep 5
  local rss0 gpu0 rss1 gpu1 r g
  rss0=$(rss_kb $pid) gpu0=$(gpu_kb $pid)
  rss1=$rss0 gpu1=$gpu0
  # the last sample taken while the process still runs
  while kill -0 $pid 2>/dev/null; do
    r=$(rss_kb $pid) g=$(gpu_kb $pid)
    [ -n "$r" ] && [ "$r" != 0 ] && rss1=$r gpu1=$g
    sleep 2
  done
  wait $pid
  local rc=$?
  local grow_rss=$((rss1 - rss0)) grow_gpu=$((${gpu1:-0} - ${gpu0:-0}))
  local verdict=ok
  [ $rc -eq 0 ] || verdict="FAILED (exit $rc)"
  if [ $grow_rss -gt "$slack" ] || [ $grow_gpu -gt "$slack" ]; then verdict="GREW"; fi
  if [ $rc -eq 0 ] && [ "$verdict" = ok ] && { [ -z "$gpu0" ] || [ -z "$gpu1" ]; }; then
    verdict="NOT MEASURED (nvidia-smi does not list this process's device memory: run with --jobs 1)"
  fi
  # a run that ended before the first sample measured nothing: not a pass
  if [ $rc -eq 0 ] && { [ -z "$rss0" ] || [ "$rss0" = 0 ]; }; then verdict="NOT MEASURED (it ended within 5 s: raise --iters)"; fi
  printf '%-10s %s: host RSS %s -> %s KiB, device %s -> %s KiB\n' "$n" "$verdict" "$rss0" "$rss1" "${gpu0:-?}" \
    "${gpu1:-?}" >"$out/soak_$n.verdict"
}

names=()
for f in examples/*.mlir; do
  n=$(basename "$f" .mlir)
  if [ -n "$only" ] && [ "${only#*,"$n",}" = "$only" ]; then continue; fi
  [ -f "$build/examples/$n.mlir" ] && f="$build/examples/$n.mlir"
  rm -f "$out/soak_$n.verdict"
  # at most $jobs at once
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  soak_one "$n" "$f" &
  names+=("$n")
done
wait
status=0
for n in "${names[@]}"; do
  if [ -s "$out/soak_$n.verdict" ]; then
    cat "$out/soak_$n.verdict"
    grep -q "^$n *ok:" "$out/soak_$n.verdict" || status=1
  else
    echo "$n NOT MEASURED (its soak left no verdict)"
    status=1
  fi
done
exit $status
