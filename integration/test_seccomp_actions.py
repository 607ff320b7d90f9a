"""linux.seccomp beyond ERRNO: NOTIFY with listenerPath (the listener fd and
the state reach the caller over SCM_RIGHTS, as runtime-spec requires), LOG,
TRAP and flags."""
import array
import json
import os
import platform
import socket
import threading

import pytest

from lib.asserts import assert_refused

pytestmark = [pytest.mark.skipif(platform.machine() != "x86_64", reason="x86_64 syscalls"),
              pytest.mark.comet_only]


def profile(action, names=("mkdir", "mkdirat"), **extra):
    p = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
         "syscalls": [{"names": list(names), "action": action}]}
    p.update(extra)
    return p


class Listener:
    """A listenerPath server: accepts one connection, keeps the payload and
    the passed fds' /proc targets, then closes the fds."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(1)
        self.sock.settimeout(10)
        self.payload, self.fd_targets = None, []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        conn, _ = self.sock.accept()
        with conn:
            fds = array.array("i")
            msg, anc, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(4 * fds.itemsize))
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
            self.payload = json.loads(msg.decode())
            for fd in fds:
                self.fd_targets.append(os.readlink(f"/proc/self/fd/{fd}"))
                os.close(fd)  # no agent: notified syscalls now fail with ENOSYS

    def close(self):
        self.thread.join(10)
        self.sock.close()


def test_notify_listener_receives_fd_and_state(rt, bundle, workdir):
    sock_path = workdir / "listener.sock"
    lst = Listener(sock_path)
    b = bundle().readonly(False).seccomp(profile("SCMP_ACT_NOTIFY", listenerPath=str(sock_path)))
    b.sh("sleep 0.5; /probe mkdir /tmp/notified")
    cid = rt.new_id()
    res = rt.run(cid, b)
    lst.close()
    assert lst.payload is not None, "the runtime never sent the listener fd"
    assert lst.payload["fds"] == ["seccompFd"]
    assert lst.payload["id"] == cid
    assert lst.payload["pid"] > 0
    assert lst.fd_targets == ["anon_inode:seccomp notify"], lst.fd_targets
    # the listener is gone: the notified mkdir fails instead of running
    assert res.probe()["errno"] == "ENOSYS", res
    assert not (b.rootfs / "tmp" / "notified").exists()


def test_notify_without_listener_path_is_refused(rt, harness, bundle):
    b = bundle().seccomp(profile("SCMP_ACT_NOTIFY"))
    assert_refused(harness, "create", b, "listenerPath")


def test_log_action_allows(rt, bundle):
    b = bundle().readonly(False).seccomp(profile("SCMP_ACT_LOG"))
    assert rt.run_probe(b, "mkdir", "/tmp/logged").probe()["ok"] is True
    assert (b.rootfs / "tmp" / "logged").is_dir()


def test_trap_action_sends_sigsys(rt, bundle):
    b = bundle().readonly(False).seccomp(profile("SCMP_ACT_TRAP"))
    res = rt.run(rt.new_id(), b.probe("mkdir", "/tmp/trapped"))
    assert res.rc == 128 + 31, res  # SIGSYS
    assert not (b.rootfs / "tmp" / "trapped").exists()


def test_flag_log_accepted_and_unknown_flag_refused(rt, harness, bundle):
    b = bundle().readonly(False).seccomp(profile("SCMP_ACT_ERRNO", flags=["SECCOMP_FILTER_FLAG_LOG"]))
    assert rt.run_probe(b, "mkdir", "/tmp/x").probe()["errno"] == "EPERM"
    b = bundle().seccomp(profile("SCMP_ACT_ERRNO", flags=["SECCOMP_FILTER_FLAG_BOGUS"]))
    res = rt.create(rt.new_id(), b)
    assert res.rc != 0 and "SECCOMP_FILTER_FLAG_BOGUS" in res.error, res
