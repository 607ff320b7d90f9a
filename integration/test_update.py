"""`update`: change a running container's limits.  comet joins a v1
controller hierarchy the container was not in (no limit at create) and moves
the container's processes there."""
import json
import os
from pathlib import Path

import pytest

from lib import cgroup_dirs_named, wait_for
from lib.procfs import cgroup_lines, cgroup_of, descendants

V1 = Path("/sys/fs/cgroup")
pytestmark = pytest.mark.skipif(not (V1 / "memory" / "memory.limit_in_bytes").exists()
                                or not (V1 / "pids").is_dir(), reason="needs cgroup v1 memory and pids")
PAGE = os.sysconf("SC_PAGE_SIZE")
MiB = 1024 * 1024


@pytest.fixture
def family(rt, bundle):
    """A running container: init sh with two /probe sleep children."""
    b = bundle().sh("/probe sleep 60 & /probe sleep 60 & wait")
    cid = rt.start_detached(b)
    init = rt.pid(cid)
    assert wait_for(lambda: len(descendants(init)) == 2, 5), descendants(init)
    return cid, init


def v1_dir(ctrl, pid):
    path = cgroup_of(pid, ctrl)
    assert path is not None, cgroup_lines(pid)
    return V1 / ctrl / path.lstrip("/")


def procs(d):
    return {int(p) for p in (d / "cgroup.procs").read_text().split()}


def test_update_memory_sets_limit_and_moves_processes(rt, family):
    cid, init = family
    pids = [init, *descendants(init)]
    n = 64 * MiB + 1000  # not a multiple of the page size
    rt("update", "--memory", str(n), cid).expect_ok()
    d = v1_dir("memory", init)
    assert (d / "memory.limit_in_bytes").read_text().strip() == str(n // PAGE * PAGE)
    for p in pids:
        assert v1_dir("memory", p) == d, cgroup_lines(p)
    assert set(pids) <= procs(d)


def test_update_keeps_the_container_out_of_a_new_v1_cpu_cgroup(rt, family):
    """The v1 cpu hierarchy is joined only for a cpu limit (a new cpu cgroup
    has no real-time budget: docs/architecture.md); an update of another
    limit must not join it either."""
    cid, init = family
    cpu = lambda: [c for c in cgroup_dirs_named(cid) if c.relative_to(V1).parts[0].split(",")[0] == "cpu"]
    assert cpu() == []
    rt("update", "--memory", str(96 * MiB), cid).expect_ok()
    assert cpu() == [], cpu()


def test_update_memory_on_the_hierarchy_joined_at_create(rt, family):
    """An OCI config joins every v1 hierarchy at create, as runc (issue 27
    item 2): update writes the limit in the one memory directory."""
    cid, init = family
    joined = [c for c in cgroup_dirs_named(cid) if c.relative_to(V1).parts[0] == "memory"]
    assert len(joined) == 1, joined
    rt("update", "--memory", str(96 * MiB), cid).expect_ok()
    assert (joined[0] / "memory.limit_in_bytes").read_text().strip() == str(96 * MiB)
    assert init in procs(joined[0])


def test_update_then_exec_lands_in_new_cgroup(rt, family, workdir):
    cid, init = family
    rt("update", "--resources", "-", cid, input=json.dumps({"memory": {"limit": 80 * MiB},
                                                          "pids": {"limit": 40}})).expect_ok()
    pf = workdir / "exec.pid"
    rt("exec", "--detach", "--pid-file", str(pf), cid, "/probe", "sleep", "60").expect_ok()
    pid = int(pf.read_text())
    assert cgroup_lines(pid) == cgroup_lines(init)
    assert (v1_dir("pids", pid) / "pids.max").read_text().strip() == "40"
    assert (v1_dir("memory", pid) / "memory.limit_in_bytes").read_text().strip() == str(80 * MiB)


def test_update_raises_existing_memory_limit(rt, bundle):
    cid = rt.start_detached(bundle().probe("sleep", "60").resources(memory={"limit": 64 * MiB}))
    init = rt.pid(cid)
    d = v1_dir("memory", init)
    assert (d / "memory.limit_in_bytes").read_text().strip() == str(64 * MiB)
    rt("update", "--memory", str(128 * MiB), cid).expect_ok()
    assert v1_dir("memory", init) == d
    assert (d / "memory.limit_in_bytes").read_text().strip() == str(128 * MiB)


def test_update_pids_limit_enforced(rt, bundle, workdir):
    # the init waits for a go-file, forks (sh + probe = 2 of the limit), then
    # waits for a second go-file and forks again
    wait = "while [ ! -e /tmp/go{n} ]; do sleep 0.02; done"
    b = bundle().readonly(False).sh(f"{wait.format(n=1)}; /probe fork 20; {wait.format(n=2)}; /probe fork 20")
    cid = rt.start_detached(b)
    res_file = workdir / "resources.json"
    res_file.write_text(json.dumps({"pids": {"limit": 5}}))
    rt("update", "--resources", str(res_file), cid).expect_ok()
    init = rt.pid(cid)
    assert (v1_dir("pids", init) / "pids.max").read_text().strip() == "5"
    (b.rootfs / "tmp" / "go1").write_text("")
    assert wait_for(lambda: rt.output(cid).strip(), 10), "first fork never reported"
    first = json.loads(rt.output(cid).splitlines()[0])
    assert first["ok"] is False and first["errno"] == "EAGAIN", first
    assert first["data"] == {"forked": 3, "reaped": 3}
    # raising the limit lets the same fork through
    rt("update", "--pids-limit", "50", cid).expect_ok()
    assert (v1_dir("pids", init) / "pids.max").read_text().strip() == "50"
    (b.rootfs / "tmp" / "go2").write_text("")
    assert rt.wait_status(cid, "stopped", timeout=10) == "stopped"
    second = json.loads(rt.output(cid).splitlines()[1])
    assert second == {"ok": True, "errno": None, "data": {"forked": 20, "reaped": 20}}


def test_update_absolute_cgroups_path(rt, harness, bundle):
    cgp = f"/cmt-it-{rt._tag}-upd"
    harness.extra_cgroups.append(cgp)  # teardown checks delete removed every hierarchy
    cid = rt.start_detached(bundle().probe("sleep", "60").cgroups_path(cgp))
    init = rt.pid(cid)
    rt("update", "--memory", str(64 * MiB), "--pids-limit", "20", cid).expect_ok()
    assert cgroup_of(init, "memory") == cgp and cgroup_of(init, "pids") == cgp, cgroup_lines(init)
    assert (V1 / "memory" / cgp.lstrip("/") / "memory.limit_in_bytes").read_text().strip() == str(64 * MiB)
    assert (V1 / "pids" / cgp.lstrip("/") / "pids.max").read_text().strip() == "20"


def test_update_paused_container(rt, family):
    cid, init = family
    rt("pause", cid).expect_ok()
    rt("update", "--pids-limit", "33", cid).expect_ok()
    assert (v1_dir("pids", init) / "pids.max").read_text().strip() == "33"
    assert rt.status(cid) == "paused"
    rt("resume", cid).expect_ok()
    for p in descendants(init):
        assert v1_dir("pids", p) == v1_dir("pids", init)


def test_update_stopped_container_fails(rt, bundle):
    cid = rt.start_detached(bundle().probe("exit", "0"))
    assert rt.wait_status(cid, "stopped") == "stopped"
    res = rt("update", "--memory", str(64 * MiB), cid)
    assert res.rc != 0, res
    assert any(s in res.error for s in ("not running", "stopped")), res


def test_update_missing_container(rt):
    res = rt("update", "--memory", str(64 * MiB), "cmt-no-such-container")
    assert res.rc != 0 and "does not exist" in res.error, res


def test_update_bad_resources_json(rt, family):
    cid, init = family
    before = cgroup_lines(init)
    res = rt("update", "--resources", "-", cid, input="{not json")
    assert res.rc != 0 and res.error.strip(), res
    assert cgroup_lines(init) == before
