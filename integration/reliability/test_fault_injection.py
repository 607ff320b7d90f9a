"""The runtime SIGKILLed at every stage of create and start (COMET_FAULT,
base/include/comet/base/fault.hpp): `state` never prints a corrupt
document, and `delete --force` leaves nothing behind."""
import json
import os
import signal
import time

import pytest

from lib import packs
from lib.asserts import assert_nothing_left

# Every point from "state dir made" to "final record written" (fault.hpp).
POINTS = ["create-after-state-dir", "create-mid-cgroups", "create-after-cgroups",
          "create-after-fswatch", "create-after-reporter", "create-after-record",
          "create-after-clone", "create-after-mounts", "create-before-ready"]

pytestmark = pytest.mark.comet_only


def check_state_is_whole(rt, cid):
    st = rt.state_raw(cid)
    if st.rc == 0:
        doc = json.loads(st.out)  # a whole JSON document, never a torn one
        assert doc["id"] == cid
        assert doc["status"] in ("creating", "created", "stopped"), doc
    else:
        assert st.error, st


# plain: cgroup2 only; limits: the v1 hierarchies too; no-mntns: the mounts
# in the runtime's namespace, under the state dir.
KINDS = {
    "plain": lambda b: b,
    "limits": lambda b: b.resources(memory={"limit": 64 << 20}, pids={"limit": 64}),
    "no-mntns": lambda b: b.remove_namespace("mount"),
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("point", POINTS)
def test_killed_create_is_cleaned_by_delete_force(rt, harness, bundle, point, kind):
    b = KINDS[kind](bundle().probe("sleep", "30"))
    cid = rt.new_id()
    res = rt.create(cid, b, env={"COMET_FAULT": point})
    assert res.rc == -signal.SIGKILL, res
    check_state_is_whole(rt, cid)
    rt.delete(cid, "--force").expect_ok()
    assert_nothing_left(harness, cid)
    with open("/proc/self/mountinfo") as f:
        left = [line for line in f if cid in line]
    assert not left, left


def reporters() -> set[int]:
    out = set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/comm") as f:
                    if f.read().strip() == "comet-reporter":
                        out.add(int(d))
            except OSError:
                pass
    return out


@pytest.mark.parametrize("point", ["create-after-fswatch", "create-after-reporter",
                                   "create-after-record"])
def test_killed_pack_create_is_cleaned_by_delete_force(rt, harness, workdir, session_dir, point):
    """A pack's create (own init, fs events, the violation reporter) killed
    at the points where its extensions exist but no record, or only the
    first: the reporter ends (its socket's peer is gone), delete --force
    removes the rest."""
    p, rootfs = packs.make_pack(workdir / "p", packs.build_packprobe(session_dir))
    out = workdir / "out"  # made by pack bundle, for the agent
    bdir = workdir / "bundle"
    rt("pack", "bundle", str(p), "--rootfs", str(rootfs), "--bundle", str(bdir),
       "--output", str(out)).expect_ok()
    before = reporters()
    cid = rt.new_id()
    res = rt.create(cid, bdir, env={"COMET_FAULT": point})
    assert res.rc == -signal.SIGKILL, res
    check_state_is_whole(rt, cid)
    rt.delete(cid, "--force").expect_ok()
    assert_nothing_left(harness, cid)
    deadline = time.monotonic() + 5
    while reporters() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not reporters() - before, "a violation reporter outlived the killed create"


def test_killed_start_is_cleaned_by_delete_force(rt, harness, bundle):
    b = bundle().probe("sleep", "30")
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    res = rt.start(cid, env={"COMET_FAULT": "start-waiting-fifo"})
    assert res.rc == -signal.SIGKILL, res
    check_state_is_whole(rt, cid)
    rt.delete(cid, "--force").expect_ok()
    assert_nothing_left(harness, cid)


def test_unknown_fault_point_is_inert(rt, bundle):
    res = rt.run(rt.new_id(), bundle().probe("exit", "0"), env={"COMET_FAULT": "nowhere"})
    assert res.rc == 0, res
