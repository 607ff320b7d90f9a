#!/usr/bin/env bash
# Builds comet-runtime and runs every test: the format check, the unit tests
# (ctest, no root needed), the integration suites (as root, against the real
# kernel, engines included), then the same tests under ASan+UBSan and each
# libFuzzer target for a short fixed time (COMET_FUZZ_SECONDS, default 30).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/build.sh"
echo "== format check (clang-format)"
cd "$top"
files=$(git ls-files '*.cpp' '*.hpp' 2>/dev/null || find oci seccomp capability runtime tests -name '*.[ch]pp')
clang-format --dry-run --Werror $files
echo "== unit tests"
(cd "$top/build" && ctest --output-on-failure -j"$(nproc)")
echo "== integration tests"
if [[ $(id -u) -ne 0 ]]; then
  echo "integration tests need root" >&2
  exit 1
fi
COMET_RUNTIME="$top/build/runtime/comet-runtime" PROBE="$top/build/integration/comet-probe" \
  /usr/bin/python3 -m pytest "$top/integration" -q -p no:cacheprovider
echo "== sanitizers (ASan+UBSan): unit and integration tests"
bash "$top/scripts/sanitize.sh"
echo "== fuzzing (${COMET_FUZZ_SECONDS:-30} s per target)"
bash "$top/scripts/fuzz.sh" "${COMET_FUZZ_SECONDS:-30}"
