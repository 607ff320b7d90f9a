#!/usr/bin/python3
"""Cost of violation reporting (issue 6, docs/events.md).

Runs a pack whose agent is integration/pack/packprobe.c, with reporting on
(the default: the lock-down notifies, the reporter answers) and off
(COMET_VIOLATION_REPORTING=off: the same lock-down with ERRNO rules), and
times inside the agent (CLOCK_MONOTONIC around the loop):
  - 100k stat(2) and 100k open+close of an allowed file (fs surfaces are not
    notified: this is the cost of the bigger filter alone)
  - 10k unix connect(2) to a missing path (the connect path: each one a
    notification answered CONTINUE, for the runtime-socket surface)
  - 1k denied forks (each one a notification round trip through the reporter)
Prints one JSON object. Run as root:
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
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "integration"))
from lib.packs import build_packprobe, make_pack  # noqa: E402

RT = os.environ.get("COMET_RUNTIME", str(REPO / "build/runtime/comet-runtime"))
REPS = int(os.environ.get("REPS", "7"))
OPS = {
    "stat_100k": "stats=100000:/workdir/agent.txt",
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


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="cmtbench"))
    try:
        pack = make_pack(tmp, build_packprobe(tmp))
        out = {"reps": REPS}
        for name, op in OPS.items():
            res = {}
            for reporting in (False, True):
                xs = [run(tmp / "root", pack, op, reporting, tmp / "flags") for _ in range(REPS)]
                res["on" if reporting else "off"] = statistics.median(xs)
            res["overhead_pct"] = round(100.0 * (res["on"] - res["off"]) / res["off"], 2)
            n = int(op.split("=")[1].split(":")[0])
            res["ns_per_call_off"] = round(res["off"] / n, 1)
            res["ns_per_call_on"] = round(res["on"] / n, 1)
            out[name] = res
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
