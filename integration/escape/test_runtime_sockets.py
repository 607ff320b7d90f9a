"""Attack: reach a container runtime's API socket from inside a sandbox
(issue 7, docs/sandbox.md "runtime sockets"). Through one, a workload could
start an unconfined container. Every sandboxed profile but devbox must make
them unreachable, even a custom profile that binds the host's /run.

The test creates the sockets itself (a unix listener at the real path, only
when nothing is there, removed afterwards; or one named by the config's
runtime_sockets), and counts connections on the host side: a sandboxed
attempt must never arrive. devbox is the control: there the same connect
works, so the test can fail."""
from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from lib.sandbox import UnixListener, by_arg, probe_cmd, run_clean, sandbox_env

pytestmark = pytest.mark.comet_only

WIDE = "profiles:\n  wide:\n    extends: workspace\n    write: [/run]\n" \
       "  peek:\n    extends: strict\n    read: [/run]\n"
PROFILES = ["workspace", "read-only", "wide", "peek"]


@pytest.fixture
def sbx(rt, workdir, ws):
    gcfg = workdir / "global.yaml"
    gcfg.write_text(WIDE)

    def call(*cmd, profile, extra_config=""):
        if extra_config:
            gcfg.write_text(WIDE + extra_config)
        return run_clean(rt, ws, cmd, profile=profile, env=sandbox_env(gcfg))

    return call


def _listener_at(path: Path):
    """A listener at a runtime's real socket path, made only when the path
    (and, for a runtime dir, the dir) does not exist; cleaned afterwards."""
    made_dir = None
    if path.parent != Path("/run") and not path.parent.exists():
        path.parent.mkdir(parents=True)
        made_dir = path.parent
    elif os.path.lexists(path):
        pytest.skip(f"{path} exists on this host: not touching a real runtime's socket")
    return UnixListener(path), made_dir


def _cleanup(lst, made_dir):
    lst.close()
    if made_dir:
        os.rmdir(made_dir)


def _host_can_connect(path: Path) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        s.close()


def test_runtime_dir_socket_does_not_exist_inside(sbx):
    path = Path("/run/containerd/containerd.sock")
    if path.parent.exists():
        pytest.skip("/run/containerd exists on this host")
    lst, made = _listener_at(path)
    try:
        for profile in PROFILES:
            res = sbx(*probe_cmd(f"stat={path}", f"connect-unix={path}", f"ls={path.parent}"),
                      profile=profile)
            r = by_arg(res)
            # /run is visible in all four; the runtime's dir is an empty tmpfs
            assert r[("stat", str(path))]["errno"] == "ENOENT", (profile, r)
            assert r[("connect-unix", str(path))]["errno"] == "ENOENT", (profile, r)
            assert r[("ls", str(path.parent))]["data"] == [], (profile, r)
        assert lst.accepted == 0
        # the control: devbox does not hide it, and the connect arrives
        res = sbx(*probe_cmd(f"connect-unix={path}"), profile="devbox")
        assert by_arg(res)[("connect-unix", str(path))]["ok"], res
        assert lst.accepted == 1
        assert _host_can_connect(path)  # the host's socket is untouched
    finally:
        _cleanup(lst, made)


def test_lone_socket_is_an_empty_file_inside(sbx):
    path = Path("/run/docker.sock")
    lst, made = _listener_at(path)
    try:
        for profile in PROFILES:
            res = sbx(*probe_cmd(f"stat={path}", f"connect-unix={path}", f"write={path}",
                                 "stat=/var/run/docker.sock",
                                 "connect-unix=/var/run/docker.sock"), profile=profile)
            r = by_arg(res)
            st = r[("stat", str(path))]
            assert st["ok"] and st["data"]["kind"] == "file" and st["data"]["size"] == 0, (profile, r)
            assert r[("connect-unix", str(path))]["errno"] == "ECONNREFUSED", (profile, r)
            assert r[("write", str(path))]["errno"] == "EROFS", (profile, r)
            # /var/run is /run: the same path, the same answer (peek, a
            # strict profile, shows no /var at all)
            want = "ENOENT" if profile == "peek" else "ECONNREFUSED"
            assert r[("connect-unix", "/var/run/docker.sock")]["errno"] == want, (profile, r)
        assert lst.accepted == 0
        res = sbx(*probe_cmd(f"connect-unix={path}"), profile="devbox")
        assert by_arg(res)[("connect-unix", str(path))]["ok"], res
        assert lst.accepted == 1
    finally:
        _cleanup(lst, made)


def test_config_runtime_sockets_are_hidden_too(sbx, ws):
    path = ws / "engine.sock"
    lst = UnixListener(path)
    try:
        for profile in ("workspace", "strict"):
            res = sbx(*probe_cmd(f"stat={path}", f"connect-unix={path}"), profile=profile,
                      extra_config=f"runtime_sockets: [\"{path}\"]\n")
            r = by_arg(res)
            assert r[("stat", str(path))]["data"]["kind"] == "file", (profile, r)
            assert r[("connect-unix", str(path))]["errno"] == "ECONNREFUSED", (profile, r)
        assert lst.accepted == 0
        # without the config entry, the same socket in the workspace works
        res = sbx(*probe_cmd(f"connect-unix={path}"), profile="workspace", extra_config="\n")
        assert by_arg(res)[("connect-unix", str(path))]["ok"], res
        assert lst.accepted == 1
    finally:
        lst.close()


def test_state_root_is_out_of_reach(sbx, rt):
    # Other containers' state (exec.fifo, config.json) under the state root.
    for profile in ("workspace", "wide"):
        res = sbx(*probe_cmd(f"ls={rt.root}", "ls=/run/comet-runtime"), profile=profile)
        r = by_arg(res)
        assert r[("ls", "/run/comet-runtime")]["errno"] in ("EACCES", "ENOENT"), r
        # --root lives under /tmp here: not visible at all
        assert r[("ls", str(rt.root))]["errno"] == "ENOENT", r
