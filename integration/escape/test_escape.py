"""The escape suite (issue 7): one test per attack, each run against a pack
sandbox and against the strict sandbox profile. Each asserts the specific
errno (or the absence of the effect) and that the host is unchanged.

The agent is packprobe (integration/pack/packprobe.c): one operation per
argument, one JSON line per operation. In a pack it is runtime.interpreter;
under `sandbox --profile strict` it is the command."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from lib import config as cfg
from lib.packs import build_packprobe, make_pack, one, pack_run, results

pytestmark = pytest.mark.comet_only


@pytest.fixture(scope="session")
def packprobe(session_dir) -> Path:
    return build_packprobe(session_dir)


def _has_sandbox() -> bool:
    r = subprocess.run([str(cfg.RUNTIME), "sandbox", "--help"], capture_output=True, text=True)
    return r.returncode == 0 and "--profile" in r.stdout


class Target:
    def __init__(self, kind, rt, workdir, packprobe):
        self.kind, self.rt, self.workdir = kind, rt, workdir
        if kind == "pack":
            self.pack = make_pack(workdir, packprobe)
        else:
            self.ws = workdir / "ws"
            self.ws.mkdir()
            self.probe = self.ws / "packprobe"
            shutil.copy2(packprobe, self.probe)

    def run(self, *ops):
        if self.kind == "pack":
            res = pack_run(self.rt, self.pack, *ops)
        else:
            res = self.rt("sandbox", "--profile", "strict", "--workspace", str(self.ws), "--",
                          str(self.probe), "x", *ops, timeout=60)
        assert res.rc in (0, 3), res  # 3: the attack was reported as a violation
        return results(res)


@pytest.fixture(params=["pack", "strict"])
def target(request, rt, workdir, packprobe):
    if request.param == "strict" and not _has_sandbox():
        pytest.skip("the sandbox command is not in this binary")
    return Target(request.param, rt, workdir, packprobe)


def _host_mounts() -> list[str]:
    """The host's mount table, less what tests running beside this one may
    mount meanwhile (the suite runs in parallel, integration/README.md):
    anything in a test's scratch dir (/tmp/cmt*: this test's own is checked
    by the harness's teardown), named netns (/run/netns, which `ip netns`
    makes a mount point on first use, and the nsfs mounts in it) and the
    bpffs the fs events program mounts once per boot. Lines carry the mount
    id and options, so a remount or a new mount anywhere else shows."""
    keep = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        f = line.split()
        mp, fstype = f[4], f[f.index("-") + 1]
        if mp.startswith("/tmp/cmt") or mp == "/run/netns" or \
                (fstype == "nsfs" and mp.startswith("/run/netns/")) or \
                (fstype == "bpf" and mp == "/sys/fs/bpf"):
            continue
        keep.append(line)
    return keep


def host_fingerprint() -> dict:
    """What an escape would change: the host's mount table, hostname, clock
    offset is not checked here (see test_set_the_clock)."""
    return {"mounts": _host_mounts(), "hostname": Path("/proc/sys/kernel/hostname").read_text()}


@pytest.fixture(autouse=True)
def host_unchanged():
    before = host_fingerprint()
    yield
    after = host_fingerprint()
    gone = sorted(set(before["mounts"]) - set(after["mounts"]))
    new = sorted(set(after["mounts"]) - set(before["mounts"]))
    assert after == before, f"the host's mounts or hostname changed: gone {gone}, new {new}"


def test_remount_root_read_write(target):
    r = target.run("remount-root-rw", "write=/escape-marker")
    assert one(r, "remount-root-rw")["errno"] == "EPERM"
    assert one(r, "write")["errno"] in ("EROFS", "EACCES")


def test_unmount_the_masking_mounts(target):
    r = target.run("umount=/proc/kcore", "umount=/proc/sys", "umount=/", "open-read=/proc/kcore")
    assert [x["errno"] for x in r["umount"]] == ["EPERM"] * 3
    assert one(r, "open-read")["data"] in ("0", "-1"), "kcore is masked"


def test_unshare_a_user_namespace_and_mount(target):
    r = target.run("unshare-user", "unshare-net", "mount-tmpfs")
    assert one(r, "unshare-user")["errno"] == "EPERM"
    assert one(r, "unshare-net")["errno"] == "EPERM"
    assert one(r, "mount-tmpfs")["errno"] == "EPERM"


def test_setns_into_pid1_namespaces(target):
    ops = [f"setns=/proc/1/ns/{n}" for n in ("mnt", "net", "pid", "user", "uts", "ipc", "cgroup")]
    r = target.run(*ops)
    for x in r["setns"]:
        # A pack's and a sandbox's PID 1 is the runtime's init (docs/events.md
        # "Exit code 3 under an engine", docs/sandbox.md), not dumpable: its
        # /proc/1/ns/* do not even open.
        assert x["errno"] in ("EPERM", "ENOENT", "EACCES"), x


def test_reach_the_host_through_proc(target):
    r = target.run("ls=/proc/1/root/", "ls=/proc/self/root/", "stat=/proc/1/root/boot",
                   "stat=/proc/self/cwd/../../../../etc/machine-id", "fds")
    for x in r["ls"]:
        names = set(x["data"].split())
        # the sandbox's root, never the host's: the host has /boot and /home
        assert not ({"boot", "home"} <= names and target.kind == "pack"), x
    # a pack's PID 1 is the runtime's non-dumpable init: /proc/1/root does not resolve
    assert one(r, "stat")["errno"] in ("ENOENT", "EACCES") if target.kind == "pack" else True
    assert one(r, "fds")["data"].strip() == "", "no fd of the runtime leaks into the sandbox"


def test_open_by_handle_at(target):
    r = target.run("open_by_handle_at")
    assert one(r, "open_by_handle_at")["errno"] == "EPERM"


def test_ptrace_a_sibling(target):
    r = target.run("ptrace-attach")
    assert one(r, "ptrace-attach")["errno"] == "EPERM"


def test_io_uring(target):
    r = target.run("io_uring_setup")
    assert one(r, "io_uring_setup")["errno"] == "EPERM"


def test_raw_and_packet_sockets(target):
    r = target.run("socket-raw", "socket-packet", "socket-packet-hibits")
    for op in ("socket-raw", "socket-packet", "socket-packet-hibits"):
        assert one(r, op)["errno"] == "EPERM", op


def test_connect_to_a_runtime_socket(target):
    socks = ["/run/containerd/containerd.sock", "/run/docker.sock", "/var/run/docker.sock",
             "/run/podman/podman.sock", "/run/crio/crio.sock", "/run/buildkit/buildkitd.sock"]
    r = target.run(*[f"connect-unix={s}" for s in socks], *[f"stat={s}" for s in socks])
    for x in r["connect-unix"]:
        assert x["ok"] is False and x["errno"] in ("ENOENT", "ECONNREFUSED"), x
    if target.kind == "pack":
        assert all(x["errno"] == "ENOENT" for x in r["stat"]), r["stat"]


def test_write_to_the_runtime_binary(target):
    exe = os.path.realpath(cfg.RUNTIME)
    before = hashlib.sha256(Path(exe).read_bytes()).hexdigest()
    r = target.run(f"write={exe}", f"stat={exe}")
    assert one(r, "write")["ok"] is False
    assert one(r, "write")["errno"] in ("ENOENT", "EROFS", "EACCES")
    assert hashlib.sha256(Path(exe).read_bytes()).hexdigest() == before


def test_mknod_a_device(target):
    r = target.run("mknod=/dev/shm/null2", "mknod=/dev/null2")
    for x in r["mknod"]:
        assert x["errno"] in ("EPERM", "EROFS", "EACCES"), x
    # /dev/shm is writable: only the missing CAP_MKNOD stops it
    assert r["mknod"][0]["errno"] == "EPERM", r["mknod"]


def test_write_to_sys_and_proc_sys(target):
    host = Path("/proc/sys/kernel/hostname").read_text()
    r = target.run("write=/proc/sys/kernel/hostname", "write=/sys/kernel/uevent_helper",
                   "write=/proc/sysrq-trigger")
    for x in r["write"]:
        assert x["ok"] is False and x["errno"] in ("EROFS", "ENOENT", "EACCES"), x
    assert Path("/proc/sys/kernel/hostname").read_text() == host


def test_set_the_clock(target):
    before = time.time()
    r = target.run("clock_settime", "settimeofday", "adjtimex-set")
    assert one(r, "clock_settime")["errno"] == "EPERM"
    assert one(r, "settimeofday")["errno"] == "EPERM"
    assert one(r, "adjtimex-set")["errno"] == "EPERM"
    assert abs(time.time() - before) < 30


def test_load_a_bpf_program(target):
    r = target.run("bpf")
    assert one(r, "bpf")["errno"] == "EPERM"


def test_fill_dev_shm_past_its_limit(target):
    r = target.run("fill=/dev/shm/fill")
    x = one(r, "fill")
    if target.kind == "pack":
        # a pack writes only where fs.write says: /dev/shm is read-only
        # unless listed (test_host_view.py)
        assert x["errno"] == "EROFS", x
        return
    assert x["errno"] == "ENOSPC", x
    assert int(x["data"]) <= 64 * 1024 * 1024


def test_rootfs_symlink_swap_during_create(rt, workdir, packprobe):
    """A rootfs whose /workdir is swapped for a symlink to the host's /etc
    (and back) while creates run: no mount may land outside the rootfs, and
    the host's /etc is never written."""
    pack = make_pack(workdir, packprobe)
    _, rootfs = pack
    etc_before = sorted(os.listdir("/etc"))
    stop = threading.Event()
    wd = rootfs / "workdir"
    alt = rootfs / "workdir.real"

    def swapper():
        while not stop.is_set():
            try:
                os.rename(wd, alt)
                os.symlink("/etc", wd)
                time.sleep(0.0005)
                os.unlink(wd)
                os.rename(alt, wd)
            except OSError:
                pass

    t = threading.Thread(target=swapper)
    t.start()
    outcomes = []
    try:
        for _ in range(15):
            res = pack_run(rt, pack, "write=/workdir/out/x")
            outcomes.append(res.rc)
    finally:
        stop.set()
        t.join()
        if wd.is_symlink():
            wd.unlink()
        if alt.exists() and not wd.exists():
            os.rename(alt, wd)
    assert sorted(os.listdir("/etc")) == etc_before
    assert not any(l.split()[4].startswith("/etc/") for l in Path("/proc/self/mountinfo").read_text().splitlines()
                   if len(l.split()) > 4)
    assert rt("list", "-q").out.strip() == ""
    assert set(outcomes) <= {0, 1, 3}, outcomes  # 3: the agent was refused something
