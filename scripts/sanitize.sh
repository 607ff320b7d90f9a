#!/usr/bin/env bash
# The tests under ASan+UBSan, with the sanitizer build (build-san/, clang;
# scripts/build-san.sh builds it unless --no-build):
#   unit          the unit tests (ctest in build-san/)
#   integration   the integration suite against the sanitized comet-runtime
#                 (as root; the probe comes from the normal build, it is static
#                 and never sanitized), in parallel then serial as
#                 scripts/itest.sh runs it. The engine suites are left out:
#                 podman and containerd call the same verbs with the same
#                 configs that the lifecycle suites already run sanitized.
#
# Usage: scripts/sanitize.sh [--no-build] [unit|integration|all] [extra pytest args]
# Environment: ASAN_OPTIONS / UBSAN_OPTIONS override the defaults below.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=1
if [[ ${1:-} == --no-build ]]; then
  build=0
  shift
fi
what=all
case ${1:-} in
  unit | integration | all)
    what=$1
    shift
    ;;
esac

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

if ((build)); then
  echo "== build (build-san: clang, ASan+UBSan, fuzzer coverage)"
  bash "$top/scripts/build-san.sh"
fi

if [[ $what == unit || $what == all ]]; then
  echo "== unit tests (sanitized)"
  (cd "$top/build-san" && ctest --output-on-failure -j"$(nproc)")
fi

if [[ $what == integration || $what == all ]]; then
  echo "== integration tests (sanitized comet-runtime)"
  probe="$top/build/integration/comet-probe"
  if [[ ! -x $probe ]]; then
    bash "$top/scripts/build.sh" comet-probe
  fi
  # The churn (reliability/test_churn.py) repeats five kinds of lifecycle
  # round robin: each cycle of a kind runs the same runtime code as the one
  # before it, and the machine-wide check after it is the release run's,
  # with 500 cycles. 150 here (30 of each kind) under the sanitizer.
  # The same for test_create_sync.py's repeated runs of the slow path
  # (150 in the release run): 50 here, the longest test of this run (74 s).
  COMET_CHURN_CYCLES=${COMET_CHURN_CYCLES:-150} COMET_SYNC_RUNS=${COMET_SYNC_RUNS:-50} \
    COMET_RUNTIME="$top/build-san/runtime/comet-runtime" PROBE="$probe" \
    bash "$top/scripts/itest.sh" --ignore=integration/engines "$@"
fi
