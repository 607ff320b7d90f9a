"""runtime-spec 1.2/1.3 process attributes (issue 27): process.ioPriority,
process.scheduler, process.execCPUAffinity, linux.memoryPolicy, and the LSM
fields on a host without the LSM (apparmorProfile, selinuxLabel,
mountLabel), linux.intelRdt without resctrl. Each is observed on the running
process from the host (ionice, chrt, taskset, /proc/PID/numa_maps), for the
init (create/start) and for `exec --process`."""
import json
import os
import subprocess

import pytest

from lib.asserts import assert_refused


def _host(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def _task_policy(pid):
    """The task's memory policy as numa_maps shows it for a VMA of its own
    (a VMA without a policy shows the task's)."""
    with open(f"/proc/{pid}/numa_maps") as f:
        for line in f:
            words = line.split()
            if "heap" in words or "stack" in words:
                return words[1]
    raise AssertionError("no heap or stack mapping")


@pytest.fixture
def sleeper(rt, bundle):
    def start(mutate):
        b = bundle().probe("sleep", "60")
        mutate(b)
        cid = rt.start_detached(b)
        return cid, rt.pid(cid)
    return start


def test_io_priority(sleeper):
    _, pid = sleeper(lambda b: b.process.update(
        ioPriority={"class": "IOPRIO_CLASS_BE", "priority": 6}))
    assert _host("ionice", "-p", str(pid)).strip() == "best-effort: prio 6"


def test_scheduler_fifo(sleeper):
    _, pid = sleeper(lambda b: b.process.update(
        scheduler={"policy": "SCHED_FIFO", "priority": 7}))
    out = _host("chrt", "-p", str(pid))
    assert "SCHED_FIFO" in out and "priority: 7" in out, out


def test_scheduler_idle_and_nice(sleeper):
    _, pid = sleeper(lambda b: b.process.update(scheduler={"policy": "SCHED_BATCH", "nice": 5}))
    assert "SCHED_BATCH" in _host("chrt", "-p", str(pid))
    with open(f"/proc/{pid}/stat") as f:
        assert int(f.read().rsplit(")", 1)[1].split()[16]) == 5  # nice


def test_exec_cpu_affinity_final(sleeper):
    _, pid = sleeper(lambda b: b.process.update(execCPUAffinity={"initial": "0", "final": "1"}))
    assert _host("taskset", "-c", "-p", str(pid)).split(":")[-1].strip() == "1"


def test_memory_policy(sleeper):
    _, pid = sleeper(lambda b: b.linux.update(
        memoryPolicy={"mode": "MPOL_INTERLEAVE", "nodes": "0"}))
    assert _task_policy(pid) == "interleave:0"


def test_exec_process_gets_its_own_attributes(rt, sleeper, workdir):
    seen = {}
    cid, _ = sleeper(lambda b: seen.update(process=json.loads(json.dumps(b.process))))
    proc = dict(seen["process"], args=["/probe", "sleep", "30"],
                ioPriority={"class": "IOPRIO_CLASS_IDLE", "priority": 0},
                scheduler={"policy": "SCHED_RR", "priority": 3},
                execCPUAffinity={"final": "0"})
    pf = workdir / "process.json"
    pf.write_text(json.dumps(proc))
    pidfile = workdir / "exec.pid"
    rt("exec", "--detach", "--pid-file", str(pidfile), "--process", str(pf), cid).expect_ok()
    pid = int(pidfile.read_text())
    try:
        assert _host("ionice", "-p", str(pid)).strip().startswith("idle")
        out = _host("chrt", "-p", str(pid))
        assert "SCHED_RR" in out and "priority: 3" in out, out
        assert _host("taskset", "-c", "-p", str(pid)).split(":")[-1].strip() == "0"
    finally:
        os.kill(pid, 9)


@pytest.mark.parametrize("field,value,needle", [
    ("ioPriority", {"class": "IOPRIO_CLASS_NONE", "priority": 0}, "process.ioPriority.class"),
    ("scheduler", {"policy": "SCHED_FIFO"}, "process.scheduler.priority 0"),
    ("execCPUAffinity", {"final": "2-1"}, "process.execCPUAffinity.final"),
])
def test_bad_process_attrs_are_refused(harness, bundle, field, value, needle):
    b = bundle().probe("sleep", "30")
    b.process[field] = value
    assert_refused(harness, "create", b, needle)


def test_cpu_the_host_lacks_is_an_error_naming_the_field(rt, bundle):
    b = bundle().probe("exit", "0")
    b.process["execCPUAffinity"] = {"final": "4095"}
    res = rt.run(rt.new_id(), b)
    assert res.rc != 0 and "process.execCPUAffinity.final" in res.error, res


def test_intel_rdt_without_resctrl(harness, bundle):
    assert not os.path.exists("/sys/fs/resctrl/schemata"), "this host has resctrl"
    b = bundle().probe("sleep", "30")
    b.linux["intelRdt"] = {"closID": "g1", "l3CacheSchema": "L3:0=f"}
    assert_refused(harness, "create", b, "linux.intelRdt: this host has no resctrl filesystem")


def test_lsm_fields_without_the_lsm_run_as_runc(rt, bundle, workdir):
    # this host has neither AppArmor nor SELinux: a debug line, and go on
    assert not os.path.exists("/sys/module/apparmor/parameters/enabled")
    assert not os.path.exists("/sys/fs/selinux/enforce")
    b = bundle().probe("exit", "0")
    b.process["apparmorProfile"] = "docker-default"
    b.process["selinuxLabel"] = "system_u:system_r:container_t:s0:c1,c2"
    b.linux["mountLabel"] = "system_u:object_r:container_file_t:s0:c1,c2"
    log = workdir / "debug.log"
    res = rt.run(rt.new_id(), b, global_args=["--debug", "--log", str(log)])
    assert res.rc == 0, res
    text = log.read_text()
    assert "AppArmor is not enabled on this host" in text, text
    assert "SELinux is not enabled on this host" in text, text
