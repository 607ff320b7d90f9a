"""fs.read / fs.write capability_violation events (issue 6, docs/events.md):
the BPF program on sys_exit (runtime/reporting/bpf/fswatch.bpf.c) reports a failed
path call of the agent's; the reporter decides (classify_fs) what is a
violation. Per case the agent (integration/pack/packprobe.c) does the act;
the test checks the errno it saw, exactly one event with every field right,
exit code 3 and the flag; and that what the manifest allows (or a missing
file inside the image) reports nothing. Also: the container's own status
is 3 under an engine (the init's barrier with the reporter), repeats are
counted, the runtime's own set-up is never reported, a killed reporter
opens nothing, and the host is left with no program attached."""
from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from lib import fswatch
from lib.packs import one, pack_run, results, run_with_events
from lib.reaper import engine_run as reap

pytestmark = pytest.mark.comet_only

PACK, VERSION = "probe-pack", "0.0.1"


@pytest.mark.parametrize("op,err,surface,requested,syscall,matched", [
    # not in the sandbox at all
    ("open-read=/home/user/.ssh/id_rsa", "ENOENT", "fs.read", "/home/user/.ssh/id_rsa", "openat",
     None),
    ("stat=/root/.netrc", "ENOENT", "fs.read", "/root/.netrc", "newfstatat", None),
    # relative to the agent's cwd (/workdir), resolved through /proc
    ("stat=../var/lib/secret", "ENOENT", "fs.read", "/var/lib/secret", "newfstatat", None),
    # writes outside fs.write: the read-only image, a read-only declared entry, nowhere
    ("write=/etc/passwd", "EROFS", "fs.write", "/etc/passwd", "openat", None),
    ("write=/workdir/agent.txt", "EROFS", "fs.write", "/workdir/agent.txt", "openat", "/workdir"),
    ("write=/srv/dump.txt", "ENOENT", "fs.write", "/srv/dump.txt", "openat", None),
    ("mkdir=/workdir/__pycache__", "EROFS", "fs.write", "/workdir/__pycache__", "mkdir",
     "/workdir"),
    ("unlink=/usr/bin/packprobe", "EROFS", "fs.write", "/usr/bin/packprobe", "unlink", None),
    ("rename=/workdir/agent.txt:/workdir/agent.old", "EROFS", "fs.write", "/workdir/agent.txt",
     "rename", "/workdir"),
    # attacks on the recording: ".." out of a system directory (not skipped
    # as one), /proc's magic links and /dev/fd (where they lead)
    ("stat=/usr/../home/u/x", "ENOENT", "fs.read", "/home/u/x", "newfstatat", None),
    ("stat=/proc/self/root/home/x", "ENOENT", "fs.read", "/proc/self/root/home/x", "newfstatat",
     None),
    ("stat=/dev/fd/../../../home/x", "ENOENT", "fs.read", "/home/x", "newfstatat", None),
    # a ".." after where the kernel stopped (/home is missing) climbs nothing
    ("stat=/home/nope/../../workdir/x", "ENOENT", "fs.read", "/home/workdir/x", "newfstatat",
     None),
    # the sun_path the kernel used is addrlen's, not up to the NUL
    ("connect-unix-len=18:/home/u/agent.sock/../../../workdir/x", "ENOENT", "fs.read",
     "/home/u/agent.sock", "connect", None),
    # procfs's ".." climbs like any other
    ("stat=/proc/self/../../home/x", "ENOENT", "fs.read", "/home/x", "newfstatat", None),
    # addrlen is an int: its upper bits are not the kernel's ("/work")
    ("connect-unix-rawlen=0x100000007:/workdir/x", "ENOENT", "fs.read", "/work", "connect",
     None),
    # the other path calls
    ("getxattr=/home/x", "ENOENT", "fs.read", "/home/x", "getxattr", None),
    ("statfs=/root/x", "ENOENT", "fs.read", "/root/x", "statfs", None),
    ("connect-unix=/home/x.sock", "ENOENT", "fs.read", "/home/x.sock", "connect", None),
    ("bind-unix=/workdir/x.sock", "EROFS", "fs.write", "/workdir/x.sock", "bind", "/workdir"),
    # no symlinks in a pack (Landlock): one made and removed between a
    # lookup and the reporter's look would hide where the lookup led
    ("symlink=/home:/workdir/out/h", "EACCES", "fs.write", "/workdir/out/h", "symlink",
     "/workdir/out"),
    # relative to a dirfd closed right after: where it was cannot be told
    # once it is closed ("home/x"), and can while it is still open
    # ("/home/x": the reporter was quicker, as under a loaded machine)
    ("stat-at=/:home/x", "ENOENT", "fs.read", ("home/x", "/home/x"), "newfstatat", None),
])
def test_fs_surface_reports_one_event(rt, pack, workdir, flags_dir, op, err, surface, requested,
                                      syscall, matched):
    res, ev = run_with_events(rt, pack, workdir, op)
    assert res.rc == 3, res
    name = op.split("=")[0]
    assert one(results(res), name)["errno"] == err, res.out
    assert len(ev) == 1, ev
    e = ev[0]
    assert e["type"] == "capability_violation"
    assert e["container"].startswith("pack-") and e["pack"] == {"name": PACK, "version": VERSION}
    if isinstance(requested, tuple):
        assert e["requested"] in requested, e
        requested = e["requested"]
    assert (e["surface"], e["requested"], e["syscall"], e["errno"]) == (
        surface, requested, syscall, err), e
    assert e["matched_entry"] == matched, e
    assert isinstance(e["pid"], int) and e["pid"] > 0 and "repeated" not in e
    assert "violation events are off" not in res.err, res.err
    flag = json.loads((flags_dir / f"{PACK}@{VERSION}.json").read_text())
    assert flag["count"] == 1, flag
    nxt, nev = run_with_events(rt, pack, workdir, "exit=0", name="next.jsonl")
    # A str message: pytest shows all of it (the stderr says which part exited 3).
    assert nxt.rc == 0 and nxt.err.count(f"pack {PACK}@{VERSION} is flagged") == 1, (
        f"rc={nxt.rc}\nstderr:\n{nxt.err}\nevents: {nev}")


def test_allowed_and_missing_inside_report_nothing(rt, pack, workdir, flags_dir):
    res, ev = run_with_events(
        rt, pack, workdir,
        "open-read=/workdir/agent.txt",      # declared
        "open-read=/workdir/inputs/none",    # declared, missing: only missing
        "stat=/etc/ld.so.preload",           # in the image, missing (every loader probes it)
        "stat=/usr/lib/python3/none.py",
        "write=/workdir/out/ok.txt",         # fs.write
        "write=/workdir/out/no/such/dir",    # fs.write, missing parent: ENOENT, not a violation
        "mkdir=/workdir/out/d", "rename=/workdir/out/ok.txt:/workdir/out/ok2.txt",
        "unlink=/workdir/out/ok2.txt",
        "write=/dev/null", "stat=/proc/self/status",
        "connect-unix=/var/run/nscd/socket")       # glibc's look for nscd
    assert res.rc == 0, res
    r = results(res)
    assert one(r, "write")["ok"] is True and r["write"][1]["errno"] == "ENOENT", r
    assert one(r, "mkdir")["ok"] is True and one(r, "unlink")["ok"] is True, r
    assert ev == [], ev
    assert "violation events are off" not in res.err, res.err
    assert not flags_dir.exists() or not list(flags_dir.iterdir())


def test_repeats_are_counted_not_written(rt, pack, workdir):
    # 2000 failed stats of the same undeclared path: one event, one summary
    res, ev = run_with_events(rt, pack, workdir, "stats=2000:/home/x")
    assert res.rc == 3, res
    fs = [e for e in ev if e["surface"] == "fs.read"]
    assert [e["requested"] for e in fs] == ["/home/x", "/home/x"], ev
    assert "repeated" not in fs[0] and fs[1]["repeated"] == 1999, fs


def pids_of(comm: str) -> set[int]:
    pids = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().strip() == comm:
                    pids.add(int(d.name))
            except OSError:
                pass
    return pids


def kill_reporter_once_the_agent_runs(before_reporters: set[int], before_agents: set[int]) -> None:
    """SIGKILL the reporter a run started, once its agent has exec'd (so the
    listener has been handed over: killed before that, the container's
    child cannot send it and the create fails, which is another test)."""
    deadline = time.time() + 20
    mine: set[int] = set()
    agent: set[int] = set()
    while time.time() < deadline and not (mine and agent):
        mine = pids_of("comet-reporter") - before_reporters
        agent = pids_of("packprobe") - before_agents
        time.sleep(0.01)
    assert mine and agent, (mine, agent)
    for p in mine:
        os.kill(p, signal.SIGKILL)


FLOOD = ("stats=300000:nothing", "open-read=/home/secret", "exit=0")


def flood_seen(ev: list[dict]) -> bool:
    """The violation after the flood is reported, or the records lost are."""
    lost = [e for e in ev if e["errno"] == "ENOBUFS"]
    for e in lost:
        assert e["surface"] == "fs.read", e
        assert re.match(r"^\d+ fs records lost \(the ring was full\)$", e["requested"]), e
    return len(lost) == 1 or any(e["requested"] == "/home/secret" for e in ev)


def test_a_flood_that_fills_the_ring_fails_closed(rt, pack, workdir):
    # Attack: fail allowed calls so fast (a missing file in readable
    # /workdir, by relative path: the reporter resolves each one through
    # /proc) that the ring may fill, then do the real violation, hoping it
    # is among the records lost. What was lost is unknown, so it counts.
    for _ in range(3):
        res, ev = run_with_events(rt, pack, workdir, *FLOOD)
        assert res.rc == 3, res
        assert flood_seen(ev), ev
        (workdir / "ev.jsonl").unlink()


def test_exit_status_3_under_an_engine(rt, workdir, pack_bundle):
    # the container's own init waits for the reporter to drain the ring
    # (trampoline.c reporter_barrier) before it reads the events file
    b = pack_bundle
    cfg = json.loads((b / "config.json").read_text())
    for ops, status, want in [(["open-read=/home/x", "exit=0"], 3, [("fs.read", "/home/x")]),
                              (["write=/etc/x", "exit=0"], 3, [("fs.write", "/etc/x")]),
                              (["stat=/etc/none", "exit=5"], 5, []),
                              # the flood: lost records count before the init reads
                              (list(FLOOD), 3, "flood"), (list(FLOOD), 3, "flood")]:
        cfg["process"]["args"] = ["/usr/bin/packprobe", "agent.txt", *ops]
        (b / "config.json").write_text(json.dumps(cfg))
        seen, events = reap(rt, b, workdir, sig="-")
        assert seen["status"] == status, (ops, seen)
        if want == "flood":
            assert flood_seen(events), events
        else:
            assert [(e["surface"], e["requested"]) for e in events] == want, events


@pytest.mark.serial  # kills the reporter it finds by name: another test's would do
def test_a_killed_reporter_opens_nothing(rt, pack, workdir, monkeypatch):
    # enforcement is the mounts': with the reporter gone, the path is still
    # not there and the write still refused (and a denied fork is ENOSYS)
    monkeypatch.setenv("COMET_REPORTER", "process")
    proc_res = {}

    before = (pids_of("comet-reporter"), pids_of("packprobe"))
    import threading

    def run():
        proc_res["r"] = pack_run(rt, pack, "sleep=1500", "open-read=/home/x", "write=/etc/x",
                                 "fork")
    t = threading.Thread(target=run)
    t.start()
    kill_reporter_once_the_agent_runs(*before)
    t.join(30)
    res = proc_res["r"]
    r = results(res)
    assert one(r, "open-read")["errno"] == "ENOENT", res.out
    assert one(r, "write")["errno"] == "EROFS", res.out
    assert one(r, "fork")["errno"] == "ENOSYS", res.out
    assert res.rc == 3, res  # a reporter that did not finish: fail closed


@pytest.mark.serial  # the program is one per boot: any other pack keeps it attached
def test_the_program_is_detached_once_nothing_is_watched(rt, pack, workdir):
    # attached while a pack runs and for 10 s after the last one (so that
    # back-to-back packs do not pay a re-attach), then the detacher unpins it;
    # this build's program only (lib/fswatch.py): other builds have their own
    assert fswatch.program_hash(), "no fswatch.bpf.o beside the runtime"
    # run it from a cgroup of the test's own, as a shim or a pod would: the
    # detacher, which outlives the run, must keep neither that cgroup nor
    # the caller's directory busy
    cg_root = Path("/sys/fs/cgroup/unified")
    home = cg_root / open("/proc/self/cgroup").read().split("0::", 1)[1].splitlines()[0].lstrip("/")
    caller = cg_root / f"comet-test-linger-{os.getpid()}"
    caller.mkdir()
    try:
        (caller / "cgroup.procs").write_text("0")
        try:
            res = pack_run(rt, pack, "exit=0")
        finally:
            (home / "cgroup.procs").write_text("0")
        assert res.rc == 0, res
        assert fswatch.attached(), sorted(fswatch.PINS.glob("*/*"))
        pid = fswatch.linger_pid()
        assert pid is not None, fswatch.linger_file()
        assert os.readlink(f"/proc/{pid}/cwd") == "/"
        groups = [ln.split(":", 2) for ln in open(f"/proc/{pid}/cgroup").read().splitlines()]
        assert all(g[2] == "/" for g in groups), groups
        caller.rmdir()  # EBUSY if the detacher (or anything else) were still in it
    finally:
        if caller.exists():
            for p in (caller / "cgroup.procs").read_text().split():
                (home / "cgroup.procs").write_text(p)
            caller.rmdir()
    deadline = time.time() + 25
    while time.time() < deadline and fswatch.attached():
        time.sleep(0.2)
    assert not fswatch.attached()
    assert (fswatch.pin_dir() / "slot_of").exists()  # pinned still: no reload on the next
    while time.time() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists()
    assert not fswatch.linger_file().exists() and not fswatch.idle_file().exists()
    # and the next pack attaches it again, and still reports
    res, ev = run_with_events(rt, pack, workdir, "open-read=/home/x")
    assert res.rc == 3 and [(e["surface"], e["requested"]) for e in ev] == [("fs.read", "/home/x")]


def test_the_runtime_set_up_is_not_reported(rt, pack, workdir):
    # create's own checks inside the container (masked paths that must be
    # missing, mount targets probed) fail in the container's cgroup before
    # the agent runs: none of them is the agent's
    res, ev = run_with_events(rt, pack, workdir, "exit=0")
    assert res.rc == 0 and ev == [], (res, ev)


def fs_events(ev: list[dict]) -> list[tuple[str, str]]:
    return [(e["surface"], e["requested"]) for e in ev]


def test_a_relative_path_is_judged_where_the_call_was(rt, pack, workdir):
    # chdir out of /workdir, a relative lookup, and out before the reporter
    # looks: the cwd of the call is gone, so it fails closed (or, if the
    # reporter looked in time, it is /home/x)
    res, ev = run_with_events(rt, pack, workdir, "chdir=/", "stat=home/x", "exit=0")
    assert res.rc == 3, res
    assert fs_events(ev) in ([("fs.read", "home/x")], [("fs.read", "/home/x")]), ev
    (workdir / "ev.jsonl").unlink()
    # and back into /workdir before it looks: /proc says /workdir, but the
    # record's cwd (inode) was /, so /proc is not believed
    res, ev = run_with_events(rt, pack, workdir, "chdir=/", "stat=home/x", "chdir=/workdir",
                              "sleep=600")
    assert res.rc == 3, res
    assert fs_events(ev) == [("fs.read", "home/x")], ev


def test_a_relative_path_after_a_legitimate_chdir_reports_nothing(rt, pack, workdir):
    res, ev = run_with_events(rt, pack, workdir, "chdir=/workdir/out", "stat=none.txt",
                              "stat=../inputs/none", "sleep=600")
    assert res.rc == 0 and ev == [], (res, ev)
    r = results(res)
    assert [x["errno"] for x in r["stat"]] == ["ENOENT", "ENOENT"], r


def test_a_path_too_long_to_record_fails_closed(rt, pack, workdir):
    # /workdir, 300 "/." and "../home/x": the record holds 512 bytes, the
    # kernel walks it all (to /home/x); what was cut may have gone anywhere
    res, ev = run_with_events(rt, pack, workdir, "stat-long=300:../home/x")
    assert res.rc == 3, res
    assert one(results(res), "stat-long")["errno"] == "ENOENT", res.out
    assert fs_events(ev) == [("fs.read", "/workdir...")], ev


def test_a_full_images_home_is_still_a_violation(rt, pack, workdir):
    # an image with /home, /root and /var (any Debian one): reads there
    # are not the image's business
    _, rootfs = pack
    for d in ("home/u", "root", "var/lib"):
        (rootfs / d).mkdir(parents=True)
    res, ev = run_with_events(rt, pack, workdir, "open-read=/home/u/.ssh/id_rsa",
                              "stat=/root/.netrc", "stat=/var/lib/secret")
    assert res.rc == 3, res
    assert fs_events(ev) == [("fs.read", "/home/u/.ssh/id_rsa"), ("fs.read", "/root/.netrc"),
                             ("fs.read", "/var/lib/secret")], ev


def test_a_symlink_shipped_in_the_pack_is_followed(rt, pack, workdir):
    # the pack's own files hold h -> /home: the lookup goes there
    p, _ = pack
    (p / "h").symlink_to("/home")
    res, ev = run_with_events(rt, pack, workdir, "open-read=/workdir/h/u/.ssh/id_rsa",
                              "open-read=h/u/other")
    assert res.rc == 3, res
    assert [x["errno"] for x in results(res)["open-read"]] == ["ENOENT", "ENOENT"], res.out
    assert fs_events(ev) == [("fs.read", "/home/u/.ssh/id_rsa"), ("fs.read", "/home/u/other")], ev
    assert all(e["matched_entry"] is None for e in ev), ev


def test_follow_flags_and_a_trailing_slash(rt, pack, workdir):
    # utimensat(AT_SYMLINK_NOFOLLOW) on a shipped l -> /workdir/out/x touches
    # the link, on read-only /workdir; lstat("d/") of d -> /home/nope looks
    # in /home; futimens(fd) has no path: judged on what the fd names
    p, _ = pack
    (p / "l").symlink_to("/workdir/out/x")
    (p / "d").symlink_to("/home/nope")
    res, ev = run_with_events(rt, pack, workdir, "utime-nofollow=/workdir/l", "lstat=/workdir/d/",
                              "futimens=/workdir/agent.txt", "sleep=600")
    assert res.rc == 3, res
    r = results(res)
    assert [one(r, o)["errno"] for o in ("utime-nofollow", "lstat", "futimens")] == [
        "EROFS", "ENOENT", "EROFS"], res.out
    assert [(e["surface"], e["requested"]) for e in ev] == [
        ("fs.write", "/workdir/l"), ("fs.read", "/home/nope"),
        ("fs.write", "/workdir/agent.txt")], ev


def test_a_call_that_does_not_follow_the_last_symlink_is_judged_on_the_link(rt, pack, workdir):
    # unlink of a shipped l -> /workdir/out/x: the link is on read-only
    # /workdir (EROFS), whatever it points to
    p, _ = pack
    (p / "l").symlink_to("/workdir/out/x")
    res, ev = run_with_events(rt, pack, workdir, "unlink=/workdir/l")
    assert res.rc == 3, res
    assert one(results(res), "unlink")["errno"] == "EROFS", res.out
    assert [(e["surface"], e["requested"], e["matched_entry"]) for e in ev] == [
        ("fs.write", "/workdir/l", "/workdir")], ev


def test_the_arm_marker_in_the_image_arms_all_the_same(rt, pack, workdir):
    # an image that holds the marker (the lookup then succeeds): the agent
    # is armed anyway, its violations are recorded
    _, rootfs = pack
    (rootfs / "\x01comet-fswatch-arm").write_text("")
    res, ev = run_with_events(rt, pack, workdir, "open-read=/home/x")
    assert res.rc == 3, res
    assert fs_events(ev) == [("fs.read", "/home/x")], ev


@pytest.mark.serial  # kills the reporter it finds by name: another test's would do
def test_a_reporter_killed_under_an_engine_is_status_3(rt, workdir, pack_bundle):
    # the init asks the reporter to drain; no answer means events may be
    # missing: 3, as run does for a reporter that did not finish
    import threading
    b = pack_bundle
    cfg = json.loads((b / "config.json").read_text())
    cfg["process"]["args"] = ["/usr/bin/packprobe", "agent.txt", "sleep=1500", "exit=0"]
    (b / "config.json").write_text(json.dumps(cfg))
    out = {}
    t = threading.Thread(target=lambda: out.update(r=reap(rt, b, workdir, sig="-")))
    before = (pids_of("comet-reporter"), pids_of("packprobe"))
    t.start()
    kill_reporter_once_the_agent_runs(*before)
    t.join(30)
    seen, events = out["r"]
    assert seen["status"] == 3, seen
    assert events == [], events  # nothing was violated: the 3 is the missing answer
    assert "comet-init: the violation reporter did not answer" in seen["output"], seen
