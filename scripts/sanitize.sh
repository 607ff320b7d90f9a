#!/usr/bin/env bash
# Builds comet-runtime with ASan+UBSan (g++, -DCOMET_SANITIZE=ON) into
# build-asan/, runs the unit tests there, then the integration suite against
# the sanitized comet-runtime (as root; the probe comes from the normal build).
#
# Usage: scripts/sanitize.sh [--unit-only] [extra pytest args]
# Environment: ASAN_OPTIONS / UBSAN_OPTIONS override the defaults below.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
unit_only=0
if [[ ${1:-} == --unit-only ]]; then
  unit_only=1
  shift
fi
bash "$top/scripts/deps.sh"

# detect_leaks=1: LeakSanitizer at exit of every instrumented process (the
#   container child leaves through execve or _exit(), neither of which runs
#   LSan, so the child itself never reports).
# abort_on_error=1: a finding kills the process with SIGABRT, so a test sees
#   a failure instead of a clean exit code.
# The runtime writes its own stderr into the log files tests read; ASan
# reports go to stderr as well (log_path is left unset on purpose so that
# pytest shows them in the failure output).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# COMET_WERROR=OFF: with -O2 and -fsanitize=address,undefined, g++ 12 reports
# -Wmaybe-uninitialized inside libstdc++'s <regex> (std::function in
# std::__detail::_State, reached from capability/src/util.cpp and
# yaml_read.cpp): a false positive of the sanitizer instrumentation, not a
# project bug. The warnings are still printed.
echo "== configure + build (build-asan, ASan+UBSan)"
cmake -S "$top" -B "$top/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCOMET_SANITIZE=ON -DCOMET_WERROR=OFF >/dev/null
cmake --build "$top/build-asan" -j"$(nproc)"

echo "== unit tests (sanitized)"
(cd "$top/build-asan" && ctest --output-on-failure -j"$(nproc)")

((unit_only)) && exit 0

echo "== integration tests (sanitized comet-runtime)"
if [[ $(id -u) -ne 0 ]]; then
  echo "integration tests need root" >&2
  exit 1
fi
probe="$top/build/integration/comet-probe"
if [[ ! -x $probe ]]; then
  # comet-probe is static and never sanitized; the normal build provides it.
  cmake -S "$top" -B "$top/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$top/build" --target comet-probe
fi
cd "$top"
COMET_RUNTIME="$top/build-asan/runtime/comet-runtime" PROBE="$probe" \
  /usr/bin/python3 -m pytest integration -q -p no:cacheprovider --ignore=integration/engines "$@"
