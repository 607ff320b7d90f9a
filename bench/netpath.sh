#!/usr/bin/env bash
# Connectivity helpers side by side (issue 21, item 14; docs/egress.md,
# "Connectivity"): for each helper, a fresh network namespace with the
# helper attached as the runtime attaches it, and a far end of our own.
#
#   far end   netns cmt-np-TAG-far, veth to the host, NET.2 (server:
#             bench/netpath_peer.py); the host side is NET.1, so the host
#             routes NET.0/24 to it (a connected route: no forwarding).
#   client    netns cmt-np-TAG-HELPER with the helper attached; the
#             helper's flows are host sockets to NET.2.
#
# Measures (bench/netpath_peer.py): half-close correctness (1 MiB each way,
# SHA-256 both ways, ROUNDS rounds, in two orders), the errno a connect to a
# closed far-end port gets, upload/download MiB/s (median), connect+close
# latency (median). Traffic goes only to addresses of the namespaces made
# here; nothing on the host changes but one veth pair, removed at exit with
# every namespace and process this script started (trap), also on failure.
#
# Usage (root):  bench/netpath.sh [-r ROUNDS] [-b BULK_MIB] [-n BULK_ROUNDS]
#                                 [-c CONNECTS] [HELPER...]
# HELPER: pasta (as egress/src/pasta.cpp starts it), slirp4netns (as
# egress/src/slirp.cpp starts it), slirp4netns-mtuN (the same with MTU N),
# direct (a veth straight to the far end: the kernel's path, for reference;
# no host involved). Default: pasta slirp4netns direct.
# NETPATH_NET (default 198.18.91) picks the /24; the script refuses one the
# host already has an address or a route in.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=20 bulk_mib=64 bulk_rounds=5 connects=200
slirp_mtu=16384  # egress/src/slirp.cpp's kSlirpMtu
while getopts r:b:n:c: o; do
  case $o in
    r) rounds=$OPTARG ;;
    b) bulk_mib=$OPTARG ;;
    n) bulk_rounds=$OPTARG ;;
    c) connects=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
helpers=("$@")
[ ${#helpers[@]} -gt 0 ] || helpers=(pasta slirp4netns direct)
[ "$(id -u)" = 0 ] || { echo "netpath.sh: needs root" >&2; exit 2; }

net=${NETPATH_NET:-198.18.91}
if ip -4 -o addr | grep -q " inet $net\." || ip -4 route | grep -q "^$net\."; then
  echo "netpath.sh: $net.0/24 is in use on this host; set NETPATH_NET" >&2
  exit 2
fi
if [ "$(ip -4 route show match "$net.2" | grep -vc '^default')" != 0 ]; then
  echo "netpath.sh: the host already routes $net.2 other than by default" >&2
  exit 2
fi

tag=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
dir=$(mktemp -d /tmp/cmt-np.XXXXXX)
far=cmt-np-$tag-far
vh=cnp${tag}h vf=cnp${tag}f
pids=() nss=() links=()

cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  for p in "${links[@]}"; do ip link del "$p" 2>/dev/null || true; done
  for p in "${nss[@]}"; do ip netns del "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$far"; nss+=("$far")
ip link add "$vh" type veth peer name "$vf"; links+=("$vh")
ip link set "$vf" netns "$far"
ip addr add "$net.1/24" dev "$vh"
ip link set "$vh" up
ip -n "$far" link set lo up
ip -n "$far" addr add "$net.2/24" dev "$vf"
ip -n "$far" link set "$vf" up

ip netns exec "$far" python3 -u "$here/netpath_peer.py" server "$net.2" >"$dir/server.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q ready "$dir/server.out" && break; sleep 0.05; done
grep -q ready "$dir/server.out" || { echo "server did not start: $(cat "$dir/server.out")" >&2; exit 1; }

attach() {
  local h=$1 ns=cmt-np-$tag-$1 hpid=""
  ip netns add "$ns"; nss+=("$ns")
  ip -n "$ns" link set lo up
  case $h in
    pasta)
      # egress/src/pasta.cpp's pasta_args, the namespace as fd 3.
      pasta --config-net --no-map-gw -t none -u none -T none -U none --quiet --runas 0:0 \
        --pid "$dir/pasta.pid" --netns /proc/self/fd/3 3<"/run/netns/$ns" \
        >"$dir/pasta.log" 2>&1
      hpid=$(cat "$dir/pasta.pid"); pids+=("$hpid")
      ;;
    slirp4netns | slirp4netns-mtu*)
      local mtu=${h#slirp4netns-mtu}
      [ "$mtu" != "$h" ] || mtu=$slirp_mtu
      # egress/src/slirp.cpp's slirp_args, the namespace as fd 3. In a
      # mount namespace of its own, slave of the host's (as the runtime
      # starts it): --enable-sandbox's pivot_root and detach of the old
      # root would otherwise propagate to the host's shared mounts (run
      # from the host's namespace, it unmounted /run/netns/* here).
      mkfifo "$dir/ready"
      unshare --mount --propagation slave slirp4netns --configure --mtu="$mtu" \
        --disable-host-loopback --disable-dns --enable-ipv6 --enable-sandbox --enable-seccomp \
        --ready-fd=4 --netns-type=path /proc/self/fd/3 tap0 \
        3<"/run/netns/$ns" 4>"$dir/ready" >"$dir/slirp.log" 2>&1 &
      hpid=$!; pids+=("$hpid")
      echo "slirp4netns $hpid for $h: MTU $mtu" >&2
      local ready=""
      read -r -t 10 ready <"$dir/ready" || true
      rm -f "$dir/ready"
      [ "$ready" = 1 ] || { echo "slirp4netns not ready: $(cat "$dir/slirp.log")" >&2; return 1; }
      ;;
    direct)
      # A second veth, namespace to far end: no helper, no host.
      ip link add "d${tag}c" type veth peer name "d${tag}f"
      ip link set "d${tag}c" netns "$ns"
      ip link set "d${tag}f" netns "$far"
      ip -n "$far" addr add 198.18.92.2/24 dev "d${tag}f"
      ip -n "$far" link set "d${tag}f" up
      ip -n "$ns" addr add 198.18.92.1/24 dev "d${tag}c"
      ip -n "$ns" link set "d${tag}c" up
      # the server listens on $net.2 only: reach it over the direct link
      ip -n "$ns" route add "$net.0/24" via 198.18.92.2
      ;;
    *) echo "unknown helper $h" >&2; return 2 ;;
  esac
}

measure() {  # HELPER MODE ARGS...: one JSON line appended to $dir/HELPER.jsonl
  local h=$1; shift
  timeout 900 ip netns exec "cmt-np-$tag-$h" python3 "$here/netpath_peer.py" client "$net.2" "$@" \
    >>"$dir/$h.jsonl" || echo "{\"mode\":\"$1\",\"error\":\"client exit $?\"}" >>"$dir/$h.jsonl"
  tail -1 "$dir/$h.jsonl" | sed "s/^/$h: /" >&2
}

for h in "${helpers[@]}"; do attach "$h"; done
# Correctness per helper; speed interleaved (round r: every helper once),
# so that a change of load on the machine hits all of them alike.
for h in "${helpers[@]}"; do
  measure "$h" halfclose_a "$rounds" 1
  measure "$h" halfclose_b "$rounds" 1
  measure "$h" rst
done
for r in $(seq "$bulk_rounds"); do
  for h in "${helpers[@]}"; do measure "$h" up "$bulk_mib"; done
  for h in "${helpers[@]}"; do measure "$h" down "$bulk_mib"; done
  for h in "${helpers[@]}"; do measure "$h" connect $(( (connects + bulk_rounds - 1) / bulk_rounds )); done
done

python3 - "$dir" "${helpers[@]}" <<'PY'
import json, statistics, sys
d, helpers = sys.argv[1], sys.argv[2:]
res = {h: [json.loads(l) for l in open(f"{d}/{h}.jsonl")] for h in helpers}
def one(h, mode):
    return next((r for r in res[h] if r["mode"] == mode), {})
def med(h, mode, key):
    xs = [r[key] for r in res[h] if r["mode"] == mode and key in r]
    return statistics.median(xs) if xs else None
def errs(h, mode):
    return [r["error"] for r in res[h] if r["mode"] == mode and "error" in r]
rows = [
    ("half-close A: 1 MiB up, SHUT_WR, 1 MiB down to EOF (SHA-256)",
     lambda h: f"{one(h,'halfclose_a').get('ok')}/{one(h,'halfclose_a').get('rounds')}"),
    ("half-close B: both at once, server FIN first (SHA-256)",
     lambda h: f"{one(h,'halfclose_b').get('ok')}/{one(h,'halfclose_b').get('rounds')}"),
    ("connect to a closed far-end port (RST)",
     lambda h: f"{one(h,'rst').get('errno')} after {one(h,'rst').get('s')} s"),
    ("upload MiB/s, median", lambda h: med(h, "up", "mibs")),
    ("download MiB/s, median", lambda h: med(h, "down", "mibs")),
    ("connect+close ms, median of medians", lambda h: med(h, "connect", "ms")),
]
print("| measure | " + " | ".join(helpers) + " |")
print("|---|" + "---|" * len(helpers))
for name, f in rows:
    print(f"| {name} | " + " | ".join(str(f(h)) for h in helpers) + " |")
if "pasta" in res and "slirp4netns" in res:
    for what, mode, key in (("upload", "up", "mibs"), ("download", "down", "mibs"),
                            ("connect latency", "connect", "ms")):
        x, y = med("slirp4netns", mode, key), med("pasta", mode, key)
        if x and y:
            print(f"slirp4netns / pasta, {what}: {x / y:.2f}")
for h in helpers:
    for mode in ("halfclose_a", "halfclose_b"):
        if one(h, mode).get("fails"):
            print(f"{h} {mode}: first failures {one(h, mode)['fails']}")
    for mode in ("up", "down"):
        if errs(h, mode):
            print(f"{h} {mode} errors: {errs(h, mode)}")
    print(f"{h} per round: up {[r.get('mibs', r.get('error')) for r in res[h] if r['mode'] == 'up']}"
          f" down {[r.get('mibs', r.get('error')) for r in res[h] if r['mode'] == 'down']}")
PY
