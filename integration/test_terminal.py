"""process.terminal with --console-socket: the pty master arrives over
SCM_RIGHTS; output, input and consoleSize go through it."""
import os
import stat

import pytest

from lib import ConsoleSocket
from lib.asserts import assert_nothing_left


@pytest.fixture
def console(harness):
    cs = ConsoleSocket(harness.path("console.sock"))
    harness.add_cleanup(cs.close)
    return cs


def _start_tty(rt, b, console):
    cid = rt.new_id()
    rt.create(cid, b, "--console-socket", console.path).expect_ok()
    master = console.wait_master()
    assert stat.S_ISCHR(os.fstat(master).st_mode), "received fd is not a character device"
    rt.start(cid).expect_ok()
    return cid


def test_console_size_and_output(rt, bundle, console):
    b = bundle().terminal(True, size=(37, 111)).sh("stty size; tty; echo done")
    _start_tty(rt, b, console)
    out = console.read_until(b"done\r\n")
    assert b"37 111\r\n" in out, out
    assert b"/dev/pts/0\r\n" in out, out


def test_console_input(rt, bundle, console):
    b = bundle().terminal(True).sh("read line; echo got:$line; sleep 0.2")
    _start_tty(rt, b, console)
    console.write(b"hello\n")
    out = console.read_until(b"got:hello")
    assert b"got:hello" in out, out


def test_console_device_inside(rt, bundle, console):
    b = bundle().terminal(True).sh("/probe stat /dev/console; /probe readfd 0; echo end")
    _start_tty(rt, b, console)
    out = console.read_until(b"end").decode(errors="replace")
    import json
    lines = [json.loads(line) for line in out.replace("\r", "").splitlines() if line.startswith("{")]
    assert len(lines) == 2, out
    dev = lines[0]["data"]
    assert dev["type"] == "char" and dev["rdev_major"] == 136, dev  # a pts slave
    assert lines[1]["data"]["target"] == "/dev/pts/0"


def test_terminal_stdio_all_same_tty(rt, bundle, console):
    b = bundle().terminal(True).sh("/probe readfd 1; /probe readfd 2; echo end")
    _start_tty(rt, b, console)
    out = console.read_until(b"end").decode()
    assert out.count('"target":"/dev/pts/0"') == 2, out


def test_terminal_without_console_socket_fails(rt, harness, bundle):
    cid = rt.new_id()
    res = rt.create(cid, bundle().terminal(True))
    assert res.rc != 0
    assert "console" in res.error.lower()
    assert_nothing_left(harness, cid)


def test_console_socket_without_terminal_fails(rt, harness, bundle, console):
    cid = rt.new_id()
    res = rt.create(cid, bundle().terminal(False), "--console-socket", console.path)
    assert res.rc != 0
    assert "console" in res.error.lower()
    assert_nothing_left(harness, cid)


def test_console_socket_missing_path_fails(rt, harness, bundle, workdir):
    cid = rt.new_id()
    res = rt.create(cid, bundle().terminal(True), "--console-socket", str(workdir / "nope.sock"))
    assert res.rc != 0
    assert "nope.sock" in res.error
    assert_nothing_left(harness, cid)
