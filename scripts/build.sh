#!/usr/bin/env bash
# Configures and builds comet-runtime (Release) into build/.
# Usage: scripts/build.sh [extra cmake args]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/deps.sh"
cmake -S "$top" -B "$top/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$top/build" -j"$(nproc)"
