"""Attack: reach a host daemon through a unix socket from a sandbox (issue 22
item 3, docs/sandbox.md "Unix sockets"). The hidden list named docker,
containerd, podman, cri-o and buildkit only: k3s's containerd.sock and
/run/cri-dockerd.sock took data from the workspace and read-only profiles,
and each is root on the host. The rule is structural: a connect (or a
datagram sent with an address) to a pathname socket that is not in a place
the profile can write is refused and reported, whatever its name, unless
the profile allowlists it; an abstract name reaches only a socket of the
sandbox's own.

Every test counts what arrives on the host side: a refused attempt must
never arrive. devbox (no rule) is the control that can fail."""
from __future__ import annotations

import json
import os
import secrets
import socket
from pathlib import Path

import pytest

from lib.packs import events_of
from lib.sandbox import UnixListener, run_clean, sandbox_env

pytestmark = pytest.mark.comet_only

PY = "/usr/bin/python3"

CONNECT = r'''
import errno, json, socket, sys
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(3)
    try:
        s.connect("\0" + p[1:] if p.startswith("@") else p)
        print(json.dumps({"p": p, "ok": True}), flush=True)
    except OSError as e:
        print(json.dumps({"p": p, "ok": False, "errno": errno.errorcode.get(e.errno)}), flush=True)
    finally:
        s.close()
'''

# Another thread flips the address in a buffer the connect() reads, between
# an allowed socket (in the workspace) and the host's: what the supervisor
# looked at must be what is connected.
RACE = r'''
import ctypes, socket, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
good, bad, n = sys.argv[1].encode(), sys.argv[2].encode(), int(sys.argv[3])
class SA(ctypes.Structure):
    _fields_ = [("family", ctypes.c_ushort), ("path", ctypes.c_char * 108)]
sa = SA(); sa.family = socket.AF_UNIX; sa.path = good
stop = False
def flip():
    while not stop:
        ctypes.memmove(ctypes.addressof(sa) + 2, bad + b"\0", len(bad) + 1)
        ctypes.memmove(ctypes.addressof(sa) + 2, good + b"\0", len(good) + 1)
t = threading.Thread(target=flip, daemon=True); t.start()
ok = 0
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if libc.connect(s.fileno(), ctypes.byref(sa), ctypes.sizeof(sa)) == 0: ok += 1
    s.close()
stop = True
print("connected", ok, flush=True)
'''

# Another thread swaps the *fd number* the call names between a decoy (a
# file, or an inet socket: neither is judged) and a unix socket, so that a
# look at the fd and the kernel's own use of it could see two files (red
# team round 8: connect() reached a host daemon this way). A call by a
# second thread must be made on what was judged.
FDSWAP = r"""
import ctypes, os, socket, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
path, seconds, decoy, mode = sys.argv[1].encode(), float(sys.argv[2]), sys.argv[3], sys.argv[4]
FD = 100
u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM if mode == "dgram" else socket.SOCK_STREAM)
d = os.open("/dev/null", os.O_RDONLY) if decoy == "file" else \
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).detach()
class SA(ctypes.Structure):
    _fields_ = [("family", ctypes.c_ushort), ("path", ctypes.c_char * 108)]
sa = SA(); sa.family = socket.AF_UNIX; sa.path = path
libc.dup2(d, FD)
stop = False
def flip():
    while not stop:
        libc.dup2(u.fileno(), FD); libc.dup2(d, FD)
t = threading.Thread(target=flip, daemon=True); t.start()
calls, won, end = 0, 0, time.monotonic() + seconds
while time.monotonic() < end and not won:
    calls += 1
    if mode == "dgram":
        libc.sendto(FD, b"RACED", 5, 0, ctypes.byref(sa), ctypes.sizeof(sa))
    else:
        libc.connect(FD, ctypes.byref(sa), ctypes.sizeof(sa))
        try:
            u.getpeername(); won = 1
        except OSError:
            pass
stop = True
print("calls", calls, "won", won, flush=True)
"""

DGRAM = r'''
import errno, socket, sys
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
for p in sys.argv[1:]:
    try:
        d.sendto(b"hello", p); print(p, "sent", flush=True)
    except OSError as e:
        print(p, "refused", errno.errorcode.get(e.errno), flush=True)
'''


class DgramListener:
    def __init__(self, path: Path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        os.chmod(path, 0o777)
        self.sock.settimeout(0.2)

    def received(self) -> int:
        n = 0
        while True:
            try:
                self.sock.recv(100)
                n += 1
            except (socket.timeout, BlockingIOError):
                return n

    def close(self):
        self.sock.close()
        self.path.unlink(missing_ok=True)


@pytest.fixture
def hostdir():
    """A directory of host sockets outside every workspace, as a daemon's."""
    d = Path("/run") / f"comet-utest-{secrets.token_hex(4)}"
    d.mkdir(mode=0o755)
    yield d
    for p in d.iterdir():
        p.unlink()
    d.rmdir()


@pytest.fixture
def sbx(rt, workdir, ws):
    gcfg = workdir / "global.yaml"
    gcfg.write_text("")

    def call(script, *args, profile, config=""):
        gcfg.write_text(config)
        events = workdir / f"events-{secrets.token_hex(3)}.jsonl"
        res = run_clean(rt, ws, [PY, "-c", script, *args], profile=profile, env=sandbox_env(gcfg),
                        events=events, timeout=120)
        return res, events_of(events)

    return call


def lines(res):
    return [json.loads(l) for l in res.out.splitlines() if l.startswith("{")]


@pytest.mark.parametrize("profile", ["workspace", "read-only", "strict"])
def test_a_daemon_socket_anywhere_on_the_host_is_refused_and_reported(sbx, hostdir, profile):
    # Names no list has: a k3s-like containerd, cri-dockerd, and a made-up one.
    socks = [hostdir / "containerd.sock", hostdir / "cri-dockerd.sock", hostdir / "agentd.sock"]
    lst = [UnixListener(p) for p in socks]
    try:
        for p in socks:
            os.chmod(p, 0o777)
        res, evs = sbx(CONNECT, *map(str, socks), profile=profile)
        assert res.rc == 0, res.err
        got = {r["p"]: r for r in lines(res)}
        for p in socks:
            r = got[str(p)]
            assert not r["ok"], r
            # strict does not read /run at all: the path is not there (ENOENT)
            assert r["errno"] in ("EACCES", "ENOENT"), r
        assert sum(l.accepted for l in lst) == 0, "a refused connect arrived on the host"
        if profile != "strict":
            refused = {e["requested"] for e in evs if e["surface"] in ("unix-socket", "runtime-socket")}
            assert refused >= {str(p) for p in socks}, evs
            assert "unix-socket" in res.err  # the summary on stderr
    finally:
        for l in lst:
            l.close()


def test_devbox_has_no_socket_rule(sbx, hostdir):
    # The control: without the rule the same connect arrives.
    p = hostdir / "agentd.sock"
    l = UnixListener(p)
    try:
        os.chmod(p, 0o777)
        res, _ = sbx(CONNECT, str(p), profile="devbox")
        assert lines(res)[0]["ok"], res.out + res.err
        assert l.accepted >= 1
    finally:
        l.close()


@pytest.mark.parametrize("profile", ["workspace", "strict"])
def test_sockets_in_the_workspace_and_the_private_tmp_work(sbx, ws, profile):
    p = ws / "dev.sock"
    l = UnixListener(p)
    script = CONNECT + r'''
import threading
srv = socket.socket(socket.AF_UNIX); srv.bind("/tmp/own.sock"); srv.listen(1)
srv2 = socket.socket(socket.AF_UNIX); srv2.bind("\0comet-own-" + str(__import__("os").getpid())); srv2.listen(1)
for a in ("/tmp/own.sock", "\0comet-own-" + str(__import__("os").getpid())):
    c = socket.socket(socket.AF_UNIX); c.connect(a); print(json.dumps({"p": a.replace("\0", "@"), "ok": True}))
'''
    try:
        os.chmod(p, 0o777)
        res, evs = sbx(script, str(p), "dev.sock", profile=profile)
        assert res.rc == 0, res.err
        got = lines(res)
        assert all(r["ok"] for r in got) and len(got) == 4, got
        assert l.accepted == 2
        assert not [e for e in evs if e["surface"] == "unix-socket"], evs
    finally:
        l.close()


def test_an_abstract_socket_of_the_host_is_refused(sbx):
    # workspace shares the host's network namespace, where abstract names
    # live (an X server's, a containerd-shim's).
    name = f"comet-utest-{secrets.token_hex(4)}"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind("\0" + name)
    srv.listen(8)
    srv.settimeout(0.5)
    try:
        res, evs = sbx(CONNECT, "@" + name, profile="workspace")
        r = lines(res)[0]
        assert not r["ok"] and r["errno"] == "ECONNREFUSED", r
        with pytest.raises(socket.timeout):
            srv.accept()
        assert any(e["requested"] == "@" + name for e in evs), evs
    finally:
        srv.close()


def test_flipping_the_address_mid_call_never_reaches_the_host(sbx, ws, hostdir):
    bad = hostdir / "agentd.sock"
    lb = UnixListener(bad)
    good = ws / "g.sock"
    lg = UnixListener(good)
    try:
        os.chmod(bad, 0o777)
        os.chmod(good, 0o777)
        res, _ = sbx(RACE, str(good), str(bad), "1500", profile="workspace")
        assert "connected" in res.out, res.err
        assert lb.accepted == 0, f"{lb.accepted} connections reached the host socket"
        assert lg.accepted > 0  # the race ran: the allowed one was reached
    finally:
        lb.close()
        lg.close()


@pytest.mark.parametrize("decoy", ["file", "inet"])
@pytest.mark.parametrize("mode", ["stream", "dgram"])
def test_swapping_the_fd_mid_call_never_reaches_the_host(sbx, hostdir, decoy, mode):
    if mode == "stream":
        host = UnixListener(hostdir / "daemon.sock")
    else:
        host = DgramListener(hostdir / "daemon.sock")
    try:
        os.chmod(hostdir / "daemon.sock", 0o777)
        res, _ = sbx(FDSWAP, str(hostdir / "daemon.sock"), "4", decoy, mode, profile="workspace")
        assert "calls" in res.out, res.out + res.err
        calls = int(res.out.split()[1])
        assert calls > 100, res.out  # the race ran
        reached = host.accepted if mode == "stream" else host.received()
        assert reached == 0, f"{reached} reached the host socket; {res.out}"
        assert "won 0" in res.out, res.out
    finally:
        host.close()


def test_a_datagram_to_a_host_socket_is_refused(sbx, ws, hostdir):
    host = DgramListener(hostdir / "log.sock")
    own = DgramListener(ws / "own.sock")
    try:
        res, evs = sbx(DGRAM, str(host.path), str(own.path), profile="workspace")
        assert f"{host.path} refused EACCES" in res.out, res.out + res.err
        assert f"{own.path} sent" in res.out, res.out + res.err
        assert host.received() == 0
        assert own.received() == 1
        assert any(e["syscall"] == "sendto" and e["requested"] == str(host.path) for e in evs), evs
    finally:
        host.close()
        own.close()


def test_an_allowlisted_socket_is_reached_and_a_workspace_file_cannot_allowlist(sbx, ws, hostdir):
    # The allowlist is the global or user file's; a repository's own file
    # cannot open a socket (it may only take access away).
    allowed = hostdir / "agent.sock"
    other = hostdir / "other.sock"
    la, lo = UnixListener(allowed), UnixListener(other)
    try:
        os.chmod(allowed, 0o777)
        os.chmod(other, 0o777)
        res, evs = sbx(CONNECT, str(allowed), str(other), profile="workspace",
                       config=f"unix_sockets: [{allowed}]\n")
        got = {r["p"]: r for r in lines(res)}
        assert got[str(allowed)]["ok"], got
        assert not got[str(other)]["ok"] and got[str(other)]["errno"] == "EACCES", got
        assert la.accepted == 1 and lo.accepted == 0
        (ws / ".comet").mkdir()
        (ws / ".comet" / "sandbox.yaml").write_text(f"unix_sockets: [{other}]\n")
        try:
            res, _ = sbx(CONNECT, str(other), profile="workspace")
            assert res.rc == 125 and "unix_sockets" in res.err, res.err
            assert lo.accepted == 0
        finally:
            (ws / ".comet" / "sandbox.yaml").unlink()
            (ws / ".comet").rmdir()
    finally:
        la.close()
        lo.close()


def test_relative_paths_and_symlinks_are_judged_where_they_lead(sbx, ws, hostdir):
    # The red team's spellings: ".." out of the workspace, an absolute
    # symlink in it, and an abstract name with a NUL inside (shown as '@').
    host = hostdir / "agentd.sock"
    l = UnixListener(host)
    try:
        os.chmod(host, 0o777)
        os.symlink(str(host), ws / "lnk")
        up = "../" * len(ws.parts) + str(host).lstrip("/")
        res, evs = sbx(CONNECT, up, "lnk", profile="workspace")
        got = {r["p"]: r for r in lines(res)}
        assert got[up]["errno"] == "EACCES" and got["lnk"]["errno"] == "EACCES", got
        assert l.accepted == 0
        assert [e["requested"] for e in evs if e["surface"] == "unix-socket"] == [up, "lnk"], evs
    finally:
        l.close()


# Red team round 14: a magic link on the way to a host socket (an O_PATH
# fd's /proc/self/fd/N, /proc/1/root/..., a symlink in the workspace to
# /proc/self/fd/N) was refused (ELOOP) but not reported. A symlink loop is
# no refusal of the rule: ELOOP, as the kernel says, and no event.
MAGIC = r"""
import errno, json, os, socket, sys
host, ws = sys.argv[1], sys.argv[2]
fd = os.open(host, os.O_PATH)
os.symlink("/proc/self/fd/%d" % fd, ws + "/magic")
os.symlink("loop-b", ws + "/loop-a"); os.symlink("loop-a", ws + "/loop-b")
hostdir = os.open(os.path.dirname(host), os.O_PATH)
wsdir = os.open(ws, os.O_PATH)
own = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); own.bind(ws + "/app.sock"); own.listen(1)
for label, p in [("fd", "/proc/self/fd/%d" % fd), ("root", "/proc/1/root" + host),
                 ("magic", "magic"), ("loop", "loop-a"),
                 ("hostdir", "/proc/self/fd/%d/agentd.sock" % hostdir),
                 ("own", "/dev/fd/%d/app.sock" % wsdir)]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(p); print(json.dumps({"p": label, "ok": True}), flush=True)
    except OSError as e:
        print(json.dumps({"p": label, "ok": False, "errno": errno.errorcode.get(e.errno)}), flush=True)
"""


def test_a_magic_link_to_a_host_socket_is_refused_and_reported(sbx, ws, hostdir):
    host = hostdir / "agentd.sock"
    l = UnixListener(host)
    try:
        os.chmod(host, 0o777)
        res, evs = sbx(MAGIC, str(host), str(ws), profile="workspace")
        got = {r["p"]: r for r in lines(res)}
        assert l.accepted == 0, "a connect through a magic link reached the host"
        for p in ["fd", "root", "magic", "hostdir"]:
            assert not got[p]["ok"] and got[p]["errno"] == "EACCES", got
        assert got["loop"]["errno"] == "ELOOP", got
        # the long-path spelling of the sandbox's own socket: reached
        assert got["own"]["ok"], got
        refused = [e["requested"] for e in evs if e["surface"] == "unix-socket"]
        assert len(refused) == 4 and "magic" in refused and "loop-a" not in refused, evs
    finally:
        l.close()


def test_a_host_fifo_outside_the_writable_places_cannot_be_written(sbx, hostdir):
    # A FIFO is a daemon's input too (/run/initctl); a read-only mount does
    # not stop opening one for writing: Landlock (writes only beneath the
    # writable mounts) does.
    fifo = hostdir / "ctl"
    os.mkfifo(fifo, 0o666)
    got = []
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        script = ("import errno,os\ntry:\n  fd=os.open(%r, os.O_WRONLY|os.O_NONBLOCK); os.write(fd,b'order')"
                  "; print('written')\nexcept OSError as e: print('refused', errno.errorcode[e.errno])\n"
                  % str(fifo))
        res, evs = sbx(script, profile="workspace")
        try:
            got.append(os.read(fd, 100))
        except BlockingIOError:
            pass
        assert "refused EACCES" in res.out, res.out + res.err
        assert got in ([], [b""]), got
        assert any(e["requested"] == str(fifo) and e["surface"] == "fs.write" for e in evs), evs
    finally:
        os.close(fd)
