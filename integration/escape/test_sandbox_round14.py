"""Attacks of red team round 14 on `sandbox` (docs/sandbox.md), each as the
attacker did it, asserting on what the host holds afterwards; each failed
on the round's binary (3d4ae9a's sandbox code, /tmp/rt-bin14).

- Row 5/5b: a file the caller gives as stdin (`< FILE`, read-only) was
  reopened for writing through /proc/self/fd/0: the Landlock exception for
  the caller's stdio granted write on it, and the reopen goes through the
  caller's mount, past a protected path's read-only bind.
- Rows 1, 3 and 7: a denied file's temporary copies, a program behind a
  dangling link, the host git's HEAD.lock (each test says what broke).
  Rows 2 and 2b are test_sandbox_nested_git.py's walk test."""
from __future__ import annotations

import json

import pytest

from lib.sandbox import git, make_repo, sandbox_env, sandbox_running, wait_file
from lib.sandbox import sandbox_sh as run

pytestmark = pytest.mark.comet_only


@pytest.mark.parametrize("profile", ["workspace", "read-only", "strict"])
def test_a_file_given_as_stdin_is_not_made_writable(rt, workdir, gcfg, profile):
    ws = make_repo(workdir)
    tool = workdir / "tool.sh"
    tool.write_text("#!/bin/sh\necho harmless\n")
    res = run(rt, ws, 'cat > /dev/null; printf "echo INJECTED\\n" > /proc/self/fd/0; '
              'echo "w=$?"; printf x >> /dev/stdin; echo "a=$?"', profile=profile,
              env=sandbox_env(gcfg), stdin=tool)
    assert tool.read_text() == "#!/bin/sh\necho harmless\n", res
    assert "w=0" not in res.out and "a=0" not in res.out, res.out
    assert "fs.write" in res.err, res.err  # refused and reported


def test_a_protected_file_given_as_stdin_stays_read_only(rt, workdir, gcfg):
    ws = make_repo(workdir)
    before = (ws / ".git" / "config").read_text()
    res = run(rt, ws, 'cat >/dev/null; printf "[core]\\n\\tfsmonitor = touch pwned\\n" '
              '>> /proc/self/fd/0; echo "w=$?"', env=sandbox_env(gcfg),
              stdin=ws / ".git" / "config")
    assert (ws / ".git" / "config").read_text() == before, res
    assert "w=0" not in res.out, res.out
    git(ws, "status", check=False)
    assert not (ws / "pwned").exists()


def test_stdio_still_works_as_the_fds_were_opened(rt, workdir, gcfg):
    # `> /dev/stdout` into a file the caller opened for writing, and reading
    # /dev/stdin of a file given as stdin, keep working.
    ws = make_repo(workdir)
    data = workdir / "in.txt"
    data.write_text("payload\n")
    res = run(rt, ws, 'cat /dev/stdin && echo to-stdout >> /dev/stdout || exit 9',
              env=sandbox_env(gcfg), stdin=data)
    assert res.rc == 0, res
    assert res.out == "payload\nto-stdout\n", res.out


def test_the_host_gits_head_lock_is_not_written_into(rt, workdir, gcfg):
    """Row 7: while the host's `git checkout` held .git/HEAD.lock, the
    command opened it for writing, and its content became .git/HEAD. The
    host's lock is there (as git holds it) when the command runs: opening,
    linking or renaming onto it is refused; the command's own git may still
    make its HEAD.lock new (O_EXCL), so `git commit` inside keeps working."""
    ws = make_repo(workdir)
    lock = ws / ".git" / "HEAD.lock"
    lock.write_text("ref: refs/heads/master\n")
    script = ('printf "ref: refs/heads/evil\\n" > .git/HEAD.lock; echo "w=$?"; '
              'printf x >> .git/HEAD.lock; echo "a=$?"; echo e > e; mv -f e .git/HEAD.lock; '
              'echo "m=$?"; ln -f a.txt .git/HEAD.lock 2>/dev/null; echo "l=$?"')
    res = run(rt, ws, script, env=sandbox_env(gcfg))
    assert lock.read_text() == "ref: refs/heads/master\n", res
    for k in ("w", "a", "m", "l"):
        assert f"{k}=0" not in res.out, res.out
    assert "HEAD.lock" in res.err, res.err  # reported
    lock.unlink()
    res = run(rt, ws, "echo y > b.txt && git add b.txt && git -c user.email=a@b -c user.name=a "
              "commit -qm inside && echo commit-ok", env=sandbox_env(gcfg))
    assert "commit-ok" in res.out, res
    assert not lock.exists()


def test_a_denied_files_temporary_copies_stay_hidden(rt, workdir, var_dir):
    """Row 1: while the host's `chage` or `useradd` ran, the command read
    /etc/shadow+ (shadow-utils' new copy, renamed over /etc/shadow after),
    as new names show in the overlay view of /etc. Here a denied file in a
    directory of the host's (/var/tmp, overlaid like /etc): its copies made
    during the run (NAME+, nNAME as PAM's, NAME~) are not there inside; any
    other new file still is."""
    secret = var_dir / "shadow"
    secret.write_text("old secret\n")
    ws = workdir / "ws"
    ws.mkdir()
    g = workdir / "global.yaml"
    g.write_text(f"deny: [{secret}]\n")
    script = (f"echo > ready; while [ ! -e go ]; do sleep 0.02; done; "
              f"for f in shadow+ nshadow 'shadow~' shadow.edit .shadow.swp other; do "
              f"echo \"$f:\"; cat {var_dir}/\"$f\"; done; "
              f"ls -la {var_dir}")
    with sandbox_running(rt, ws, script, env=sandbox_env(g)) as result:
        wait_file(ws / "ready", 30)
        # shadow.edit: vipw -s's copy; .shadow.swp: vim's (red team round 15)
        for name in ("shadow+", "nshadow", "shadow~", "shadow.edit", ".shadow.swp"):
            (var_dir / name).write_text("NEW SECRET\n")
        (var_dir / "other").write_text("a new file\n")
    res = result["res"]
    assert "NEW SECRET" not in res.out and "old secret" not in res.out, res.out
    assert "a new file" in res.out, res.out
    assert "shadow+" not in res.out.split("total", 1)[-1], res.out


def test_a_program_behind_a_dangling_link_runs_as_the_verdict_says(rt, workdir, gcfg):
    """Row 3: core.fsmonitor = tools/fsmon.sh with `tools` a dangling link
    (-> gone): --can-auto-allow said true while every run exited 125
    (`create the protected directory .../tools: EEXIST`). The protected
    program is where the link leads (gone/fsmon.sh): its first missing
    directory is the placeholder, so the run starts, as the verdict says,
    and the command cannot make the program the host's git would run."""
    ws = make_repo(workdir)
    git(ws, "config", "core.fsmonitor", "tools/fsmon.sh")
    (ws / "tools").symlink_to("gone")
    verdict = rt("sandbox", "--can-auto-allow", "--workspace", str(ws), "--", "true",
                 env=sandbox_env(gcfg))
    v = json.loads(verdict.out)
    res = run(rt, ws, "mkdir -p gone 2>/dev/null; printf 'touch pwned' > tools/fsmon.sh; "
              "echo \"w=$?\"", env=sandbox_env(gcfg))
    assert res.rc == 0 and v["auto_allow"] is True, (v, res)
    assert "w=0" not in res.out, res.out
    # no placeholder now: the init refuses making gone/fsmon.sh (a new,
    # empty directory on the way to it may be made)
    assert not (ws / "gone" / "fsmon.sh").exists()
    git(ws, "status", check=False)
    assert not (ws / "pwned").exists()
