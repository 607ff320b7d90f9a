"""Attacks of red team round 16 (docs/sandbox.md, "Red team round 16"),
each of which got through on the round's binary: symlinks in, or on the way
to, a nested repository's git directory (a hook, the config, the hooks
directory, a chain naming the git directory, a link to a gitdir: file), the
same in a repository holding a write path, and `GIT_CONFIG_PARAMETERS`.

Every test plays the attacker inside, then the host's git outside, and
asserts on what the host ran and on the refusals."""
from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

import pytest
from lib.sandbox import GIT_ENV, git, make_repo, script

pytestmark = pytest.mark.comet_only


def host_commit(repo: Path, env: dict | None = None) -> None:
    subprocess.run(["git", "-C", str(repo), "status"], capture_output=True,
                   env={**GIT_ENV, **(env or {})}, timeout=30)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "host"],
                   capture_output=True, env={**GIT_ENV, **(env or {})}, timeout=30)


def test_a_nested_repositorys_hook_link_target_is_protected(sandbox, repo, workdir):
    # lib/.git/hooks/pre-commit -> ../../scripts/pre-commit.sh (tracked hooks)
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    lib = repo / "lib"
    lib.mkdir()
    git(lib, "init", "-q")
    script(lib / "scripts" / "pre-commit.sh")
    os.symlink("../../scripts/pre-commit.sh", lib / ".git" / "hooks" / "pre-commit")
    res, evs = sandbox(repo, f"echo 'touch {marker}' >> lib/scripts/pre-commit.sh; echo hook=$?; "
                             "echo ok > lib/notes; echo ordinary=$?")
    assert "hook=0" not in res.out and "ordinary=0" in res.out, res
    host_commit(lib)
    assert not marker.exists(), "the host's git ran the hook the sandbox wrote"
    assert any(e.get("surface") == "fs.write" and e["requested"].endswith("pre-commit.sh")
               for e in evs), evs


def test_a_nested_repositorys_linked_config_and_hooks_are_protected(sandbox, repo, workdir):
    # lib/.git/config -> ../repo-config, lib/.git/hooks -> ../githooks
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    lib = repo / "lib"
    lib.mkdir()
    git(lib, "init", "-q")
    os.rename(lib / ".git" / "config", lib / "repo-config")
    os.symlink("../repo-config", lib / ".git" / "config")
    subprocess.run(["rm", "-rf", str(lib / ".git" / "hooks")], check=True)
    (lib / "githooks").mkdir()
    os.symlink("../githooks", lib / ".git" / "hooks")
    attack = f"""
printf '[core]\\n\\tfsmonitor = "touch {marker}; false"\\n' >> lib/repo-config; echo config=$?
printf '#!/bin/sh\\ntouch {marker}\\n' > lib/githooks/pre-commit; echo hook=$?
chmod +x lib/githooks/pre-commit 2>/dev/null
echo ok > lib/notes; echo ordinary=$?
"""
    res, _ = sandbox(repo, attack)
    assert "config=0" not in res.out and "hook=0" not in res.out, res.out
    assert "ordinary=0" in res.out, res
    host_commit(lib)
    assert not marker.exists(), "the host's git ran what the sandbox wrote"


def test_a_chain_naming_a_nested_git_directory_is_pinned(sandbox, repo, workdir):
    # sub/.git -> ../gdlink -> ../real.git; the workspace's own hooks path is
    # relative (husky): re-pointing gdlink at the workspace's .git made sub a
    # work tree of it, and its hooks path sub/.husky/_ writable
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    git(repo, "config", "core.hooksPath", ".husky/_")
    script(repo / ".husky" / "_" / "pre-commit")
    subprocess.run(["git", "init", "-q", "--bare", str(repo / "real.git")], check=True,
                   env=GIT_ENV)
    git(repo / "real.git", "config", "core.bare", "false")
    (repo / "sub").mkdir()
    os.symlink("real.git", repo / "gdlink")
    os.symlink("../gdlink", repo / "sub" / ".git")
    attack = f"""
rm -f gdlink; ln -s .git gdlink; echo relink=$?
mkdir -p sub/.husky/_ && printf '#!/bin/sh\\ntouch {marker}\\n' > sub/.husky/_/pre-commit; echo hook=$?
chmod +x sub/.husky/_/pre-commit 2>/dev/null
"""
    res, _ = sandbox(repo, attack)
    assert "relink=0" not in res.out, res.out
    assert os.readlink(repo / "gdlink") == "real.git"
    host_commit(repo / "sub")
    assert not marker.exists(), "the host's git ran the hook the sandbox wrote"


def test_a_git_link_to_a_gitdir_file_is_protected(sandbox, repo, workdir):
    # sub/.git -> ../gdfile, gdfile a gitdir: file naming real.git
    subprocess.run(["git", "init", "-q", "--bare", str(repo / "real.git")], check=True,
                   env=GIT_ENV)
    git(repo / "real.git", "config", "core.bare", "false")
    (repo / "gdfile").write_text("gitdir: real.git\n")
    (repo / "sub").mkdir()
    os.symlink("../gdfile", repo / "sub" / ".git")
    res, _ = sandbox(repo, "echo 'gitdir: .git' > gdfile; echo gitdir=$?; echo ok > notes; "
                           "echo ordinary=$?")
    assert "gitdir=0" not in res.out and "ordinary=0" in res.out, res
    assert (repo / "gdfile").read_text() == "gitdir: real.git\n"


def test_a_write_path_repositorys_hook_link_target_is_protected(sandbox, repo, var_dir, workdir):
    # R holds the write path R/build; R/.git/hooks/pre-commit -> ../../build/pc.sh
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    outer = make_repo(var_dir)
    script(outer / "build" / "pc.sh")
    os.symlink("../../build/pc.sh", outer / ".git" / "hooks" / "pre-commit")
    gcfg = workdir / "global.yaml"
    gcfg.write_text(f'profiles:\n  extra:\n    extends: workspace\n    write: ["{outer}/build"]\n')
    res, _ = sandbox(repo, f"echo 'touch {marker}' >> {outer}/build/pc.sh; echo hook=$?; "
                           f"echo o > {outer}/build/out.o; echo ordinary=$?", "extra")
    assert "hook=0" not in res.out and "ordinary=0" in res.out, res
    host_commit(outer)
    assert not marker.exists(), "the host's git ran the hook the sandbox wrote"


def test_git_config_parameters_are_read(sandbox, repo, workdir):
    # `git -c core.hooksPath=.hooks` hands GIT_CONFIG_PARAMETERS to what it
    # starts, the harness included
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    # git quotes ! as '\!' (an alias before the hooks path must not end the
    # parse: review of e94d847)
    env = {"GIT_CONFIG_PARAMETERS":
           "'alias.st'='!git status'".replace("!", "'\\!'") + " 'core.hookspath'='.hooks' "
           "'user.name=x'"}
    res, _ = sandbox(repo, f"mkdir -p .hooks; printf '#!/bin/sh\\ntouch {marker}\\n' > "
                           ".hooks/pre-commit; echo hook=$?; chmod +x .hooks/pre-commit",
                     extra_env=env)
    assert "hook=0" not in res.out, res.out
    host_commit(repo, env)
    assert not marker.exists(), "the host's git ran the hook the sandbox wrote"


def test_malformed_git_config_parameters_fail_closed(sandbox, repo):
    # what git cannot parse it refuses; a sandbox that skipped the rest
    # would leave a hooks path after it unprotected
    res, _ = sandbox(repo, "echo ran", extra_env={"GIT_CONFIG_PARAMETERS": "'core.hookspath"})
    assert res.rc == 125 and "ran" not in res.out, res
    assert "GIT_CONFIG_PARAMETERS" in res.err, res.err
