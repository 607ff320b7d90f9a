#!/usr/bin/env bash
# Pack benchmarks: compile time and pack run overhead (see bench/pack.py).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/build.sh"
exec /usr/bin/python3 "$top/bench/pack.py" "$@"
