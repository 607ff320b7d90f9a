"""Machine snapshots for the reliability suites: take one before, one after,
and `diff()` says what appeared.

What a snapshot holds (each as a multiset of one-line strings, so a diff is
readable in a failure message):

  mounts    /proc/self/mountinfo: "MOUNTPOINT FSTYPE SOURCE ROOT"
  cgroups   every directory under each v1 controller /sys/fs/cgroup/<ctrl>
            and under cgroup2 (/sys/fs/cgroup/unified, or /sys/fs/cgroup on
            a pure v2 host)
  netns     `ip netns list` names, nsfs mount points, and the net namespace
            inode of every process ("inode:N")
  links     `ip -o link` names
  nft       `nft list tables`: "FAMILY NAME"
  procs     "PID COMM CMDLINE root=ROOT cgroup=CGROUP" of every process that
            is not a kernel thread, not this test process or its children,
            keyed by (pid, starttime) so pid reuse is a new process; the ones
            in `before` are, by construction, the ones that existed before.
            A new process that descends from a process other than PID 1 that
            was already running at `before` (a developer's shell, the CI
            agent) is not the runtime's: anything the runtime leaks outlives
            its parent and is reparented to PID 1 (there is no subreaper on
            these machines), so it is still seen
  state     entries of each runtime --root given to take()
  tmp       /run/comet-runtime*, /tmp/comet-* (and one level below them)

Shared hosts: when other engineers' tests run at the same time (the dev VM),
their netns, links, processes and temp dirs appear too. With
COMET_SNAPSHOT_SHARED=1, assert_clean() only fails on what it can attribute
to the caller (an item whose text contains one of `marks`: the test's
container-id tag, its scratch dir, its --root) and prints the rest. CI runs
the suite alone and strict (the default).
"""
from __future__ import annotations

import os
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
TMP_GLOBS = [("/run", "comet-runtime"), ("/tmp", "comet-")]
CATEGORIES = ("mounts", "cgroups", "netns", "links", "nft", "procs", "state", "tmp")
PF_KTHREAD = 0x00200000


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _read(path: str, binary: bool = False):
    try:
        with open(path, "rb" if binary else "r") as f:
            return f.read()
    except OSError:
        return None


# -- collectors ----------------------------------------------------------------
def _unescape(s: str) -> str:
    return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def mounts() -> Counter:
    c: Counter = Counter()
    text = _read("/proc/self/mountinfo") or ""
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        lf, rf = left.split(), right.split()
        if len(lf) < 5 or not rf:
            continue
        src = rf[1] if len(rf) > 1 else ""
        c[f"{_unescape(lf[4])} {rf[0]} {_unescape(src)} {_unescape(lf[3])}"] += 1
    return c


def cgroup_hierarchies() -> list[Path]:
    if not CGROUP_ROOT.is_dir():
        return []
    if (CGROUP_ROOT / "cgroup.controllers").exists():  # pure v2
        return [CGROUP_ROOT]
    out = []
    for h in sorted(CGROUP_ROOT.iterdir()):
        # cpu,cpuacct style symlinks point at the same hierarchy: skip links
        if h.is_dir() and not h.is_symlink():
            out.append(h)
    return out


def cgroups() -> Counter:
    c: Counter = Counter()
    for h in cgroup_hierarchies():
        for dirpath, _dirnames, _ in os.walk(h):
            c[dirpath] += 1
    return c


def _pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def _stat_fields(pid: int) -> list[str] | None:
    s = _read(f"/proc/{pid}/stat")
    if not s:
        return None
    head, _, tail = s.rpartition(")")
    comm = head.split("(", 1)[1] if "(" in head else "?"
    return [comm] + tail.split()  # [comm, state, ppid, pgrp, ..., flags at 7, starttime at 20]


def _own_pids() -> set[int]:
    """This process and its live descendants (the `ip`/`nft` calls of take())."""
    me = os.getpid()
    children: dict[int, list[int]] = {}
    for pid in _pids():
        f = _stat_fields(pid)
        if f:
            children.setdefault(int(f[2]), []).append(pid)
    own, todo = set(), [me]
    while todo:
        p = todo.pop()
        if p in own:
            continue
        own.add(p)
        todo.extend(children.get(p, []))
    return own


def processes(parents: dict[int, tuple[int, int]] | None = None) -> dict[tuple[int, int], str]:
    """Every process but kernel threads and our own. If `parents` is given it
    is filled with pid -> (ppid, starttime) of every process seen."""
    own = _own_pids()
    out: dict[tuple[int, int], str] = {}
    for pid in _pids():
        if pid in own:
            continue
        f = _stat_fields(pid)
        if not f:
            continue
        try:
            flags, ppid, start = int(f[7]), int(f[2]), int(f[20])
        except (IndexError, ValueError):
            continue
        if flags & PF_KTHREAD or pid == 2 or ppid == 2:
            continue
        if parents is not None:
            parents[pid] = (ppid, start)
        cmd = (_read(f"/proc/{pid}/cmdline", binary=True) or b"").replace(b"\0", b" ")
        cmd = cmd.decode(errors="replace").strip()[:200]
        try:
            root = os.readlink(f"/proc/{pid}/root")
        except OSError:
            root = "?"
        cg = (_read(f"/proc/{pid}/cgroup") or "").strip().splitlines()
        cg = cg[-1].split(":", 2)[-1] if cg else "?"
        out[(pid, start)] = f"{pid} {f[0]} {cmd!r} root={root} cgroup={cg}"
    return out


def netns() -> Counter:
    c: Counter = Counter()
    for line in _run(["ip", "netns", "list"]).splitlines():
        if line.strip():
            c[f"name:{line.split()[0]}"] += 1
    for m in mounts():
        mp, fstype = m.split(" ")[0], m.split(" ")[1]
        if fstype == "nsfs":
            c[f"nsfs:{mp}"] += 1
    inodes = set()
    for pid in _pids():
        try:
            inodes.add(os.stat(f"/proc/{pid}/ns/net").st_ino)
        except OSError:
            pass
    for ino in inodes:
        c[f"inode:{ino}"] += 1
    return c


def links() -> Counter:
    c: Counter = Counter()
    for line in _run(["ip", "-o", "link", "show"]).splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            c[parts[1].strip().split("@")[0]] += 1
    return c


def nft_tables() -> Counter:
    c: Counter = Counter()
    for line in _run(["nft", "list", "tables"]).splitlines():
        w = line.split()
        if len(w) == 3 and w[0] == "table":
            c[f"{w[1]} {w[2]}"] += 1
    return c


def _count_entries(c: Counter, d: str) -> None:
    """One count in C for every entry of directory D (none when D is gone)."""
    try:
        for e in os.listdir(d):
            c[f"{d}/{e}"] += 1
    except OSError:
        pass


def state_dirs(roots) -> Counter:
    c: Counter = Counter()
    for r in roots:
        _count_entries(c, r)
    return c


def temp_dirs() -> Counter:
    c: Counter = Counter()
    for base, prefix in TMP_GLOBS:
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for n in names:
            if not n.startswith(prefix):
                continue
            p = f"{base}/{n}"
            c[p] += 1
            if os.path.isdir(p) and not os.path.islink(p):
                _count_entries(c, p)
    return c


# -- snapshot and diff ----------------------------------------------------------
@dataclass
class Snapshot:
    mounts: Counter = field(default_factory=Counter)
    cgroups: Counter = field(default_factory=Counter)
    netns: Counter = field(default_factory=Counter)
    links: Counter = field(default_factory=Counter)
    nft: Counter = field(default_factory=Counter)
    procs: dict = field(default_factory=dict)
    parents: dict = field(default_factory=dict)  # pid -> (ppid, starttime)
    state: Counter = field(default_factory=Counter)
    tmp: Counter = field(default_factory=Counter)
    roots: tuple = ()

    @classmethod
    def take(cls, roots=()) -> "Snapshot":
        roots = tuple(str(r) for r in roots)
        parents: dict = {}
        procs = processes(parents)
        return cls(mounts=mounts(), cgroups=cgroups(), netns=netns(), links=links(),
                   nft=nft_tables(), procs=procs, parents=parents, state=state_dirs(roots),
                   tmp=temp_dirs(), roots=roots)


def _foreign_session(before: Snapshot, after: Snapshot, key: tuple[int, int]) -> bool:
    """True if the new process `key` descends from a process other than PID 1
    that was already running when `before` was taken."""
    pid, seen = key[0], set()
    while pid not in seen:
        seen.add(pid)
        ppid, _ = after.parents.get(pid, (0, 0))
        if ppid <= 1:
            return False
        pstart = after.parents.get(ppid, (0, None))[1]
        if pstart is not None and (ppid, pstart) in before.procs:
            return True
        pid = ppid
    return False


class Diff(dict):
    """category -> sorted list of what appeared (only non-empty categories)."""

    @property
    def empty(self) -> bool:
        return not any(self.values())

    def count(self) -> int:
        return sum(len(v) for v in self.values())

    def filter(self, pred) -> "Diff":
        d = Diff()
        for k, v in self.items():
            kept = [x for x in v if pred(k, x)]
            if kept:
                d[k] = kept
        return d

    def __str__(self) -> str:
        if self.empty:
            return "(nothing appeared)"
        lines = []
        for k in CATEGORIES:
            for x in self.get(k, []):
                lines.append(f"{k}: {x}")
        return "\n".join(lines)


def diff(before: Snapshot, after: Snapshot) -> Diff:
    """What is in `after` and was not in `before` (multiset difference)."""
    d = Diff()
    for k in CATEGORIES:
        if k == "procs":
            new = [after.procs[key] for key in sorted(after.procs)
                   if key not in before.procs and not _foreign_session(before, after, key)]
        else:
            new = sorted((getattr(after, k) - getattr(before, k)).elements())
        if new:
            d[k] = new
    return d


def shared_host() -> bool:
    return os.environ.get("COMET_SNAPSHOT_SHARED", "") not in ("", "0")


def leaks(before: Snapshot, marks=(), settle: float = 5.0) -> tuple[Diff, Diff]:
    """(ours, foreign): what appeared since `before`, polled for up to
    `settle` seconds (a container's processes take a moment to be reaped,
    cgroup dirs to be removable). In strict mode everything is `ours`.
    The runtime's fs events detacher (comet-fswatch-linger, docs/events.md)
    goes by itself 10 s after the last pack container: one the test started
    is given 20 s before it counts."""
    deadline = time.monotonic() + settle
    lingered = False
    while True:
        d = diff(before, Snapshot.take(before.roots))
        if shared_host():
            ours = d.filter(lambda _k, x: any(m and m in x for m in marks))
            foreign = d.filter(lambda _k, x: not any(m and m in x for m in marks))
        else:
            ours, foreign = d, Diff()
        if not lingered and any("comet-fswatch-linger" in str(x) for x in ours.get("procs", [])):
            lingered = True
            deadline = max(deadline, time.monotonic() + 20)
        if ours.empty or time.monotonic() >= deadline:
            return ours, foreign
        time.sleep(0.2)


def assert_clean(before: Snapshot, marks=(), settle: float = 5.0, what: str = "") -> Diff:
    ours, foreign = leaks(before, marks, settle)
    if not foreign.empty:
        lines = str(foreign).splitlines()
        more = f"\n... and {len(lines) - 10} more" if len(lines) > 10 else ""
        print(f"[snapshot] {what}: {len(lines)} items appeared that are not attributable to this "
              f"test (COMET_SNAPSHOT_SHARED=1), ignored:\n" + "\n".join(lines[:10]) + more)
    assert ours.empty, f"{what}: left behind after the test:\n{ours}"
    return ours
