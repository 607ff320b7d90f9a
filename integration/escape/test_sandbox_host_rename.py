"""Attack: a denied file the host replaces by rename while a sandbox runs.

Denied files are hidden by a mount on their name. Bound on the host's own
dentry, the kernel detaches that mount in every mount namespace when the
host renames a file over the name (Linux 3.18 and later), and the sandbox
then reads the new file for the rest of its run. `useradd` rewrites
/etc/shadow and /etc/gshadow so; a clean-clone CI run read /etc/gshadow
that way while a parallel test created a user. A read-only top-level
directory holding denied paths is now an overlay of its own, whose
dentries the host cannot rename over (docs/sandbox.md "Denied paths and
host renames"). Failed on 65b5bb6: the new file was read."""
from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from lib.sandbox import sandbox_env, sandbox_running, wait_file

pytestmark = pytest.mark.comet_only


# strict reads no /var: a custom profile reads the directory itself (an
# overlay at a deeper level than the top).
@pytest.mark.parametrize("profile", ["workspace", "read-only", "strict"])
def test_a_denied_file_renamed_over_on_the_host_stays_hidden(rt, workdir, var_dir, profile):
    secret, pub = var_dir / "secret", var_dir / "pub"
    secret.write_text("old secret\n")
    pub.write_text("old pub\n")
    ws = workdir / "ws"
    ws.mkdir()
    os.chmod(ws, 0o777)
    g = workdir / "global.yaml"
    g.write_text(f"deny: [{secret}]\n"
                 f"profiles:\n  strictx: {{extends: strict, read: [{var_dir}]}}\n")
    # the host's side of the handshake is the workspace, visible in every profile
    script = (f"echo > {ws}/ready 2>/dev/null || echo > /tmp/ready; "
              f"while [ ! -e {ws}/go ]; do sleep 0.02; done; "
              f"echo secret:; cat {secret}; echo rc=$?; echo pub:; cat {pub}; "
              f"echo new:; cat {var_dir}/new")
    run_as = "strictx" if profile == "strict" else profile
    with sandbox_running(rt, ws, script, env=sandbox_env(g), profile=run_as) as result:
        # read-only and strict cannot write the workspace: give the run a
        # moment, then rename anyway (a late rename is the same attack).
        if not wait_file(ws / "ready", 20 if profile == "workspace" else 3):
            time.sleep(1.0)
        # what useradd does to /etc/shadow: a new file renamed over the name
        tmp = var_dir / ".secret.new"
        tmp.write_text("NEW SECRET\n")
        os.rename(tmp, secret)
        (var_dir / "new").write_text("a new file\n")
    res = result["res"]
    assert res.rc in (0, 1), res
    assert "NEW SECRET" not in res.out and "old secret" not in res.out, res.out
    assert "Permission denied" in res.err, res.err
    # the rest of the directory still reads; a file added later appears
    assert "pub:\nold pub\n" in res.out, res.out
    assert "a new file" in res.out, res.out


def test_a_protected_git_config_the_host_rewrites_stays_read_only(rt, workdir):
    """The same in a writable tree, where no overlay can go: the host's git
    rewrites .git/config by rename (config.lock) while the sandbox runs; its
    read-only mount comes off, and the command wrote a core.fsmonitor that
    the host's next `git status` ran. The sandbox's init, which makes every
    write-open, create and rename (the git rule), answers EROFS for a
    protected name whose mount is gone. Failed on 2816fb6: the append, the
    rename and the new hook all landed; and on b1d34e2 a hard link made
    inside .git to the unmasked config was written through."""
    from lib.packs import events_of
    from lib.sandbox import GIT_ENV, git, make_repo
    ws = make_repo(workdir)
    os.chmod(ws, 0o777)
    g = workdir / "global.yaml"
    g.write_text("")
    events = workdir / "events.jsonl"
    script = ("echo > ready; while [ ! -e go ]; do sleep 0.02; done; "
              "printf '[core]\\n\\tfsmonitor = echo PWNED-APPEND\\n' >> .git/config; echo append=$?; "
              "printf '[core]\\n\\tfsmonitor = echo PWNED-MV\\n' > /tmp/cfg; "
              "cat /tmp/cfg > cfg.new; mv -f cfg.new .git/config; echo mv=$?; "
              "printf 'echo PWNED-HOOK\\n' > .git/hooks/pre-commit; echo hook=$?; "
              "ln .git/config .git/cfg.link; echo link=$?; "
              "printf '[core]\\n\\tfsmonitor = echo PWNED-LINK\\n' >> .git/cfg.link; "
              "echo ok > a.txt; echo work=$?")
    env = {**sandbox_env(g), **GIT_ENV}
    with sandbox_running(rt, ws, script, env=env, events=events) as result:
        assert wait_file(ws / "ready", 30)
        # what the host's `git config` does: .git/config.lock renamed over
        git(ws, "config", "user.name", "host")
        # and an editor or a tool replacing .git/hooks the same way
        hooks_new = ws / ".git" / "hooks.new"
        hooks_new.mkdir()
        os.rename(ws / ".git" / "hooks", ws / ".git" / "hooks.old")
        os.rename(hooks_new, ws / ".git" / "hooks")
    res = result["res"]
    cfg = (ws / ".git" / "config").read_text()
    assert "PWNED" not in cfg, cfg
    assert "name = host" in cfg, cfg
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    for what in ("append", "mv", "hook", "link"):
        assert f"{what}=0" not in res.out, res
    assert "work=0" in res.out, res  # the rest of the workspace stays writable
    assert (ws / "a.txt").read_text() == "ok\n"
    assert res.err.count("Read-only file system") >= 2, res.err
    # reported, and the run says so
    ev = events_of(events)
    writes = [e for e in ev if e.get("surface") == "fs.write"]
    assert any(".git/config" in json.dumps(e) for e in writes), ev
    assert "refused" in res.err, res.err
    # the host's git is unharmed
    st = subprocess.run(["git", "-C", str(ws), "status", "--short"], capture_output=True,
                        text=True, env=GIT_ENV, timeout=30)
    assert "PWNED" not in st.stdout + st.stderr


def test_the_hosts_git_lock_file_is_not_a_way_in(rt, workdir):
    """Red team round 13: the host's `git config` writes .git/config.lock
    and renames it over .git/config; a command that opened the lock file
    for writing (or hard-linked it) while it was there wrote into what then
    became .git/config. PATH.lock of every protected path is refused like
    the path itself (EROFS), and the host's git still makes it."""
    from lib.packs import events_of
    from lib.sandbox import GIT_ENV, make_repo
    ws = make_repo(workdir)
    os.chmod(ws, 0o777)
    g = workdir / "global.yaml"
    g.write_text("")
    events = workdir / "events.jsonl"
    lock = ws / ".git" / "config.lock"
    script = ("echo > ready; while [ ! -e go ]; do sleep 0.02; done; "
              "printf '[core]\\n\\tfsmonitor = echo PWNED-LOCK\\n' >> .git/config.lock; "
              "echo lock=$?; ln .git/config.lock .git/lk; echo link=$?; echo > done")
    env = {**sandbox_env(g), **GIT_ENV}
    with sandbox_running(rt, ws, script, env=env, events=events) as result:
        assert wait_file(ws / "ready", 30)
        # what git's lockfile API does: O_EXCL create, write, later rename
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, (ws / ".git" / "config").read_bytes() + b"[user]\n\tname = host\n")
        os.close(fd)
        (ws / "go").write_text("")
        assert wait_file(ws / "done", 30)
        os.rename(lock, ws / ".git" / "config")
    res = result["res"]
    cfg = (ws / ".git" / "config").read_text()
    assert "PWNED" not in cfg and "name = host" in cfg, cfg
    assert "lock=0" not in res.out and "link=0" not in res.out, res
    assert not (ws / ".git" / "lk").exists()
    assert any(e.get("requested", "").endswith("/.git/config.lock") for e in events_of(events))
