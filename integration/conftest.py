"""Fixtures for the black-box integration suite (see README.md).

COMET_RUNTIME  runtime binary (default: <repo>/build/runtime/comet-runtime)
PROBE          comet-probe binary (default: <repo>/build/integration/comet-probe,
               else compiled from probe/probe.c with `cc -static` into a temp dir)
COMET_KEEP=1   keep each test's scratch directory
"""
from __future__ import annotations

import os
import subprocess
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lib import config as cfg  # noqa: E402
from lib import fswatch  # noqa: E402
from lib.harness import Harness  # noqa: E402
from lib.probe import locate_or_build  # noqa: E402


def pytest_report_header(config):
    return [f"runtime under test: {cfg.RUNTIME} ({'runc: comet_only tests skipped' if cfg.IS_RUNC else 'comet'})"]


_PRIVATE_STATE = None
_CACHE_FROM_USER = False
_CACHE_SEQ = [0]


@pytest.fixture(autouse=True)
def _private_pack_cache(monkeypatch):
    """A fresh pack result cache (docs/cache.md) for every test: a read-only
    pack run by one test is never replayed from another test's run. The
    cache's own tests set COMET_CACHE_DIR or --cache-dir themselves."""
    if _CACHE_FROM_USER or _PRIVATE_STATE is None:
        yield
        return
    _CACHE_SEQ[0] += 1
    d = os.path.join(_PRIVATE_STATE, "cache", str(_CACHE_SEQ[0]))
    monkeypatch.setenv("COMET_CACHE_DIR", d)
    yield
    shutil.rmtree(d, ignore_errors=True)


def _is_xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionstart(session):
    # The flags registry and the default-rootfs cache live under
    # /var/lib/comet-runtime; tests get private ones, removed at the end.
    # Each process gets its own (every pytest-xdist worker too): a flag one
    # test raises must never show in another test's run. A value the
    # caller set is kept; one that the controller set for itself is not
    # inherited by its workers (_COMET_SUITE_STATE names the ones it set).
    global _PRIVATE_STATE
    _PRIVATE_STATE = tempfile.mkdtemp(prefix="comet-test-varlib-", dir="/tmp")
    ours = set(os.environ.get("_COMET_SUITE_STATE", "").split(","))
    mine = []
    for var, sub in (("COMET_FLAGS_DIR", "flags"), ("COMET_ROOTFS_CACHE", "rootfs")):
        if var not in os.environ or var in ours:
            os.environ[var] = os.path.join(_PRIVATE_STATE, sub)
            mine.append(var)
    os.environ["_COMET_SUITE_STATE"] = ",".join(mine)
    global _CACHE_FROM_USER
    _CACHE_FROM_USER = "COMET_CACHE_DIR" in os.environ
    if os.geteuid() != 0:
        pytest.exit("the integration suite must run as root", returncode=4)
    if not (cfg.RUNTIME.is_file() and os.access(cfg.RUNTIME, os.X_OK)):
        pytest.exit(f"runtime binary not found: {cfg.RUNTIME} (set COMET_RUNTIME)", returncode=4)
    if not _is_xdist_worker(session.config):
        _BPFFS_AT_START.update(_bpffs_state())


def pytest_sessionfinish(session, exitstatus):
    if _PRIVATE_STATE and not os.environ.get("COMET_KEEP"):
        shutil.rmtree(_PRIVATE_STATE, ignore_errors=True)
    if not _is_xdist_worker(session.config) and _BPFFS_AT_START:
        _leave_bpffs_as_found(_BPFFS_AT_START)


# Parallel runs (pytest-xdist, scripts/itest.sh; integration/README.md
# "Parallel and serial"): a test file is the unit of distribution, so its
# module fixtures are made once, on one worker. Tests that look at the whole
# machine (snapshots of mounts, cgroups, netns, nft tables, processes), the
# engine suites with their host-wide leak watch, and tests of host-wide
# singletons carry the `serial` marker and run alone, after the parallel part.
SERIAL_DIRS = ("reliability", "engines")
#: test files that share one fixed resource run on one worker, one after
#: another: the egress suite's test internet takes 10.213.0.0/24 and
#: fd77::/64 on a host veth (egress/inet.py)
SHARED_GROUPS = {"egress": "inet"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    here = Path(__file__).resolve().parent
    for item in items:
        rel = Path(str(item.fspath)).resolve().relative_to(here)
        top = rel.parts[0] if len(rel.parts) > 1 else ""
        if top in SERIAL_DIRS:
            item.add_marker(pytest.mark.serial)
        item.add_marker(pytest.mark.xdist_group(SHARED_GROUPS.get(top, str(rel))))
    if not cfg.IS_RUNC:
        return
    skip = pytest.mark.skip(reason="comet_only: runc does not meet this requirement")
    for item in items:
        if "comet_only" in item.keywords:
            item.add_marker(skip)


def _bpffs_mounted() -> bool:
    try:
        return any(line.split()[1] == "/sys/fs/bpf" and line.split()[2] == "bpf"
                   for line in Path("/proc/self/mounts").read_text().splitlines())
    except OSError:
        return False


_BPFFS_AT_START: dict = {}


RUN_ROOT = Path("/run/comet-runtime")


def _bpffs_state() -> dict:
    mine = fswatch.pin_dir()
    return {"mounted": _bpffs_mounted(), "had_root": fswatch.PINS.exists(),
            "had_mine": mine is not None and mine.exists(), "attached": fswatch.attached(),
            "had_run_root": RUN_ROOT.exists()}


def _leave_bpffs_as_found(before: dict) -> None:
    """The fs events program (runtime/reporting/src/fswatch.cpp) pins itself under
    /sys/fs/bpf/comet-runtime and mounts bpffs there when nothing has: the
    suite takes away what it added (this build's pins and link, its
    detacher, bpffs), as the machine was before it. Other builds' pins are
    not this suite's. Done once, by the process that ran the session (the
    xdist controller), after every worker has finished: the pins are one per
    boot and shared by every pack that runs."""
    pins = fswatch.PINS
    mine = fswatch.pin_dir()
    if mine is not None and not before["attached"]:
        # the detacher a pack's end started, by the pid it wrote; then its link
        pid = fswatch.linger_pid()
        if pid is not None:
            os.kill(pid, 9)
        (mine / "link").unlink(missing_ok=True)
        for f in (fswatch.linger_file(), fswatch.idle_file()):
            f.unlink(missing_ok=True)
    if mine is not None and not before["had_mine"]:
        shutil.rmtree(mine, ignore_errors=True)
    if not before["had_root"] and pins.exists() and not any(pins.iterdir()):
        pins.rmdir()
        Path("/run/comet-runtime/fswatch.lock").unlink(missing_ok=True)
    if not before["mounted"] and _bpffs_mounted() and not pins.exists():
        subprocess.run(["umount", "/sys/fs/bpf"], check=False)
    # the runtime's default root, made by the tests that run without --root
    # (sandbox, the seccomp program cache): gone again if it was not there
    if not before["had_run_root"] and RUN_ROOT.is_dir():
        shutil.rmtree(RUN_ROOT / "cache", ignore_errors=True)
        shutil.rmtree(RUN_ROOT / ".events@", ignore_errors=True)  # kept events (docs/events.md)
        try:
            RUN_ROOT.rmdir()
        except OSError:
            pass


@pytest.fixture(scope="session")
def session_dir():
    d = Path(tempfile.mkdtemp(prefix="cmt", dir="/tmp"))
    os.chmod(d, 0o755)  # user-namespaced containers must traverse it
    yield d
    if not os.environ.get("COMET_KEEP"):
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def probe_path(session_dir) -> Path:
    return locate_or_build(session_dir)


@pytest.fixture(scope="session")
def runtime_binary() -> Path:
    return cfg.RUNTIME


_test_counter = iter(range(1, 1 << 30))


@pytest.fixture
def harness(session_dir, probe_path, runtime_binary):
    h = Harness(runtime_binary, probe_path, session_dir / str(next(_test_counter)))
    os.chmod(h.workdir, 0o755)
    yield h
    problems = h.teardown()
    if not os.environ.get("COMET_KEEP"):
        h.remove()
    if problems:
        pytest.fail("leftovers after test:\n  " + "\n  ".join(problems), pytrace=False)


@pytest.fixture
def rt(harness):
    """Runtime wrapper with a private --root; rt(*args) -> Result(rc, out, err)."""
    return harness.rt


@pytest.fixture
def bundle(harness):
    """Factory: bundle() -> a fresh Bundle (busybox + /probe rootfs, default config)."""
    return harness.bundle


@pytest.fixture
def workdir(harness) -> Path:
    return harness.workdir


@pytest.fixture
def ws(workdir) -> Path:
    """A sandbox workspace: WORKDIR/ws, writable by every uid (a sandbox may
    run its command as an ordinary user)."""
    d = workdir / "ws"
    d.mkdir()
    os.chmod(d, 0o777)
    return d


@pytest.fixture
def scratch_fds(workdir):
    """scratch_fds(n, prefix="fd") -> n open files WORKDIR/<prefix><i>, closed
    when the test ends; Runtime(fds=...) places them at 3, 4, ..."""
    opened: list[int] = []

    def open_files(n: int, prefix: str = "fd") -> list[int]:
        fds = [os.open(str(workdir / f"{prefix}{i}"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
               for i in range(n)]
        opened.extend(fds)
        return fds

    yield open_files
    for fd in opened:
        os.close(fd)
