"""runtime-spec: a namespace type the config does not list is the runtime's
(the container inherits it), every type, the mount namespace included;
under the capabilities annotation, tightening forces every namespace."""
import json
import os

import pytest

from lib.asserts import assert_nothing_left

HOST = {n: os.readlink(f"/proc/self/ns/{n}") for n in
        ("pid", "net", "mnt", "ipc", "uts", "user", "cgroup", "time")}
# config type -> /proc/PID/ns name
TYPES = {"pid": "pid", "network": "net", "mount": "mnt", "ipc": "ipc", "uts": "uts",
         "user": "user", "cgroup": "cgroup", "time": "time"}


def without(b, ntype):
    b.remove_namespace(ntype)
    if ntype == "uts":
        b.config.pop("hostname", None)  # a hostname needs a uts namespace of its own
    return b


def host_mounts_of(*prefixes):
    """The host's mount points (mountinfo field 5) at or under a prefix."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return [p for p in points if any(p == x or p.startswith(x + "/") for x in prefixes)]


@pytest.mark.parametrize("ntype", list(TYPES))
def test_omitted_namespace_is_the_runtimes(rt, harness, bundle, ntype):
    b = without(bundle(), ntype).probe("sleep", "30")
    cid = rt.start_detached(b)
    pid = rt.pid(cid)
    assert os.readlink(f"/proc/{pid}/ns/{TYPES[ntype]}") == HOST[TYPES[ntype]], ntype
    # the types still listed are the container's own
    for other, name in TYPES.items():
        if other != ntype and any(n["type"] == other for n in b.linux["namespaces"]):
            assert os.readlink(f"/proc/{pid}/ns/{name}") != HOST[name], other
    assert rt.delete(cid, "--force").rc == 0
    assert_nothing_left(harness, cid)


def test_no_namespace_at_all_inherits_every_one(rt, harness, bundle):
    """runtime-tools' linux_ns_itype: every namespace removed, no hostname."""
    b = bundle()
    b.linux["namespaces"] = []
    b.config.pop("hostname", None)
    cid = rt.start_detached(b.probe("sleep", "30"))
    pid = rt.pid(cid)
    for name in TYPES.values():
        assert os.readlink(f"/proc/{pid}/ns/{name}") == HOST[name], name
    assert rt.delete(cid, "--force").rc == 0
    assert_nothing_left(harness, cid)


def test_mounts_without_mount_namespace_are_removed_at_delete(rt, harness, bundle):
    b = without(bundle(), "mount")
    rootfs = str(b.rootfs)
    before = sorted(os.listdir(rootfs))
    cid = rt.start_detached(b.probe("sleep", "30"))
    pid = rt.pid(cid)
    state_dir = str(rt.root / cid)
    # the mounts are in the runtime's namespace, under the state dir only
    made = host_mounts_of(state_dir)
    assert state_dir + "/rootfs/proc" in made, made
    assert not host_mounts_of(rootfs), "a mount on the user's rootfs"
    # the container sees its proc and a root that is its rootfs
    assert os.path.exists(f"/proc/{pid}/root/probe")
    with open(f"/proc/{pid}/root/proc/1/cmdline", "rb") as f:  # its own pid ns' proc
        assert f.read().startswith(b"/probe"), "the container's /proc is not its own"
    assert rt.delete(cid, "--force").rc == 0
    assert not host_mounts_of(state_dir), host_mounts_of(state_dir)
    assert sorted(os.listdir(rootfs)) == before
    assert_nothing_left(harness, cid)


def test_exec_without_mount_namespace_runs_in_the_containers_root(rt, bundle):
    b = without(bundle(), "mount")
    cid = rt.start_detached(b.probe("sleep", "30"))
    res = rt("exec", cid, "/probe", "ls", "/")
    assert res.rc == 0, res
    assert "probe" in res.probe()["data"], res.probe()


def test_rootfs_propagation_without_mount_namespace_is_refused(rt, harness, bundle):
    from lib.asserts import assert_refused
    b = without(bundle(), "mount")
    b.linux["rootfsPropagation"] = "shared"
    assert_refused(harness, "run", b, "rootfsPropagation", "mount namespace")


def test_capabilities_annotation_forces_every_namespace(rt, harness, bundle):
    """Tightening (capability::tighten) is the one place an omitted
    namespace is not inherited: the pack's confinement needs its own."""
    caps = json.dumps({"fs": {"read": ["/bin"], "write": []}, "determinism_tier": "read-only"})
    b = bundle().annotations(**{"org.soyaos.comet.capabilities": caps})
    b.linux["namespaces"] = []
    b.config.pop("hostname", None)
    cid = rt.new_id()
    rt.create(cid, b.probe("sleep", "30")).expect_ok()
    pid = rt.pid(cid)  # the created init, in the namespaces it will run in
    for name in ("pid", "mnt", "ipc", "uts", "cgroup", "net"):
        assert os.readlink(f"/proc/{pid}/ns/{name}") != HOST[name], name
    assert rt.delete(cid, "--force").rc == 0
    assert_nothing_left(harness, cid)
