"""linux.maskedPaths and linux.readonlyPaths."""
import pytest


@pytest.fixture
def b(bundle):
    b = bundle().readonly(False)
    (b.rootfs / "secret").write_text("topsecret")
    (b.rootfs / "sdir").mkdir()
    (b.rootfs / "sdir" / "f").write_text("x")
    (b.rootfs / "ro").mkdir()
    (b.rootfs / "ro" / "f").write_text("ro-content")
    (b.rootfs / "rofile").write_text("y")
    b.masked_paths(["/secret", "/sdir", "/nonexistent-masked"])
    b.readonly_paths(["/ro", "/rofile", "/nonexistent-ro"])
    return b


def test_masked_file_reads_empty(rt, b):
    assert rt.run_probe(b, "read", "/secret").probe() == {"ok": True, "errno": None, "data": ""}


def test_masked_file_is_dev_null(rt, b):
    st = rt.run_probe(b, "stat", "/secret").probe()["data"]
    assert (st["type"], st["rdev_major"], st["rdev_minor"]) == ("char", 1, 3)


def test_masked_file_write_does_not_reach_rootfs(rt, b):
    rt.run_probe(b, "write", "/secret", "overwritten")
    assert (b.rootfs / "secret").read_text() == "topsecret"


def test_masked_dir_is_empty_readonly_tmpfs(rt, b):
    assert rt.run_probe(b, "ls", "/sdir").probe()["data"] == []
    assert rt.run_probe(b, "write", "/sdir/new", "x").probe()["errno"] == "EROFS"
    st = rt.run_probe(b, "statfs", "/sdir").probe()["data"]
    assert st["type"] == 0x01021994  # TMPFS_MAGIC
    assert st["rdonly"] is True


def test_masked_nonexistent_path_is_ignored(rt, b):
    assert rt.run_probe(b, "stat", "/nonexistent-masked").probe()["errno"] == "ENOENT"


def test_readonly_path_dir(rt, b):
    assert rt.run_probe(b, "write", "/ro/f", "z").probe()["errno"] == "EROFS"
    assert rt.run_probe(b, "write", "/ro/new", "z").probe()["errno"] == "EROFS"
    assert rt.run_probe(b, "read", "/ro/f").probe()["data"] == "ro-content"


def test_readonly_path_file(rt, b):
    assert rt.run_probe(b, "write", "/rofile", "z").probe()["errno"] == "EROFS"
    assert (b.rootfs / "rofile").read_text() == "y"


def test_readonly_nonexistent_path_is_ignored(rt, b):
    assert rt.run_probe(b, "stat", "/nonexistent-ro").probe()["errno"] == "ENOENT"


def test_rest_of_root_stays_writable(rt, b):
    assert rt.run_probe(b, "write", "/other", "ok").probe()["ok"] is True


def test_default_masked_proc_paths(rt, bundle):
    b = bundle()
    assert rt.run_probe(b, "read", "/proc/keys").probe()["data"] == ""
    assert rt.run_probe(b, "read", "/proc/timer_list").probe()["data"] == ""
    assert rt.run_probe(b, "ls", "/proc/acpi").probe()["data"] == []
    assert rt.run_probe(b, "ls", "/sys/firmware").probe()["data"] == []


def test_default_readonly_proc_paths(rt, bundle):
    b = bundle().caps(["CAP_SYS_ADMIN", "CAP_NET_ADMIN"])
    assert rt.run_probe(b, "write", "/proc/sys/kernel/hostname", "x").probe()["errno"] == "EROFS"
    res = rt.run_probe(b, "open", "/proc/sys/net/ipv4/ip_forward", "w")
    assert res.probe()["errno"] == "EROFS"
    assert rt.run_probe(b, "read", "/proc/sys/kernel/ostype").probe()["data"] == "Linux\n"


def test_masked_paths_empty_list_unmasks(rt, bundle):
    b = bundle().masked_paths([])
    data = rt.run_probe(b, "ls", "/sys/firmware").probe()["data"]
    import os
    assert data == sorted(os.listdir("/sys/firmware"))
