#!/usr/bin/env bash
# Rootless run of /bin/true: comet-runtime vs runc as the same ordinary user (as root).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/build.sh"
exec /usr/bin/python3 "$top/bench/rootless.py" "$@"
