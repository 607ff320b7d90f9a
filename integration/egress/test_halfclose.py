"""Bytes through the network helper arrive exactly, with half-close (issue 21,
item 14; docs/egress.md, "Connectivity").

A pack in a network namespace the runtime made (so its traffic goes through
the runtime's network helper) talks to the test internet's half-close echo
(inet_server.py, 5003): 1 MiB up, shutdown(SHUT_WR), then the reply to EOF,
which must be SHA-256 of the upload followed by the upload with every byte
inverted (netprobe checks both by SHA-256), 20 rounds. Debian 12's pasta
failed this: the reply never ended (no EOF after the agent's half-close) or
came as repeated data. And a connect to a port the far end has closed must
fail with ECONNREFUSED (the far end's RST), not time out: both ports are in
the pack's allowlist and the run reports no violation, so the refusal is
not the filter's.

`COMET_NET_HELPER=pasta python3 -m pytest integration/egress/test_halfclose.py`
runs the same against pasta (it fails there)."""
from __future__ import annotations

import hashlib
import json
import os
import socket

import pytest

from .conftest import dns_env
from .inet import ADDR

pytestmark = pytest.mark.comet_only

HALFCLOSE_EGRESS = """    - {host: api.test, port: 5003, protocol: tcp}
    - {host: api.test, port: 5999, protocol: tcp}
"""
ROUNDS = 20


def test_halfclose_and_rst(internet, make_pack, harness):
    # controls: the echo answers the host, 5999 is refused by the far end itself
    with socket.create_connection((ADDR["api.test"], 5003), timeout=5) as c:
        c.sendall(b"abc")
        c.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := c.recv(4096):
            reply += chunk
    assert reply == hashlib.sha256(b"abc").digest() + bytes([0x9e, 0x9d, 0x9c]), reply
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((ADDR["api.test"], 5999), timeout=5).close()

    pack = make_pack(HALFCLOSE_EGRESS)
    pack.set_commands(["halfclose", "api.test", "5003", "1", str(ROUNDS)],
                      ["tcp", "api.test", "5999"])
    cid = harness.rt.new_id("half")
    res = harness.rt("run", "--net-helper", "--bundle", str(pack.bundle), cid, env=dns_env(), timeout=120)
    lines = [json.loads(l) for l in res.out.splitlines() if l.startswith("{")]
    helper = os.environ.get("COMET_NET_HELPER") or "the default helper"
    assert len(lines) == 2, res
    half, rst = lines
    wrong = []
    if (half["result"], half["ok"]) != ("ok", ROUNDS):
        wrong.append(f"half-close: {half['ok']}/{ROUNDS} rounds right: {half}")
    if rst["result"] != "ECONNREFUSED":
        wrong.append(f"connect to a closed port: {rst['result']}, not ECONNREFUSED")
    assert not wrong, f"{helper}: " + "; ".join(wrong)
    # exit 0: no violation was reported, so neither refusal was the filter's
    assert res.rc == 0, res
