"""Concurrency through the CLI only (threads each running the binary).

1. 50 containers created, started and deleted in parallel, distinct ids.
2. 20 concurrent commands on one id (start, kill, delete --force, state,
   mixed), several rounds.

Every command must exit 0 or 1 within a bound (a timeout fails the test),
a failure must be one clear line (from a known set), every `state` that
succeeds prints one whole JSON document with a valid status, and at the end
nothing is left on the machine."""
from __future__ import annotations

import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from common import STATUSES, figure, list_ids, marks
from snapshot import Snapshot, assert_clean

pytestmark = pytest.mark.comet_only

BOUND = 30.0  # seconds any one command may take under this load
PARALLEL = 50
SAME_ID = 20
ROUNDS = 5

# What a losing command may say (runc's strings where engines parse them).
ALLOWED_ERRORS = [
    r"^container does not exist$",
    r"^container not running$",
    r"^cannot start a container that has stopped$",
    r"^cannot start an already running container$",
    r"^cannot start a container that is still being created$",
    r"^container init exited before start$",
    r"^container init closed the exec fifo$",
    r"^cannot delete container \S+ that is not stopped: \w+$",
]


def check_failure(res, what):
    assert res.rc in (0, 1), f"{what}: exit {res.rc} (crash or signal?): {res!r}"
    if res.rc == 0:
        return None
    msg = res.error.strip()
    assert msg and "\n" not in msg, f"{what}: not one line: {res!r}"
    assert any(re.search(p, msg) for p in ALLOWED_ERRORS), f"{what}: unexpected error {msg!r}"
    return msg


def check_state(res, cid):
    if res.rc != 0:
        return None
    doc = json.loads(res.out)  # one whole document, never torn
    assert doc["id"] == cid and doc["status"] in STATUSES, doc
    if doc["status"] in ("created", "running", "paused"):
        assert doc["pid"] > 0, doc
    return doc["status"]


def test_fifty_parallel_lifecycles(rt, harness, bundle):
    b = bundle().probe("sleep", "30").write()
    before = Snapshot.take(roots=[rt.root])
    ids = [rt.new_id("par") for _ in range(PARALLEL)]
    durations: dict[str, list[float]] = {"create": [], "start": [], "delete": []}
    lock = threading.Lock()
    go = threading.Barrier(PARALLEL)

    def one(cid):
        go.wait()
        for verb, args in (("create", ("create", "--bundle", str(b.path), cid)),
                           ("start", ("start", cid))):
            t = time.monotonic()
            rt(*args, timeout=BOUND).expect_ok()
            with lock:
                durations[verb].append(time.monotonic() - t)
        st = rt("state", cid, timeout=BOUND)
        assert check_state(st, cid) == "running", st
        t = time.monotonic()
        rt("delete", "--force", cid, timeout=BOUND).expect_ok()
        with lock:
            durations["delete"].append(time.monotonic() - t)
        st = rt("state", cid, timeout=BOUND)
        assert st.rc == 1 and "does not exist" in st.error, st

    t0 = time.monotonic()
    with ThreadPoolExecutor(PARALLEL) as ex:
        for f in [ex.submit(one, cid) for cid in ids]:
            f.result()
    elapsed = time.monotonic() - t0
    assert list_ids(rt) == []
    left = assert_clean(before, marks(harness), what=f"{PARALLEL} parallel lifecycles")
    figure("parallel_lifecycles", containers=PARALLEL, seconds=round(elapsed, 2),
           slowest_create_ms=round(max(durations["create"]) * 1000, 1),
           slowest_start_ms=round(max(durations["start"]) * 1000, 1),
           slowest_delete_ms=round(max(durations["delete"]) * 1000, 1), leaked=left.count())


MIX = (["start"] * 5 + ["kill TERM", "kill KILL", "kill --all KILL", "kill 0", "kill USR1"]
       + ["delete --force"] * 4 + ["state"] * 6)


def test_twenty_commands_on_one_id(rt, harness, bundle):
    assert len(MIX) == SAME_ID
    b = bundle().probe("sleep", "30").write()
    before = Snapshot.take(roots=[rt.root])
    outcomes: dict[str, dict[str, int]] = {}
    statuses: set[str] = set()
    slowest = 0.0
    for rnd in range(ROUNDS):
        cid = rt.new_id("same")
        rt.create(cid, str(b.path)).expect_ok()
        go = threading.Barrier(SAME_ID)

        def one(cmd, cid=cid, go=go):
            words = cmd.split()
            args = [words[0], *words[1:-1], cid, words[-1]] if words[0] == "kill" else [*words, cid]
            go.wait()
            t = time.monotonic()
            res = rt(*args, timeout=BOUND)
            return cmd, res, time.monotonic() - t

        order = MIX[rnd:] + MIX[:rnd]  # a different interleaving each round
        with ThreadPoolExecutor(SAME_ID) as ex:
            results = [f.result() for f in [ex.submit(one, c) for c in order]]
        for cmd, res, dt in results:
            slowest = max(slowest, dt)
            msg = check_failure(res, f"round {rnd}: {cmd}")
            if cmd == "state":
                s = check_state(res, cid)
                if s:
                    statuses.add(s)
            o = outcomes.setdefault(cmd, {})
            key = "ok" if msg is None else msg.replace(cid, "ID")
            o[key] = o.get(key, 0) + 1
        # a delete --force ran in every round: the id is gone, or stopped and deletable
        st = rt("state", cid, timeout=BOUND)
        if st.rc == 0:
            check_state(st, cid)
            rt("delete", "--force", cid, timeout=BOUND).expect_ok()
        st = rt("state", cid, timeout=BOUND)
        assert st.rc == 1 and "does not exist" in st.error, st
        # every delete --force succeeds (delete of a missing id is an error in runc too)
        assert sum(outcomes["delete --force"].values()) == 4 * (rnd + 1)
    assert list_ids(rt) == []
    left = assert_clean(before, marks(harness), what=f"{ROUNDS} rounds of {SAME_ID} commands on one id")
    figure("same_id", rounds=ROUNDS, commands=SAME_ID, slowest_ms=round(slowest * 1000, 1),
           outcomes=outcomes, statuses=sorted(statuses), leaked=left.count())


def test_concurrent_delete_force_is_idempotent(rt, bundle):
    b = bundle().probe("sleep", "30").write()
    fails = []
    for _ in range(15):
        cid = rt.new_id("del")
        rt.create(cid, str(b.path)).expect_ok()
        go = threading.Barrier(4)

        def one(cid=cid, go=go):
            go.wait()
            return rt("delete", "--force", cid, timeout=BOUND)

        with ThreadPoolExecutor(4) as ex:
            results = [f.result() for f in [ex.submit(one) for _ in range(4)]]
        fails += [r.error.strip() for r in results if r.rc != 0]
    assert fails == [], fails
