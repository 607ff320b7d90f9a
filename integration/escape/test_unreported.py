"""Refusals nobody was told about (issue 21, items 7-9). Each of these was
refused by the kernel on 4dba8cb, but the run exited 0 with no event: an
exec by fd, writes through an fd on a read-only path, a rename across
mounts, and setting the clock through adjtimex/clock_adjtime. The product's
promise is that every refusal is a capability_violation and exit 3."""
from __future__ import annotations

import pytest

from lib.packs import build_packprobe, make_pack, one, results, run_with_events

pytestmark = pytest.mark.comet_only


@pytest.fixture(scope="session")
def packprobe(session_dir):
    return build_packprobe(session_dir)


@pytest.fixture
def pack(workdir, packprobe):
    return make_pack(workdir, packprobe)


def test_exec_by_fd_of_another_binary_is_reported(rt, pack, workdir):
    """execveat(fd, "", AT_EMPTY_PATH) of busybox: refused by Landlock, and
    reported like an exec by path, named by what the fd is open on."""
    res, ev = run_with_events(rt, pack, workdir, "exec-fd=/bin/busybox")
    assert one(results(res), "exec-fd")["errno"] == "EACCES", res.out
    assert res.rc == 3, res
    assert [(e["surface"], e["syscall"], e["errno"]) for e in ev] == [
        ("exec", "execveat", "EACCES")], ev
    assert ev[0]["requested"].startswith("fd ") and "busybox" in ev[0]["requested"], ev


def test_exec_by_fd_of_the_interpreter_is_allowed(rt, pack, workdir):
    """The interpreter itself, by fd: allowed, nothing reported (the runtime's
    own trampoline exec by fd is not the agent's and is never reported)."""
    res, ev = run_with_events(rt, pack, workdir, "exec-fd=/usr/bin/packprobe")
    assert res.rc == 0, res
    assert "exec-fd" not in results(res), res.out  # it ran packprobe again, with no ops
    assert ev == [], ev


@pytest.mark.parametrize("op", ["fchmod", "fchown", "fsetxattr", "fchmodat2-empty",
                                "fchownat-empty", "futimens"])
def test_fd_based_write_on_a_read_only_path_is_reported(rt, pack, workdir, op):
    """A write through an fd opened read-only on /workdir (read-only): the
    kernel's EROFS, reported as fs.write on what the fd names (the agent
    keeps the fd open a while: the reporter reads /proc/PID/fd/N)."""
    res, ev = run_with_events(rt, pack, workdir, f"{op}=/workdir/agent.txt", "sleep=600")
    assert one(results(res), op)["errno"] == "EROFS", res.out
    assert res.rc == 3, res
    assert [(e["surface"], e["requested"], e["errno"]) for e in ev] == [
        ("fs.write", "/workdir/agent.txt", "EROFS")], ev


def test_fd_based_write_then_exit_is_still_reported(rt, pack, workdir):
    """The same, but the agent exits at once: what the fd named may be gone
    before the reporter looks, and the event says `fd N` then (fail closed:
    reported all the same)."""
    res, ev = run_with_events(rt, pack, workdir, "fchmod=/workdir/agent.txt")
    assert one(results(res), "fchmod")["errno"] == "EROFS", res.out
    assert res.rc == 3, res
    assert len(ev) == 1 and ev[0]["surface"] == "fs.write" and ev[0]["syscall"] == "fchmod", ev
    assert ev[0]["requested"] in ("/workdir/agent.txt", "fd 3"), ev


def test_fd_based_write_where_writing_is_allowed_reports_nothing(rt, pack, workdir):
    res, ev = run_with_events(rt, pack, workdir, "write=/workdir/out/f", "fchmod=/workdir/out/f",
                              "futimens=/workdir/out/f")
    r = results(res)
    assert one(r, "fchmod")["ok"] is True and one(r, "futimens")["ok"] is True, res.out
    assert res.rc == 0 and ev == [], (res, ev)


def test_rename_across_mounts_onto_a_read_only_path_is_reported(rt, pack, workdir):
    """rename(/workdir/out/f, /workdir/g): EXDEV (the kernel says so before it
    looks at the read-only target), reported as fs.write of the target."""
    res, ev = run_with_events(rt, pack, workdir, "write=/workdir/out/f",
                              "rename=/workdir/out/f:/workdir/g")
    assert one(results(res), "rename")["errno"] == "EXDEV", res.out
    assert res.rc == 3, res
    assert [(e["surface"], e["requested"], e["syscall"], e["errno"]) for e in ev] == [
        ("fs.write", "/workdir/g", "rename", "EXDEV")], ev


@pytest.mark.parametrize("op,requested,syscall", [
    ("clock_adjtime-setoffset", "clock_adjtime(clock 0)", "clock_adjtime"),
    ("adjtimex-freq", "adjtimex", "adjtimex"),
])
def test_setting_the_clock_by_adjtime_is_reported(rt, pack, workdir, op, requested, syscall):
    res, ev = run_with_events(rt, pack, workdir, op)
    assert one(results(res), op)["errno"] == "EPERM", res.out
    assert res.rc == 3, res
    assert [(e["surface"], e["requested"], e["syscall"], e["errno"]) for e in ev] == [
        ("clock", requested, syscall, "EPERM")], ev


def test_a_flood_of_cheap_violations_does_not_hide_the_real_one(rt, pack, workdir):
    """Attack (item 10): fill the events file with thousands of distinct,
    cheap violations (refused mounts, ~300-byte paths: ~4 MiB of events),
    then exec another binary. On 4dba8cb the exec event was dropped with the
    rest past the 1 MiB cap. Now the first events of every surface are
    always kept, and the summary counts what was dropped per surface."""
    res, ev_all = run_with_events(rt, pack, workdir, "flood-mount=12000:300", "exec=/bin/busybox")
    assert res.rc == 3, res
    assert one(results(res), "exec")["errno"] == "EACCES", res.out
    ev = [e for e in ev_all if e.get("type") == "capability_violation"]
    execs = [e for e in ev if e["surface"] == "exec"]
    assert [e["requested"] for e in execs] == ["/bin/busybox"], execs
    trunc = [e for e in ev_all if e.get("type") == "events_truncated"]
    assert len(trunc) == 1, trunc[-3:]
    assert trunc[0]["dropped"] > 0 and trunc[0]["dropped_by_surface"].get("namespace", 0) == trunc[0]["dropped"], trunc
    # bounded all the same: under the hard cap (2 MiB) and a line
    size = (workdir / "ev.jsonl").stat().st_size
    assert size <= (2 << 20) + 4096, size
    assert len(ev) + trunc[0]["dropped"] == 12000 + 1, (len(ev), trunc)


def test_an_exec_whose_path_changes_under_the_check_is_still_reported(rt, pack, workdir):
    """Red team (issue 21): a second thread flips the path between the
    interpreter and /bin/busybox while the first calls execve. The reporter
    read the interpreter (allowed: no event), the kernel read busybox
    (Landlock: EACCES): refused, exit 0, no event. Every failed exec is now
    seen at sys_exit too; each refusal is reported once."""
    res, ev = run_with_events(rt, pack, workdir, "exec-race=300")
    r = results(res)
    fails = int(one(r, "exec-race")["data"])
    assert fails > 0, r  # the race is there to be won
    # (ENOENT too: the kernel, like the reporter, can read a half-written path)
    execs = [e for e in ev if e.get("type") == "capability_violation" and e["surface"] == "exec"]
    # a first event counts 1; a summary line "repeated": N, N more
    reported = sum(e.get("repeated", 1) for e in execs)
    assert reported == fails, (fails, execs)
    assert res.rc == 3, res


@pytest.mark.parametrize("op,syscall", [("sendto-unix", "sendto"), ("sendmsg-unix", "sendmsg")])
def test_a_datagram_to_a_path_outside_the_sandbox_is_reported(rt, pack, workdir, op, syscall):
    """Red team (issue 21, round 2): sendto(2)/sendmsg(2) of a unix datagram
    to a pathname told the agent whether the path exists (ENOENT against
    ECONNREFUSED or EACCES), unreported, where stat(2) of it was an fs.read
    event. A send to a path is a path call like connect."""
    res, ev = run_with_events(rt, pack, workdir, f"{op}=/home/secret")
    assert one(results(res), op)["errno"] == "ENOENT", res.out
    assert res.rc == 3, res
    assert [(e["surface"], e["requested"], e["syscall"]) for e in ev] == [
        ("fs.read", "/home/secret", syscall)], ev


def test_event_lines_are_ascii(rt, pack, workdir):
    """Red team (issue 21, round 5): an agent-chosen path holding U+009B
    (CSI) was written raw into the events file, which `events --violations`
    and --events /dev/stderr print to terminals. Event lines are ASCII
    (\\uXXXX), the same text to a JSON reader."""
    res, ev = run_with_events(rt, pack, workdir, "stat=/home/\u009b2J")
    assert res.rc == 3, res
    raw = (workdir / "ev.jsonl").read_bytes()
    assert all(b < 0x80 for b in raw), raw
    assert ev[0]["requested"] == "/home/\u009b2J", ev
