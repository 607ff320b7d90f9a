#!/bin/sh
# Cost of violation reporting (bench/violations.py). Run as root.
set -eu
cd "$(dirname "$0")/.."
exec /usr/bin/python3 bench/violations.py "$@"
