#!/usr/bin/env bash
# Runs the GPU suites from an existing build, for a GPU machine. Logs go to
# OUT_DIR (default: BUILD_DIR/gpu-results); the last lines summarize.
# (tools/gpu-stage.sh makes a build small enough to carry there.)
#
#   tools/gpu-check.sh [BUILD_DIR] [OUT_DIR]
#       the GPU suites with -j8, then the benchmarks, then crec profile of
#       examples/jacobi.mlir (text, JSON and the page); with pytest there, the
#       Python GPU tests (JAX's too), and with PyTorch, tools/bench/torch_capture.py and the
#       census of real models, tools/bench/torch_census.py (which fails the run
#       when a case torch.cuda.graph captures is not imported, or not correct);
#       with JAX, tools/bench/jax_loop.py (jacobi through crec.jax.call against
#       jax.lax.while_loop; fails the run when they disagree)
#   tools/gpu-check.sh --stress [--rounds N] [BUILD_DIR] [OUT_DIR]
#       the control-flow, replay and threads suites in 8 concurrent processes, N
#       rounds (default 20), each suite's tests in one process and one CUDA context
#       (tests/crec_gpu_stress; CREC_STRESS_RUNNER=criterion: crec_gpu_tests,
#       a process per test), each process bounded by a timeout (CREC_STRESS_TIMEOUT
#       seconds, default 300): counts hangs (timeouts) and failures, and
#       lists the slowest tests. CREC_STRESS_BUDGET=S starts no round that
#       would likely end past S seconds, so a bounded command still prints
#       its summary. Tests replay at most CREC_TEST_REPLAY_CAP times
#       (default 3 here; see tests/gpu_util.h; the threads suite's 8 threads
#       replay 500 times each whatever the cap)
#   tools/gpu-check.sh --sanitize [BUILD_DIR] [OUT_DIR]
#       compute-sanitizer with default options: memcheck over the GPU suites,
#       then memcheck, racecheck, synccheck and initcheck over every example
#       (crec run --check, and the C examples); counts the errors each reports,
#       less the API errors NCCL makes inside its own calls, capture's
#       parameter probes on a driver without cuFuncGetParamCount, and the
#       outer suite's legacy-stream refusal (each said separately)
#       (CREC_SANITIZE_SUITES narrows the suites: "control replay", or part of one:
#       "gpu_tool/[a-c]*"; CREC_SANITIZE_JOBS=N runs N of them at once, the
#       control and gpu_fft suites alone after the others (CREC_SANITIZE_ALONE); CREC_SANITIZE_SUITE_TOOLS the tools run over the suites,
#       default memcheck; CREC_SANITIZE_TOOLS the tools run over the examples; any
#       may be empty). CREC_TEST_SANITIZER=1
#       tells gpu_tool's benchmark tests to run a few executions
#   tools/gpu-check.sh --racecheck [BUILD_DIR] [OUT_DIR]
#       --sanitize with racecheck over the control, replay, capture and library
#       suites instead (shared-memory hazards in the kernels they run, crec's own
#       included), and nothing over the examples: CREC_SANITIZE_SUITES="control
#       replay capture library" CREC_SANITIZE_SUITE_TOOLS=racecheck CREC_SANITIZE_TOOLS=""
#       CREC_TEST_REPLAY_CAP=3 unless they are set
#
# The random-program tests of the replay suite take CREC_TEST_RANDOM_PROGRAMS
# and CREC_TEST_RANDOM_REPLAYS (300 and 1000); unless they are set, --sanitize
# lowers them to 60 and 200, and --stress to 20 and 100 (they are most of a
# round's time, and a round is there for concurrency, not for their size).
# Exit status 1 when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
. tools/example-args.sh
mode=suites
rounds=20
while [ $# -gt 0 ]; do
  case "$1" in
    --stress) mode=stress ;;
    --sanitize) mode=sanitize ;;
    --racecheck)
      mode=sanitize
      : "${CREC_SANITIZE_SUITES=control replay capture library}" "${CREC_SANITIZE_SUITE_TOOLS=racecheck}"
      : "${CREC_SANITIZE_TOOLS=}"
      # racecheck watches every shared-memory access: the control suite's
      # 1,000-iteration loops, replayed 25 times, ran past 2 minutes on their own
      export CREC_TEST_REPLAY_CAP=${CREC_TEST_REPLAY_CAP:-3} ;;
    --rounds) rounds=$2; shift ;;
    -h|--help) sed -n '2,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu-check.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
build=${1:-build}
out=${2:-$build/gpu-results}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
tests="$build/tests/crec_gpu_tests"
[ -x "$tests" ] || { echo "gpu-check.sh: no $tests (build first)" >&2; exit 2; }
nvidia-smi -L 2>/dev/null || true
status=0

summary() { grep -E '^\[====\] Synthesis' "$1" | tail -1; }

if [ "$mode" = suites ]; then
  echo "== GPU suites (-j8)"
  "$tests" --verbose -j8 >"$out/gpu_tests.log" 2>&1 || status=1
  grep -E '^\[(FAIL|SKIP)\]|Assertion' "$out/gpu_tests.log" | head -40
  summary "$out/gpu_tests.log"
  for b in replay control library; do
    exe="$build/tools/bench/crec_bench_$b"
    [ -x "$exe" ] || continue
    echo "== crec_bench_$b"
    "$exe" --json "$out/bench_$b.json" >"$out/bench_$b.txt" 2>&1 || status=1
    cat "$out/bench_$b.txt"
  done
  # crec profile of jacobi: the report, its JSON and the page (docs/profile.md
  # renders the page to the screenshot in docs/ with headless Chromium)
  echo "== crec profile examples/jacobi.mlir"
  jargs=(examples/jacobi.mlir)
  mapfile -t -O 1 jargs < <(crec_example_args jacobi)
  # the page needs Graphviz's dot; without it, draw the JSON elsewhere:
  #   crec dump examples/jacobi.mlir --format html --profile profile_jacobi.json -o page.html
  formats="text json"
  command -v dot >/dev/null && formats="$formats html" || echo "(no Graphviz dot here: no page; the JSON draws one elsewhere)"
  for f in $formats; do
    "$build/tools/crec" profile "${jargs[@]}" --iters 20 --format "$f" -o "$out/profile_jacobi.$f" \
      2>>"$out/profile_jacobi.err" || status=1
  done
  cat "$out/profile_jacobi.text" 2>/dev/null || tail -5 "$out/profile_jacobi.err"
  # the Python package on the device, and captured PyTorch work against torch.cuda.graph
  if python3 -c 'import pytest' 2>/dev/null; then
    echo "== Python GPU tests (python/tests/test_gpu.py, test_capture.py, test_jax.py)"
    # JAX would otherwise take most of the GPU's memory for itself at its first call
    XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONPATH="$PWD/python" CREC_LIBRARY_PATH="$PWD/$build" \
      python3 -m pytest -q -rs -p no:cacheprovider \
      python/tests/test_gpu.py python/tests/test_capture.py python/tests/test_jax.py >"$out/pytest_gpu.log" 2>&1 || status=1
    tail -5 "$out/pytest_gpu.log"
  fi
  if python3 -c 'import torch' 2>/dev/null; then
    echo "== tools/bench/torch_capture.py"
    PYTHONPATH="$PWD/python" CREC_LIBRARY_PATH="$PWD/$build" python3 tools/bench/torch_capture.py \
      --json "$out/bench_torch.json" >"$out/bench_torch.txt" 2>&1 || status=1
    cat "$out/bench_torch.txt"
    # the census of real models: every one torch.cuda.graph captures must import and match eager
    echo "== tools/bench/torch_census.py"
    PYTHONPATH="$PWD/python" CREC_LIBRARY_PATH="$PWD/$build" python3 tools/bench/torch_census.py \
      --json "$out/census.json" >"$out/census.txt" 2>&1 || status=1
    grep -v -i warn "$out/census.txt"
    tail -1 "$out/census.txt" | awk '{ if ($6 != $9 || $6 != $11) exit 1 }' || status=1
  fi
  # jacobi under jax.jit: crec.jax.call against jax.lax.while_loop (exit 1: they disagree; 2: no JAX GPU)
  if python3 -c 'import jax' 2>/dev/null; then
    echo "== tools/bench/jax_loop.py"
    XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONPATH="$PWD/python" CREC_LIBRARY_PATH="$PWD/$build" \
      python3 tools/bench/jax_loop.py --json "$out/bench_jax_loop.json" >"$out/bench_jax_loop.txt" 2>&1
    [ $? -eq 1 ] && status=1
    grep -v -i warn "$out/bench_jax_loop.txt"
  fi
  exit $status
fi

if [ "$mode" = stress ]; then
  export CREC_TEST_REPLAY_CAP=${CREC_TEST_REPLAY_CAP:-3}
  export CREC_TEST_RANDOM_PROGRAMS=${CREC_TEST_RANDOM_PROGRAMS:-20}
  export CREC_TEST_RANDOM_REPLAYS=${CREC_TEST_RANDOM_REPLAYS:-100}
else
  export CREC_TEST_RANDOM_PROGRAMS=${CREC_TEST_RANDOM_PROGRAMS:-60}
  export CREC_TEST_RANDOM_REPLAYS=${CREC_TEST_RANDOM_REPLAYS:-200}
fi

if [ "$mode" = stress ]; then
  limit=${CREC_STRESS_TIMEOUT:-300}
  # crec_gpu_stress runs a suite's tests in its one process, one CUDA context;
  # CREC_STRESS_RUNNER=criterion runs them as crec_gpu_tests does, a process each
  if [ -x "$build/tests/crec_gpu_stress" ] && [ "${CREC_STRESS_RUNNER:-}" != criterion ]; then
    runner=("$build/tests/crec_gpu_stress")
  else
    runner=("$tests" -j1 --verbose)
  fi
  runs=0 hangs=0 fails=0
  rm -f "$out/stress_times.txt"
  echo "== stress: control, replay and threads suites, 8 processes at once, $rounds rounds, ${limit}s each, with ${runner[0]##*/}"
  budget=${CREC_STRESS_BUDGET:-0} started=$(date +%s) last=0 done_rounds=0
  for r in $(seq 1 "$rounds"); do
    if [ "$budget" -gt 0 ] && [ $(($(date +%s) - started + last + last / 4)) -gt "$budget" ]; then
      echo "stress: stopping after $done_rounds rounds: another would likely end past CREC_STRESS_BUDGET=${budget}s"
      break
    fi
    pids=()
    t0=$(date +%s)
    for p in 1 2 3 4 5 6 7 8; do
      log="$out/stress_r${r}_p${p}.log"
      # one test at a time in each process: 8 test processes share the GPU
      ( t=$(date +%s)
        timeout -k 10 "$limit" "${runner[@]}" --filter 'control/*' || exit $?
        echo "stress: control suite took $(($(date +%s) - t)) s"
        t=$(date +%s)
        timeout -k 10 "$limit" "${runner[@]}" --filter 'replay/*' || exit $?
        echo "stress: replay suite took $(($(date +%s) - t)) s"
        t=$(date +%s)
        timeout -k 10 "$limit" "${runner[@]}" --filter 'threads/*' || exit $?
        echo "stress: threads suite took $(($(date +%s) - t)) s" ) >"$log" 2>&1 &
      pids+=($!)
    done
    round_hangs=0 round_fails=0 slowest=0
    for i in "${!pids[@]}"; do
      wait "${pids[$i]}"
      rc=$?
      log="$out/stress_r${r}_p$((i + 1)).log"
      runs=$((runs + 1))
      if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        round_hangs=$((round_hangs + 1))
        echo "  round $r process $((i + 1)): HANG (a suite did not finish within ${limit}s); last lines:"
        grep -E '^\[(RUN|PASS)|^stress:' "$log" | tail -2
      elif [ $rc -ne 0 ]; then
        round_fails=$((round_fails + 1))
        echo "  round $r process $((i + 1)): FAILED (exit $rc)"
        grep -E '^\[FAIL\]|Assertion' "$log" | head -5
      else
        for d in $(sed -n 's/^stress: .* suite took \([0-9]*\) s$/\1/p' "$log"); do
          [ "$d" -gt "$slowest" ] && slowest=$d
        done
        # each test's time, for the slowest-tests table at the end
        sed -n 's/^\[PASS\] \(.*\): (\([0-9.]*\)s)$/\2 \1/p' "$log" >>"$out/stress_times.txt"
        rm -f "$log"
      fi
    done
    last=$(($(date +%s) - t0)) done_rounds=$r
    hangs=$((hangs + round_hangs))
    fails=$((fails + round_fails))
    echo "round $r: $((8 - round_hangs - round_fails)) of 8 passed, $round_hangs hung, $round_fails failed ($(($(date +%s) - t0)) s; slowest suite that passed: $slowest s of the ${limit}s limit)"
  done
  if [ -s "$out/stress_times.txt" ]; then
    echo "slowest tests (seconds: mean and max over the processes that passed):"
    awk '{ n[$2]++; s[$2] += $1; if ($1 > m[$2]) m[$2] = $1 }
      END { for (t in n) printf "%8.2f %8.2f  %s\n", s[t] / n[t], m[t], t }' "$out/stress_times.txt" | sort -rn | head -10
  fi
  echo "stress: $runs runs ($done_rounds rounds x 8 processes): $hangs hangs, $fails failures"
  [ $hangs -eq 0 ] && [ $fails -eq 0 ] || status=1
  exit $status
fi

# --sanitize
command -v compute-sanitizer >/dev/null || PATH="/usr/local/cuda/bin:$PATH"
command -v compute-sanitizer >/dev/null || { echo "gpu-check.sh: compute-sanitizer not found" >&2; exit 2; }
total=0
# sanitize TOOL NAME CMD...: runs CMD under TOOL with default options, counts its errors
sanitize() {
  local tool=$1 name=$2
  shift 2
  local log="$out/sanitize_${tool}_${name}.log"
  local began=$SECONDS
  compute-sanitizer --tool "$tool" "$@" >"$log" 2>&1
  local rc=$?
  local took=$((SECONDS - began))
  # memcheck, synccheck and initcheck end with "ERROR SUMMARY: N errors"; racecheck
  # with "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)"
  local errors
  errors=$(grep -E '^========= (ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: .*\([0-9]+ error)' "$log" |
    sed -E 's/.*ERROR SUMMARY: ([0-9]+) error.*/\1/; s/.*\(([0-9]+) error.*/\1/' | awk '{s += $1} END {print s + 0}')
  local runs
  runs=$(grep -cE '^========= (ERROR|RACECHECK) SUMMARY' "$log")
  # API errors that NCCL makes inside its own calls (its init probes kernels with
  # cudaFuncGetAttributes): the first frame of the backtrace outside libcuda is
  # libnccl's. They are NCCL's, not crec's, and a user sees them without crec too.
  local nccl
  nccl=$(awk '/^========= Program hit/ { open = 1; next }
    open && /Host Frame:/ && !/ in libcuda\.so/ { if (/ in libnccl\.so/) n++; open = 0 }
    END { print n + 0 }' "$log")
  # capture's import asks a kernel for parameters until the driver refuses one,
  # on a driver without cuFuncGetParamCount (CUDA 13.0's): once per kernel and
  # process (docs/capture.md). Said on their own, like NCCL's.
  local probes
  probes=$(awk '/^========= Program hit/ { open = 1; probe = /cuFuncGetParamInfo/; next }
    open && /Host Frame:/ && !/ in libcuda\.so/ { if (probe && /probe_layout/ && / in libcrec/) n++; open = 0 }
    END { print n + 0 }' "$log")
  # the outer suite's refusal of the legacy stream during another stream's global
  # capture: cuStreamIsCapturing answering CUDA_ERROR_STREAM_CAPTURE_IMPLICIT is
  # how CUDA says so, and crec turns it into its named error (crec_exec_replay in include/crec/exec.h)
  local implicit
  implicit=$(awk '/^========= Program hit CUDA_ERROR_STREAM_CAPTURE_IMPLICIT .* cuStreamIsCapturing/ { open = 1; next }
    open && /Host Frame:/ && !/ in libcuda\.so/ { if (/ in libcrec/) n++; open = 0 }
    END { print n + 0 }' "$log")
  local own=$((errors - nccl - probes - implicit))
  local note=""
  [ "$nccl" -gt 0 ] && note=" ($nccl of them inside NCCL's own calls, not counted)"
  [ "$probes" -gt 0 ] && note="$note ($probes of them capture's parameter probes on a driver without cuFuncGetParamCount, not counted)"
  [ "$implicit" -gt 0 ] && note="$note ($implicit of them crec asking whether the legacy stream captures during a global capture, which it then refuses by name, not counted)"
  [ "$runs" -eq 0 ] && note="$note -- no sanitizer summary: the target did not run under it (see $log)"
  printf '%-10s %-28s exit %d, %d errors (%d processes, %d s)%s\n' "$tool" "$name" "$rc" "$own" "$runs" "$took" "$note"
  local ok=0
  [ "$own" -eq 0 ] && [ $rc -eq 0 ] && [ "$runs" -gt 0 ] || ok=1
  # (a file, not variables: with CREC_SANITIZE_JOBS the runs are subshells)
  echo "$own $ok" >"$out/.sanitize_${tool}_${name}.result"
}
# adds up the results the runs left
tally() {
  local f own ok
  for f in "$out"/.sanitize_*.result; do
    [ -f "$f" ] || continue
    read -r own ok <"$f"
    total=$((total + own))
    [ "$ok" -eq 0 ] || status=1
  done
}
# the tool runs of the gpu_tool suite take several times longer under the sanitizer,
# and its benchmark tests run a few executions of a smaller chain there
export CREC_TEST_TOOL_TIMEOUT=${CREC_TEST_TOOL_TIMEOUT:-600}
export CREC_TEST_SANITIZER=1
echo "== compute-sanitizer, default options (over the suites: ${CREC_SANITIZE_SUITE_TOOLS-memcheck})"
# one test at a time: memcheck itself fails a WHILE holding a SWITCH when other
# processes use the GPU at once (CUDA_ERROR_ILLEGAL_ADDRESS, no access named),
# a hand-built graph without crec too; on an H100 (07ee527) also plain WHILE loops
# of the control suite and gpu_fft's loop and branch, which passed when the suites ran one
# at a time (earlier rounds). gpu_profile is not among them: the
# sanitizer holds CUPTI, which a profile needs alone (its tests skip, saying so)
# (an entry with a slash is a Criterion filter of its own: "gpu_tool/[a-f]*" runs part
# of a suite; --verbose leaves each test's name in the log, for a run cut short)
# (split on spaces, never matched against files: "replay/*" must not become replay/'s sources)
read -ra suites <<< "${CREC_SANITIZE_SUITES-control replay capture gpu_feed library gpu_fft gpu_cholesky gpu_conv gpu_lower gpu_lower_library gpu_tool outer embed threads}"
# CREC_SANITIZE_JOBS=N runs N suites (or parts) at once, each still one test at a
# time; those in CREC_SANITIZE_ALONE (default: the control and gpu_fft suites, for
# the reason above) then run alone, after the others
rm -f "$out"/.sanitize_*.result
jobs_max=${CREC_SANITIZE_JOBS:-1}
alone=" ${CREC_SANITIZE_ALONE-control gpu_fft} "
suite_run() { # TOOL SUITE
  local filter="$2/*" name=$2
  case $2 in */*) filter=$2 name=$(printf '%s' "$2" | tr -c 'A-Za-z0-9_\n-' '_') ;; esac
  sanitize "$1" "$name" "$tests" -j1 --verbose --filter "$filter"
}
for tool in ${CREC_SANITIZE_SUITE_TOOLS-memcheck}; do
  later=()
  for suite in "${suites[@]}"; do
    if [ "$jobs_max" -le 1 ]; then
      suite_run "$tool" "$suite"
    elif [[ $alone == *" ${suite%%/*} "* ]]; then
      later+=("$suite")
    else
      while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
      suite_run "$tool" "$suite" &
    fi
  done
  wait
  for suite in "${later[@]}"; do suite_run "$tool" "$suite"; done
done
crec="$build/tools/crec"
examples=()
for f in examples/*.mlir; do
  n=$(basename "$f" .mlir)
  # image.mlir loads a kernel image the build puts next to its copy
  [ -f "$build/examples/$n.mlir" ] && f="$build/examples/$n.mlir"
  examples+=("$n:$f")
done
for tool in ${CREC_SANITIZE_TOOLS-memcheck racecheck synccheck initcheck}; do
  for e in "${examples[@]}"; do
    n=${e%%:*} f=${e#*:}
    args=(run "$f" --iters 3 --check)
    mapfile -t -O "${#args[@]}" args < <(crec_example_args "$n")
    sanitize "$tool" "$n" "$crec" "${args[@]}"
  done
  # (examples/chain only prints a program: it makes no CUDA call to check)
  for c in quickstart capture; do
    [ -x "$build/examples/$c" ] && sanitize "$tool" "c_$c" "$build/examples/$c"
  done
done
tally
echo "sanitize: $total errors"
exit $status
