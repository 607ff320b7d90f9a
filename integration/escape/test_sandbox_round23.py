"""Attacks of red team round 23 (docs/sandbox.md, "Red team round 23"),
each of which got through on the round's binary (ef7791c): git's own state
files that name a commit without being a ref (BISECT_START, MERGE_AUTOSTASH,
FETCH_HEAD past its first line, a reflog entry's message), a refused commit
the check had kept brought back by a clean child, a `.git/shallow` that
hid a commit from the check's git, and remote deletions spelled outside the floor's
list. Each test fails on ef7791c; round 24's (what git reads as a revision,
named other than by a lower-case full id) on f5ba04a; round 25's (a lying
cached tree in the index, rerere's cache) on fa8ab35; round 26's (new names at
the top of .git, resolve-undo) on b73f4b2; round 27's (names git keeps or
had, more hook and agent config) on 88e5a38. (An object directory an ordinary user's
run made unreadable: rootless/test_sandbox_rootless.py.)"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from lib.sandbox import git, sandbox_env

pytestmark = pytest.mark.comet_only

# $C: a commit on HEAD whose tree adds .envrc (made in the object store
# only; the work tree never holds it).
EVIL = ("B=$(echo 'touch /tmp/pwned' | git hash-object -w --stdin); "
        "T=$( (git ls-tree HEAD; printf '100644 blob %s\\t.envrc\\n' $B) | git mktree); "
        "C=$(echo evil | git commit-tree $T -p HEAD); H=$(git rev-parse HEAD); ")


def host(repo: Path, *args: str) -> None:
    git(repo, *args, check=False)


@pytest.mark.parametrize("plant, then", [
    # `git bisect reset` checks out what BISECT_START names
    ("echo $C > .git/BISECT_START && echo 'git bisect start' > .git/BISECT_LOG",
     [("bisect", "reset")]),
    # `git merge --abort` applies MERGE_AUTOSTASH (its untracked-files parent)
    ("HT=$(git rev-parse HEAD^{tree}); "
     "UT=$(printf '100644 blob %s\\t.envrc\\n' $B | git mktree); "
     "U=$(echo untracked | git commit-tree $UT); I=$(echo index | git commit-tree $HT -p HEAD); "
     "W=$(echo wip | git commit-tree $HT -p HEAD -p $I -p $U); "
     "echo $W > .git/MERGE_AUTOSTASH && echo $H > .git/MERGE_HEAD && echo m > .git/MERGE_MSG",
     [("merge", "--abort")]),
    # `git merge FETCH_HEAD` merges every line not marked not-for-merge
    ("printf '%s\\t\\tbranch main of /x\\n%s\\t\\tbranch dev of /x\\n' $H $C > .git/FETCH_HEAD",
     [("merge", "--no-edit", "FETCH_HEAD")]),
    # `git checkout -` goes where the last "checkout: moving from" says
    ("printf '%s %s a <a@b> 1700000000 +0000\\tcheckout: moving from %s to main\\n' $H $H $C "
     ">> .git/logs/HEAD", [("checkout", "-")]),
])
def test_state_files_naming_a_commit_are_checked(sandbox, repo, plant, then):
    res, evs = sandbox(repo, EVIL + plant + " && echo planted")
    assert "planted" in res.out, res
    for args in then:
        host(repo, *args)
    assert not (repo / ".envrc").exists(), "the host's git wrote .envrc"
    assert "protected .envrc" in res.err or "change protected paths" in res.err, res.err
    assert any(".envrc" in e.get("requested", "") or "logs/HEAD" in e.get("requested", "")
               for e in evs), evs


# Red team round 24 (against f5ba04a): what git reads as a revision, named
# other than by a lower-case full id. Each plant in one run; $K is the
# refused commit the check keeps when the run also moves main to $C.
KEEP = "git update-ref refs/heads/main $C; "
UP = "$(echo $C | tr a-f A-F)"


@pytest.mark.parametrize("plant, then", [
    ("echo $C | cut -c1-6 > .git/BISECT_START", [("bisect", "reset")]),
    (KEEP + "echo ':/evil' > .git/BISECT_START", [("bisect", "reset")]),
    ("echo refs/comet-refused > .git/BISECT_START", [("bisect", "reset")]),
    ("echo ref: refs/heads/x > .git/ORIG_HEAD && git update-ref refs/heads/x $H",
     [("reset", "-q", "--hard", "ORIG_HEAD")]),
    (f"echo {UP} > .git/ORIG_HEAD", [("reset", "-q", "--hard", "ORIG_HEAD")]),
    (f"printf '%s\\t\\tbranch dev of /x\\n' {UP} > .git/FETCH_HEAD",
     [("merge", "--no-edit", "FETCH_HEAD")]),
    (f"echo {UP} > .git/refs/heads/up", [("checkout", "-q", "up")]),
    (f"printf '%s %s a <a@b> 1700000000 +0000\\tx\\n' $H {UP} >> .git/logs/refs/heads/main",
     [("reset", "-q", "--hard", "main@{0}")]),
])
def test_revisions_named_otherwise_are_read_as_git_reads_them(sandbox, repo, plant, then):
    res, evs = sandbox(repo, EVIL + plant + " ; echo planted")
    assert "planted" in res.out, res
    for args in then:
        host(repo, *args)
    assert not (repo / ".envrc").exists(), res.err
    assert evs, res.err


def test_checkout_dash_to_a_kept_refused_commit(sandbox, repo):
    sandbox(repo, EVIL + KEEP)
    res, evs = sandbox(repo, "R=$(git for-each-ref --format='%(refname)' refs/comet-refused | "
                       "head -1); H=$(git rev-parse HEAD); printf '%s %s a <a@b> 1700000000 "
                       "+0000\tcheckout: moving from %s to main\n' $H $H $R >> .git/logs/HEAD")
    host(repo, "checkout", "-q", "-")
    assert not (repo / ".envrc").exists(), res.err
    assert evs, res.err


def test_a_kept_refused_commit_is_not_known(sandbox, repo):
    # run 1: main to C2, whose parent C1 adds .envrc: put back, kept
    two = (EVIL.replace("C=$(echo evil | git commit-tree $T -p HEAD)",
                        "C1=$(echo wip | git commit-tree $T -p HEAD)") +
           "C2=$(echo tidy | git commit-tree $(git rev-parse HEAD^{tree}) -p $C1); "
           "git update-ref refs/heads/main $C2")
    res, _ = sandbox(repo, two)
    kept = git(repo, "for-each-ref", "--format=%(objectname)", "refs/comet-refused/").stdout.split()
    assert len(kept) == 1, res.err
    # run 2: main to the kept C2 again
    res, evs = sandbox(repo, f"git update-ref refs/heads/main {kept[0]}")
    assert git(repo, "rev-parse", "HEAD").stdout.strip() != kept[0], res.err
    host(repo, "reset", "-q", "--hard", "HEAD~1")
    assert not (repo / ".envrc").exists()
    assert any(".envrc" in e.get("requested", "") for e in evs), evs


def test_shallow_is_protected(sandbox, repo):
    res, evs = sandbox(repo, "git rev-parse HEAD > .git/shallow; echo rc=$?")
    assert "rc=0" not in res.out, res
    assert not (repo / ".git" / "shallow").exists()
    assert any(e.get("requested", "").endswith(".git/shallow") for e in evs), evs


def test_a_submodules_own_refs_and_index_are_checked(sandbox, repo, workdir):
    # Red team round 22, not closed until now: the module's own ref moved
    # to a commit adding .envrc, and .vscode/settings.json staged in its
    # index; the host's `git -C sub reset --hard` / `checkout -- .` wrote
    # them. Every module's git directory is checked as the work tree's is.
    up = workdir / "up"
    up.mkdir()
    git(up, "init", "-q", "-b", "main")
    (up / "u").write_text("u\n")
    git(up, "add", "u")
    git(up, "commit", "-qm", "u")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(up), "sub")
    git(repo, "commit", "-qm", "sub")
    res, evs = sandbox(repo, "cd sub && " + EVIL + "git update-ref refs/heads/main $C && "
                       "git update-index --add --cacheinfo 100644,$B,.vscode/settings.json "
                       "&& echo planted")
    assert "planted" in res.out, res
    sub = repo / "sub"
    git(sub, "reset", "-q", "--hard", check=False)
    git(sub, "checkout", "-q", "--", ".", check=False)
    assert not (sub / ".envrc").exists() and not (sub / ".vscode").exists(), res.err
    requested = [e.get("requested", "") for e in evs]
    assert any("sub/.envrc" in r for r in requested), requested
    assert any("modules/sub/index" in r for r in requested), requested


# Red team round 25: the index's cached tree for .vscode (a directory
# whose entries equal HEAD's) rewritten to a tree the command made; the
# host's next `git add x && git commit` took it.
PATCH_TREE = r"""
import hashlib, struct, sys
path, name, new = sys.argv[1], sys.argv[2].encode(), bytes.fromhex(sys.argv[3])
d = bytearray(open(path, 'rb').read())
body = d[:-20]
n = struct.unpack('>I', body[8:12])[0]
off = 12
for _ in range(n):
    nl = struct.unpack('>H', body[off + 60:off + 62])[0] & 0xfff
    off += (62 + nl + 8) & ~7
while off < len(body):
    sig, sz = bytes(body[off:off + 4]), struct.unpack('>I', body[off + 4:off + 8])[0]
    if sig == b'TREE':
        t, end = off + 8, off + 8 + sz
        while t < end:
            z = body.index(b'\0', t); p = bytes(body[t:z]); nl = body.index(b'\n', z)
            cnt = int(body[z + 1:nl].split(b' ')[0]); t = nl + 1
            if cnt >= 0:
                if p == name:
                    body[t:t + 20] = new
                t += 20
    off += 8 + sz
open(path, 'wb').write(bytes(body) + hashlib.sha1(bytes(body)).digest())
"""


def test_a_lying_cached_tree_in_the_index_is_moved_aside(sandbox, repo):
    (repo / ".vscode").mkdir(exist_ok=True)
    (repo / ".vscode" / "settings.json").write_text("{}\n")
    (repo / "src").mkdir()
    (repo / "src" / "main.c").write_text("int main(){}\n")
    git(repo, "add", "-f", ".")
    git(repo, "commit", "-qm", "base")
    git(repo, "read-tree", "HEAD")  # a full cached tree, as after many git commands
    (repo / "patch.py").write_text(PATCH_TREE)
    res, evs = sandbox(repo, "t=$(echo '{\"tasks\":[]}' | git hash-object -w --stdin); "
                       "s=$(git rev-parse HEAD:.vscode/settings.json); "
                       "T=$(printf '100644 blob %s\\tsettings.json\\n100644 blob %s\\ttasks.json\\n' "
                       "$s $t | git mktree); python3 patch.py .git/index .vscode $T && echo patched")
    assert "patched" in res.out, res
    (repo / "src" / "main.c").write_text("int main(){return 0;}\n")
    git(repo, "add", "src/main.c")
    git(repo, "commit", "-qm", "work")
    names = git(repo, "ls-tree", "-r", "--name-only", "HEAD").stdout.split()
    assert ".vscode/tasks.json" not in names, res.err
    assert any("index" in e.get("requested", "") for e in evs), evs


def test_rerere_cache_is_protected(sandbox, repo):
    res, evs = sandbox(repo, "mkdir -p .git/rr-cache/x && echo x > .git/rr-cache/x/postimage; "
                       "echo rc=$?")
    assert "rc=0" not in res.out, res
    assert not (repo / ".git" / "rr-cache" / "x" / "postimage").exists()
    assert any("rr-cache" in e.get("requested", "") for e in evs), evs


# Red team round 26 (against b73f4b2): names git takes before any ref
# ($GIT_DIR/NAME: `git checkout v1.0`, `reset --hard origin/main`), and
# resolve-undo stages for a protected file in the index (`git checkout -m`).
@pytest.mark.parametrize("name, then", [
    ("v1.0", [("checkout", "-q", "v1.0")]),
    ("origin/main", [("reset", "-q", "--hard", "origin/main")]),
])
def test_new_names_at_the_top_of_git_are_moved_aside(sandbox, repo, name, then):
    res, evs = sandbox(repo, EVIL + f"mkdir -p .git/$(dirname {name}) && echo $C > .git/{name} "
                       "&& echo planted")
    assert "planted" in res.out, res
    for args in then:
        host(repo, *args)
    assert not (repo / ".envrc").exists(), res.err
    assert not (repo / ".git" / name).exists(), res.err
    assert any(".git/" + name.split("/")[0] in e.get("requested", "") for e in evs), evs


# Red team round 27 (against 88e5a38): the same through names git keeps
# there or that were there before (git reads any of them as a ref).
@pytest.mark.parametrize("plant, then", [
    ("echo $C > .git/FEATURE", [("checkout", "-q", "FEATURE")]),
    ("echo $C > .git/index.v2", [("checkout", "-q", "index.v2")]),
    ("echo $C > .git/description", [("checkout", "-q", "description")]),
])
def test_any_file_git_reads_as_a_ref_is_judged(sandbox, repo, plant, then):
    res, evs = sandbox(repo, EVIL + plant + " && echo planted")
    assert "planted" in res.out, res
    for args in then:
        host(repo, *args)
    assert not (repo / ".envrc").exists(), res.err
    assert evs, res.err


def test_a_name_git_keeps_as_a_symbolic_ref_to_a_kept_commit(sandbox, repo):
    sandbox(repo, EVIL + KEEP)
    res, evs = sandbox(repo, "R=$(git for-each-ref --format='%(refname)' refs/comet-refused | "
                       "head -1); echo ref: $R > .git/FEATURE")
    host(repo, "checkout", "-q", "FEATURE")
    assert not (repo / ".envrc").exists(), res.err
    assert evs, res.err


REWRITE_SHARED = r"""
import glob, subprocess, sys
old = bytes.fromhex(subprocess.check_output(["git", "rev-parse", "HEAD:.envrc"]).decode().strip())
new = bytes.fromhex(sys.argv[1])
for p in glob.glob(".git/sharedindex.*"):
    d = bytearray(open(p, "rb").read())
    i = d.find(old)
    if i >= 0:
        d[i:i + 20] = new
        with open(p, "r+b") as f:
            f.write(d)
        print("rewrote")
"""


def test_a_shared_index_rewritten_in_place_is_checked(sandbox, repo):
    # Red team round 27: with core.splitIndex, the run rewrote the existing
    # sharedindex.* in place (.envrc's blob id -> its own) and left .git/index
    # alone; the user's next commit took the command's .envrc.
    (repo / ".envrc").write_text("echo safe\n")
    git(repo, "add", "-f", ".envrc")
    git(repo, "commit", "-qm", "envrc")
    time.sleep(1.2)  # past git's racy-stat window, as a real session is
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    time.sleep(1.2)
    git(repo, "config", "core.splitIndex", "true")
    git(repo, "update-index", "--split-index")
    time.sleep(1.1)
    (repo / "rewrite.py").write_text(REWRITE_SHARED)
    res, evs = sandbox(repo, "b=$(echo 'touch /tmp/pwned' | git hash-object -w --stdin); "
                       "python3 rewrite.py $b")
    assert "rewrote" in res.out, res
    git(repo, "commit", "-qm", "b", check=False)
    git(repo, "checkout", "-q", "HEAD~1", check=False)
    git(repo, "checkout", "-q", "-", check=False)
    envrc = repo / ".envrc"
    assert not envrc.exists() or "pwned" not in envrc.read_text(), res.err
    assert evs, res.err


@pytest.mark.parametrize("name", ["lefthook-local.yml", ".gemini/settings.json",
                                  ".kiro/settings/mcp.json", "opencode.json"])
def test_more_hook_and_agent_config_is_protected(sandbox, repo, name):
    res, evs = sandbox(repo, f"mkdir -p $(dirname {name}) 2>/dev/null; echo x > {name}; "
                       "echo rc=$?")
    assert "rc=0" not in res.out, res
    assert not (repo / name).exists() or (repo / name).read_text() != "x\n"
    assert evs, res.err


def test_resolve_undo_of_a_protected_file_moves_the_index_aside(sandbox, repo):
    (repo / ".envrc").write_text("export FOO=1\n")
    git(repo, "add", "-f", ".envrc")
    git(repo, "commit", "-qm", "envrc")
    res, evs = sandbox(repo, "E=$(echo 'touch /tmp/pwned' | git hash-object -w --stdin); "
                       "O=$(git rev-parse HEAD:.envrc); "
                       "printf '0 %040d\\t.envrc\\n100644 %s 2\\t.envrc\\n100644 %s 3\\t.envrc\\n' "
                       "0 $E $E | git update-index --index-info && "
                       "git update-index --cacheinfo 100644,$O,.envrc && "
                       "git ls-files --resolve-undo | grep -q envrc && echo planted")
    assert "planted" in res.out, res
    host(repo, "checkout", "-m", "--", ".")
    assert (repo / ".envrc").read_text() == "export FOO=1\n", res.err
    assert (repo / ".git" / "index.comet-refused").exists(), res.err
    assert any("index" in e.get("requested", "") for e in evs), evs


@pytest.mark.parametrize("argv", [
    ["gsutil", "rm", "-r", "gs://b"],
    ["rclone", "purge", "r:b"],
    ["kubectl", "exec", "pod", "--", "rm", "-rf", "/data"],
    ["terraform", "workspace", "delete", "prod"],
    ["npm", "unpublish", "pkg", "--force"],
    ["gh", "api", "graphql", "-f", "query=mutation{deleteRepository}"],
    ["curl", "-X", "DELETE", "https://api.github.com/repos/o/r"],
    ["hub", "delete", "o/r"],
])
def test_remote_deletions_are_asked_about(rt, repo, argv):
    res = rt("sandbox", "--workspace", str(repo), "--can-auto-allow", "--", *argv,
             env=sandbox_env())
    verdict = json.loads(res.out)
    assert verdict["auto_allow"] is False, res.out
    assert "remote-destroy" in res.out, res.out
