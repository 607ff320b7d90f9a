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


# ---- red team round 17 (against a9d95d5) -----------------------------------

def run_sandbox(rt, ws: Path, script: str, *, profile: str = "workspace", stdin=None,
                env: dict | None = None, args=()) -> subprocess.CompletedProcess:
    return subprocess.run([str(rt.binary), "--root", str(rt.root), "sandbox", *args,
                           "--profile", profile, "--workspace", str(ws), "--", "/bin/sh", "-c",
                           script], stdin=stdin, capture_output=True, text=True, timeout=60,
                          env={**sandbox_env(), **GIT_ENV, **(env or {})})


METADATA = ("chmod 0666 /proc/self/fd/0; echo chmod=$?; touch -d 2001-01-01 /proc/self/fd/0; "
            "echo touch=$?; chmod 0666 /proc/self/fd/0 2>/dev/null; "
            "python3 -c 'import os; os.fchmod(0, 0o666)'; echo fchmod=$?")


@pytest.mark.parametrize("profile", ["workspace", "strict"])
def test_stdin_the_view_hides_keeps_its_mode_and_times(rt, workdir, var_dir, gcfg, profile):
    """Rows 2 and 4: a host file the view does not show (/var/tmp under
    strict, a scratch file the private /tmp hides), given as stdin, was an
    fd on the caller's mount: mode 0600 -> 0666 and its times set, by path
    through /proc/self/fd/0 and by fchmod(0)."""
    ws = workdir / "ws"
    ws.mkdir()
    secret = var_dir / "secret"
    secret.write_text("s\n")
    secret.chmod(0o600)
    before = secret.stat()
    with open(secret) as f:
        res = run_sandbox(rt, ws, METADATA, profile=profile, stdin=f,
                          env={"COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)})
    after = secret.stat()
    assert (after.st_mode, after.st_mtime) == (before.st_mode, before.st_mtime), res
    assert "chmod=0" not in res.stdout and "fchmod=0" not in res.stdout, res


def test_a_device_or_terminal_given_as_stdio_keeps_its_mode(rt, workdir, var_dir, gcfg):
    """Row 3: `sandbox -- CMD < /dev/null` as root let the command make the
    host's /dev/null 0644, and the caller's terminal 0666. A null device
    node of the test's own (not the host's /dev/null) and a pty."""
    ws = workdir / "ws"
    ws.mkdir()
    node = var_dir / "null"
    os.mknod(node, 0o666 | 0o020000, os.makedev(1, 3))
    node.chmod(0o666)
    with open(node, "r+b", buffering=0) as f:
        res = run_sandbox(rt, ws, METADATA + "; echo out >&0; echo wrote=$?", stdin=f,
                          env={"COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)})
    assert node.stat().st_mode & 0o777 == 0o666, res
    assert "wrote=0" in res.stdout, res  # still a working /dev/null
    master, slave = os.openpty()
    try:
        name = os.ttyname(slave)
        mode = os.stat(name).st_mode
        res = run_sandbox(rt, ws, METADATA + "; tty -s; echo isatty=$?", stdin=slave,
                          env={"COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)})
        assert os.stat(name).st_mode == mode, res
        assert "isatty=0" in res.stdout, res
    finally:
        os.close(master)
        os.close(slave)


@pytest.mark.parametrize("value,target", [
    ("!tools/my\\ tool.sh", "tools/my tool.sh"),
    ("!tools/p.s?", "tools/p.sh"),
    ("!tools/[q].sh", "tools/q.sh"),
    ("!tools/j.s\\h", "tools/j.sh"),
    ("!sh -c 'exec tools/ex.sh'", "tools/ex.sh"),
])
def test_a_program_spelled_as_sh_reads_it_is_protected(sandbox, repo, workdir, value, target):
    """Rows 5 and 7: an escaped blank, a glob, a backslash in a name and a
    script run by `sh -c` were protected as the literal word; the file sh
    runs stayed writable and the host's `git a` ran what the command
    appended."""
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    (repo / target).parent.mkdir(exist_ok=True)
    (repo / target).write_text("#!/bin/sh\nexit 0\n")
    (repo / target).chmod(0o755)
    git(repo, "config", "alias.a", value)
    res, _ = sandbox(repo, f"echo 'touch {marker}' >> '{target}'; echo wrote=$?")
    assert "wrote=0" not in res.out, res
    host_git(repo, {}, "a")
    assert not marker.exists(), "the host's git ran what the sandbox wrote"


def test_a_protected_file_with_another_name_fails_closed(rt, repo, workdir, gcfg):
    """Row 8: .git/hooks/pre-commit hard-linked to scripts/pre-commit.sh:
    the command appended to the second name and the host's `git commit`
    ran it. A protected file with more than one name now stops the run."""
    (repo / "scripts").mkdir()
    hook = repo / "scripts" / "pre-commit.sh"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    os.link(hook, repo / ".git" / "hooks" / "pre-commit")
    res = run_sandbox(rt, repo, "echo ran", env={"COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)})
    assert res.returncode == 125 and "ran" not in res.stdout, res
    assert "more than one name" in res.stderr, res.stderr
    v = subprocess.run([str(rt.binary), "--root", str(rt.root), "sandbox", "--can-auto-allow",
                        "--workspace", str(repo), "--", "true"], capture_output=True, text=True,
                       env={**sandbox_env(gcfg), **GIT_ENV}, timeout=60)
    assert '"auto_allow":false' in v.stdout.replace(" ", ""), v


@pytest.mark.parametrize("inside", [".local/lib/python3/site-packages", ".config/systemd/user",
                                    ".config/nvim/lua", ".ssh/config.d", ".vim/plugin"])
def test_a_workspace_below_a_protected_home_directory_is_refused(rt, workdir, gcfg, inside):
    """Row 9: a workspace below ~/.local/lib (python's user site: a .pth
    runs in every later python), ~/.config/systemd/user or an editor's
    config was writable and auto-allowed."""
    home = workdir / "home"
    ws = home / inside
    ws.mkdir(parents=True)
    env = {"HOME": str(home), "COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)}
    res = run_sandbox(rt, ws, "echo x > evil.pth; echo wrote=$?", env=env)
    assert res.returncode == 125 and "wrote" not in res.stdout, res
    # under ~/.config or ~/.local the rule of round 19 speaks first, under
    # any other hidden directory round 20's
    assert ("protected" in res.stderr or "session and tools" in res.stderr or
            "hidden directory of the home" in res.stderr), res.stderr
    assert not (ws / "evil.pth").exists()


def test_a_workspace_that_is_a_repositorys_agent_config_is_refused(rt, repo, gcfg):
    """Row 9: `repo/.claude` or `repo/.vscode` as the workspace: the
    settings and tasks the host's agent and editor run were written."""
    for name in (".claude", ".vscode"):
        (repo / name).mkdir()
        res = run_sandbox(rt, repo / name, "echo '{}' > settings.json; echo wrote=$?",
                          env={"COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)})
        assert res.returncode == 125 and "wrote" not in res.stdout, res
        assert not (repo / name / "settings.json").exists()


def test_the_verdict_checks_the_events_target_as_the_run_does(rt, workdir, gcfg):
    """Row 1: --events in the workspace, a socket there, or in a missing
    directory: the verdict said auto_allow true while every run exited 125.
    Row 6: an events file that is a hard link (of a workspace file) was
    taken; the command rewrote the events through the other name."""
    ws = workdir / "ws"
    ws.mkdir()
    outside = workdir / "ev"
    outside.mkdir()
    (ws / "twin").write_text("")
    os.link(ws / "twin", outside / "linked.jsonl")
    env = {**sandbox_env(gcfg), **GIT_ENV}
    for events in (str(ws / "ev.jsonl"), f"unix:{ws}/ev.sock", str(workdir / "nodir" / "e"),
                   str(outside / "linked.jsonl")):
        v = subprocess.run([str(rt.binary), "--root", str(rt.root), "sandbox", "--can-auto-allow",
                            "--events", events, "--workspace", str(ws), "--", "true"],
                           capture_output=True, text=True, env=env, timeout=60)
        run = subprocess.run([str(rt.binary), "--root", str(rt.root), "sandbox", "--events",
                              events, "--workspace", str(ws), "--", "true"],
                             capture_output=True, text=True, env=env, timeout=60)
        assert run.returncode == 125, (events, run)
        assert '"auto_allow":false' in v.stdout.replace(" ", ""), (events, v.stdout)
    good = str(outside / "fine.jsonl")
    v = subprocess.run([str(rt.binary), "--root", str(rt.root), "sandbox", "--can-auto-allow",
                        "--events", good, "--workspace", str(ws), "--", "true"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert '"auto_allow":true' in v.stdout.replace(" ", ""), v.stdout
    assert not Path(good).exists()  # the verdict makes nothing


def test_a_glob_protect_entry_leaves_its_directory_usable(rt, workdir, gcfg):
    """Review of 37378e5: the rule for a directory on the way to a missing
    protected name applied to glob entries too, so `packages/*/.envrc`
    refused every new file in `packages/`. Only missing names without a
    glob have that rule; the glob's own names stay refused."""
    ws = workdir / "ws"
    (ws / "packages" / "a").mkdir(parents=True)
    gcfg.write_text('protect: ["{workspace}/packages/*/.envrc"]\n')
    res = run_sandbox(rt, ws, "echo x > packages/new.txt; echo new=$?; mv packages/new.txt "
                              "packages/moved.txt; echo mv=$?; echo x > packages/a/.envrc; "
                              "echo envrc=$?", env={"COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)})
    assert "new=0" in res.stdout and "mv=0" in res.stdout, res
    assert "envrc=0" not in res.stdout, res
    assert (ws / "packages" / "moved.txt").exists() and not (ws / "packages" / "a" / ".envrc").exists()


def test_a_protected_file_outside_every_writable_tree_may_have_other_names(rt, workdir, var_dir):
    """Review of 9bd9d29: a protected file outside every writable tree with
    a second name (Nix's optimised store links every file; here the global
    config and a link of it in /var/tmp) does not stop the run."""
    ws = workdir / "ws"
    ws.mkdir()
    g = var_dir / "global.yaml"
    g.write_text("")
    os.link(g, var_dir / "global-link.yaml")
    res = run_sandbox(rt, ws, "echo ran", env={"COMET_SANDBOX_GLOBAL_CONFIG": str(g)})
    assert res.returncode == 0 and "ran" in res.stdout, res
