"""OCI lifecycle: create / start / state / kill / delete transitions."""
import os

from lib import cgroup_dirs_named, pid_alive, wait_for
from lib.asserts import assert_refused_running

STATE_KEYS = {"ociVersion", "id", "status", "pid", "bundle"}


def test_create_gives_created_state(rt, bundle):
    b = bundle().probe("sleep", "30")
    cid = rt.new_id()
    res = rt.create(cid, b)
    assert res.rc == 0, res
    assert res.out == "", "create must not print anything on success"
    st = rt.state(cid)
    assert STATE_KEYS <= set(st), st
    assert st["id"] == cid
    assert st["status"] == "created"
    assert st["bundle"] == str(b.path)
    assert isinstance(st["pid"], int) and st["pid"] > 0
    assert pid_alive(st["pid"])
    assert st["ociVersion"]


def test_created_process_has_not_run_user_program(rt, bundle, workdir):
    marker = workdir / "ran"
    b = bundle().sh("echo ran > /out/ran; exec /probe sleep 30").bind(workdir, "/out")
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    assert not marker.exists(), "user process ran before start"
    rt.start(cid).expect_ok()
    assert wait_for(lambda: marker.exists() and marker.read_text() == "ran\n", 5), \
        "user process did not run after start"


def test_state_pid_is_host_pid_of_container_init(rt, bundle):
    b = bundle().probe("sleep", "30")
    cid = rt.start_detached(b)
    st = rt.state(cid)
    assert st["status"] == "running"
    pid = st["pid"]
    # the pid is a host pid, living in another pid namespace, running /probe
    assert os.readlink(f"/proc/{pid}/ns/pid") != os.readlink("/proc/self/ns/pid")
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        assert f.read().split(b"\0")[:3] == [b"/probe", b"sleep", b"30"]


def test_start_runs_process_and_state_running(rt, bundle):
    b = bundle().probe("sleep", "30")
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    res = rt.start(cid)
    assert res.rc == 0 and res.out == "", res
    assert rt.status(cid) == "running"


def test_process_exit_gives_stopped(rt, bundle):
    b = bundle().probe("exit", "0")
    cid = rt.start_detached(b)
    assert rt.wait_status(cid, "stopped") == "stopped"
    st = rt.state(cid)
    assert st["pid"] == 0, "runc reports pid 0 for a stopped container"


def test_annotations_in_state(rt, bundle):
    b = bundle().probe("sleep", "30").annotations(**{"org.example.key": "value", "com.example.n": "2"})
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    assert rt.state(cid)["annotations"] == {"org.example.key": "value", "com.example.n": "2"}


def test_full_cycle_and_cleanup(rt, bundle):
    b = bundle().probe("sleep", "30")
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    assert rt.status(cid) == "created"
    pid = rt.pid(cid)
    assert cgroup_dirs_named(cid), "no cgroup created for the container"
    rt.start(cid).expect_ok()
    assert rt.status(cid) == "running"
    rt.kill(cid, "KILL").expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"
    assert wait_for(lambda: not pid_alive(pid), 5)
    res = rt.delete(cid)
    assert res.rc == 0 and res.out == "", res
    assert not (rt.root / cid).exists(), "state dir not removed"
    assert wait_for(lambda: not cgroup_dirs_named(cid), 5), cgroup_dirs_named(cid)
    res = rt.state_raw(cid)
    assert res.rc != 0 and "does not exist" in res.error


def test_start_twice_fails(rt, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "30"))
    res = rt.start(cid)
    assert_refused_running(rt, cid, res, "cannot start an already running container")


def test_start_stopped_fails(rt, bundle):
    cid = rt.start_detached(bundle().probe("exit", "0"))
    assert rt.wait_status(cid, "stopped") == "stopped"
    res = rt.start(cid)
    assert res.rc != 0
    assert "cannot start a container that has stopped" in res.error


def test_delete_created_without_force_removes_it(rt, bundle):
    # runc kills and removes a container that was created but never started
    cid = rt.new_id()
    rt.create(cid, bundle().probe("sleep", "30")).expect_ok()
    pid = rt.pid(cid)
    res = rt.delete(cid)
    assert res.rc == 0, res
    assert rt.state_raw(cid).rc != 0
    assert wait_for(lambda: not pid_alive(pid), 5)


def test_kill_created_container(rt, bundle):
    cid = rt.new_id()
    rt.create(cid, bundle().probe("sleep", "30")).expect_ok()
    rt.kill(cid, "KILL").expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"


def test_two_containers_same_bundle(rt, bundle):
    b = bundle().probe("sleep", "30")
    a = rt.start_detached(b)
    c = rt.start_detached(b)
    sa, sc = rt.state(a), rt.state(c)
    assert sa["status"] == sc["status"] == "running"
    assert sa["pid"] != sc["pid"]
    assert sa["bundle"] == sc["bundle"] == str(b.path)
