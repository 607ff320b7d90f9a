"""`kill`: signal names and numbers, --all, errors."""
import json
import os

import pytest

from lib import pid_alive, wait_for
from lib.asserts import assert_one_line_error, assert_refused_running


def _probe_signal(rt, cid):
    """The probe's sleep handler prints {"data":{"signal":NAME}} and exits 128+sig."""
    wait_for(lambda: rt.output(cid).strip(), 5)
    return json.loads(rt.output(cid).strip().splitlines()[-1])["data"]["signal"]


@pytest.mark.parametrize("sig", ["KILL", "SIGKILL", "9"])
def test_kill_sigkill_forms(rt, bundle, sig):
    cid = rt.start_detached(bundle().probe("sleep", "30"))
    pid = rt.pid(cid)
    res = rt.kill(cid, sig)
    assert res.rc == 0 and res.out == "", res
    assert rt.wait_status(cid, "stopped") == "stopped"
    assert wait_for(lambda: not pid_alive(pid), 5)
    assert rt.output(cid) == "", "SIGKILL cannot be handled: the probe prints nothing"


@pytest.mark.parametrize("sig,name", [("TERM", "TERM"), ("SIGTERM", "TERM"), ("15", "TERM"),
                                      ("HUP", "HUP"), ("USR1", "USR1"), ("SIGINT", "INT"), ("10", "USR1")])
def test_kill_delivers_named_signal(rt, bundle, sig, name):
    cid = rt.start_detached(bundle().probe("sleep", "30"))
    rt.kill(cid, sig).expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"
    assert _probe_signal(rt, cid) == name


def test_kill_default_signal_is_term(rt, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "30"))
    rt.kill(cid).expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"
    assert _probe_signal(rt, cid) == "TERM"


def test_kill_zero_checks_only(rt, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "30"))
    rt.kill(cid, "0").expect_ok()
    assert rt.status(cid) == "running"


def test_ignored_term_keeps_running(rt, bundle):
    cid = rt.start_detached(bundle().probe("signal-ignore", "TERM"))
    wait_for(lambda: rt.output(cid), 5)
    rt.kill(cid, "TERM").expect_ok()
    assert rt.wait_status(cid, "stopped", timeout=0.5) == "running"
    rt.kill(cid, "KILL").expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"


def test_unknown_signal_name(rt, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "30"))
    res = rt.kill(cid, "BOGUS")
    assert_one_line_error(res, 'unknown signal "BOGUS"')
    assert rt.status(cid) == "running"


def test_out_of_range_signal_number(rt, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "30"))
    res = rt.kill(cid, "99")
    assert_refused_running(rt, cid, res, "invalid argument")


def test_kill_stopped_container(rt, bundle):
    cid = rt.start_detached(bundle().probe("exit", "0"))
    assert rt.wait_status(cid, "stopped") == "stopped"
    res = rt.kill(cid, "KILL")
    assert res.rc != 0
    assert "container not running" in res.error


def test_kill_all_stopped_container_succeeds(rt, bundle):
    cid = rt.start_detached(bundle().probe("exit", "0"))
    assert rt.wait_status(cid, "stopped") == "stopped"
    res = rt("kill", "--all", cid, "KILL")
    assert res.rc == 0, res


def _cgroup_procs(cid):
    # runc: the v1 pids hierarchy; comet: the cgroup2 one (v1 only for limits)
    from lib import cgroup_dirs_named
    for d in cgroup_dirs_named(cid):
        if d.parts[4] in ("pids", "unified"):
            return [int(p) for p in (d / "cgroup.procs").read_text().split()]
    raise AssertionError(f"no pids or unified cgroup for {cid}")


def test_kill_all_kills_every_process(rt, bundle):
    b = bundle().sh("/probe sleep 30 & /probe sleep 30 & exec /probe signal-ignore TERM")
    cid = rt.start_detached(b)
    assert wait_for(lambda: len(_cgroup_procs(cid)) == 3, 5), _cgroup_procs(cid)
    procs = _cgroup_procs(cid)
    res = rt("kill", "--all", cid, "KILL")
    assert res.rc == 0, res
    assert wait_for(lambda: not any(pid_alive(p) for p in procs), 5)
    assert rt.wait_status(cid, "stopped") == "stopped"


def test_kill_without_all_hits_only_init(rt, bundle):
    b = bundle().sh("/probe signal-ignore TERM & exec /probe sleep 30")
    cid = rt.start_detached(b)
    assert wait_for(lambda: len(_cgroup_procs(cid)) == 2, 5)
    rt.wait_probe_ready(cid)
    init = rt.pid(cid)
    others = [p for p in _cgroup_procs(cid) if p != init]
    rt.kill(cid, "TERM").expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"
    assert _probe_signal(rt, cid) == "TERM"
    # the other process was killed when the pid namespace init exited
    assert wait_for(lambda: not any(pid_alive(p) for p in others), 5)
    assert os.path.isdir(rt.root / cid)
