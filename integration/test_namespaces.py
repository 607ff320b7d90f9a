"""linux.namespaces: new namespaces, joining by path, time namespace."""
import os
import subprocess

import pytest

from lib.asserts import assert_nothing_left, assert_refused

NS = ["pid", "net", "mnt", "ipc", "uts", "user", "cgroup", "time"]
HOST = {n: os.readlink(f"/proc/self/ns/{n}") for n in NS}


def ns_of(rt, b):
    res = rt.run_probe(b, "info")
    assert res.rc == 0, res
    return res.probe()


def test_default_namespaces(rt, bundle):
    d = ns_of(rt, bundle())["ns"]
    for n in ("pid", "net", "mnt", "ipc", "uts"):
        assert d[n] != HOST[n], n
    for n in ("user", "cgroup", "time"):
        assert d[n] == HOST[n], n


def test_each_container_gets_its_own(rt, bundle):
    # both alive at once: namespace inodes are reused once freed
    b = bundle().probe("sleep", "30")
    p1, p2 = rt.pid(rt.start_detached(b)), rt.pid(rt.start_detached(b))
    for n in ("pid", "net", "mnt", "ipc", "uts"):
        assert os.readlink(f"/proc/{p1}/ns/{n}") != os.readlink(f"/proc/{p2}/ns/{n}"), n


def test_cgroup_namespace(rt, bundle):
    d = ns_of(rt, bundle().add_namespace("cgroup"))
    assert d["ns"]["cgroup"] != HOST["cgroup"]
    for line in d["cgroup"]:
        assert line.endswith(":/"), d["cgroup"]


def test_without_cgroup_namespace_sees_host_path(rt, bundle):
    cid = rt.new_id()
    res = rt.run(cid, bundle().probe("info"))
    assert any(line.endswith("/" + cid) for line in res.probe()["cgroup"]), res.probe()["cgroup"]


def test_no_pid_namespace(rt, bundle):
    d = ns_of(rt, bundle().remove_namespace("pid"))
    assert d["ns"]["pid"] == HOST["pid"]
    assert d["pid"] != 1


def test_no_network_namespace(rt, bundle):
    d = ns_of(rt, bundle().remove_namespace("network"))
    assert d["ns"]["net"] == HOST["net"]


def test_new_netns_has_only_loopback(rt, bundle):
    res = rt.run_probe(bundle(), "ls", "/sys/class/net")
    assert res.probe()["data"] == ["lo"]


def test_ipc_namespace_isolated(rt, bundle):
    d = ns_of(rt, bundle())
    assert d["ns"]["ipc"] != HOST["ipc"]


@pytest.fixture
def netns_file(harness):
    """A network namespace bind-mounted on a file (unshare --net=FILE)."""
    f = harness.path("netns")
    f.touch()
    subprocess.run(["unshare", f"--net={f}", "true"], check=True, timeout=10)
    harness.add_cleanup(lambda: subprocess.run(["umount", str(f)], check=True, timeout=10))
    return f


def test_join_network_namespace_by_path(rt, bundle, netns_file):
    ino = os.stat(netns_file).st_ino
    d = ns_of(rt, bundle().add_namespace("network", str(netns_file)))
    assert d["ns"]["net"] == f"net:[{ino}]"
    assert d["ns"]["net"] != HOST["net"]


def test_two_containers_share_joined_netns(rt, bundle, netns_file):
    b = bundle().add_namespace("network", str(netns_file))
    assert ns_of(rt, b)["ns"]["net"] == ns_of(rt, b)["ns"]["net"]


def test_join_pid_namespace_of_running_container(rt, bundle):
    first = rt.start_detached(bundle().probe("sleep", "30"))
    pid = rt.pid(first)
    b = bundle().add_namespace("pid", f"/proc/{pid}/ns/pid")
    res = rt.run(rt.new_id(), b.probe("info"))
    d = res.probe()
    assert d["ns"]["pid"] == os.readlink(f"/proc/{pid}/ns/pid")
    assert d["pid"] != 1


def test_join_nonexistent_namespace_path(rt, harness, bundle):
    cid = rt.new_id()
    res = rt.run(cid, bundle().add_namespace("network", "/nonexistent/ns"))
    assert res.rc != 0
    assert "/nonexistent/ns" in res.error
    assert_nothing_left(harness, cid)


def test_join_wrong_namespace_type(rt, harness, bundle, netns_file):
    cid = rt.new_id()
    res = rt.run(cid, bundle().add_namespace("uts", str(netns_file)))
    assert res.rc != 0
    assert "uts" in res.error
    assert_nothing_left(harness, cid)


def test_duplicate_namespace_rejected(rt, harness, bundle):
    b = bundle()
    b.linux["namespaces"].append({"type": "pid"})
    assert_refused(harness, "run", b, "pid")


@pytest.mark.comet_only
def test_time_namespace(rt, bundle):
    # runc 1.1.5: 'namespace {"time" ""} does not exist'
    b = bundle().add_namespace("time")
    # /proc/uptime follows CLOCK_BOOTTIME, which the boottime offset shifts
    b.linux["timeOffsets"] = {"boottime": {"secs": 86400, "nanosecs": 0}}
    b.probe("read", "/proc/uptime")
    res = rt.run(rt.new_id(), b)
    assert res.rc == 0, res
    up_inside = float(res.probe()["data"].split()[0])
    up_host = float(open("/proc/uptime").read().split()[0])
    assert up_inside - up_host > 86000


@pytest.mark.comet_only
def test_time_namespace_is_new(rt, bundle):
    d = ns_of(rt, bundle().add_namespace("time"))
    assert d["ns"]["time"] != HOST["time"]
