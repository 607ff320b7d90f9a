"""Error strings that engines (containerd, CRI-O, podman) parse."""
import pytest

from lib.asserts import assert_nothing_left, assert_one_line_error


@pytest.mark.parametrize("cmd", [["state"], ["start"], ["kill"], ["kill", "--all"], ["delete"],
                                 ["pause"], ["resume"], ["ps"], ["events", "--stats"]])
def test_missing_container_does_not_exist(rt, cmd):
    res = rt(*cmd, "cmt-missing")
    assert_one_line_error(res, "does not exist")
    assert res.rc == 1


def test_exec_missing_container(rt):
    res = rt("exec", "cmt-missing", "/bin/true")
    assert res.rc != 0
    assert "does not exist" in res.error


def test_unknown_command(rt):
    # runc: exit 3, msg="No help topic for 'frobnicate'"
    res = rt("frobnicate")
    assert_one_line_error(res, "frobnicate")


def test_no_command_prints_usage(rt):
    res = rt()
    # runc prints help and exits 0; what matters is that it does not crash
    assert res.rc in (0, 1, 2), res
    assert "create" in res.out + res.err


def test_duplicate_id(rt, bundle):
    b = bundle().probe("sleep", "30")
    cid = rt.start_detached(b)
    pid = rt.pid(cid)
    res = rt.create(cid, b)
    assert_one_line_error(res, "already exists")
    st = rt.state(cid)
    assert st["status"] == "running" and st["pid"] == pid, "original container disturbed"


def test_systemd_cgroup_without_systemd(rt, harness, bundle):
    b = bundle()
    cid = rt.new_id()
    res = rt("create", "--bundle", str(b.write().path), cid, global_args=["--systemd-cgroup"])
    assert_one_line_error(res, "systemd")
    assert_nothing_left(harness, cid)


def test_missing_bundle_dir(rt, harness, workdir):
    cid = rt.new_id()
    res = rt("create", "--bundle", str(workdir / "no-such-bundle"), cid)
    assert_one_line_error(res, "no-such-bundle")
    assert_nothing_left(harness, cid)


def test_bundle_without_config(rt, harness, bundle):
    b = bundle()  # never written
    cid = rt.new_id()
    res = rt("create", "--bundle", str(b.path), cid)
    assert_one_line_error(res, "config.json")
    assert_nothing_left(harness, cid)
