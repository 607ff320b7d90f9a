"""Socket families that leave the host outside netfilter (docs/policy.md):
under a network policy a pack may make AF_UNIX, AF_INET, AF_INET6 and
AF_NETLINK (NETLINK_ROUTE) sockets and nothing else. AF_VSOCK reaches the
hypervisor's host, AF_PACKET, AF_BLUETOOTH, AF_CAN ... reach devices: each
is refused with EPERM, reported (surface egress), and the run exits 3.
Before the allowlist, an egress pack created, bound and listened on an
AF_VSOCK socket with no event."""
from __future__ import annotations

import json
import os

import pytest

from lib.packs import build_packprobe, events_of, make_pack, manifest, results

pytestmark = pytest.mark.comet_only

MANIFEST = manifest("families-pack", egress="[{host: api.test, port: 443, protocol: https}]",
                    tier="side-effect")

SOCK_STREAM, SOCK_DGRAM = 1, 2
SOCK_RAW, SOCK_CLOEXEC = 3, 0o2000000
ALLOWED = {"unix": (1, SOCK_STREAM, 0), "inet": (2, SOCK_STREAM, 0), "inet6": (10, SOCK_STREAM, 0),
           "netlink-route": (16, SOCK_DGRAM, 0),
           # what glibc opens for getaddrinfo(AI_ADDRCONFIG) and getifaddrs
           "netlink-route-raw": (16, SOCK_RAW | SOCK_CLOEXEC, 0)}
REFUSED = {"vsock": (40, SOCK_STREAM, 0), "unspec": (0, SOCK_STREAM, 0),
           "netlink-audit": (16, SOCK_DGRAM, 9), "bluetooth": (31, SOCK_STREAM, 0),
           "can": (29, SOCK_DGRAM, 1), "alg": (38, 5, 0), "x25": (9, SOCK_STREAM, 0),
           "key": (15, SOCK_DGRAM, 2), "netlink-audit-raw": (16, SOCK_RAW, 9),
           # ICMP echo sockets (red team): the kernel's ping_group_range
           # refused them unreported; no host:port entry is ICMP
           "ping": (2, SOCK_DGRAM, 1), "ping6": (10, SOCK_DGRAM, 58)}


@pytest.fixture(scope="module")
def packprobe(session_dir):
    return build_packprobe(session_dir)


def test_only_the_families_netfilter_sees(rt, workdir, packprobe):
    pack, rootfs = make_pack(workdir, packprobe, MANIFEST)
    ev = workdir / "ev.jsonl"
    ops = [f"socket-family={f}:{t}:{p}" for f, t, p in list(ALLOWED.values()) + list(REFUSED.values())]
    res = rt("pack", "run", str(pack), "--rootfs", str(rootfs), "--events", str(ev), "--", *ops,
             env=dict(os.environ, COMET_DNS_UPSTREAM="127.0.0.9"), timeout=60)
    got = {r["data"]: r for r in results(res).get("socket-family", [])}
    for name, (f, t, p) in ALLOWED.items():
        assert got[f"{f}:{t}:{p}"]["ok"], (name, got)
    for name, (f, t, p) in REFUSED.items():
        r = got[f"{f}:{t}:{p}"]
        assert not r["ok"] and r["errno"] == "EPERM", (name, r)
    events = events_of(ev)
    refused = sorted(e["requested"] for e in events if e["surface"] == "egress")
    want = sorted(f"socket(family {f}, type {t & 0xf})" for f, t, _ in REFUSED.values())
    assert refused == want, json.dumps(events, indent=1)
    assert res.rc == 3, res
