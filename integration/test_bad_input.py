"""Invalid configs and ids: one-line error naming the field/value, non-zero
exit, and nothing left behind (state dir, cgroup, process)."""
import pytest

from lib import cgroup_dirs_named

from lib.asserts import assert_nothing_left, assert_one_line_error


def _create(rt, b, cid=None):
    cid = cid or rt.new_id()
    return cid, rt.create(cid, b)


def test_malformed_json(rt, harness, bundle):
    b = bundle().write_raw('{"ociVersion": "1.0.2", not json')
    cid, res = _create(rt, b)
    assert_one_line_error(res, any_of=("invalid character", "json", "parse", "syntax"))
    assert_nothing_left(harness, cid)


def test_empty_config_file(rt, harness, bundle):
    b = bundle().write_raw("")
    cid, res = _create(rt, b)
    assert_one_line_error(res)
    assert_nothing_left(harness, cid)


@pytest.mark.parametrize("mutate,field", [
    (lambda c: c["process"].__setitem__("args", "notalist"), "args"),
    (lambda c: c["process"]["user"].__setitem__("uid", "root"), "uid"),
    (lambda c: c["process"].__setitem__("terminal", "yes"), "terminal"),
    (lambda c: c["root"].__setitem__("path", 42), "path"),
    (lambda c: c.__setitem__("mounts", {"destination": "/x"}), "mounts"),
    (lambda c: c["linux"].__setitem__("namespaces", [{"type": 7}]), "type"),
    (lambda c: c["process"]["rlimits"][0].__setitem__("soft", -5), "soft"),
], ids=["args-string", "uid-string", "terminal-string", "root-path-int", "mounts-object", "ns-type-int",
        "rlimit-negative"])
def test_schema_invalid_types(rt, harness, bundle, mutate, field):
    b = bundle()
    mutate(b.config)
    cid, res = _create(rt, b)
    assert_one_line_error(res, field)
    assert_nothing_left(harness, cid)


@pytest.mark.comet_only
def test_unsupported_oci_version(rt, harness, bundle):
    # runc 1.1.5 accepts any ociVersion; comet must refuse a major version it does not know
    b = bundle()
    b.config["ociVersion"] = "2.0.0"
    cid, res = _create(rt, b)
    assert_one_line_error(res, "2.0.0")
    assert_nothing_left(harness, cid)


def test_missing_rootfs(rt, harness, bundle):
    b = bundle()
    b.config["root"]["path"] = "nonexistent-rootfs"
    cid, res = _create(rt, b)
    assert_one_line_error(res, "rootfs", "nonexistent-rootfs")
    assert_nothing_left(harness, cid)


def test_missing_process(rt, harness, bundle):
    b = bundle()
    del b.config["process"]
    cid, res = _create(rt, b)
    assert_one_line_error(res, "process")
    assert_nothing_left(harness, cid)


@pytest.mark.parametrize("change, needles, any_of", [
    (lambda b: b.args(), ("args",), ()),
    (lambda b: b.cwd("relative/dir"), ("cwd",), ("absolute",)),
    (lambda b: b.add_namespace("bogusns"), ("bogusns",), ()),
    (lambda b: b.rootfs_propagation("bogus"), ("rootfsPropagation", "bogus"), ()),
], ids=["empty-args", "relative-cwd", "unknown-namespace-type", "bad-rootfs-propagation"])
def test_invalid_field_value(rt, harness, bundle, change, needles, any_of):
    cid, res = _create(rt, change(bundle()))
    assert_one_line_error(res, *needles, any_of=any_of)
    assert_nothing_left(harness, cid)


@pytest.mark.parametrize("bad", ["a/b", "..", ".", "a b", "x/../../etc", ""], ids=repr)
def test_invalid_id(rt, harness, bundle, bad):
    b = bundle().write()
    res = rt("create", "--bundle", str(b.path), bad)
    assert_one_line_error(res, any_of=("id",))
    assert not rt.root.exists() or list(rt.root.iterdir()) == [], "state written for an invalid id"
    if bad and "/" not in bad and bad not in (".", ".."):
        assert not cgroup_dirs_named(bad)


def test_overlong_id(rt, harness, bundle):
    bad = "x" * 1025
    b = bundle().write()
    res = rt("create", "--bundle", str(b.path), bad)
    assert_one_line_error(res, any_of=("id", bad, "too long"))
    assert not rt.root.exists() or list(rt.root.iterdir()) == []


def test_unknown_global_flag(rt):
    res = rt("--no-such-flag", "list")
    assert res.rc != 0
    assert "no-such-flag" in res.error


def test_unknown_create_flag(rt, harness, bundle):
    b = bundle().write()
    cid = rt.new_id()
    res = rt("create", "--no-such-flag", "--bundle", str(b.path), cid)
    assert res.rc != 0
    assert "no-such-flag" in res.error
    assert_nothing_left(harness, cid)
