#!/usr/bin/env bash
# Egress benchmark (docs/egress.md): filtered vs the same container with no
# filter, side by side. As root.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/build.sh"
exec /usr/bin/python3 "$top/bench/egress.py" "$@"
