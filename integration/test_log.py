"""--log FILE --log-format json."""
import json


def _lines(path):
    text = path.read_text()
    recs = []
    for line in text.splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)  # every line must be JSON
        assert {"level", "msg", "time"} <= set(rec), rec
        assert isinstance(rec["msg"], str) and isinstance(rec["time"], str)
        recs.append(rec)
    return recs


def test_json_log_error_for_missing_container(rt, workdir):
    log = workdir / "log.json"
    res = rt("--log", str(log), "--log-format", "json", "kill", "cmt-missing")
    assert res.rc != 0
    recs = _lines(log)
    assert recs, "nothing logged"
    assert recs[-1]["level"] == "error"
    assert "does not exist" in recs[-1]["msg"]
    # the reason is also on stderr
    assert "does not exist" in res.error


def test_json_log_error_carries_reason(rt, bundle, workdir):
    log = workdir / "log.json"
    b = bundle()
    b.config["root"]["path"] = "missing-rootfs"
    cid = rt.new_id()
    res = rt("--log", str(log), "--log-format", "json", "create", "--bundle", str(b.write().path), cid)
    assert res.rc != 0
    recs = _lines(log)
    errors = [r for r in recs if r["level"] == "error"]
    assert errors and errors[-1] is recs[-1]
    assert "missing-rootfs" in recs[-1]["msg"]


def test_json_log_appends(rt, workdir):
    log = workdir / "log.json"
    rt("--log", str(log), "--log-format", "json", "state", "cmt-missing-1")
    rt("--log", str(log), "--log-format", "json", "state", "cmt-missing-2")
    recs = _lines(log)
    assert len(recs) >= 2
    assert "does not exist" in recs[-1]["msg"] and "does not exist" in recs[-2]["msg"]


def test_json_log_successful_lifecycle_is_valid_json(rt, bundle, workdir):
    log = workdir / "log.json"
    b = bundle().probe("sleep", "30")
    cid = rt.new_id()
    g = ["--log", str(log), "--log-format", "json"]
    rt("create", "--bundle", str(b.write().path), cid, global_args=g).expect_ok()
    rt("start", cid, global_args=g).expect_ok()
    rt("kill", cid, "KILL", global_args=g).expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"
    rt("delete", cid, global_args=g).expect_ok()
    if log.exists():
        for rec in _lines(log):
            assert rec["level"] != "error", rec


def test_json_log_debug(rt, bundle, workdir):
    log = workdir / "log.json"
    b = bundle().probe("exit", "0")
    res = rt("--debug", "--log", str(log), "--log-format", "json", "run", "--bundle", str(b.write().path), rt.new_id())
    assert res.rc == 0, res
    recs = _lines(log)
    assert recs and all(r["level"] in ("debug", "info", "warning") for r in recs), recs
