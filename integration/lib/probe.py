"""Locate or build the static comet-probe binary."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .config import DEFAULT_PROBE, PROBE_SOURCE


def _fresh(binary: Path) -> bool:
    try:
        return binary.stat().st_mtime >= PROBE_SOURCE.stat().st_mtime
    except FileNotFoundError:
        return False


def locate_or_build(tmpdir: Path) -> Path:
    """$PROBE if set; else build/integration/comet-probe if it is newer than
    probe.c; else compile probe.c with `cc -static -O2` into tmpdir."""
    env = os.environ.get("PROBE")
    if env:
        p = Path(env)
        if not p.is_file():
            raise RuntimeError(f"PROBE={env} does not exist")
        return p
    if _fresh(DEFAULT_PROBE):
        return DEFAULT_PROBE
    out = Path(tmpdir) / "comet-probe"
    cc = os.environ.get("CC", "cc")
    subprocess.run(
        [cc, "-static", "-O2", "-Wall", "-Wextra", "-o", str(out), str(PROBE_SOURCE)],
        check=True,
        timeout=120,
    )
    return out
