#!/usr/bin/env bash
# 50-way parallel create+start: comet-runtime vs runc, side by side.
# COMET_RUNTIME=/path/to/comet-runtime skips the build (default: build/ via scripts/build.sh).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${COMET_RUNTIME:-}" ]; then
  bash "$top/scripts/build.sh"
fi
exec /usr/bin/python3 "$top/bench/parallel.py" "$@"
