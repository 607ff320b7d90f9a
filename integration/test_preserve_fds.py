"""--preserve-fds N and LISTEN_FDS socket activation: fds 3..3+N-1 are
passed into the container, nothing else above 2."""
import json
import os

import pytest


@pytest.fixture
def three_fds(scratch_fds):
    """Three open files; Runtime(fds=...) places them at 3, 4, 5."""
    return scratch_fds(3)


def test_preserve_two_of_three(rt, bundle, workdir, three_fds):
    b = bundle()
    res = rt.run(rt.new_id(), b.probe("info"), "--preserve-fds", "2", fds=three_fds)
    assert res.rc == 0, res
    assert res.probe()["fds"] == [0, 1, 2, 3, 4]
    for n, name in ((3, "fd0"), (4, "fd1")):
        r = rt.run(rt.new_id(), b.probe("readfd", str(n)), "--preserve-fds", "2", fds=three_fds)
        d = r.probe()
        assert d["ok"] and d["data"]["target"] == str(workdir / name), d
    r = rt.run(rt.new_id(), b.probe("readfd", "5"), "--preserve-fds", "2", fds=three_fds)
    assert r.probe()["errno"] == "EBADF"


def test_preserved_fd_is_usable(rt, bundle, workdir, three_fds):
    b = bundle().sh("echo through-fd >&3")
    res = rt.run(rt.new_id(), b, "--preserve-fds", "1", fds=three_fds)
    assert res.rc == 0, res
    assert (workdir / "fd0").read_text() == "through-fd\n"


def test_no_preserve_means_only_stdio(rt, bundle, three_fds):
    res = rt.run(rt.new_id(), bundle().probe("info"), fds=three_fds)
    assert res.probe()["fds"] == [0, 1, 2]


def test_preserve_fds_with_create_start(rt, bundle, workdir, three_fds):
    cid = rt.new_id()
    rt.create(cid, bundle().sh("/probe info; sleep 0.2"), "--preserve-fds", "3", fds=three_fds).expect_ok()
    rt.start(cid).expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"
    info = json.loads(rt.output(cid).splitlines()[0])
    assert info["fds"] == [0, 1, 2, 3, 4, 5]


def test_listen_fds_socket_activation(rt, bundle, three_fds):
    # systemd socket activation: LISTEN_FDS=N and LISTEN_PID=<runtime pid>
    # in the runtime's environment -> fds 3..3+N-1 passed, LISTEN_PID=1 inside
    b = bundle().probe("info")
    env = dict(os.environ, LISTEN_FDS="2")
    sh = ["/bin/sh", "-c", 'LISTEN_PID=$$; export LISTEN_PID; exec "$@"', "sh"]
    res = rt.run(rt.new_id(), b, fds=three_fds, env=env, prefix=sh)
    assert res.rc == 0, res
    info = res.probe()
    assert info["fds"] == [0, 1, 2, 3, 4]
    assert "LISTEN_FDS=2" in info["env"]
    assert "LISTEN_PID=1" in info["env"]
