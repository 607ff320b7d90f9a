"""Terminal injection (docs/events.md, surface `terminal`): a confined agent
started from a person's interactive shell must not type into that shell.

A real pty plays the person's terminal: a shell runs in it, the test types
`comet-runtime ... ; echo` at its prompt, and the agent (packprobe) calls
ioctl(0, TIOCSTI) to push `touch MARKER` into the terminal's input queue.
Had that worked, the shell would read and run the line once the runtime
returns. Both `pack run` (the lock-down refuses TIOCSTI and TIOCLINUX with
EPERM, reports it, exit 3) and plain `run` (every container process is in a
session of its own, as runc's init, so the terminal is not its controlling
terminal and TIOCSTI needs CAP_SYS_ADMIN) are driven that way."""
from __future__ import annotations

import json
import os
import pty
import select
import shlex
import shutil
import time
from pathlib import Path

import pytest

from lib import config as cfg
from lib.packs import build_packprobe, make_pack

pytestmark = pytest.mark.comet_only


@pytest.fixture(scope="module")
def packprobe(session_dir) -> Path:
    return build_packprobe(session_dir)


def in_a_terminal(command: str, workdir: Path, timeout: float = 60) -> str:
    """Run `command` from an interactive shell on a new pty, as a person
    would, then let the shell read whatever is left in the terminal's input
    and exit. Returns everything the terminal showed."""
    pid, fd = pty.fork()
    if pid == 0:  # the person's shell
        os.chdir(workdir)
        os.execve("/bin/sh", ["sh", "-i"], {"PATH": os.environ["PATH"], "PS1": "$ ",
                                            "HOME": str(workdir), "TERM": "dumb",
                                            **{k: v for k, v in os.environ.items()
                                               if k.startswith(("COMET_", "ASAN_", "UBSAN_"))}})
    out = b""

    def read_until(token: bytes, limit: float) -> None:
        nonlocal out
        deadline = time.monotonic() + limit
        while token not in out and time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], 0.1)
            if r:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    return
                if not chunk:
                    return
                out += chunk

    try:
        # "DO""NE" is only DONE once the shell has run the line (not in its echo)
        os.write(fd, (command + '; echo "RC=$? DO""NE"\n').encode())
        read_until(b" DONE", timeout)
        assert b" DONE" in out, out.decode(errors="replace")
        # what an injection left in the input queue runs now, before exit
        os.write(fd, b'echo "LAST""LINE"\n')
        read_until(b"LASTLINE", 10)
        os.write(fd, b"exit\n")
        read_until(b"\x00never", 2)
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        os.close(fd)
    return out.decode(errors="replace")


def report_of(screen: str, op: str) -> dict:
    for line in screen.splitlines():
        at = line.find('{"op":')  # a prompt may stand before it
        if at >= 0 and f'"op":"{op}"' in line:
            return json.loads(line[at:].strip())
    raise AssertionError(f"{op} did not report:\n{screen}")


def refused(screen: str, op: str) -> None:
    """The op did not type: it could not reach the terminal (no controlling
    terminal: /dev/tty is ENXIO; stdin not a terminal: ENOTTY) or the call
    was refused (EPERM)."""
    r = report_of(screen, op)
    assert not r["ok"], f"{op} typed into the caller's terminal:\n{screen}"
    assert r["errno"] in ("EPERM", "ENXIO", "ENOTTY", "E6", "E25"), r


def test_pack_run_agent_cannot_type_into_the_callers_terminal(rt, workdir, packprobe):
    pack, rootfs = make_pack(workdir, packprobe)
    marker = workdir / "INJECTED"
    events = workdir / "ev.jsonl"
    cmd = " ".join(shlex.quote(str(a)) for a in [
        cfg.RUNTIME, "--root", rt.root, "pack", "run", pack, "--rootfs", rootfs, "--no-cache",
        "--events", events, "--", f"tiocsti-devtty=touch {marker}", f"tiocsti=touch {marker}",
        "tioclinux"])
    screen = in_a_terminal(cmd, workdir)
    assert not marker.exists(), f"the agent typed into the caller's terminal:\n{screen}"
    # not in the caller's session: no controlling terminal to open
    r = report_of(screen, "tiocsti-devtty")
    assert not r["ok"] and r["data"] == "open" and r["errno"] in ("ENXIO", "E6"), screen
    # and the call itself is refused by the lock-down, on any fd
    assert report_of(screen, "tiocsti")["errno"] == "EPERM", screen
    assert report_of(screen, "tioclinux")["errno"] == "EPERM", screen
    assert "RC=3 DONE" in screen, screen
    ev = [json.loads(x) for x in events.read_text().splitlines() if x.strip()]
    got = sorted((e["surface"], e["requested"], e["errno"]) for e in ev if e["surface"] == "terminal")
    assert got == [("terminal", "ioctl(TIOCLINUX)", "EPERM"),
                   ("terminal", "ioctl(TIOCSTI)", "EPERM")], ev


def test_pack_run_agent_cannot_read_or_drive_the_callers_terminal(rt, workdir, packprobe):
    """Red team (issue 21): with no cache in the way, the agent's stdin was
    the caller's terminal. It turned echo off (left off after the run), read
    what the user typed, and its escape sequences (an OSC 52 clipboard
    write, a cleared screen with a fake prompt) reached the terminal. Now
    the agent's stdin is /dev/null and its output goes through a pipe whose
    reader shows control characters as ^[ and the like."""
    pack, rootfs = make_pack(workdir, packprobe)
    cmd = " ".join(shlex.quote(str(a)) for a in [
        cfg.RUNTIME, "--root", rt.root, "pack", "run", pack, "--rootfs", rootfs, "--no-cache",
        "--", "term-steal"]) + "; stty -a | tr ' ' '\\n' | grep -x -e echo -e -echo"
    screen = in_a_terminal(cmd, workdir)
    r = report_of(screen, "term-steal")
    assert not r["ok"] and r["errno"] in ("ENOTTY", "E25"), r  # stdin is no terminal
    assert r["data"] == "read 0", r  # /dev/null: nothing the user typed
    assert "\x1b]52" not in screen and "\x1b[2J" not in screen, repr(screen)
    # C1 CSI too, in UTF-8 and as a bare byte after a non-UTF-8 one
    assert "^[]52;c;cHduZWQ=^G^[[2JFAKE-PROMPT^?2J|\\xff^?31m" in screen, repr(screen)
    assert "\xc2\x9b" not in screen and "\x9b" not in screen, repr(screen)
    assert "\necho\r" in screen or "\necho\n" in screen, repr(screen)  # echo still on


def test_plain_run_process_cannot_type_into_the_callers_terminal(rt, bundle, workdir, packprobe):
    # no capabilities, runc's default config: no lock-down; its own session
    # does it (the inherited terminal is not its controlling terminal, and
    # TIOCSTI elsewhere needs CAP_SYS_ADMIN)
    b = bundle()
    shutil.copy2(packprobe, b.rootfs / "packprobe")
    marker = workdir / "INJECTED"
    b.args("/packprobe", "x", f"tiocsti-devtty=touch {marker}", f"tiocsti=touch {marker}").write()
    cid = rt.new_id("tty")
    cmd = " ".join(shlex.quote(str(a)) for a in [cfg.RUNTIME, "--root", rt.root, "run", "--bundle",
                                                 b.path, cid])
    screen = in_a_terminal(cmd, workdir)
    assert not marker.exists(), f"the container typed into the caller's terminal:\n{screen}"
    refused(screen, "tiocsti-devtty")
    # stdin is the terminal: EPERM (not the controlling terminal, no
    # CAP_SYS_ADMIN), or EIO where the kernel has TIOCSTI off altogether
    # (dev.tty.legacy_tiocsti=0)
    assert report_of(screen, "tiocsti")["errno"] in ("EPERM", "EIO"), screen
    assert "RC=0 DONE" in screen, screen


def test_a_container_reads_and_writes_the_inherited_terminal(rt, bundle, workdir):
    # its own session does not cut it off from the terminal it was given
    b = bundle().sh('read line; echo "got:$line"').write()
    cid = rt.new_id("ttyio")
    cmd = " ".join(shlex.quote(str(a)) for a in [cfg.RUNTIME, "--root", rt.root, "run", "--bundle",
                                                 b.path, cid])
    pid, fd = pty.fork()
    if pid == 0:
        os.execv("/bin/sh", ["sh", "-c", cmd])
    out = b""
    try:
        time.sleep(0.5)
        os.write(fd, b"hello\n")
        deadline = time.monotonic() + 20
        while b"got:hello" not in out and time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], 0.1)
            if r:
                try:
                    out += os.read(fd, 4096)
                except OSError:
                    break
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert b"got:hello" in out, out
    assert os.waitstatus_to_exitcode(status) == 0
