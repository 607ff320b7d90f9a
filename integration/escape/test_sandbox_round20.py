"""Attacks of red team round 20 (docs/sandbox.md, "Red team round 20"),
each of which got through on the round's binary (f22e34f): protected names
staged or committed through git's index and object store, which the host's
`git restore .`, `stash pop`, `reset --hard` or a checkout then wrote; a
push whose refspec a glob spells, or from a repository outside the
workspace, auto-allowed; an --events path through a link in the workspace;
a hidden directory of the home, or a project holding XDG_CONFIG_HOME, as
the workspace."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from lib.sandbox import GIT_ENV, git, sandbox_env

pytestmark = pytest.mark.comet_only

# Stages lefthook.yml and .envrc without ever making them in the work tree.
STAGE = ("b=$(printf 'pre-commit:\\n  commands:\\n    x:\\n      run: touch /tmp/x\\n' | "
         "git hash-object -w --stdin); e=$(echo 'touch /tmp/y' | git hash-object -w --stdin); "
         "git update-index --add --cacheinfo 100644,$b,lefthook.yml && "
         "git update-index --add --cacheinfo 100644,$e,.envrc")


def head(repo: Path, ref: str = "HEAD") -> str:
    return git(repo, "rev-parse", "-q", "--verify", ref, check=False).stdout.strip()


def refused_refs(repo: Path) -> list[str]:
    out = git(repo, "for-each-ref", "--format=%(refname)", "refs/comet-refused/").stdout
    return out.split()


def host_writes_nothing(repo: Path) -> None:
    # what a user does after a session: take the index back from HEAD, then
    # discard what looks deleted
    git(repo, "reset", "-q", check=False)
    git(repo, "restore", ".", check=False)
    git(repo, "reset", "-q", "--hard", check=False)
    assert not (repo / "lefthook.yml").exists() and not (repo / ".envrc").exists()


def test_protected_names_committed_through_the_index_are_put_back(sandbox, repo):
    old = head(repo)
    res, evs = sandbox(repo, STAGE + " && git commit -qm docs && echo committed")
    assert "committed" in res.out, res
    assert head(repo) == old, "HEAD kept the commit that adds protected names"
    kept = refused_refs(repo)
    assert len(kept) == 1 and kept[0].endswith("/refs/heads/" + git(
        repo, "symbolic-ref", "--short", "HEAD").stdout.strip()), kept
    names = git(repo, "ls-tree", "-r", "--name-only", kept[0]).stdout.split()
    assert "lefthook.yml" in names and ".envrc" in names  # the work is kept, not lost
    assert (repo / ".git" / "index.comet-refused").exists()
    assert any(e.get("surface") == "fs.write" and ".envrc" in e.get("requested", "")
               for e in evs), evs
    assert "put back to" in res.err, res.err
    host_writes_nothing(repo)


def test_staged_only_the_index_is_moved_aside(sandbox, repo):
    old = head(repo)
    res, evs = sandbox(repo, STAGE + " && echo staged")
    assert "staged" in res.out, res
    assert head(repo) == old
    assert (repo / ".git" / "index.comet-refused").exists()
    assert "stages the protected" in res.err, res.err
    host_writes_nothing(repo)


@pytest.mark.parametrize("route", [
    "{stage} && git commit -qm x && git branch side && git reset -q --hard HEAD~1",
    "{stage} && git stash -q",
    "{stage} && git commit -qm x && git tag v9 && git reset -q --hard HEAD~1",
    # ORIG_HEAD (the host's `git reset --hard ORIG_HEAD`), and a replace
    # ref that makes the old HEAD read as the new commit
    "{stage} && git commit -qm x && git reset -q --hard HEAD~1",
    "{stage} && git commit -qm x && m=$(git rev-parse HEAD) && git reset -q --hard HEAD~1 && "
    "git replace HEAD $m",
    # red team round 21: a stash whose untracked-files parent holds it (the
    # tip's tree does not), and a replace ref for HEAD's tree
    "b=$(echo 'touch /tmp/y' | git hash-object -w --stdin); "
    "u=$(printf '100644 blob %s\\t.envrc\\n' $b | git mktree); U=$(git commit-tree $u -m u); "
    "I=$(git commit-tree HEAD^{{tree}} -p HEAD -m i); "
    "W=$(git commit-tree HEAD^{{tree}} -p HEAD -p $I -p $U -m w); git update-ref refs/stash $W",
    "b=$(echo 'touch /tmp/y' | git hash-object -w --stdin); "
    "t=$( (git ls-tree HEAD; printf '100644 blob %s\\t.envrc\\n' $b) | git mktree); "
    "git replace -f $(git rev-parse HEAD^{{tree}}) $t",
])
def test_other_refs_with_protected_names_are_put_back(sandbox, repo, route):
    # a branch, a stash, a tag: `git checkout side`, `git stash pop`,
    # `git checkout v9` on the host would write them
    before = set(git(repo, "for-each-ref", "--format=%(refname)").stdout.split())
    res, _ = sandbox(repo, route.format(stage=STAGE) + "; echo rc=$?")
    assert "rc=0" in res.out, res
    after = set(git(repo, "for-each-ref", "--format=%(refname)").stdout.split())
    new = {r for r in after - before if not r.startswith("refs/comet-refused/")}
    assert new == set(), new
    assert refused_refs(repo), res.err
    assert not (repo / ".git" / "ORIG_HEAD").exists() or "lefthook.yml" not in git(
        repo, "--no-replace-objects", "ls-tree", "-r", "--name-only", "ORIG_HEAD").stdout
    for ref in after | {"HEAD"}:
        if not ref.startswith("refs/comet-refused/"):
            names = git(repo, "ls-tree", "-r", "--name-only", ref).stdout.split()
            assert "lefthook.yml" not in names and ".envrc" not in names, ref
    # what the host does next writes nothing protected
    git(repo, "stash", "pop", check=False)
    git(repo, "reset", "-q", "--hard", check=False)
    assert not (repo / ".envrc").exists() and not (repo / "lefthook.yml").exists()


def test_ordinary_commits_are_kept(sandbox, repo):
    # (switching branches inside is refused: HEAD is the git rule's)
    res, evs = sandbox(repo, "echo b > b.txt && git add b.txt && git commit -qm b && "
                             "git branch feature && echo c > c.txt && git add c.txt && "
                             "git commit -qm c && git stash list && echo ok")
    assert "ok" in res.out, res
    assert git(repo, "show", "-s", "--format=%s", "HEAD").stdout.strip() == "c"
    assert git(repo, "show", "-s", "--format=%s", "feature").stdout.strip() == "b"
    assert refused_refs(repo) == [] and not (repo / ".git" / "index.comet-refused").exists()
    assert [e for e in evs if e.get("surface") == "fs.write"] == [], evs


def verdict(rt, ws: Path, script: str, gcfg: Path) -> str:
    r = subprocess.run([str(rt.binary), "--root", str(rt.root), "sandbox", "--can-auto-allow",
                        "--workspace", str(ws), "--", "sh", "-c", script], capture_output=True,
                       text=True, env={**sandbox_env(gcfg), **GIT_ENV}, timeout=60)
    return r.stdout.replace(" ", "")


@pytest.mark.parametrize("script", [
    "touch ./+main; git push origin ?main",
    "git push origin [+]main",
    "python3 -m tarfile -e r.tar /tmp && git -C /tmp/r push origin",
    "wget -q -r -np -nH -P /tmp http://127.0.0.1:9/r/ ; git -C /tmp/r push origin",
    "cd /srv/elsewhere && git push",
])
def test_pushes_the_verdict_cannot_read_ask(rt, repo, gcfg, script):
    assert '"auto_allow":false' in verdict(rt, repo, script, gcfg)


def test_a_plain_push_is_still_allowed(rt, repo, gcfg):
    assert '"auto_allow":true' in verdict(rt, repo, "git push origin main", gcfg)


def test_events_through_a_link_in_the_workspace_are_refused(rt, repo, workdir, gcfg):
    out = workdir / "logs"
    out.mkdir()
    os.symlink(out, repo / "logs")
    for events in (repo / "logs" / "ev.jsonl", repo / "x" / ".." / ".." / "ev.jsonl"):
        res = rt("sandbox", "--workspace", str(repo), "--events", str(events), "--", "true",
                 env=sandbox_env(gcfg))
        assert res.rc == 125 and "goes through" in res.err, res
    assert not (out / "ev.jsonl").exists()


@pytest.mark.parametrize("where", [".rustup", ".cache/pre-commit/r", "proj-with-xdg"])
def test_tool_state_in_the_home_is_no_workspace(rt, workdir, gcfg, where):
    home = workdir / "home"
    ws = home / where
    ws.mkdir(parents=True)
    env = sandbox_env(gcfg, HOME=str(home))
    if where == "proj-with-xdg":
        (ws / ".xdg").mkdir()
        env["XDG_CONFIG_HOME"] = str(ws / ".xdg")
    res = rt("sandbox", "--workspace", str(ws), "--", "true", env=env)
    assert res.rc == 125, res
    assert "hidden directory of the home" in res.err or " holds " in res.err, res.err


def test_a_first_commit_in_a_fresh_repository_is_looked_at(sandbox, workdir):
    # red team round 21: no HEAD before the run (an unborn branch): the
    # check could not compare and let the commit through
    ws = workdir / "fresh"
    ws.mkdir()
    git(ws, "init", "-q")
    res, _ = sandbox(ws, STAGE + " && git commit -qm first && echo committed")
    assert "committed" in res.out, res
    assert head(ws) == "", "the new branch kept a commit with protected names"
    assert refused_refs(ws), res.err
    host_writes_nothing(ws)


def test_a_first_ordinary_commit_in_a_fresh_repository_is_kept(sandbox, workdir):
    ws = workdir / "fresh2"
    ws.mkdir()
    git(ws, "init", "-q")
    res, _ = sandbox(ws, "echo a > a && git add a && git commit -qm first && echo committed")
    assert "committed" in res.out, res
    assert head(ws) != "" and refused_refs(ws) == [], res.err


# ---- red team round 21 (against bf881cd): past the history check ----------

PLANT = ("b=$(echo 'touch /tmp/y' | git hash-object -w --stdin); "
         "t=$( (git ls-tree HEAD; printf '100644 blob %s\\t.envrc\\n' $b) | git mktree); "
         "C=$(git commit-tree $t -p HEAD -m planted); ")


@pytest.mark.parametrize("route", [
    # a symbolic ref to what the check keeps
    PLANT + "git update-ref refs/comet-refused/x $C && "
            "git symbolic-ref refs/heads/g refs/comet-refused/x",
    # a lock the command leaves behind, so that git cannot put the ref back
    PLANT + "git update-ref refs/heads/f $C && touch .git/refs/heads/f.lock",
    # an entry out of order in a packed-refs that says it is sorted
    PLANT + "git pack-refs --all && printf '%s refs/heads/a\\n' $C >> .git/packed-refs",
    # a .git/shallow that makes git fail (protected since round 23: the
    # write is refused, the ref still put back)
    PLANT + "git update-ref refs/heads/f $C && echo junk > .git/shallow",
    # a ref moved there and back: only the reflog names it
    PLANT + "H=$(git rev-parse HEAD) && git update-ref refs/heads/$(git branch --show-current) $C "
            "&& git update-ref refs/heads/$(git branch --show-current) $H",
])
def test_refs_the_check_could_not_put_back_are_put_back(sandbox, repo, route):
    before = git(repo, "rev-parse", "HEAD").stdout.strip()
    res, _ = sandbox(repo, route + "; echo rc=$?")
    assert "rc=0" in res.out or ("shallow" in route and ".git/shallow" in res.err), res
    (repo / ".git" / "shallow").unlink(missing_ok=True)  # what a user repairs first
    assert head(repo) == before
    refs = git(repo, "for-each-ref", "--format=%(refname)").stdout.split()
    for ref in [r for r in refs if not r.startswith("refs/comet-refused/")] + ["HEAD@{1}"]:
        names = git(repo, "ls-tree", "-r", "--name-only", ref, check=False).stdout.split()
        assert ".envrc" not in names, ref
    for ref in ("f", "g", "a", "HEAD@{1}"):
        git(repo, "checkout", "-q", ref, check=False)
        git(repo, "reset", "-q", "--hard", ref, check=False)
        assert not (repo / ".envrc").exists(), ref


def test_a_rewritten_reflog_is_removed(sandbox, repo):
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-qm", "second")
    res, _ = sandbox(repo, PLANT.replace("-p HEAD ", "") +
                     "P=$(git rev-parse HEAD~1); H=$(git rev-parse HEAD); "
                     "sed -i \"s/^$P $H/$C $H/\" .git/logs/HEAD && echo edited")
    assert "edited" in res.out, res
    git(repo, "reset", "-q", "--hard", "HEAD@{1}", check=False)
    assert not (repo / ".envrc").exists()


def test_the_reflog_of_ordinary_commits_is_kept(sandbox, repo):
    res, _ = sandbox(repo, "echo b > b.txt && git add b.txt && git commit -qm b && echo ok")
    assert "ok" in res.out, res
    log = git(repo, "reflog", "--format=%gs").stdout
    assert "commit: b" in log, log


def test_refs_moved_to_commits_that_were_there_are_kept(sandbox, repo):
    (repo / "c.txt").write_text("c\n")
    git(repo, "add", "c.txt")
    git(repo, "commit", "-qm", "two")
    res, evs = sandbox(repo, "git branch x && git reset -q --hard HEAD~1 && git tag t1 && echo ok")
    assert "ok" in res.out, res
    refs = git(repo, "for-each-ref", "--format=%(refname)").stdout.split()
    assert "refs/heads/x" in refs and "refs/tags/t1" in refs, refs
    assert git(repo, "show", "-s", "--format=%s", "HEAD").stdout.strip() == "init"
    assert [e for e in evs if e.get("surface") == "fs.write"] == [], evs


PATCH_GRAPH = r"""
import subprocess, sys
def g(*a, **k):
    return subprocess.run(["git", *a], capture_output=True, text=True, check=True, **k).stdout.strip()
t = g("rev-parse", "HEAD^{tree}")
b = g("hash-object", "-w", "--stdin", input="touch /tmp/y\n")
t2 = g("mktree", input=g("ls-tree", "HEAD") + "\n100644 blob %s\t.envrc\n" % b)
g("commit-graph", "write", "--reachable")
p = ".git/objects/info/commit-graph"
d = open(p, "rb").read()
i = d.find(bytes.fromhex(t))
open(p + ".new", "wb").write(d[:i] + bytes.fromhex(t2) + d[i + len(t2) // 2:])
import os
os.replace(p + ".new", p)
print("patched", i)
"""


def test_a_commit_graph_the_run_made_is_removed(sandbox, repo):
    # a commit-graph maps HEAD's commit to another tree, and the host's git
    # believes it (`git status` showed `D .envrc`; `git restore` wrote it)
    res, _ = sandbox(repo, ["python3", "-c", PATCH_GRAPH])
    assert "patched" in res.out, res
    assert not (repo / ".git/objects/info/commit-graph").exists()
    assert git(repo, "status", "--porcelain").stdout.strip() == ""
    git(repo, "restore", "--staged", "--worktree", ".", check=False)
    assert not (repo / ".envrc").exists()


def test_alternates_are_protected(sandbox, repo):
    res, _ = sandbox(repo, "echo /tmp/elsewhere > .git/objects/info/alternates; echo rc=$?")
    assert "rc=0" not in res.out, res
    assert not (repo / ".git/objects/info/alternates").exists()


FORGE = r"""
import os, subprocess, sys
def g(*a, **k):
    return subprocess.run(["git", *a], capture_output=True, text=True, check=True, **k).stdout.strip()
old = g("rev-parse", "HEAD^{tree}")
b = g("hash-object", "-w", "--stdin", input="touch /tmp/y\n")
new = g("mktree", input=g("ls-tree", "HEAD") + "\n100644 blob %s\t.envrc\n" % b)
src = ".git/objects/%s/%s" % (new[:2], new[2:])
dst = ".git/objects/%s/%s" % (old[:2], old[2:])
data = open(src, "rb").read()
if sys.argv[1] == "rename":
    open(dst + ".x", "wb").write(data)
    os.rename(dst + ".x", dst)
elif sys.argv[1] == "unlink":
    os.unlink(dst)
    open(dst, "wb").write(data)
else:
    os.chmod(dst, 0o644)
    try:
        open(dst, "r+b").write(data)
    except OSError as e:
        print("refused", e.errno)
print("forged")
"""


@pytest.mark.parametrize("how", ["rename", "unlink", "inplace"])
def test_a_rewritten_loose_object_is_not_read(sandbox, repo, how):
    # red team round 21: HEAD's tree object rewritten to hold .envrc; git
    # does not check an object's hash when it reads it
    res, _ = sandbox(repo, ["python3", "-c", FORGE, how])
    assert "forged" in res.out, res
    if how == "inplace":
        assert "refused 13" in res.out, res
    git(repo, "reset", "-q", "--hard", check=False)
    git(repo, "checkout", "-q", "--", ".", check=False)
    assert not (repo / ".envrc").exists()


FORGE_PACK = r"""
import os, struct, subprocess, glob
def g(*a, **k):
    return subprocess.run(["git", *a], capture_output=True, text=True, check=True, **k).stdout.strip()
old = g("rev-parse", "HEAD^{tree}")
b = g("hash-object", "-w", "--stdin", input="touch /tmp/y\n")
new = g("mktree", input=g("ls-tree", "HEAD") + "\n100644 blob %s\t.envrc\n" % b)
sha = g("pack-objects", ".git/objects/pack/pack", input=new + "\n" + b + "\n")
idx = ".git/objects/pack/pack-%s.idx" % sha
d = bytearray(open(idx, "rb").read())
n = struct.unpack(">I", d[8 + 255 * 4: 8 + 256 * 4])[0]
names = [bytes(d[8 + 1024 + 20 * i: 8 + 1024 + 20 * (i + 1)]) for i in range(n)]
offs = [d[8 + 1024 + 24 * n + 4 * i: 8 + 1024 + 24 * n + 4 * (i + 1)] for i in range(n)]
crcs = [d[8 + 1024 + 20 * n + 4 * i: 8 + 1024 + 20 * n + 4 * (i + 1)] for i in range(n)]
rows = []
for nm, crc, off in zip(names, crcs, offs):
    if nm.hex() == new:
        nm = bytes.fromhex(old)
    rows.append((nm, crc, off))
rows.sort()
fan = [sum(1 for r in rows if r[0][0] <= i) for i in range(256)]
out = bytes(d[:8]) + b"".join(struct.pack(">I", f) for f in fan)
out += b"".join(r[0] for r in rows) + b"".join(bytes(r[1]) for r in rows) + b"".join(bytes(r[2]) for r in rows)
out += bytes(d[8 + 1024 + 28 * n:])
open(idx + ".x", "wb").write(out)
os.replace(idx + ".x", idx)
print("forged pack", sha)
"""


def test_a_pack_whose_index_lies_is_moved_aside(sandbox, repo):
    # an index that names HEAD's tree at the offset of another tree
    res, _ = sandbox(repo, ["python3", "-c", FORGE_PACK])
    assert "forged pack" in res.out, res
    packs = sorted(p.name for p in (repo / ".git/objects/pack").iterdir())
    assert packs and all(p.endswith(".comet-refused") for p in packs), packs
    assert "does not hold what its index says" in res.err, res.err
    git(repo, "reset", "-q", "--hard", check=False)
    assert not (repo / ".envrc").exists()


def test_a_pack_git_gc_made_is_kept(sandbox, repo):
    res, _ = sandbox(repo, "echo b > b && git add b && git commit -qm b && git gc -q; echo ok")
    assert "ok" in res.out, res
    packs = [p.name for p in (repo / ".git/objects/pack").iterdir()]
    assert any(p.endswith(".pack") for p in packs), packs
    assert git(repo, "fsck", check=False).returncode == 0


# ---- red team round 22 (against a481384) -----------------------------------

def test_a_gitlink_moved_to_a_commit_the_command_made_is_put_back(sandbox, repo, workdir):
    # the superproject's commit moves `sub` to a module commit holding
    # .envrc; the host's `git submodule update` would check it out
    up = workdir / "up"
    up.mkdir()
    git(up, "init", "-q")
    (up / "s.txt").write_text("s\n")
    git(up, "add", "s.txt")
    git(up, "commit", "-qm", "s")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(up), "sub")
    git(repo, "commit", "-qm", "addsub")
    before = head(repo)
    res, _ = sandbox(repo, "c=$(cd sub && b=$(echo x | git hash-object -w --stdin) && "
                           "t=$( (git ls-tree HEAD; printf '100644 blob %s\\t.envrc\\n' $b) | "
                           "git mktree) && git commit-tree -p HEAD -m bump $t) && "
                           "git update-index --cacheinfo 160000,$c,sub && git commit -qm bump && "
                           "echo committed")
    assert "committed" in res.out, res
    assert head(repo) == before
    git(repo, "reset", "-q", "--hard", check=False)
    git(repo, "-c", "protocol.file.allow=always", "submodule", "update", check=False)
    assert not (repo / "sub" / ".envrc").exists()
