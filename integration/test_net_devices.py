"""linux.netDevices (runtime-spec 1.2; issue 27 item 5): a host interface
moved into the container's network namespace, renamed when `name` is given,
and back on the host under its own name after delete (runc 1.2). The test
makes a veth pair of its own and removes it."""
import json
import subprocess
import uuid

import pytest

from lib.asserts import assert_nothing_left, assert_one_line_error


def links():
    out = subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True, check=True).stdout
    return {l["ifname"] for l in json.loads(out)}


@pytest.fixture
def dummy(harness):
    """One end of a veth pair of the test's own (this kernel has no dummy
    module); the other end stays on the host."""
    name = "cmtd" + uuid.uuid4().hex[:8]
    subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name", name + "p"],
                   check=True)
    harness.add_cleanup(lambda: subprocess.run(["ip", "link", "del", name + "p"], capture_output=True))
    return name


def inside_links(rt, cid):
    res = rt("exec", cid, "/bin/sh", "-c", "ls /sys/class/net").expect_ok()
    return set(res.out.split())


@pytest.mark.parametrize("rename", [None, "eth7"])
def test_moved_in_and_back(rt, bundle, dummy, rename):
    b = bundle().probe("sleep", "60")
    b.linux["netDevices"] = {dummy: ({"name": rename} if rename else {})}
    cid = rt.start_detached(b)
    inside = rename or dummy
    assert inside in inside_links(rt, cid)
    assert dummy not in links()  # gone from the host while the container runs
    rt.delete(cid, "--force").expect_ok()
    assert dummy in links()
    if rename:
        assert rename not in links() or rename == dummy


def test_back_after_the_container_exited(rt, bundle, dummy):
    # The netns is pinned until delete: a virtual interface survives the
    # init's exit and comes back.
    b = bundle().sh(f"test -e /sys/class/net/{dummy}")
    b.linux["netDevices"] = {dummy: {}}
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    assert dummy not in links()
    rt.start(cid).expect_ok()
    rt.wait_status(cid, "stopped")
    rt.delete(cid).expect_ok()
    assert dummy in links()


def test_missing_device_one_line_error(rt, harness, bundle):
    b = bundle()
    b.linux["netDevices"] = {"cmtnosuch0": {}}
    cid = rt.new_id()
    assert_one_line_error(rt.create(cid, b), "linux.netDevices", "cmtnosuch0", "no such interface")
    assert_nothing_left(harness, cid)


@pytest.mark.parametrize("name", ["a/b", "x" * 16, ".."])
def test_bad_name_refused(rt, harness, bundle, dummy, name):
    b = bundle()
    b.linux["netDevices"] = {dummy: {"name": name}}
    cid = rt.new_id()
    assert_one_line_error(rt.create(cid, b), "linux.netDevices", "not a network interface name")
    assert_nothing_left(harness, cid)
    assert dummy in links()


def test_needs_a_network_namespace(rt, harness, bundle, dummy):
    b = bundle().remove_namespace("network")
    b.linux["netDevices"] = {dummy: {}}
    cid = rt.new_id()
    assert_one_line_error(rt.create(cid, b), "linux.netDevices", "network namespace")
    assert_nothing_left(harness, cid)
