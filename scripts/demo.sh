#!/usr/bin/env bash
# The main job on a built-in example: build comet-runtime, lint the
# summarize-inputs SoyaPack, and run it with `pack run`: the manifest is
# compiled into an OCI bundle, the Python agent runs confined (read-only
# rootfs built from the host's python3, exec lock, lock-down seccomp, no
# network), its /workdir/out is collected, and everything is cleaned up.
# It runs twice: the pack is read-only with no egress, so the second run is
# a cache hit (docs/cache.md) that starts no container. The demo's cache is
# its own temporary store, removed at the end.
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
run pack explain "$pack" --path /etc/passwd
run pack explain "$pack" --path /workdir/out/summary.json
export COMET_CACHE_DIR="$work/cache"
run pack run "$pack" --input "$pack/sample-inputs" --output "$work/out"
echo "+ cat out/summary.json"
cat "$work/out/summary.json"
echo
run pack run "$pack" --input "$pack/sample-inputs" --output "$work/out2"
cmp "$work/out/summary.json" "$work/out2/summary.json" && echo "+ the cache hit restored the same summary.json"
