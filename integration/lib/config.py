"""Where things are: the runtime under test, the probe, the repository."""
from __future__ import annotations

import copy
import json
import os
from pathlib import Path

INTEGRATION_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = INTEGRATION_DIR.parent
DATA_DIR = INTEGRATION_DIR / "data"

DEFAULT_RUNTIME = REPO_DIR / "build" / "runtime" / "comet-runtime"
DEFAULT_PROBE = REPO_DIR / "build" / "integration" / "comet-probe"
PROBE_SOURCE = INTEGRATION_DIR / "probe" / "probe.c"

RUNTIME = Path(os.environ.get("COMET_RUNTIME") or DEFAULT_RUNTIME)
#: True when the suite is pointed at runc (the reference implementation).
IS_RUNC = RUNTIME.name == "runc"

BUSYBOX = Path(os.environ.get("COMET_BUSYBOX", "/bin/busybox"))

#: Default timeout (seconds) for a single runtime invocation.
CALL_TIMEOUT = float(os.environ.get("COMET_CALL_TIMEOUT", "20"))

_default_config = None


def default_config() -> dict:
    """A fresh copy of `runc spec`'s default config.json (data/default-config.json)."""
    global _default_config
    if _default_config is None:
        with open(DATA_DIR / "default-config.json") as f:
            _default_config = json.load(f)
    return copy.deepcopy(_default_config)
