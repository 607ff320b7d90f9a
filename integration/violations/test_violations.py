"""capability_violation events (issue 6, docs/events.md): per surface the
agent (integration/pack/packprobe.c) does the forbidden act; the test checks
the errno it saw, exactly one event with every field right, exit code 3, the
flag in the registry and the warning on the next run. Also: an allowed action
reports nothing, repeats are rate-limited, a killed reporter leaves every
call denied, `events --violations`, delivery to a unix socket, flags clear."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import threading
import time
import types
from pathlib import Path

import pytest

from lib.packs import MANIFEST, events_of, make_pack, one, pack_run, results, run_with_events

pytestmark = pytest.mark.comet_only

PACK = "probe-pack"
VERSION = "0.0.1"
WARN = f"pack {PACK}@{VERSION} is flagged"
ENVELOPE_KEYS = {"type", "time", "id", "container", "pack", "surface", "requested",
                 "matched_entry", "syscall", "pid", "errno"}
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$")


def check_event(e: dict, surface: str, requested: str, syscall: str, err: str):
    assert set(e) >= ENVELOPE_KEYS, e
    assert e["type"] == "capability_violation"
    assert TIME_RE.match(e["time"]), e["time"]
    assert re.match(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", e["id"])
    assert e["container"].startswith("pack-"), e
    assert e["pack"] == {"name": PACK, "version": VERSION}
    assert e["surface"] == surface, e
    assert e["requested"] == requested, e
    assert e["matched_entry"] is None
    assert e["syscall"] == syscall, e
    assert isinstance(e["pid"], int) and e["pid"] > 0
    assert e["errno"] == err, e
    assert "repeated" not in e


def check_flag_and_warning(rt, pack, flags_dir: Path, count: int):
    f = flags_dir / f"{PACK}@{VERSION}.json"
    flag = json.loads(f.read_text())
    assert flag["pack"] == f"{PACK}@{VERSION}" and flag["count"] == count, flag
    assert TIME_RE.match(flag["first"]) and TIME_RE.match(flag["last"]), flag
    listed = [json.loads(x) for x in rt("pack", "flags", "list").out.splitlines()]
    assert listed == [flag]
    # the next run of that version: one warning line, and it still runs
    res = pack_run(rt, pack, "thread")
    assert res.rc == 0, res
    warns = [line for line in res.err.splitlines() if WARN in line]
    assert len(warns) == 1, res.err
    assert "events --violations" in warns[0] and "pack flags list" in warns[0]


@pytest.mark.parametrize("op,err,surface,requested,syscall", [
    # static glibc fork() is clone(SIGCHLD)
    ("fork", "EPERM", "process", "clone", "clone"),
    ("vfork", "EPERM", "process", "vfork", "vfork"),
    ("memfd-exec", "EPERM", "process", "memfd_create", "memfd_create"),
    ("exec=/bin/busybox", "EACCES", "exec", "/bin/busybox", "execve"),
    ("unshare-user", "EPERM", "namespace", "unshare(CLONE_NEWUSER)", "unshare"),
    ("mount-tmpfs", "EPERM", "namespace", "mount(/tmp)", "mount"),
    ("umount=/proc", "EPERM", "namespace", "umount2(/proc)", "umount2"),
    ("ptrace-attach", "EPERM", "namespace", "ptrace", "ptrace"),
    ("bpf", "EPERM", "namespace", "bpf", "bpf"),
    ("clock_settime", "EPERM", "clock", "clock_settime(clock 0)", "clock_settime"),
    # glibc's settimeofday() is clock_settime(CLOCK_REALTIME)
    ("settimeofday", "EPERM", "clock", "clock_settime(clock 0)", "clock_settime"),
    ("mknod=/workdir/out/null", "EPERM", "device", "mknodat(/workdir/out/null, char 1:3)", "mknodat"),
    ("mknod-block=/workdir/out/loop0", "EPERM", "device", "mknodat(/workdir/out/loop0, block 7:0)",
     "mknodat"),
    ("mknod-raw=/workdir/out/full", "EPERM", "device", "mknod(/workdir/out/full, char 1:7)", "mknod"),
    # not mounted in a pack: ENOENT
    ("connect-unix=/var/run/docker.sock", "ENOENT", "runtime-socket", "/var/run/docker.sock",
     "connect"),
    ("connect-unix=/run/containerd/containerd.sock", "ENOENT", "runtime-socket",
     "/run/containerd/containerd.sock", "connect"),
])
def test_surface_reports_one_event(rt, pack, workdir, flags_dir, op, err, surface, requested,
                                   syscall):
    res, ev = run_with_events(rt, pack, workdir, op)
    assert res.rc == 3, res
    name = op.split("=")[0]
    assert one(results(res), name)["errno"] == err, res.out
    assert len(ev) == 1, ev
    check_event(ev[0], surface, requested, syscall, err)
    check_flag_and_warning(rt, pack, flags_dir, 1)


def test_allowed_actions_report_nothing(rt, pack, workdir, flags_dir):
    res, ev = run_with_events(rt, pack, workdir, "thread", "clock_gettime",
                              "socket-unix", "mkfifo=/workdir/out/fifo", "connect-unix=/workdir/out/nothing.sock",
                              "exec=/usr/bin/packprobe")
    assert res.rc == 0, res
    r = results(res)
    assert one(r, "thread")["ok"] is True and "exec" not in r
    assert one(r, "mkfifo")["ok"] is True, r  # a FIFO is not a device
    assert one(r, "connect-unix")["errno"] == "ENOENT", r  # not a runtime's socket: no event
    assert ev == []
    assert not flags_dir.exists() or not list(flags_dir.iterdir())
    assert WARN not in pack_run(rt, pack, "thread").err


def test_agent_exit_status_zero_still_exits_3(rt, pack, workdir, flags_dir):
    res, ev = run_with_events(rt, pack, workdir, "fork", "exit=0")
    assert res.rc == 3 and len(ev) == 1


def test_rate_limit_1000_forks(rt, pack, workdir, flags_dir):
    res, ev = run_with_events(rt, pack, workdir, "forks=1000")
    assert res.rc == 3, res
    f = one(results(res), "forks")
    assert f["errno"] == "EPERM" and f["data"].split()[0] == "1000", f  # every one refused
    # the first, then summaries with counts (one a second at most, and one at exit)
    assert 1 <= len(ev) <= 10, ev
    assert sum(e.get("repeated", 1) for e in ev) == 1000, ev
    assert all(e["surface"] == "process" and e["syscall"] == "clone" for e in ev)
    assert json.loads((flags_dir / f"{PACK}@{VERSION}.json").read_text())["count"] == 1000


def test_killed_reporter_leaves_everything_denied(rt, pack, workdir, flags_dir, monkeypatch):
    # A foreground pack run serves the reporter on a thread of its own;
    # COMET_REPORTER=process gives it the process create makes, to kill alone.
    monkeypatch.setenv("COMET_REPORTER", "process")
    cid = "pack-violations-kill"
    ev = workdir / "ev.jsonl"
    holder = {}

    def go():
        holder["res"] = pack_run(rt, pack, "wait-file=/workdir/out/go", "fork", "unshare-user",
                                 "clock_settime", "exec=/bin/busybox", "exec=/usr/bin/packprobe",
                                 extra=("--id", cid, "--events", str(ev)))

    t = threading.Thread(target=go)
    t.start()
    state = Path(rt.root) / cid / "state.json"
    deadline = time.time() + 20
    pid = 0
    while time.time() < deadline and not pid:
        try:
            pid = json.loads(state.read_text()).get("reporter_pid", 0)
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    assert pid > 0, "no reporter recorded in state.json"
    # Kill it only once it holds the listener and the agent is past its
    # execve (else the create itself fails, which is not what this tests).
    def holds_listener():
        try:
            return any(os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:seccomp notify"
                       for fd in os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            return False

    def agent_waiting():
        for d in os.listdir("/proc"):
            try:
                # packprobe splits "op=arg" in place: the '=' is a NUL by now
                cmd = Path(f"/proc/{d}/cmdline").read_bytes() if d.isdigit() else b""
                if b"wait-file\x00/workdir/out/go" in cmd and \
                        Path(f"/proc/{d}/comm").read_text().strip() == "packprobe":
                    return True
            except OSError:
                pass
        return False

    while time.time() < deadline and not (holds_listener() and agent_waiting()):
        time.sleep(0.02)
    assert holds_listener() and agent_waiting(), (holds_listener(), agent_waiting(), pid, holder)
    os.kill(pid, signal.SIGKILL)
    while Path(f"/proc/{pid}").exists():
        time.sleep(0.01)
    # the pack's /workdir is the run dir's copy, bind-mounted
    (Path(rt.root) / "packs" / cid / "w0" / "go").write_text("")  # /workdir/out
    t.join(60)
    res = holder["res"]
    r = results(res)
    assert one(r, "wait-file")["ok"] is True
    # no reporter: the kernel fails every notifying call with ENOSYS
    for op in ("fork", "unshare-user", "clock_settime"):
        assert one(r, op)["errno"] == "ENOSYS", (op, r)
    execs = r["exec"]
    assert [e["errno"] for e in execs] == ["ENOSYS", "ENOSYS"], execs  # even the interpreter
    assert events_of(ev) == []
    assert res.rc == 3, res  # a reporter that did not finish counts as a violation
    assert "violation reporter did not finish" in res.err


def test_killed_run_with_its_reporter_thread_leaves_everything_denied(rt, pack, workdir, flags_dir):
    """The in-process reporter dies with `pack run`: SIGKILL it while the
    agent waits, then let the agent try what the lock-down refuses."""
    cid = "pack-violations-kill-run"
    holder = {}

    def go():
        # the results go to a file: the killed run's output tee goes with it
        holder["res"] = pack_run(rt, pack, "stdout=/workdir/out/results", "wait-file=/workdir/out/go",
                                 "fork", "unshare-user", "clock_settime", "exec=/bin/busybox",
                                 extra=("--id", cid))

    t = threading.Thread(target=go)
    t.start()
    state = Path(rt.root) / cid / "state.json"
    deadline = time.time() + 20
    init = 0
    run_pid = 0
    out = Path(rt.root) / "packs" / cid / "w0" / "results"  # /workdir/out, the first fs.write

    def holds_listener(pid):
        try:
            return any(os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:seccomp notify"
                       for fd in os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            return False

    try:
        while time.time() < deadline:
            try:
                st = json.loads(state.read_text())
                init = st.get("pid", 0)
                assert st.get("reporter_pid", 0) == 0, st  # no reporter process
                run_pid = int(Path(f"/proc/{init}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                time.sleep(0.02)
                continue
            # kill only once the agent runs (it has opened its results file):
            # a run killed between create and start takes its init with it
            if run_pid and holds_listener(run_pid) and out.is_file() and out.stat().st_size:
                break
            time.sleep(0.02)
        assert run_pid and holds_listener(run_pid), (init, run_pid, holder)
        assert out.is_file() and out.stat().st_size, "the agent did not start"
        assert Path(f"/proc/{run_pid}/comm").read_text().strip() == "comet-runtime"
        os.kill(run_pid, signal.SIGKILL)
        t.join(30)
        assert holder["res"].rc == -signal.SIGKILL, holder["res"]
        (Path(rt.root) / "packs" / cid / "w0" / "go").write_text("")  # /workdir/out
        while time.time() < deadline + 20 and Path(f"/proc/{init}").exists():
            time.sleep(0.02)
        assert not Path(f"/proc/{init}").exists(), "the agent did not finish"
        r = results(types.SimpleNamespace(out=out.read_text()))
        assert one(r, "wait-file")["ok"] is True, r
        # no listener: the kernel fails every notifying call with ENOSYS
        for op in ("fork", "unshare-user", "clock_settime"):
            assert one(r, op)["errno"] == "ENOSYS", (op, r)
        assert [e["errno"] for e in r["exec"]] == ["ENOSYS"], r
    finally:
        t.join(30)
        rt("delete", "--force", cid)
        shutil.rmtree(Path(rt.root) / "packs" / cid, ignore_errors=True)


def test_events_verb_and_unix_delivery(rt, pack, workdir, flags_dir):
    sock_path = workdir / "ev.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(sock_path))
    srv.listen(8)
    got: list[bytes] = []

    def serve():
        srv.settimeout(30)
        try:
            while True:
                c, _ = srv.accept()
                with c:
                    while data := c.recv(65536):
                        got.append(data)
        except OSError:
            pass

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    try:
        res = pack_run(rt, pack, "clock_settime", extra=("--events", f"unix:{sock_path}"))
        assert res.rc == 3, res
        deadline = time.time() + 5
        while not got and time.time() < deadline:
            time.sleep(0.02)
    finally:
        srv.close()
    lines = b"".join(got).decode().splitlines()
    assert len(lines) == 1, lines
    check_event(json.loads(lines[0]), "clock", "clock_settime(clock 0)", "clock_settime", "EPERM")


def pack_bundle(rt, pack, workdir, *ops):
    """`pack bundle` of PACK into WORKDIR/bundle (its output dir WORKDIR/out),
    the agent running OPS: (the bundle, its config to change and write)."""
    p, rootfs = pack
    bundle = workdir / "bundle"
    out = workdir / "out"
    res = rt("pack", "bundle", str(p), "--rootfs", str(rootfs), "--bundle", str(bundle), "--output",
             str(out))
    assert res.rc == 0, res
    cfg = json.loads((bundle / "config.json").read_text())
    cfg["process"]["args"] = cfg["process"]["args"][:2] + list(ops)
    return bundle, cfg


def test_events_violations_of_a_created_container(rt, pack, workdir, flags_dir):
    bundle, cfg = pack_bundle(rt, pack, workdir, "unshare-net")
    # an engine names the delivery target with an annotation
    delivered = workdir / "engine-events.jsonl"
    cfg["annotations"]["org.soyaos.comet.events"] = str(delivered)
    (bundle / "config.json").write_text(json.dumps(cfg))
    cid = rt.new_id("viol")
    assert rt.create(cid, str(bundle)).rc == 0
    followed = {}
    follower = threading.Thread(
        target=lambda: followed.setdefault("res", rt("events", "--violations", "--follow", cid,
                                                     timeout=30)))
    follower.start()
    assert rt("start", cid).rc == 0
    deadline = time.time() + 10
    out = ""
    while time.time() < deadline:
        out = rt("events", "--violations", cid).out
        if out.strip():
            break
        time.sleep(0.05)
    ev = [json.loads(x) for x in out.splitlines()]
    assert len(ev) == 1, out
    assert ev[0]["surface"] == "namespace" and ev[0]["requested"] == "unshare(CLONE_NEWNET)"
    assert ev[0]["container"] == cid
    assert events_of(delivered) == ev  # the same line, delivered as it happened
    time.sleep(0.3)  # --follow polls every 200 ms
    assert rt("delete", "--force", cid).rc == 0
    follower.join(10)
    assert not follower.is_alive(), "events --follow must end when the container is deleted"
    assert [json.loads(x) for x in followed["res"].out.splitlines()] == ev


def test_flags_clear_and_new_version_starts_clean(rt, pack, workdir, packprobe, flags_dir):
    res, _ = run_with_events(rt, pack, workdir, "fork")
    assert res.rc == 3
    # another version of the same pack is not flagged
    (pack[0] / "soyapack.yaml").write_text(MANIFEST.replace("version: 0.0.1", "version: 0.0.2"))
    res2 = pack_run(rt, pack, "thread")
    assert res2.rc == 0 and "is flagged" not in res2.err, res2
    (pack[0] / "soyapack.yaml").write_text(MANIFEST)
    assert WARN in pack_run(rt, pack, "thread").err
    assert rt("pack", "flags", "clear", f"{PACK}@{VERSION}").rc == 0
    assert rt("pack", "flags", "list").out.strip() == ""
    assert WARN not in pack_run(rt, pack, "thread").err
    bad = rt("pack", "flags", "clear", "no-such@9")
    assert bad.rc == 1 and "no-such@9" in bad.err


def test_exec_into_a_confined_container_reports_too(rt, pack, workdir, flags_dir):
    bundle, cfg = pack_bundle(rt, pack, workdir, "sleep=20000")
    out = workdir / "out"  # the bundle's /workdir/out
    (bundle / "config.json").write_text(json.dumps(cfg))
    cid = rt.new_id("viol")
    assert rt.create(cid, str(bundle)).rc == 0
    assert rt("start", cid).rc == 0
    res = rt("exec", cid, "/usr/bin/packprobe", "x", "vfork")
    assert one(results(res), "vfork")["errno"] == "EPERM", res
    ev = []
    deadline = time.time() + 10
    while time.time() < deadline and not ev:
        ev = [json.loads(x) for x in rt("events", "--violations", cid).out.splitlines()]
        time.sleep(0.05)
    assert len(ev) == 1, ev
    assert (ev[0]["surface"], ev[0]["syscall"], ev[0]["container"]) == ("process", "vfork", cid)
    # an exec'd process can no more make a symlink than the agent
    res = rt("exec", cid, "/usr/bin/packprobe", "x", "symlink=/home:/workdir/out/h")
    assert one(results(res), "symlink")["errno"] == "EACCES", res
    assert not (out / "h").is_symlink()
    assert rt("delete", "--force", cid).rc == 0
