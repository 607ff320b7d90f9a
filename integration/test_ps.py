"""`ps`: the processes of a container, as a JSON list of host pids or as the
host's ps table filtered to them."""
import os
import signal

import pytest

from lib import wait_for
from lib.procfs import descendants


@pytest.fixture
def family(rt, bundle):
    """A running container whose init (sh) has two /probe sleep children."""
    cid = rt.start_detached(bundle().sh("/probe sleep 60 & /probe sleep 60 & wait"))
    init = rt.pid(cid)
    assert wait_for(lambda: len(descendants(init)) == 2, 5), descendants(init)
    return cid, init


def ps_json(rt, cid):
    res = rt("ps", "--format", "json", cid)
    assert res.rc == 0, res
    pids = res.json()
    assert isinstance(pids, list) and all(isinstance(p, int) for p in pids), pids
    assert len(pids) == len(set(pids)), f"duplicates: {pids}"
    return pids


def test_ps_json_init_and_children(rt, family):
    cid, init = family
    assert sorted(ps_json(rt, cid)) == sorted([init, *descendants(init)])


def test_ps_json_includes_exec_and_drops_exited(rt, family, workdir):
    cid, init = family
    pf = workdir / "exec.pid"
    rt("exec", "--detach", "--pid-file", str(pf), cid, "/probe", "sleep", "60").expect_ok()
    extra = int(pf.read_text())
    assert sorted(ps_json(rt, cid)) == sorted([init, *descendants(init), extra])
    # processes that exit are no longer listed
    kid, other = descendants(init)
    for p in (kid, extra):
        os.kill(p, signal.SIGKILL)
    assert wait_for(lambda: sorted(ps_json(rt, cid)) == sorted([init, other]), 5), ps_json(rt, cid)


def test_ps_json_created_container(rt, bundle):
    cid = rt.new_id()
    rt.create(cid, bundle().probe("info")).expect_ok()
    assert ps_json(rt, cid) == [rt.pid(cid)]


def test_ps_table(rt, family):
    cid, init = family
    res = rt("ps", cid)
    assert res.rc == 0, res
    lines = res.out.splitlines()
    header = lines[0].split()
    assert "PID" in header, lines[0]
    col = header.index("PID")
    rows = {int(line.split()[col]): line for line in lines[1:] if line.strip()}
    assert init in rows, res.out
    assert rows[init].rstrip().endswith("/bin/sh -c /probe sleep 60 & /probe sleep 60 & wait"), rows[init]
    assert set(rows) == {init, *descendants(init)}, res.out


def test_ps_table_with_ps_args(rt, family):
    cid, init = family
    res = rt("ps", cid, "-o", "pid,comm")
    assert res.rc == 0, res
    lines = res.out.splitlines()
    assert lines[0].split() == ["PID", "COMMAND"], lines[0]
    rows = {int(line.split()[0]): line.split()[1] for line in lines[1:] if line.strip()}
    assert rows == {init: "sh", **{k: "probe" for k in descendants(init)}}, res.out


def test_ps_missing_container(rt):
    res = rt("ps", "--format", "json", "cmt-no-such-container")
    assert res.rc != 0
    assert "does not exist" in res.error, res
