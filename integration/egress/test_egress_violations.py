"""DNS violations (issue 6, docs/events.md): a query the allowlist refuses
(answered NXDOMAIN for a name it does not take, REFUSED for another record
type) becomes one capability_violation event with surface "dns", written
before the answer, rate-limited, and the run exits 3. An allowed lookup
reports nothing. Runs against the egress suite's own internet (inet.py)."""
from __future__ import annotations

import json
import re

import pytest

from .conftest import dns_env
from .inet import ADDR

pytestmark = pytest.mark.comet_only


def run_with_events(pack, *cmds):
    pack.set_commands(*cmds)
    cid = pack.h.rt.new_id("egv")
    ev = pack.h.path(f"{cid}.events.jsonl")
    res = pack.h.rt("run", "--net-helper", "--events", str(ev), "--bundle", str(pack.bundle), cid,
                    env=dns_env(), timeout=60)
    lines = [json.loads(l) for l in res.out.splitlines() if l.startswith("{")]
    events = [json.loads(l) for l in ev.read_text().splitlines()] if ev.exists() else []
    return res, lines, events, cid


def test_refused_name_is_one_dns_event_and_exit_3(internet, make_pack):
    pack = make_pack()
    res, lines, events, cid = run_with_events(pack, ["resolve", "other.test"])
    assert lines[0]["result"] == "NXDOMAIN", lines
    assert res.rc == 3, res
    assert len(events) == 1, events
    e = events[0]
    assert e["type"] == "capability_violation"
    assert e["surface"] == "dns"
    assert e["requested"] == "other.test"
    assert e["matched_entry"] is None
    assert e["errno"] == "NXDOMAIN"
    assert e["syscall"] == "udp"
    assert e["container"] == cid
    assert e["pack"] == {"name": pack.config["annotations"]["org.soyaos.comet.pack"].split("@")[0],
                         "version": "1.0.0"}
    # the querying process: netprobe is the container's init
    assert isinstance(e["pid"], int) and e["pid"] > 1, e
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$", e["time"])


def test_allowed_lookup_reports_nothing(internet, make_pack):
    pack = make_pack()
    res, lines, events, _ = run_with_events(pack, ["resolve", "api.test"])
    assert lines[0]["result"] == "NOERROR", lines
    assert res.rc == 0, res
    assert events == []


def test_cname_out_of_the_allowlist_and_wildcard_apex_are_reported(internet, make_pack):
    pack = make_pack()
    res, lines, events, _ = run_with_events(pack, ["resolve", "bad.cdn.test"],
                                            ["resolve", "cdn.test"])
    assert [l["result"] for l in lines] == ["NXDOMAIN", "NXDOMAIN"], lines
    assert res.rc == 3, res
    assert sorted(e["requested"] for e in events) == ["bad.cdn.test", "cdn.test"], events
    assert all(e["surface"] == "dns" and e["errno"] == "NXDOMAIN" for e in events)


def test_a_refused_name_does_not_exist_for_getaddrinfo(internet, make_pack):
    """Issue 26: the allowlist's REFUSED made glibc's getaddrinfo return
    EAI_AGAIN (a temporary failure), so agents retried; now the name does
    not exist (EAI_NONAME), and the event is still written. An allowed name
    still resolves."""
    pack = make_pack()
    res, lines, events, _ = run_with_events(pack, ["gai", "other.test"], ["gai", "api.test"])
    assert [(l["cmd"], l["result"]) for l in lines] == [("gai", "EAI_NONAME"), ("gai", "ok")], lines
    assert res.rc == 3, res
    assert [(e["surface"], e["requested"], e["errno"]) for e in events] == [
        ("dns", "other.test", "NXDOMAIN")], events


def test_repeated_refusals_are_rate_limited(internet, make_pack):
    pack = make_pack()
    n = 40
    res, lines, events, _ = run_with_events(pack, *[["resolve", "other.test"]] * n)
    assert all(l["result"] == "NXDOMAIN" for l in lines) and len(lines) == n, lines
    assert res.rc == 3, res
    # one line at once, the rest counted: at most a few summary lines, and
    # the total (first + repeated) is every query the stub resolver sent.
    assert 1 <= len(events) <= 4, events
    assert "repeated" not in events[0]
    total = 1 + sum(e.get("repeated", 0) for e in events[1:])
    assert total >= n, (total, events)


# -- egress: what the ruleset refused, from its NFLOG group ---------------------------


def test_refused_connect_is_one_egress_event(internet, make_pack):
    pack = make_pack()
    res, lines, events, cid = run_with_events(pack, ["tcp", ADDR["other.test"], "443"])
    assert lines[0]["result"] == "ECONNREFUSED", lines
    assert res.rc == 3, res
    assert len(events) == 1, events
    e = events[0]
    assert e["surface"] == "egress"
    assert e["requested"] == f"{ADDR['other.test']}:443/tcp"
    assert e["errno"] == "ECONNREFUSED"
    assert e["syscall"] == "tcp"
    assert e["matched_entry"] is None
    assert e["container"] == cid
    assert isinstance(e["pid"], int) and e["pid"] > 1, e


def test_allowed_connect_reports_nothing(internet, make_pack):
    pack = make_pack()
    res, lines, events, _ = run_with_events(pack, ["tcp", "api.test", "443"])
    assert lines[0]["result"] == "ok", lines
    assert res.rc == 0, res
    assert events == []


def test_refused_udp_and_other_port_are_reported(internet, make_pack):
    pack = make_pack()
    res, lines, events, _ = run_with_events(pack, ["udp", ADDR["other.test"], "7"],
                                            ["tcp", "api.test", "8443"])
    assert res.rc == 3, res
    got = sorted((e["surface"], e["requested"], e["errno"]) for e in events)
    assert got == sorted([("egress", f"{ADDR['other.test']}:7/udp", "ECONNREFUSED"),
                          ("egress", f"{ADDR['api.test']}:8443/tcp", "ECONNREFUSED")]), events


def test_dns_to_another_server_is_a_dns_event(internet, make_pack):
    pack = make_pack()
    res, lines, events, _ = run_with_events(pack, ["dnsudp", ADDR["dns"], "api.test"])
    assert lines[0]["result"] != "ok", lines  # dropped: no answer
    assert res.rc == 3, res
    assert [(e["surface"], e["requested"]) for e in events][:1] == \
        [("dns", f"{ADDR['dns']}:53/udp")], events


@pytest.mark.parametrize("cmd,status,events", [
    (["tcp", ADDR["other.test"], "443"], 3, [("egress", f"{ADDR['other.test']}:443/tcp")]),
    (["resolve", "other.test"], 3, [("dns", "other.test")]),
    (["tcp", "api.test", "443"], 0, []),
])
def test_the_containers_own_status_is_3_under_an_engine(internet, make_pack, harness, cmd, status,
                                                         events):
    """No `run`: the test reaps the init itself, as an engine does
    (lib/reaper.py). The agent exits 0 right after the refused act; the
    container's init (the runtime's own PID 1) must still see the event:
    the egress one comes from NFLOG through the resolver, which the init
    waits for with its question-less query (trampoline.c)."""
    from lib.reaper import engine_run
    p = make_pack()
    p.set_commands(cmd)
    seen, got = engine_run(harness.rt, p.bundle, harness.workdir, env=dns_env(),
                           create_args=("--net-helper",))
    assert seen["status"] == status, (seen, got)
    assert [(e["surface"], e["requested"]) for e in got] == events, got
