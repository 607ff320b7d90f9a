"""Assertions shared by the error-path tests."""
from __future__ import annotations

import os

from .harness import cgroup_dirs_named, processes_in, wait_for


def assert_one_line_error(res, *needles: str, any_of: tuple[str, ...] = ()) -> str:
    """Non-zero exit, a single non-empty line on stderr (after logrus
    framing is removed), containing every needle and at least one of any_of."""
    assert res.rc != 0, f"expected failure: {res!r}"
    assert 0 < res.rc < 128, f"exit status {res.rc} looks like a crash: {res!r}"
    msg = res.error.strip()
    assert msg, f"no error message: {res!r}"
    assert "\n" not in msg, f"error is not one line: {msg!r}"
    low = msg.lower()
    for n in needles:
        assert n.lower() in low, f"{n!r} not in error {msg!r}"
    if any_of:
        assert any(n.lower() in low for n in any_of), f"none of {any_of} in error {msg!r}"
    for bad in ("panic", "goroutine", "segmentation fault", "core dumped", "terminate called"):
        assert bad not in low, f"crash signature in error: {msg!r}"
    return msg


def assert_nothing_left(harness, cid: str) -> None:
    rt = harness.rt
    try:
        assert not os.path.lexists(rt.root / cid), f"state dir left for {cid}"
    except OSError:
        pass  # name too long to exist at all
    st = rt.state_raw(cid)
    assert st.rc != 0 and "does not exist" in st.error, st
    assert wait_for(lambda: not cgroup_dirs_named(cid), 3), cgroup_dirs_named(cid)
    keys = harness._rootfs_keys()
    assert wait_for(lambda: not processes_in(harness.workdir, keys), 3), processes_in(harness.workdir, keys)


def assert_refused(harness, verb: str, bundle, *needles: str):
    """`VERB ID BUNDLE` (create or run, under a fresh id) fails, its error
    names every needle, and nothing of the container is left: the result."""
    rt = harness.rt
    cid = rt.new_id()
    res = getattr(rt, verb)(cid, bundle)
    assert res.rc != 0, res
    for n in needles:
        assert n in res.error, res
    assert_nothing_left(harness, cid)
    return res


def assert_refused_running(rt, cid: str, res, *needles: str) -> None:
    """RES, a verb on the running container CID, failed with an error that
    names every needle, and CID still runs."""
    assert res.rc != 0, res
    for n in needles:
        assert n in res.error, res
    assert rt.status(cid) == "running"
