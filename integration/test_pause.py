"""`pause` / `resume`: freeze and thaw every process of a container (on this
host comet uses the cgroup2 freezer of the container's unified dir)."""
import time
from pathlib import Path

import pytest

from lib import wait_for
from lib.asserts import assert_nothing_left
from lib.procfs import descendants, proc_state

UNIFIED = Path("/sys/fs/cgroup/unified")

# the init and a child each bump their own counter file every 20 ms
COUNTERS = ("i=0; while :; do i=$((i+1)); echo $i > /tmp/$1; sleep 0.02; done")


def counting_bundle(bundle):
    return bundle().readonly(False).sh(
        f"sh -c '{COUNTERS}' child child & exec sh -c '{COUNTERS}' init init")


def counter(b, name):
    try:
        return int((b.rootfs / "tmp" / name).read_text().strip() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def frozen(cid):
    events = (UNIFIED / cid / "cgroup.events").read_text().split("\n")
    return dict(line.split() for line in events if line)["frozen"]


def error_text(res):
    assert res.rc != 0, res
    return res.error.strip()


def test_pause_stops_progress_and_resume_restarts_it(rt, bundle):
    b = counting_bundle(bundle)
    cid = rt.start_detached(b)
    assert wait_for(lambda: counter(b, "init") > 2 and counter(b, "child") > 2, 5)
    rt("pause", cid).expect_ok()
    assert rt.status(cid) == "paused"
    time.sleep(0.1)  # a write in flight when the freeze landed
    before = (counter(b, "init"), counter(b, "child"))
    time.sleep(0.5)
    assert (counter(b, "init"), counter(b, "child")) == before, "processes ran while paused"
    rt("resume", cid).expect_ok()
    assert rt.status(cid) == "running"
    assert wait_for(lambda: counter(b, "init") > before[0] + 2 and counter(b, "child") > before[1] + 2, 5), \
        "processes did not run again after resume"


@pytest.mark.comet_only  # runc 1.1.5 uses the v1 freezer on a hybrid host
def test_pause_freezes_the_unified_cgroup(rt, bundle):
    cid = rt.start_detached(bundle().sh("/probe sleep 60 & exec /probe sleep 60"))
    init = rt.pid(cid)
    assert wait_for(lambda: descendants(init), 5)
    assert frozen(cid) == "0"
    rt("pause", cid).expect_ok()
    assert wait_for(lambda: frozen(cid) == "1", 5), "cgroup.events never said frozen 1"
    for pid in [init, *descendants(init)]:
        # a cgroup2-frozen task sleeps in the freezer (S); a v1/SIGSTOP one shows T
        assert proc_state(pid) in ("S", "T", "D"), (pid, proc_state(pid))
    rt("resume", cid).expect_ok()
    assert wait_for(lambda: frozen(cid) == "0", 5)
    assert rt.status(cid) == "running"


def test_paused_container_still_listed_by_ps(rt, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "60"))
    rt("pause", cid).expect_ok()
    assert rt("ps", "--format", "json", cid).expect_ok().json() == [rt.pid(cid)]
    rt("resume", cid).expect_ok()


def test_pause_stopped_container_fails(rt, bundle):
    cid = rt.start_detached(bundle().probe("exit", "0"))
    assert rt.wait_status(cid, "stopped") == "stopped"
    assert "container not running" in error_text(rt("pause", cid))
    assert rt.status(cid) == "stopped"


def test_pause_twice_fails_and_stays_paused(rt, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "60"))
    rt("pause", cid).expect_ok()
    assert "container not running" in error_text(rt("pause", cid))
    assert rt.status(cid) == "paused"
    rt("resume", cid).expect_ok()


def test_resume_running_container_fails(rt, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "60"))
    assert "container not paused" in error_text(rt("resume", cid))
    assert rt.status(cid) == "running"


def test_pause_missing_container(rt):
    assert "does not exist" in error_text(rt("pause", "cmt-no-such-container"))
    assert "does not exist" in error_text(rt("resume", "cmt-no-such-container"))


def test_exec_into_paused_container_fails(rt, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "60"))
    rt("pause", cid).expect_ok()
    res = rt("exec", cid, "/probe", "info", timeout=10)
    assert "paused" in error_text(res)
    rt("resume", cid).expect_ok()


def test_delete_force_paused_container(rt, harness, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "60"))
    rt("pause", cid).expect_ok()
    rt.delete(cid, "--force", timeout=10).expect_ok()
    assert_nothing_left(harness, cid)


def test_pause_resume_created_container(rt, bundle):
    cid = rt.new_id()
    rt.create(cid, bundle().probe("exit", "0")).expect_ok()
    rt("pause", cid).expect_ok()
    assert rt.status(cid) == "paused"
    rt("resume", cid).expect_ok()
    assert rt.status(cid) == "created"
    rt.start(cid, timeout=5).expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"
