"""The egress resolver parses the agent's DNS queries and the upstream's
answers, so once it is set up it gives up what it no longer needs
(runtime/helper_confine.hpp, docs/egress.md "The resolver's own
confinement"): CAP_NET_ADMIN only, no_new_privs, a read-only mount tree but
its state dir, and a seccomp deny list.

Two halves:
- the real resolver of a running pack: what the kernel reports about it
  (/proc/PID/status), and its mount namespace seen from inside (nsenter);
- comet-confine-probe (integration/tools/confine_probe.cpp): the same
  confine_helper() call, then every act a compromised resolver would try,
  with the errno each one got."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from lib import config as cfg

from .conftest import dns_env

pytestmark = pytest.mark.comet_only

CAP_NET_ADMIN = 1 << 12
CONFINE_PROBE = Path(os.environ.get("COMET_CONFINE_PROBE") or
                     cfg.RUNTIME.parent.parent / "integration" / "tools" /
                     "comet-confine-probe")


def status(pid: int) -> dict[str, str]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def test_running_resolver_is_confined(internet, make_pack, harness):
    pack = make_pack()
    pack.set_commands(["resolve", "api.test"], ["sleep", "60"])
    cid = harness.rt.new_id("rconf")
    harness.rt("create", "--net-helper", "--bundle", str(pack.bundle), cid, env=dns_env()).expect_ok()
    rec = json.loads((harness.rt.root / cid / "state.json").read_text())
    pid = rec["egress_resolver_pid"]
    assert pid > 0, rec
    st = status(pid)
    assert st["Name"] == "comet-dns", st
    for k in ("CapEff", "CapPrm", "CapBnd"):
        assert int(st[k], 16) == CAP_NET_ADMIN, (k, st[k])
    assert int(st["CapInh"], 16) == 0 and int(st["CapAmb"], 16) == 0, st
    assert st["NoNewPrivs"] == "1", st
    assert st["Seccomp"] == "2" and int(st["Seccomp_filters"]) >= 1, st
    assert st["Uid"].split()[0] == "0"  # kept, to attribute packets to the agent
    # A mount namespace of its own, where only the state dir is writable.
    assert os.stat(f"/proc/{pid}/ns/mnt").st_ino != os.stat("/proc/self/ns/mnt").st_ino
    state_dir = harness.rt.root / cid

    def inside(path: str) -> str:
        """Open `path` for writing from inside its mount namespace: the errno."""
        code = ("import ctypes,errno,os,sys\n"
                "libc=ctypes.CDLL(None,use_errno=True)\n"
                "fd=os.open(sys.argv[1],os.O_RDONLY)\n"
                "assert libc.setns(fd,0x20000)==0,ctypes.get_errno()\n"  # CLONE_NEWNS
                "try:\n"
                " open(sys.argv[2],'w').write('x'); print('0')\n"
                "except OSError as e:\n"
                " print(errno.errorcode[e.errno])\n")
        r = subprocess.run(["python3", "-c", code, f"/proc/{pid}/ns/mnt", path],
                           capture_output=True, text=True, timeout=10)
        assert r.returncode == 0, r
        return r.stdout.strip()

    assert inside("/etc/comet-resolver-attack") == "EROFS"
    assert inside("/usr/bin/comet-resolver-attack") == "EROFS"
    assert not Path("/etc/comet-resolver-attack").exists()
    assert inside(f"{state_dir}/resolver-can-write") == "0"
    (state_dir / "resolver-can-write").unlink()
    # noexec everywhere in there: not even a shell starts
    r = subprocess.run(["nsenter", "-t", str(pid), "-m", "sh", "-c", "true"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 126 and "Permission denied" in r.stderr, r
    # And it still does its job: the allowed name resolves.
    harness.rt("start", cid).expect_ok()
    deadline = time.time() + 10
    while time.time() < deadline:
        pins = subprocess.run(["nsenter", "-t", str(rec["pid"]), "-n", "nft", "list", "set",
                               "inet", "comet", "allow4"], capture_output=True, text=True,
                              timeout=10).stdout
        if "10.213.0.10" in pins:
            break
        time.sleep(0.05)
    assert "10.213.0.10" in pins, pins  # the resolver pinned api.test's address
    harness.rt("delete", "--force", cid).expect_ok()


def test_confined_helper_cannot_get_out(harness):
    assert CONFINE_PROBE.is_file(), f"{CONFINE_PROBE} is not built (cmake target comet-confine-probe)"
    writable = harness.path("state")
    writable.mkdir()
    companion = subprocess.Popen(["sleep", "60"])
    try:
        r = subprocess.run([str(CONFINE_PROBE), str(writable), str(companion.pid)],
                           capture_output=True, text=True, timeout=20)
    finally:
        companion.kill()
        companion.wait(timeout=10)
    assert r.returncode == 0, r
    got = {}
    for line in r.stdout.splitlines():
        j = json.loads(line)
        got[j["check"]] = j["errno"]
    want = {
        # the file system: read-only but the state dir
        "write-etc": "EROFS", "append-passwd": "EROFS", "write-proc-sys": "EROFS",
        "chmod-usr-bin": "EROFS", "write-state-dir": "0", "read-etc": "0",
        # processes: no exec, no signal but to its companion, no ptrace
        "execve": "EPERM", "kill-init": "EPERM", "kill-parent": "EPERM", "kill-group": "EPERM",
        "kill-companion": "0", "pidfd-open-init": "EPERM", "pidfd-send-proc-dir": "EPERM",
        "ptrace-companion": "EPERM",
        # sockets: UDP/TCP with a mark (its upstream traffic) work, nothing else
        "socket-udp": "0", "so-mark": "0", "socket-tcp": "0",
        "socket-netlink-route": "EPERM", "socket-netlink-netfilter": "EPERM",
        "socket-raw": "EPERM", "socket-packet": "EPERM", "socket-unix": "EPERM",
        "socketpair": "EPERM",
        # no way to undo any of it
        "unshare-mount": "EPERM", "unshare-user": "EPERM", "mount-tmpfs": "EPERM",
        "io-uring-setup": "EPERM",
    }
    assert got == want
    assert (writable / "confine-ok").exists()
    assert not Path("/etc/comet-confine-attack").exists()
