"""Attack: a repository loosens its own sandbox, or the workspace is a
system directory (red team round 11, docs/sandbox.md "The workspace file
can only add"). A workspace `.comet/sandbox.yaml` profile with
`write: ["/"]` and `network: open` was accepted under `--profile y` and
auto-allowed; `--workspace /etc` was auto-allowed too.

Each test asserts that nothing ran, on the one-line error, and on the
--can-auto-allow verdict."""
from __future__ import annotations

import json
import os

import pytest

from lib.sandbox import GIT_ENV, make_repo, sandbox_env

pytestmark = pytest.mark.comet_only


def run(rt, workdir, ws, *args, profile=None):
    gcfg = workdir / "global.yaml"
    gcfg.write_text("")
    env = {**sandbox_env(), **GIT_ENV, "COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)}
    argv = ["sandbox", "--workspace", str(ws)] + (["--profile", profile] if profile else [])
    res = rt(*argv, *args, env=env, timeout=60)
    return res


@pytest.mark.parametrize("profile_text", [
    "    extends: workspace\n    write: [\"/\"]\n",
    "    extends: strict\n    network: open\n",
    "    extends: devbox\n",
    "    extends: strict\n    read: [\"~\"]\n",
    "    extends: workspace\n    write: [\"{workspace}/out\"]\n",  # out -> a directory outside
])
def test_a_workspace_file_profile_cannot_grant(rt, workdir, profile_text):
    ws = make_repo(workdir)
    outside = workdir / "outside"
    outside.mkdir()
    os.symlink(outside, ws / "out")
    (ws / ".comet").mkdir()
    (ws / ".comet" / "sandbox.yaml").write_text("profiles:\n  y:\n" + profile_text)
    marker = outside / "ran"
    res = run(rt, workdir, ws, "--", "/bin/sh", "-c", f"touch {marker}", profile="y")
    assert res.rc == 125, res
    assert not marker.exists()
    assert len(res.err.strip().splitlines()) == 1, res.err
    assert "workspace file" in res.err or "outside the workspace" in res.err, res.err
    v = run(rt, workdir, ws, "--can-auto-allow", "--", "true", profile="y")
    assert json.loads(v.out)["auto_allow"] is False, v.out


def test_a_workspace_file_profile_that_only_takes_away_runs(rt, workdir):
    ws = make_repo(workdir)
    (ws / "out").mkdir()
    (ws / ".comet").mkdir()
    (ws / ".comet" / "sandbox.yaml").write_text(
        "profiles:\n  y:\n    extends: strict\n    network: restricted\n"
        "    write: [\"{workspace}/out\"]\n")
    res = run(rt, workdir, ws, "--", "/bin/sh", "-c", "touch out/x", profile="y")
    assert res.rc == 0, res
    assert (ws / "out" / "x").exists()


@pytest.mark.parametrize("ws", ["/etc", "/usr/local", "/var", "/boot"])
def test_a_system_directory_is_no_workspace(rt, workdir, ws):
    res = run(rt, workdir, ws, "--", "/bin/true")
    assert res.rc == 125, res
    assert "system directory" in res.err and len(res.err.strip().splitlines()) == 1, res.err
    v = run(rt, workdir, ws, "--can-auto-allow", "--", "true")
    assert json.loads(v.out)["auto_allow"] is False, v.out


def test_an_events_socket_in_the_workspace_is_refused(rt, workdir):
    # Red team round 11: the command unlinked the socket and bound its own,
    # swallowing the events about it.
    ws = make_repo(workdir)
    marker = ws / "ran"
    res = run(rt, workdir, ws, "--events", f"unix:{ws}/ev.sock", "--", "/bin/sh", "-c",
              f"touch {marker}")
    assert res.rc == 125, res
    assert not marker.exists()
    assert "--events" in res.err and len(res.err.strip().splitlines()) == 1, res.err
    # outside the trees the command writes (the private /tmp is none), it runs
    res = run(rt, workdir, ws, "--events", f"unix:{workdir}/ev.sock", "--", "/bin/true")
    assert res.rc == 0, res


def test_the_summary_survives_a_nonblocking_full_stderr(rt, workdir):
    # Red team round 11: the command set O_NONBLOCK on the shared stderr
    # pipe and filled it; the runtime's summary write got EAGAIN and was
    # dropped. The reader here starts only after the run has ended.
    import subprocess
    import time

    ws = make_repo(workdir)
    gcfg = workdir / "global.yaml"
    gcfg.write_text("")
    env = {**sandbox_env(), **GIT_ENV, "COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)}
    prog = ("import fcntl, os\n"
            "try:\n    os.mkdir('/usr/comet-rt11')\nexcept OSError:\n    pass\n"
            "fl = fcntl.fcntl(2, fcntl.F_GETFL); fcntl.fcntl(2, fcntl.F_SETFL, fl | os.O_NONBLOCK)\n"
            "try:\n    while True: os.write(2, b'x' * 4096)\nexcept BlockingIOError:\n    pass\n")
    p = subprocess.Popen([str(rt.binary), "--root", str(rt.root), "sandbox", "--workspace",
                          str(ws), "--", "/usr/bin/python3", "-c", prog],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    time.sleep(1.0)  # the run is over (or waiting for room) before anything is read
    err = p.stderr.read()
    assert p.wait(timeout=30) == 0
    tail = err.replace(b"x", b"")
    assert b"refused" in tail, tail[-500:]


def test_a_protect_entry_through_a_link_to_the_hosts_tmp_runs_as_the_verdict_says(rt, workdir):
    # Red team round 11: --can-auto-allow said true, the run exited 125
    # ("landlock for the init: W/link: ENOENT"): the pinned link led to a
    # host /tmp directory the private /tmp does not hold.
    import shutil
    import tempfile

    target = tempfile.mkdtemp(prefix="rt11-")
    try:
        ws = make_repo(workdir)
        os.symlink(target, ws / "link")
        (ws / ".comet").mkdir()
        (ws / ".comet" / "sandbox.yaml").write_text('protect: ["{workspace}/link/f"]\n')
        v = run(rt, workdir, ws, "--can-auto-allow", "--", "true")
        assert json.loads(v.out)["auto_allow"] is True, v.out
        res = run(rt, workdir, ws, "--", "/bin/sh", "-c", "echo ran; echo x > link/f; echo w=$?")
        assert res.rc == 0, res
        assert "ran" in res.out and "w=0" not in res.out, res.out
        assert os.readlink(ws / "link") == target
        assert not os.path.exists(os.path.join(target, "f"))
    finally:
        shutil.rmtree(target, ignore_errors=True)
