"""Mount propagation of bind mounts, and linux.rootfsPropagation."""
import subprocess

import pytest

from lib import find_mount, parse_mountinfo


def _sh(*args):
    subprocess.run(list(args), check=True, capture_output=True, timeout=10)


@pytest.fixture
def shared_src(harness, workdir):
    """A host directory that is a shared mount, with an empty sub/ dir."""
    src = workdir / "shsrc"
    (src / "sub").mkdir(parents=True)
    _sh("mount", "--bind", str(src), str(src))
    harness.add_cleanup(lambda: _sh("umount", "-R", str(src)))
    _sh("mount", "--make-shared", str(src))
    return src


def _mount_after_start(rt, harness, b, host_dir, probe_path):
    """Start a container that waits, mount a tmpfs on host_dir from the host,
    then let the container report its mountinfo and whether it sees the
    new mount (a file created in it)."""
    b.sh(f"while [ ! -e /go ]; do sleep 0.05; done 2>/dev/null; "
         f"/probe mounts; /probe read {probe_path}/seen")
    b.readonly(False)
    cid = rt.new_id()
    rt.run(cid, b, "-d").expect_ok()
    _sh("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(host_dir))
    harness.add_cleanup(lambda: _sh("umount", "-l", str(host_dir)))
    (host_dir / "seen").write_text("propagated")
    (b.rootfs / "go").touch()
    assert rt.wait_status(cid, "stopped", timeout=10) == "stopped"
    lines = [line for line in rt.output(cid).splitlines() if line.startswith("{")]
    mounts = parse_mountinfo(__import__("json").loads(lines[0])["data"])
    seen = __import__("json").loads(lines[1])
    return mounts, seen


@pytest.mark.parametrize("prop,tag,visible", [
    ("rprivate", None, False), ("private", None, False),
    ("rslave", "master:", True), ("slave", "master:", True),
    ("rshared", "shared:", True), ("shared", "shared:", True),
])
def test_bind_propagation(rt, harness, bundle, shared_src, prop, tag, visible):
    b = bundle().add_mount("/mnt/x", "bind", str(shared_src), ["rbind", prop])
    mounts, seen = _mount_after_start(rt, harness, b, shared_src / "sub", "/mnt/x/sub")
    m = find_mount(mounts, "/mnt/x")
    if tag is None:
        assert m["optional"] == [], m
    else:
        assert any(o.startswith(tag) for o in m["optional"]), m
    if visible:
        assert seen["data"] == "propagated", seen
    else:
        assert seen["errno"] == "ENOENT", seen


def test_bind_default_propagation_is_slave_of_host(rt, harness, bundle, shared_src):
    # no propagation option: runc's default (rootfs rslave) makes it a slave
    b = bundle().add_mount("/mnt/x", "bind", str(shared_src), ["rbind"])
    mounts, seen = _mount_after_start(rt, harness, b, shared_src / "sub", "/mnt/x/sub")
    assert any(o.startswith("master:") for o in find_mount(mounts, "/mnt/x")["optional"])
    assert seen["data"] == "propagated"


@pytest.fixture
def shared_rootfs(harness):
    """A bundle whose rootfs is itself a shared mount on the host."""
    def make():
        b = harness.bundle()
        rf = str(b.rootfs)
        _sh("mount", "--bind", rf, rf)
        harness.add_cleanup(lambda: _sh("umount", "-R", "-l", rf))
        _sh("mount", "--make-shared", rf)
        (b.rootfs / "mnt" / "sub").mkdir()
        return b
    return make


# (non-recursive "slave" is left out: runc applies it to the host's old
# root only, so the rootfs mount ends up private; not worth pinning down)
@pytest.mark.parametrize("prop,visible,tag", [(None, True, "master:"), ("rslave", True, "master:"),
                                              ("rprivate", False, None), ("private", False, None)])
def test_rootfs_propagation(rt, harness, shared_rootfs, prop, visible, tag):
    b = shared_rootfs()
    if prop:
        b.rootfs_propagation(prop)
    mounts, seen = _mount_after_start(rt, harness, b, b.rootfs / "mnt" / "sub", "/mnt/sub")
    root = find_mount(mounts, "/")
    if tag:
        assert any(o.startswith(tag) for o in root["optional"]), (root, seen)
    else:
        assert root["optional"] == [], root
    if visible:
        assert seen["data"] == "propagated", seen
    else:
        assert seen["errno"] == "ENOENT", seen


@pytest.mark.comet_only
def test_rootfs_propagation_shared(rt, harness, shared_rootfs):
    # runc 1.1.5 leaves "/" private for rootfsPropagation=rshared (its
    # parent-mount-private step undoes it); the spec asks for a shared root
    b = shared_rootfs().rootfs_propagation("rshared")
    mounts, seen = _mount_after_start(rt, harness, b, b.rootfs / "mnt" / "sub", "/mnt/sub")
    assert any(o.startswith("shared:") for o in find_mount(mounts, "/")["optional"])
    assert seen["data"] == "propagated", seen


def test_container_mounts_do_not_leak_to_host(rt, bundle, workdir):
    src = workdir / "src"
    src.mkdir()
    b = bundle().bind(src, "/mnt/x").add_mount("/mnt/t", "tmpfs", "tmpfs", ["size=1m"])
    cid = rt.start_detached(b.probe("sleep", "30"))
    host = open("/proc/self/mountinfo").read()
    assert str(b.rootfs) not in host
    assert rt.status(cid) == "running"


@pytest.mark.parametrize("prop", ["unbindable", "runbindable"])
def test_rootfs_propagation_unbindable_holds_inside(rt, bundle, prop):
    # accepted and effective: "/" is unbindable in the container, so even
    # with CAP_SYS_ADMIN it cannot be bind-mounted (EINVAL)
    b = bundle().rootfs_propagation(prop).caps(["CAP_SYS_ADMIN"])
    b.readonly(False)
    seen = rt.run_probe(b, "mount", "/", "/mnt", "none", "bind").probe()
    assert seen.get("errno") == "EINVAL", seen
    b2 = bundle().rootfs_propagation(prop)
    root = find_mount(parse_mountinfo(rt.run_probe(b2, "mounts").probe()["data"]), "/")
    assert "unbindable" in root["optional"], root
