#!/usr/bin/env bash
# The main job on a built-in example: build comet-runtime, make a busybox
# bundle from the busybox-static package, and run a command in it through the
# full OCI lifecycle (create, start, wait, delete).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/build.sh"
rt="$top/build/runtime/comet-runtime"
work=$(mktemp -d /tmp/comet-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bundle/rootfs/bin"
cp /bin/busybox "$work/bundle/rootfs/bin/busybox"
for a in $("$work/bundle/rootfs/bin/busybox" --list); do
  [[ $a == busybox ]] || ln -sf busybox "$work/bundle/rootfs/bin/$a"
done
(cd "$work/bundle" && "$rt" spec)
python3 - "$work/bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = ["sh", "-c",
    "echo hello from comet-runtime; echo pid=$$ uid=$(id -u) hostname=$(hostname); ls /"]
json.dump(c, open(p, "w"), indent=2)
PY
echo "+ comet-runtime run --bundle $work/bundle demo-$$"
"$rt" --root "$work/state" run --bundle "$work/bundle" "demo-$$"
