"""Idmapped mounts (runtime-spec 1.2; issue 27 item 5): uidMappings and
gidMappings on a bind mount, the idmap and ridmap options. Made with
open_tree(OPEN_TREE_CLONE) + mount_setattr(MOUNT_ATTR_IDMAP) in a user
namespace holding the mount's mappings, then move_mount in the container."""
import os
import subprocess

import pytest

from lib.asserts import assert_nothing_left, assert_one_line_error


def idmap(containerid, hostid, size=1):
    return [{"containerID": containerid, "hostID": hostid, "size": size}]


@pytest.fixture
def src(harness, tmp_path):
    d = tmp_path / "src"
    d.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(d, 0o755)
    f = d / "f"
    f.write_text("x")
    os.chown(f, 1000, 1000)
    return d


def stat_in(rt, b, path):
    res = rt.run_probe(b, "stat", path)
    st = res.probe()
    assert st["ok"], res
    return st["data"]["uid"], st["data"]["gid"]


def test_mount_mappings_show_the_mapped_owner(rt, bundle, src):
    b = bundle().bind(src, "/mnt")
    m = b.mount_for("/mnt")
    m["uidMappings"] = idmap(1000, 2000)
    m["gidMappings"] = idmap(1000, 3000)
    assert stat_in(rt, b, "/mnt/f") == (2000, 3000)
    # Without the mappings the same bind shows the owner on disk.
    assert stat_in(rt, bundle().bind(src, "/mnt"), "/mnt/f") == (1000, 1000)
    assert os.stat(src / "f").st_uid == 1000  # the source is not changed


def test_write_through_idmapped_mount(rt, bundle, src):
    os.chown(src, 1000, 1000)
    b = bundle().bind(src, "/mnt").sh("/probe write /mnt/new data >/dev/null; /probe stat /mnt/new")
    m = b.mount_for("/mnt")
    m["uidMappings"] = idmap(0, 0, 1) + idmap(1000, 2000)
    m["gidMappings"] = idmap(0, 0, 1) + idmap(1000, 3000)
    b.user(2000, 3000)
    res = rt.run(rt.new_id(), b)
    assert res.rc == 0, res
    # The container's uid 2000 writes as on-disk uid 1000.
    st = os.stat(src / "new")
    assert (st.st_uid, st.st_gid) == (1000, 1000), st


def test_idmap_option_takes_the_container_mappings(rt, bundle, harness):
    d = harness.path("root-owned")  # reachable by the mapped root, for the plain bind
    d.mkdir()
    os.chmod(d, 0o755)
    (d / "f").write_text("x")
    os.chown(d / "f", 0, 0)
    b = bundle().userns().bind(d, "/mnt", "idmap")
    assert stat_in(rt, b, "/mnt/f") == (0, 0)
    # Plain bind in the same user namespace: host root is unmapped there.
    assert stat_in(rt, bundle().userns().bind(d, "/mnt"), "/mnt/f") == (65534, 65534)


@pytest.fixture
def src_with_submount(src, harness):
    sub = src / "sub"
    sub.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", str(sub)], check=True)
    harness.add_cleanup(lambda: subprocess.run(["umount", "-l", str(sub)], check=False))
    (sub / "g").write_text("y")
    os.chown(sub / "g", 1000, 1000)
    return src


@pytest.mark.parametrize("opt,expect", [("ridmap", (2000, 2000)), ("idmap", (1000, 1000))])
def test_ridmap_is_recursive(rt, bundle, src_with_submount, opt, expect):
    b = bundle().bind(src_with_submount, "/mnt", opt, recursive=True)
    m = b.mount_for("/mnt")
    m["uidMappings"] = idmap(1000, 2000)
    m["gidMappings"] = idmap(1000, 2000)
    assert stat_in(rt, b, "/mnt/f") == (2000, 2000)
    assert stat_in(rt, b, "/mnt/sub/g") == expect


@pytest.mark.parametrize("change,needles", [
    (lambda m: m.update(uidMappings=idmap(1000, 2000, 0), gidMappings=idmap(0, 0)),
     ("mounts[", "uidMappings[0].size", "at least 1")),
    (lambda m: m.update(uidMappings=idmap(1000, 2000)),
     ("mounts[", "both uidMappings and gidMappings")),
    (lambda m: m.update(uidMappings=idmap(4294967290, 2000, 100), gidMappings=idmap(0, 0)),
     ("uidMappings[0]", "largest id")),
    (lambda m: m["options"].append("idmap"),
     ("idmap without uidMappings/gidMappings", "linux.uidMappings")),
])
def test_bad_mappings_one_line_error(rt, harness, bundle, src, change, needles):
    b = bundle().bind(src, "/mnt")
    change(b.mount_for("/mnt"))
    cid = rt.new_id()
    assert_one_line_error(rt.run(cid, b), *needles)
    assert_nothing_left(harness, cid)


def test_idmap_needs_a_bind(rt, harness, bundle):
    b = bundle().add_mount("/mnt", "tmpfs", "tmpfs", ["idmap"])
    m = b.mount_for("/mnt")
    m["uidMappings"] = idmap(0, 1000)
    m["gidMappings"] = idmap(0, 1000)
    cid = rt.new_id()
    assert_one_line_error(rt.run(cid, b), "must be a bind mount")
    assert_nothing_left(harness, cid)


def test_fs_that_cannot_be_idmapped(rt, harness, bundle):
    # sysfs has no FS_ALLOW_IDMAP.
    b = bundle().bind("/sys/kernel", "/mnt")
    m = b.mount_for("/mnt")
    m["uidMappings"] = idmap(0, 1000)
    m["gidMappings"] = idmap(0, 1000)
    cid = rt.new_id()
    assert_one_line_error(rt.run(cid, b), "mount_setattr(MOUNT_ATTR_IDMAP)", "/sys/kernel",
                          "cannot be idmapped", "EINVAL")
    assert_nothing_left(harness, cid)
