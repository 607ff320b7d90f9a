"""Attack: what a repository below the workspace names in its own config
(red team round 11, docs/sandbox.md "Protected paths"). Protection read
only the workspace's own repository's config: a nested repository's
`core.hooksPath` (husky's `.husky/_`), a gitlink's `core.fsmonitor`, and a
linked worktree's copy of a configured program (resolved against that
worktree's top) stayed writable, and the host's git ran what the sandbox
wrote there.

Each test plays the attacker inside, then runs the host's git outside, and
asserts on what the host's git did."""
from __future__ import annotations

import os
import secrets
import stat

import pytest

from lib.sandbox import git, make_repo, sandbox_runner

pytestmark = pytest.mark.comet_only

BENIGN = "#!/bin/sh\nexit 0\n"


@pytest.fixture
def sbx(rt, workdir):
    return sandbox_runner(rt, workdir)


def script(path, text=BENIGN):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o755)


def overwrite(rel, marker):
    """A shell line that replaces REL with a script touching MARKER."""
    return (f"printf '#!/bin/sh\\ntouch {marker}\\n' > {rel}; echo \"w {rel}=$?\"; "
            f"rm -f {rel}; echo \"rm {rel}=$?\"; ")


def test_a_nested_repositorys_hooks_path_is_protected(sbx, workdir):
    ws = make_repo(workdir)
    lib = ws / "vendor" / "lib"
    lib.mkdir(parents=True)
    git(lib, "init", "-q")
    git(lib, "config", "core.hooksPath", ".husky/_")
    script(lib / ".husky" / "_" / "pre-commit")
    script(lib / ".husky" / "pre-commit")
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    res, _ = sbx(ws, overwrite("vendor/lib/.husky/_/pre-commit", marker) +
                 overwrite("vendor/lib/.husky/pre-commit", marker))
    assert res.rc == 0, res.err
    assert "=0" not in res.out, res.out
    (lib / "f").write_text("f\n")
    git(lib, "add", "f")
    git(lib, "commit", "-qm", "host commit", check=False)
    assert not marker.exists(), "the host's commit in vendor/lib ran what the sandbox wrote"
    assert (lib / ".husky" / "_" / "pre-commit").read_text() == BENIGN


@pytest.mark.parametrize("profile", ["workspace", "strict"])
def test_a_gitlinks_fsmonitor_is_protected(sbx, workdir, profile):
    ws = make_repo(workdir)
    sub = ws / "sub"
    sub.mkdir()
    git(sub, "init", "-q")
    (sub / "x").write_text("x\n")
    git(sub, "add", "x")
    git(sub, "commit", "-qm", "x")
    git(sub, "config", "core.fsmonitor", "tools/fsmon.sh")
    script(sub / "tools" / "fsmon.sh")
    git(ws, "add", "sub")
    git(ws, "commit", "-qm", "gitlink")
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    res, _ = sbx(ws, overwrite("sub/tools/fsmon.sh", marker) +
                 "mv sub/tools sub/t2; echo \"mv=$?\"", profile)
    assert res.rc == 0, res.err
    assert "=0" not in res.out, res.out
    git(ws, "status", check=False)
    assert not marker.exists(), "the host's git status ran the gitlink's fsmonitor"
    assert (sub / "tools" / "fsmon.sh").read_text() == BENIGN


def test_a_linked_worktrees_copy_of_a_program_is_protected(sbx, workdir):
    ws = make_repo(workdir)
    script(ws / "tools" / "fsmon.sh")
    git(ws, "add", "tools")
    git(ws, "commit", "-qm", "tools")
    git(ws, "worktree", "add", "-q", ".worktrees/feat")
    git(ws, "config", "core.fsmonitor", "tools/fsmon.sh")
    feat = ws / ".worktrees" / "feat"
    assert (feat / "tools" / "fsmon.sh").exists()
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    res, _ = sbx(ws, overwrite(".worktrees/feat/tools/fsmon.sh", marker) +
                 overwrite("tools/fsmon.sh", marker))
    assert res.rc == 0, res.err
    assert "=0" not in res.out, res.out
    git(feat, "status", check=False)
    assert not marker.exists(), "the host's git in the worktree ran what the sandbox wrote"
    assert (feat / "tools" / "fsmon.sh").read_text() == BENIGN


def test_ordinary_files_of_a_nested_repository_stay_writable(sbx, workdir):
    # The control: only what the nested config names is protected.
    ws = make_repo(workdir)
    lib = ws / "vendor" / "lib"
    lib.mkdir(parents=True)
    git(lib, "init", "-q")
    git(lib, "config", "core.hooksPath", ".husky/_")
    res, _ = sbx(ws, "echo y > vendor/lib/src.c; echo w=$?; mkdir vendor/lib/d; echo d=$?")
    assert res.rc == 0, res.err
    assert "w=0" in res.out and "d=0" in res.out, res.out
    assert (lib / "src.c").read_text() == "y\n"
    # and the placeholders made for the run are gone
    assert not (lib / ".husky").exists()
    assert not (lib / ".vscode").exists()


@pytest.mark.parametrize("key", ["trailer.sign.cmd", "core.alternateRefsCommand",
                                 "sendemail.sendmailCmd", "gpg.ssh.defaultKeyCommand",
                                 "uploadpack.packObjectsHook", "tar.tgz.command"])
def test_every_key_git_runs_names_a_protected_program(sbx, workdir, key):
    # Red team round 11: these keys were missing from the list.
    ws = make_repo(workdir)
    script(ws / "tools" / "x.sh")
    git(ws, "config", key, "tools/x.sh")
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    res, _ = sbx(ws, overwrite("tools/x.sh", marker))
    assert res.rc == 0, res.err
    assert "=0" not in res.out, res.out
    assert (ws / "tools" / "x.sh").read_text() == BENIGN


@pytest.mark.parametrize("value", ['"$(git rev-parse --show-toplevel)/tools/x.sh"',
                                   "$PWD/tools/x.sh", "`git rev-parse --show-toplevel`/tools/x.sh"])
def test_a_program_path_built_from_the_top_is_protected(sbx, workdir, value):
    ws = make_repo(workdir)
    script(ws / "tools" / "x.sh")
    (ws / ".git" / "config").write_text((ws / ".git" / "config").read_text() +
                                        f"[core]\n\tfsmonitor = {value}\n")
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    res, _ = sbx(ws, overwrite("tools/x.sh", marker))
    assert res.rc == 0, res.err
    assert "=0" not in res.out, res.out
    git(ws, "status", check=False)
    assert not marker.exists()
    assert (ws / "tools" / "x.sh").read_text() == BENIGN


def test_a_program_path_built_from_another_expansion_refuses_to_start(sbx, workdir):
    ws = make_repo(workdir)
    script(ws / "tools" / "x.sh")
    (ws / ".git" / "config").write_text((ws / ".git" / "config").read_text() +
                                        "[core]\n\tfsmonitor = \"$(dirname $GIT_DIR)/tools/x.sh\"\n")
    res, _ = sbx(ws, "echo ran")
    assert res.rc == 125, (res.rc, res.out, res.err)
    assert "ran" not in res.out
    assert "core.fsmonitor" in res.err and len(res.err.strip().splitlines()) == 1, res.err
