"""Fixtures of the violations suites: the static agent (packprobe), a pack
of it with a private flags registry, and the same pack as a bundle for the
engine-style tests (lib/reaper.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from lib.packs import build_packprobe, make_pack


@pytest.fixture(scope="session")
def packprobe(session_dir) -> Path:
    return build_packprobe(session_dir)


@pytest.fixture
def flags_dir(workdir, monkeypatch) -> Path:
    d = workdir / "flags"
    monkeypatch.setenv("COMET_FLAGS_DIR", str(d))
    return d


@pytest.fixture
def pack(workdir, packprobe, flags_dir):
    return make_pack(workdir, packprobe)


@pytest.fixture
def pack_bundle(rt, workdir, packprobe, flags_dir) -> Path:
    """`pack bundle` of the probe pack, for create/start by an engine."""
    p, rootfs = make_pack(workdir, packprobe)
    b, out = workdir / "bundle", workdir / "out"
    # pack bundle makes OUT for the agent (uid 65534)
    rt("pack", "bundle", str(p), "--rootfs", str(rootfs), "--bundle", str(b), "--output", str(out),
       root=False).expect_ok()
    return b
