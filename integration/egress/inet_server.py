"""The test "internet"'s services, run inside its network namespace:

  TCP 80 443 8080 8443 (every address, v4 and v6): send "hello ADDR PORT\\n", close
  TCP 5001: bulk sink (a line with the byte count N, N bytes; answers N)
  TCP 5002: bulk source (sends N bytes, N from the first line)
  TCP 5003: half-close echo: reads to EOF, then sends SHA-256 of what it
            read and what it read with every byte inverted, and closes
  (TCP 5999 is closed on purpose: a connect there is refused, RST)
  UDP 9000: echo

Prints "ready" once every socket listens."""
import hashlib
import os
import selectors
import socket
import sys
import threading

GREET_PORTS = (80, 443, 8080, 8443)


def greeter(sock):
    while True:
        try:
            c, _ = sock.accept()
        except OSError:
            return
        try:
            addr, port = c.getsockname()[:2]
            c.sendall(f"hello {addr} {port}\n".encode())
        except OSError:
            pass
        finally:
            c.close()


def sink(sock):
    """First line: the byte count N; then N bytes; answers N."""
    while True:
        c, _ = sock.accept()

        def run(c=c):
            try:
                buf = b""
                while b"\n" not in buf:
                    b = c.recv(64)
                    if not b:
                        return
                    buf += b
                line, rest = buf.split(b"\n", 1)
                want, n = int(line), len(rest)
                while n < want:
                    b = c.recv(1 << 16)
                    if not b:
                        break
                    n += len(b)
                c.sendall(f"{n}\n".encode())
            except (OSError, ValueError):
                pass
            finally:
                c.close()

        threading.Thread(target=run, daemon=True).start()


def source(sock):
    while True:
        c, _ = sock.accept()

        def run(c=c):
            try:
                line = b""
                while not line.endswith(b"\n"):
                    b = c.recv(64)
                    if not b:
                        return
                    line += b
                left = int(line)
                chunk = b"x" * (1 << 16)
                while left > 0:
                    n = c.send(chunk[: min(left, len(chunk))])
                    left -= n
            except OSError:
                pass
            finally:
                c.close()

        threading.Thread(target=run, daemon=True).start()


FLIP = bytes(255 - i for i in range(256))


def halfclose_echo(sock):
    while True:
        c, _ = sock.accept()

        def run(c=c):
            try:
                c.settimeout(30)
                chunks = []
                while True:
                    b = c.recv(1 << 16)
                    if not b:
                        break
                    chunks.append(b)
                data = b"".join(chunks)
                c.sendall(hashlib.sha256(data).digest() + data.translate(FLIP))
            except OSError:
                pass
            finally:
                c.close()

        threading.Thread(target=run, daemon=True).start()


def listen(family, port, kind=socket.SOCK_STREAM):
    s = socket.socket(family, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind(("::" if family == socket.AF_INET6 else "0.0.0.0", port))
    if kind == socket.SOCK_STREAM:
        s.listen(128)
    return s


def main():
    threads = []
    for port in GREET_PORTS:
        for fam in (socket.AF_INET, socket.AF_INET6):
            threads.append(threading.Thread(target=greeter, args=(listen(fam, port),), daemon=True))
    threads.append(threading.Thread(target=sink, args=(listen(socket.AF_INET, 5001),), daemon=True))
    threads.append(threading.Thread(target=source, args=(listen(socket.AF_INET, 5002),), daemon=True))
    threads.append(threading.Thread(target=halfclose_echo, args=(listen(socket.AF_INET, 5003),),
                                    daemon=True))
    udp = listen(socket.AF_INET, 9000, socket.SOCK_DGRAM)
    for t in threads:
        t.start()
    print("ready", flush=True)
    while True:
        data, peer = udp.recvfrom(2048)
        udp.sendto(data, peer)


if __name__ == "__main__":
    main()
