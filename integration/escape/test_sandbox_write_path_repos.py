"""Attack: a repository inside a custom profile's extra write path, outside
the workspace (docs/sandbox.md, "Protected paths"; red team round 14 left
it open). Only repositories in or below the workspace were searched: in a
write path elsewhere a repository's `.git` was read-only, but its `.envrc`,
`.vscode/` and `.gitattributes`, and the programs its config names, were
not, and the host runs them later (direnv on `cd`, the editor on open, git
on `git status`). The same for a write path inside a repository whose top
is outside it: the repository's config may name a program in the write
path.

Each test plays the attacker inside, then the host's git outside, and
asserts on what the host ran and on the refusals."""
from __future__ import annotations

import json
import os
import secrets
import time
import subprocess
from pathlib import Path

import pytest
from lib.sandbox import GIT_ENV, git, make_repo, sandbox_env

pytestmark = pytest.mark.comet_only


def profile_writing(gcfg: Path, *paths: Path) -> None:
    gcfg.write_text("profiles:\n  extra:\n    extends: workspace\n    write: " +
                    json.dumps([str(p) for p in paths]) + "\n")


def fs_refusals(evs):
    return [e for e in evs if e.get("surface") == "fs.write"]


def with_monitor(repo: Path, rel: str) -> Path:
    """The repository's core.fsmonitor names REL, an existing script."""
    git(repo, "config", "core.fsmonitor", "./" + rel)
    script = repo / rel
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text("#!/bin/sh\nexit 1\n")
    script.chmod(0o755)
    return script


def host_runs_git(repo: Path) -> None:
    (repo / "host.txt").write_text("host\n")
    git(repo, "add", "host.txt", check=False)
    git(repo, "status", check=False)


def test_a_repository_in_an_extra_write_path_is_protected(sandbox, repo, var_dir, gcfg):
    other = make_repo(var_dir)
    with_monitor(other, "tools/fsmon.sh")
    marker = var_dir / f"pwned-{secrets.token_hex(3)}"
    profile_writing(gcfg, other)
    attack = f"""
cd {other}
printf '#!/bin/sh\\ntouch {marker}\\n' > tools/fsmon.sh; echo "monitor=$?"
echo 'touch {marker}' > .envrc; echo "envrc=$?"
mkdir -p .vscode && echo '{{}}' > .vscode/settings.json; echo "vscode=$?"
echo '* filter=x' > .gitattributes; echo "attributes=$?"
echo ordinary > notes.txt; echo "ordinary=$?"
"""
    res, evs = sandbox(repo, attack, "extra")
    for step in ["monitor", "envrc", "vscode", "attributes"]:
        assert f"{step}=0" not in res.out, res.out
    assert "ordinary=0" in res.out, res
    assert (other / "notes.txt").read_text() == "ordinary\n"
    assert not (other / ".envrc").exists() and not (other / ".gitattributes").exists()
    host_runs_git(other)
    assert not marker.exists(), "the host's git ran what the sandbox wrote"
    assert {str(other / "tools/fsmon.sh"), str(other / ".envrc")} <= {
        e["requested"] for e in fs_refusals(evs)}, evs


def test_a_repository_below_an_extra_write_path_is_protected(sandbox, repo, var_dir, gcfg):
    # the write path holds repositories deeper down (vendor/lib)
    area = var_dir / "area"
    area.mkdir()
    lib = make_repo(area)
    with_monitor(lib, "hooks.d/monitor.sh")
    marker = var_dir / f"pwned-{secrets.token_hex(3)}"
    profile_writing(gcfg, area)
    attack = f"""
cd {lib}
printf '#!/bin/sh\\ntouch {marker}\\n' > hooks.d/monitor.sh; echo "monitor=$?"
echo 'touch {marker}' > .envrc; echo "envrc=$?"
git config core.pager 'touch {marker}'; echo "config=$?"
echo ordinary > {area}/notes.txt; echo "ordinary=$?"
"""
    res, evs = sandbox(repo, attack, "extra")
    for step in ["monitor", "envrc", "config"]:
        assert f"{step}=0" not in res.out, res.out
    assert "ordinary=0" in res.out, res
    host_runs_git(lib)
    assert not marker.exists(), "the host's git ran what the sandbox wrote"


def test_a_write_path_inside_a_repository_keeps_what_its_config_names(sandbox, repo, var_dir,
                                                                      gcfg):
    # the write path is build/ of a repository whose config names a script
    # in build/: the host's git in that repository runs it
    outer = make_repo(var_dir)
    with_monitor(outer, "build/monitor.sh")
    marker = var_dir / f"pwned-{secrets.token_hex(3)}"
    profile_writing(gcfg, outer / "build")
    attack = f"""
printf '#!/bin/sh\\ntouch {marker}\\n' > {outer}/build/monitor.sh; echo "monitor=$?"
echo ordinary > {outer}/build/out.o; echo "ordinary=$?"
"""
    res, evs = sandbox(repo, attack, "extra")
    assert "monitor=0" not in res.out, res.out
    assert "ordinary=0" in res.out, res
    host_runs_git(outer)
    assert not marker.exists(), "the host's git ran what the sandbox wrote"
    assert any(e["requested"] == str(outer / "build/monitor.sh") for e in fs_refusals(evs)), evs


def test_a_verdict_for_a_write_into_an_extra_repositorys_protected_path_is_false(
        rt, repo, var_dir, gcfg):
    # --can-auto-allow must not say true for writing such a file either
    other = make_repo(var_dir)
    profile_writing(gcfg, other)
    env = {**sandbox_env(), **GIT_ENV, "COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)}
    res = rt("sandbox", "--profile", "extra", "--workspace", str(repo), "--can-auto-allow", "--",
             "sh", "-c", f"echo x > {other}/.envrc", env=env, timeout=60)
    assert json.loads(res.out)["auto_allow"] is False, res


def test_the_users_relative_hooks_path_is_protected_in_every_repository(sandbox, repo, var_dir):
    # ~/.gitconfig's `core.hooksPath = .githooks` names a directory of each
    # work tree: the nested repository's as well as the workspace's own
    home = var_dir / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[core]\n\thooksPath = .githooks\n")
    lib = repo / "vendor" / "lib"
    lib.mkdir(parents=True)
    git(lib, "init", "-q")
    marker = var_dir / f"pwned-{secrets.token_hex(3)}"
    attack = f"""
mkdir -p vendor/lib/.githooks; echo "mkdir=$?"
printf '#!/bin/sh\\ntouch {marker}\\n' > vendor/lib/.githooks/pre-commit; echo "hook=$?"
chmod +x vendor/lib/.githooks/pre-commit
echo ordinary > vendor/lib/notes.txt; echo "ordinary=$?"
"""
    res, evs = sandbox(repo, attack, extra_env={"HOME": str(home)})
    assert "hook=0" not in res.out, res.out
    assert "ordinary=0" in res.out, res
    env = {"HOME": str(home)}
    git(lib, "-c", f"include.path={home}/.gitconfig", "add", "notes.txt", check=False)
    subprocess.run(["git", "-C", str(lib), "commit", "-qm", "x"], capture_output=True,
                   env={**GIT_ENV, **env}, timeout=30)
    assert not marker.exists(), "the host's git ran the hook the sandbox wrote"


def test_a_write_path_holding_the_workspace_leaves_its_modules_to_git(sandbox, var_dir, gcfg):
    # write: [the workspace's parent]: the walk of that tree does not search
    # the workspace again, whose modules' git directories are the git
    # rule's (a checkout in a module writes its HEAD)
    outer = var_dir / "outer"
    outer.mkdir()
    ws = make_repo(outer)
    (ws / ".git" / "modules").mkdir()
    git(ws, "init", "-q", f"--separate-git-dir={ws}/.git/modules/m", str(ws / "m"))
    git(ws / "m", "commit", "-q", "--allow-empty", "-m", "m")
    profile_writing(gcfg, outer)
    res, _ = sandbox(ws, "git -C m checkout -q -b topic; echo checkout=$?; "
                         "echo x > .envrc; echo envrc=$?", "extra")
    assert "checkout=0" in res.out, res
    assert "envrc=0" not in res.out, res.out
    assert (ws / ".git/modules/m/HEAD").read_text() == "ref: refs/heads/topic\n"


def test_a_bare_repositorys_configured_hooks_in_a_write_path_are_protected(sandbox, repo, var_dir,
                                                                           gcfg):
    # a bare repository (a push target) names a hooks directory elsewhere
    # in the write path: the host's git runs its pre-receive at a push
    srv = var_dir / "srv"
    srv.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(srv / "proj.git")], check=True,
                   env=GIT_ENV)
    (srv / "hooks").mkdir()
    (srv / "hooks" / "pre-receive").write_text("#!/bin/sh\nexit 0\n")
    git(srv / "proj.git", "config", "core.hooksPath", str(srv / "hooks"))
    profile_writing(gcfg, srv)
    res, evs = sandbox(repo, f"echo 'touch /pwned' > {srv}/hooks/pre-receive; echo hook=$?; "
                             f"echo ok > {srv}/notes; echo ordinary=$?", "extra")
    assert "hook=0" not in res.out and "ordinary=0" in res.out, res
    assert (srv / "hooks" / "pre-receive").read_text() == "#!/bin/sh\nexit 0\n"


def test_a_write_path_shared_by_two_workspaces_stays_protected(rt, var_dir, gcfg):
    # The placeholder registry is per workspace: a sandbox of another
    # workspace that shares the write path removes the placeholders it made
    # when it ends, while this one runs. The init's rule still refuses the
    # name (a protected path that is no longer a mount point).
    shared = var_dir / "shared"
    shared.mkdir()
    other = make_repo(shared)
    profile_writing(gcfg, shared)
    env = {**sandbox_env(), **GIT_ENV, "COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)}
    ws1, ws2 = make_repo(var_dir), make_repo(var_dir)
    first = subprocess.Popen([str(rt.binary), "--root", str(rt.root), "sandbox", "--profile",
                              "extra", "--workspace",
                              str(ws1), "--", "sleep", "1"], env=env)
    try:
        time.sleep(0.5)
        res = rt("sandbox", "--profile", "extra", "--workspace", str(ws2), "--", "sh", "-c",
                 f"sleep 2; echo x > {other}/.envrc; echo envrc=$?", env=env, timeout=60)
    finally:
        first.wait(timeout=30)
    assert "envrc=0" not in res.out, res
    assert not (other / ".envrc").exists()


def test_links_in_a_write_path_repositorys_protected_directory_lead_to_protected_files(
        sandbox, repo, var_dir, gcfg):
    # .vscode/tasks.json -> ../cfg/tasks.json in a repository of a write
    # path: the link is read-only, and so must be where it leads
    other = make_repo(var_dir)
    (other / "cfg").mkdir()
    (other / "cfg" / "tasks.json").write_text("{}\n")
    (other / ".vscode").mkdir()
    os.symlink("../cfg/tasks.json", other / ".vscode" / "tasks.json")
    profile_writing(gcfg, other)
    res, _ = sandbox(repo, f"echo pwn > {other}/cfg/tasks.json; echo target=$?", "extra")
    assert "target=0" not in res.out, res.out
    assert (other / "cfg" / "tasks.json").read_text() == "{}\n"


def test_a_protected_directory_too_large_to_follow_fails_closed(sandbox, repo):
    # Red team round 15 row 12: past its limits (then 512 entries or 4
    # levels, now 4096 directories and links or 16 levels) the links of a
    # protected directory were not followed, and their targets stayed
    # writable; now the run refuses, unless told to run without
    (repo / "cfg").mkdir()
    (repo / "cfg" / "t.json").write_text("{}\n")
    (repo / ".vscode").mkdir()
    for i in range(4100):
        os.symlink("../cfg/t.json", repo / ".vscode" / f"l{i}.json")
    res, _ = sandbox(repo, "echo pwn > cfg/t.json; echo target=$?")
    assert res.rc == 125 and "target=" not in res.out, res
    assert "4096 directories and links" in res.err and ".vscode" in res.err, res.err
    assert (repo / "cfg" / "t.json").read_text() == "{}\n"
    res, _ = sandbox(repo, "echo ran", extra_env={"COMET_ALLOW_MISSING": "link-targets"})
    assert res.rc == 0 and "ran" in res.out and "link-targets" in res.err, res
    # a large protected directory of files (no links) is no reason to refuse
    for i in range(4100):
        os.unlink(repo / ".vscode" / f"l{i}.json")
        (repo / ".vscode" / f"f{i}.json").write_text("{}\n")
    res, _ = sandbox(repo, "echo ran")
    assert res.rc == 0 and "ran" in res.out, res
