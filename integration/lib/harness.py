"""Per-test harness: private --root, bundles, cleanup and leftover checks."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

from .bundle import Bundle
from .runtime import Runtime

CGROUP_ROOT = Path("/sys/fs/cgroup")


def wait_for(cond: Callable[[], object], timeout: float = 5.0, interval: float = 0.02):
    """Poll cond() until it returns a truthy value; return it (or the last
    falsy value after the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def cgroup_dirs_named(name: str, max_depth: int = 5) -> list[Path]:
    """Every directory called `name` in any cgroup hierarchy (v1 controllers
    and the unified cgroup2 mount)."""
    found: list[Path] = []
    if not CGROUP_ROOT.is_dir():
        return found
    for hier in CGROUP_ROOT.iterdir():
        if not hier.is_dir():
            continue
        base_depth = len(hier.parts)
        for dirpath, dirnames, _ in os.walk(hier):
            depth = len(Path(dirpath).parts) - base_depth
            if depth >= max_depth:
                dirnames[:] = []
            if name in dirnames:
                found.append(Path(dirpath) / name)
    return found


def cgroup_paths(path: str) -> list[Path]:
    """Existing directories for cgroupsPath `path` (absolute) in every hierarchy."""
    rel = path.lstrip("/")
    out = []
    if CGROUP_ROOT.is_dir():
        for hier in CGROUP_ROOT.iterdir():
            p = hier / rel
            if p.is_dir():
                out.append(p)
    return out


def mounts_under(prefix: Path) -> list[str]:
    prefix = str(prefix).rstrip("/") + "/"
    res = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].replace("\\040", " ")
            if (mp + "/").startswith(prefix):
                res.append(mp)
    return res


def _stat_key(p) -> tuple[int, int] | None:
    try:
        st = os.stat(p)
        return (st.st_dev, st.st_ino)
    except OSError:
        return None


def processes_in(workdir: Path, rootfs_keys: set[tuple[int, int]]) -> list[int]:
    """PIDs whose root is one of our rootfs directories, or whose cwd/root
    resolves (from the host's view) inside workdir."""
    me = os.getpid()
    prefix = str(workdir).rstrip("/") + "/"
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        pid = int(d)
        if pid == me:
            continue
        hit = False
        for what in ("root", "cwd"):
            try:
                target = os.readlink(f"/proc/{pid}/{what}")
            except OSError:
                continue
            if (target + "/").startswith(prefix):
                hit = True
        if not hit and rootfs_keys and _stat_key(f"/proc/{pid}/root") in rootfs_keys:
            hit = True
        if hit and pid_alive(pid):
            pids.append(pid)
    return pids


class Harness:
    """Owns one test's scratch directory, Runtime and bundles, and tears
    everything down: delete --force every container id, then verify that no
    state dir, cgroup, process or mount is left behind."""

    def __init__(self, runtime_binary: Path, probe: Path, workdir: Path):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True)
        self.probe = probe
        self.rt = Runtime(runtime_binary, self.workdir / "root", self.workdir)
        self.bundles: list[Bundle] = []
        self.extra_cgroups: list[str] = []  # cgroupsPath values to check
        self.cleanups: list[Callable[[], None]] = []  # extra teardown, LIFO
        self.pids_started: list[int] = []  # host pids the test may need to kill

    def bundle(self, name: str | None = None, config: dict | None = None) -> Bundle:
        name = name or f"b{len(self.bundles)}"
        b = Bundle(self.workdir / name, self.probe, config=config)
        self.bundles.append(b)
        return b

    def path(self, name: str) -> Path:
        return self.workdir / name

    def add_cleanup(self, fn: Callable[[], None]) -> None:
        self.cleanups.append(fn)

    # -- teardown --------------------------------------------------------------
    def _rootfs_keys(self) -> set[tuple[int, int]]:
        keys = set()
        for b in self.bundles:
            k = _stat_key(b.rootfs)
            if k:
                keys.add(k)
        return keys

    def teardown(self) -> list[str]:
        """Returns a list of problems (leftovers); empty when clean."""
        problems: list[str] = []
        rt = self.rt
        for cid in rt.ids:
            if not os.path.lexists(rt.root / cid):
                continue  # deleted already: nothing for delete --force to find
            try:
                rt("delete", "--force", cid, timeout=15)
            except AssertionError as e:  # timeout
                problems.append(f"delete --force {cid} timed out: {e}")
            except OSError as e:
                # the binary could not be run (replaced by a rebuild while
                # the suite ran): the sweep below still kills what lives in
                # our rootfs and removes the cgroups, so nothing is left
                problems.append(f"delete --force {cid} could not run: {e!r}")
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                problems.append(f"cleanup {fn} failed: {e!r}")

        # processes: the init pids we saw in state, and anything living in our rootfs
        keys = self._rootfs_keys()
        known = [p for p in list(rt.pids.values()) + self.pids_started]

        def alive_known():
            return [p for p in known if pid_alive(p) and self._ours(p, keys)]

        def stray():
            return processes_in(self.workdir, keys)

        left = wait_for(lambda: not (alive_known() or stray()), timeout=5)
        if not left:
            procs = sorted(set(alive_known() + stray()))
            if procs:
                problems.append(f"processes left running: {procs} " + "; ".join(_describe(p) for p in procs))
                for p in procs:  # these live in this test's rootfs: ours
                    try:
                        os.kill(p, signal.SIGKILL)
                    except ProcessLookupError:
                        pass

        for cid in rt.ids:
            state_dir = rt.root / cid
            try:
                exists = os.path.lexists(state_dir)
            except (OSError, ValueError):
                exists = False
            if exists:
                problems.append(f"state dir left: {state_dir}")
            for cg in cgroup_dirs_named(cid):
                problems.append(f"cgroup left: {cg}")
                _rmdir_cgroup(cg)
        for cgp in self.extra_cgroups:
            for cg in cgroup_paths(cgp):
                problems.append(f"cgroup left: {cg}")
                _rmdir_cgroup(cg)

        mounts = mounts_under(self.workdir)
        if mounts:
            problems.append(f"mounts left on the host: {mounts}")
            for mp in sorted(mounts, key=len, reverse=True):
                subprocess.run(["umount", "-l", mp], capture_output=True, timeout=10)
        return problems

    def _ours(self, pid: int, keys) -> bool:
        """Guard against pid reuse: a known pid only counts if it still lives
        in one of our rootfs (or the pid was started by the test itself)."""
        if pid in self.pids_started:
            return True
        return _stat_key(f"/proc/{pid}/root") in keys

    def remove(self) -> None:
        if mounts_under(self.workdir):
            return  # never rm -rf through a live mount
        shutil.rmtree(self.workdir, ignore_errors=True)


def _describe(pid: int) -> str:
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        cmd = "?"
    return f"{pid}: {cmd.strip()}"


def _rmdir_cgroup(path: Path) -> None:
    for dirpath, dirnames, _ in sorted(os.walk(path), key=lambda t: len(t[0]), reverse=True):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass
