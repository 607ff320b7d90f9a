#!/usr/bin/env python3
"""The two ends of bench/netpath.sh (a connectivity helper's correctness and
speed). Not run by hand: netpath.sh starts `server` in its far-end netns and
`client` in the netns the helper is attached to.

server ADDR                 listens on ADDR (prints "ready"):
  7001 half-close A   read to EOF; send sha256(received) + received XOR 0xff; close
  7002 half-close B   read a 16-byte token; send 1 MiB (seeded by the token)
                      and shutdown(SHUT_WR) at once, read to EOF; keep
                      sha256(received) under the token; close
  7003 result of B    read a token, send the kept digest (32 zero bytes if none)
  7004 upload sink    8-byte big-endian N, then N bytes; answers N (8 bytes)
  7005 download       8-byte N; sends N bytes; close (the client counts them)
  7006 accept+close   for connect latency
  (7009: nothing listens: a connect there is refused by the far end's kernel)

client ADDR MODE [ARGS]   one measure, one JSON line:
  halfclose_a ROUNDS MIB    A rounds: "ok", or what went wrong (TIMEOUT: a hang)
  halfclose_b ROUNDS MIB    B rounds, checked with 7003
  rst                       connect to 7009: the errno, and how long it took
  up MIB | down MIB         one transfer's MiB/s
  connect N                 median of N connect+close, ms"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import socket
import statistics
import sys
import threading
import time

MIB = 1 << 20
TIMEOUT = 10.0


def pattern(seed: int, n: int) -> bytes:
    return random.Random(seed).randbytes(n)


FLIP = bytes(255 - i for i in range(256))


def xor_ff(b: bytes) -> bytes:
    return b.translate(FLIP)


class Stalled(Exception):
    """No EOF in time: how many bytes had come."""


def recv_all(c: socket.socket) -> bytes:
    chunks, n = [], 0
    while True:
        try:
            b = c.recv(1 << 18)
        except socket.timeout:
            raise Stalled(f"TIMEOUT after {n} bytes") from None
        if not b:
            return b"".join(chunks)
        chunks.append(b)
        n += len(b)


def recv_exact(c: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = c.recv_into(view[got:])
        if k == 0:
            raise ConnectionError(f"EOF after {got} of {n} bytes")
        got += k
    return bytes(buf)


# -- server ---------------------------------------------------------------------------------

RESULTS: dict[bytes, bytes] = {}


def serve(port, addr, handler):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(256)

    def loop():
        while True:
            c, _ = s.accept()

            def run(c=c):
                try:
                    c.settimeout(30)
                    handler(c)
                except OSError:
                    pass
                finally:
                    c.close()

            threading.Thread(target=run, daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def h_half_a(c):
    data = recv_all(c)
    c.sendall(hashlib.sha256(data).digest() + xor_ff(data))


def h_half_b(c):
    token = recv_exact(c, 16)
    out = pattern(int.from_bytes(token, "big"), MIB)
    got = []
    # Read while sending: both sides send 1 MiB at once.
    def up():
        try:
            got.append(recv_all(c))
        except Stalled:
            pass

    t = threading.Thread(target=up, daemon=True)
    t.start()
    c.sendall(out)
    c.shutdown(socket.SHUT_WR)
    t.join(30)
    RESULTS[token] = hashlib.sha256(got[0]).digest() if got else b"\0" * 32


def h_result(c):
    token = recv_exact(c, 16)
    deadline = time.time() + TIMEOUT  # the B handler may still be reading
    while token not in RESULTS and time.time() < deadline:
        time.sleep(0.005)
    c.sendall(RESULTS.pop(token, b"\0" * 32))


def h_sink(c):
    n = int.from_bytes(recv_exact(c, 8), "big")
    got, buf = 0, bytearray(1 << 18)
    while got < n:
        k = c.recv_into(buf)
        if k == 0:
            break
        got += k
    c.sendall(got.to_bytes(8, "big"))
    recv_all(c)


def h_source(c):
    n = int.from_bytes(recv_exact(c, 8), "big")
    block = pattern(1, MIB)
    while n > 0:
        k = min(n, len(block))
        c.sendall(block[:k])
        n -= k


def h_close(c):
    pass


def server(addr):
    for port, h in ((7001, h_half_a), (7002, h_half_b), (7003, h_result), (7004, h_sink),
                    (7005, h_source), (7006, h_close)):
        serve(port, addr, h)
    print("ready", flush=True)
    while True:
        time.sleep(3600)


# -- client ---------------------------------------------------------------------------------


def ename(e: BaseException) -> str:
    if isinstance(e, socket.timeout):
        return "TIMEOUT"
    if isinstance(e, OSError) and e.errno:
        return errno.errorcode.get(e.errno, str(e.errno))
    return type(e).__name__ + ": " + str(e)


def round_a(addr, i, mib):
    """Upload, half-close, download to EOF."""
    sent = pattern(1000 + i, mib * MIB)
    want = hashlib.sha256(sent).digest() + xor_ff(sent)
    with socket.create_connection((addr, 7001), timeout=TIMEOUT) as c:
        c.sendall(sent)
        c.shutdown(socket.SHUT_WR)
        try:
            reply = recv_all(c)
        except Stalled as e:
            return f"{e} (want {len(want)})"
    if reply == want:
        return "ok"
    if len(reply) != len(want):
        return f"length {len(reply)} != {len(want)}"
    return "server digest differs" if reply[:32] != want[:32] else "download differs"


def round_b(addr, i, mib):
    """Both send at once; the server half-closes first, then the client."""
    token = os.urandom(16)
    sent = pattern(2000 + i, mib * MIB)
    with socket.create_connection((addr, 7002), timeout=TIMEOUT) as c:
        c.sendall(token)
        got: list = []

        def down():
            try:
                got.append(recv_all(c))
            except Stalled as e:
                got.append(e)

        t = threading.Thread(target=down, daemon=True)
        t.start()
        c.sendall(sent)
        c.shutdown(socket.SHUT_WR)
        t.join(TIMEOUT + 1)
        if t.is_alive() or (got and isinstance(got[0], Stalled)):
            return f"download: {got[0] if got else 'TIMEOUT'} (want {MIB})"
    with socket.create_connection((addr, 7003), timeout=TIMEOUT) as c:
        c.sendall(token)
        server_digest = recv_exact(c, 32)
    want_down = pattern(int.from_bytes(token, "big"), MIB)
    if not got or got[0] != want_down:
        return f"download differs ({len(got[0]) if got else 0} bytes)"
    if server_digest != hashlib.sha256(sent).digest():
        return "server digest differs"
    return "ok"


def upload(addr, mib):
    n = mib * MIB
    block = pattern(1, MIB)
    t0 = time.perf_counter()
    with socket.create_connection((addr, 7004), timeout=30) as c:
        c.sendall(n.to_bytes(8, "big"))
        left = n
        while left:
            k = min(left, MIB)
            c.sendall(block[:k])
            left -= k
        got = int.from_bytes(recv_exact(c, 8), "big")
    dt = time.perf_counter() - t0
    if got != n:
        raise ConnectionError(f"sink got {got} of {n}")
    return mib / dt


def download(addr, mib):
    # Counted, not kept: a fresh 64 MiB buffer's first-touch page faults
    # would be part of the time (the half-close rounds check content).
    n = mib * MIB
    buf = bytearray(1 << 18)
    t0 = time.perf_counter()
    with socket.create_connection((addr, 7005), timeout=30) as c:
        c.sendall(n.to_bytes(8, "big"))
        got = 0
        while got < n:
            k = c.recv_into(buf)
            if k == 0:
                break
            got += k
    dt = time.perf_counter() - t0
    if got != n:
        raise ConnectionError(f"got {got} of {n}")
    return mib / dt


def client(addr, mode, *args):
    """One measure, one JSON line."""
    res: dict = {"mode": mode}
    if mode in ("halfclose_a", "halfclose_b"):
        rounds, mib = int(args[0]), int(args[1])
        fn = round_a if mode == "halfclose_a" else round_b
        outcomes = []
        for i in range(rounds):
            t0 = time.perf_counter()
            try:
                r = fn(addr, i, mib)
            except Exception as e:  # noqa: BLE001 - every failure is an outcome
                r = ename(e)
            outcomes.append({"r": r, "s": round(time.perf_counter() - t0, 3)})
        res.update(ok=sum(o["r"] == "ok" for o in outcomes), rounds=rounds,
                   fails=[o for o in outcomes if o["r"] != "ok"][:5])
    elif mode == "rst":
        t0 = time.perf_counter()
        try:
            socket.create_connection((addr, 7009), timeout=10).close()
            r = "connected"
        except Exception as e:  # noqa: BLE001
            r = ename(e)
        res.update(errno=r, s=round(time.perf_counter() - t0, 3))
    elif mode in ("up", "down"):
        try:
            res["mibs"] = round((upload if mode == "up" else download)(addr, int(args[0])), 1)
        except Exception as e:  # noqa: BLE001
            res["error"] = ename(e)
    elif mode == "connect":
        lat = []
        for _ in range(int(args[0])):
            t0 = time.perf_counter()
            c = socket.create_connection((addr, 7006), timeout=5)
            c.close()
            lat.append((time.perf_counter() - t0) * 1000)
        res["ms"] = round(statistics.median(lat), 3)
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(sys.argv[2])
    else:
        client(sys.argv[2], sys.argv[3], *sys.argv[4:])
