#!/usr/bin/env bash
# Side-by-side lifecycle benchmark: comet-runtime vs runc vs crun.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/build.sh"
exec /usr/bin/python3 "$top/bench/lifecycle.py" "$@"
