"""Attacks of red team round 12 on `sandbox` that the runtime itself closes
(docs/sandbox.md "Closed after red team round 12"): the --events file as a
way to make the runtime write elsewhere or to hide events (rows 01, 11,
17, 31), a flood hiding the one refusal that matters (16), a SIGKILLed
harness leaving the command running (22), system directories and other
accounts' homes as a workspace (07), and home names a custom `write: [~]`
left writable (10).

Each test does what the attacker did and asserts on what the host holds
afterwards; each failed on the binary before the fix (a98.. of main, the
round's /tmp/rt-bin12)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from lib import config as cfg
from lib.rootless import OrdinaryUser
from lib.sandbox import make_repo, sandbox_env
from lib.sandbox import sandbox_sh as run

pytestmark = pytest.mark.comet_only


# ---------------------------------------------------------------- --events FILE
def test_an_events_file_the_command_could_replace_is_refused(rt, workdir, gcfg):
    """Rows 01/11: `--events ws/ev.jsonl`; the command replaced it with a
    symlink to a shell start-up file, and the runtime appended the events
    (with a `$(...)` of the command's in `requested`) to that file."""
    ws = make_repo(workdir)
    rc_file = workdir / "bashrc"
    rc_file.write_text("# the user's\n")
    res = run(rt, ws, f"rm -f ev.jsonl; ln -s {rc_file} ev.jsonl; mount -t tmpfs x '/$(id)'",
              events=ws / "ev.jsonl", env=sandbox_env(gcfg))
    assert res.rc == 125, (res.rc, res.err)
    assert "--events" in res.err and "which the command can write" in res.err, res.err
    assert rc_file.read_text() == "# the user's\n"


def test_an_events_path_that_is_a_symlink_or_a_fifo_is_refused(rt, workdir, gcfg):
    """Rows 01/31: a symlink planted at the path, or a FIFO (the reporter
    blocked on it and later refusals had no event)."""
    ws = make_repo(workdir)
    target = workdir / "target"
    target.write_text("")
    link = workdir / "ev-link.jsonl"
    link.symlink_to(target)
    res = run(rt, ws, "true", events=link, env=sandbox_env(gcfg))
    assert res.rc == 125 and "is a symlink" in res.err, (res.rc, res.err)
    assert target.read_text() == ""
    fifo = workdir / "ev.fifo"
    os.mkfifo(fifo)
    res = run(rt, ws, "true", events=fifo, env=sandbox_env(gcfg), timeout=30)
    assert res.rc == 125 and "not a regular file" in res.err, (res.rc, res.err)


def test_a_sudo_callers_events_file_is_opened_as_the_caller(rt, workdir, gcfg):
    """Row 17: root with SUDO_UID runs the command as the user; the events
    file was opened by root, so a user's symlink (or path) could name a
    root-only file. It is opened with the caller's own ids now."""
    ws = make_repo(workdir)
    secret = workdir / "root-only"
    secret.write_text("root's\n")
    os.chmod(secret, 0o600)
    with OrdinaryUser() as user:
        os.chmod(workdir, 0o755)
        os.chmod(ws, 0o777)
        env = sandbox_env(gcfg, SUDO_UID=str(user.uid), SUDO_GID=str(user.gid), SUDO_USER=user.name,
                          HOME=str(user.home))
        res = run(rt, ws, "true", events=secret, env=env)
        assert res.rc == 125 and "EACCES" in res.err, (res.rc, res.err)
        assert secret.read_text() == "root's\n"
        mine = workdir / "user-events.jsonl"  # a new file is the caller's
        os.chmod(workdir, 0o777)
        res = run(rt, ws, "touch .git/hooks/pre-commit", events=mine, env=env)
        assert res.rc != 125, res.err
        assert mine.stat().st_uid == user.uid
        assert '"surface":"fs.write"' in mine.read_text()


# ---------------------------------------------------------------- the cap
def test_a_flood_does_not_hide_the_refusal_that_matters(rt, workdir, gcfg):
    """Row 16: 9,000 refused mkdirs, then a write to .git/hooks/pre-commit:
    that write had no event, and the summary counted only what was written."""
    ws = make_repo(workdir)
    ev = workdir / "ev16.jsonl"
    flood = ('for (1..9000) { mkdir("/usr/comet-rt12-$_") } '
             'open(F, q{>}, q{.git/hooks/pre-commit}) and print F "evil"')
    res = run(rt, ws, ["perl", "-e", flood], events=ev, env=sandbox_env(gcfg), timeout=300)
    assert not (ws / ".git/hooks/pre-commit").exists()
    lines = [json.loads(l) for l in ev.read_text().splitlines() if l]
    hooks = [e for e in lines if e.get("requested", "").endswith("/.git/hooks/pre-commit")]
    assert hooks, f"no event for the hook write among {len(lines)} lines"
    refused = [l for l in res.err.splitlines() if "sandbox: refused" in l and "fs.write" in l]
    assert refused, res.err
    n = int(refused[0].split("refused ")[1].split()[0])
    assert n >= 9001, refused[0]


# ---------------------------------------------------------------- the parent
def test_the_sandbox_dies_with_its_parent(workdir, gcfg):
    """Row 22: a SIGKILLed harness left the runtime and the command running."""
    ws = make_repo(workdir)
    marker = workdir / "still-running"
    root = workdir / "state22"
    harness = subprocess.Popen(
        ["/bin/sh", "-c", f'"$0" --root {root} sandbox --workspace {ws} -- /bin/sh -c '
                          f'"sleep 8; touch {marker}" & echo $!; wait', str(cfg.RUNTIME)],
        stdout=subprocess.PIPE, text=True, env=sandbox_env(gcfg))
    runtime_pid = int(harness.stdout.readline())
    time.sleep(1.0)
    os.kill(harness.pid, signal.SIGKILL)
    harness.wait()
    deadline = time.time() + 4  # well before the command would end by itself
    while time.time() < deadline:
        try:
            os.kill(runtime_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(runtime_pid, signal.SIGKILL)
        pytest.fail("the runtime outlived its parent")
    time.sleep(8)
    assert not marker.exists(), "the command outlived the harness"


# ---------------------------------------------------------------- workspaces
@pytest.mark.parametrize("where", ["/run/comet-rt12-test", "/opt/comet-rt12-test"])
def test_a_system_directory_is_no_workspace(rt, gcfg, where):
    """Row 07: `--workspace /run/...` let uid 0 write where systemd and udev
    read units and rules."""
    d = Path(where)
    d.mkdir()
    try:
        res = run(rt, d, "touch x.conf", env=sandbox_env(gcfg))
        assert res.rc == 125 and "the system directory" in res.err, (res.rc, res.err)
        assert not (d / "x.conf").exists()
        verdict = rt("sandbox", "--can-auto-allow", "--workspace", str(d), "--", "touch", "x.conf",
                     env=sandbox_env(gcfg))
        assert json.loads(verdict.out)["auto_allow"] is False, verdict.out
    finally:
        for p in d.iterdir():
            p.unlink()
        d.rmdir()


def test_another_accounts_home_is_no_workspace(rt, gcfg):
    with OrdinaryUser() as user:
        res = run(rt, user.home, "touch .bashrc", env=sandbox_env(gcfg))
        assert res.rc == 125 and "of another account" in res.err, (res.rc, res.err)
        assert not (user.home / ".bashrc").exists()


def test_home_names_the_host_runs_stay_read_only_under_write_home(rt, workdir):
    """Row 10: a custom profile's `write: ["~"]` left ~/bin (on PATH through
    Debian's .profile) and ~/.vim/plugin writable."""
    home = workdir / "home"
    ws = home / "proj"
    ws.mkdir(parents=True)
    g = workdir / "g.yaml"
    g.write_text('profiles:\n  homey: {extends: workspace, write: ["~"]}\n')
    script = ("mkdir -p ~/bin ~/.vim/plugin ~/.cargo; echo evil > ~/bin/ls; "
              "echo evil > ~/.vim/plugin/x.vim; echo evil > ~/.cargo/env; echo ok > ~/notes")
    res = run(rt, ws, script, profile="homey",
              env=sandbox_env(g, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config")))
    assert (home / "notes").read_text() == "ok\n", res.err  # the rest of ~ is writable
    for p in ("bin/ls", ".vim/plugin/x.vim", ".cargo/env"):
        assert not (home / p).exists() or "evil" not in (home / p).read_text(), p
