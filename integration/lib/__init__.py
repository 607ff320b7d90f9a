"""Helpers for the comet-runtime black-box integration suite."""
from .bundle import Bundle  # noqa: F401
from .config import IS_RUNC, RUNTIME, default_config  # noqa: F401
from .console import ConsoleSocket  # noqa: F401
from .harness import Harness, cgroup_dirs_named, cgroup_paths, pid_alive, wait_for  # noqa: F401
from .runtime import Result, Runtime  # noqa: F401
from .util import cap_mask, cap_names, find_mount, parse_mountinfo  # noqa: F401
