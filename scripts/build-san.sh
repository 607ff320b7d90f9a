#!/usr/bin/env bash
# Configures and builds the sanitizer build into build-san/: clang with
# ASan+UBSan, and libFuzzer's coverage instrumentation (-fsanitize=
# fuzzer-no-link) on the libraries the fuzz targets link. One build serves
# the sanitized unit tests, the sanitized integration run and the fuzz
# targets (scripts/sanitize.sh, scripts/fuzz.sh).
#
# Usage: scripts/build-san.sh [TARGET...]
#   default targets: comet-runtime comet-confine-probe comet_unit_tests comet_fuzz
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
targets=("$@")
((${#targets[@]})) || targets=(comet-runtime comet-confine-probe comet_unit_tests comet_fuzz)
bash "$top/scripts/deps.sh"
cmake -S "$top" -B "$top/build-san" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCOMET_SANITIZE=ON -DCOMET_FUZZ=ON >/dev/null
cmake --build "$top/build-san" -j"$(nproc)" --target "${targets[@]}"
