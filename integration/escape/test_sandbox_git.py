"""Attack: make the host run, after the sandbox has ended, something the
confined command wrote (issue 22 item 1; Cursor CVE-2026-26268, Claude Code
CVE-2026-25725). In the workspace profile a command set core.fsmonitor and
wrote .git/hooks/pre-commit; the host's next `git status` ran them, as the
invoking user (root in the trial).

Each test plays the attacker inside the sandbox, then plays the host: it
runs git (or reads the file) *outside* the sandbox and checks that nothing
the attacker wrote is there or runs. Refusals must be EROFS/EACCES (EBUSY
for a rename over a protected file) and reported as fs.write events."""
from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path

import pytest
from lib.sandbox import git, sandbox_env

pytestmark = pytest.mark.comet_only

PROFILES = ["workspace", "strict"]  # the profiles that write the workspace
def host_git_runs_nothing(ws: Path, marker: Path):
    """The host's git, as shells and IDEs run it: status, commit, diff."""
    (ws / "b.txt").write_text("b\n")
    git(ws, "status", check=False)
    git(ws, "add", "b.txt", check=False)
    git(ws, "commit", "-qm", "host", check=False)
    git(ws, "diff", "HEAD~1", check=False)
    assert not marker.exists(), "the host's git ran what the sandbox wrote"


@pytest.mark.parametrize("profile", PROFILES)
def test_git_config_and_hooks_written_inside_never_run_on_the_host(sandbox, repo, workdir, profile):
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    attack = f"""
git config core.fsmonitor 'touch {marker}'; echo "fsmonitor=$?"
git config core.hooksPath /tmp; echo "hookspath=$?"
printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/pre-commit; echo "hook=$?"
chmod +x .git/hooks/pre-commit 2>/dev/null
printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/post-checkout; echo "hook2=$?"
mv .git/hooks .git/hooks.old; echo "mvhooks=$?"
mv .git/config .git/config.old; echo "mvconfig=$?"
printf '[core]\\n\\tfsmonitor = touch {marker}\\n' > .git/config.worktree; echo "worktree=$?"
printf '[filter "x"]\\n\\tclean = touch {marker}\\n' >> .git/info/attributes; echo "info=$?"
echo '* filter=x diff=x' > .gitattributes; echo "gitattributes=$?"
printf '[submodule "s"]\\n\\tpath = s\\n\\turl = ext::sh -c touch%% {marker}\\n' > .gitmodules; echo "gitmodules=$?"
"""
    res, evs = sandbox(repo, attack, profile)
    for step in ("fsmonitor", "hookspath", "hook", "hook2", "mvhooks", "mvconfig", "worktree",
                 "info", "gitattributes", "gitmodules"):
        assert f"{step}=0" not in res.out, (step, res.out, res.err)
    # The host's view after the run: nothing of the attacker's.
    cfg = (repo / ".git" / "config").read_text()
    assert "fsmonitor" not in cfg and "hooksPath" not in cfg, cfg
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert not (repo / ".git" / "config.worktree").exists()
    for name in (".gitattributes", ".gitmodules"):
        assert not (repo / name).exists(), f"{name} left on the host"
    assert (repo / ".git" / "hooks").is_dir()
    host_git_runs_nothing(repo, marker)
    written = [e for e in evs if e["surface"] == "fs.write"]
    assert written, res.err
    assert any(e["matched_entry"] == str(repo / ".git" / "hooks") for e in written), written
    assert any(e["requested"] == str(repo / ".git" / "config") for e in written), written
    assert all(e["errno"] in ("EROFS", "EACCES", "EBUSY", "EXDEV") for e in written), written


def test_agent_and_editor_config_cannot_be_created_in_the_workspace(sandbox, repo):
    attack = """
for d in .vscode .idea .claude .cursor .comet; do
  mkdir -p $d 2>/dev/null; echo '{}' > $d/settings.json && echo "made $d"
done
echo 'export X=1' > .envrc && echo "made .envrc"
"""
    res, evs = sandbox(repo, attack)
    assert "made" not in res.out, res.out
    for name in (".vscode", ".idea", ".claude", ".cursor", ".envrc"):
        assert not (repo / name).exists(), f"{name} left on the host (placeholder not removed)"
    assert {e["matched_entry"] for e in evs if e["surface"] == "fs.write"} >= {
        str(repo / ".vscode"), str(repo / ".envrc")}, evs


def test_no_repository_can_be_created_where_there_was_none(sandbox, workdir):
    ws = workdir / f"plain-{secrets.token_hex(3)}"
    ws.mkdir()
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    res, _ = sandbox(ws, f"git init -q . ; git config core.fsmonitor 'touch {marker}'; "
                         "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit; echo done")
    assert not (ws / ".git").exists(), "a .git was left on the host"
    # The host's git in that directory: not a repository.
    assert git(ws, "status", check=False).returncode != 0
    assert not marker.exists()


def test_a_linked_worktree_gitdir_file_is_protected(sandbox, repo, workdir):
    wt = workdir / f"wt-{secrets.token_hex(3)}"
    git(repo, "worktree", "add", "-q", str(wt))
    before = (wt / ".git").read_text()
    evil = workdir / f"evil-{secrets.token_hex(3)}"
    res, _ = sandbox(wt, f"echo 'gitdir: {evil}' > .git; echo rc=$?; rm -f .git; echo rm=$?")
    assert (wt / ".git").read_text() == before
    assert "rc=0" not in res.out and "rm=0" not in res.out, res.out


def test_ordinary_git_work_still_works_inside(sandbox, repo):
    res, evs = sandbox(repo, "echo c > c.txt && git add c.txt && git commit -qm inside && "
                             "git log --oneline | wc -l && git status --short")
    assert res.rc == 0, res.err
    assert res.out.split()[0] == "2", res.out
    assert git(repo, "log", "--oneline").stdout.count("\n") == 2
    assert not [e for e in evs if e["surface"] == "fs.write"], evs


def test_auto_allow_always_asks_about_protected_writes(rt, repo):
    env = sandbox_env()
    for cmd in (["git", "config", "core.fsmonitor", "x"],
                ["sh", "-c", "echo x > .git/hooks/pre-commit"],
                ["cp", "/tmp/x", ".git/hooks/pre-commit"],
                ["sh", "-c", "echo '* filter=x' >> .gitattributes"],
                ["tee", ".envrc"]):
        res = rt("sandbox", "--workspace", str(repo), "--can-auto-allow", "--", *cmd, env=env)
        v = json.loads(res.out)
        assert v["auto_allow"] is False and v["matched_rule"] == "protected-path-write", (cmd, v)
    res = rt("sandbox", "--workspace", str(repo), "--can-auto-allow", "--", "git", "status", env=env)
    assert json.loads(res.out)["auto_allow"] is True


def test_the_home_directory_is_never_the_workspace_whatever_HOME_says(rt, workdir):
    # Red team round 2: the check followed $HOME; a harness may set its own.
    import pwd
    home = pwd.getpwuid(os.getuid()).pw_dir
    env = sandbox_env()
    env["HOME"] = str(workdir)
    res = rt("sandbox", "--workspace", home, "--", "true", env=env)
    assert res.rc == 125 and "home directory" in res.err, res
    v = rt("sandbox", "--workspace", home, "--can-auto-allow", "--", "true", env=env)
    assert json.loads(v.out)["auto_allow"] is False
