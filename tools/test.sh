#!/usr/bin/env bash
# Builds crec (tools/setup.sh) and runs the whole test suite: the CPU suites,
# the GPU suites and the multi-GPU tests with one rank (both skip, saying why,
# without a CUDA device), the Python package's tests (python/tests, pytest; its
# GPU tests skip likewise), an install and a build against it (the installed
# crec and the consumers run with no LD_LIBRARY_PATH), then the check that no
# binary needs libcuda.so.1 at load time.
# Environment: BUILD_DIR (default build/), CMAKE_ARGS (extra CMake arguments),
# PYTHON (the interpreter for pytest; default /usr/bin/python3),
# CREC_TEST_CPU_ONLY=1 to skip the GPU runner and the install check (the
# sanitized reruns: a consumer of a sanitized libcrec would need the sanitizer
# runtime); the one-rank multi-GPU run stays, to check its no-device path too.
# A ThreadSanitizer build (CMAKE_ARGS=-DCREC_SANITIZE=thread) runs with
# TSAN_OPTIONS halt_on_error=1 exitcode=66 (unless TSAN_OPTIONS is set), so a
# data race it reports fails the test that reached it, and the run.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
tools/setup.sh

# the sanitizer libcrec is built with, if any (grep without -q reads all of nm's
# output: under pipefail, an early exit would fail nm)
sanitizer=""
if nm -D --undefined-only "$build_dir/libcrec.so.0" 2>/dev/null | grep __asan >/dev/null; then
  sanitizer=AddressSanitizer
elif nm -D --undefined-only "$build_dir/libcrec.so.0" 2>/dev/null | grep __tsan >/dev/null; then
  sanitizer=ThreadSanitizer
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1 exitcode=66 second_deadlock_stack=1}
  echo "== ThreadSanitizer build: TSAN_OPTIONS=$TSAN_OPTIONS"
fi

status=0
echo "== CPU suites ($build_dir/tests/crec_tests)"
"$build_dir/tests/crec_tests" || status=1
if [ "${CREC_TEST_CPU_ONLY:-0}" != 1 ] && [ -x "$build_dir/tests/crec_gpu_tests" ]; then
  echo "== GPU suites ($build_dir/tests/crec_gpu_tests; each skip says why)"
  "$build_dir/tests/crec_gpu_tests" --verbose || status=1
fi

if [ -x "$build_dir/tests/crec_multi_tests" ]; then
  echo "== multi-GPU tests, one rank (tools/crec-launch; each skip says why; N ranks: docs/multi-gpu.md)"
  tools/crec-launch -n 1 --timeout 300 -- "$build_dir/tests/crec_multi_tests" || status=1
fi

# The Python package over this build's libcrec, with Debian's python3 (where setup.sh
# installs pytest; PYTHON picks another). A sanitized libcrec would need its runtime
# preloaded into Python, so those reruns leave the package out.
echo "== Python package (python/tests with pytest; GPU tests skip, saying why, without a device)"
python=${PYTHON:-/usr/bin/python3}
[ -x "$python" ] || python=python3
if [ -n "$sanitizer" ]; then
  echo "skipped: $build_dir/libcrec.so.0 is built with $sanitizer"
else
  CREC_LIBRARY_PATH="$PWD/$build_dir" CREC_TOOL="$PWD/$build_dir/tools/crec" PYTHONDONTWRITEBYTECODE=1 \
    "$python" -m pytest -rs -p no:cacheprovider python/tests || status=1
fi

if [ "${CREC_TEST_CPU_ONLY:-0}" != 1 ]; then
echo "== install, then build against the installed crec (CMake package and pkg-config)"
prefix="$PWD/$build_dir/_install"
rm -rf "$prefix" "$build_dir/_consumer"
# everything installed runs as a user would run it: no LD_LIBRARY_PATH (the RUNPATHs
# of bin/crec, libcrec and the front end find what they need)
plain="env -u LD_LIBRARY_PATH"
if cmake --install "$build_dir" --prefix "$prefix" >/dev/null &&
   cmake -S tests/install -B "$build_dir/_consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null &&
   cmake --build "$build_dir/_consumer" >/dev/null &&
   $plain "$build_dir/_consumer/consumer" | grep -q '"name":"x"' &&
   PKG_CONFIG_PATH="$prefix/lib/pkgconfig" cc tests/install/consumer.c $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs crec) \
     -Wl,-rpath,"$prefix/lib" -o "$build_dir/_consumer/consumer_pc" &&
   $plain "$build_dir/_consumer/consumer_pc" | grep -q '"name":"x"'; then
  echo "installed crec found by find_package(crec) and pkg-config"
else
  echo "FAIL: building against the installed crec" >&2
  status=1
fi
echo "== the installed crec, with no LD_LIBRARY_PATH: --version, and dump of an example"
if $plain "$prefix/bin/crec" --version | grep -qx "crec $("$build_dir/tools/crec" --version | cut -d' ' -f2)" &&
   { [ ! -e "$prefix/lib/libcrec-mlir.so" ] || $plain "$prefix/bin/crec" dump examples/chain.mlir | grep -q '^program: 3 commands'; }; then
  echo "installed crec runs"
else
  echo "FAIL: the installed crec does not run" >&2
  status=1
fi
if [ -e "$prefix/lib/libcrec-mlir.so" ]; then
  echo "== lowering against the installed crec: through libcrec.so, and with libcrec-mlir.a linked in"
  if $plain "$build_dir/_consumer/consumer_lower" | grep -q '"kind":"memset"' &&
     $plain "$build_dir/_consumer/consumer_lower_static" | grep -q '"kind":"memset"'; then
    echo "installed front end found beside libcrec, and linked statically"
  else
    echo "FAIL: lowering against the installed crec" >&2
    status=1
  fi
fi
fi

echo "== no binary may need libcuda.so.1 at load time"
while IFS= read -r f; do
  if readelf -d "$f" 2>/dev/null | grep -q 'NEEDED.*libcuda\.so'; then
    echo "FAIL: $f lists libcuda.so as NEEDED" >&2
    status=1
  fi
done < <(find "$build_dir" -type f \( -perm -u+x -o -name '*.so*' -o -name '*.a' \) -not -name '*.cmake')
[ $status -eq 0 ] && echo "== all tests passed" || echo "== FAILED" >&2
exit $status
