"""mounts: bind, rbind, ro, nosuid, nodev, noexec, tmpfs, proc, sysfs,
devpts, mqueue, cgroup."""
import os
import shutil
import subprocess

import pytest

from lib import find_mount, parse_mountinfo
from lib.asserts import assert_refused


def mounts(rt, b):
    res = rt.run_probe(b, "mounts")
    assert res.rc == 0, res
    return parse_mountinfo(res.probe()["data"])


@pytest.fixture
def src(workdir):
    d = workdir / "src"
    d.mkdir()
    (d / "file").write_text("hello")
    return d


def test_bind_mount_contents(rt, bundle, src):
    b = bundle().bind(src, "/mnt/data")
    assert rt.run_probe(b, "read", "/mnt/data/file").probe()["data"] == "hello"
    m = find_mount(mounts(rt, b), "/mnt/data")
    assert m["root"] == str(src)
    assert "rw" in m["mount_options"]


def test_bind_mount_writes_reach_host(rt, bundle, src):
    b = bundle().bind(src, "/mnt/data")
    assert rt.run_probe(b, "write", "/mnt/data/new", "from-container").probe()["ok"]
    assert (src / "new").read_text() == "from-container"


def test_bind_mount_single_file(rt, bundle, src):
    b = bundle().bind(src / "file", "/etc/injected")
    assert rt.run_probe(b, "read", "/etc/injected").probe()["data"] == "hello"


def test_bind_creates_missing_destination(rt, bundle, src):
    b = bundle().bind(src, "/a/b/c")
    assert rt.run_probe(b, "read", "/a/b/c/file").probe()["data"] == "hello"
    assert (b.rootfs / "a" / "b" / "c").is_dir()


def test_ro_bind(rt, bundle, src):
    b = bundle().bind(src, "/mnt/ro", "ro")
    assert rt.run_probe(b, "write", "/mnt/ro/new", "x").probe()["errno"] == "EROFS"
    assert rt.run_probe(b, "read", "/mnt/ro/file").probe()["data"] == "hello"
    assert "ro" in find_mount(mounts(rt, b), "/mnt/ro")["mount_options"]
    assert not (src / "new").exists()


@pytest.mark.parametrize("opt", ["nosuid", "nodev", "noexec"])
def test_bind_flags(rt, bundle, src, opt):
    b = bundle().bind(src, "/mnt/x", opt)
    assert opt in find_mount(mounts(rt, b), "/mnt/x")["mount_options"]
    st = rt.run_probe(b, "statfs", "/mnt/x").probe()["data"]
    assert st[opt] is True


def test_noexec_prevents_exec(rt, bundle, src):
    shutil.copy2(bundle.__self__.probe, src / "prog")
    b = bundle().bind(src, "/mnt/x", "noexec")
    res = rt.run_probe(b, "exec", "/mnt/x/prog", "exit", "0")
    assert res.probe()["errno"] == "EACCES"
    b2 = bundle().bind(src, "/mnt/x")
    res = rt.run_probe(b2, "exec", "/mnt/x/prog", "exit", "5")
    assert res.rc == 5


def test_nodev_prevents_device_open(rt, bundle, workdir):
    d = workdir / "devs"
    d.mkdir()
    os.mknod(d / "null", 0o20666, os.makedev(1, 3))
    b = bundle().bind(d, "/mnt/d", "nodev")
    assert rt.run_probe(b, "open", "/mnt/d/null", "w").probe()["errno"] == "EACCES"


def test_bind_vs_rbind_submounts(rt, harness, bundle, src):
    sub = src / "sub"
    sub.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(sub)], check=True)
    harness.add_cleanup(lambda: subprocess.run(["umount", str(sub)], check=True))
    (sub / "in-sub").write_text("sub")
    b = bundle().bind(src, "/mnt/bind")
    assert rt.run_probe(b, "ls", "/mnt/bind/sub").probe()["data"] == []
    b2 = bundle().bind(src, "/mnt/rbind", recursive=True)
    assert rt.run_probe(b2, "ls", "/mnt/rbind/sub").probe()["data"] == ["in-sub"]


def test_tmpfs_size_and_mode(rt, bundle):
    b = bundle().add_mount("/mnt/t", "tmpfs", "tmpfs", ["size=1m", "mode=700", "nosuid"])
    m = find_mount(mounts(rt, b), "/mnt/t")
    assert m["fstype"] == "tmpfs"
    assert "size=1024k" in m["super_options"]
    assert "mode=700" in m["super_options"]
    assert rt.run_probe(b, "statfs", "/mnt/t").probe()["data"]["bytes"] == 1024 * 1024


@pytest.mark.comet_only
def test_tmpfs_mode_honoured_on_root_dir(rt, bundle):
    # runc 1.1.5 chmods the tmpfs root back to the mode of the (freshly
    # created, 0755) mount point, so the directory is 0755 despite mode=700
    b = bundle().add_mount("/mnt/t", "tmpfs", "tmpfs", ["size=1m", "mode=700"])
    assert rt.run_probe(b, "stat", "/mnt/t").probe()["data"]["mode"] == "0700"


def test_tmpfs_is_writable_on_readonly_root(rt, bundle):
    b = bundle().readonly(True).add_mount("/mnt/t", "tmpfs", "tmpfs", ["size=1m"])
    assert rt.run_probe(b, "write", "/mnt/t/f", "x").probe()["ok"] is True


def test_tmpfs_size_enforced(rt, bundle):
    b = bundle().add_mount("/mnt/t", "tmpfs", "tmpfs", ["size=64k"])
    b.sh("dd if=/dev/zero of=/mnt/t/big bs=1k count=200 2>/dev/null; echo rc=$?; /probe stat /mnt/t/big")
    res = rt.run(rt.new_id(), b)
    assert "rc=1" in res.out, res
    assert res.probe()["data"]["size"] == 64 * 1024


@pytest.mark.parametrize("dest,fstype", [("/proc", "proc"), ("/sys", "sysfs"), ("/dev/pts", "devpts"),
                                         ("/dev/mqueue", "mqueue"), ("/dev/shm", "tmpfs"), ("/dev", "tmpfs")])
def test_default_special_mounts(rt, bundle, dest, fstype):
    m = find_mount(mounts(rt, bundle()), dest)
    assert m["fstype"] == fstype


def test_default_sys_is_readonly(rt, bundle):
    assert "ro" in find_mount(mounts(rt, bundle()), "/sys")["mount_options"]
    assert rt.run_probe(bundle(), "write", "/sys/kernel/uevent_helper", "x").probe()["errno"] == "EROFS"


def test_extra_proc_mount(rt, bundle):
    b = bundle().add_mount("/mnt/proc2", "proc", "proc")
    assert find_mount(mounts(rt, b), "/mnt/proc2")["fstype"] == "proc"
    assert rt.run_probe(b, "readlink", "/mnt/proc2/1/exe").probe()["data"] == "/probe"


def test_proc_shows_container_pid_namespace(rt, bundle):
    res = rt.run_probe(bundle(), "ls", "/proc")
    pids = [e for e in res.probe()["data"] if e.isdigit()]
    assert pids == ["1"], pids


def test_cgroup_mount(rt, bundle):
    ms = mounts(rt, bundle())
    cg = [m for m in ms if m["mount_point"].startswith("/sys/fs/cgroup")]
    assert cg, ms
    types = {m["fstype"] for m in cg}
    assert types & {"cgroup", "cgroup2"}, types
    for m in cg:
        if m["fstype"] in ("cgroup", "cgroup2"):
            assert "ro" in m["mount_options"], m


def test_cgroup_mount_shows_own_cgroup(rt, bundle):
    b = bundle().probe("ls", "/sys/fs/cgroup/pids").resources(pids={"limit": 100})
    res = rt.run(rt.new_id(), b)
    entries = res.probe()["data"]
    assert "pids.max" in entries and "cgroup.procs" in entries


def test_mqueue_mount_options(rt, bundle):
    m = find_mount(mounts(rt, bundle()), "/dev/mqueue")
    assert {"nosuid", "nodev", "noexec"} <= m["mount_options"]


def test_devpts_options(rt, bundle):
    m = find_mount(mounts(rt, bundle()), "/dev/pts")
    assert "ptmxmode=666" in m["super_options"]
    assert "mode=620" in m["super_options"]
    assert "gid=5" in m["super_options"]


def test_mount_missing_source_fails(rt, harness, bundle, workdir):
    b = bundle().bind(workdir / "no-such-src", "/mnt/x")
    assert_refused(harness, "run", b, "no-such-src")


def test_mount_bad_fstype_fails(rt, harness, bundle):
    b = bundle().add_mount("/mnt/x", "nosuchfs", "none")
    assert_refused(harness, "run", b, "/mnt/x")


def test_mount_order_later_wins(rt, bundle, workdir):
    a, c = workdir / "a", workdir / "c"
    a.mkdir()
    c.mkdir()
    (a / "f").write_text("first")
    (c / "f").write_text("second")
    b = bundle().bind(a, "/mnt/x").bind(c, "/mnt/x")
    assert rt.run_probe(b, "read", "/mnt/x/f").probe()["data"] == "second"


def test_nested_mount_destinations(rt, bundle, src):
    b = bundle().add_mount("/mnt/t", "tmpfs", "tmpfs", ["size=1m"]).bind(src, "/mnt/t/inner")
    assert rt.run_probe(b, "read", "/mnt/t/inner/file").probe()["data"] == "hello"
