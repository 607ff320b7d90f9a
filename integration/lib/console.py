"""A --console-socket server: receives the pty master over SCM_RIGHTS."""
from __future__ import annotations

import os
import select
import socket
import threading
import time
from pathlib import Path


class ConsoleSocket:
    """Listens on a unix socket; the runtime connects and sends the pty
    master fd.  `wait_master()` returns it; `read_until()` / `read_all()`
    collect what the container writes to its terminal."""

    def __init__(self, path: Path):
        self.path = str(path)
        assert len(self.path) < 108, f"unix socket path too long: {self.path}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(1)
        self.master: int | None = None
        self.error: BaseException | None = None
        self.buf = b""
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        try:
            self.sock.settimeout(30)
            conn, _ = self.sock.accept()
            with conn:
                conn.settimeout(30)
                msg, fds, _flags, _addr = socket.recv_fds(conn, 4096, 4)
                if not fds:
                    raise AssertionError(f"no fd received over the console socket (msg={msg!r})")
                self.master = fds[0]
                for extra in fds[1:]:
                    os.close(extra)
        except BaseException as e:  # noqa: BLE001
            self.error = e
        finally:
            self._ready.set()

    def wait_master(self, timeout: float = 20) -> int:
        assert self._ready.wait(timeout), "runtime never connected to the console socket"
        if self.error:
            raise self.error
        assert self.master is not None
        return self.master

    def _read_some(self, timeout: float) -> bool:
        fd = self.wait_master()
        r, _, _ = select.select([fd], [], [], timeout)
        if not r:
            return True
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the slave side is closed
            return False
        if not data:
            return False
        self.buf += data
        return True

    def read_until(self, needle: bytes, timeout: float = 10) -> bytes:
        deadline = time.monotonic() + timeout
        while needle not in self.buf and time.monotonic() < deadline:
            if not self._read_some(min(0.2, max(0.0, deadline - time.monotonic()))):
                break
        return self.buf

    def read_all(self, timeout: float = 10) -> bytes:
        """Read until the slave side is closed (EIO/EOF) or timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._read_some(min(0.2, max(0.0, deadline - time.monotonic()))):
                break
        return self.buf

    def write(self, data: bytes) -> None:
        os.write(self.wait_master(), data)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        if self.master is not None:
            try:
                os.close(self.master)
            except OSError:
                pass
            self.master = None
        try:
            os.unlink(self.path)
        except OSError:
            pass
