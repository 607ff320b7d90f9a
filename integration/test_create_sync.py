"""Repeated create/run on the runtime's "slow path" (a new time namespace, or
joining a namespace by path, makes the runtime fork the init from a first
stage): every run must succeed, not only most of them."""
import os

import pytest

# COMET_SYNC_RUNS overrides it (scripts/sanitize.sh: fewer under ASan).
RUNS = int(os.environ.get("COMET_SYNC_RUNS", "150"))


def run_many(rt, b, runs=RUNS):
    """`run` the bundle up to `runs` times; returns the first failure or None."""
    for i in range(runs):
        res = rt.run(rt.new_id(), b, timeout=15)
        if res.rc != 0:
            return i, res
    return None


@pytest.mark.comet_only  # runc 1.1.5 has no time namespaces
def test_time_namespace_run_is_reliable(rt, bundle):
    b = bundle().add_namespace("time").probe("exit", "0")
    b.linux["timeOffsets"] = {"boottime": {"secs": 86400, "nanosecs": 0}}
    failure = run_many(rt, b)
    assert failure is None, f"run #{failure[0]} failed: {failure[1]!r}"
