"""A network policy is never enforced in the host's network namespace
(docs/policy.md): a config carrying capabilities that joins the runtime's
own network namespace, or PID 1's, is refused at create whatever path names
it, and nothing is loaded into the host's nftables. Before the check went
by identity, only the literal /proc/1/ns/net was refused: /proc/self/ns/net
was accepted and the pack's drop-all table cut the host off."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

pytestmark = pytest.mark.comet_only

NONE = json.dumps({"egress": [], "fs": {"read": ["/bin"], "write": []},
                   "determinism_tier": "read-only"})
EGRESS = json.dumps({"egress": [{"host": "api.test", "port": 443, "protocol": "https"}],
                     "fs": {"read": ["/bin"], "write": []}, "determinism_tier": "read-only"})


def nft_tables() -> str:
    return subprocess.run(["nft", "list", "tables"], capture_output=True, text=True,
                          timeout=10, check=True).stdout


def host_netns_path(how: str, harness) -> str:
    """A path that names the host's network namespace, made `how`."""
    if how == "proc-self":
        return "/proc/self/ns/net"
    if how == "proc-thread-self":
        return "/proc/thread-self/ns/net"
    if how == "proc-1":
        return "/proc/1/ns/net"
    if how == "host-pid":
        return f"/proc/{os.getpid()}/ns/net"  # this test: a host process
    if how == "symlink":
        link = harness.path("hostnet-link")
        link.symlink_to("/proc/self/ns/net")
        return str(link)
    if how == "bind":
        target = harness.path("hostnet-bind")
        target.touch()
        subprocess.run(["mount", "--bind", "/proc/self/ns/net", str(target)], check=True,
                       timeout=10)
        harness.add_cleanup(lambda: subprocess.run(["umount", str(target)], timeout=10))
        return str(target)
    raise AssertionError(how)


@pytest.mark.parametrize("caps", [NONE, EGRESS], ids=["egress-none", "egress-list"])
@pytest.mark.parametrize("how", ["proc-self", "proc-thread-self", "proc-1", "host-pid", "symlink",
                                 "bind"])
def test_a_policy_is_never_enforced_in_the_host_netns(rt, bundle, harness, how, caps):
    path = host_netns_path(how, harness)
    b = bundle().probe("exit", "0").annotations(**{"org.soyaos.comet.capabilities": caps})
    b.add_namespace("network", path)
    before = nft_tables()
    cid = rt.new_id("hostnet")
    res = rt.create(cid, b, env=dict(os.environ, COMET_DNS_UPSTREAM="127.0.0.9"))
    after = nft_tables()
    assert res.rc != 0, f"create in the host's network namespace ({how}) was accepted"
    assert "host's network namespace" in res.error or "is the host's" in res.error, res.error
    assert res.error.count("\n") <= 1, res.error
    assert after == before, f"the host's nft tables changed: {before!r} -> {after!r}"
    assert not (rt.root / cid).exists()


def test_an_engine_netns_that_is_not_the_host_is_accepted(rt, bundle, harness):
    # the check is by identity, not by refusing every joined namespace
    ns = f"cmt-hn-{os.getpid()}-{rt.new_id('n')[-6:]}"
    subprocess.run(["ip", "netns", "add", ns], check=True, timeout=10)
    harness.add_cleanup(lambda: subprocess.run(["ip", "netns", "del", ns], timeout=10))
    b = bundle().probe("exit", "0").annotations(**{"org.soyaos.comet.capabilities": NONE})
    b.add_namespace("network", f"/run/netns/{ns}")
    cid = rt.new_id("enginenet")
    rt.create(cid, b).expect_ok()
    rt("delete", "--force", cid).expect_ok()


@pytest.mark.parametrize("ns", ["pid", "mount", "ipc", "uts", "cgroup"])
def test_a_confined_container_never_joins_a_host_namespace(rt, bundle, ns):
    """Red team (issue 21): with the capabilities annotation and a pid
    namespace path of a host process, the agent listed every host process
    and read their command lines. A confined container may not join any of
    the host's namespaces (by identity, as the network namespace)."""
    proc = {"mount": "mnt"}.get(ns, ns)
    b = bundle().probe("exit", "0").annotations(**{"org.soyaos.comet.capabilities": NONE})
    b.add_namespace(ns, f"/proc/{os.getpid()}/ns/{proc}")
    cid = rt.new_id("hostns")
    res = rt.create(cid, b)
    assert res.rc != 0, f"joining the host's {ns} namespace was accepted"
    assert f"{proc} namespace /proc/{os.getpid()}/ns/{proc} is the host's" in res.error, res.error
    assert not (rt.root / cid).exists()
