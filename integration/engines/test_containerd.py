"""containerd 1.6 + ctr driving comet-runtime through the runc shim v2
(`ctr run --runc-binary WRAPPER --runc-root DIR`).  containerd runs with a
private config (root, state, sockets, opt path) under the suite's directory."""
from __future__ import annotations

import contextlib
import json
import secrets
import shlex
import time
from pathlib import Path

import pytest

from . import enginelib as el

IMAGE = el.BB_IMAGE
NS = "default"
SLEEPER = "trap 'exit 0' TERM; echo ready; sleep 600 & wait"


class Ctr:
    def __init__(self, workdir: Path, images: el.Images):
        self.dir = workdir
        self.wrapper = el.Wrapper(workdir)
        self.runc_root = workdir / "runc-root"
        self.fifo = workdir / "fifo"
        self.fifo.mkdir()
        self.logs = workdir / "logs"
        self.logs.mkdir()
        self.watch = el.LeakWatch(workdir)
        self.watch.engine_dirs.append(str(self.runc_root / NS))
        self.cd = el.Containerd(workdir, extra={"disabled_plugins": ["io.containerd.grpc.v1.cri"]})
        self.cd.start()
        self.cd.ctr("images", "import", images.bb_oci, check=True, timeout=120)
        self.tag = secrets.token_hex(3)
        self.seq = 0
        self.used: list[str] = []
        self.torn_down = False
        self.problems: list[str] = []

    def ctr(self, *args, **kw):
        return self.cd.ctr(*args, **kw)

    def run(self, *args, **kw):
        return self.ctr("run", "--runc-binary", self.wrapper.path, "--runc-root", self.runc_root,
                        "--fifo-dir", self.fifo, *args, **kw)

    def new_id(self, what: str) -> str:
        self.seq += 1
        cid = f"cmte-{what}-{self.tag}-{self.seq}"
        self.used.append(cid)
        return cid

    def task_status(self, cid: str) -> tuple[int, str] | None:
        for line in self.ctr("task", "ls", check=True).stdout.splitlines()[1:]:
            f = line.split()
            if f and f[0] == cid:
                return int(f[1]), f[2]
        return None

    def wait_status(self, cid: str, status: str, timeout: float = 10) -> int:
        got = el.wait_for(lambda: (lambda s: s if s and s[1] == status else None)(self.task_status(cid)), timeout)
        assert got, f"task {cid} never became {status}: {self.task_status(cid)}"
        return got[0]

    def comet_state(self, cid: str) -> dict:
        p = el.run([self.wrapper.real, "--root", self.runc_root / NS, "state", cid], timeout=20)
        assert p.returncode == 0, f"comet-runtime has no state for {cid}: {p.stderr}\ncalls:\n{self.wrapper.dump()}"
        return json.loads(p.stdout)

    def remove(self, cid: str) -> None:
        if self.task_status(cid):
            self.ctr("task", "kill", "--all", "--signal", "KILL", cid, timeout=30)
            el.wait_for(lambda: (self.task_status(cid) or (0, "STOPPED"))[1] == "STOPPED", 10)
            self.ctr("task", "rm", "--force", cid, timeout=30)
        self.ctr("containers", "rm", cid, timeout=30)

    def teardown(self) -> list[str]:
        if self.torn_down:
            return self.problems
        self.torn_down = True
        probs = []
        left = [ln.split()[0] for ln in self.ctr("containers", "ls", "-q", timeout=30).stdout.splitlines() if ln.strip()]
        if left:
            probs.append(f"containers left in containerd: {left}")
            for cid in left:
                self.remove(cid)
        shims = self.cd.shim_pids()
        self.cd.stop()
        alive = [p for p in shims if el.pid_alive(p)]
        if alive:
            probs.append("shims still running after containerd stopped: " + "; ".join(el.describe(p) for p in alive))
        # containerd keeps the snapshotter's own bind mounts? none expected: a
        # container's rootfs mount left under state/ is a leak
        self.watch.ids |= self.wrapper.ids() | set(self.used)
        self.watch.remove_engine_own()
        el.wait_for(lambda: not self.watch.problems(), 5)
        probs += self.watch.problems()
        self.problems = probs
        return probs


@pytest.fixture(scope="module")
def ctr(engine_images):
    el.ensure_packages("containerd", "podman")
    d = el.mkworkdir("cmt-ctr-")
    c = None
    try:
        c = Ctr(d, engine_images)
        yield c
    finally:
        problems = []
        if c:
            problems = c.teardown()
            c.watch.force_clean()
        el.keep_logs("containerd", d)
        el.remove_tree(d)
        el.report_leftovers("containerd", problems)


@contextlib.contextmanager
def task(c: Ctr, script: str, what: str = "t"):
    cid = c.new_id(what)
    log = c.logs / f"{cid}.log"
    p = c.run("-d", "--log-uri", f"file://{log}", IMAGE, cid, "sh", "-c", script)
    assert p.returncode == 0, f"ctr run -d failed: {p.stderr}\ncalls:\n{c.wrapper.dump()}"
    try:
        yield cid, log
    finally:
        c.remove(cid)


def assert_verbs(c: Ctr, cid: str, *expected: str) -> list[el.Call]:
    calls = c.wrapper.calls_for(cid)
    verbs = [x.verb for x in calls]
    it = iter(verbs)
    assert all(v in it for v in expected), f"expected verbs {expected} in order for {cid}, got {verbs}"
    return calls


# ------------------------------------------------------------------ run
def test_run_rm_exit_status(ctr):
    cid = ctr.new_id("rm")
    p = ctr.run("--rm", IMAGE, cid, "sh", "-c", el.SETTLE + "echo out-$((40+2)); exit 3")
    assert p.returncode == 3, p
    assert "out-42" in p.stdout
    calls = assert_verbs(ctr, cid, "create", "start", "delete")
    root = str(ctr.runc_root / NS)
    for call in calls:
        # the shim passes --root RUNC_ROOT/<namespace> --log BUNDLE/log.json --log-format json
        assert call.global_value("--root") == root, call
        assert call.global_value("--log-format") == "json" and call.global_value("--log").endswith("/log.json"), call
    assert all(x.rc == 0 for x in calls), [str(x) for x in calls]
    assert not (ctr.runc_root / NS / cid).exists()
    assert cid not in ctr.ctr("containers", "ls", "-q").stdout


def test_run_tty(ctr):
    cid = ctr.new_id("tty")
    rc, out = el.run_in_pty(["ctr", "--address", ctr.cd.sock, "--namespace", NS, "run", "--rm", "-t",
                             "--runc-binary", ctr.wrapper.path, "--runc-root", ctr.runc_root, "--fifo-dir", ctr.fifo,
                             IMAGE, cid, "sh", "-c", el.SETTLE + "tty; [ -t 0 ] && echo is-a-tty; exit 2"])
    assert rc == 2, out
    assert "/dev/pts/0" in out and "is-a-tty" in out, out
    create = assert_verbs(ctr, cid, "create", "start", "delete")[0]
    assert "--console-socket" in create.args, create


def test_run_detached(ctr):
    with task(ctr, "echo hello-$((6*7)); " + SLEEPER, what="d") as (cid, log):
        pid = ctr.wait_status(cid, "RUNNING")
        st = ctr.comet_state(cid)
        assert st["status"] == "running" and st["pid"] == pid, st
        assert el.wait_for(lambda: log.exists() and "hello-42" in log.read_text(), 5), log
        assert_verbs(ctr, cid, "create", "start")
        cfg = ctr.wrapper.config_of(cid)
        assert cfg["process"]["args"][:2] == ["sh", "-c"], cfg["process"]


def test_annotation_reaches_config(ctr):
    cid = ctr.new_id("a")
    p = ctr.run("--rm", "--annotation", "org.soyaos.comet.engines-test=x", IMAGE, cid, "sh", "-c", el.SETTLE)
    assert p.returncode == 0, p.stderr
    ann = ctr.wrapper.config_of(cid).get("annotations", {})
    assert ann.get("org.soyaos.comet.engines-test") == "x", ann


def test_pack_name_alone_is_refused(ctr):
    """Issue 26, trap 1: a config naming a pack without its capabilities ran
    unconfined while looking confined; the shim's create now fails with the
    runtime's one line, and the command never runs."""
    if el.IS_RUNC:
        pytest.skip("runc ignores comet's annotations")
    cid = ctr.new_id("alone")
    p = ctr.run("--rm", "--annotation", "org.soyaos.comet.pack=engines-test@0.0.1", IMAGE, cid,
                "sh", "-c", "echo ran")
    assert p.returncode != 0, p
    assert "ran" not in p.stdout
    assert ("annotation org.soyaos.comet.pack=engines-test@0.0.1 without org.soyaos.comet.capabilities"
            in p.stderr), p.stderr
    ctr.ctr("c", "rm", cid)


def test_doc_ctr_example_confines(ctr, tmp_path):
    """docs/engines.md's ctr-run.sh, run as written (issue 26, trap 1: every
    engine example confines, and the tests read it from the docs): the
    capabilities from `pack annotation --format json`; the write to /etc is
    refused and reported, the task exits 3, and `events --violations ID`
    finds the event after the task is gone."""
    if el.IS_RUNC:
        pytest.skip("`pack annotation` is comet-runtime's own command")
    script = el.snippet("ctr-run.sh")
    pack_dir = el.doc_pack_dir(tmp_path)
    cid = ctr.new_id("doc")
    q = lambda x: shlex.quote(str(x))  # noqa: E731
    for old, new in [
            ("ctr run --rm", f"ctr --address {q(ctr.cd.sock)} --namespace {NS} run --fifo-dir {q(ctr.fifo)} --rm"),
            ("--runc-binary /usr/local/bin/comet-runtime", f"--runc-binary {q(ctr.wrapper.path)}"),
            ("--runc-root /run/comet-runtime-ctr", f"--runc-root {q(ctr.runc_root)}"),
            ("comet-runtime pack annotation ./engines-example",
             f"{q(ctr.wrapper.real)} pack annotation {q(pack_dir)}"),
            ("IMAGE ID", f"{IMAGE} {cid}")]:
        assert old in script, (old, script)
        script = script.replace(old, new)
    p = el.run(["bash", "-euo", "pipefail", "-c", script], timeout=90)
    assert p.returncode == 3, f"{p}\ncalls:\n{ctr.wrapper.dump()}"
    ann = ctr.wrapper.config_of(cid)["annotations"]
    assert json.loads(ann["org.soyaos.comet.capabilities"])["fs"]["write"] == ["/tmp"], ann
    ev = el.run([ctr.wrapper.real, "--root", ctr.runc_root / NS, "events", "--violations", cid], timeout=20)
    assert ev.returncode == 0, ev
    got = [json.loads(x) for x in ev.stdout.splitlines() if x.strip()]
    assert ("fs.write", "/etc/x") in [(e["surface"], e["requested"]) for e in got], got


@pytest.mark.parametrize("script,status", [
    ("/probe info; exit 0", 3),  # the exec lock refuses the fork, reported: the task exits 3
    ("echo clean; exit 5", 5),
])
def test_pack_violation_is_exit_status_3(ctr, script, status):
    """A pack's capabilities by annotation (docs/policy.md): the task's own
    exit status, as the shim reaps it from the container's init, is 3 on a
    violation (docs/events.md "Exit code 3 under an engine")."""
    caps = json.dumps({"egress": [], "determinism_tier": "read-only"})
    cid = ctr.new_id("v")
    p = ctr.run("--rm", "--annotation", f"org.soyaos.comet.capabilities={caps}",
                "--annotation", "org.soyaos.comet.pack=engines-test@0.0.1", IMAGE, cid,
                "sh", "-c", el.SETTLE_NOFORK + script)
    assert p.returncode == status, p
    if status == 3:
        assert "can't fork" in p.stderr, p  # the agent saw an ordinary failure (EPERM)
        # the engine's delete flagged the version (violations.hpp flag_at_delete)
        flag = json.loads((ctr.wrapper.dir / "flags" / "engines-test@0.0.1.json").read_text())
        assert flag["count"] >= 1, flag


# ------------------------------------------------------------------ exec
def test_task_exec_plain(ctr):
    with task(ctr, SLEEPER, what="e") as (cid, _):
        ctr.wait_status(cid, "RUNNING")
        p = ctr.ctr("task", "exec", "--fifo-dir", ctr.fifo, "--exec-id", "plain", cid,
                    "sh", "-c", "echo exec-out; cat /proc/1/cmdline | tr '\\0' ' '; exit 6")
        assert p.returncode == 6, p
        assert "exec-out" in p.stdout and "sh -c" in p.stdout, p.stdout
        e = [x for x in ctr.wrapper.calls_for(cid) if x.verb == "exec"][-1]
        assert "--process" in e.args and "--detach" in e.args and "--console-socket" not in e.args, e
        assert e.rc == 0, e


def test_task_exec_tty(ctr):
    with task(ctr, SLEEPER, what="et") as (cid, _):
        ctr.wait_status(cid, "RUNNING")
        rc, out = el.run_in_pty(["ctr", "--address", ctr.cd.sock, "--namespace", NS, "task", "exec", "--fifo-dir",
                                 ctr.fifo, "-t", "--exec-id", "tty", cid,
                                 "sh", "-c", "tty; [ -t 0 ] && [ -t 1 ] && echo is-a-tty"])
        assert rc == 0, out
        assert "/dev/pts/" in out and "is-a-tty" in out, out
        e = [x for x in ctr.wrapper.calls_for(cid) if x.verb == "exec"][-1]
        assert "--console-socket" in e.args and "--detach" in e.args, e


# ------------------------------------------------------------------ ps, pause, kill, rm
def test_task_ps(ctr):
    with task(ctr, SLEEPER, what="ps") as (cid, _):
        pid = ctr.wait_status(cid, "RUNNING")
        p = ctr.ctr("task", "ps", cid)
        assert p.returncode == 0, p
        pids = [int(ln.split()[0]) for ln in p.stdout.splitlines()[1:] if ln.strip()]
        assert pid in pids and len(pids) >= 2, p.stdout  # sh and its sleep
        ps = [x for x in ctr.wrapper.calls_for(cid) if x.verb == "ps"]
        assert ps and ps[-1].args[:2] == ["--format", "json"] and ps[-1].rc == 0, [str(x) for x in ps]


BUSY = "trap 'exit 0' TERM; while :; do :; done"


def _cpu_ticks(pid: int) -> int:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def _frozen(pid: int) -> bool:
    a = _cpu_ticks(pid)
    time.sleep(0.3)
    return _cpu_ticks(pid) == a


def test_task_pause_resume(ctr):
    with task(ctr, BUSY, what="p") as (cid, _):
        pid = ctr.wait_status(cid, "RUNNING")
        assert not _frozen(pid)
        ctr.ctr("task", "pause", cid, check=True)
        ctr.wait_status(cid, "PAUSED")
        assert ctr.comet_state(cid)["status"] == "paused"
        assert _frozen(pid), "a paused task still runs"
        ctr.ctr("task", "resume", cid, check=True)
        ctr.wait_status(cid, "RUNNING")
        assert not _frozen(pid), "a resumed task does not run"
        assert_verbs(ctr, cid, "create", "start", "pause", "resume")


def test_task_kill_rm_and_container_rm(ctr):
    cid = ctr.new_id("k")
    p = ctr.run("-d", "--null-io", IMAGE, cid, "sh", "-c", "trap 'exit 9' TERM; sleep 600 & wait")
    assert p.returncode == 0, p.stderr
    try:
        pid = ctr.wait_status(cid, "RUNNING")
        ctr.ctr("task", "kill", cid, check=True)  # SIGTERM
        ctr.wait_status(cid, "STOPPED")
        assert not el.pid_alive(pid)
        kills = [x.args for x in ctr.wrapper.calls_for(cid) if x.verb == "kill"]
        assert kills and kills[0][-1] == "15", kills
        p = ctr.ctr("task", "rm", cid)
        assert p.returncode == 0, p
        assert "exit code 9" in p.stderr, p.stderr  # ctr warns with the task's exit status
        assert ctr.task_status(cid) is None
        assert not (ctr.runc_root / NS / cid).exists()
        calls = ctr.wrapper.calls_for(cid)
        assert [x.verb for x in calls][-1] == "delete", [str(x) for x in calls]
        ctr.ctr("containers", "rm", cid, check=True)
        assert cid not in ctr.ctr("containers", "ls", "-q").stdout
        assert cid not in ctr.ctr("snapshots", "ls").stdout
    finally:
        ctr.remove(cid)


def test_task_kill_all(ctr):
    """`ctr task kill --all -s KILL`: the shim sends `kill --all ID 9`."""
    with task(ctr, SLEEPER, what="ka") as (cid, _):
        ctr.wait_status(cid, "RUNNING")
        ctr.ctr("task", "kill", "--all", "--signal", "KILL", cid, check=True)
        ctr.wait_status(cid, "STOPPED")
        kills = [x.args for x in ctr.wrapper.calls_for(cid) if x.verb == "kill"]
        assert ["--all", cid, "9"] in kills, kills


# ------------------------------------------------------------------ leaks (keep last)
def test_zz_nothing_left_behind(ctr):
    """Stop containerd: no shim, no container process, no mount under the
    suite's directory, no cgroup named after a container, no runtime state,
    nothing new in the engines' global directories."""
    problems = ctr.teardown()
    assert not problems, "\n".join(problems)
