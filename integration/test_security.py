"""Breakout hardening: leaked fds (CVE-2024-21626), process.cwd escapes,
/proc/self/exe (CVE-2019-5736 surface), symlinked mount destinations,
chroot escapes."""
import os

import pytest

from lib.asserts import assert_nothing_left


def test_no_fd_above_stderr(rt, bundle):
    assert rt.run_probe(bundle(), "info").probe()["fds"] == [0, 1, 2]


def test_no_fd_above_stderr_after_create_start(rt, bundle):
    cid = rt.new_id()
    rt.create(cid, bundle().probe("info")).expect_ok()
    rt.start(cid).expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"
    import json
    assert json.loads(rt.output(cid))["fds"] == [0, 1, 2]


def test_no_leaked_fd_in_child_shell(rt, bundle):
    res = rt.run(rt.new_id(), bundle().sh("ls /proc/self/fd | sort -n | tr '\\n' ' '"))
    # ls itself holds one fd for the directory it lists
    fds = [int(x) for x in res.out.split()]
    assert [f for f in fds if f > 3] == [], res.out


@pytest.mark.parametrize("fd", [3, 4, 5, 6, 7, 8, 9])
def test_cwd_through_proc_self_fd_fails(rt, harness, bundle, fd):
    # CVE-2024-21626: a cwd of /proc/self/fd/N must never resolve to an fd
    # the runtime leaked (e.g. a host cgroup dir)
    cid = rt.new_id()
    res = rt.run(cid, bundle().cwd(f"/proc/self/fd/{fd}").probe("info"))
    assert res.rc != 0, f"container started with cwd /proc/self/fd/{fd}: {res.out}"
    assert_nothing_left(harness, cid)


def test_cwd_is_inside_container(rt, bundle):
    b = bundle()
    (b.rootfs / "work").mkdir()
    b.cwd("/work").sh("/probe stat .; /probe stat /work")
    res = rt.run(rt.new_id(), b)
    import json
    here, there = (json.loads(line)["data"] for line in res.out.splitlines())
    assert (here["dev"], here["ino"]) == (there["dev"], there["ino"])
    assert rt.run_probe(b, "readlink", "/proc/self/cwd").probe()["data"] == "/work"


def test_cwd_dotdot_stays_in_rootfs(rt, bundle):
    b = bundle().cwd("/../../../../tmp")
    res = rt.run_probe(b, "info")
    assert res.rc == 0, res
    assert res.probe()["cwd"] == "/tmp"


def test_proc_self_exe_is_the_container_binary(rt, bundle):
    b = bundle().probe("readlink", "/proc/1/exe")
    assert rt.run(rt.new_id(), b).probe()["data"] == "/probe"


def _host_caps():
    from lib.util import cap_names
    with open("/proc/self/status") as f:
        bnd = next(line for line in f if line.startswith("CapBnd:")).split()[1]
    return cap_names(bnd)


def test_proc_self_exe_not_writable_even_with_all_caps(rt, bundle):
    # CVE-2019-5736 surface: /proc/self/exe of the container init is the
    # container's own binary (busy while it runs), never the runtime
    b = bundle().caps(_host_caps())
    res = rt.run_probe(b, "open", "/proc/self/exe", "w")
    assert res.probe()["errno"] == "ETXTBSY", res
    res = rt.run_probe(b, "readlink", "/proc/self/exe")
    assert res.probe()["data"] == "/probe"


@pytest.mark.parametrize("style", ["absolute", "relative"])
def test_symlinked_mount_destination_stays_in_rootfs(rt, bundle, workdir, style):
    target = workdir / f"host-target-{style}"
    target.mkdir()
    (target / "keep").write_text("host")
    b = bundle().readonly(False)
    link = str(target) if style == "absolute" else "../" * 12 + str(target).lstrip("/")
    os.symlink(link, b.rootfs / "evil")
    b.add_mount("/evil", "tmpfs", "tmpfs", ["size=1m"])
    b.sh("echo pwned > /evil/written; /probe ls /evil")
    res = rt.run(rt.new_id(), b)
    assert res.rc == 0, res
    assert res.probe()["data"] == ["written"], "the tmpfs is mounted somewhere inside"
    # the host path is untouched: same contents, no mount on it
    assert sorted(os.listdir(target)) == ["keep"]
    assert (target / "keep").read_text() == "host"
    assert str(target) not in open("/proc/self/mountinfo").read()
    # it landed inside the rootfs
    inside = b.rootfs / str(target).lstrip("/")
    assert inside.is_dir()


def test_bind_source_symlink_in_destination_path(rt, bundle, workdir):
    target = workdir / "host-dir"
    target.mkdir()
    src = workdir / "src"
    src.mkdir()
    (src / "f").write_text("bound")
    b = bundle()
    (b.rootfs / "mnt" / "link").symlink_to(str(target))
    b.bind(src, "/mnt/link/sub")
    res = rt.run_probe(b, "read", "/mnt/link/sub/f")
    assert res.probe()["data"] == "bound"
    assert os.listdir(target) == [], "mount point created on the host through the symlink"


def test_chroot_escape_fails(rt, bundle):
    b = bundle().caps(["CAP_SYS_CHROOT"]).add_mount("/tmp", "tmpfs", "tmpfs", ["size=1m"])
    res = rt.run_probe(b, "chroot-escape", "/tmp/jail")
    p = res.probe()
    assert p["ok"] is True, p  # the chroot calls themselves work...
    assert p["data"]["escaped"] is False, p  # ...but "/" is still the container root
    res2 = rt.run_probe(b, "stat", "/probe")
    assert res2.probe()["ok"]


def test_chroot_needs_capability(rt, bundle):
    b = bundle().add_mount("/tmp", "tmpfs", "tmpfs", ["size=1m"])
    assert rt.run_probe(b, "chroot-escape", "/tmp/jail").probe()["errno"] == "EPERM"


def test_host_root_not_reachable_via_proc(rt, bundle):
    # /proc/1/root is the container's root, not the host's
    res = rt.run_probe(bundle(), "ls", "/proc/1/root")
    assert "probe" in res.probe()["data"]
    assert "usr" not in res.probe()["data"]


def test_no_new_privileges_blocks_setuid_gain(rt, bundle):
    b = bundle().user(1000, 1000).readonly(False)
    import shutil
    shutil.copy2(bundle.__self__.probe, b.rootfs / "suid-probe")
    os.chown(b.rootfs / "suid-probe", 0, 0)
    os.chmod(b.rootfs / "suid-probe", 0o4755)
    res = rt.run_probe(b, "exec", "/suid-probe", "info")
    assert res.probe()["euid"] == 1000, "setuid bit honoured despite noNewPrivileges"
    b.no_new_privileges(False)
    res = rt.run_probe(b, "exec", "/suid-probe", "info")
    assert res.probe()["euid"] == 0
