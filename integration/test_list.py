"""`list`: table and --format json."""
import json

HEADER = ["ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"]


def test_list_empty_table(rt):
    res = rt("list")
    assert res.rc == 0, res
    lines = res.out.splitlines()
    assert len(lines) == 1
    assert lines[0].split() == HEADER


def test_list_empty_json_is_null(rt):
    # runc prints Go's nil slice: "null" (not "[]")
    res = rt("list", "--format", "json")
    assert res.rc == 0, res
    assert json.loads(res.out) is None


def test_list_table_rows(rt, bundle):
    b = bundle().probe("sleep", "30")
    created = rt.new_id()
    rt.create(created, b).expect_ok()
    running = rt.start_detached(b)
    res = rt("list")
    assert res.rc == 0, res
    lines = res.out.splitlines()
    assert lines[0].split() == HEADER
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert set(rows) == {created, running}
    for cid, status in ((created, "created"), (running, "running")):
        row = rows[cid]
        assert row[1] == str(rt.pid(cid))
        assert row[2] == status
        assert row[3] == str(b.path)
        assert row[5] == "root"


def test_list_json(rt, bundle):
    b = bundle().probe("sleep", "30")
    cid = rt.start_detached(b)
    res = rt("list", "--format", "json")
    assert res.rc == 0, res
    items = json.loads(res.out)
    assert isinstance(items, list) and len(items) == 1
    it = items[0]
    assert it["id"] == cid
    assert it["status"] == "running"
    assert it["pid"] == rt.pid(cid)
    assert it["bundle"] == str(b.path)
    assert "ociVersion" in it and "created" in it


def test_list_quiet(rt, bundle):
    b = bundle().probe("sleep", "30")
    ids = {rt.start_detached(b), rt.start_detached(b)}
    res = rt("list", "-q")
    assert res.rc == 0, res
    assert set(res.out.split()) == ids


def test_list_shows_stopped(rt, bundle):
    cid = rt.start_detached(bundle().probe("exit", "0"))
    assert rt.wait_status(cid, "stopped") == "stopped"
    items = json.loads(rt("list", "--format", "json").out)
    assert [(i["id"], i["status"], i["pid"]) for i in items] == [(cid, "stopped", 0)]
