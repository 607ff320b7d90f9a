"""`create` SIGKILLed at a random point of its first milliseconds, then
`delete --force`: nothing of the container is left (issue 27 item 6: 1 in 20
such creates left its empty cgroup2 directory). Kinds, round robin: plain
(cgroup2 only), limits (joins the v1 hierarchies too), no mount namespace
(mounts in the runtime's, under the state dir), no network namespace.
The machine is compared before and after (snapshot.py: mounts, cgroups v1
and v2, netns, links, processes, state dirs, temp dirs).

COMET_KILLED_CREATES overrides the count (default 40)."""
from __future__ import annotations

import os
import random
import subprocess
import time

import pytest

from common import figure, list_ids, marks
from snapshot import Snapshot, assert_clean

pytestmark = pytest.mark.comet_only

COUNT = int(os.environ.get("COMET_KILLED_CREATES", "40"))


def kill_create_at(rt, cid, bundle, delay):
    bundle.write()
    cmd = [str(rt.binary), "--root", str(rt.root), *rt.global_args,
           "create", "--bundle", str(bundle.path), cid]
    rt.track(cid)
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    time.sleep(delay)
    p.kill()
    p.wait(timeout=10)
    return p.returncode


def test_randomly_killed_creates_leave_nothing(rt, harness, bundle):
    kinds = [
        ("plain", bundle("plain").probe("sleep", "30")),
        ("limits", bundle("limits").probe("sleep", "30").resources(
            memory={"limit": 64 << 20}, pids={"limit": 64})),
        ("no-mntns", bundle("nomnt").probe("sleep", "30").remove_namespace("mount")),
        ("no-netns", bundle("nonet").probe("sleep", "30").remove_namespace("network")),
    ]
    # whole creates of each kind: the window is the quickest of them, so
    # most of the kills land inside a create, at every stage of it
    spans = []
    for _ in range(2):
        for name, b in kinds:
            cid = rt.new_id("warm")
            t0 = time.monotonic()
            rt.create(cid, b).expect_ok()
            spans.append(time.monotonic() - t0)
            rt.delete(cid, "--force").expect_ok()
    window = min(spans)
    before = Snapshot.take(roots=[rt.root])
    seed = int(os.environ.get("COMET_KILLED_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    killed = completed = 0
    for i in range(COUNT):
        name, b = kinds[i % len(kinds)]
        cid = rt.new_id("kill")
        delay = rng.uniform(0, window)
        rc = kill_create_at(rt, cid, b, delay)
        if rc == -9:
            killed += 1
        else:
            completed += 1
        res = rt.delete(cid, "--force")
        assert res.rc == 0, f"seed {seed}, {name} killed at {delay * 1000:.2f} ms: {res!r}"
        left = Snapshot.take(roots=[rt.root])
        for cat in ("mounts", "cgroups", "state"):
            grew = [x for x in getattr(left, cat) if cid in x]
            assert not grew, f"seed {seed}, {name} killed at {delay * 1000:.2f} ms: {cat} {grew}"
    assert list_ids(rt) == []
    assert killed >= COUNT // 3, f"only {killed} of {COUNT} creates were killed mid-way (window {window})"
    left = assert_clean(before, marks(harness), what=f"{COUNT} killed creates (seed {seed})")
    figure("killed_creates", count=COUNT, killed=killed, completed=completed,
           window_ms=round(window * 1000, 1), seed=seed, leaked=left.count())
