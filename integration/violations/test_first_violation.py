"""Issue 26, trap 2: the first violation is not silent. At the end of a
`pack run` with violations, one line on stderr names each surface, its count
and first request, and where the events are; the events outlive the
container (`events --violations ID` after the run, from a bounded store
under the state root); the "flagged" warning shows on the run that flags;
one --root's flags are not another's."""
from __future__ import annotations

import json
import re

import pytest

from lib.packs import pack_run

pytestmark = pytest.mark.comet_only

PACK = "probe-pack@0.0.1"


def test_a_run_with_violations_says_so_and_keeps_its_events(rt, pack, flags_dir):
    cid = "first-violation"
    res = pack_run(rt, pack, "exec=/bin/busybox", "fork", extra=("--id", cid))
    assert res.rc == 3, res
    kept = rt.root / ".events@" / f"{cid}.jsonl"
    lines = [x for x in res.err.splitlines() if x.startswith("comet: ")]
    assert lines == [f"comet: 2 capability violations: exec \u00d71 (/bin/busybox), "
                     f"process \u00d71 (clone); events: {kept}"], res.err
    # the run that flags says so (not only the next one)
    assert sum(f"pack {PACK} is flagged: 2" in x for x in res.err.splitlines()) == 1, res.err
    # the container is gone; its events are not
    assert not (rt.root / cid).exists()
    ev = rt("events", "--violations", cid)
    assert ev.rc == 0, ev
    got = [json.loads(x) for x in ev.out.splitlines() if x.strip()]
    assert [(e["surface"], e["requested"]) for e in got] == [("exec", "/bin/busybox"),
                                                             ("process", "clone")], got
    assert kept.stat().st_mode & 0o777 == 0o600
    # not a container: `list` does not show the store
    assert cid not in rt("list", "-q").out and ".events@" not in rt("list", "-q").out


def test_a_clean_run_prints_no_summary(rt, pack, flags_dir):
    res = pack_run(rt, pack, "thread", extra=("--id", "clean-run"))
    assert res.rc == 0, res
    assert not [x for x in res.err.splitlines() if x.startswith("comet: ")], res.err
    assert rt("events", "--violations", "clean-run").rc == 1


def test_unknown_container_names_the_store(rt):
    res = rt("events", "--violations", "never-ran")
    assert res.rc == 1
    assert "container does not exist: never-ran" in res.err and ".events@" in res.err, res.err


def test_flags_are_scoped_with_the_state_root(rt, pack, monkeypatch, workdir):
    """Before: one registry per user whatever --root (/var/lib/comet-runtime/flags),
    so `pack flags list` of one root showed another root's packs."""
    monkeypatch.delenv("COMET_FLAGS_DIR", raising=False)
    res = pack_run(rt, pack, "fork")
    assert res.rc == 3, res
    listed = [json.loads(x)["pack"] for x in rt("pack", "flags", "list").out.splitlines()]
    assert listed == [PACK]
    assert (rt.root / ".flags@" / f"{PACK}.json").exists()
    other = workdir / "other-root"
    other.mkdir()
    res = rt("--root", str(other), "pack", "flags", "list", root=False)
    assert res.rc == 0 and res.out.strip() == "", res
