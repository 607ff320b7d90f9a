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
import subprocess
import threading
import time
from pathlib import Path

import pytest

from .conftest import dns_env
from .inet import ADDR, POD_NET, Pod, sh
from .test_egress_violations import run_with_events

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
            ("resolve", "other.test", "NXDOMAIN"),
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


def _peer(internet, code: str, *args) -> str:
    r = sh("ip", "netns", "exec", internet.ns, "python3", "-c", code, *map(str, args), check=False)
    return (r.stdout.strip() or r.stderr.strip().splitlines()[-1]) if (r.stdout or r.stderr) else ""


_TCP = ("import socket,sys\n"
        "try:\n"
        " s=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=1)\n"
        " print('got:'+s.recv(100).decode().strip())\n"
        "except OSError as e: print(type(e).__name__)\n")
_UDP = ("import socket,sys\n"
        "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
        "s.sendto(b'hi',(sys.argv[1],int(sys.argv[2])))\n"
        "print('sent')\n")


def test_inbound_connections_are_refused_and_reported(internet, make_pack):
    """Attack (issue 21, item 3): a peer on the pod network connects to a
    port the agent listens on, and sends it a datagram. On 4dba8cb the
    output chain accepted the listener's replies (established) and the
    agent got the connection: a two-way channel nobody reported. Now a new
    inbound connection is refused (the peer sees a reset) and reported as
    surface egress, `inbound from ADDR:PORT/tcp to port N`."""
    pod_addr = f"{POD_NET}.2"
    with Pod(internet) as pod:
        # positive control: a listener in the pod namespace itself, no container
        srv = ("import socket\n"
               "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
               "s.bind(('0.0.0.0',8081)); s.listen(1); s.settimeout(5)\n"
               "c,_=s.accept(); c.send(b'pod-here\\n'); c.close()\n")
        p = subprocess.Popen(["ip", "netns", "exec", pod.ns, "python3", "-c", srv])
        try:
            got = ""
            for _ in range(20):
                got = _peer(internet, _TCP, pod_addr, 8081)
                if got.startswith("got:"):
                    break
                time.sleep(0.1)
            assert got == "got:pod-here", got
        finally:
            p.kill()
            p.wait()

        pack = make_pack()
        join(pack, pod)
        out = {}
        # the agent listens 8 s; the peer tries for 6 s (a loaded machine
        # can take a second or two to start the container)
        t = threading.Thread(target=lambda: out.update(r=run_with_events(pack, ["listen", "8080", "8"])))
        t.start()
        tries = []
        try:
            time.sleep(0.5)
            deadline = time.time() + 6
            while time.time() < deadline:
                tries.append(_peer(internet, _TCP, pod_addr, 8080))
                _peer(internet, _UDP, pod_addr, 8080)
                time.sleep(0.2)
        finally:
            t.join()
        res, lines, events, _ = out["r"]
        assert lines[0]["cmd"] == "listen" and lines[0]["result"] == "timeout", lines
        assert tries and all(x == "ConnectionRefusedError" for x in tries), tries
        inbound = [e for e in events if e["requested"].startswith("inbound from ")]
        tcp = [e for e in inbound if e["requested"].endswith("/tcp to port 8080")]
        udp = [e for e in inbound if e["requested"].endswith("/udp to port 8080")]
        assert tcp and udp, events
        assert tcp[0]["surface"] == "egress" and tcp[0]["requested"].startswith(f"inbound from {POD_NET}.1:"), tcp
        assert res.rc == 3, res
        assert pod.tables() == []
