#!/usr/bin/env bash
# Builds comet-runtime and runs every test, in stages:
#   deps                  Debian packages (scripts/deps.sh, idempotent)
#   build (release)       g++ Release into build/ (scripts/build.sh)
#   package               the Debian package (cpack -G DEB), its Depends
#                         checked, installed with dpkg -i under CI (purged at
#                         the stage's end; unpacked with dpkg -x otherwise) and
#                         one smoke `pack run` from it (scripts/package.sh)
#   format                clang-format --dry-run on every tracked C++ file
#   unit                  the unit tests (ctest, no root needed)
#   integration           the integration suites, as root, against the real
#                         kernel, engines included (scripts/itest.sh:
#                         in parallel, then the serial group)
#   build (sanitizer)     clang ASan+UBSan+fuzzer coverage into build-san/
#   unit (sanitizer)      the unit tests again, sanitized
#   integration (sanitizer)  the integration suites against the sanitized
#                         runtime (engines left out, scripts/sanitize.sh)
#   fuzz                  every libFuzzer target: its corpus replayed, then
#                         COMET_FUZZ_SECONDS (default 25) per target, all at once
# and ends with a table of each stage's wall time. The first failing stage
# stops the run (exit 1) after printing the table so far.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

names=()
secs=()
ms() { echo $(($(date +%s%N) / 1000000)); }
t_all=$(ms)
table() {
  echo
  echo "== stage times (wall)"
  local i total
  for i in "${!names[@]}"; do
    printf '  %-26s %6d.%d s\n' "${names[$i]}" $((secs[i] / 1000)) $((secs[i] % 1000 / 100))
  done
  total=$(($(ms) - t_all))
  printf '  %-26s %6d.%d s (%d min %d s)\n' "total" $((total / 1000)) $((total % 1000 / 100)) \
    $((total / 60000)) $((total / 1000 % 60))
}
stage() {
  local name=$1
  shift
  echo "== $name"
  local t0 rc=0
  t0=$(ms)
  "$@" || rc=$?
  names+=("$name")
  secs+=($(($(ms) - t0)))
  if ((rc != 0)); then
    echo "comet: stage '$name' failed (exit $rc)" >&2
    table
    exit 1
  fi
}

format_check() {
  local files
  files=$(git ls-files '*.cpp' '*.hpp' 2>/dev/null || find oci seccomp capability egress runtime tests -name '*.[ch]pp')
  # shellcheck disable=SC2086
  clang-format --dry-run --Werror $files
}
unit() { (cd "$top/build" && ctest --output-on-failure -j"$(nproc)"); }
integration() {
  COMET_RUNTIME="$top/build/runtime/comet-runtime" PROBE="$top/build/integration/comet-probe" \
    bash "$top/scripts/itest.sh"
}

if [[ $(id -u) -ne 0 ]]; then
  echo "the integration tests need root: run this as root (sudo bash scripts/test.sh)" >&2
  exit 1
fi

stage "deps" bash scripts/deps.sh
stage "build (release)" bash scripts/build.sh
stage "package" bash scripts/package.sh
stage "format" format_check
stage "unit" unit
stage "integration" integration
stage "build (sanitizer)" bash scripts/build-san.sh
stage "unit (sanitizer)" bash scripts/sanitize.sh --no-build unit
stage "integration (sanitizer)" bash scripts/sanitize.sh --no-build integration
stage "fuzz" bash scripts/fuzz.sh "${COMET_FUZZ_SECONDS:-25}"
table
