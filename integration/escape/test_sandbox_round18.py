"""Attacks of red team round 18 (docs/sandbox.md, "Red team round 18"),
each of which got through on the round's binary (9bd9d29): refusals on the
way to a missing protected name went unreported; a git program path built
from an expansion with no `/` after it, one through `dir/..`, a hook link
through `dir/..`, a short option with its value attached, and
`core.worktree` moving the work tree's top.

Every test plays the attacker inside, then the host's git outside, and
asserts on what the host ran and on the refusals."""
from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

import pytest
from lib.sandbox import GIT_ENV, git, script

pytestmark = pytest.mark.comet_only


def host(repo: Path, *args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd or repo, capture_output=True, env=GIT_ENV, timeout=30)


def test_a_refusal_on_the_way_to_a_missing_name_is_reported(sandbox, repo):
    # core.fsmonitor = tools/deep/fsm.sh, nothing of it there: a symlink or
    # a renamed directory where `tools` or `tools/deep` would go is EROFS,
    # and now an fs.write event naming the protected name
    git(repo, "config", "core.fsmonitor", "tools/deep/fsm.sh")
    res, evs = sandbox(repo, "ln -s /tmp tools; echo ln=$?; mkdir y; mv y tools; echo mv=$?; "
                             "mkdir tools; ln -s /tmp tools/deep; echo deep=$?")
    assert "ln=0" not in res.out and "mv=0" not in res.out and "deep=0" not in res.out, res
    refused = [e for e in evs if e.get("surface") == "fs.write"]
    assert len(refused) >= 3, evs
    assert all(e["matched_entry"].endswith("tools/deep/fsm.sh") for e in refused), refused
    assert "refused 3 fs.write" in res.err, res.err


@pytest.mark.parametrize("value", ["tools/fsmonitor-$(uname -s).sh", "tools/m-${X}.sh",
                                   "bin/../tools/fsm.sh"])
def test_a_program_path_sh_builds_at_run_time_fails_closed(sandbox, repo, value):
    git(repo, "config", "core.fsmonitor", value)
    res, _ = sandbox(repo, "echo ran")
    assert res.rc == 125 and "ran" not in res.out, res
    assert "core.fsmonitor builds a program's path" in res.err, res.err


@pytest.mark.parametrize("key,value", [("include.path", "../cfgs/sub/../a.cfg"),
                                       ("core.hooksPath", "cfgs/sub/../../gh")])
def test_an_include_or_hooks_path_through_dir_dotdot_fails_closed(sandbox, repo, key, value):
    git(repo, "config", key, value)
    res, _ = sandbox(repo, "echo ran")
    assert res.rc == 125 and "ran" not in res.out, res


def test_a_hook_link_through_dir_dotdot_fails_closed(sandbox, repo, workdir):
    # .git/hooks/pre-commit -> ../../scripts/sub/../pc.sh: `scripts/sub`
    # replaced by a link made the hook the command's
    script(repo / "scripts" / "pc.sh")
    (repo / "scripts" / "sub").mkdir()
    os.symlink("../../scripts/sub/../pc.sh", repo / ".git" / "hooks" / "pre-commit")
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    res, _ = sandbox(repo, f"rm -rf scripts/sub; mkdir -p other/x; ln -s ../other/x scripts/sub; "
                           f"printf '#!/bin/sh\\ntouch {marker}\\n' > other/pc.sh; chmod +x "
                           f"other/pc.sh; echo done")
    assert res.rc == 125 and "done" not in res.out, res
    assert "leads through a directory's" in res.err, res.err
    host(repo, "commit", "-q", "--allow-empty", "-m", "host")
    assert not marker.exists()


@pytest.mark.parametrize("value", ["ssh -Ftools/sshcfg", "ssh -vFtools/sshcfg"])
def test_a_short_option_with_its_value_attached_is_protected(sandbox, repo, value):
    (repo / "tools").mkdir()
    (repo / "tools" / "sshcfg").write_text("\n")
    git(repo, "config", "core.sshCommand", value)
    res, evs = sandbox(repo, "echo 'ProxyCommand touch /tmp/x' > tools/sshcfg; echo wrote=$?")
    assert "wrote=0" not in res.out, res
    assert (repo / "tools" / "sshcfg").read_text() == "\n"
    assert any(e.get("surface") == "fs.write" for e in evs), evs


def test_core_worktree_moves_the_protected_programs(sandbox, repo, workdir):
    # core.worktree = ../src: git runs a relative core.fsmonitor from src/
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    (repo / "src").mkdir()
    git(repo, "config", "core.worktree", "../src")
    git(repo, "config", "core.fsmonitor", "tools/fsm.sh")
    res, _ = sandbox(repo, f"mkdir -p src/tools && printf '#!/bin/sh\\ntouch {marker}\\n' > "
                           f"src/tools/fsm.sh; echo wrote=$?; chmod +x src/tools/fsm.sh; "
                           f"echo x > src/.envrc; echo envrc=$?")
    assert "wrote=0" not in res.out and "envrc=0" not in res.out, res
    host(repo, "status", cwd=repo / "src")
    assert not marker.exists(), "the host's git ran what the sandbox wrote"


def test_git_work_tree_in_the_environment_moves_them_too(sandbox, repo):
    (repo / "src").mkdir()
    git(repo, "config", "core.fsmonitor", "tools/fsm.sh")
    res, _ = sandbox(repo, "mkdir -p src/tools && echo x > src/tools/fsm.sh; echo wrote=$?",
                     extra_env={"GIT_WORK_TREE": str(repo / "src")})
    assert "wrote=0" not in res.out, res


# ---- red team round 19 (against 3d3a05b) -----------------------------------

def verdict(rt, ws: Path, *cmd: str, env: dict | None = None) -> str:
    from lib.sandbox import sandbox_env
    r = subprocess.run([str(rt.binary), "--root", str(rt.root), "sandbox", "--can-auto-allow",
                        "--workspace", str(ws), "--", *cmd], capture_output=True, text=True,
                       env={**sandbox_env(), **GIT_ENV, **(env or {})}, timeout=60)
    return r.stdout.replace(" ", "")


@pytest.mark.parametrize("script", [
    "tar xf repo.tar -C /tmp && git -C /tmp/r push origin",
    "unzip -q r.zip -d /tmp && cd /tmp/r && git push origin main",
])
def test_a_push_from_an_unpacked_repository_asks(rt, repo, gcfg, script):
    # row 1: the archive's r/.git/config held remote.origin.mirror=true; the
    # verdict said true and the push deleted the remote's other branches
    out = verdict(rt, repo, "sh", "-c", script, env={"COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)})
    assert '"auto_allow":false' in out, out


@pytest.mark.parametrize("inside", [".config", ".local", ".local/share/systemd/user"])
def test_the_homes_config_and_data_trees_are_no_workspace(rt, workdir, gcfg, inside):
    # row 2: ~/.config or ~/.local as the workspace let the command write
    # systemd user units, D-Bus services and user-tmpfiles.d the session runs
    from lib.sandbox import sandbox_env
    home = workdir / "home"
    ws = home / inside
    ws.mkdir(parents=True)
    env = {**sandbox_env(), **GIT_ENV, "HOME": str(home),
           "COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)}
    res = subprocess.run([str(rt.binary), "--root", str(rt.root), "sandbox", "--workspace",
                          str(ws), "--", "sh", "-c", "echo x > unit.service; echo wrote"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 125 and "wrote" not in res.stdout, res
    assert not (ws / "unit.service").exists()
    assert '"auto_allow":false' in verdict(rt, ws, "true", env={
        "HOME": str(home), "COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)})


# ---- review of 3d3a05b and 94a8743 -------------------------------------------

@pytest.mark.parametrize("value", ["sh -c 'tools/fsm-$V.sh'", "~nobody/tools/x.sh",
                                   "tools/{fsm,x}.sh", "bin/.[.]/tools/x.sh"])
def test_a_program_path_sh_rewrites_fails_closed(sandbox, repo, value):
    # a quoted expansion in a one-word script, another user's home, a brace
    # expansion, a glob that matches `..`: the file sh runs is not the word
    git(repo, "config", "core.fsmonitor", value)
    res, _ = sandbox(repo, "echo ran")
    assert res.rc == 125 and "ran" not in res.out, res


def test_an_attached_absolute_option_value_is_protected(sandbox, repo):
    (repo / "tools").mkdir()
    (repo / "tools" / "sshcfg").write_text("\n")
    git(repo, "config", "core.sshCommand", f"ssh -F{repo}/tools/sshcfg")
    res, _ = sandbox(repo, "echo 'ProxyCommand x' > tools/sshcfg; echo wrote=$?; "
                           "echo x > s; echo s=$?")
    assert "wrote=0" not in res.out and "s=0" in res.out, res  # no junk name refused


def test_a_missing_globbed_programs_directory_cannot_become_a_link(sandbox, repo, workdir):
    # `!tools/p.s?` with no tools/ at all: a link put where tools/ would go
    # would make the host's `git a` run elsewhere/p.sh
    git(repo, "config", "alias.a", "!tools/p.s?")
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    res, _ = sandbox(repo, f"mkdir other; printf '#!/bin/sh\\ntouch {marker}\\n' > other/p.sh; "
                           "chmod +x other/p.sh; ln -s other tools; echo ln=$?")
    assert "ln=0" not in res.out, res
    host(repo, "a")
    assert not marker.exists()


def test_a_workspace_in_the_real_config_tree_behind_a_link_is_refused(rt, workdir, gcfg):
    # ~/.config -> ~/dotfiles/config (stow): the workspace given as the real
    # directory is still the home's configuration tree
    from lib.sandbox import sandbox_env
    home = workdir / "home"
    real = home / "dotfiles" / "config"
    real.mkdir(parents=True)
    (home / ".config").symlink_to("dotfiles/config")
    env = {**sandbox_env(), **GIT_ENV, "HOME": str(home), "COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)}
    res = subprocess.run([str(rt.binary), "--root", str(rt.root), "sandbox", "--workspace",
                          str(real), "--", "true"], capture_output=True, text=True, env=env,
                         timeout=60)
    assert res.returncode == 125 and "session and tools" in res.stderr, res
