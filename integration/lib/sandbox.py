"""Helpers for the `comet-runtime sandbox` suites (test_sandbox.py,
escape/test_runtime_sockets.py, escape/test_sandbox_*git.py): a Python
probe run *inside* the sandbox (the host's /usr/bin/python3, readable in
every profile), checks that a sandbox left nothing behind, and a git
repository with the host's git to play the host."""
from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path

from lib.harness import wait_for
from lib.packs import events_of, results  # noqa: F401 (results: op -> its result lines)

PYTHON = "/usr/bin/python3"

# One operation per argument, "op=arg"; one JSON line per operation:
# {"op","arg","ok","errno"[,"data"]}. Errors are reported, never raised.
PROBE = r'''
import errno, json, os, socket, stat, sys
def out(op, arg, ok, err=None, **kw):
    d = {"op": op, "arg": arg, "ok": ok, "errno": errno.errorcode.get(err) if err else None}
    d.update(kw)
    print(json.dumps(d), flush=True)
for a in sys.argv[1:]:
    op, _, arg = a.partition("=")
    try:
        if op == "read":
            with open(arg, "rb") as f: data = f.read(64)
            out(op, arg, True, data=data.decode("latin1"))
        elif op == "write":
            with open(arg, "w") as f: f.write("x")
            out(op, arg, True)
        elif op == "append":
            fd = os.open(arg, os.O_WRONLY | os.O_APPEND); os.close(fd); out(op, arg, True)
        elif op == "trunc":
            fd = os.open(arg, os.O_WRONLY | os.O_TRUNC); os.close(fd); out(op, arg, True)
        elif op == "mkdir":
            os.mkdir(arg); out(op, arg, True)
        elif op == "ls":
            out(op, arg, True, data=sorted(os.listdir(arg)))
        elif op == "stat":
            st = os.lstat(arg)
            kind = ("socket" if stat.S_ISSOCK(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode)
                    else "file" if stat.S_ISREG(st.st_mode) else "other")
            out(op, arg, True, data={"kind": kind, "size": st.st_size, "mode": stat.S_IMODE(st.st_mode)})
        elif op == "unlink":
            os.unlink(arg); out(op, arg, True)
        elif op == "rename":
            src, dst = arg.split(":", 1); os.rename(src, dst); out(op, arg, True)
        elif op == "connect-unix":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(3)
            try: s.connect(arg); out(op, arg, True)
            finally: s.close()
        elif op == "connect-tcp":
            host, port = arg.rsplit(":", 1)
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); s.settimeout(3)
            try: s.connect((host, int(port))); out(op, arg, True)
            finally: s.close()
        elif op == "netdevs":
            with open("/proc/net/dev") as f: lines = f.read().splitlines()[2:]
            out(op, arg, True, data=sorted(l.split(":")[0].strip() for l in lines))
        elif op == "id":
            out(op, arg, True, data={"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
                                     "cwd": os.getcwd(), "home": os.environ.get("HOME"),
                                     "env": sorted(os.environ)})
        elif op == "exit":
            sys.exit(int(arg))
        else:
            out(op, arg, False, data="unknown op")
    except OSError as e:
        out(op, arg, False, e.errno)
    except socket.timeout:
        out(op, arg, False, errno.ETIMEDOUT)
'''


def probe_cmd(*ops: str) -> list[str]:
    return [PYTHON, "-c", PROBE, *ops]


def by_arg(res) -> dict[tuple[str, str], dict]:
    """(op, arg) -> its result (the last one)."""
    out = {}
    for line in res.out.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            out[(d["op"], d["arg"])] = d
    return out


class _Listener:
    """A listening socket on the host that counts the connections it accepts."""

    def __init__(self, sock: socket.socket):
        self.accepted = 0
        self.sock = sock
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self._stop = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self._stop:
            try:
                c, _ = self.sock.accept()
                self.accepted += 1
                c.close()
            except (socket.timeout, OSError):
                continue

    def close(self):
        self._stop = True
        self.thread.join(timeout=2)
        self.sock.close()


class UnixListener(_Listener):
    """A unix stream listener at PATH, on the host, counting connections."""

    def __init__(self, path: Path):
        self.path = Path(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(self.path))
        os.chmod(self.path, 0o666)
        super().__init__(sock)

    def close(self):
        super().close()
        self.path.unlink(missing_ok=True)


class TcpListener(_Listener):
    """A TCP listener on 127.0.0.1 (an ephemeral port), on the host."""

    def __init__(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        super().__init__(sock)


def sandbox_env(global_cfg: Path | None = None, **extra: str) -> dict[str, str]:
    """The caller's environment without SUDO_* (through those, a sandbox run
    by root runs CMD as that user), with COMET_SANDBOX_GLOBAL_CONFIG=GLOBAL_CFG
    when given, and EXTRA."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
    if global_cfg is not None:
        env["COMET_SANDBOX_GLOBAL_CONFIG"] = str(global_cfg)
    env.update(extra)
    return env


def sandbox_argv(cmd, *, ws: Path, profile: str | None = None, args=()) -> list[str]:
    """`sandbox ARGS [--profile PROFILE] --workspace WS -- CMD` (after the
    runtime's own global options)."""
    argv = ["sandbox", *args]
    if profile:
        argv += ["--profile", profile]
    return argv + ["--workspace", str(ws), "--", *cmd]


def run_clean(rt, ws: Path, cmd, *, profile: str, env: dict, events: Path | None = None,
              timeout: int = 60):
    """`sandbox --profile PROFILE --workspace WS [--events EVENTS] -- CMD` with
    --debug (the log names the container ids); it must leave nothing behind."""
    extra = ["--events", str(events)] if events else []
    res = rt("sandbox", "--profile", profile, "--workspace", str(ws), *extra, "--", *cmd, env=env,
             global_args=["--debug"], timeout=timeout)
    left = sandbox_leftovers(rt.root, sandbox_ids(res.err))
    assert not left, left
    return res


def sandbox_sh(rt, ws: Path, argv, *, events: Path | None = None, profile: str = "workspace",
               env: dict | None = None, stdin: Path | None = None, timeout: float = 120):
    """`sandbox --profile PROFILE --workspace WS [--events EVENTS] -- ARGV`
    (a str ARGV runs under /bin/sh -c), with STDIN as the runtime's stdin
    when given (opened read-only by a shell, as a caller's `< FILE`)."""
    args = ["sandbox", "--profile", profile, "--workspace", str(ws)]
    if events is not None:
        args += ["--events", str(events)]
    if isinstance(argv, str):
        argv = ["/bin/sh", "-c", argv]
    prefix = ["/bin/sh", "-c", 'exec "$@" < "$0"', str(stdin)] if stdin else []
    return rt(*args, "--", *argv, env=env, timeout=timeout, prefix=prefix)


def wait_file(p: Path, timeout: float = 30.0) -> bool:
    return bool(wait_for(p.exists, timeout))


@contextmanager
def sandbox_running(rt, ws: Path, script: str, *, env: dict, profile="workspace",
                    events: Path | None = None):
    """`sandbox --profile PROFILE --workspace WS [--events EVENTS] -- sh -c
    SCRIPT` on a thread while the block plays the host; yields a dict whose
    "res" is the run's Result once the block has ended. Whatever happens in
    the block, WS/go is written at its end (the scripts wait for it) and the
    run is waited for."""
    result = {}

    def run():
        result["res"] = sandbox_sh(rt, ws, script, events=events, profile=profile, env=env,
                                   timeout=90)

    t = threading.Thread(target=run)
    t.start()
    try:
        yield result
    finally:
        (ws / "go").write_text("")
        t.join(120)


def sandbox_ids(stderr: str) -> set[str]:
    """The container ids a `--debug` sandbox run logged."""
    import re

    return set(re.findall(r"(sandbox-[0-9a-f]{12})", stderr))


def sandbox_leftovers(root: Path, ids=None) -> list[str]:
    """What a finished sandbox must not leave: entries in its (private)
    state root, mounts naming a sandbox bundle under it, cgroups of its
    container ids (all sandbox-* cgroups when ids is None), processes
    running from its bundle."""
    problems = []
    if root.exists():
        for e in root.iterdir():
            problems.append(f"state root entry left: {e}")
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if (str(root) + "/") in line:
                problems.append(f"mount left: {line.strip()}")
    cg = Path("/sys/fs/cgroup")
    for hier in cg.iterdir() if cg.is_dir() else []:
        for dirpath, dirnames, _ in os.walk(hier):
            if len(Path(dirpath).parts) - len(hier.parts) > 4:
                dirnames[:] = []
                continue
            for d in dirnames:
                if (ids is None and d.startswith("sandbox-")) or (ids is not None and d in ids):
                    problems.append(f"cgroup left: {Path(dirpath) / d}")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if (str(root) + "/.sandbox@").encode() in cmd:
            problems.append(f"process left: {pid} {cmd!r}")
    return problems


# The host's git as the git suites run it: no system or user config.
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "PATH": "/usr/bin:/bin",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}


def git(ws, *args, check=True):
    return subprocess.run(["git", "-C", str(ws), *args], capture_output=True, text=True,
                          env=GIT_ENV, check=check, timeout=30)


def script(path: Path, body: str = "exit 0") -> None:
    """An executable sh script at PATH (its directory made) running BODY."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def make_repo(parent: Path) -> Path:
    """A fresh repository with one commit, under parent."""
    ws = parent / f"repo-{secrets.token_hex(3)}"
    ws.mkdir()
    git(ws, "init", "-q")
    (ws / "a.txt").write_text("a\n")
    git(ws, "add", "a.txt")
    git(ws, "commit", "-qm", "init")
    return ws


def sandbox_runner(rt, workdir: Path):
    """call(ws, script_or_argv, profile="workspace", extra_env=None) -> (result, events):
    one sandbox run with the git suites' environment, an empty global
    config, and its --events file read back."""
    gcfg = workdir / "global.yaml"
    gcfg.write_text("")

    def call(ws, argv, profile="workspace", extra_env=None):
        env = {**sandbox_env(), **GIT_ENV, **(extra_env or {}),
               "COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)}
        events = workdir / f"ev-{secrets.token_hex(3)}.jsonl"
        if isinstance(argv, str):
            argv = ["/bin/sh", "-c", argv]
        res = rt("sandbox", "--profile", profile, "--workspace", str(ws), "--events", str(events),
                 "--", *argv, env=env, timeout=120)
        return res, events_of(events)

    return call

