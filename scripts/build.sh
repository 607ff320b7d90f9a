#!/usr/bin/env bash
# Configures and builds comet-runtime (Release, g++) into build/.
# Usage: scripts/build.sh [TARGET...]   (default: everything)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/deps.sh"
cmake -S "$top" -B "$top/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
if (($#)); then
  cmake --build "$top/build" -j"$(nproc)" --target "$@"
else
  cmake --build "$top/build" -j"$(nproc)"
fi
