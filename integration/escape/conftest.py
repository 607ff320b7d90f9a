"""Fixtures of the git escape suites (test_sandbox_git.py,
test_sandbox_nested_git.py): a fresh repository and a sandbox runner with
the host git's environment (lib/sandbox.py)."""
from __future__ import annotations

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
