#!/usr/bin/env bash
# The main job on a built-in example: build comet-runtime, lint the
# summarize-inputs SoyaPack, and run it with `pack run`: the manifest is
# compiled into an OCI bundle, the Python agent runs confined (read-only
# rootfs built from the host's python3, exec lock, lock-down seccomp, no
# network), its /workdir/out is collected, and everything is cleaned up.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/build.sh"
rt="$top/build/runtime/comet-runtime"
pack="$top/examples/summarize-inputs"
work=$(mktemp -d /tmp/comet-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
run() {
  echo "+ comet-runtime $*"
  "$rt" --root "$work/state" "$@"
}
run pack lint --strict "$pack"
run pack explain "$pack" --path /etc/passwd || true
run pack run "$pack" --input "$pack/sample-inputs" --output "$work/out"
echo "+ cat out/summary.json"
cat "$work/out/summary.json"
echo
