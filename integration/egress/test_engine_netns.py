"""Egress in a network namespace that an engine made (issue 5, docs/egress.md
"Engine namespaces"): the pack's config joins `linux.namespaces[].path`, as
podman, containerd and a CRI pod sandbox do.

The test plays the engine: it makes a "pod" netns of its own, wired to the
test internet (inet.py) by a veth pair, with lo up and a default route, as
an engine's CNI would. The runtime must then load its per-container table
(`comet_<hash>`) into that namespace before the agent runs, leave the
namespace itself and its links alone (they are the engine's), start no
network helper, and remove only its own table at delete. A second pack in the same
namespace is refused (fail closed, docs/egress.md "shared engine
namespaces") and leaves the first one's policy in place.

Every refusal has a positive control from the same pod namespace without a
container (so the route and the server are there, and the refusal is the
filter's)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from .conftest import dns_env
from .inet import ADDR, Pod, sh

pytestmark = pytest.mark.comet_only

def join(pack, pod: Pod):
    """Point the pack's network namespace entry at the pod's, as an engine does."""
    nss = pack.config["linux"]["namespaces"]
    net = [n for n in nss if n["type"] == "network"]
    assert len(net) == 1, nss
    net[0]["path"] = pod.path
    (pack.bundle / "config.json").write_text(json.dumps(pack.config, indent=1))


def alive(pid: int, start: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return int(fields[19]) == start and fields[0] != "Z"


def state(harness, cid) -> dict:
    return json.loads((harness.rt.root / cid / "state.json").read_text())


def test_engine_netns_is_filtered(internet, make_pack):
    with Pod(internet) as pod:
        # positive controls, from the pod namespace without a container
        assert pod.connect(ADDR["api.test"], 443).startswith("hello"), pod.connect(ADDR["api.test"], 443)
        assert pod.connect(ADDR["other.test"], 443).startswith("hello")
        assert pod.connect(ADDR["api.test"], 8443).startswith("hello")
        links_before = pod.links()
        pack = make_pack()
        join(pack, pod)
        assert pod.tables() == []
        r = pack.run(["tcp", "api.test", "443"], ["tcp", "a.cdn.test", "8443"],
                     ["tcp", "api.test", "8443"], ["tcp", ADDR["other.test"], "443"],
                     ["resolve", "other.test"], ["dnsudp", ADDR["dns2"], "api.test"])
        got = [(l["cmd"], l["arg"], l["result"]) for l in r]
        assert got == [
            ("tcp", "api.test:443", "ok"),
            ("tcp", "a.cdn.test:8443", "ok"),
            ("tcp", "api.test:8443", "ECONNREFUSED"),
            ("tcp", f"{ADDR['other.test']}:443", "ECONNREFUSED"),
            ("resolve", "other.test", "REFUSED"),
            ("dnsudp", ADDR["dns2"], got[5][2]),
        ], got
        assert got[5][2] in ("EPERM", "ETIMEDOUT"), r[5]  # another DNS server: dropped
        assert r[0]["greeting"] == f"hello {ADDR['api.test']} 443 "
        # after run (create, start, delete): the engine's namespace is as it was
        assert pod.tables() == [], pod.tables()
        assert pod.links() == links_before


def test_engine_netns_second_pack_fails_closed(internet, make_pack, harness):
    """Two packs in one pod namespace: their rules would intersect (every
    table's drop applies) and only one resolver can own 127.0.0.1:53. The
    second create fails with an error that says so, the first container's
    table stays and still filters, and nothing of the second is left."""
    with Pod(internet) as pod:
        links_before = pod.links()
        host_tables = sh("nft", "list", "tables").stdout
        a, b = make_pack(), make_pack()
        for p in (a, b):
            join(p, pod)
            p.set_commands(["sleep", "60"])
        ca, cb = harness.rt.new_id("poda"), harness.rt.new_id("podb")
        harness.rt("create", "--bundle", str(a.bundle), ca, env=dns_env()).expect_ok()
        ra = state(harness, ca)
        # Per-container name in a shared namespace; no helper: the engine owns the way out.
        assert ra["egress_netns"] == pod.path, ra
        assert ra["egress_table"].startswith("comet_") and len(ra["egress_table"]) == 22, ra
        assert ra["egress_net_pid"] == 0 and ra["egress_resolver_pid"] > 0, ra
        # Loaded at create, before the agent can run.
        assert pod.tables() == [f"table inet {ra['egress_table']}"], pod.tables()

        res = harness.rt("create", "--bundle", str(b.bundle), cb, env=dns_env())
        assert res.rc == 1, res
        assert "127.0.0.1:53/udp in the container's network namespace: it is taken" in res.err, res
        assert "one pack per network namespace" in res.err, res
        assert not (harness.rt.root / cb).exists()
        assert pod.tables() == [f"table inet {ra['egress_table']}"], pod.tables()
        # The first still filters: from the pod namespace itself, outside any
        # container, a connect to a host the pack does not allow is refused.
        assert "refused" in pod.connect(ADDR["other.test"], 443).lower()

        harness.rt("delete", "--force", ca).expect_ok()
        assert pod.tables() == [], pod.tables()
        resolver = (ra["egress_resolver_pid"], ra["egress_resolver_start"])
        deadline = time.time() + 5
        while time.time() < deadline and alive(*resolver):
            time.sleep(0.05)
        assert not alive(*resolver), "the resolver was left running"
        # The engine's namespace, its links and the host's tables are untouched.
        assert pod.links() == links_before
        assert pod.connect(ADDR["other.test"], 443).startswith("hello")
        assert sh("ip", "netns", "list").stdout.count(pod.ns) == 1
        assert sh("nft", "list", "tables").stdout == host_tables
