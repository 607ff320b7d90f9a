"""Kubernetes RuntimeClass `comet` through containerd's CRI plugin: a CRI
client sends what the kubelet sends for the pod in docs/engines.md.  The
handler's calls must reach comet-runtime: every test checks the wrapper's
argv log and comet-runtime's own state under the handler's Root."""
from __future__ import annotations

import copy
import json
import os
import secrets
import time
from pathlib import Path

import pytest
import yaml

from . import crilib
from . import enginelib as el

PACK = "engines-example@0.1.0"  # the pod annotation in the doc's pod.yaml
#: the lifecycle tests' pod: the doc's, with a pass-through annotation instead
#: of the pack's (a confined pod allows one program per container);
#: test_doc_pod_confines runs the doc's pod as written
POD_ANNOTATION = {"org.soyaos.comet.engines-pod": "pod"}


class CRIEnv:
    def __init__(self, workdir, images):
        self.dir = workdir
        self.wrapper = el.Wrapper(workdir)
        self.root = workdir / "comet-k8s"  # the comet handler's options.Root
        self.ns_root = self.root / crilib.K8S_NS  # the shim adds the namespace
        self.watch = el.LeakWatch(workdir)
        self.watch.engine_dirs.append(str(self.ns_root))
        self.cgroup_root = f"/cmt-kubepods-{secrets.token_hex(3)}"
        self.watch.cgroup_paths.add(self.cgroup_root)
        self.daemon = crilib.CRIContainerd(workdir, images, self.wrapper.path, self.root)
        self.cri = self.daemon.cri
        self.pods: list[crilib.Pod] = []
        self.torn_down = False
        self.problems: list[str] = []
        self.runtimeclass = yaml.safe_load(el.snippet("runtimeclass.yaml"))
        self.doc_pod = yaml.safe_load(el.snippet("pod.yaml"))
        self.pod_yaml = copy.deepcopy(self.doc_pod)
        self.pod_yaml["metadata"]["annotations"] = dict(POD_ANNOTATION)

    def handler_for(self, pod: dict) -> str:
        rc = self.runtimeclass
        assert rc["kind"] == "RuntimeClass" and rc["metadata"]["name"] == pod["spec"]["runtimeClassName"], rc
        return rc["handler"]

    def new_pod(self, pod: dict | None = None, handler: str | None = None) -> crilib.Pod:
        pod = pod or self.pod_yaml
        p = crilib.Pod(self.cri, self.dir, pod, handler or self.handler_for(pod), self.cgroup_root,
                       {el.DOC_POD_IMAGE: el.BB_IMAGE})
        self.pods.append(p)
        return p

    def comet_state(self, cid: str) -> dict:
        p = el.run([self.wrapper.real, "--root", self.ns_root, "state", cid], timeout=20)
        assert p.returncode == 0, (f"comet-runtime has no state for {cid} under {self.ns_root}: {p.stderr}\n"
                                   f"calls:\n{self.wrapper.dump()}")
        return json.loads(p.stdout)

    def assert_reached_comet(self, cid: str, *verbs: str) -> list[el.Call]:
        calls = self.wrapper.calls_for(cid)
        got = [c.verb for c in calls]
        it = iter(got)
        assert calls and all(v in it for v in verbs), (
            f"the comet handler's calls for {cid} did not reach comet-runtime: expected {verbs}, got {got}\n"
            f"all calls:\n{self.wrapper.dump()}")
        for c in calls:
            assert c.global_value("--root") == str(self.ns_root), c
        return calls

    def teardown(self) -> list[str]:
        if self.torn_down:
            return self.problems
        self.torn_down = True
        probs = []
        try:
            left = self.daemon.remove_everything()
            if left:
                probs.append(f"left in the CRI: {left}")
        except crilib.CRIError as e:
            probs.append(f"CRI cleanup failed: {e}")
        shims = self.daemon.stop()
        if shims:
            probs.append(f"shims outlived containerd: {shims}")
        crilib.remove_cgroup_tree(self.cgroup_root)  # the kubelet's job
        self.watch.ids |= self.wrapper.ids()
        for p in self.pods:
            self.watch.ids.add(p.uid)
        self.watch.remove_engine_own()
        el.wait_for(lambda: not self.watch.problems(), 5)
        probs += self.watch.problems()
        self.problems = probs
        return probs


@pytest.fixture(scope="module")
def env(engine_images):
    el.ensure_packages("containerd", "podman", "python3-grpcio", "protobuf-compiler", "python3-grpc-tools",
                       "python3-yaml")
    d = el.mkworkdir("cmt-cri-")
    e = None
    try:
        e = CRIEnv(d, engine_images)
        yield e
    finally:
        problems = []
        if e:
            problems = e.teardown()
            e.watch.force_clean()
        elif d.exists():
            for pid in el.processes_referring_to(d):
                os.kill(pid, 9)
        el.keep_logs("cri", d)
        el.remove_tree(d)
        el.report_leftovers("CRI", problems)


def test_runtime_status_and_version(env):
    v = env.cri.call("Version", {"version": "v1"})
    assert v["runtime_name"] == "containerd" and v["runtime_api_version"] == "v1", v
    conds = {c["type"]: c["status"] for c in env.cri.call("Status", {})["status"]["conditions"]}
    assert conds == {"RuntimeReady": True, "NetworkReady": True}, conds


def test_pod_with_runtimeclass_comet(env):
    pod = env.new_pod()
    assert pod.handler == "comet"
    pod.sandbox_config["annotations"]["example.com/pod-not-passed"] = "x"
    spec = env.pod_yaml["spec"]["containers"][0]
    try:
        sid = pod.run()
        # the sandbox (pause) container went through comet-runtime
        env.assert_reached_comet(sid, "create", "start")
        st = env.comet_state(sid)
        assert st["status"] == "running", st
        ps = env.cri.call("PodSandboxStatus", {"pod_sandbox_id": sid})["status"]
        assert ps["state"] == "SANDBOX_READY" and ps["network"]["ip"] == "192.0.2.10", ps
        sb_cfg = env.wrapper.config_of(sid)
        netns = [n for n in sb_cfg["linux"]["namespaces"] if n["type"] == "network"]
        assert netns and netns[0].get("path", "").startswith(str(env.dir)), sb_cfg["linux"]["namespaces"]
        assert sb_cfg["annotations"].get("org.soyaos.comet.engines-pod") == "pod", sb_cfg["annotations"]
        assert sb_cfg["annotations"].get("io.kubernetes.cri.container-type") == "sandbox"
        assert "example.com/pod-not-passed" not in sb_cfg["annotations"], sb_cfg["annotations"]

        # the workload container, as the kubelet creates it
        cid = pod.start_container(spec, annotations={"org.soyaos.comet.engines-test": "container",
                                                     "example.com/not-passed": "x"})
        env.assert_reached_comet(cid, "create", "start")
        assert env.comet_state(cid)["status"] == "running"
        assert pod.status(cid)["state"] == "CONTAINER_RUNNING"
        assert el.wait_for(lambda: "hello from comet" in pod.log(spec["name"]), 5), pod.log(spec["name"])
        ann = env.wrapper.config_of(cid)["annotations"]
        assert ann.get("org.soyaos.comet.engines-pod") == "pod", ann  # pod_annotations
        assert ann.get("org.soyaos.comet.engines-test") == "container", ann  # container_annotations
        assert "example.com/not-passed" not in ann and "example.com/pod-not-passed" not in ann, ann
        assert ann.get("io.kubernetes.cri.sandbox-id") == sid

        # ExecSync: stdout and exit code, inside the pod's netns, under RuntimeDefault seccomp
        rc, out, err = pod.exec_sync(cid, ["sh", "-c", "echo exec-out; echo exec-err >&2; exit 5"])
        assert (rc, out, err) == (5, "exec-out\n", "exec-err\n")
        rc, out, _ = pod.exec_sync(cid, ["ip", "-o", "-4", "addr", "show", "eth0"])
        assert rc == 0 and "192.0.2.10/24" in out, out
        rc, out, _ = pod.exec_sync(cid, ["grep", "^Seccomp:", "/proc/self/status"])
        assert rc == 0 and out.split() == ["Seccomp:", "2"], out
        rc, out, _ = pod.exec_sync(cid, ["cat", "/proc/1/oom_score_adj"])
        assert out.strip() == "1000", out  # the kubelet's oom_score_adj for a BestEffort container
        execs = [c for c in env.wrapper.calls_for(cid) if c.verb == "exec"]
        assert len(execs) >= 4 and all(c.rc == 0 for c in execs), [str(c) for c in execs]

        # a container that exits: ContainerStatus reports its exit code
        bye = pod.start_container({"name": "bye", "image": spec["image"], "command": ["sh", "-c", el.SETTLE + "echo bye; exit 3"]})
        env.assert_reached_comet(bye, "create", "start")
        st = pod.wait_exited(bye)
        assert st["exit_code"] == 3 and st["reason"] == "Error", st
        assert "bye" in pod.log("bye")

        # StopContainer: TERM, the agent exits 0 (its trap)
        env.cri.call("StopContainer", {"container_id": cid, "timeout": 10})
        st = pod.status(cid)
        assert st["state"] == "CONTAINER_EXITED" and st["exit_code"] == 0, st
        kills = [c.args for c in env.wrapper.calls_for(cid) if c.verb == "kill"]
        assert kills and kills[0][-1] == "15", kills
        for c in (cid, bye):
            env.cri.call("RemoveContainer", {"container_id": c})
            assert not (env.ns_root / c).exists()
            assert "delete" in env.wrapper.verbs_for(c)
        pod.containers.clear()
        env.cri.call("StopPodSandbox", {"pod_sandbox_id": sid})
        env.cri.call("RemovePodSandbox", {"pod_sandbox_id": sid})
        pod.id = None
        assert "delete" in env.wrapper.verbs_for(sid)
        assert not (env.ns_root / sid).exists()
        assert env.cri.call("ListPodSandbox", {})["items"] == []
        assert not el.mounts_under(env.dir / "state" / "io.containerd.grpc.v1.cri" / "sandboxes" / sid)
    finally:
        pod.teardown()


def test_doc_pod_confines(env):
    """Issue 26, trap 1: docs/engines.md's pod.yaml carried the pack name
    alone, and its containers ran unconfined. As written now, the pod's
    annotations confine the sandbox and every container: the doc's agent
    runs and stops on TERM; another container of the pod that writes /etc
    is refused (EROFS), exits 3, and its event is kept after removal."""
    if el.IS_RUNC:
        pytest.skip("runc ignores comet's annotations")
    pod = env.new_pod(env.doc_pod)
    spec = env.doc_pod["spec"]["containers"][0]
    try:
        sid = pod.run()
        caps = env.doc_pod["metadata"]["annotations"]["org.soyaos.comet.capabilities"]
        assert env.wrapper.config_of(sid)["annotations"].get("org.soyaos.comet.capabilities") == caps
        cid = pod.start_container(spec)
        assert el.wait_for(lambda: "hello from comet" in pod.log(spec["name"]), 5), pod.log(spec["name"])
        assert env.wrapper.config_of(cid)["annotations"].get("org.soyaos.comet.capabilities") == caps
        w = pod.start_container({"name": "writer", "image": spec["image"],
                                 "command": ["sh", "-c", el.SETTLE_NOFORK + "echo x > /etc/x; exit 0"]})
        st = pod.wait_exited(w)
        assert st["exit_code"] == 3, (st, pod.log("writer"))
        assert "/etc/x" in pod.log("writer"), pod.log("writer")
        env.cri.call("StopContainer", {"container_id": cid, "timeout": 10})
        st = pod.status(cid)
        assert st["state"] == "CONTAINER_EXITED" and st["exit_code"] == 0, st
        env.cri.call("RemoveContainer", {"container_id": w})
        pod.containers.pop("writer")
        ev = el.run([env.wrapper.real, "--root", env.ns_root, "events", "--violations", w], timeout=20)
        assert ev.returncode == 0, ev
        got = [json.loads(x) for x in ev.stdout.splitlines() if x.strip()]
        assert ("fs.write", "/etc/x") in [(e["surface"], e["requested"]) for e in got], got
    finally:
        pod.teardown()


OOM_BUG = (
    "comet-runtime `exec` ignores the process's oomScoreAdj: the shim sends `exec --process P --detach --pid-file F "
    "ID` with P.oomScoreAdj = 1000 (kubelet, BestEffort) and the exec'd process keeps the shim's 1; runc gives it 1000. "
    "Same with `comet-runtime exec ID cat /proc/self/oom_score_adj` on a container whose config has oomScoreAdj 1000: "
    "comet prints 0, runc 1000.")


def test_exec_sync_gets_the_containers_oom_score_adj(env):
    pod = env.new_pod()
    try:
        pod.run()
        cid = pod.start_container(env.pod_yaml["spec"]["containers"][0])
        rc, out, _ = pod.exec_sync(cid, ["sh", "-c", "cat /proc/1/oom_score_adj /proc/self/oom_score_adj"])
        assert env.wrapper.exec_processes(cid)[-1].get("oomScoreAdj") == 1000  # what the shim asked for
        assert rc == 0 and out.split() == ["1000", "1000"], f"init, exec'd process: {out.split()}"
    finally:
        pod.teardown()


@pytest.mark.parametrize("script,said", [
    ("/probe exit 0; exit 0", "can't fork"),      # a second process: fork EPERM
    ("exec /probe exit 0", "Permission denied"),  # another binary: execve EACCES (Landlock)
])
def test_exec_lock_under_a_pods_capabilities_annotation(env, script, said):
    """Attack (issue 21, item 2), the Kubernetes way: a container whose only
    confinement is the capabilities annotation (passed by the runtime
    class's container_annotations). Only its own command may run (sh,
    found on the image's PATH); a fork or an exec of another binary is
    refused, reported (the pack is flagged), and the container exits 3.
    On 4dba8cb both ran and it exited 0."""
    caps = json.dumps({"egress": [], "determinism_tier": "read-only"})
    flag_file = env.wrapper.dir / "flags" / f"{PACK}.json"
    before = json.loads(flag_file.read_text())["count"] if flag_file.exists() else 0
    pod = env.new_pod()
    try:
        pod.run()
        spec = {"name": "locked", "image": env.pod_yaml["spec"]["containers"][0]["image"],
                "command": ["sh", "-c", el.SETTLE_NOFORK + script]}
        cid = pod.start_container(spec, annotations={"org.soyaos.comet.capabilities": caps,
                                                     "org.soyaos.comet.pack": PACK})
        st = pod.wait_exited(cid)
        assert st["exit_code"] == 3, (st, pod.log("locked"))
        assert said in pod.log("locked"), pod.log("locked")
        ann = env.wrapper.config_of(cid)["annotations"]
        assert ann.get("org.soyaos.comet.capabilities") == caps, ann
    finally:
        pod.teardown()
    # the flag is written when the engine deletes the container
    assert el.wait_for(lambda: flag_file.exists() and json.loads(flag_file.read_text())["count"] > before, 10)


STATS_BUG = (
    "comet-runtime on this hybrid-cgroup host joins a v1 hierarchy only for the limits it enforces: for the "
    "kubelet's BestEffort container (`create --bundle B --pid-file B/init.pid ID`, cgroupsPath "
    "/<pod cgroup>/ID, cpu_shares 2, no memory limit) it joins v1 cpu and memory but leaves the container in the "
    "ROOT v1 cpuacct/pids/blkio/freezer/devices/cpuset cgroups. The shim loads the task's v1 cgroups by pid, so "
    "ContainerStats reports the whole host's CPU time (cpuacct:/ usage, thousands of seconds) as the container's. "
    "runc joins every v1 hierarchy at cgroupsPath (a sleeping busybox: ~15 ms).")


def _v1_path(pid: int, controller: str) -> str:
    for line in open(f"/proc/{pid}/cgroup").read().splitlines():
        _, ctrls, path = line.split(":", 2)
        if controller in ctrls.split(","):
            return path
    return "?"


def test_container_stats_are_the_containers(env):
    """ContainerStats (what the kubelet's resource metrics read): the
    container's own CPU time and memory working set, not the host's."""
    pod = env.new_pod()
    try:
        pod.run()
        cid = pod.start_container({"name": "stats", "image": el.BB_IMAGE,
                                   "command": ["sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"]})
        st = env.cri.call("ContainerStats", {"container_id": cid})["stats"]
        ws = int(st["memory"]["working_set_bytes"]["value"])
        assert 0 < ws < 64 << 20, f"working set of a sleeping busybox container: {ws} bytes"
        cpu_ns = int(st["cpu"]["usage_core_nano_seconds"]["value"])
        pid = env.comet_state(cid)["pid"]
        assert _v1_path(pid, "cpuacct").endswith(cid), f"container's v1 cpuacct cgroup: {_v1_path(pid, 'cpuacct')}"
        assert cpu_ns < 10 * 10**9, f"CPU time of a sleeping busybox container: {cpu_ns / 1e9:.1f} s"
    finally:
        pod.teardown()


def test_update_container_resources_and_tty(env):
    """UpdateContainerResources (CPU manager, in-place resize) reaches
    `update --resources`; a tty container (kubectl run -it) gets a console."""
    pod = env.new_pod()
    try:
        pod.run()
        spec = {"name": "tty", "image": el.BB_IMAGE, "tty": True,
                "command": ["sh", "-c", "trap 'exit 0' TERM; tty; sleep 600 & wait"]}
        cfg = pod.container_config(spec)
        cfg["tty"] = True
        cfg["stdin"] = True
        r = env.cri.call("CreateContainer", {"pod_sandbox_id": pod.id, "config": cfg,
                                             "sandbox_config": pod.sandbox_config})
        cid = r["container_id"]
        pod.containers["tty"] = cid
        env.cri.call("StartContainer", {"container_id": cid})
        create = env.assert_reached_comet(cid, "create", "start")[0]
        assert "--console-socket" in create.args, create
        assert el.wait_for(lambda: "/dev/pts/0" in pod.log("tty"), 5), pod.log("tty")
        env.cri.call("UpdateContainerResources", {"container_id": cid, "linux": {
            "cpu_period": 100000, "cpu_quota": 50000, "cpu_shares": 512, "memory_limit_in_bytes": 96 << 20}})
        u = [c for c in env.wrapper.calls_for(cid) if c.verb == "update"]
        assert u and u[-1].rc == 0, env.wrapper.dump()
        pid = env.comet_state(cid)["pid"]
        mem = Path("/sys/fs/cgroup/memory") / _v1_path(pid, "memory").lstrip("/") / "memory.limit_in_bytes"
        cpu = Path("/sys/fs/cgroup/cpu") / _v1_path(pid, "cpu").lstrip("/")
        assert int(mem.read_text()) == 96 << 20, mem
        assert int((cpu / "cpu.cfs_quota_us").read_text()) == 50000
        assert int((cpu / "cpu.shares").read_text()) == 512
    finally:
        pod.teardown()


def _pod_with(env, sandbox_linux: dict | None = None, ns: dict | None = None) -> crilib.Pod:
    pod = env.new_pod()
    if ns:
        pod.sandbox_config["linux"]["security_context"]["namespace_options"] = ns
        if ns["network"] == "NODE":
            del pod.sandbox_config["hostname"]  # the kubelet sets none for host-network pods
    if sandbox_linux:
        pod.sandbox_config["linux"] = el.merge(pod.sandbox_config["linux"], sandbox_linux)
    return pod


def _start(env, pod, name, command, security_context=None, ns=None):
    cfg = pod.container_config({"name": name, "image": el.BB_IMAGE, "command": command})
    if ns:
        cfg["linux"]["security_context"]["namespace_options"] = ns
    if security_context:
        cfg["linux"]["security_context"].update(security_context)
    r = env.cri.call("CreateContainer", {"pod_sandbox_id": pod.id, "config": cfg, "sandbox_config": pod.sandbox_config})
    cid = r["container_id"]
    pod.containers[name] = cid
    env.cri.call("StartContainer", {"container_id": cid})
    env.assert_reached_comet(cid, "create", "start")
    return cid


SLEEP = ["sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"]


def test_shared_pid_namespace_pod(env):
    """shareProcessNamespace: true -- the container joins the pause
    container's pid namespace by path."""
    ns = {"network": "POD", "pid": "POD", "ipc": "POD"}
    pod = _pod_with(env, ns=ns)
    try:
        pod.run()
        cid = _start(env, pod, "shared", SLEEP, ns=ns)
        rc, out, _ = pod.exec_sync(cid, ["sh", "-c", "tr '\\0' ' ' < /proc/1/cmdline; echo"])
        assert rc == 0 and out.split() == ["/pause"], out
        cfg = env.wrapper.config_of(cid)
        pidns = [n for n in cfg["linux"]["namespaces"] if n["type"] == "pid"]
        assert pidns and pidns[0].get("path", "").endswith("/ns/pid"), cfg["linux"]["namespaces"]
    finally:
        pod.teardown()


def test_host_network_pod(env):
    """hostNetwork: true -- no netns, no CNI: the pod sees the host's network namespace."""
    ns = {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}
    pod = _pod_with(env, ns=ns)
    try:
        pod.run()
        cid = _start(env, pod, "hostnet", SLEEP, ns=ns)
        rc, out, _ = pod.exec_sync(cid, ["readlink", "/proc/self/ns/net"])
        assert rc == 0 and out.strip() == os.readlink("/proc/self/ns/net"), out
    finally:
        pod.teardown()


def test_security_context(env):
    """runAsUser, readOnlyRootFilesystem, capabilities, allowPrivilegeEscalation
    false and a pod sysctl, as the kubelet translates them."""
    pod = _pod_with(env, sandbox_linux={"sysctls": {"net.ipv4.ip_unprivileged_port_start": "80"}})
    try:
        pod.run()
        cid = _start(env, pod, "sec", SLEEP, security_context={
            "run_as_user": {"value": 65534}, "run_as_group": {"value": 65534}, "readonly_rootfs": True,
            "no_new_privs": True, "capabilities": {"drop_capabilities": ["ALL"], "add_capabilities": ["NET_BIND_SERVICE"]}})
        rc, out, _ = pod.exec_sync(cid, ["sh", "-c", "id -u; id -g; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status | "
                                         "cut -f2; cat /proc/sys/net/ipv4/ip_unprivileged_port_start; "
                                         "touch /x 2>/dev/null && echo rw || echo ro"])
        assert rc == 0, out
        assert out.split() == ["65534", "65534", "0000000000000000", "1", "80", "ro"], out
        # the exec'd process of a non-root user has no effective caps; the init's bounding set has one
        rc, out, _ = pod.exec_sync(cid, ["grep", "CapBnd", "/proc/1/status"])
        assert out.split()[-1] == "0000000000000400", out
    finally:
        pod.teardown()


def test_stop_container_escalates_to_kill(env):
    """StopContainer(timeout=1) of a container that ignores TERM: KILL after 1 s."""
    pod = env.new_pod()
    try:
        pod.run()
        cid = _start(env, pod, "stubborn", ["sh", "-c", "trap '' TERM; sleep 600"])
        t0 = time.monotonic()
        env.cri.call("StopContainer", {"container_id": cid, "timeout": 1})
        took = time.monotonic() - t0
        st = pod.status(cid)
        assert st["state"] == "CONTAINER_EXITED" and st["exit_code"] == 137, st
        assert 0.9 <= took < 8, took
        kills = [c.args[-1] for c in env.wrapper.calls_for(cid) if c.verb == "kill"]
        assert kills[:1] == ["15"] and "9" in kills, kills
    finally:
        pod.teardown()


def test_runc_handler_is_kept_and_does_not_reach_comet(env):
    """The runtimes map replaces containerd's defaults: `runc` is listed
    beside `comet` and still works; its calls do not reach the wrapper (so
    the checks above would fail if comet's handler fell back to runc)."""
    pod = env.new_pod(handler="runc")
    before = len(env.wrapper.calls())
    try:
        sid = pod.run()
        cid = pod.start_container({"name": "r", "image": el.BB_IMAGE, "command": ["sh", "-c", "exit 4"]})
        assert pod.wait_exited(cid)["exit_code"] == 4
        assert env.wrapper.calls()[before:] == [], env.wrapper.dump()
        assert not (env.ns_root / sid).exists()
    finally:
        pod.teardown()


def test_unknown_handler_is_refused(env):
    pod = env.new_pod(handler="nosuch")
    with pytest.raises(crilib.CRIError) as ei:
        pod.run()
    assert 'no runtime for "nosuch" is configured' in ei.value.details, ei.value


def test_zz_nothing_left_behind(env):
    """After the pods and containerd are gone: no sandbox netns mount, no
    /dev/shm mount, no shim, no container process, no cgroup named after a
    container (or the pods' cgroup parents), no state under the handler's
    Root, no CNI results, nothing new in the engines' global directories."""
    problems = env.teardown()
    assert not problems, "\n".join(problems)
