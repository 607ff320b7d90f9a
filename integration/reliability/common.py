"""Shared bits of the reliability suites: what marks a test's resources as its
own (for snapshot.assert_clean on a shared host), waiting on states, and
recording figures.

Figures: every suite calls `figure(name, **values)`; they are printed (run
pytest with -s to see them) and, when COMET_RELIABILITY_FIGURES=FILE is set,
appended to FILE as one JSON object per line (docs/reliability.md's figures
come from there).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from lib.config import RUNTIME

STATUSES = {"creating", "created", "running", "paused", "stopped"}


def marks(harness) -> tuple[str, ...]:
    """Strings that appear in everything this test's containers own: the id
    tag (state dirs, cgroup names), the scratch dir (rootfs, --root, mounts)."""
    return (harness.rt._tag, str(harness.workdir))


def figure(name: str, **values) -> None:
    rec = {"figure": name, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "loadavg": os.getloadavg()[0], **values}
    print(f"[figure] {json.dumps(rec)}")
    out = os.environ.get("COMET_RELIABILITY_FIGURES")
    if out:
        with open(out, "a") as f:
            f.write(json.dumps(rec) + "\n")


def wait_stopped(rt, cid: str, timeout: float = 10.0) -> str:
    last = rt.wait_status(cid, "stopped", timeout=timeout)
    assert last == "stopped", f"{cid} did not stop within {timeout}s (last status {last})"
    return last


def list_ids(rt) -> list[str]:
    res = rt("list", "-q")
    assert res.rc == 0, res
    return [x for x in res.out.split() if x]


def has_command(*argv: str) -> bool:
    """Does the runtime under test know `argv` (e.g. ("rootfs",))? `--help`
    of an unknown command fails with "unknown command"."""
    try:
        r = subprocess.run([str(RUNTIME), *argv, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and "unknown command" not in r.stderr


def build_pack_rootfs(dest: Path) -> tuple[bool, str]:
    """A rootfs of busybox-static plus python3 built with
    `comet-runtime rootfs --from-host` (issue 4). Returns (ok, why-not)."""
    if not has_command("rootfs"):
        return False, ("`comet-runtime rootfs --from-host` is not in this binary yet (issue 4, "
                       "brief A): pack cycles need a python3 rootfs")
    py = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"
    r = subprocess.run([str(RUNTIME), "rootfs", "--from-host", py, "/bin/busybox", "-o", str(dest)],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return False, f"rootfs --from-host failed: {r.stderr.strip()}"
    return True, ""
