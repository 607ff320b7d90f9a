"""Device rules on a hybrid host (issue 27 item 2): an OCI container is
placed in every mounted v1 hierarchy as runc places it (same relative path),
its rules are written to v1 devices.deny/devices.allow (deny "a" first), and
the eBPF program stays on its cgroup2 directory. Both enforce; every v1
directory is gone after delete, and after delete --force of a failed create."""
import ctypes
import os
from pathlib import Path

import pytest

from lib.harness import cgroup_dirs_named, wait_for

CG = Path("/sys/fs/cgroup")
V1 = sorted(p.name for p in CG.iterdir() if p.is_dir() and p.name != "unified"
            and not os.path.exists(p / "cgroup.controllers")) if CG.is_dir() else []
UNIFIED = CG / "unified"
pytestmark = pytest.mark.skipif(not (CG / "devices").is_dir() or not UNIFIED.is_dir(),
                                reason="not a hybrid host (v1 devices + cgroup2 at unified)")

# /dev/fuse (10:229): not in the default allow list; 1:3 (/dev/null) is.
FUSE = (10, 229)
# runc's default allow list, as devices.list shows it after the deny-all.
DEFAULT_LIST = {"c *:* m", "b *:* m", "c 1:3 rwm", "c 1:8 rwm", "c 1:7 rwm", "c 5:0 rwm",
                "c 1:5 rwm", "c 1:9 rwm", "c 5:1 rwm", "c 136:* rwm", "c 5:2 rwm",
                "c 10:200 rwm"}


def proc_cgroups(pid):
    out = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        out[ctrls or "unified"] = path
    return out


def device_progs(cgdir):
    """How many BPF_CGROUP_DEVICE programs are attached to CGDIR
    (bpf(BPF_PROG_QUERY)): the eBPF side of the rules."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(cgdir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        ids = (ctypes.c_uint32 * 8)()
        # union bpf_attr query: target_fd u32, attach_type u32, query_flags u32,
        # attach_flags u32, prog_ids u64, prog_cnt u32
        attr = (ctypes.c_uint8 * 128)()
        ctypes.memmove(ctypes.byref(attr, 0), ctypes.byref(ctypes.c_uint32(fd)), 4)
        ctypes.memmove(ctypes.byref(attr, 4), ctypes.byref(ctypes.c_uint32(6)), 4)  # CGROUP_DEVICE
        ctypes.memmove(ctypes.byref(attr, 16), ctypes.byref(ctypes.c_uint64(ctypes.addressof(ids))), 8)
        ctypes.memmove(ctypes.byref(attr, 24), ctypes.byref(ctypes.c_uint32(8)), 4)
        if libc.syscall(321, 16, ctypes.byref(attr), 128) != 0:  # SYS_bpf, BPF_PROG_QUERY
            raise OSError(ctypes.get_errno(), "BPF_PROG_QUERY")
        return ctypes.c_uint32.from_buffer(attr, 24).value
    finally:
        os.close(fd)


def mknod_sleeper(bundle):
    b = bundle().probe("sleep", "60")
    b.caps(b.process["capabilities"]["bounding"] + ["CAP_MKNOD"])
    return b


def test_placed_in_every_v1_hierarchy(rt, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "60"))
    cg = proc_cgroups(rt.pid(cid))
    own = proc_cgroups(os.getpid())
    for ctrls, path in cg.items():
        if ctrls.split(",")[0] == "cpu":  # joined only for a cpu limit (docs/architecture.md)
            assert path == own[ctrls], (ctrls, path)
            continue
        # Same relative path everywhere: below the runtime's own cgroup.
        assert path.rstrip("/").endswith("/" + cid), (ctrls, path)
        assert path == own[ctrls].rstrip("/") + "/" + cid if own[ctrls] != "/" else path == "/" + cid
    assert {c.split(",")[0] for c in cg} >= {"devices", "memory", "pids", "freezer", "unified"}, cg
    rt.delete(cid, "--force").expect_ok()


def test_rules_in_v1_devices_list_and_ebpf(rt, bundle):
    b = mknod_sleeper(bundle)
    cid = rt.start_detached(b)
    pid = rt.pid(cid)
    cg = proc_cgroups(pid)
    v1 = CG / "devices" / cg["devices"].lstrip("/")
    listed = set(v1.joinpath("devices.list").read_text().split("\n")) - {""}
    assert listed == DEFAULT_LIST, listed  # deny "a" first: no "a *:* rwm" left
    v2 = UNIFIED / cg["unified"].lstrip("/")
    assert device_progs(v2) == 1
    # Denied by both: mknod is allowed ("c *:* m"), opening is not.
    r = rt("exec", cid, "/probe", "mknod", "/dev/fuse", "c", *map(str, FUSE))
    assert '"ok":true' in r.out.replace(" ", ""), r
    r = rt("exec", cid, "/probe", "open", "/dev/fuse", "rw")
    assert '"errno":"EPERM"' in r.out.replace(" ", ""), r
    # Lift the v1 rule by hand: the eBPF program alone still denies it.
    v1.joinpath("devices.allow").write_text("c 10:229 rw")
    r = rt("exec", cid, "/probe", "open", "/dev/fuse", "rw")
    assert '"errno":"EPERM"' in r.out.replace(" ", ""), r
    # An allowed device opens.
    r = rt("exec", cid, "/probe", "open", "/dev/null", "rw")
    assert '"ok":true' in r.out.replace(" ", ""), r
    rt.delete(cid, "--force").expect_ok()
    assert wait_for(lambda: not cgroup_dirs_named(cid), 3), cgroup_dirs_named(cid)


def test_config_rule_in_v1_list(rt, bundle):
    b = bundle().probe("sleep", "60")
    b.linux["resources"]["devices"].append({"allow": True, "type": "c", "major": 10,
                                            "minor": 229, "access": "rw"})
    cid = rt.start_detached(b)
    v1 = CG / "devices" / proc_cgroups(rt.pid(cid))["devices"].lstrip("/")
    assert "c 10:229 rw" in v1.joinpath("devices.list").read_text().split("\n")
    rt.delete(cid, "--force").expect_ok()


def test_v1_dirs_gone_after_delete(rt, bundle):
    cid = rt.new_id()
    rt.create(cid, bundle().probe("sleep", "60")).expect_ok()
    dirs = cgroup_dirs_named(cid)
    assert {d.parent.name if d.parent != CG else d.name for d in dirs}  # made
    assert len(dirs) >= len([h for h in V1 if h.split(",")[0] != "cpu"]) + 1, (dirs, V1)
    rt.delete(cid, "--force").expect_ok()
    assert wait_for(lambda: not cgroup_dirs_named(cid), 3), cgroup_dirs_named(cid)


def test_v1_dirs_gone_after_failed_create(rt, bundle, harness):
    cid = rt.new_id()
    res = rt("create", "--bundle", str(bundle().probe("sleep", "60").write().path), cid,
             env=dict(os.environ, COMET_FAULT="create-after-clone"))
    assert res.rc != 0
    rt.delete(cid, "--force")
    assert wait_for(lambda: not cgroup_dirs_named(cid), 3), cgroup_dirs_named(cid)


def test_ps_pause_update_events(rt, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "60"))
    pid = rt.pid(cid)
    ps = rt("ps", "--format", "json", cid).expect_ok()
    assert pid in __import__("json").loads(ps.out)
    rt("pause", cid).expect_ok()
    assert rt.status(cid) == "paused"
    rt("resume", cid).expect_ok()
    assert rt.status(cid) == "running"
    rt("update", "--pids-limit", "77", cid).expect_ok()
    pids = CG / "pids" / proc_cgroups(pid)["pids"].lstrip("/")
    assert pids.joinpath("pids.max").read_text().strip() == "77"
    ev = rt("events", "--stats", cid).expect_ok()
    assert '"type":"stats"' in ev.out.replace(" ", ""), ev
    rt.delete(cid, "--force").expect_ok()
