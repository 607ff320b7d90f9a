#!/usr/bin/env bash
# `comet-runtime sandbox -- /bin/true` beside bubblewrap with a comparable
# policy, interleaved in one run: median start-to-exit ms and the ratio, for
# the workspace profile (host network) and strict (a new network namespace).
# Usage: bench/sandbox.sh [ROUNDS]   (default 30; COMET_RUNTIME=path to skip the build)
#        bench/sandbox.sh --rootless [--user NAME] [ROUNDS]
#   rootless: as an ordinary user (the caller when not root; as root, NAME, or
#   a user made for the run and removed after it), `sandbox --profile
#   workspace -- /bin/true` beside `bwrap --unshare-user` with the same
#   policy, and strict beside bwrap's strict view (docs/sandbox.md "Rootless").
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rootless=0 bench_user=""
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --rootless) rootless=1 ;;
    --user) bench_user=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
rounds=${1:-30}
if [[ -z "${COMET_RUNTIME:-}" ]]; then
  bash "$top/scripts/build.sh" comet-runtime >/dev/null
  COMET_RUNTIME=$top/build/runtime/comet-runtime
fi
command -v bwrap >/dev/null || { apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; }
timer=$(mktemp -d /tmp/comet-bench-sandbox.XXXXXX)
trap 'rm -rf "$timer"' EXIT
gcc -O2 -o "$timer/t" "$top/bench/startup_timer.c"
ws=$(mktemp -d /tmp/comet-bench-ws.XXXXXX)
trap 'rm -rf "$timer" "$ws"' EXIT
cd "$ws"
# bwrap: the same binds (the root read-only, the workspace writable, a
# minimal /dev, a fresh /proc, a private /tmp), pid/ipc/uts/mount (and
# cgroup) namespaces, a session of its own, dying with its parent.
common=(--dev /dev --proc /proc --tmpfs /tmp --bind "$ws" "$ws" --chdir "$ws"
  --unshare-all --die-with-parent --new-session)
bw_workspace=(/usr/bin/bwrap --ro-bind / / "${common[@]}" --share-net /bin/true)
strict_ro=()
for d in /usr /etc /opt; do [[ -e $d ]] && strict_ro+=(--ro-bind "$d" "$d"); done
for l in /bin /sbin /lib /lib32 /lib64 /libx32; do
  if [[ -L $l ]]; then strict_ro+=(--symlink "$(readlink "$l")" "$l"); elif [[ -d $l ]]; then strict_ro+=(--ro-bind "$l" "$l"); fi
done
bw_strict=(/usr/bin/bwrap "${strict_ro[@]}" "${common[@]}" /bin/true)
ours() { echo "$COMET_RUNTIME" sandbox --profile "$1" --workspace "$ws" -- /bin/true; }
if [[ $rootless == 1 ]]; then
  # The same views, each tool in a user namespace of the caller's own uid.
  bw_workspace=(/usr/bin/bwrap --unshare-user "${bw_workspace[@]:1}")
  bw_strict=(/usr/bin/bwrap --unshare-user "${bw_strict[@]:1}")
  as_user=()
  if [[ $(id -u) == 0 ]]; then
    made_user=""
    if [[ -z $bench_user ]]; then
      bench_user=cmtbench$$
      useradd -M -d /tmp/comet-bench-home-$$ -s /bin/sh "$bench_user"
      made_user=$bench_user
    fi
    xdg=$(mktemp -d /tmp/comet-bench-xdg.XXXXXX)
    chown "$bench_user:" "$ws" "$xdg"
    chmod 755 "$timer"
    trap 'rm -rf "$timer" "$ws" "$xdg"; [[ -n $made_user ]] && userdel "$made_user"' EXIT
    uid=$(id -u "$bench_user")
    gid=$(id -g "$bench_user")
    as_user=(setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all
      --bounding-set=-all -- env -i PATH=/usr/bin:/bin HOME=/tmp/comet-bench-home-$$ XDG_RUNTIME_DIR="$xdg")
  fi
  mapfile -t r < <("${as_user[@]}" "$timer/t" "$rounds" $(ours workspace) ::: "${bw_workspace[@]}" \
    ::: $(ours strict) ::: "${bw_strict[@]}" ::: /bin/true ::: "$COMET_RUNTIME" --version)
  printf 'rootless, as uid %s\n' "$("${as_user[@]}" id -u)"
  printf '%-11s %10s %10s %7s\n' profile "ours ms" "bwrap ms" ratio
  for i in 0 2; do
    name=$([[ $i == 0 ]] && echo workspace || echo strict)
    a=${r[$i]%% *}; b=${r[$((i + 1))]%% *}
    printf '%-11s %10s %10s %6.2fx\n' "$name" "${r[$i]}" "${r[$((i + 1))]}" "$(echo "$a / $b" | bc -l)"
  done
  printf 'reference: /bin/true %s ms, comet-runtime --version %s ms (%s rounds, interleaved)\n' \
    "${r[4]}" "${r[5]}" "$rounds"
  exit 0
fi
mapfile -t r < <("$timer/t" "$rounds" $(ours workspace) ::: "${bw_workspace[@]}" \
  ::: $(ours strict) ::: "${bw_strict[@]}" ::: /bin/true ::: "$COMET_RUNTIME" --version)
printf '%-11s %10s %10s %7s\n' profile "ours ms" "bwrap ms" ratio
for i in 0 2; do
  name=$([[ $i == 0 ]] && echo workspace || echo strict)
  a=${r[$i]%% *}; b=${r[$((i + 1))]%% *}
  printf '%-11s %10s %10s %6.2fx%s\n' "$name" "${r[$i]}" "${r[$((i + 1))]}" \
    "$(echo "$a / $b" | bc -l)" ""
done
printf 'reference: /bin/true %s ms, comet-runtime --version %s ms (%s rounds, interleaved)\n' \
  "${r[4]}" "${r[5]}" "$rounds"

# The git rule's cost (docs/sandbox.md "Nested repositories"): every create
# and every open for writing is judged by the sandbox's init. 2,000
# create+write+close of a small file, timed inside the command (start-up
# excluded), in a tmpfs workspace (no disk or discard noise), interleaved
# with bwrap's workspace view and the bare host; reads are not judged.
fsrounds=${FS_ROUNDS:-5}
fsws=$(mktemp -d /tmp/comet-bench-fs.XXXXXX)
mount -t tmpfs -o size=64m tmpfs "$fsws"
trap 'umount "$fsws" 2>/dev/null; rmdir "$fsws" 2>/dev/null; rm -rf "$timer" "$ws"' EXIT
(cd "$fsws" && git init -q .)
cat > "$fsws/mk.py" <<'PY'
import os, sys, time
d = sys.argv[1]
os.mkdir(d)
t = time.perf_counter()
for i in range(2000):
    with open(f"{d}/f{i}", "w") as f:
        f.write("x")
print(f"{(time.perf_counter() - t) / 2000 * 1e6:.1f}")
PY
declare -A fs
for ((k = 0; k < fsrounds; k++)); do
  for who in ours bwrap host; do
    d="d-$who-$k"
    case $who in
      ours) v=$(cd "$fsws" && "$COMET_RUNTIME" sandbox --profile workspace --workspace "$fsws" -- python3 mk.py "$d") ;;
      bwrap) v=$(cd "$fsws" && /usr/bin/bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp \
                 --bind "$fsws" "$fsws" --chdir "$fsws" --unshare-all --share-net --die-with-parent \
                 --new-session python3 mk.py "$d") ;;
      host) v=$(cd "$fsws" && python3 mk.py "$d") ;;
    esac
    rm -rf "${fsws:?}/$d"
    fs[$who]+="$v "
  done
done
med() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
o=$(med "${fs[ours]}"); b=$(med "${fs[bwrap]}"); h=$(med "${fs[host]}")
printf 'create+write+close, us per file (median of %s x 2000): ours %s, bwrap %s, host %s (%.1fx bwrap)\n' \
  "$fsrounds" "$o" "$b" "$h" "$(echo "$o / $b" | bc -l)"

