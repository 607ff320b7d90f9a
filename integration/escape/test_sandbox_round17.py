"""Attacks on what the host's git takes from the harness's environment
besides its config variables (docs/sandbox.md, the git config row; left
"not looked at" by red team round 16, closed 2026-12-07):
GIT_DIR and GIT_COMMON_DIR naming a git directory in the workspace that
does not exist yet, or is not the workspace's `.git`, and the variables
that name a program or a directory of programs (GIT_SSH_COMMAND,
GIT_EXEC_PATH, GIT_TEMPLATE_DIR, ...), each judged as the config key that
says the same.

Every test plays the attacker inside, then the host's git outside with the
same environment, and asserts on what the host ran and on the refusals."""
from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

import pytest
from lib.sandbox import GIT_ENV, git, sandbox_env, sandbox_running, wait_file

pytestmark = pytest.mark.comet_only


def host_git(repo: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                          env={**GIT_ENV, **env}, timeout=30)


@pytest.mark.parametrize("var", ["GIT_DIR", "GIT_COMMON_DIR"])
def test_a_git_dir_the_environment_names_that_does_not_exist_yet_is_protected(
        sandbox, repo, workdir, var):
    # the harness runs its git with GIT_DIR=meta (a repository it has not
    # made yet): the command makes it, with a hook and an fsmonitor
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    env = {var: str(repo / "meta")}
    res, evs = sandbox(repo, "mkdir -p meta/hooks meta/objects meta/refs; "
                             "echo 'ref: refs/heads/main' > meta/HEAD; "
                             f"printf '#!/bin/sh\\ntouch {marker}\\n' > meta/hooks/pre-commit; "
                             "echo hook=$?; chmod +x meta/hooks/pre-commit; "
                             f"printf '[core]\\n\\tfsmonitor = touch {marker}\\n' > meta/config; "
                             "echo config=$?; echo ok > notes; echo ordinary=$?",
                       extra_env=env)
    assert "hook=0" not in res.out and "config=0" not in res.out, res
    assert "ordinary=0" in res.out, res
    assert any(e.get("surface") == "fs.write" and "/meta/" in e["requested"] for e in evs), evs
    host_git(repo, env, "status")
    host_git(repo, env, "commit", "-q", "--allow-empty", "-m", "host")
    assert not marker.exists(), "the host's git ran what the sandbox wrote"
    # nothing but the empty directories the command may make on the way
    for name in ("config", "HEAD", "hooks", "info"):
        assert not (repo / "meta" / name).exists(), name


def test_a_git_dir_elsewhere_in_the_workspace_is_protected(sandbox, repo, workdir):
    # GIT_DIR=store/repo.git, a bare-like git directory that is no nested
    # repository's `.git`, with its work tree the workspace
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    gd = repo / "store" / "repo.git"
    gd.parent.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(gd)], check=True, env=GIT_ENV)
    env = {"GIT_DIR": "store/repo.git", "GIT_WORK_TREE": str(repo)}
    res, _ = sandbox(repo, f"printf '#!/bin/sh\\ntouch {marker}\\n' > store/repo.git/hooks/pre-commit;"
                           " echo hook=$?; git config core.fsmonitor 'touch " + str(marker) + "';"
                           " echo config=$?", extra_env=env)
    assert "hook=0" not in res.out and "config=0" not in res.out, res
    host_git(repo, env, "status")
    host_git(repo, env, "commit", "-q", "--allow-empty", "-m", "host")
    assert not marker.exists(), "the host's git ran what the sandbox wrote"


@pytest.mark.parametrize("var,value,target", [
    ("GIT_SSH_COMMAND", "tools/ssh.sh -o BatchMode=yes", "tools/ssh.sh"),
    ("GIT_ASKPASS", "{repo}/tools/askpass", "tools/askpass"),
    ("GIT_EXEC_PATH", "{repo}/gitexec", "gitexec/git-foo"),
    ("GIT_TEMPLATE_DIR", "{repo}/tpl", "tpl/hooks/post-checkout"),
])
def test_a_program_the_environment_names_is_protected(sandbox, repo, var, value, target):
    (repo / "tools").mkdir()
    for f in ("ssh.sh", "askpass"):
        (repo / "tools" / f).write_text("#!/bin/sh\nexit 0\n")
    env = {var: value.format(repo=repo)}
    res, evs = sandbox(repo, f"mkdir -p $(dirname {target}); echo pwned > {target}; "
                             "echo wrote=$?; echo ok > notes; echo ordinary=$?", extra_env=env)
    assert "wrote=0" not in res.out and "ordinary=0" in res.out, res
    assert "pwned" not in (repo / target).read_text() if (repo / target).exists() else True
    assert any(e.get("surface") == "fs.write" for e in evs), evs


def test_the_workspaces_own_git_dir_in_the_environment_keeps_git_working(sandbox, repo):
    # GIT_DIR=.git (what some harnesses export): add and commit still work
    env = {"GIT_DIR": str(repo / ".git")}
    res, _ = sandbox(repo, "echo x > f && git add f && git commit -q -m c && echo committed",
                     extra_env=env)
    assert "committed" in res.out, res
    assert git(repo, "log", "-1", "--format=%s").stdout.strip() == "c"


@pytest.mark.parametrize("git_repo", [True, False], ids=["repository", "plain"])
def test_protected_names_the_host_removes_during_a_run_stay_refused(rt, workdir, gcfg, git_repo):
    """docs/sandbox.md listed it open since red team rounds 8 and 9: a host
    process that removes protected names while a sandbox runs (`git clean
    -fdx` in the workspace, another agent's `rm -rf`) takes their read-only
    mounts with them. The init still refuses the names (EROFS, reported).
    Here an untracked `.envrc` and `.vscode/` that existed at the start;
    the missing ones have no placeholder to remove since 2026-12-07."""
    ws = workdir / "ws"
    ws.mkdir()
    if git_repo:
        git(ws, "init", "-q")
    (ws / ".envrc").write_text("")
    (ws / ".vscode").mkdir()
    script = ("echo > ready; while [ ! -e go ]; do sleep 0.02; done; "
              "echo 'echo pwned' > .envrc; echo envrc=$?; "
              "mkdir -p .vscode; echo vsdir=$?; echo '{}' > .vscode/tasks.json; echo tasks=$?; "
              "echo x > .mcp.json; echo mcp=$?")
    events = workdir / "events.jsonl"
    with sandbox_running(rt, ws, script, env=sandbox_env(gcfg), events=events) as result:
        assert wait_file(ws / "ready", 30)
        if git_repo:
            subprocess.run(["git", "clean", "-fdxq", "-e", "ready"], cwd=ws, check=True,
                           env=GIT_ENV)
        else:
            (ws / ".envrc").unlink()
            os.rmdir(ws / ".vscode")
        assert not (ws / ".envrc").exists() and not (ws / ".vscode").exists()
    res = result["res"]
    assert "envrc=0" not in res.out and "vsdir=0" not in res.out, res
    assert "tasks=0" not in res.out and "mcp=0" not in res.out, res
    for name in (".envrc", ".vscode", ".mcp.json"):
        assert not (ws / name).exists(), name
    evs = [line for line in events.read_text().splitlines() if '"fs.write"' in line]
    assert any(".envrc" in line for line in evs), evs
    assert any(".mcp.json" in line for line in evs), evs


def test_no_placeholder_shows_in_the_workspace_or_a_commit(sandbox, repo):
    """The missing protected names had empty placeholders on the host while
    a sandbox ran: `git add -A && git commit` inside committed eight empty
    files (.envrc, .gitattributes, .gitmodules, .mcp.json, ...), and `ls
    -A` showed them. The git rule's init refuses those names instead; none
    is made. A symlink, a file or a moved directory in the place of a
    missing directory on the way to one is refused too."""
    (repo / "a").write_text("a\n")
    res, evs = sandbox(repo, "ls -A; git add -A && git commit -q -m agent && "
                             "git show --name-only --format= HEAD; echo committed=$?; "
                             "mkdir gone; mv gone .vscode; echo mv=$?; ln -s /tmp .claude; "
                             "echo ln=$?; echo x > .envrc; echo envrc=$?")
    listed = set(res.out.split("committed=")[0].split())  # ls -A, then the commit's files
    assert "a" in listed and not listed & {".envrc", ".gitattributes", ".gitmodules", ".mcp.json",
                                           ".vscode", ".claude", ".comet", ".idea"}, res.out
    assert "committed=0" in res.out and "mv=0" not in res.out and "ln=0" not in res.out, res
    assert "envrc=0" not in res.out, res
    assert not (repo / ".claude").exists() and not (repo / ".vscode").exists()
    assert len([e for e in evs if e.get("surface") == "fs.write"]) >= 3, evs
