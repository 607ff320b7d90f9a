#!/usr/bin/python3
"""Cost of violation reporting (issue 6, docs/events.md).

Runs a pack whose agent is integration/pack/packprobe.c, with reporting on
(the default: the lock-down notifies, the reporter answers) and off
(COMET_VIOLATION_REPORTING=off: the same lock-down with ERRNO rules), and
times inside the agent (CLOCK_MONOTONIC around the loop):
  - 100k stat(2) and 100k open+close of an allowed file: the bigger filter
    and the fs events program on sys_exit (a succeeding call: one compare)
  - 100k stat(2) of a file missing inside the image (/etc/none): each one a
    ring buffer record the reporter classifies as no violation (what an
    interpreter's import probing costs)
  - 10k unix connect(2) to a missing path (the connect path: each one a
    notification answered CONTINUE, for the runtime-socket surface)
  - 1k denied forks (each one a notification round trip through the reporter)
and, on the host, 1M stat(2) by a process outside any container while a
pack container is watched (the program attached) and while none is: what
the tracepoint costs everything else on the machine.
Runs are interleaved (off, on, off, on, ...); medians, and the overhead of
the fastest runs (overhead_pct_min: medians on a shared VM swing +-10%
between runs). Prints one JSON object. Run as root:
  COMET_RUNTIME=build/runtime/comet-runtime /usr/bin/python3 bench/violations.py
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "integration"))
from lib.packs import build_packprobe, make_pack  # noqa: E402

RT = os.environ.get("COMET_RUNTIME", str(REPO / "build/runtime/comet-runtime"))
REPS = int(os.environ.get("REPS", "7"))
OPS = {
    "stat_100k": "stats=100000:/workdir/agent.txt",
    "stat_missing_in_image_100k": "stats=100000:/etc/none",
    "open_100k": "opens=100000:/workdir/agent.txt",
    "connect_10k": "connects=10000:/tmp/no-such.sock",
    "denied_fork_1k": "forks=1000",
}


def run(root: Path, pack, op: str, reporting: bool, flags: Path) -> int:
    env = dict(os.environ, COMET_FLAGS_DIR=str(flags))
    if not reporting:
        env["COMET_VIOLATION_REPORTING"] = "off"
    p, rootfs = pack
    r = subprocess.run([RT, "--root", str(root), "pack", "run", str(p), "--rootfs", str(rootfs),
                        "--no-cache", "--", op], capture_output=True, text=True, env=env,
                       timeout=120)
    line = [l for l in r.stdout.splitlines() if l.startswith("{")][-1]
    return int(json.loads(line)["data"].split()[1])


def host_stat_ns(probe: Path) -> int:
    r = subprocess.run([str(probe), "x", "stats=1000000:/etc/passwd"], capture_output=True,
                       text=True, timeout=120)
    line = [l for l in r.stdout.splitlines() if l.startswith("{")][-1]
    return int(json.loads(line)["data"].split()[1])


def host_cost(tmp: Path, pack) -> dict:
    """1M stat(2) on the host, outside any container: with a pack container
    sleeping (watched: the program attached to sys_exit) and with none."""
    probe = tmp / "packprobe"
    watched, idle = [], []
    p, rootfs = pack
    for _ in range(REPS):
        idle.append(host_stat_ns(probe))
        env = dict(os.environ, COMET_FLAGS_DIR=str(tmp / "flags"))
        c = subprocess.Popen([RT, "--root", str(tmp / "root"), "pack", "run", str(p), "--rootfs",
                              str(rootfs), "--no-cache", "--", "sleep=4000"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.time() + 5
        while time.time() < deadline and not list(Path("/sys/fs/bpf/comet-runtime").glob("*/link")):
            time.sleep(0.01)
        attached = bool(list(Path("/sys/fs/bpf/comet-runtime").glob("*/link")))
        watched.append(host_stat_ns(probe) if attached else 0)
        c.wait(timeout=30)
    res = {"none_watched": statistics.median(idle), "one_watched": statistics.median(watched)}
    res["overhead_pct"] = round(100.0 * (res["one_watched"] - res["none_watched"])
                                / res["none_watched"], 2)
    res["ns_per_call_none"] = round(res["none_watched"] / 1e6, 1)
    res["ns_per_call_one"] = round(res["one_watched"] / 1e6, 1)
    return res


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="cmtbench"))
    try:
        pack = make_pack(tmp, build_packprobe(tmp))
        out = {"reps": REPS}
        for name, op in OPS.items():
            res = {}
            xs: dict[bool, list[int]] = {False: [], True: []}
            for _ in range(REPS):
                for reporting in (False, True):
                    xs[reporting].append(run(tmp / "root", pack, op, reporting, tmp / "flags"))
            for reporting in (False, True):
                res["on" if reporting else "off"] = statistics.median(xs[reporting])
            res["overhead_pct"] = round(100.0 * (res["on"] - res["off"]) / res["off"], 2)
            # the fastest of each side: what the work costs with the least
            # interference from the rest of a shared VM (medians swing +-10%)
            res["min_off"], res["min_on"] = min(xs[False]), min(xs[True])
            res["overhead_pct_min"] = round(
                100.0 * (res["min_on"] - res["min_off"]) / res["min_off"], 2)
            n = int(op.split("=")[1].split(":")[0])
            res["ns_per_call_off"] = round(res["off"] / n, 1)
            res["ns_per_call_on"] = round(res["on"] / n, 1)
            out[name] = res
        out["host_stat_1M"] = host_cost(tmp, pack)
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
