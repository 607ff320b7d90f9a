"""Attack: a repository the confined command makes (or finds) below the
workspace runs on the host later (issue 22, red team round 2). `git init
sub`, `core.fsmonitor` in sub/.git/config, `git add sub && git commit` (a
gitlink): the host's plain `git status` at the root looks into the populated
submodule and runs the monitor. Mounts cannot protect a name that does not
exist yet at any depth; the git rule (runtime/create_rule.hpp) judges every
name when it is made: no `.git` outside the sandbox's own tmpfs, nothing
written inside a `.git` that is not the workspace's own.

Every test plays the attacker inside, then the host outside, and asserts on
what the host's git did and on the refusals (EACCES, fs.write events)."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from lib.sandbox import GIT_ENV, git, make_repo, sandbox_env

pytestmark = pytest.mark.comet_only

def git_events(evs):
    return [e for e in evs if e.get("surface") == "fs.write" and
            e.get("matched_entry") == "git repository"]


@pytest.mark.parametrize("profile", ["workspace", "strict"])
def test_a_nested_repository_made_inside_never_runs_on_the_host(sandbox, repo, workdir, profile):
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    attack = f"""
git init -q sub; echo "init=$?"
mkdir -p sub/.git/hooks; echo "mkdir=$?"
git -C sub config core.fsmonitor 'touch {marker}'; echo "config=$?"
echo x > sub/f && git -C sub add f 2>/dev/null && git -C sub commit -qm x 2>/dev/null
git add sub 2>/dev/null; git commit -qm gitlink 2>/dev/null; echo "outer=$?"
"""
    res, evs = sandbox(repo, attack, profile)
    assert "init=0" not in res.out and "mkdir=0" not in res.out, res.out
    assert not (repo / "sub" / ".git").exists()
    git(repo, "status", check=False)
    git(repo, "-C", "sub", "status", check=False) if (repo / "sub").exists() else None
    assert not marker.exists(), "the host's git ran the nested repository's monitor"
    refused = git_events(evs)
    assert refused and refused[0]["errno"] == "EACCES", evs
    assert any(e["requested"].endswith("/sub/.git") for e in refused), refused


def test_every_way_to_name_a_dot_git_is_refused(sandbox, repo):
    # Each line is one way to make a `.git` below the workspace; none may
    # succeed, whatever the call or the case.
    prog = textwrap.dedent(r"""
        import ctypes, os, sys
        os.makedirs("d", exist_ok=True)
        libc = ctypes.CDLL(None, use_errno=True)
        def attempt(name, f):
            try:
                f(); print(name, "MADE")
            except OSError as e:
                print(name, e.errno)
        open("plain", "w").close()
        os.makedirs("gitdir/objects", exist_ok=True)
        attempt("mkdir", lambda: os.mkdir("d/.git"))
        attempt("mkdir-case", lambda: os.mkdir("d/.GiT"))
        attempt("mkdir-slash", lambda: os.mkdir("d/.git/"))
        attempt("gitfile", lambda: os.close(os.open("d/.git", os.O_CREAT | os.O_WRONLY)))
        attempt("symlink", lambda: os.symlink("../gitdir", "d/.git"))
        attempt("hardlink", lambda: os.link("plain", "d/.git"))
        attempt("rename-dir", lambda: os.rename("gitdir", "d/.git"))
        attempt("rename-file", lambda: os.rename("plain", "d/.git"))
        attempt("mknod-fifo", lambda: os.mkfifo("d/.git"))
        # a dangling symlink whose target is a .git: open(O_CREAT) follows it
        os.symlink(".git", "d/lnk")
        attempt("creat-through-symlink", lambda: os.close(os.open("d/lnk", os.O_CREAT | os.O_WRONLY)))
        # an unnamed file named afterwards
        def tmpfile():
            fd = os.open("d", os.O_TMPFILE | os.O_WRONLY)
            os.link(f"/proc/self/fd/{fd}", "d/.git")
        attempt("tmpfile-link", tmpfile)
        # /proc/self/cwd names the same directory
        attempt("proc-cwd", lambda: os.mkdir("/proc/self/cwd/d/.git"))
        attempt("renameat2-exchange", lambda: (os.mkdir("d/x"),
                libc.renameat2(-100, b"d/x", -100, b"gitdir", 2) == 0 or None))
        sys.stdout.flush()
        """)
    res, evs = sandbox(repo, ["python3", "-c", prog])
    lines = dict(l.split(" ", 1) for l in res.out.splitlines() if " " in l)
    for name in ["mkdir", "mkdir-case", "mkdir-slash", "gitfile", "symlink", "hardlink",
                 "rename-dir", "rename-file", "mknod-fifo", "creat-through-symlink",
                 "tmpfile-link", "proc-cwd"]:
        assert lines.get(name) == "13", (name, res.out, res.err)
    found = [str(p) for p in repo.rglob("*") if p.name.lower() == ".git" and p != repo / ".git"]
    assert not found, found
    assert len(git_events(evs)) >= 10, evs


def test_an_existing_nested_repository_is_read_only(sandbox, repo, workdir):
    # A vendored repository that was there before: its config and hooks
    # must not be writable (`git add vendor/lib` would make it a gitlink).
    lib = repo / "vendor" / "lib"
    lib.mkdir(parents=True)
    git(lib, "init", "-q")
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    before = (lib / ".git" / "config").read_text()
    attack = f"""
git -C vendor/lib config core.fsmonitor 'touch {marker}'; echo "config=$?"
printf 'x' >> vendor/lib/.git/config; echo "append=$?"
printf '#!/bin/sh\\ntouch {marker}\\n' > vendor/lib/.git/hooks/post-checkout; echo "hook=$?"
ln vendor/lib/.git/config cfg; echo "link=$?"
mv vendor/lib/.git/hooks hooks-out; echo "move=$?"
"""
    res, evs = sandbox(repo, attack)
    for step in ["config", "append", "hook", "link", "move"]:
        assert f"{step}=0" not in res.out, res.out
    assert (lib / ".git" / "config").read_text() == before
    assert not (lib / ".git" / "hooks" / "post-checkout").exists()
    git(lib, "status", check=False)
    assert not marker.exists()
    assert git_events(evs), evs


def test_ordinary_work_goes_on_under_the_git_rule(sandbox, repo):
    script = """
set -e
mkdir -p src/a/b && echo one > src/a/b/f && echo two >> src/a/b/f
cp src/a/b/f g && mv g h && ln h h2 && ln -s h h3 && cat h3 > /dev/null
(echo piped > /dev/stdout) | cat  # a pipe: the harness's own stdout file is outside the view
exec 5>fd5 && echo five >&5 && echo via-dev-fd >> /dev/fd/5
ln -s /proc/self/fd/5 l5 && echo via-link >> l5
git init -q /tmp/scratch && echo tmp-repo-ok
git add src h && git commit -qm work && echo committed
umask 077 && echo s > secret && stat -c %a secret
"""
    res, evs = sandbox(repo, script)
    assert res.rc == 0, (res.out, res.err)
    assert "piped" in res.out and "tmp-repo-ok" in res.out and "committed" in res.out
    assert res.out.strip().endswith("600"), res.out  # the command's umask, not the init's
    assert (repo / "src/a/b/f").read_text() == "one\ntwo\n"
    assert (repo / "fd5").read_text() == "five\nvia-dev-fd\nvia-link\n"
    assert "work" in git(repo, "log", "--oneline").stdout
    assert not git_events(evs), evs


def test_the_git_rule_layer_is_on_for_profiles_that_protect_git(rt, repo, workdir):
    gcfg = workdir / "global.yaml"
    gcfg.write_text("")
    env = dict(os.environ, COMET_SANDBOX_GLOBAL_CONFIG=str(gcfg))
    for profile, want in [("workspace", True), ("strict", True), ("devbox", False)]:
        res = rt("sandbox", "--profile", profile, "--workspace", str(repo), "--explain",
                 env=env, timeout=60)
        policy = res.out
        assert ('"git"' in policy) == want, (profile, policy[-2000:])


def test_no_new_module_git_directory_in_the_workspaces_own(sandbox, repo, workdir):
    # The host's `git submodule update --init` takes a .git/modules/NAME it
    # finds for the module's git directory, config and hooks included.
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    attack = f"""
mkdir -p .git/modules/evil; echo "mkdir=$?"
git init -q --bare .git/modules/other 2>/dev/null; echo "bare=$?"
mv .git/objects/info .git/modules/moved 2>/dev/null; echo "move=$?"
echo ok > .git/objects/info/note && echo own-still-writable
"""
    res, evs = sandbox(repo, attack)
    assert "mkdir=1" in res.out and "bare=0" not in res.out and "move=0" not in res.out, res.out
    assert "own-still-writable" in res.out, (res.out, res.err)
    mods = repo / ".git" / "modules"
    assert not mods.exists() or not any(mods.iterdir()), list(mods.iterdir())
    assert git_events(evs), evs


def gitlinked_vendor_repo(repo: Path) -> Path:
    lib = repo / "vendor" / "lib"
    lib.mkdir(parents=True)
    git(lib, "init", "-q")
    (lib / "l").write_text("l\n")
    git(lib, "add", "l")
    git(lib, "commit", "-qm", "l")
    git(repo, "add", "vendor/lib")
    git(repo, "commit", "-qm", "gitlink")
    return lib


@pytest.mark.parametrize("profile", ["workspace", "strict"])
def test_a_reopen_through_proc_self_fd_does_not_write_a_nested_repository(sandbox, repo, workdir,
                                                                          profile):
    # Red team round 3: open the nested config read-only, then reopen the fd
    # for writing through /proc/self/fd/N (or /dev/fd/N): the kernel follows
    # the magic link, so the file opened must be judged, not the link.
    lib = gitlinked_vendor_repo(repo)
    before = (lib / ".git" / "config").read_text()
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    attack = f"""
exec 3<vendor/lib/.git/config
printf '[core]\\n\\tfsmonitor = "touch {marker}; false"\\n' >> /proc/self/fd/3; echo "proc=$?"
printf '[core]\\n\\tfsmonitor = "touch {marker}; false"\\n' >> /dev/fd/3; echo "devfd=$?"
exec 4<vendor/lib/.git
printf x > /proc/self/fd/4/config.lock; echo "dirfd=$?"
"""
    res, evs = sandbox(repo, attack, profile)
    for step in ["proc", "devfd", "dirfd"]:
        assert f"{step}=0" not in res.out, res.out
    assert (lib / ".git" / "config").read_text() == before
    git(repo, "status", check=False)
    assert not marker.exists(), "the host's git status ran the nested repository's monitor"
    assert any(e["requested"].endswith("vendor/lib/.git/config") for e in git_events(evs)), evs


def test_no_bare_repository_can_be_made_or_written(sandbox, repo, workdir):
    # Red team round 3: `git init --bare docs` has no `.git` name, and git
    # run in docs/ takes it for a repository (core.pager, hooks).
    bare = repo / "old"
    bare.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, env=GIT_ENV)
    before = (bare / "config").read_text()
    attack = """
git init -q --bare docs; echo "init=$?"
mkdir -p x/objects x/refs && printf 'ref: refs/heads/main\\n' > x/HEAD; echo "head=$?"
git --git-dir=old config core.pager 'touch /nonexistent/x'; echo "config=$?"
printf x >> old/config; echo "append=$?"
mkdir -p old/hooks && printf '#!/bin/sh\\n' > old/hooks/post-checkout; echo "hook=$?"
"""
    res, evs = sandbox(repo, attack)
    for step in ["init", "head", "config", "append", "hook"]:
        assert f"{step}=0" not in res.out, res.out
    assert not (repo / "docs" / "HEAD").exists() and not (repo / "x" / "HEAD").exists()
    assert (bare / "config").read_text() == before
    assert not (bare / "hooks" / "post-checkout").exists()
    assert git_events(evs), evs


def test_dev_stdout_reaches_the_callers_file_and_terminal(rt, repo, workdir):
    # Red team round 3: `echo x > /dev/stdout` failed (EACCES, reported)
    # when the caller's stdout was a file outside the workspace or a terminal.
    out = workdir / f"out-{secrets.token_hex(3)}.txt"
    gcfg = workdir / "global.yaml"
    gcfg.write_text("")
    env = sandbox_env(gcfg)
    with open(out, "w") as f:
        p = subprocess.run([rt.binary, "--root", str(workdir / "root"), "sandbox", "--workspace",
                            str(repo), "--", "sh", "-c",
                            "echo one > /dev/stdout; echo two >> /dev/stdout; echo e > /dev/stderr"],
                           stdout=f, stderr=subprocess.PIPE, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert out.read_text() == "one\ntwo\n", out.read_text()  # `>` truncated, `>>` appended
    # a terminal: the script(1) pty is the command's stdout and stderr
    cmd = (f"{rt.binary} --root {workdir / 'root'} sandbox --workspace {repo} -- "
           "sh -c 'echo tty-out > /dev/stdout; echo tty-err > /dev/stderr'")
    t = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert t.returncode == 0 and "tty-out" in t.stdout and "tty-err" in t.stdout, (t.stdout,
                                                                                 t.stderr)


def test_no_name_completes_a_bare_repository(sandbox, repo, workdir):
    # Red team round 4: a HEAD that was there (a fixture), then config,
    # objects/ and refs/ one by one, each judged before the three existed;
    # a bare repository inside the workspace's own .git, reached by a
    # symlink; a unix socket standing for objects/ or refs/ (git only
    # checks access(X_OK)), or named .git.
    d = repo / "fixtures" / "d"
    d.mkdir(parents=True)
    (d / "HEAD").write_text("ref: refs/heads/master\n")
    prog = textwrap.dedent(r"""
        import os, socket
        def attempt(name, f):
            try:
                f(); print(name, "MADE")
            except OSError as e:
                print(name, e.errno)
        def bind(p):
            s = socket.socket(socket.AF_UNIX)
            s.bind(p)
        open("fixtures/d/config", "w").write("[core]\n\tpager = touch /nonexistent\n")
        os.mkdir("fixtures/d/objects")
        attempt("refs-dir", lambda: os.mkdir("fixtures/d/refs"))
        attempt("refs-socket", lambda: bind("fixtures/d/refs"))
        attempt("refs-symlink", lambda: os.symlink("objects", "fixtures/d/refs"))
        os.makedirs(".git/e/objects")
        os.makedirs(".git/e/refs")
        attempt("own-bare-head", lambda: open(".git/e/HEAD", "w").close())
        attempt("socket-dot-git", lambda: bind("fixtures/.git"))
        attempt("socket-head", lambda: bind("fixtures/HEAD"))
        bind("ok.sock"); print("ordinary-socket ok")
        """)
    res, evs = sandbox(repo, ["python3", "-c", prog])
    lines = dict(l.split(" ", 1) for l in res.out.splitlines() if " " in l)
    for name in ["refs-dir", "refs-socket", "refs-symlink", "own-bare-head", "socket-dot-git",
                 "socket-head"]:
        assert lines.get(name) == "13", (name, res.out, res.err)
    assert lines.get("ordinary-socket") == "ok", res.out
    assert not (d / "refs").exists() and not (repo / ".git" / "e" / "HEAD").exists()
    # (.git/e, a name git does not keep there, is moved aside after the run
    # since red team round 26)
    for where in [w for w in (d, repo / ".git" / "e") if w.exists()]:
        r = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=where, capture_output=True,
                           text=True, env=GIT_ENV)
        assert r.stdout.strip() not in (".", str(where)), (where, r.stdout)


def test_what_the_repositorys_config_names_is_protected(sandbox, repo, workdir):
    # Red team round 4: core.hooksPath = .husky/_ (husky) makes .husky's
    # scripts hooks; core.fsmonitor and an alias can name scripts of the
    # workspace; include.path a config file there.
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    git(repo, "config", "core.hooksPath", ".husky/_")
    git(repo, "config", "core.fsmonitor", "./tools/fsmonitor.sh")
    git(repo, "config", "include.path", "../shared.gitconfig")
    (repo / ".husky" / "_").mkdir(parents=True)
    (repo / ".husky" / "_" / "pre-commit").write_text('#!/bin/sh\n. "$(dirname "$0")/../pre-commit"\n')
    (repo / ".husky" / "_" / "pre-commit").chmod(0o755)
    (repo / "tools").mkdir()
    (repo / "tools" / "fsmonitor.sh").write_text("#!/bin/sh\nexit 1\n")
    (repo / "tools" / "fsmonitor.sh").chmod(0o755)
    (repo / "shared.gitconfig").write_text("")
    attack = f"""
printf '#!/bin/sh\\ntouch {marker}\\n' > .husky/pre-commit; echo "husky=$?"
printf '#!/bin/sh\\ntouch {marker}\\n' > tools/fsmonitor.sh; echo "fsmonitor=$?"
printf '[core]\\n\\tpager = touch {marker}\\n' >> shared.gitconfig; echo "include=$?"
echo ordinary > notes.txt && echo "ordinary=0"
"""
    res, evs = sandbox(repo, attack)
    for step in ["husky", "fsmonitor", "include"]:
        assert f"{step}=0" not in res.out, res.out
    assert "ordinary=0" in res.out
    (repo / "b.txt").write_text("b\n")
    git(repo, "-c", "core.fsmonitor=false", "add", "b.txt", check=False)
    git(repo, "commit", "-qm", "host", check=False)
    git(repo, "status", check=False)
    assert not marker.exists(), "the host's git ran what the sandbox wrote"


def test_no_commondir_repository_and_no_legacy_remote(sandbox, repo, workdir):
    # Red team round 5: .git/x with HEAD and a commondir pointing at a
    # writable fake/ (objects, refs, config, hooks), and .git/remotes/origin
    # (or .git/branches/origin) naming it: the host's `git push` ran
    # fake/hooks/pre-receive.
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    attack = f"""
mkdir -p fake/objects fake/refs/heads fake/hooks
printf '#!/bin/sh\\ntouch {marker}\\n' > fake/hooks/pre-receive; chmod +x fake/hooks/pre-receive
mkdir -p .git/x; printf 'ref: refs/heads/main\\n' > .git/x/HEAD; echo "head=$?"
echo ../../fake > .git/x/commondir; echo "commondir=$?"
mkdir -p .git/worktrees/w1 2>/dev/null; echo "worktree=$?"
printf 'ref: refs/heads/main\\n' > fake/HEAD; echo "fakehead=$?"
mkdir -p .git/remotes 2>/dev/null; printf 'URL: {repo}/.git/x\\n' > .git/remotes/origin; echo "remotes=$?"
mkdir -p .git/branches 2>/dev/null; echo '{repo}/.git/x#main' > .git/branches/origin; echo "branches=$?"
git add -A . 2>/dev/null; git commit -qm work 2>/dev/null; echo "commit=$?"
"""
    res, evs = sandbox(repo, attack)
    for step in ["head", "worktree", "fakehead", "remotes", "branches"]:
        assert f"{step}=0" not in res.out, res.out
    assert "commit=0" in res.out, (res.out, res.err)  # the own repository still commits
    git(repo, "push", check=False)
    git(repo, "push", "origin", "HEAD", check=False)
    assert not marker.exists(), "the host's git push ran a hook the sandbox wrote"
    assert not (repo / ".git" / "remotes" / "origin").exists()
    assert not (repo / ".git" / "branches" / "origin").exists()


def test_no_symlink_or_foreign_file_in_the_own_git_directory(sandbox, repo, workdir):
    # Red team round 6: `.git/COMMIT_EDITMSG -> config` and a SQUASH_MSG
    # with a [core] block: the host's `git commit` wrote it into .git/config
    # through the link; `.git/logs/HEAD -> X` had the host append to X.
    attack = """
rm -f .git/COMMIT_EDITMSG; ln -s config .git/COMMIT_EDITMSG; echo "symlink=$?"
ln -s ../config lnk; mv lnk .git/logs/HEAD; echo "rename=$?"
mkdir d && mv d .git/d; echo "dir=$?"
echo t > t && ln t .git/T; echo "link=$?"
rm -f .git/COMMIT_EDITMSG; mkfifo .git/COMMIT_EDITMSG; echo "fifo=$?"
echo b >> a.txt && git commit -qam two && echo "commit=0"
"""
    res, evs = sandbox(repo, attack)
    for step in ["symlink", "rename", "dir", "link", "fifo"]:
        assert f"{step}=0" not in res.out, res.out
    assert "commit=0" in res.out, (res.out, res.err)
    links = [str(p) for p in (repo / ".git").rglob("*") if p.is_symlink()]
    assert not links, links


def test_the_configs_of_parents_modules_and_worktrees_are_read(sandbox, rt, workdir):
    # Red team round 6: a monorepo subdirectory as the workspace (the
    # parent's filter names svc/tools/clean.sh), a program value behind an
    # interpreter, and two include.path lines (the runtime aborted).
    mono = workdir / f"mono-{secrets.token_hex(3)}"
    (mono / "svc" / "tools").mkdir(parents=True)
    git(mono, "init", "-q")
    (mono / "svc" / "tools" / "clean.sh").write_text("#!/bin/sh\ncat\n")
    (mono / "svc" / "tools" / "clean.py").write_text("import sys\n")
    git(mono, "config", "filter.fx.clean", "svc/tools/clean.sh")
    git(mono, "config", "filter.nb.clean", "python3 svc/tools/clean.py")
    git(mono, "config", "include.path", "../a.cfg")
    git(mono, "config", "--add", "include.path", "../b.cfg")
    attack = """
echo x > tools/clean.sh; echo "sh=$?"
echo x > tools/clean.py; echo "py=$?"
echo ok > notes.txt && echo "ordinary=0"
"""
    res, _ = sandbox(mono / "svc", attack)
    assert res.rc == 0, (res.out, res.err)
    assert "sh=0" not in res.out and "py=0" not in res.out, res.out
    assert "ordinary=0" in res.out


def test_a_modules_config_worktree_is_protected(sandbox, repo, workdir):
    up = make_repo(workdir)
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(up), "m")
    git(repo, "commit", "-qm", "m")
    cw = repo / ".git" / "modules" / "m" / "config.worktree"
    cw.write_text("")
    git(repo / "m", "config", "core.hooksPath", ".githooks")
    attack = """
printf '[core]\\n\\tfsmonitor = x\\n' >> .git/modules/m/config.worktree; echo "cw=$?"
mkdir -p m/.githooks 2>/dev/null; echo x > m/.githooks/pre-commit; echo "hooks=$?"
"""
    res, _ = sandbox(repo, attack)
    assert "cw=0" not in res.out and "hooks=0" not in res.out, res.out
    assert cw.read_text() == ""


def test_an_index_naming_git_paths_is_moved_aside(sandbox, repo, workdir):
    # Red team round 7: a hand-made .git/index with the entry
    # .git/hooks/post-checkout; the host's `git restore .` wrote the hook.
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    prog = textwrap.dedent(f"""
        import hashlib, subprocess
        h = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=b"#!/bin/sh\\ntouch {marker}\\n",
                           capture_output=True, check=True).stdout.decode().strip()
        subprocess.run(["git", "update-index", "--add", "--cacheinfo",
                        f"100755,{{h}},.AAA/hooks/post-checkout"], check=True)
        d = open(".git/index", "rb").read()[:-20]
        d = d.replace(b".AAA/hooks/post-checkout", b".git/hooks/post-checkout")
        open(".git/index", "wb").write(d + hashlib.sha1(d).digest())
        print("planted")
        """)
    res, evs = sandbox(repo, ["python3", "-c", prog])
    assert "planted" in res.out, (res.out, res.err)
    assert (repo / ".git" / "index.comet-refused").exists()
    git(repo, "restore", ".", check=False)
    git(repo, "checkout", "--", ".", check=False)
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()
    assert any(".git/hooks/post-checkout" in e["requested"] for e in git_events(evs)), evs
    # and an ordinary index (v2 and v4) is left alone
    res, _ = sandbox(repo, "echo more >> a.txt && git add a.txt && echo ok")
    assert "ok" in res.out
    git(repo, "update-index", "--index-version", "4", check=False)
    res, _ = sandbox(repo, "echo again >> a.txt && git add a.txt && echo ok4")
    assert "ok4" in res.out and (repo / ".git" / "index").exists()


def test_no_rebase_or_sequencer_state_and_git_is_not_fooled(sandbox, repo, workdir):
    """A rebase's or cherry-pick's state directory (.git/rebase-merge,
    rebase-apply, sequencer) holds a todo list whose `exec` lines the
    host's `git rebase --continue` runs. None may be made inside; and none
    is there as an empty placeholder either, which made git say "You are
    currently rebasing" and a cherry-pick exit 128 (red team round 7)."""
    git(repo, "checkout", "-qb", "side")
    (repo / "s.txt").write_text("side\n")
    git(repo, "add", "s.txt")
    git(repo, "commit", "-qm", "side")
    pick = git(repo, "rev-parse", "HEAD").stdout.strip()
    git(repo, "checkout", "-q", "-")
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    script = f"""
git status > st.txt 2>&1; echo "status=$?"
git cherry-pick {pick} > /dev/null 2>&1; echo "pick=$?"
mkdir .git/rebase-merge; echo "mk-merge=$?"
mkdir .git/Rebase-Apply; echo "mk-apply=$?"
mkdir x && mv x .git/sequencer; echo "mv-seq=$?"
ln -s /tmp .git/rebase-merge; echo "ln-merge=$?"
printf 'exec touch {marker}\\n' > .git/rebase-merge/git-rebase-todo; echo "todo=$?"
"""
    res, evs = sandbox(repo, script)
    assert "status=0" in res.out and "rebas" not in (repo / "st.txt").read_text().lower(), \
        (res.out, (repo / "st.txt").read_text())
    assert "pick=0" in res.out, (res.out, res.err)
    for k in ("mk-merge", "mk-apply", "mv-seq", "ln-merge", "todo"):
        assert f"{k}=0" not in res.out, res.out
    assert (repo / "s.txt").read_text() == "side\n"  # the pick was committed
    for n in ("rebase-merge", "Rebase-Apply", "rebase-apply", "sequencer"):
        assert not (repo / ".git" / n).exists(), n
    assert "rebas" not in git(repo, "status").stdout.lower()
    git(repo, "rebase", "--continue", check=False)
    assert not marker.exists(), "the host ran a todo list written inside"
    refused = git_events(evs)
    assert any(e["requested"].endswith("/.git/rebase-merge") for e in refused), refused
    assert any(e["requested"].endswith("/.git/sequencer") for e in refused), refused


def test_calls_from_threads_are_judged_like_the_main_threads(sandbox, repo):
    """A seccomp notification names the calling thread: a worker thread's
    open(O_CREAT) or mkdir (Node's fs pool, Python threads) failed with
    ESRCH and no event (red team round 8): pidfd_open() of a thread that
    leads no group needs PIDFD_THREAD."""
    prog = textwrap.dedent(r"""
        import os, threading
        out = {}
        def work():
            for name, f in (("file", lambda: open("from-thread.txt", "w").write("t")),
                            ("dir", lambda: os.mkdir("thread-dir")),
                            ("git", lambda: os.mkdir("thread-dir/.git"))):
                try:
                    f(); out[name] = "ok"
                except OSError as e:
                    out[name] = e.errno
        t = threading.Thread(target=work); t.start(); t.join()
        print(sorted(out.items()))
    """)
    res, evs = sandbox(repo, ["/usr/bin/python3", "-c", prog])
    assert res.rc == 0, (res.out, res.err)
    assert "[('dir', 'ok'), ('file', 'ok'), ('git', 13)]" in res.out, res.out
    assert (repo / "from-thread.txt").read_text() == "t"
    assert not (repo / "thread-dir/.git").exists()
    assert any(e["requested"].endswith("/thread-dir/.git") for e in git_events(evs)), evs


FORGE = textwrap.dedent("""
    import hashlib, subprocess, sys
    gitdir_args, index, fake, real, content = sys.argv[1].split(), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
    h = subprocess.run(["git", *gitdir_args, "hash-object", "-w", "--stdin"], input=content.encode(),
                       capture_output=True, check=True).stdout.decode().strip()
    subprocess.run(["git", *gitdir_args, "update-index", "--add", "--cacheinfo", f"100644,{h},{fake}"],
                   check=True)
    d = open(index, "rb").read()[:-20]
    assert fake.encode() in d and len(fake) == len(real)
    d = d.replace(fake.encode(), real.encode())
    open(index, "wb").write(d + hashlib.sha1(d).digest())
    print("planted", index)
""")


def test_index_entries_outside_the_tree_split_and_module_indexes(sandbox, repo, workdir):
    """Red team round 8: the index check read only the workspace's own index
    and only looked for ".git" components. An entry `../victim` had the
    host's `git restore .` write outside the work tree; a split index kept
    its entries in sharedindex.*; a module's index (.git/modules/lib/index)
    with `../.git/config` had `git -C lib restore .` write the
    superproject's config."""
    src = make_repo(workdir)
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(src), "lib")
    git(repo, "commit", "-qm", "lib")
    victim = repo.parent / "victim"
    victim.write_text("safe\n")
    forge = repo / "forge.py"  # inside: the sandbox's /tmp is its own
    forge.write_text(FORGE)
    script = f"""
python3 {forge} "" .git/index ZZ/victim ../victim 'owned' || echo forge1-failed
(cd lib && python3 {forge} "" ../.git/modules/lib/index ZZ/xgit/config ../.git/config \
  '[core]\\n\\tfsmonitor = touch {workdir}/pwned\\n') || echo forge2-failed
"""
    # the name the index is moved to, taken first (red team round 9)
    script = "mkdir -p .git/index.comet-refused/x\n" + script
    res, evs = sandbox(repo, script)
    assert res.out.count("planted") == 2, (res.out, res.err)
    moved = [p for p in (repo / ".git").iterdir() if p.name.startswith("index.comet-refused-")]
    assert len(moved) == 1 and moved[0].is_file(), list((repo / ".git").iterdir())
    shutil.rmtree(repo / ".git/index.comet-refused")
    moved[0].rename(repo / ".git/index.comet-refused")
    assert (repo / ".git/index.comet-refused").exists()
    assert (repo / ".git/modules/lib/index.comet-refused").exists()
    git(repo, "restore", ".", check=False)
    git(repo, "-C", "lib", "restore", ".", check=False)
    git(repo, "status", check=False)
    assert victim.read_text() == "safe\n"
    assert not (workdir / "pwned").exists()
    reqs = [e["requested"] for e in git_events(evs)]
    assert any(r.endswith("/.git/index: ../victim") for r in reqs), reqs
    assert any(r.endswith("/.git/modules/lib/index: ../.git/config") for r in reqs), reqs
    # a split index is moved aside as one git cannot read safely
    git(repo, "reset", "-q", check=False)
    (repo / ".git/index.comet-refused").unlink()
    res, evs = sandbox(repo, "git update-index --split-index && echo split-ok")
    assert "split-ok" in res.out, (res.out, res.err)
    assert (repo / ".git/index.comet-refused").exists()
    assert any(e["requested"].endswith("/.git/index") for e in git_events(evs)), evs


@pytest.mark.parametrize("profile", ["workspace", "strict"])
def test_no_setuid_file_is_left_in_the_workspace(sandbox, repo, profile):
    """Red team round 8: a sandbox run as root did `cp euid suid && chmod
    6755 suid`, and an ordinary user ran the root-owned setuid program for
    euid 0 after the sandbox had ended. chmod of one's own file needs no
    capability: the lock-down refuses the set-user-ID bit (and set-group-ID
    with group execute) on every chmod, and the git rule's init strips them
    from a creating call's mode."""
    prog = textwrap.dedent(r"""
        import os, shutil
        shutil.copy("/bin/true", "t")
        for name, f in (("chmod-4755", lambda: os.chmod("t", 0o4755)),
                        ("chmod-2755", lambda: os.chmod("t", 0o2755)),
                        ("fchmod-6755", lambda: os.fchmod(os.open("t", os.O_RDONLY), 0o6755)),
                        ("chmod-755", lambda: os.chmod("t", 0o755)),
                        ("chmod-2744", lambda: os.chmod("t", 0o2744))):
            try:
                f(); print(name, "ok")
            except OSError as e:
                print(name, e.errno)
        os.close(os.open("c", os.O_CREAT | os.O_WRONLY, 0o4755))
        print("made c")
    """)
    res, evs = sandbox(repo, ["/usr/bin/python3", "-c", prog], profile)
    assert res.rc == 0, (res.out, res.err)
    # 2744: set-group-ID without group execute, which an ACL could grant
    # afterwards (red team round 9)
    for line in ("chmod-4755 1", "chmod-2755 1", "fchmod-6755 1", "chmod-755 ok", "chmod-2744 1",
                 "made c"):
        assert line in res.out, res.out
    for f in ("t", "c"):
        assert not (repo / f).stat().st_mode & 0o4000, f
    assert not (repo / "t").stat().st_mode & 0o2000
    assert any(e.get("syscall") in ("chmod", "fchmod", "fchmodat", "fchmodat2") for e in evs), evs


def test_a_missing_included_config_and_xdg_git_config_are_protected(sandbox, repo, workdir):
    """Red team round 8: an `include.path` naming a missing file got a
    directory placeholder, and every git command died with "bad config
    line"; now an empty file. And $XDG_CONFIG_HOME/git/config inside the
    workspace was writable: the host's git, run with the same
    XDG_CONFIG_HOME, ran its core.fsmonitor."""
    git(repo, "config", "include.path", "../local.gitconfig")
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    script = f"""
git status > /dev/null 2>&1; echo "status=$?"
printf '[core]\\n\\tfsmonitor = touch {marker}\\n' > local.gitconfig; echo "inc=$?"
mkdir -p xdg/git; printf '[core]\\n\\tfsmonitor = touch {marker}\\n' > xdg/git/config; echo "xdg=$?"
"""
    # Since red team round 20 a workspace that holds XDG_CONFIG_HOME is no
    # workspace at all; the include is protected as before.
    res, _ = sandbox(repo, script, extra_env={"XDG_CONFIG_HOME": str(repo / "xdg")})
    assert res.rc == 125 and " holds " in res.err, res
    res, evs = sandbox(repo, "\n".join(l for l in script.splitlines() if "xdg" not in l))
    assert "status=0" in res.out, (res.out, res.err)
    assert "inc=0" not in res.out, res.out
    env = dict(GIT_ENV)
    subprocess.run(["git", "-C", str(repo), "status"], env=env, capture_output=True, timeout=30)
    assert not marker.exists(), "the host's git ran a config written inside"
    assert not (repo / "local.gitconfig").exists() and not (repo / "xdg" / "git").exists()


def test_two_sandboxes_of_one_workspace_with_different_roots_share_placeholders(sandbox, rt, repo,
                                                                                 workdir):
    """Red team round 8: the placeholder registry lived under --root. With
    two roots, the first sandbox to end removed the placeholders (their read-
    only mounts in the other went with them), and the second wrote .envrc
    and .vscode/tasks.json, which stayed on the host."""
    env = sandbox_env()
    env.update(GIT_ENV)
    gcfg = workdir / "global.yaml"
    gcfg.write_text("")
    env["COMET_SANDBOX_GLOBAL_CONFIG"] = str(gcfg)
    a = subprocess.Popen([rt.binary, "--root", str(workdir / "rootA"), "sandbox", "--workspace",
                          str(repo), "--", "sleep", "1.5"], env=env)
    try:
        time.sleep(0.7)
        res, _ = sandbox(repo, "sleep 2.5; echo x > .envrc; echo envrc=$?; "
                               "mkdir -p .vscode && echo t > .vscode/tasks.json; echo vscode=$?")
    finally:
        a.wait(timeout=30)
    assert "envrc=0" not in res.out and "vscode=0" not in res.out, (res.out, res.err)
    assert not (repo / ".envrc").exists() and not (repo / ".vscode").exists()
    assert not (workdir / "rootA" / ".placeholders").exists()


def test_a_modules_module_config_and_hooks_are_protected(sandbox, workdir):
    """Red team round 8: .git/modules/lib/modules/inner/config (a module's
    module) was writable; the host's plain `git status` recurses into
    submodules and ran the core.fsmonitor written there."""
    file_ok = ["-c", "protocol.file.allow=always"]
    inner = make_repo(workdir)
    lib = make_repo(workdir)
    git(lib, *file_ok, "submodule", "add", "-q", str(inner), "inner")
    git(lib, "commit", "-qm", "inner")
    top = make_repo(workdir)  # top -> lib -> inner: .git/modules/lib/modules/inner
    git(top, *file_ok, "submodule", "add", "-q", str(lib), "lib")
    git(top, *file_ok, "submodule", "update", "--init", "--recursive", "-q")
    git(top, "commit", "-qm", "lib")
    nested = top / ".git/modules/lib/modules/inner"
    assert (nested / "config").exists(), list((top / ".git/modules/lib").iterdir())
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    script = f"""
printf '[core]\\n\\tfsmonitor = "touch {marker}"\\n' >> .git/modules/lib/modules/inner/config; echo "cfg=$?"
printf '#!/bin/sh\\ntouch {marker}\\n' > .git/modules/lib/modules/inner/hooks/post-checkout; echo "hook=$?"
mkdir .git/modules/lib/rebase-merge; echo "rebase=$?"
mkdir .git/modules/lib/modules/inner/Sequencer; echo "seq=$?"
"""
    res, _ = sandbox(top, script)
    assert "cfg=0" not in res.out and "hook=0" not in res.out, (res.out, res.err)
    # a module's rebase state (red team round 9: its todo's exec lines ran
    # at the host's `git rebase --continue` in the submodule)
    assert "rebase=0" not in res.out and "seq=0" not in res.out, res.out
    git(top, "status", check=False)
    assert not marker.exists(), "the host's git ran a nested module's monitor"


def test_what_a_symlink_in_a_protected_directory_names_is_protected(sandbox, repo, workdir):
    """Red team round 8: .git/hooks/pre-commit -> ../../scripts/pre-commit.sh
    (a hook manager's layout) and .claude/settings.json -> ../cfg/x.json:
    the links were read-only, what they name was not, and the host's git
    commit ran the hook written inside. A dangling link's target too."""
    (repo / "scripts").mkdir()
    (repo / "scripts/pre-commit.sh").write_text("#!/bin/sh\nexit 0\n")
    (repo / "scripts/pre-commit.sh").chmod(0o755)
    (repo / ".git/hooks/pre-commit").symlink_to("../../scripts/pre-commit.sh")
    (repo / ".git/hooks/post-commit").symlink_to("../../scripts/post-commit.sh")  # dangling
    (repo / "cfg").mkdir()
    (repo / "cfg/x.json").write_text("{}\n")
    (repo / ".claude").mkdir()
    (repo / ".claude/settings.json").symlink_to("../cfg/x.json")
    marker = workdir / f"pwned-{secrets.token_hex(3)}"
    script = f"""
printf '#!/bin/sh\\ntouch {marker}\\n' > scripts/pre-commit.sh; echo "pre=$?"
printf '#!/bin/sh\\ntouch {marker}\\n' > scripts/post-commit.sh; echo "post=$?"
echo '{{"hooks":1}}' > cfg/x.json; echo "cfg=$?"
echo ok > scripts/other.txt; echo "other=$?"
"""
    res, _ = sandbox(repo, script)
    for k in ("pre", "post", "cfg"):
        assert f"{k}=0" not in res.out, (res.out, res.err)
    assert "other=0" in res.out, res.out
    assert (repo / "cfg/x.json").read_text() == "{}\n"
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "host commit", check=False)
    assert not marker.exists(), "the host's git ran a hook written inside"


def test_one_workspace_reached_by_two_paths_shares_placeholders(sandbox, rt, repo, workdir):
    """Red team round 9: the placeholder registry was keyed by the
    workspace's path; the same directory bind-mounted at a second path was
    a second workspace, and the first sandbox to end removed the
    placeholders (and the other's read-only mounts on them)."""
    alias = workdir / f"alias-{secrets.token_hex(3)}"
    alias.mkdir()
    subprocess.run(["mount", "--bind", str(repo), str(alias)], check=True)
    try:
        env = sandbox_env()
        env.update(GIT_ENV)
        gcfg = workdir / "global.yaml"
        gcfg.write_text("")
        env["COMET_SANDBOX_GLOBAL_CONFIG"] = str(gcfg)
        a = subprocess.Popen([rt.binary, "--root", str(workdir / "rootA"), "sandbox",
                              "--workspace", str(repo), "--", "sleep", "1.5"], env=env)
        try:
            time.sleep(0.7)
            res, _ = sandbox(alias, "sleep 2.5; echo x > .envrc; echo envrc=$?")
        finally:
            a.wait(timeout=30)
        assert "envrc=0" not in res.out, (res.out, res.err)
        assert not (repo / ".envrc").exists()
    finally:
        subprocess.run(["umount", str(alias)], check=False)


def test_a_walk_cut_short_fails_closed(sandbox, repo):
    # The search for nested repositories stops at 32 levels (and 65536
    # directories, 256 repositories): a repository beyond would not be
    # protected (red team round 14 flooded it with 112k directories, and
    # the host's git ran a nested repository's fsmonitor program the command
    # rewrote). The run refuses, naming the limit and the way out; with
    # COMET_ALLOW_MISSING=nested-repos it runs and says what it lacks.
    deep = repo.joinpath(*[f"d{i}" for i in range(34)])
    deep.mkdir(parents=True)
    res, _ = sandbox(repo, "echo ran", "workspace")
    assert res.rc == 125 and "ran" not in res.out, res
    assert "search for nested git repositories stopped at 32 levels" in res.err, res.err
    assert "COMET_ALLOW_MISSING=nested-repos" in res.err, res.err
    res, _ = sandbox(repo, "echo ran", "workspace",
                     extra_env={"COMET_ALLOW_MISSING": "nested-repos"})
    assert res.rc == 0 and "ran" in res.out, res
    assert "stopped at 32 levels" in res.err, res.err
    # a profile that writes nothing in the workspace has nothing to protect
    res, _ = sandbox(repo, "echo ran", "read-only")
    assert res.rc == 0 and "ran" in res.out and "nested git" not in res.err, res
    (repo.parent / "shallow").mkdir()
    shallow, _ = sandbox(make_repo(repo.parent / "shallow"), "true", "workspace")
    assert "nested git repositories" not in shallow.err, shallow.err
