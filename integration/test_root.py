"""root.path and root.readonly."""
import os


def test_readonly_root(rt, bundle):
    b = bundle().readonly(True)
    assert rt.run_probe(b, "write", "/newfile", "x").probe()["errno"] == "EROFS"
    assert rt.run_probe(b, "mkdir", "/newdir").probe()["errno"] == "EROFS"
    assert not (b.rootfs / "newfile").exists()
    mounts = rt.run_probe(b, "statfs", "/").probe()["data"]
    assert mounts["rdonly"] is True


def test_readonly_root_still_has_writable_tmpfs_mounts(rt, bundle):
    b = bundle().readonly(True)
    assert rt.run_probe(b, "write", "/dev/shm/x", "y").probe()["ok"] is True


def test_writable_root(rt, bundle):
    b = bundle().readonly(False)
    res = rt.run_probe(b, "write", "/newfile", "hello")
    assert res.probe()["ok"] is True
    assert (b.rootfs / "newfile").read_text() == "hello"


def test_root_path_absolute(rt, bundle, workdir):
    b = bundle()
    alt = workdir / "elsewhere"
    os.rename(b.rootfs, alt)
    b.config["root"]["path"] = str(alt)
    res = rt.run_probe(b, "stat", "/probe")
    assert res.probe()["ok"] is True
    assert res.probe()["data"]["ino"] == os.stat(alt / "probe").st_ino


def test_root_path_relative_to_bundle(rt, bundle, workdir):
    b = bundle()
    os.rename(b.rootfs, b.path / "other-root")
    b.config["root"]["path"] = "other-root"
    res = rt.run_probe(b, "stat", "/probe")
    assert res.probe()["ok"] is True


def test_root_is_the_rootfs(rt, bundle):
    b = bundle().readonly(False)
    (b.rootfs / "marker").write_text("in-rootfs")
    assert rt.run_probe(b, "read", "/marker").probe()["data"] == "in-rootfs"
    # the host's files are not visible
    assert rt.run_probe(b, "stat", "/usr/bin").probe()["errno"] == "ENOENT"
