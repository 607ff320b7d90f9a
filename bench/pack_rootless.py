#!/usr/bin/env python3
"""Rootless `pack run` of a trivial agent against rootful `pack run`, side
by side (issue 24; docs/rootless.md "pack run").

Run as root: it makes a test user with integration/lib/rootless.py (with a
subordinate range and the bounding set a login shell has, so newuidmap
works; removed at the end) and the same static pack twice, one under the
user's home and one in a scratch dir of root's. Each round times M
`pack run --no-cache` as root, then M as the user (the user's loop runs as
the user: setpriv and Python's start are not in the figures), and the
rounds alternate, so both sides see the same load.

  rootful:  comet-runtime --root SCRATCH pack run PACK --rootfs R --no-cache -- exit=0
  rootless: comet-runtime pack run PACK --rootfs R --no-cache -- exit=0
            (state in $XDG_RUNTIME_DIR/comet-runtime; no cgroup delegated:
            no fs events, the default memory limit not enforced, the
            default pids limit as RLIMIT_NPROC)
  rootless, own id only: the same as a user without /etc/subuid ranges
            (no newuidmap: the map is written directly), when --own-id
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from lib import COMET, REPO, manifest, median, run_ms, scratch, static_pack, table

_spec = importlib.util.spec_from_file_location(
    "rootless", REPO / "integration" / "lib" / "rootless.py")
_rootless = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_rootless)
OrdinaryUser = _rootless.OrdinaryUser

PACKPROBE_SRC = REPO / "integration" / "pack" / "packprobe.c"
MANIFEST = manifest("bench-trivial", version="1.0.0")

INNER = r"""
import json, subprocess, sys, time
comet, pack, rootfs, m = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
out = []
for i in range(m):
    t0 = time.perf_counter()
    p = subprocess.run([comet, "pack", "run", pack, "--rootfs", rootfs, "--no-cache", "--",
                        "exit=0"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    ms = (time.perf_counter() - t0) * 1000
    if p.returncode != 0:
        sys.exit("rootless pack run failed: " + p.stderr.decode())
    out.append(ms)
print(json.dumps(out))
"""


def user_pack(user, work_root: Path):
    w = user.make_dir("bench")
    pack, rootfs = static_pack(w, PACKPROBE_SRC, "packprobe", MANIFEST, cc_args=["-lpthread"])
    subprocess.run(["chown", "-R", f"{user.uid}:{user.gid}", str(w)], check=True)
    return pack, rootfs


def user_times(user, pack, rootfs, m):
    res = user.run(["/usr/bin/python3", "-c", INNER, str(COMET), str(pack), str(rootfs), str(m)],
                   timeout=600)
    if res.returncode:
        sys.exit(res.stderr)
    return json.loads(res.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("-m", type=int, default=5, help="runs per side per round")
    ap.add_argument("--own-id", action="store_true",
                    help="also a user without subordinate ids")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/pack_rootless.py must run as root (it makes the test user)")
    with scratch("comet-bench-packrl-") as work, \
            OrdinaryUser(prefix="cmtbp", setuid_helpers=True) as user:
        os.environ["COMET_FLAGS_DIR"] = str(work / "flags")
        pack, rootfs = static_pack(work, PACKPROBE_SRC, "packprobe", MANIFEST,
                                   cc_args=["-lpthread"])
        upack, urootfs = user_pack(user, work)
        own = None
        if a.own_id:
            own = OrdinaryUser(prefix="cmtbo", subids=False).__enter__()
            opack, orootfs = user_pack(own, work)
        try:
            times = {"rootful pack run": [], "rootless pack run": []}
            if own:
                times["rootless, own id only"] = []
            for r in range(a.rounds + 1):  # round 0 warms up (page cache, seccomp cache)
                root = [run_ms([str(COMET), "--root", str(work / "state"), "pack", "run",
                                str(pack), "--rootfs", str(rootfs), "--no-cache", "--", "exit=0"])
                        for _ in range(a.m)]
                rl = user_times(user, upack, urootfs, a.m)
                ol = user_times(own, opack, orootfs, a.m) if own else []
                if r == 0:
                    continue
                times["rootful pack run"] += root
                times["rootless pack run"] += rl
                if own:
                    times["rootless, own id only"] += ol
        finally:
            if own:
                own.__exit__(None, None, None)
    base = median(times["rootful pack run"])
    rows = [[k, f"{median(xs):.1f} ms", f"{median(xs) - base:+.1f} ms",
             f"{median(xs) / base:.2f}x", f"{min(xs):.1f} ms"] for k, xs in times.items()]
    n = a.rounds * a.m
    print(f"pack run of a trivial agent, rootless vs rootful, N={n} each "
          f"({a.rounds} alternating rounds of {a.m}), load {os.getloadavg()[0]:.2f}")
    table(rows, ["variant", "median", "vs rootful", "ratio", "min"])


if __name__ == "__main__":
    sys.exit(main())
