#!/usr/bin/env bash
# The pack run cache: hit vs real run with a 10 MB input tree, hashing MB/s
# (see bench/cache.py).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/build.sh"
exec /usr/bin/python3 "$top/bench/cache.py" "$@"
