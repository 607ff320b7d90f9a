"""A pack container's own PID 1 (issue 6, docs/events.md "Exit code 3 under
an engine"): the container's exit status itself is 3 on a violation, as an
engine that reaps the init sees it.

The test plays the engine (as containerd's shim and podman's conmon do): a
subreaper runs `create` and `start`, the init is reparented to it when
create exits, and it reaps the init and reads its status. No `run` or `pack
run` is involved, so nothing of the runtime's own exit-3 logic can answer
for the init. Also: the agent's own status and signals pass through the
init, signals sent to the init (`kill`) reach the agent, and the init is
the trampoline (not the runtime's binary), not dumpable, with no
capability the agent lacks."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from lib.reaper import engine_run as reap

pytestmark = pytest.mark.comet_only

@pytest.fixture
def bundle(pack_bundle):
    return pack_bundle


def engine_run(rt, workdir: Path, bundle: Path, *ops: str, sig: str = "-") -> tuple[dict, list]:
    cfg = json.loads((bundle / "config.json").read_text())
    cfg["process"]["args"] = ["/usr/bin/packprobe", "agent.txt", *ops]
    (bundle / "config.json").write_text(json.dumps(cfg))
    return reap(rt, bundle, workdir, sig=sig)


def test_violation_makes_the_containers_own_status_3(rt, workdir, bundle):
    seen, events = engine_run(rt, workdir, bundle, "fork", "exit=0")
    assert seen["status"] == 3, seen
    assert [(e["surface"], e["requested"]) for e in events] == [("process", "clone")], events
    # no `run` counted them: `delete` flags the version (violations.hpp flag_at_delete) ...
    flag = json.loads((workdir / "flags" / "probe-pack@0.0.1.json").read_text())
    assert flag["count"] == 1, flag
    # ... and the next create of that version warns, once
    seen, events = engine_run(rt, workdir, bundle, "exit=0")
    assert seen["status"] == 0 and events == [], (seen, events)
    assert seen["output"].count("pack probe-pack@0.0.1 is flagged") == 1, seen["output"]
    flag = json.loads((workdir / "flags" / "probe-pack@0.0.1.json").read_text())
    assert flag["count"] == 1, flag


@pytest.mark.parametrize("op,status", [("exit=0", 0), ("exit=7", 7), ("exec=/usr/bin/packprobe", 0)])
def test_agent_status_passes_through(rt, workdir, bundle, op, status):
    seen, events = engine_run(rt, workdir, bundle, op)
    assert seen["status"] == status, seen
    assert events == []


def test_kill_reaches_the_agent(rt, workdir, bundle):
    # the agent sleeps 20 s; SIGTERM to the container (its init) must end it
    t0 = time.time()
    seen, events = engine_run(rt, workdir, bundle, "sleep=20000", sig="TERM")
    assert time.time() - t0 < 10, seen
    assert seen["status"] == 128 + 15, seen
    assert events == []


def test_init_is_the_sealed_trampoline_and_holds_nothing_more(rt, workdir, bundle):
    seen, _ = engine_run(rt, workdir, bundle, "sleep=300")
    # argv[0] of the init mode, the exe being the sealed memfd (trampoline.c)
    assert seen["cmdline"] == "comet-init", seen
    # a pack's agent has no capability; neither has its init
    assert int(seen["CapEff"], 16) == 0 and int(seen["CapPrm"], 16) == 0, seen


def test_own_init_off(rt, workdir, bundle, monkeypatch):
    monkeypatch.setenv("COMET_OWN_INIT", "off")
    seen, events = engine_run(rt, workdir, bundle, "fork", "sleep=300", "exit=0")
    # without it the agent is the init, and its own status is what an engine sees
    assert seen["cmdline"] == "/usr/bin/packprobe", seen
    assert seen["status"] == 0 and len(events) == 1, (seen, events)


def test_the_agent_cannot_reach_its_init(rt, workdir, bundle):
    """Attack: the agent goes for its (unconfined) init: signals, ptrace,
    its memory, fds, environment, root and exe. Landlock's signal scope
    refuses the signals, the lock-down ptrace, and the init is not
    dumpable, so none of its /proc entries open; the run then ends with the
    agent's own status (the init survived), 3 for the refused ptrace."""
    seen, events = engine_run(rt, workdir, bundle, "kill=1:15", "kill=1:9", "kill=1:19",
                              "ptrace-attach", "open-read=/proc/1/mem", "open-read=/proc/1/environ",
                              "ls=/proc/1/fd", "ls=/proc/1/root/", "open-read=/proc/1/exe",
                              "exit=0")
    out = [json.loads(l) for l in seen["output"].splitlines() if l.startswith("{")]
    got = [(o["op"], o.get("data"), o["errno"]) for o in out]
    assert [g[2] for g in got] == ["EPERM"] * 4 + ["EACCES"] * 5, got
    assert seen["status"] == 3, seen  # ptrace is a reported violation; the init lived to say so
    assert [e["surface"] for e in events] == ["namespace"], events


def test_non_utf8_path_is_reported(rt, workdir, bundle):
    """Attack on the reporter: a path that is not UTF-8 in a refused call.
    The JSON encoder used to throw on it, which took the reporter down: that
    event and every later one were lost, and under an engine the container
    exited 0. Now the bytes are written as U+FFFD and reporting goes on."""
    seen, events = engine_run(rt, workdir, bundle, "exec-bad-utf8", "fork", "exit=0")
    assert seen["status"] == 3, (seen, events)
    got = [(e["surface"], e["requested"], e["errno"]) for e in events]
    assert got == [("exec", "/bin/\ufffd\ufffd", "ENOENT"), ("process", "clone", "EPERM")], got
