"""`comet-runtime sandbox` as an ordinary user (issue 24; docs/sandbox.md
"Rootless"): every profile runs as the caller's own uid in a user namespace
that maps only that uid, with the protections it has as root, and leaves
nothing behind. One user per module (integration/lib/rootless.py)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lib import config as cfg  # noqa: E402
from lib.rootless import OrdinaryUser  # noqa: E402

PROFILES = ["workspace", "devbox", "read-only", "strict"]
WRITES_WS = ["workspace", "devbox", "strict"]
RESTRICTED = ["read-only", "strict"]


@pytest.fixture(scope="module")
def user():
    with OrdinaryUser() as u:
        yield u


@pytest.fixture
def ws(user, request):
    d = user.make_dir(f"proj-{request.node.name.replace('[', '-').replace(']', '')}"[:60])
    yield d
    # nothing of the user's left after each test: no process, nothing in its
    # runtime dir but the seccomp cache (issue 24)
    left = [_cmdline(p) for p in _running(user)]
    user.kill_processes()
    assert left == [], left
    assert _leftovers(user) == []


def sbx(user, ws, *cmd, profile="workspace", timeout=60, env=None, extra=()):
    return user.run([str(cfg.RUNTIME), "sandbox", "--profile", profile, *extra, "--", *cmd],
                    cwd=str(ws), timeout=timeout, env=env)


def sh(user, ws, script, **kw):
    return sbx(user, ws, "sh", "-c", script, **kw)


def git_repo(user, ws):
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"],
                 ["config", "user.name", "t"]):
        r = user.run(["git", *args], cwd=str(ws))
        assert r.returncode == 0, r.stderr


def nested_repo(user, ws, rel: str, subdir: str = "") -> Path:
    """WS a repository, and WS/REL one inside it (with REL/SUBDIR made)."""
    git_repo(user, ws)
    lib = ws / rel
    user.run(["mkdir", "-p", str(lib / subdir)])
    git_repo(user, lib)
    return lib


@pytest.mark.parametrize("profile", PROFILES)
def test_runs_as_the_callers_uid(user, ws, profile):
    r = sh(user, ws, "id -u; id -g; cat /proc/self/uid_map", profile=profile)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[0] == str(user.uid) and lines[1] == str(user.gid), r.stdout
    # only the caller's own uid is mapped: no root, no subordinate range
    assert lines[2].split() == [str(user.uid), str(user.uid), "1"], r.stdout
    if profile in WRITES_WS:
        r = sh(user, ws, "echo x > written", profile=profile)
        assert r.returncode == 0, r.stderr
        st = os.stat(ws / "written")
        assert (st.st_uid, st.st_gid) == (user.uid, user.gid)


@pytest.mark.parametrize("profile", ["workspace", "read-only", "strict"])
def test_write_outside_the_workspace_is_refused(user, ws, profile):
    # /var/tmp: writable by the user on the host, read-only in the sandbox
    outside = Path(f"/var/tmp/comet-rl-{os.getpid()}-{profile}")
    try:
        r = sh(user, ws, f"echo x > {outside}", profile=profile)
        assert r.returncode != 0
        assert not outside.exists()
        # the home (under /tmp here) is the private /tmp's: nothing on the host
        r = sh(user, ws, f"echo x > {user.home}/outside.txt", profile=profile)
        assert not (user.home / "outside.txt").exists()
    finally:
        outside.unlink(missing_ok=True)


def test_protected_paths_are_refused(user, ws):
    git_repo(user, ws)
    bashrc = user.home / ".bashrc"
    bashrc.write_text("# rc\n")
    os.chown(bashrc, user.uid, user.gid)
    script = textwrap.dedent(f"""
        for p in .git/config .git/hooks/x .vscode/settings.json; do
          if (echo evil > "$p") 2>/dev/null; then echo "WROTE $p"; else echo "refused $p"; fi
        done
        git init -q sub 2>&1 | head -1
    """)
    r = sh(user, ws, script, extra=("--events", str(user.home / "ev.jsonl")))
    assert "WROTE" not in r.stdout, r.stdout
    assert sum(1 for x in r.stdout.splitlines() if x.startswith("refused ")) == 3, r.stdout
    assert "evil" not in (ws / ".git/config").read_text()
    assert not (ws / ".git/hooks/x").exists()
    assert not (ws / ".vscode").exists()  # the placeholder is gone again
    assert bashrc.read_text() == "# rc\n"  # (this home is under /tmp: the private /tmp's)
    # the git rule is reported (a nested repository refused, EACCES)
    assert not (ws / "sub/.git").exists()
    assert "refused" in r.stderr, r.stderr
    events = [json.loads(x) for x in (user.home / "ev.jsonl").read_text().splitlines()]
    assert any("sub/.git" in json.dumps(e) for e in events), events
    # and, without fs events, the reporter names each protected path that
    # refused a write (red team round 20: neither was reported; the third
    # write fails with ENOENT, .vscode missing, as on the host)
    erofs = {e["matched_entry"] for e in events if e.get("errno") == "EROFS"}
    assert erofs == {str(ws / ".git/config"), str(ws / ".git/hooks/x")}, events


def test_a_protected_file_moved_or_linked_is_reported(user, ws):
    # red team round 21: the protected mount answers EXDEV to a rename or a
    # hard link of it; without fs events neither was reported
    git_repo(user, ws)
    r = sh(user, ws, "mv .git/config x; ln .git/config hl; mkdir d; mv d /tmp/d; echo done",
           extra=("--events", str(user.home / "ev2.jsonl")))
    assert "done" in r.stdout, r.stderr
    events = [json.loads(x) for x in (user.home / "ev2.jsonl").read_text().splitlines()]
    got = sorted((e["errno"], e["matched_entry"]) for e in events)
    assert got == [("EXDEV", str(ws / ".git/config"))] * 2, events  # not the mv to /tmp
    assert (ws / ".git/config").exists() and not (ws / "hl").exists()


def test_a_gitlinks_fsmonitor_is_protected(user, ws):
    # Red team round 11 (rootless too): a nested repository's config was
    # never read; the host's plain `git status` ran what the sandbox wrote
    # at the path its core.fsmonitor names.
    git_repo(user, ws)
    sub = ws / "sub"
    user.run(["mkdir", "-p", str(sub / "tools")])
    git_repo(user, sub)
    for cmd in (["sh", "-c", "printf '#!/bin/sh\nexit 0\n' > tools/fsmon.sh && "
                             "chmod +x tools/fsmon.sh && echo x > x && git add x && "
                             "git commit -qm x && git config core.fsmonitor tools/fsmon.sh"],):
        r = user.run(cmd, cwd=str(sub))
        assert r.returncode == 0, r.stderr
    r = user.run(["sh", "-c", "git add sub && git commit -qm gitlink"], cwd=str(ws))
    assert r.returncode == 0, r.stderr
    marker = user.home / "pwned"
    r = sh(user, ws, f"printf '#!/bin/sh\\ntouch {marker}\\n' > sub/tools/fsmon.sh; "
                     "echo w=$?; rm -f sub/tools/fsmon.sh; echo rm=$?")
    assert r.returncode == 0, r.stderr
    assert "w=0" not in r.stdout and "rm=0" not in r.stdout, r.stdout
    user.run(["git", "status"], cwd=str(ws))
    assert not marker.exists()
    assert (sub / "tools" / "fsmon.sh").read_text() == "#!/bin/sh\nexit 0\n"


def test_a_directory_made_unreadable_does_not_hide_a_repository(user, ws):
    # Review of 218313f: as an ordinary user the search for repositories
    # skipped a directory it could not list. A command could `chmod 0311
    # vendor` in one run (a directory of its own, still traversable), and
    # in the next the host's git in vendor/lib obeyed a config nobody had
    # read: the program its core.fsmonitor names was writable.
    lib = nested_repo(user, ws, "vendor/lib", "tools")
    r = user.run(["sh", "-c", "printf '#!/bin/sh\nexit 0\n' > tools/fsmon.sh && "
                              "git config core.fsmonitor tools/fsmon.sh"], cwd=str(lib))
    assert r.returncode == 0, r.stderr
    r = sh(user, ws, "chmod 0311 vendor; echo chmod=$?")
    assert "chmod=0" in r.stdout, (r.stdout, r.stderr)
    try:
        r = sh(user, ws, "echo ran; echo pwn > vendor/lib/tools/fsmon.sh; echo w=$?")
        assert r.returncode == 125 and "ran" not in r.stdout, (r.returncode, r.stdout, r.stderr)
        assert "a directory it cannot read" in r.stderr and "vendor" in r.stderr, r.stderr
        assert (lib / "tools" / "fsmon.sh").read_text() == "#!/bin/sh\nexit 0\n"
    finally:
        user.run(["chmod", "0755", str(ws / "vendor")])


def test_a_nested_git_directory_made_unreadable_fails_closed(user, ws):
    # Red team round 15: `chmod 000 vendor/lib/.git` in one run; the next
    # found the repository but could not read its config, and left what
    # its core.hooksPath names writable; the host's commit ran the hook.
    lib = nested_repo(user, ws, "vendor/lib")
    r = user.run(["git", "config", "core.hooksPath", ".husky"], cwd=str(lib))
    assert r.returncode == 0, r.stderr
    r = sh(user, ws, "chmod 000 vendor/lib/.git; echo chmod=$?")
    assert "chmod=0" in r.stdout, (r.stdout, r.stderr)
    try:
        r = sh(user, ws, "echo ran")
        assert r.returncode == 125 and "ran" not in r.stdout, (r.returncode, r.stdout, r.stderr)
        assert "cannot be read" in r.stderr and "vendor/lib/.git" in r.stderr, r.stderr
    finally:
        user.run(["chmod", "0755", str(lib / ".git")])


def test_an_index_check_blinded_by_chmod_still_moves_the_index(user, ws):
    # Red team round 15: a bad .git/index, then `chmod 000 .git` as the
    # last act: the end-of-run check could not move it and only warned.
    # The runtime gives its own git directory its owner's rights back.
    git_repo(user, ws)
    r = sh(user, ws, "printf 'DIRC-not-an-index' > .git/index && chmod 000 .git; echo done=$?")
    try:
        assert "done=0" in r.stdout, (r.stdout, r.stderr)
        assert "its owner's rights back" in r.stderr, r.stderr
        assert (ws / ".git" / "index.comet-refused").exists()
        assert not (ws / ".git" / "index").exists()
    finally:
        user.run(["chmod", "0755", str(ws / ".git")])


def test_an_object_directory_made_unreadable_is_still_checked(user, ws):
    # Red team round 23: a lying object renamed over HEAD's tree, then its
    # directory made unreadable: the after-run check skipped it, and the
    # next run's chmod back went unseen; the host's `git reset --hard`
    # wrote the forged tree's .envrc.
    git_repo(user, ws)
    user.run(["sh", "-c", "echo hi > a && git add a && git commit -qm i"], cwd=str(ws))
    forge = ("B=$(echo x | git hash-object -w --stdin); T=$(git rev-parse HEAD^{tree}); "
             "E=$( (git ls-tree HEAD; printf '100644 blob %s\\t.envrc\\n' $B) | git mktree); "
             "D=$(echo $T | cut -c1-2); F=$(echo $T | cut -c3-); "
             "cp .git/objects/$(echo $E | cut -c1-2)/$(echo $E | cut -c3-) .git/objects/$D/t && "
             "mv -f .git/objects/$D/t .git/objects/$D/$F; chmod 000 .git/objects/$D; "
             "echo $D > d; echo forged=$?")
    r = sh(user, ws, forge)
    assert "forged=0" in r.stdout, (r.stdout, r.stderr)
    sh(user, ws, "chmod 755 .git/objects/$(cat d)")
    user.run(["git", "reset", "-q", "--hard"], cwd=str(ws))
    assert not (ws / ".envrc").exists(), r.stderr
    assert "does not hold what its id says" in r.stderr, r.stderr


def test_a_module_git_directory_made_unreadable_is_still_checked(user, ws):
    # Red team round 26: a module's index staging .envrc, then `chmod 000
    # .git/modules/sub`: the check skipped the module; the next run failed
    # closed, and once the user restored the mode the index was what the
    # following run took as its start. The check gives it its rights back.
    lib = user.make_dir(f"lib-{ws.name}"[:60])
    for cmd in (["git", "init", "-q", "-b", "main"], ["sh", "-c", "echo x > x"],
                ["git", "add", "x"], ["git", "-c", "user.email=a@b", "-c", "user.name=a",
                                      "commit", "-qm", "lib"]):
        assert user.run(cmd, cwd=str(lib)).returncode == 0
    git_repo(user, ws)
    for cmd in (["sh", "-c", "echo hi > a && git add a && git commit -qm i"],
                ["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib),
                 "sub"], ["git", "commit", "-qm", "sub"]):
        r = user.run(cmd, cwd=str(ws))
        assert r.returncode == 0, r.stderr
    r = sh(user, ws, "cd sub && B=$(echo x | git hash-object -w --stdin) && "
           "git update-index --add --cacheinfo 100644,$B,.envrc && cd .. && "
           "chmod 000 .git/modules/sub; echo done=$?")
    try:
        assert "done=0" in r.stdout, (r.stdout, r.stderr)
        assert "stages the protected" in r.stderr, r.stderr
        user.run(["git", "-C", "sub", "checkout", "--", "."], cwd=str(ws))
        assert not (ws / "sub" / ".envrc").exists()
    finally:
        user.run(["chmod", "0755", str(ws / ".git" / "modules" / "sub")])


def test_a_workspace_made_unsearchable_leaves_nothing_and_is_checked(user, ws):
    # Red team round 15: `chmod 000 .` as the command's last act, and the
    # runtime (the user) could not remove its placeholders (.envrc,
    # .vscode/, ...): they stayed on the host. None is made now (the git
    # rule's init refuses those names); the index check at the end gives
    # the workspace its owner's rights back to look at the index, and finds
    # nothing to refuse.
    git_repo(user, ws)
    before = sorted(os.listdir(ws))
    try:
        r = sh(user, ws, "chmod 000 .; echo done=$?")
        assert "done=0" in r.stdout, (r.stdout, r.stderr)
        assert "its owner's rights back" in r.stderr, r.stderr
        assert "index" not in r.stderr, r.stderr
    finally:
        user.run(["chmod", "0755", str(ws)])
    assert sorted(os.listdir(ws)) == before


def test_a_nested_repositorys_hook_link_target_is_protected(user, ws):
    # Red team round 16 (as an ordinary user too): lib/.git/hooks/pre-commit
    # -> ../../scripts/pre-commit.sh; the target stayed writable and the
    # host's commit in lib ran what the sandbox wrote there.
    lib = nested_repo(user, ws, "lib", "scripts")
    r = user.run(["sh", "-c", "printf '#!/bin/sh\\nexit 0\\n' > scripts/pre-commit.sh && "
                              "chmod +x scripts/pre-commit.sh && "
                              "ln -s ../../scripts/pre-commit.sh .git/hooks/pre-commit"],
                 cwd=str(lib))
    assert r.returncode == 0, r.stderr
    marker = user.home / "pwned-hook"
    r = sh(user, ws, f"echo 'touch {marker}' >> lib/scripts/pre-commit.sh; echo hook=$?")
    assert r.returncode == 0 and "hook=0" not in r.stdout, (r.stdout, r.stderr)
    user.run(["git", "commit", "-q", "--allow-empty", "-m", "host"], cwd=str(lib))
    assert not marker.exists()


def test_git_add_and_commit_work(user, ws):
    git_repo(user, ws)
    r = sh(user, ws, "echo hello > a.txt && git add a.txt && git commit -qm one && git log --oneline")
    assert r.returncode == 0, r.stderr
    assert "one" in r.stdout
    log = user.run(["git", "log", "--format=%s"], cwd=str(ws))
    assert log.stdout.strip() == "one"


class TcpListener:
    def __init__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(8)
        self.s.settimeout(0.2)
        self.port = self.s.getsockname()[1]

    def accepted(self) -> int:
        n = 0
        while True:
            try:
                c, _ = self.s.accept()
                c.close()
                n += 1
            except OSError:
                return n


CONNECT_TCP = ("import socket,sys\n"
               "try:\n socket.create_connection(('127.0.0.1', int(sys.argv[1])), 2); print('CONNECTED')\n"
               "except OSError as e: print('refused', e.errno)\n")


@pytest.mark.parametrize("profile", RESTRICTED + ["workspace"])
def test_network_restricted_profiles_stay_restricted(user, ws, profile):
    lst = TcpListener()
    try:
        r = sbx(user, ws, "python3", "-c", CONNECT_TCP, str(lst.port), profile=profile)
        assert r.returncode == 0, r.stderr
        if profile in RESTRICTED:
            assert "refused" in r.stdout and lst.accepted() == 0, r.stdout
        else:  # the control: the open profile reaches it
            assert "CONNECTED" in r.stdout and lst.accepted() == 1, r.stdout
    finally:
        lst.s.close()


def test_unix_socket_outside_the_workspace_is_refused(user, ws):
    path = Path(f"/var/tmp/comet-rl-{os.getpid()}.sock")  # outside /tmp: visible inside
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    os.chown(path, user.uid, user.gid)
    srv.listen(4)
    srv.settimeout(0.2)
    try:
        code = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\n"
                "try:\n s.connect(sys.argv[1]); print('CONNECTED')\n"
                "except OSError as e: print('refused', e.errno)\n")
        r = sbx(user, ws, "python3", "-c", code, str(path))
        assert "refused" in r.stdout, (r.stdout, r.stderr)
        assert "unix" in r.stderr and "refused" in r.stderr, r.stderr
        with pytest.raises(OSError):
            srv.accept()
    finally:
        srv.close()
        path.unlink(missing_ok=True)


def test_timeout_returns_124_in_about_2s(user, ws):
    t = time.monotonic()
    r = user.run(["timeout", "2", str(cfg.RUNTIME), "sandbox", "--", "sleep", "30"],
                 cwd=str(ws), timeout=20)
    took = time.monotonic() - t
    assert r.returncode == 124, r.stderr
    assert took < 3.5, took


def _leftovers(user) -> list[str]:
    rt = user.runtime_dir / "comet-runtime"
    out = []
    if rt.exists():  # its seccomp cache (cache/) is no sandbox's
        for p in rt.rglob("*"):
            if p.relative_to(rt).parts[0] != "cache":
                out.append(str(p))
    return out


def test_sigkill_leaves_nothing_behind(user, ws):
    git_repo(user, ws)
    p = user.popen([str(cfg.RUNTIME), "sandbox", "--", "sh", "-c", "sleep 30 & sleep 30"],
                   cwd=str(ws), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the sandbox's sleeps run
            if sum(1 for pid in user.pids() if _cmdline(pid).startswith(b"sleep ")) >= 2:
                break
            time.sleep(0.05)
        # no placeholder is made (the git rule's init refuses those names)
        assert not (ws / ".vscode").exists()
        # the runtime itself, not setpriv: find it among the user's processes
        rt = [pid for pid in user.pids() if _cmdline(pid).startswith(str(cfg.RUNTIME).encode())]
        os.kill(min(rt), signal.SIGKILL)
        p.wait(timeout=10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (_running(user) or (ws / ".vscode").exists()):
            time.sleep(0.05)
        assert _running(user) == [], [_cmdline(x) for x in _running(user)]
        assert not (ws / ".vscode").exists()
        assert _leftovers(user) == []
    finally:
        user.kill_processes()


def _running(user, wait: float = 3.0) -> list[int]:
    """The user's processes that are not zombies (an exited guardian is
    reaped by whoever inherits it: here PID 1), after up to WAIT s."""
    deadline = time.monotonic() + wait
    while True:
        live = []
        for pid in user.pids():
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z":
                live.append(pid)
        if not live or time.monotonic() > deadline:
            return live
        time.sleep(0.05)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return b""


def test_nothing_left_after_runs(user, ws):
    for profile in PROFILES:
        assert sh(user, ws, "true", profile=profile).returncode == 0
    assert _running(user) == []
    assert _leftovers(user) == []


NOUSERNS_C = r"""
#include <errno.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
/* clone3 -> ENOSYS (as docker's default profile), clone/unshare with
   CLONE_NEWUSER -> EPERM: what a host that refuses user namespaces says. */
int main(int argc, char** argv) {
  struct sock_filter f[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 1, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 0, 3),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof f / sizeof f[0], f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
    return 99;
  execvp(argv[1], argv + 1);
  return 98;
}
"""


@pytest.fixture(scope="module")
def nouserns(user, tmp_path_factory):
    d = tmp_path_factory.mktemp("nouserns")
    os.chmod(d, 0o755)
    (d / "nouserns.c").write_text(NOUSERNS_C)
    subprocess.run(["cc", "-O", "-o", str(d / "nouserns"), str(d / "nouserns.c")], check=True)
    return d / "nouserns"


def test_refused_user_namespace_is_one_line_125(user, ws, nouserns):
    # the control: the filter itself refuses what it should
    r = user.run([str(nouserns), "unshare", "-U", "true"])
    assert r.returncode != 0
    r = user.run([str(nouserns), str(cfg.RUNTIME), "sandbox", "--", "true"], cwd=str(ws))
    assert r.returncode == 125, (r.stdout, r.stderr)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, r.stderr
    assert "cannot create a user namespace" in lines[0], lines
    v = user.run([str(nouserns), str(cfg.RUNTIME), "sandbox", "--can-auto-allow", "--", "ls"],
                 cwd=str(ws))
    verdict = json.loads(v.stdout)
    assert v.returncode == 1 and verdict["auto_allow"] is False and verdict["confined"] is False


def test_can_auto_allow_is_true_when_it_can_start(user, ws):
    v = user.run([str(cfg.RUNTIME), "sandbox", "--can-auto-allow", "--", "ls"], cwd=str(ws))
    assert v.returncode == 0, (v.stdout, v.stderr)
    assert json.loads(v.stdout)["auto_allow"] is True


def test_explicit_memory_limit_is_refused_default_is_said(user, ws):
    cfgdir = user.home / ".config/comet"
    cfgdir.mkdir(parents=True, exist_ok=True)
    (cfgdir / "sandbox.yaml").write_text(
        "profiles:\n  small:\n    extends: workspace\n    limits: {memory: 512Mi}\n"
        "  fewpids:\n    extends: workspace\n    limits: {pids: 64}\n")
    for p in (user.home / ".config", cfgdir, cfgdir / "sandbox.yaml"):
        os.chown(p, user.uid, user.gid)
    try:
        r = sbx(user, ws, "true", profile="small")
        assert r.returncode == 125, r.stderr
        assert "memory" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        # pids: RLIMIT_NPROC inside the user namespace
        r = sh(user, ws, "grep 'Max processes' /proc/self/limits", profile="fewpids")
        assert r.returncode == 0 and r.stdout.split()[2:4] == ["64", "64"], (r.stdout, r.stderr)
        e = user.run([str(cfg.RUNTIME), "sandbox", "--explain"], cwd=str(ws))
        assert "not enforced" in e.stdout, e.stdout
    finally:
        (cfgdir / "sandbox.yaml").unlink()


def test_home_names_are_protected_when_home_is_writable(user, ws):
    # A custom profile that writes the home: its rc files are still
    # read-only, a missing one (~/.profile) gets a placeholder for the run.
    cfgdir = user.home / ".config/comet"
    cfgdir.mkdir(parents=True, exist_ok=True)
    (cfgdir / "sandbox.yaml").write_text(
        "profiles:\n  homew:\n    extends: workspace\n    write: [\"~\"]\n")
    bashrc = user.home / ".bashrc"
    bashrc.write_text("# rc\n")
    for p in (user.home / ".config", cfgdir, cfgdir / "sandbox.yaml", bashrc):
        os.chown(p, user.uid, user.gid)
    profile = user.home / ".profile"
    try:
        r = sh(user, ws, f"echo evil >> {bashrc} || echo refused1; echo evil > {profile} || echo refused2;"
                         f" echo ok > {user.home}/plain.txt", profile="homew")
        assert "refused1" in r.stdout and "refused2" in r.stdout, (r.stdout, r.stderr)
        assert bashrc.read_text() == "# rc\n"
        assert not profile.exists()  # the placeholder is gone again
        assert (user.home / "plain.txt").read_text() == "ok\n"  # the home is writable
    finally:
        (cfgdir / "sandbox.yaml").unlink()
        (user.home / "plain.txt").unlink(missing_ok=True)


def test_sudo_uid_as_root_is_not_rootless(user, ws):
    """Root with SUDO_UID set (sudo comet-runtime sandbox ...) is root, not
    rootless mode (issue 24): no user namespace of the user's, root's state
    root, not the user's runtime dir; the command runs as the invoking user
    (the sandbox issue's rule)."""
    env = user.env({"SUDO_UID": str(user.uid), "SUDO_GID": str(user.gid),
                    "SUDO_USER": user.name})
    mine = user.runtime_dir / "comet-runtime"

    def users_state():  # the user's own runs of this module made it
        return sorted(str(p) for p in mine.rglob("*")) if mine.exists() else []
    before = users_state()
    r = subprocess.run([str(cfg.RUNTIME), "sandbox", "--profile", "workspace", "--", "sh", "-c",
                        "id -u; id -g; cat /proc/self/uid_map; echo x > mine"],
                       env=env, cwd=str(ws), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = r.stdout.split()
    assert out[:2] == [str(user.uid), str(user.gid)], r.stdout
    assert out[2:5] == ["0", "0", "4294967295"], r.stdout  # the host's ids, no user namespace
    assert (ws / "mine").stat().st_uid == user.uid
    assert users_state() == before  # root's state root, not the user's
    assert not any(p.stat().st_uid == 0 for p in user.runtime_dir.rglob("*"))
    assert _running(user) == []


def test_stdin_the_view_hides_keeps_its_mode_as_a_user(user, ws):
    # Red team round 17 row 4: as an ordinary user under strict, a file of
    # the user's own that the view hides (the home), given as stdin, was
    # made 0666 through /proc/self/fd/0. It is reopened on a read-only clone
    # of its mount, in the user's namespace too.
    secret = user.home / f"notes-{os.getpid()}"
    user.run(["sh", "-c", f"echo s > {secret}; chmod 600 {secret}"])
    try:
        before = secret.stat()
        r = user.run(["sh", "-c", f'exec "$0" sandbox --profile strict -- sh -c '
                      f'"chmod 666 /proc/self/fd/0; echo chmod=\\$?; cat" < {secret}',
                      str(cfg.RUNTIME)], cwd=str(ws))
        after = secret.stat()
        assert (after.st_mode, after.st_mtime) == (before.st_mode, before.st_mtime), r
        assert "chmod=0" not in r.stdout and "s" in r.stdout.split(), (r.stdout, r.stderr)
    finally:
        secret.unlink()
