"""A test "CDN" front end for the wire-judge suite (test_wire.py): two names
on one address and port, as a shared CDN edge serves them.

  ADDR:9443  TLS; the certificate is chosen by SNI (good.front.test or
             evil.front.test, made by the test with openssl); answers each
             HTTP/1.1 request with "served SNI host=HOST", keep-alive
  ADDR:9080  plain HTTP/1.1, keep-alive: "host=HOST" for each request
  ADDR:9081  a sink for bulk uploads: counts bytes to EOF, replies the count
             (behind an http entry in bench/egress_wire.py)
  ADDR:9082  the same sink, behind a TLS entry: what follows the ClientHello
             is not TLS, the judge does not read it
  ADDR:9083  a source for bulk downloads: reads until a line "SEND N\n"
             (after a ClientHello), sends N bytes, closes
  ADDR:9084  h2c (python3-h2): prior knowledge, or HTTP/1.1 with Upgrade:
             h2c; answers each request "h2 authority=AUTHORITY"; logs each
             connection's :authority values to CERTDIR/h2.log

Usage: cdn_server.py ADDR CERTDIR. Prints "ready" once listening."""
from __future__ import annotations

import socket
import ssl
import sys
import threading
from pathlib import Path


def serve_http(conn, label):
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                d = conn.recv(65536)
                if not d:
                    return
                buf += d
            head, buf = buf.split(b"\r\n\r\n", 1)
            host = b""
            length = 0
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"host":
                    host = v.strip()
                if k.strip().lower() == b"content-length":
                    length = int(v.strip())
            while len(buf) < length:
                d = conn.recv(65536)
                if not d:
                    return
                buf += d
            buf = buf[length:]
            body = (label + "host=" + host.decode(errors="replace")).encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    except (OSError, ssl.SSLError):
        pass
    finally:
        conn.close()


def tls_loop(sock, ctxs, log):
    base = ctxs["good.front.test"]

    def pick(s, name, _ctx):
        s.context = ctxs.get(name or "", base)
        s.comet_sni = name

    base.sni_callback = pick
    while True:
        c, _ = sock.accept()
        with open(log, "a") as f:  # every TCP connection that reached the front
            f.write("9443\n")

        def run(c=c):
            try:
                t = base.wrap_socket(c, server_side=True)
            except (OSError, ssl.SSLError):
                c.close()
                return
            serve_http(t, "served " + str(getattr(t, "comet_sni", None)) + " ")

        threading.Thread(target=run, daemon=True).start()


def http_loop(sock):
    while True:
        c, _ = sock.accept()
        threading.Thread(target=serve_http, args=(c, ""), daemon=True).start()


def sink_loop(sock):
    while True:
        c, _ = sock.accept()

        def run(c=c):
            n = 0
            try:
                while d := c.recv(1 << 20):
                    n += len(d)
                c.sendall(str(n).encode())
            except OSError:
                pass
            c.close()

        threading.Thread(target=run, daemon=True).start()


def source_loop(sock):
    while True:
        c, _ = sock.accept()

        def run(c=c):
            buf = b""
            try:
                while not (buf.endswith(b"\n") and b"SEND " in buf):
                    d = c.recv(65536)
                    if not d:
                        return
                    buf += d
                n = int(buf.rsplit(b"SEND ", 1)[1])
                chunk = b"y" * (1 << 20)
                while n > 0:
                    c.sendall(chunk[:n])
                    n -= min(n, len(chunk))
            except (OSError, ValueError):
                pass
            finally:
                c.close()

        threading.Thread(target=run, daemon=True).start()


def serve_h2(conn, log):
    import h2.config
    import h2.connection
    import h2.events

    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    seen = []

    def answer(stream, headers):
        h = dict(headers)
        auth = h.get(":authority", h.get("host", ""))
        seen.append(auth)
        body = f"h2 authority={auth}".encode()
        c.send_headers(stream, [(":status", "200"), ("content-length", str(len(body)))])
        c.send_data(stream, body, end_stream=True)

    try:
        buf = b""
        while len(buf) < 3:
            d = conn.recv(65536)
            if not d:
                return
            buf += d
        if not buf.startswith(b"PRI"):  # HTTP/1.1, Upgrade: h2c
            while b"\r\n\r\n" not in buf:
                d = conn.recv(65536)
                if not d:
                    return
                buf += d
            head, buf = buf.split(b"\r\n\r\n", 1)
            fields = {k.strip().lower(): v.strip() for k, _, v in
                      (line.partition(b":") for line in head.split(b"\r\n")[1:])}
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
            c.initiate_upgrade_connection(fields.get(b"http2-settings", b""))
            answer(1, [("host", fields.get(b"host", b"").decode())])
        else:
            c.initiate_connection()
        conn.sendall(c.data_to_send())
        while True:
            if buf:
                for ev in c.receive_data(buf):
                    if isinstance(ev, h2.events.RequestReceived):
                        answer(ev.stream_id, ev.headers)
                conn.sendall(c.data_to_send())
            buf = conn.recv(65536)
            if not buf:
                return
    except Exception:  # noqa: BLE001 - a reset or a protocol error ends the connection
        pass
    finally:
        with open(log, "a") as f:
            f.write(" ".join(seen or ["-"]) + "\n")
        conn.close()


def h2_loop(sock, log):
    while True:
        c, _ = sock.accept()
        threading.Thread(target=serve_h2, args=(c, log), daemon=True).start()


def listen(addr, port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(512)
    return s


def main():
    addr, certs = sys.argv[1], Path(sys.argv[2])
    ctxs = {}
    for name in ("good.front.test", "evil.front.test"):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certs / f"{name}.pem", certs / f"{name}.key")
        ctxs[name] = ctx
    threads = [threading.Thread(target=tls_loop, args=(listen(addr, 9443), ctxs, certs / "accepted.log"), daemon=True),
               threading.Thread(target=http_loop, args=(listen(addr, 9080),), daemon=True),
               threading.Thread(target=sink_loop, args=(listen(addr, 9081),), daemon=True),
               threading.Thread(target=sink_loop, args=(listen(addr, 9082),), daemon=True),
               threading.Thread(target=source_loop, args=(listen(addr, 9083),), daemon=True),
               threading.Thread(target=h2_loop, args=(listen(addr, 9084), certs / "h2.log"), daemon=True)]
    for t in threads:
        t.start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
