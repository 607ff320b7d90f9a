"""Where the runtime under test keeps its fs events program
(runtime/reporting/src/fswatch.cpp): its pins, its detacher's pid file. Each build's
program is pinned under the first 16 hex digits of the sha256 of its object
(built beside the binary), so other versions of the runtime on this machine
have their own and are left alone."""
from __future__ import annotations

import hashlib
from pathlib import Path

from . import config as cfg

PINS = Path("/sys/fs/bpf/comet-runtime")


def program_hash() -> str | None:
    obj = cfg.RUNTIME.parent / "fswatch.bpf.o"
    try:
        return hashlib.sha256(obj.read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def pin_dir() -> Path | None:
    h = program_hash()
    return PINS / h if h else None


def linger_file() -> Path | None:
    h = program_hash()
    return Path(f"/run/comet-runtime/fswatch-{h}.linger") if h else None


def idle_file() -> Path | None:
    h = program_hash()
    return Path(f"/run/comet-runtime/fswatch-{h}.idle") if h else None


def attached() -> bool:
    d = pin_dir()
    return d is not None and (d / "link").exists()


def linger_pid() -> int | None:
    """The detacher's pid, if the one the file names is alive."""
    f = linger_file()
    try:
        pid = int(f.read_text().split()[0])
        if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0] == b"comet-fswatch-linger":
            return pid
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    return None
