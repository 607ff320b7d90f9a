"""Host-side views of container processes through /proc (and file hashes)."""
from __future__ import annotations

import hashlib
import os

NAMESPACES = ("pid", "net", "mnt", "ipc", "uts", "user", "cgroup", "time")


def ns_links(pid: int | str) -> dict[str, str]:
    """{"pid": "pid:[4026532181]", ...} for /proc/PID/ns/* (same format as
    the probe's info["ns"])."""
    return {n: os.readlink(f"/proc/{pid}/ns/{n}") for n in NAMESPACES}


def cgroup_lines(pid: int | str) -> list[str]:
    with open(f"/proc/{pid}/cgroup") as f:
        return [line for line in f.read().splitlines() if line]


def cgroup_of(pid: int | str, controller: str) -> str | None:
    """Path of PID's cgroup for a v1 controller ("memory") or "" for the
    cgroup2 line; None when the controller is not listed."""
    for line in cgroup_lines(pid):
        _, ctrls, path = line.split(":", 2)
        if controller in ctrls.split(","):
            return path
    return None


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def descendants(pid: int) -> list[int]:
    out: list[int] = []
    todo = [pid]
    while todo:
        kids = children(todo.pop())
        out += kids
        todo += kids
    return out


def proc_state(pid: int) -> str:
    """The State letter of /proc/PID/status ("S", "T", "Z", ...)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("State:"):
                return line.split()[1]
    raise AssertionError(f"no State in /proc/{pid}/status")


def stat_key(path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
