"""Fixtures shared by the engine suites (podman, containerd/ctr, CRI).

Each suite (module) installs the Debian packages it needs, starts its own
daemons with private state under /tmp/cmt-<engine>-*, and checks after its
last test that nothing is left (see docs/engines.md).  The images are built
once per session from a busybox + probe rootfs, with no registry.
"""
from __future__ import annotations


import pytest

from . import enginelib as el


@pytest.fixture(scope="session")
def engine_images(probe_path):
    el.ensure_packages("podman")
    d = el.mkworkdir("cmt-images-")
    watch = el.LeakWatch(d)
    try:
        images = el.build_images(d, probe_path)
        yield images
    finally:
        el.remove_tree(d)
        watch.remove_engine_own()
