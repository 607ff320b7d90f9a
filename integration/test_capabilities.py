"""process.capabilities: all five sets as seen in /proc/self/status."""
import pytest

from lib import cap_mask

DEFAULT = ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]


def caps(rt, b):
    res = rt.run_probe(b, "info")
    assert res.rc == 0, res
    return {k: int(v, 16) for k, v in res.probe()["caps"].items()}


def test_default_caps(rt, bundle):
    c = caps(rt, bundle())
    m = cap_mask(DEFAULT)
    assert c["bnd"] == m
    assert c["eff"] == m
    assert c["prm"] == m
    assert c["inh"] == 0, "inheritable must be empty when not asked for"
    # the default spec lists ambient caps, but without them in the inheritable
    # set the kernel refuses to raise them: ambient stays empty
    assert c["amb"] == 0


def test_all_five_sets(rt, bundle):
    want = ["CAP_CHOWN", "CAP_KILL", "CAP_SETUID"]
    b = bundle().caps(want, sets=("bounding", "effective", "permitted", "inheritable", "ambient"))
    c = caps(rt, b)
    m = cap_mask(want)
    assert c == {"bnd": m, "eff": m, "prm": m, "inh": m, "amb": m}


def test_sets_are_independent(rt, bundle):
    # uid 0 with noNewPrivileges (the default): after execve permitted is
    # capped at the configured permitted set, and effective == permitted
    b = bundle()
    b.process["capabilities"] = {
        "bounding": ["CAP_KILL", "CAP_CHOWN", "CAP_SYS_TIME", "CAP_FOWNER"],
        "permitted": ["CAP_KILL", "CAP_CHOWN", "CAP_FOWNER"],
        "effective": ["CAP_KILL"],
        "inheritable": ["CAP_CHOWN"],
    }
    c = caps(rt, b)
    assert c["bnd"] == cap_mask(["CAP_KILL", "CAP_CHOWN", "CAP_SYS_TIME", "CAP_FOWNER"])
    assert c["prm"] == cap_mask(["CAP_KILL", "CAP_CHOWN", "CAP_FOWNER"])
    assert c["eff"] == c["prm"]
    assert c["inh"] == cap_mask(["CAP_CHOWN"])
    assert c["amb"] == 0


def test_no_capabilities_at_all(rt, bundle):
    b = bundle()
    b.process["capabilities"] = {}
    assert caps(rt, b) == {"bnd": 0, "eff": 0, "prm": 0, "inh": 0, "amb": 0}


def test_non_root_keeps_only_ambient(rt, bundle):
    # after execve as a non-root uid only ambient capabilities survive in
    # permitted/effective (kernel rules); bounding is as configured
    b = bundle().user(1000, 1000)
    b.process["capabilities"] = {
        "bounding": ["CAP_KILL", "CAP_CHOWN", "CAP_SYS_TIME"],
        "permitted": ["CAP_KILL", "CAP_CHOWN"],
        "effective": ["CAP_KILL", "CAP_CHOWN"],
        "inheritable": ["CAP_CHOWN"],
        "ambient": ["CAP_CHOWN"],
    }
    c = caps(rt, b)
    assert c["bnd"] == cap_mask(["CAP_KILL", "CAP_CHOWN", "CAP_SYS_TIME"])
    assert c["prm"] == cap_mask(["CAP_CHOWN"])
    assert c["eff"] == cap_mask(["CAP_CHOWN"])
    assert c["inh"] == cap_mask(["CAP_CHOWN"])
    assert c["amb"] == cap_mask(["CAP_CHOWN"])


def test_unknown_capability_is_ignored_with_warning(rt, bundle):
    # runc: level=warning msg="ignoring unknown or unavailable capabilities: [CAP_BOGUS]"
    b = bundle().caps(["CAP_KILL", "CAP_BOGUS"])
    res = rt.run(rt.new_id(), b.probe("info"))
    assert res.rc == 0, res
    assert "CAP_BOGUS" in res.error
    assert int(res.probe()["caps"]["bnd"], 16) == cap_mask(["CAP_KILL"])


def test_missing_cap_sys_time_denies_clock_settime(rt, bundle):
    res = rt.run_probe(bundle(), "clock_settime")
    assert res.probe()["errno"] == "EPERM"


def test_missing_cap_sys_admin_denies_mount_and_unshare(rt, bundle):
    b = bundle()
    res = rt.run_probe(b, "mount", "tmpfs", "/tmp", "tmpfs")
    assert res.probe()["errno"] == "EPERM"
    res = rt.run_probe(b, "unshare", "NEWNS")
    assert res.probe()["errno"] == "EPERM"


def test_cap_sys_admin_allows_unshare(rt, bundle):
    b = bundle().caps(DEFAULT + ["CAP_SYS_ADMIN"])
    res = rt.run_probe(b, "unshare", "NEWNS")
    assert res.probe() == {"ok": True, "errno": None, "data": None}


@pytest.mark.parametrize("have_kill", [True, False])
def test_cap_kill_for_other_uid(rt, bundle, have_kill):
    # a root process signalling a process of another uid needs CAP_KILL
    base = ["CAP_SETUID", "CAP_SETGID"] + (["CAP_KILL"] if have_kill else [])
    b = bundle().caps(base)
    b.sh("su -s /bin/sh nobody -c '/probe sleep 30' & sleep 0.3; "
         "pid=$(pidof probe | cut -d' ' -f1); /probe kill $pid 0")
    res = rt.run(rt.new_id(), b)
    p = res.probe()
    if have_kill:
        assert p["ok"] is True, res
    else:
        assert p["errno"] == "EPERM", res
