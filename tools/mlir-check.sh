#!/usr/bin/env bash
# A lit-style checker for folders of MLIR test programs (upstream's
# mlir/test/Integration/GPU/CUDA, a user's, the project's own): every .mlir file
# under each DIR runs through `crec run --quiet` (recorded as a CUDA graph and
# replayed once), and what it prints goes through FileCheck against the file's
# own CHECK lines.
#
#   tools/mlir-check.sh [--verbose] [--check] DIR_OR_FILE...
#
# --check: a file whose output passes FileCheck then runs again under
# `crec run --check --iters 3`: three replays, the arguments rotated over three
# buffer sets, each compared byte for byte with the eager executor. The PASS
# line says so; a mismatch or an error is a FAIL (`--check:` and why). A run
# whose kernel assertion failed is not run again.
#
# The entry function comes from the RUN command that runs the program (`-e
# NAME`, `--entry NAME` or `-entry-point=NAME`), else `main`; a
# `--check-prefix=P` or `--check-prefixes=P,Q` there goes to FileCheck (not
# one of an earlier command that checks what a compiler prints). A file
# without CHECK lines is skipped, and so is one whose RUN lines run no program
# (no mlir-runner, mlir-cpu-runner or crec run: they check what a compiler
# prints). One line per file (PASS, FAIL with the first line of why, SKIP),
# then `N passed, M failed, K skipped`. A program whose kernel assertion fails
# (crec run's exit status 3) is checked like one that ran: its CHECK lines say
# whether the messages were expected. When the RUN line sends standard error
# along (`2>&1`), FileCheck reads it after standard output. Exits 1 when a
# file failed, 2 on bad usage.
#
# Environment: CREC (default: build/tools/crec of this checkout), FILECHECK
# (default: FileCheck-19, which tools/setup.sh installs with llvm-19-tools),
# CREC_CHECK_TIMEOUT (seconds each execution may take, default 120: crec run
# --timeout, so a kernel that never ends fails the file with crec's message;
# a whole run gets 60 s more, for lowering).
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
crec=${CREC:-$here/build/tools/crec}
filecheck=${FILECHECK:-FileCheck-19}
limit=${CREC_CHECK_TIMEOUT:-120}
verbose=0
replays=0

usage() {
  sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'
}

args=()
for a in "$@"; do
  case $a in
    -h | --help) usage; exit 0 ;;
    -v | --verbose) verbose=1 ;;
    --check) replays=1 ;;
    -*) echo "mlir-check.sh: unknown option '$a' (try --help)" >&2; exit 2 ;;
    *) args+=("$a") ;;
  esac
done
if [ ${#args[@]} -eq 0 ]; then
  echo "mlir-check.sh: give at least one folder or file (try --help)" >&2
  exit 2
fi
if [ ! -x "$crec" ]; then
  echo "mlir-check.sh: no crec at $crec (build it, or set CREC)" >&2
  exit 2
fi
if ! command -v "$filecheck" >/dev/null 2>&1; then
  echo "mlir-check.sh: no $filecheck (install llvm-19-tools, or set FILECHECK)" >&2
  exit 2
fi

files=()
for a in "${args[@]}"; do
  if [ -d "$a" ]; then
    while IFS= read -r -d '' f; do files+=("$f"); done < <(find "$a" -name '*.mlir' -type f -print0 | sort -z)
  elif [ -f "$a" ]; then
    files+=("$a")
  else
    echo "mlir-check.sh: '$a' is neither a folder nor a file" >&2
    exit 2
  fi
done

passed=0 failed=0 skipped=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for f in "${files[@]}"; do
  run=$(grep -E '^[[:space:]]*//[[:space:]]*RUN:' "$f" | sed -E 's/^[[:space:]]*\/\/[[:space:]]*RUN:[[:space:]]*//' | tr '\n' ' ')
  # the RUN command that runs the program (lines ending in \ continue it): its
  # entry and check prefixes are the ones that apply, not those of a command
  # before it that checks what a compiler prints
  prog=$(grep -E '^[[:space:]]*//[[:space:]]*RUN:' "$f" | sed -E 's/^[[:space:]]*\/\/[[:space:]]*RUN:[[:space:]]*//' |
         awk '{ if (sub(/\\[[:space:]]*$/, "")) { cmd = cmd $0 " " } else { print cmd $0; cmd = "" } }
              END { if (cmd != "") print cmd }' |
         grep -E '(mlir-runner|mlir-cpu-runner|crec run)' | head -1)
  [ -n "$prog" ] || prog=$run
  entry=$(printf '%s' "$prog" | grep -oE '(^|[[:space:]])(-e|--entry|-entry-point)[= ][A-Za-z_][A-Za-z0-9_.$]*' | head -1 |
          sed -E 's/.*(-e|--entry|-entry-point)[= ]//')
  entry=${entry:-main}
  prefixes=$(printf '%s' "$prog" | grep -oE -- '--check-prefix(es)?=[A-Za-z0-9_,-]+' | head -1)
  pattern=CHECK
  if [ -n "$prefixes" ]; then pattern=$(printf '%s' "${prefixes#*=}" | tr ',' '|'); fi
  if ! grep -qE "($pattern)(-NEXT|-SAME|-NOT|-DAG|-LABEL|-EMPTY|-COUNT-[0-9]+)?:" "$f"; then
    echo "SKIP $f: no CHECK lines"
    skipped=$((skipped + 1))
    continue
  fi
  if [ -n "$run" ] && ! printf '%s' "$run" | grep -qE '(mlir-runner|mlir-cpu-runner|crec run)'; then
    echo "SKIP $f: its RUN lines run no program (they check what a compiler prints)"
    skipped=$((skipped + 1))
    continue
  fi
  out=$work/out err=$work/err
  timeout $((limit + 60)) "$crec" run --quiet --timeout "$limit" --entry "$entry" "$f" >"$out" 2>"$err"
  rc=$?
  # a RUN line that sends the runner's standard error along (2>&1) checks it
  # too: a failed device assertion's messages are there
  if printf '%s' "$prog" | grep -qE '2>&1'; then cat "$err" >>"$out"; fi
  # 3: a kernel's assertion failed, its messages on standard error. Upstream's
  # runner carries on past one (its CUDA wrappers only print the error), and a
  # test of assertions checks their messages: FileCheck decides
  if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then
    why=$(grep -m1 . "$err" || true)
    [ $rc -eq 124 ] && why="timed out after $((limit + 60)) s"
    echo "FAIL $f: crec run exited $rc: ${why:-no message}"
    failed=$((failed + 1))
    continue
  fi
  if grep -q 'no CUDA device is available' "$err"; then
    echo "FAIL $f: nothing ran: $(grep -m1 'no CUDA device is available' "$err")"
    failed=$((failed + 1))
    continue
  fi
  # shellcheck disable=SC2086
  if "$filecheck" "$f" ${prefixes:+"$prefixes"} --input-file "$out" >"$work/fc" 2>&1; then
    if [ $replays -eq 1 ] && [ $rc -eq 0 ]; then
      timeout $((limit + 60)) "$crec" run --check --iters 3 --timeout "$limit" --entry "$entry" "$f" >"$out" 2>"$err"
      crc=$?
      said=$(grep -m1 '^check passed' "$out" || true)
      if [ $crc -ne 0 ] || [ -z "$said" ]; then
        why=$(grep -m1 . "$err" || true)
        [ $crc -eq 124 ] && why="timed out after $((limit + 60)) s"
        echo "FAIL $f: --check: crec run exited $crc: ${why:-no message}"
        failed=$((failed + 1))
        continue
      fi
      echo "PASS $f (${said#check passed: })"
    else
      echo "PASS $f"
    fi
    passed=$((passed + 1))
  else
    echo "FAIL $f: FileCheck: $(grep -m1 'error:' "$work/fc" | sed -E 's/^[^:]*:[0-9]+:[0-9]+: //')"
    [ $verbose -eq 1 ] && sed 's/^/    /' "$work/fc"
    failed=$((failed + 1))
  fi
done

echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
