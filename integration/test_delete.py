"""`delete`: stopped, running (with and without --force), missing."""
from lib import cgroup_dirs_named, pid_alive, wait_for
from lib.asserts import assert_refused_running


def test_delete_running_without_force_fails(rt, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "30"))
    res = rt.delete(cid)
    assert_refused_running(rt, cid, res, f"cannot delete container {cid} that is not stopped: running")


def test_delete_force_running(rt, bundle):
    cid = rt.start_detached(bundle().probe("signal-ignore", "TERM"))
    pid = rt.pid(cid)
    res = rt.delete(cid, "--force")
    assert res.rc == 0, res
    assert not pid_alive(pid) or wait_for(lambda: not pid_alive(pid), 5)
    assert not (rt.root / cid).exists()
    assert wait_for(lambda: not cgroup_dirs_named(cid), 5)
    assert "does not exist" in rt.state_raw(cid).err


def test_delete_force_short_flag(rt, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "30"))
    rt.delete(cid, "-f").expect_ok()
    assert rt.state_raw(cid).rc != 0


def test_delete_stopped(rt, bundle):
    cid = rt.start_detached(bundle().probe("exit", "0"))
    assert rt.wait_status(cid, "stopped") == "stopped"
    res = rt.delete(cid)
    assert res.rc == 0 and res.out == "" and res.err == "", res
    assert not (rt.root / cid).exists()


def test_delete_missing(rt):
    res = rt.delete("cmt-never-created")
    assert res.rc != 0
    assert "container does not exist" in res.error


def test_delete_force_missing_succeeds(rt):
    res = rt.delete("cmt-never-created", "--force")
    assert res.rc == 0, res


def test_delete_force_after_delete_succeeds(rt, bundle):
    cid = rt.start_detached(bundle().probe("exit", "0"))
    assert rt.wait_status(cid, "stopped") == "stopped"
    rt.delete(cid).expect_ok()
    res = rt.delete(cid, "--force")
    assert res.rc == 0, res


def test_delete_keeps_bundle(rt, bundle):
    b = bundle().probe("exit", "0")
    cid = rt.start_detached(b)
    assert rt.wait_status(cid, "stopped") == "stopped"
    rt.delete(cid).expect_ok()
    assert (b.path / "config.json").is_file()
    assert (b.rootfs / "probe").is_file()
