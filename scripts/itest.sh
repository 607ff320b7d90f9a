#!/usr/bin/env bash
# Runs the integration suite (as root) against $COMET_RUNTIME in two parts
# (integration/README.md, "Parallel and serial"):
#   1. every test not marked `serial`, on COMET_ITEST_WORKERS pytest-xdist
#      workers; a test file (or a group of files sharing a fixed resource)
#      runs on one worker at a time;
#   2. the `serial` tests (machine snapshots, engines, host-wide singletons),
#      alone, one after another.
# Both parts must pass. Extra arguments go to both pytest runs; a -m of the
# caller's is refused (it would replace the parts' own -m, and run serial
# tests beside others): select with -k or paths.
#
# Usage: scripts/itest.sh [pytest args...]
# Environment: COMET_RUNTIME, PROBE (integration/README.md),
#   COMET_ITEST_WORKERS (default: 2 per core, at least 2; 1 = no xdist).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [[ $(id -u) -ne 0 ]]; then
  echo "integration tests need root" >&2
  exit 1
fi
for a in "$@"; do
  if [[ $a == -m || $a == -m* ]]; then
    echo "itest.sh: -m is the parts' own (serial or not): select with -k or paths" >&2
    exit 2
  fi
done
workers=${COMET_ITEST_WORKERS:-$(($(nproc) * 2 > 2 ? $(nproc) * 2 : 2))}
py=(/usr/bin/python3 -m pytest integration -q -p no:cacheprovider --durations=10)

rc=0
if ((workers > 1)); then
  "${py[@]}" -n "$workers" --dist loadgroup -m "not serial" "$@" || rc=$?
else
  "${py[@]}" -m "not serial" "$@" || rc=$?
fi
rc2=0
"${py[@]}" -m serial "$@" || rc2=$?
# 5: no test collected. One part may select nothing (e.g. -k naming only
# parallel tests); both is a selection that ran no test at all: a failure.
if ((rc == 5 && rc2 == 5)); then
  echo "integration: no test was selected" >&2
  exit 1
fi
((rc == 5)) && rc=0
((rc2 == 5)) && rc2=0
if ((rc != 0 || rc2 != 0)); then
  echo "integration: parallel part exit $rc, serial part exit $rc2" >&2
  exit 1
fi
