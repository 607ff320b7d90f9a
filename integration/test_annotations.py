"""Issue 26, trap 1: "never run unconfined while looking confined". A config
whose confining annotation is misspelt (`org.soyaos.comet.capabilites`)
used to run with no confinement at all: the container wrote the image's
/etc. It is now refused at create with the spelling to use; the spelled
annotation confines; other keys of the namespace pass through (engines
forward `org.soyaos.comet.*`)."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.comet_only

CAPS = json.dumps({"egress": [], "fs": {"read": [], "write": []}, "determinism_tier": "read-only"})


@pytest.mark.parametrize("key", ["org.soyaos.comet.capabilites", "org.soyaos.comet.Capabilities",
                                 "org.soyaos.comet.capability", "org.soyaos.comet.polciy"])
def test_a_misspelt_confining_annotation_is_refused(rt, bundle, key):
    b = bundle().readonly(False).annotations(**{key: CAPS})
    res = rt.run_probe(b, "write", "/etc/x", "data")
    assert not (b.rootfs / "etc/x").exists(), "the container ran unconfined and wrote the image's /etc"
    assert res.rc == 1, res
    assert f"annotation {key}: unknown (" in res.err and "unconfined" in res.err, res.err


def test_the_spelled_annotation_confines(rt, bundle):
    b = bundle().readonly(False).annotations(**{"org.soyaos.comet.capabilities": CAPS})
    res = rt.run_probe(b, "write", "/etc/x", "data")
    assert res.rc == 3, res  # refused and reported
    assert not (b.rootfs / "etc/x").exists()


def test_other_keys_of_the_namespace_pass(rt, bundle):
    b = bundle().readonly(False).annotations(**{"org.soyaos.comet.engines-test": "x"})
    res = rt.run_probe(b, "write", "/etc/x", "data")
    assert res.rc == 0, res
    assert (b.rootfs / "etc/x").read_text() == "data"
