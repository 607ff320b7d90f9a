"""`run`: foreground and --detach; exit status propagation."""
import threading

import pytest

from lib import pid_alive, wait_for


@pytest.mark.parametrize("code", [0, 1, 42, 255])
def test_exit_status_propagated(rt, bundle, code):
    res = rt.run(rt.new_id(), bundle().probe("exit", str(code)))
    assert res.rc == code, res


def test_stdout_and_stderr_passed_through(rt, bundle):
    res = rt.run(rt.new_id(), bundle().sh("echo to-out; echo to-err >&2"))
    assert res.rc == 0, res
    assert res.out == "to-out\n"
    assert res.err == "to-err\n"


def test_stdin_passed_through(rt, bundle):
    res = rt.run(rt.new_id(), bundle().sh("read line; echo got:$line"), input="hello\n")
    assert res.rc == 0, res
    assert res.out == "got:hello\n"


def test_foreground_run_removes_container(rt, bundle):
    cid = rt.new_id()
    rt.run(cid, bundle().probe("exit", "3"))
    res = rt.state_raw(cid)
    assert res.rc != 0 and "does not exist" in res.error
    assert not (rt.root / cid).exists()


def _run_in_thread(rt, cid, b):
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("res", rt.run(cid, b)), daemon=True)
    t.start()
    assert rt.wait_status(cid, "running") == "running"
    rt.wait_probe_ready(cid)
    return t, box


def test_signal_death_is_128_plus_signal(rt, bundle):
    cid = rt.new_id()
    t, box = _run_in_thread(rt, cid, bundle().probe("sleep", "30"))
    rt.kill(cid, "KILL").expect_ok()
    t.join(15)
    assert box["res"].rc == 137, box["res"]


def test_handled_term_exit_code(rt, bundle):
    cid = rt.new_id()
    t, box = _run_in_thread(rt, cid, bundle().probe("sleep", "30"))
    rt.kill(cid, "TERM").expect_ok()
    t.join(15)
    res = box["res"]
    assert res.rc == 143, res
    assert res.probe()["data"] == {"signal": "TERM"}


def test_detach_returns_and_container_keeps_running(rt, bundle):
    cid = rt.new_id()
    res = rt.run(cid, bundle().probe("sleep", "30"), "--detach")
    assert res.rc == 0, res
    st = rt.state(cid)
    assert st["status"] == "running"
    assert pid_alive(st["pid"])


def test_detach_short_flag_and_exit(rt, bundle):
    cid = rt.new_id()
    rt.run(cid, bundle().probe("exit", "7"), "-d").expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"
    # a detached container stays until deleted
    assert (rt.root / cid).exists()
    rt.delete(cid).expect_ok()


def test_run_missing_executable_fails(rt, bundle):
    cid = rt.new_id()
    res = rt.run(cid, bundle().args("/nonexistent-binary"))
    assert res.rc != 0
    assert "/nonexistent-binary" in res.error
    assert "no such file or directory" in res.error
    assert rt.state_raw(cid).rc != 0


def test_run_non_executable_fails(rt, bundle):
    b = bundle()
    (b.rootfs / "notexec").write_text("#!/bin/sh\necho hi\n")
    res = rt.run(rt.new_id(), b.args("/notexec"))
    assert res.rc != 0
    assert "permission denied" in res.err.lower(), res


def test_args_resolved_via_path(rt, bundle):
    res = rt.run(rt.new_id(), bundle().args("echo", "via-path"))
    assert res.rc == 0, res
    assert res.out == "via-path\n"


def test_process_dies_with_foreground_run_kill(rt, bundle):
    cid = rt.new_id()
    t, box = _run_in_thread(rt, cid, bundle().probe("sleep", "30"))
    pid = rt.pid(cid)
    rt.kill(cid, "KILL").expect_ok()
    t.join(15)
    assert wait_for(lambda: not pid_alive(pid), 5)
