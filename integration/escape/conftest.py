"""Fixtures of the escape suites: a fresh repository and a sandbox runner
with the host git's environment (lib/sandbox.py), an empty global config,
and a scratch directory of the host's outside /tmp (which the sandbox
replaces with its own)."""
from __future__ import annotations

import secrets
import shutil
from pathlib import Path

import pytest

from lib.sandbox import make_repo, sandbox_runner


@pytest.fixture
def repo(workdir) -> Path:
    """A fresh repository with one commit, in the test's scratch dir."""
    return make_repo(workdir)


@pytest.fixture
def sandbox(rt, workdir):
    """sandbox(ws, script_or_argv, profile=, extra_env=) -> (result, events)."""
    return sandbox_runner(rt, workdir)


@pytest.fixture
def gcfg(workdir) -> Path:
    """An empty global sandbox config (COMET_SANDBOX_GLOBAL_CONFIG)."""
    g = workdir / "global.yaml"
    g.write_text("")
    return g


@pytest.fixture
def var_dir():
    """A directory under /var/tmp, which every profile shows from the host."""
    d = Path("/var/tmp") / f"comet-escape-{secrets.token_hex(4)}"
    d.mkdir(mode=0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
