"""User namespace with uid/gid mappings."""
import os

import pytest

HOST_ID = 100000


@pytest.fixture
def ub(bundle):
    return bundle().userns(HOST_ID, HOST_ID, 65536)


def test_uid_map(rt, ub):
    res = rt.run_probe(ub, "read", "/proc/self/uid_map")
    assert res.probe()["data"].split() == ["0", str(HOST_ID), "65536"]
    res = rt.run_probe(ub, "read", "/proc/self/gid_map")
    assert res.probe()["data"].split() == ["0", str(HOST_ID), "65536"]


def test_root_inside_is_mapped_outside(rt, ub):
    cid = rt.start_detached(ub.probe("sleep", "30"))
    pid = rt.pid(cid)
    st = os.stat(f"/proc/{pid}")
    assert (st.st_uid, st.st_gid) == (HOST_ID, HOST_ID)
    with open(f"/proc/{pid}/status") as f:
        uid_line = next(line for line in f if line.startswith("Uid:"))
    assert uid_line.split()[1:] == [str(HOST_ID)] * 4


def test_inside_identity(rt, ub):
    d = rt.run_probe(ub, "info").probe()
    assert (d["uid"], d["gid"]) == (0, 0)
    assert d["ns"]["user"] != os.readlink("/proc/self/ns/user")


def test_file_created_inside_owned_by_mapped_uid(rt, ub):
    ub.readonly(False)
    assert rt.run_probe(ub, "write", "/created", "x").probe()["ok"]
    st = os.stat(ub.rootfs / "created")
    assert (st.st_uid, st.st_gid) == (HOST_ID, HOST_ID)


def test_unmapped_host_files_show_as_overflow(rt, ub):
    (ub.rootfs / "rootowned").write_text("x")
    os.chown(ub.rootfs / "rootowned", 0, 0)
    st = rt.run_probe(ub, "stat", "/rootowned").probe()["data"]
    assert (st["uid"], st["gid"]) == (65534, 65534)


def test_non_zero_container_user(rt, ub):
    d = rt.run_probe(ub.user(1000, 1000), "info").probe()
    assert (d["uid"], d["gid"]) == (1000, 1000)


def test_userns_without_mappings_fails(rt, harness, bundle):
    from lib.asserts import assert_nothing_left
    b = bundle().add_namespace("user")
    cid = rt.new_id()
    res = rt.run(cid, b)
    assert res.rc != 0
    assert "mapping" in res.error.lower()
    assert_nothing_left(harness, cid)
