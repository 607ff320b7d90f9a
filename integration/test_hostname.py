"""hostname and domainname (UTS namespace)."""
import os

import pytest


def test_hostname(rt, bundle):
    d = rt.run_probe(bundle().hostname("my-host.example"), "info").probe()
    assert d["hostname"] == "my-host.example"
    assert os.uname().nodename != "my-host.example"


def test_default_spec_hostname(rt, bundle):
    assert rt.run_probe(bundle(), "info").probe()["hostname"] == "runc"


def test_no_hostname_keeps_inherited(rt, bundle):
    d = rt.run_probe(bundle().hostname(None), "info").probe()
    assert d["hostname"] == os.uname().nodename


@pytest.mark.comet_only
def test_domainname(rt, bundle):
    # runc 1.1.5 ignores "domainname" (support arrived in runc 1.2)
    d = rt.run_probe(bundle().domainname("example.org"), "info").probe()
    assert d["domainname"] == "example.org"


def test_hostname_without_uts_namespace_fails(rt, harness, bundle):
    from lib.asserts import assert_nothing_left, assert_one_line_error
    b = bundle().hostname("x").remove_namespace("uts")
    cid = rt.new_id()
    res = rt.run(cid, b)
    assert_one_line_error(res, "hostname", "UTS")
    assert_nothing_left(harness, cid)
