"""Default devices, /dev/pts, /dev/ptmx, /dev/shm, config devices and the
device cgroup."""
import pytest

DEFAULT_DEVICES = {"/dev/null": (1, 3), "/dev/zero": (1, 5), "/dev/full": (1, 7), "/dev/random": (1, 8),
                   "/dev/urandom": (1, 9), "/dev/tty": (5, 0)}


def stat(rt, b, path):
    return rt.run_probe(b, "stat", path).probe()


@pytest.mark.parametrize("path", sorted(DEFAULT_DEVICES))
def test_default_device(rt, bundle, path):
    st = stat(rt, bundle(), path)["data"]
    assert st["type"] == "char"
    assert (st["rdev_major"], st["rdev_minor"]) == DEFAULT_DEVICES[path]
    assert st["mode"] == "0666"
    assert (st["uid"], st["gid"]) == (0, 0)


def test_dev_listing(rt, bundle):
    entries = set(rt.run_probe(bundle(), "ls", "/dev").probe()["data"])
    assert {"null", "zero", "full", "random", "urandom", "tty", "ptmx", "pts", "shm", "mqueue",
            "fd", "stdin", "stdout", "stderr"} <= entries
    assert "console" not in entries, "no /dev/console without a terminal"


def test_ptmx_symlink(rt, bundle):
    b = bundle()
    assert rt.run_probe(b, "readlink", "/dev/ptmx").probe()["data"] == "pts/ptmx"
    st = stat(rt, b, "/dev/pts/ptmx")["data"]
    assert (st["type"], st["rdev_major"], st["rdev_minor"]) == ("char", 5, 2)


@pytest.mark.parametrize("link,target", [("/dev/fd", "/proc/self/fd"), ("/dev/stdin", "/proc/self/fd/0"),
                                         ("/dev/stdout", "/proc/self/fd/1"), ("/dev/stderr", "/proc/self/fd/2")])
def test_dev_symlinks(rt, bundle, link, target):
    assert rt.run_probe(bundle(), "readlink", link).probe()["data"] == target


def test_ptmx_opens(rt, bundle):
    res = rt.run_probe(bundle(), "open", "/dev/ptmx", "rw")
    assert res.probe()["ok"] is True, res


def test_dev_shm(rt, bundle):
    b = bundle()
    st = stat(rt, b, "/dev/shm")["data"]
    assert st["type"] == "dir" and st["mode"] == "1777"
    assert rt.run_probe(b, "write", "/dev/shm/x", "data").probe()["ok"] is True


def test_dev_null_semantics(rt, bundle):
    b = bundle()
    assert rt.run_probe(b, "read", "/dev/null").probe() == {"ok": True, "errno": None, "data": ""}
    assert rt.run_probe(b, "write", "/dev/null", "abc").probe()["data"] == 3


def test_dev_full_enospc(rt, bundle):
    assert rt.run_probe(bundle(), "write", "/dev/full", "x").probe()["errno"] == "ENOSPC"


def test_dev_zero_reads_zeros(rt, bundle):
    res = rt.run(rt.new_id(), bundle().sh("head -c 16 /dev/zero | od -An -tx1 | tr -d ' \\n'"))
    assert res.out == "00" * 16


def test_config_device(rt, bundle):
    b = bundle().add_device("/dev/mydev", "c", 1, 3, mode=0o640, uid=0, gid=5)
    st = stat(rt, b, "/dev/mydev")["data"]
    assert st["type"] == "char"
    assert (st["rdev_major"], st["rdev_minor"]) == (1, 3)
    assert st["mode"] == "0640"
    assert (st["uid"], st["gid"]) == (0, 5)
    assert rt.run_probe(b, "write", "/dev/mydev", "x").probe()["ok"] is True


def test_config_device_in_subdir(rt, bundle):
    b = bundle().add_device("/dev/sub/dir/null2", "c", 1, 3)
    st = stat(rt, b, "/dev/sub/dir/null2")["data"]
    assert (st["type"], st["rdev_major"], st["rdev_minor"]) == ("char", 1, 3)


# 240:7 is in the "local/experimental" range: no driver behind it.  When the
# device cgroup lets open() through the kernel answers ENXIO; when the cgroup
# denies it the answer is EPERM.
def test_device_cgroup_denies_unlisted_device(rt, bundle):
    # the node exists (linux.devices) but linux.resources.devices (default
    # deny-all) does not allow it
    b = bundle().add_device("/dev/exp", "c", 240, 7, allow=False)
    assert rt.run_probe(b, "open", "/dev/exp", "r").probe()["errno"] == "EPERM"


def test_device_cgroup_allow_rule(rt, bundle):
    b = bundle().add_device("/dev/exp", "c", 240, 7, allow=True)
    assert rt.run_probe(b, "open", "/dev/exp", "r").probe()["errno"] == "ENXIO"


def test_mknod_denied_without_cap(rt, bundle):
    res = rt.run(rt.new_id(), bundle().readonly(False).sh("mknod /tmp/n c 1 3; echo rc=$?"))
    assert "rc=1" in res.out, res
