"""--pid-file."""
import os


def _read_pid(path):
    text = path.read_text()
    assert text.strip().isdigit(), repr(text)
    return int(text)


def test_pid_file_on_create(rt, bundle, workdir):
    pf = workdir / "c.pid"
    cid = rt.new_id()
    rt.create(cid, bundle().probe("sleep", "30"), "--pid-file", str(pf)).expect_ok()
    pid = _read_pid(pf)
    assert pid == rt.pid(cid)
    assert os.path.exists(f"/proc/{pid}")


def test_pid_file_has_no_trailing_newline(rt, bundle, workdir):
    pf = workdir / "c.pid"
    cid = rt.new_id()
    rt.create(cid, bundle().probe("sleep", "30"), "--pid-file", str(pf)).expect_ok()
    assert pf.read_text() == str(rt.pid(cid))


def test_pid_file_run_detach(rt, bundle, workdir):
    pf = workdir / "r.pid"
    cid = rt.new_id()
    rt.run(cid, bundle().probe("sleep", "30"), "-d", "--pid-file", str(pf)).expect_ok()
    assert _read_pid(pf) == rt.pid(cid)
    with open(f"/proc/{_read_pid(pf)}/cmdline", "rb") as f:
        assert f.read().startswith(b"/probe\0sleep")


def test_pid_file_relative_to_cwd(rt, bundle, workdir):
    cid = rt.new_id()
    b = bundle().probe("sleep", "30")
    rt("create", "--bundle", str(b.write().path), "--pid-file", "rel.pid", cid, cwd=workdir).expect_ok()
    assert _read_pid(workdir / "rel.pid") == rt.pid(cid)


def test_pid_file_replaced(rt, bundle, workdir):
    pf = workdir / "c.pid"
    pf.write_text("99999999 stale content that is longer")
    cid = rt.new_id()
    rt.create(cid, bundle().probe("sleep", "30"), "--pid-file", str(pf)).expect_ok()
    assert pf.read_text() == str(rt.pid(cid))
