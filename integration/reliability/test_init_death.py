"""The container's PID 1 dies by itself, or ignores SIGTERM: state follows,
`kill TERM` then `kill KILL` (what `podman stop` does) works, delete cleans."""
from __future__ import annotations

import time

from common import wait_stopped
from lib.asserts import assert_nothing_left, assert_one_line_error
from lib.harness import pid_alive


def test_init_exits_by_itself(rt, harness, bundle):
    b = bundle().sh("sleep 0.2; exit 7")
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    rt.start(cid).expect_ok()
    pid = rt.state(cid)["pid"]
    wait_stopped(rt, cid)
    st = rt.state(cid)
    assert st["status"] == "stopped" and st["pid"] == 0, st
    assert not pid_alive(pid)
    # a stopped container is signalled with runc's error text
    res = rt.kill(cid, "KILL")
    assert res.rc == 1, res
    assert_one_line_error(res, "container not running")
    res = rt.kill(cid, "TERM")
    assert_one_line_error(res, "container not running")
    rt.delete(cid).expect_ok()  # no --force needed
    assert_nothing_left(harness, cid)


def test_init_ignoring_sigterm_needs_sigkill(rt, harness, bundle):
    b = bundle().sh('trap "" TERM; while :; do sleep 1000; done')
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    rt.start(cid).expect_ok()
    rt.wait_probe_ready(cid)  # the trap is in place (TERM in SigIgn)
    pid = rt.state(cid)["pid"]
    rt.kill(cid, "TERM").expect_ok()
    time.sleep(0.5)
    assert rt.status(cid) == "running" and pid_alive(pid), "TERM was ignored, the init must still run"
    res = rt.delete(cid)
    assert_one_line_error(res, "not stopped", "running")
    rt.kill(cid, "KILL").expect_ok()
    wait_stopped(rt, cid)
    assert not pid_alive(pid)
    res = rt.kill(cid, "KILL")
    assert_one_line_error(res, "container not running")
    rt.delete(cid).expect_ok()
    assert_nothing_left(harness, cid)


def test_podman_stop_sequence_on_a_cooperative_init(rt, harness, bundle):
    # TERM is handled: the init exits on the first signal, the KILL that a
    # stop sends after its timeout then finds it stopped
    b = bundle().probe("sleep", "60")
    cid = rt.start_detached(b)
    rt.kill(cid, "TERM").expect_ok()
    wait_stopped(rt, cid)
    assert_one_line_error(rt.kill(cid, "KILL"), "container not running")
    rt.delete(cid).expect_ok()
    assert_nothing_left(harness, cid)


def test_init_killed_from_outside(rt, harness, bundle):
    # the init dies of a signal nobody sent through the runtime (the OOM
    # killer, an admin's kill -9): state says stopped, delete cleans
    import os
    import signal

    b = bundle().args("/bin/sleep", "60")
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    rt.start(cid).expect_ok()
    pid = rt.state(cid)["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_stopped(rt, cid)
    rt.delete(cid).expect_ok()
    assert_nothing_left(harness, cid)


def test_init_dies_before_start(rt, harness, bundle):
    # killed while blocked on the exec fifo: start must fail clearly, not hang
    import os
    import signal

    b = bundle().probe("exit", "0")
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    pid = rt.state(cid)["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_stopped(rt, cid)
    res = rt.start(cid, timeout=10)
    assert_one_line_error(res, "stopped")
    rt.delete(cid).expect_ok()
    assert_nothing_left(harness, cid)
