"""Attack: a write path bound where a symlink leads (red team round 12,
docs/sandbox.md "Write paths and symlinks"). A write path was resolved with
realpath(3) at start and the target bound read-write at its real path, so
a symlink left by an earlier sandboxed run (`build -> /host/dir`, or
`~/.comet/sessions -> /etc`, which the default profile can write for a
later `--profile strict`) made any host directory writable; and the check a
workspace file's profile had was racy: a second sandbox flipping `out`
between a directory and a symlink during start got the link's target.

Each test counts what arrives on the host: a file written, a connection
accepted. On the code before the fix every one of them arrives."""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from lib import config as cfg
from lib.sandbox import GIT_ENV, UnixListener, make_repo, sandbox_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lib.rootless import OrdinaryUser  # noqa: E402

pytestmark = pytest.mark.comet_only

# Run by the earlier, auto-allowed default-profile sandbox: ~/.comet is
# writable there.
RELINK = ("import os; h = os.path.expanduser('~/.comet/'); "
          "os.rename(h + 'sessions', h + 'old'); os.symlink({target!r}, h + 'sessions')")


def env_for(workdir: Path, **extra) -> dict:
    gcfg = workdir / "global.yaml"
    if not gcfg.exists():
        gcfg.write_text("")
    return {**sandbox_env(), **GIT_ENV, "COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg), **extra}


def sbx(rt, env, ws, *cmd, profile=None, args=()):
    argv = ["sandbox", *args, "--workspace", str(ws)] + (["--profile", profile] if profile else [])
    return rt(*argv, "--", *cmd, env=env, timeout=60)


def verdict(rt, env, ws, *cmd, profile=None) -> bool:
    res = sbx(rt, env, ws, *cmd, profile=profile, args=["--can-auto-allow"])
    return json.loads(res.out)["auto_allow"]


def refused(res, link: str):
    assert res.rc == 125, res
    lines = [l for l in res.err.strip().splitlines() if "level=" not in l or "error" in l]
    assert len(lines) == 1, res.err
    assert "symlink" in res.err and link in res.err, res.err


@pytest.fixture
def outside(workdir) -> Path:
    d = workdir / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("host secret\n")
    return d


# Row 19: the docs' own `ci` example, in the global and in the user file;
# an earlier default-profile run replaced build/ with a symlink.
@pytest.mark.parametrize("source", ["global", "user"])
def test_config_write_path_made_a_symlink_by_an_earlier_run(rt, workdir, outside, source):
    ws = make_repo(workdir)
    (ws / "build").mkdir()
    text = 'profiles:\n  ci:\n    extends: strict\n    write: ["{workspace}/build"]\n'
    xdg = workdir / "xdgc"
    (xdg / "comet").mkdir(parents=True)
    env = env_for(workdir, XDG_CONFIG_HOME=str(xdg))
    if source == "global":
        Path(env["COMET_SANDBOX_GLOBAL_CONFIG"]).write_text(text)
    else:
        (xdg / "comet" / "sandbox.yaml").write_text(text)
    first = sbx(rt, env, ws, "/bin/sh", "-c", f"rm -rf build && ln -s {outside} build")
    assert first.rc == 0, first
    assert (ws / "build").is_symlink()
    res = sbx(rt, env, ws, "/bin/sh", "-c", "echo x > build/pwn && echo wrote", profile="ci")
    assert not (outside / "pwn").exists(), res
    refused(res, str(ws / "build"))
    assert verdict(rt, env, ws, "/bin/sh", "-c", "echo x > build/pwn", profile="ci") is False
    # The same profile with build/ a directory again runs, and writes there.
    (ws / "build").unlink()
    (ws / "build").mkdir()
    ok = sbx(rt, env, ws, "/bin/sh", "-c", "echo x > build/out && echo wrote", profile="ci")
    assert ok.rc == 0 and "wrote" in ok.out, ok
    assert (ws / "build" / "out").exists()


# Rows 20 and 33: built-in profiles only. The default run (auto-allowed)
# points ~/.comet/sessions at a host directory; strict writes
# ~/.comet/sessions.
def home_with_sessions(workdir) -> Path:
    home = workdir / "home"
    (home / ".comet" / "sessions").mkdir(parents=True)
    return home


@pytest.mark.parametrize("target", ["outside", "/etc"])
def test_strict_sessions_made_a_symlink_by_a_default_run(rt, workdir, outside, target):
    ws = make_repo(workdir)
    home = home_with_sessions(workdir)
    env = env_for(workdir, HOME=str(home))
    to = str(outside) if target == "outside" else target
    first = sbx(rt, env, ws, "/usr/bin/python3", "-c", RELINK.format(target=to))
    assert first.rc == 0, first
    assert os.readlink(home / ".comet" / "sessions") == to
    probe = (f"cat {outside}/secret.txt; echo x > {outside}/pwn && echo wrote; "
             "test -w /etc/profile.d && echo etc-writable")
    res = sbx(rt, env, ws, "/bin/sh", "-c", probe, profile="strict")
    assert not (outside / "pwn").exists(), res
    assert "host secret" not in res.out and "etc-writable" not in res.out, res
    refused(res, str(home / ".comet" / "sessions"))
    assert verdict(rt, env, ws, "/bin/true", profile="strict") is False


def test_strict_cannot_reach_a_host_socket_through_sessions(rt, workdir):
    ws = make_repo(workdir)
    home = home_with_sessions(workdir)
    env = env_for(workdir, HOME=str(home))
    sockdir = workdir / "sockdir"
    sockdir.mkdir()
    lst = UnixListener(sockdir / "daemon.sock")
    connect = ("import socket; s = socket.socket(socket.AF_UNIX); "
               f"s.connect({str(lst.path)!r}); print('connected')")
    try:
        # Outside every writable place: refused, whether or not it is seen.
        base = sbx(rt, env, ws, "/usr/bin/python3", "-c", connect, profile="strict")
        assert "connected" not in base.out and base.rc != 0, base
        first = sbx(rt, env, ws, "/usr/bin/python3", "-c", RELINK.format(target=str(sockdir)))
        assert first.rc == 0, first
        res = sbx(rt, env, ws, "/usr/bin/python3", "-c", connect, profile="strict")
        assert "connected" not in res.out, res
        time.sleep(0.3)
        assert lst.accepted == 0
        refused(res, str(home / ".comet" / "sessions"))
    finally:
        lst.close()


# Row 18: a workspace file's profile writes {workspace}/out; something else
# that can write the workspace (a second sandbox of it; here the host, which
# is quicker) flips `out` between a directory and a symlink while the
# profile starts. The target must never be bound.
# Inside: write out/pwn-N for 0.2 s, so that `out` is a symlink at some
# moment whatever was bound.
WRITE_FOR_A_WHILE = r"""
import os, time
open("started", "w").close()  # the host's flipper stops: the start is over
time.sleep(0.1)
t = time.monotonic(); i = 0
while time.monotonic() - t < 0.2:
    i += 1
    try:
        with open("out/pwn-%d-%d" % (os.getpid(), i), "w") as f: f.write("x")
    except OSError:
        pass
"""


def test_write_path_flipped_to_a_symlink_during_start(rt, workdir, outside):
    ws = make_repo(workdir)
    (ws / "out").mkdir()
    (ws / ".comet").mkdir()
    (ws / ".comet" / "sandbox.yaml").write_text(
        'profiles:\n  y:\n    extends: workspace\n    write: ["{workspace}/out"]\n')
    env = env_for(workdir)
    stop = threading.Event()

    # Flipped during start only: a rename on the host while the command
    # runs detaches the bind in the sandbox's namespace, which is the
    # rename hole docs/sandbox.md lists as not closed (not this row).
    started = ws / "started"

    def flip():
        out, d, l = str(ws / "out"), str(ws / "out.d"), str(ws / "out.l")
        while not stop.is_set():
            if started.exists():
                # the start is over: put `out` back and wait for the next run
                try:
                    if os.path.islink(out):
                        os.unlink(out)
                    if os.path.isdir(d) and not os.path.exists(out):
                        os.rename(d, out)
                except OSError:
                    pass
                time.sleep(0.005)
                continue
            for step in (lambda: os.rename(out, d),
                         lambda: (os.symlink(str(outside), l), os.rename(l, out)),
                         lambda: (os.rename(out, l), os.rename(d, out), os.unlink(l))):
                try:
                    step()
                except OSError:
                    pass

    t = threading.Thread(target=flip, daemon=True)
    t.start()
    rcs = []
    try:
        deadline = time.monotonic() + 60
        while len(rcs) < 60 and time.monotonic() < deadline:
            res = sbx(rt, env, ws, "/usr/bin/python3", "-c", WRITE_FOR_A_WHILE, profile="y")
            rcs.append(res.rc)
            started.unlink(missing_ok=True)
            if [p for p in outside.iterdir() if p.name.startswith("pwn")]:
                break
    finally:
        stop.set()
        t.join(timeout=5)
    written = sorted(p.name for p in outside.iterdir() if p.name.startswith("pwn"))
    assert written == [], (written, rcs)
    assert set(rcs) <= {0, 125}, rcs


# Row 26: the same as an ordinary user (rootless): the user's own host
# directory, which strict must not write.
def test_rootless_strict_sessions_made_a_symlink(workdir):
    with OrdinaryUser() as user:
        ws = user.make_dir("proj")
        out = user.make_dir("out26")
        user.make_dir(".comet/sessions")
        user.run(["git", "init", "-q"], cwd=str(ws))
        first = user.run([str(cfg.RUNTIME), "sandbox", "--", "/usr/bin/python3", "-c",
                          RELINK.format(target=str(out))], cwd=str(ws))
        assert first.returncode == 0, first.stderr
        res = user.run([str(cfg.RUNTIME), "sandbox", "--profile", "strict", "--", "/bin/sh", "-c",
                        f"echo x > {out}/pwn && echo wrote"], cwd=str(ws))
        assert not (out / "pwn").exists(), (res.stdout, res.stderr)
        assert res.returncode == 125 and "symlink" in res.stderr, res.stderr
        v = user.run([str(cfg.RUNTIME), "sandbox", "--profile", "strict", "--can-auto-allow", "--",
                      "/bin/true"], cwd=str(ws))
        assert json.loads(v.stdout)["auto_allow"] is False, v.stdout
