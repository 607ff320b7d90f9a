"""`events --stats` (one JSON stats line) and `events --interval D` (a stats
line per interval until the container stops)."""
import json
import subprocess
import threading
import time

import pytest

from lib import wait_for
from lib.procfs import descendants

MiB = 1024 * 1024


def stats(rt, cid):
    res = rt("events", "--stats", cid)
    assert res.rc == 0, res
    lines = [line for line in res.out.splitlines() if line.strip()]
    assert len(lines) == 1, res.out
    return json.loads(lines[0])


class EventsStream:
    """`events --interval D ID` in the background; lines are collected with
    their arrival times."""

    def __init__(self, rt, cid, interval):
        cmd = [str(rt.binary), "--root", str(rt.root), "events", "--interval", interval, cid]
        self.err = open(rt.workdir / f"events-{cid}.err", "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.err)
        self.t0 = time.monotonic()
        self.lines: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.append((time.monotonic() - self.t0, raw.decode(errors="replace").rstrip("\n")))

    def wait(self, timeout):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._reader.join(2)
        return rc

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(2)
        self.err.close()


@pytest.fixture
def events(rt, harness):
    streams = []

    def start(cid, interval):
        s = EventsStream(rt, cid, interval)
        streams.append(s)
        return s

    yield start
    for s in streams:
        s.close()


def test_stats_shape_and_pids_current(rt, bundle):
    cid = rt.start_detached(bundle().sh("/probe sleep 60 & /probe sleep 60 & wait"))
    init = rt.pid(cid)
    assert wait_for(lambda: len(descendants(init)) == 2, 5)
    ev = stats(rt, cid)
    assert ev["type"] == "stats" and ev["id"] == cid, ev
    data = ev["data"]
    for key in ("cpu", "memory", "pids"):
        assert isinstance(data[key], dict), (key, data)
    assert data["pids"]["current"] == 3
    assert data["pids"]["current"] == len(rt("ps", "--format", "json", cid).expect_ok().json())
    assert isinstance(data["cpu"]["usage"]["total"], int) and data["cpu"]["usage"]["total"] > 0, data["cpu"]


def test_stats_follow_process_count(rt, bundle, workdir):
    cid = rt.start_detached(bundle().probe("sleep", "60"))
    assert stats(rt, cid)["data"]["pids"]["current"] == 1
    rt("exec", "--detach", cid, "/probe", "sleep", "60").expect_ok()
    rt("exec", "--detach", cid, "/probe", "sleep", "60").expect_ok()
    assert wait_for(lambda: stats(rt, cid)["data"]["pids"]["current"] == 3, 5), stats(rt, cid)


def test_stats_report_limits(rt, bundle):
    b = bundle().probe("sleep", "60").resources(memory={"limit": 64 * MiB}, pids={"limit": 30})
    cid = rt.start_detached(b)
    data = stats(rt, cid)["data"]
    assert data["pids"]["limit"] == 30, data["pids"]
    assert data["memory"]["usage"]["limit"] == 64 * MiB, data["memory"]
    assert 0 < data["memory"]["usage"]["usage"] <= 64 * MiB, data["memory"]


def test_stats_missing_container(rt):
    res = rt("events", "--stats", "cmt-no-such-container")
    assert res.rc != 0 and "does not exist" in res.error, res


def test_interval_lines_while_running(rt, bundle, events):
    cid = rt.start_detached(bundle().probe("sleep", "60"))
    s = events(cid, "200ms")
    assert wait_for(lambda: len(s.lines) >= 2, 1.5), f"{len(s.lines)} lines after 1.5s: {s.lines}"
    assert s.lines[1][0] <= 1.5
    for _, line in list(s.lines):
        ev = json.loads(line)
        assert ev["type"] == "stats" and ev["id"] == cid and ev["data"]["pids"]["current"] == 1, ev
    assert s.proc.poll() is None, "events exited while the container runs"


@pytest.mark.comet_only  # runc 1.1.5 keeps running after the container stops
def test_interval_exits_zero_when_container_stops(rt, bundle, events):
    cid = rt.start_detached(bundle().probe("sleep", "60"))
    s = events(cid, "200ms")
    assert wait_for(lambda: len(s.lines) >= 2, 1.5), s.lines
    rt.kill(cid, "KILL").expect_ok()
    rc = s.wait(5)
    assert rc == 0, f"events did not exit 0 after the container stopped (rc={rc})"
    assert rt.status(cid) == "stopped"


@pytest.mark.comet_only
def test_interval_on_short_lived_container(rt, bundle, events):
    # the container stops on its own after ~0.7s
    cid = rt.start_detached(bundle().sh("sleep 0.7"))
    s = events(cid, "200ms")
    rc = s.wait(5)
    assert rc == 0, rc
    assert 1 <= len(s.lines) <= 6, s.lines
    assert all(json.loads(line)["type"] == "stats" for _, line in s.lines)


def test_interval_spacing(rt, bundle, events):
    cid = rt.start_detached(bundle().probe("sleep", "60"))
    s = events(cid, "300ms")
    assert wait_for(lambda: len(s.lines) >= 4, 3), s.lines
    times = [t for t, _ in s.lines[:4]]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert all(0.1 <= g <= 1.5 for g in gaps), gaps
