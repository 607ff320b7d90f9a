"""100 creates that each fail at a different step (failures.KINDS: parse,
validate, plan, cgroups, namespaces, user namespace, mounts, seccomp,
hooks, the child's last checks, the egress ruleset), cycling the kinds and varying the bad
value. Each must exit 1 with one line that names the problem; afterwards
nothing is left: the id does not exist, `list` is empty, and the machine
snapshot is unchanged."""
from __future__ import annotations

import os
import time

import pytest

from common import figure, list_ids, marks
from failures import EXTRA_ARGS, EXTRA_ENV, KINDS
from lib.asserts import assert_one_line_error
from snapshot import Snapshot, assert_clean

RUNS = 100


def test_enough_distinct_kinds():
    assert len({k.name for k in KINDS}) >= 25
    assert len({k.step for k in KINDS}) >= 8


@pytest.mark.comet_only
def test_hundred_failed_creates_leave_nothing(rt, harness, bundle):
    before = Snapshot.take(roots=[rt.root])
    t0 = time.monotonic()
    seen = {}
    for i in range(RUNS):
        kind = KINDS[i % len(KINDS)]
        v = (i // len(KINDS)) % 4
        b = bundle(f"f{i}")
        kind.make(b, harness.workdir, v)
        cid = rt.new_id("fail")
        extra = EXTRA_ARGS.get(kind.name, lambda w, v: [])(harness.workdir, v)
        env = dict(os.environ, **EXTRA_ENV[kind.name]) if kind.name in EXTRA_ENV else None
        res = rt.create(cid, b, *extra, env=env)
        assert res.rc == 1, f"{kind.name}[{v}]: {res!r}"
        msg = assert_one_line_error(res, *kind.needles(v), any_of=kind.any_of)
        st = rt.state_raw(cid)
        assert st.rc == 1 and "does not exist" in st.error, f"{kind.name}[{v}] left a container: {st!r}"
        seen.setdefault(kind.name, msg)
    elapsed = time.monotonic() - t0
    assert list_ids(rt) == []
    assert rt("list", "--format", "json").out.strip() == "null"
    left = assert_clean(before, marks(harness), what=f"{RUNS} failed creates")
    figure("failed_creates", runs=RUNS, kinds=len(seen), steps=len({k.step for k in KINDS}),
           seconds=round(elapsed, 2), leaked=left.count())
