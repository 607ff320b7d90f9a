#!/usr/bin/env bash
# comet-runtime vs runc under podman, ctr and containerd's CRI, side by side.
#   bash bench/engines.sh [-n N] [--only podman|ctr|cri]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/build.sh"
exec /usr/bin/python3 "$top/bench/engines.py" "$@"
