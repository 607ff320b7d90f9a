"""An h2c client for test_wire.py (python3-h2), run in the container's
network namespace: one connection, one request per NAME in turn, each
waiting for its answer. Prints one line per request: the body, or the
error that ended the connection.

Usage: h2c_client.py prior|upgrade ADDR PORT NAME...
  prior    the HTTP/2 preface at once (prior knowledge)
  upgrade  HTTP/1.1 with Upgrade: h2c and Host: the first NAME (answered on
           stream 1), then the other NAMEs as HTTP/2 requests"""
import socket
import sys

import h2.config
import h2.connection
import h2.events

mode, addr, port, names = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
s = socket.create_connection((addr, port), timeout=5)
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
bodies: dict[int, bytes] = {}
ended: set[int] = set()
pending = b""


def wait(stream: int) -> str:
    global pending
    try:
        while stream not in ended:
            data = pending or s.recv(65536)
            pending = b""
            if not data:
                return "closed"
            for ev in c.receive_data(data):
                if isinstance(ev, h2.events.DataReceived):
                    bodies[ev.stream_id] = bodies.get(ev.stream_id, b"") + ev.data
                    c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    ended.add(ev.stream_id)
            s.sendall(c.data_to_send())
    except OSError as e:
        return type(e).__name__
    return bodies.get(stream, b"").decode()


try:
    if mode == "upgrade":
        settings = c.initiate_upgrade_connection()
        s.sendall(b"GET / HTTP/1.1\r\nHost: " + names[0].encode() +
                  b"\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: " +
                  settings + b"\r\n\r\n")
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = s.recv(65536)
            if not d:
                raise ConnectionResetError
            buf += d
        head, pending = buf.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 101"), head
        s.sendall(c.data_to_send())
        print(wait(1), flush=True)
        names = names[1:]
    else:
        c.initiate_connection()
        s.sendall(c.data_to_send())
    for name in names:
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":authority", name),
                             (":path", "/")], end_stream=True)
        s.sendall(c.data_to_send())
        print(wait(sid), flush=True)
except OSError as e:
    print(type(e).__name__, flush=True)
