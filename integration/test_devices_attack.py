"""Device-rule attacks: a container that may mknod (CAP_MKNOD) still cannot
open a device its rules do not allow (on this host comet enforces the rules
with an eBPF program on the container's cgroup2 directory)."""
import json
import os
from pathlib import Path

import pytest

DENIED = "EPERM"


def root_disk():
    st = os.stat("/")
    return os.major(st.st_dev), os.minor(st.st_dev)


DISK = root_disk()
pytestmark = pytest.mark.skipif(DISK[0] == 0, reason="/ is not on a block device")
# /dev/fuse (10:229): a char device anyone may open, not in the default rules
FUSE = (10, 229)
HAVE_FUSE = Path("/sys/dev/char/10:229").exists()


def mknod_bundle(bundle):
    b = bundle()
    b.caps(b.process["capabilities"]["bounding"] + ["CAP_MKNOD"])
    return b


def allow(b, dtype, major=None, minor=None, access="rw"):
    rule = {"allow": True, "type": dtype, "access": access}
    if major is not None:
        rule["major"] = major
    if minor is not None:
        rule["minor"] = minor
    b.linux["resources"]["devices"].append(rule)
    return b


def run_script(rt, b, *steps):
    """Run the probe steps (lists of probe args) in one container; returns
    the probe's JSON per step."""
    script = "; ".join("/probe " + " ".join(step) for step in steps)
    res = rt.run(rt.new_id(), b.sh(script))
    lines = [json.loads(line) for line in res.out.splitlines() if line.startswith("{")]
    assert len(lines) == len(steps), res
    return lines


def test_host_disk_node_cannot_be_opened(rt, bundle):
    major, minor = DISK
    b = mknod_bundle(bundle)
    mk, st, rd, wr, rw = run_script(rt, b, ["mknod", "/dev/hostdisk", "b", str(major), str(minor)],
                                    ["stat", "/dev/hostdisk"], ["open", "/dev/hostdisk", "r"],
                                    ["open", "/dev/hostdisk", "w"], ["open", "/dev/hostdisk", "rw"])
    if not mk["ok"]:
        assert mk["errno"] == DENIED, mk  # refusing the mknod itself is just as good
        return
    assert st["data"]["type"] == "block" and (st["data"]["rdev_major"], st["data"]["rdev_minor"]) == DISK, st
    for r in (rd, wr, rw):
        assert r["ok"] is False and r["errno"] == DENIED, r


def test_host_disk_node_on_rootfs_cannot_be_opened(rt, bundle):
    # the same node created on the (writable) rootfs instead of the /dev tmpfs
    major, minor = DISK
    b = mknod_bundle(bundle).readonly(False)
    mk, rd = run_script(rt, b, ["mknod", "/tmp/hostdisk", "b", str(major), str(minor)],
                        ["open", "/tmp/hostdisk", "r"])
    if mk["ok"]:
        assert rd["errno"] == DENIED, rd
        assert (b.rootfs / "tmp" / "hostdisk").exists()
    else:
        assert mk["errno"] == DENIED, mk


def test_dev_null_still_works(rt, bundle):
    b = mknod_bundle(bundle)
    op, wr, rd, mk, op2 = run_script(rt, b, ["open", "/dev/null", "rw"], ["write", "/dev/null", "abc"],
                                     ["read", "/dev/null"], ["mknod", "/dev/null2", "c", "1", "3"],
                                     ["open", "/dev/null2", "rw"])
    assert op["ok"] is True, op
    assert wr == {"ok": True, "errno": None, "data": 3}
    assert rd == {"ok": True, "errno": None, "data": ""}
    assert mk["ok"] is True and op2["ok"] is True, (mk, op2)


@pytest.mark.skipif(not HAVE_FUSE, reason="no /dev/fuse driver")
def test_unlisted_char_device_denied(rt, bundle):
    b = mknod_bundle(bundle)
    mk, op = run_script(rt, b, ["mknod", "/dev/fuse", "c", *map(str, FUSE)], ["open", "/dev/fuse", "rw"])
    assert mk["ok"] is True, mk
    assert op["errno"] == DENIED, op


@pytest.mark.skipif(not HAVE_FUSE, reason="no /dev/fuse driver")
def test_allow_rule_opens_mknod_node(rt, bundle):
    b = allow(mknod_bundle(bundle), "c", *FUSE, access="rw")
    mk, op, disk_mk, disk = run_script(rt, b, ["mknod", "/dev/fuse", "c", *map(str, FUSE)],
                                       ["open", "/dev/fuse", "rw"],
                                       ["mknod", "/dev/hostdisk", "b", *map(str, DISK)],
                                       ["open", "/dev/hostdisk", "r"])
    assert mk["ok"] is True, mk
    assert op["ok"] is True, op
    # the rule opened exactly that device, not the host's disk
    assert disk["errno"] == DENIED, (disk_mk, disk)


@pytest.mark.skipif(not HAVE_FUSE, reason="no /dev/fuse driver")
def test_allow_rule_access_bits(rt, bundle):
    b = allow(mknod_bundle(bundle), "c", *FUSE, access="r")
    _, rd, wr, rw = run_script(rt, b, ["mknod", "/dev/fuse", "c", *map(str, FUSE)],
                               ["open", "/dev/fuse", "r"], ["open", "/dev/fuse", "w"], ["open", "/dev/fuse", "rw"])
    assert rd["ok"] is True, rd
    assert wr["errno"] == DENIED and rw["errno"] == DENIED, (wr, rw)


@pytest.mark.skipif(not HAVE_FUSE, reason="no /dev/fuse driver")
def test_allow_rule_wildcard_minor(rt, bundle):
    b = allow(mknod_bundle(bundle), "c", FUSE[0], None, access="rw")  # every 10:*
    _, op, _, disk = run_script(rt, b, ["mknod", "/dev/fuse", "c", *map(str, FUSE)], ["open", "/dev/fuse", "rw"],
                                ["mknod", "/dev/hostdisk", "b", *map(str, DISK)], ["open", "/dev/hostdisk", "r"])
    assert op["ok"] is True, op
    assert disk["errno"] == DENIED, disk


def test_char_rule_does_not_open_block_device(rt, bundle):
    # a char rule with the disk's numbers must not match the block device
    b = allow(mknod_bundle(bundle), "c", *DISK, access="rw")
    mk, op = run_script(rt, b, ["mknod", "/dev/hostdisk", "b", *map(str, DISK)], ["open", "/dev/hostdisk", "r"])
    if mk["ok"]:
        assert op["errno"] == DENIED, op
    else:
        assert mk["errno"] == DENIED, mk
