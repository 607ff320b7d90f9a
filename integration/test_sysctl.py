"""linux.sysctl."""
from lib.asserts import assert_nothing_left, assert_one_line_error


def test_namespaced_sysctls_applied(rt, bundle):
    b = bundle().sysctls({"net.ipv4.ip_forward": "1", "kernel.shm_rmid_forced": "1", "kernel.msgmax": "4096"})
    b.sh("cat /proc/sys/net/ipv4/ip_forward /proc/sys/kernel/shm_rmid_forced /proc/sys/kernel/msgmax")
    res = rt.run(rt.new_id(), b)
    assert res.rc == 0, res
    assert res.out.split() == ["1", "1", "4096"]


def test_sysctl_does_not_touch_host(rt, bundle):
    host = open("/proc/sys/kernel/msgmax").read()
    b = bundle().sysctls({"kernel.msgmax": "1234"})
    rt.run(rt.new_id(), b).expect_ok()
    assert open("/proc/sys/kernel/msgmax").read() == host


def test_sysctl_slash_separated_name(rt, bundle):
    b = bundle().sysctls({"net/ipv4/ip_forward": "1"}).probe("read", "/proc/sys/net/ipv4/ip_forward")
    res = rt.run(rt.new_id(), b)
    assert res.rc == 0, res
    assert res.probe()["data"] == "1\n"


def test_non_namespaced_sysctl_rejected(rt, harness, bundle):
    cid = rt.new_id()
    res = rt.run(cid, bundle().sysctls({"vm.swappiness": "10"}))
    assert_one_line_error(res, "vm.swappiness")
    assert_nothing_left(harness, cid)


def test_net_sysctl_without_netns_rejected(rt, harness, bundle):
    cid = rt.new_id()
    res = rt.run(cid, bundle().sysctls({"net.ipv4.ip_forward": "1"}).remove_namespace("network"))
    assert_one_line_error(res, "net.ipv4.ip_forward")
    assert_nothing_left(harness, cid)


def test_uts_sysctl_without_utsns_rejected(rt, harness, bundle):
    cid = rt.new_id()
    b = bundle().sysctls({"kernel.domainname": "x"}).remove_namespace("uts").hostname(None)
    res = rt.run(cid, b)
    assert_one_line_error(res, "kernel.domainname")
    assert_nothing_left(harness, cid)


def test_nonexistent_sysctl_fails(rt, harness, bundle):
    cid = rt.new_id()
    res = rt.run(cid, bundle().sysctls({"net.ipv4.no_such_knob": "1"}))
    assert res.rc != 0
    assert "no_such_knob" in res.error
    assert_nothing_left(harness, cid)
