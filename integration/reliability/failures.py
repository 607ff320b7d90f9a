"""Configs that make `create` fail, one kind per step of create.

Each kind is `Kind(name, step, make, needles)`: `make(bundle, workdir, v)`
breaks a fresh bundle (v = the variant, 0..3, so that the 100 runs differ in
the bad value too), `needles(v)` are the words the one-line error must
contain (it must name the problem and the offending value or field).
Used by test_failed_creates.py; the error table test has its own recipes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass
class Kind:
    name: str
    step: str  # where create fails: parse, validate, plan, cgroups, child, hooks, ...
    make: Callable  # (bundle, workdir: Path, v: int) -> None
    needles: Callable  # (v: int) -> tuple[str, ...]
    any_of: tuple = ()


def _script(workdir: Path, name: str, body: str) -> str:
    p = workdir / name
    p.write_text("#!/bin/sh\n" + body + "\n")
    os.chmod(p, 0o755)
    return str(p)


def _hook_fail(kind):
    def make(b, w, v):
        b.hook(kind, _script(w, f"hook-{kind}-{v}.sh", f"exit {v + 3}"))
    return Kind(f"hook-{kind}-fails", "hooks", make,
                lambda v, k=kind: (f"hook-{k}-{v}.sh", f"exit status {v + 3}", k))


def _mut(fn):
    """A make() that only edits the config dict: fn(config, v)."""
    return lambda b, w, v: fn(b.config, v)


NS_TYPES = ["pid", "network", "ipc", "uts"]

BAD_UID_MAPS = [
    [{"containerID": 0, "hostID": 100000, "size": 0}],  # refused by validate
    [{"containerID": 0, "hostID": 100000, "size": 10}, {"containerID": 5, "hostID": 200000, "size": 10}],  # overlap
    [{"containerID": 0, "hostID": 4294967290, "size": 65536}],  # host range overflows
    [{"containerID": i * 10, "hostID": 100000 + i * 10, "size": 10} for i in range(400)],  # too many lines
]

KINDS: list[Kind] = [
    Kind("config-not-json", "parse",
         lambda b, w, v: b.write_raw('{"ociVersion": "1.0.2",' + " x" * (v + 1)),
         lambda v: ("config.json", "invalid json")),
    Kind("oci-version-unsupported", "validate",
         _mut(lambda c, v: c.__setitem__("ociVersion", f"{v + 2}.0.0")),
         lambda v: ("ociversion", f"{v + 2}.0.0")),
    Kind("missing-rootfs", "validate",
         _mut(lambda c, v: c["root"].__setitem__("path", f"no-rootfs-{v}")),
         lambda v: ("rootfs", f"no-rootfs-{v}")),
    Kind("missing-process-binary", "child",
         lambda b, w, v: b.args(f"/bin/no-such-binary-{v}"),
         lambda v: (f"/bin/no-such-binary-{v}", "no such file or directory")),
    Kind("process-binary-not-in-path", "child",
         lambda b, w, v: b.args(f"no-such-cmd-{v}"),
         lambda v: (f"no-such-cmd-{v}", "not found in $path")),
    Kind("process-binary-is-dir", "child",
         lambda b, w, v: b.args(["/bin", "/etc", "/tmp", "/root"][v]),
         lambda v: (["/bin", "/etc", "/tmp", "/root"][v], "is a directory")),
    Kind("relative-cwd", "plan", lambda b, w, v: b.cwd(f"rel{v}"),
         lambda v: ("cwd", f"rel{v}")),
    Kind("cwd-not-a-dir", "child", lambda b, w, v: b.cwd(["/probe", "/etc/passwd", "/etc/group", "/bin/busybox"][v]),
         lambda v: ("cwd", ["/probe", "/etc/passwd", "/etc/group", "/bin/busybox"][v])),
    Kind("bind-mount-source-missing", "child",
         lambda b, w, v: b.bind(w / f"no-src-{v}", f"/mnt/m{v}"),
         lambda v: (f"no-src-{v}", "no such file")),
    Kind("mount-type-unknown", "child",
         lambda b, w, v: b.add_mount(f"/mnt/t{v}", f"nosuchfs{v}", "none", []),
         lambda v: (f"nosuchfs{v}", f"/mnt/t{v}")),
    Kind("mount-destination-relative", "plan",
         lambda b, w, v: b.add_mount(f"mnt/rel{v}", "tmpfs", "tmpfs", []),
         lambda v: ("destination", f"mnt/rel{v}")),
    Kind("mount-bind-no-source", "plan",
         lambda b, w, v: b.add_mount(f"/mnt/nosrc{v}", "bind", None, ["bind"]),
         lambda v: ("mounts[", "source")),
    Kind("mount-tmpcopyup-not-tmpfs", "child",
         lambda b, w, v: b.add_mount(f"/mnt/c{v}", "mqueue", "mqueue", ["tmpcopyup"]),
         lambda v: (f"/mnt/c{v}", "tmpcopyup needs a tmpfs")),
    Kind("mount-option-invalid", "child",
         lambda b, w, v: b.add_mount(f"/mnt/o{v}", "tmpfs", "tmpfs", [f"size=bogus{v}"]),
         lambda v: (f"/mnt/o{v}", "einval")),
    Kind("mount-target-not-dir", "child",
         lambda b, w, v: b.add_mount(f"/etc/passwd/x{v}", "tmpfs", "tmpfs", []),
         lambda v: (f"/etc/passwd/x{v}", "enotdir")),
    Kind("mounts-userns-without-mount-namespace", "plan",
         lambda b, w, v: b.userns().remove_namespace("mount"),
         lambda v: ("without a mount namespace", "user namespace")),
    Kind("mount-idmap-option", "plan",
         lambda b, w, v: b.add_mount(f"/mnt/i{v}", "bind", "/tmp", ["bind", "idmap"]),
         lambda v: ("idmap", "there are none")),
    Kind("seccomp-bad-default-action", "seccomp",
         lambda b, w, v: b.seccomp({"defaultAction": f"SCMP_ACT_BOGUS{v}", "architectures": ["SCMP_ARCH_X86_64"]}),
         lambda v: ("defaultaction", f"scmp_act_bogus{v}")),
    Kind("seccomp-bad-rule-action", "seccomp",
         lambda b, w, v: b.seccomp({"defaultAction": "SCMP_ACT_ALLOW",
                                    "syscalls": [{"names": ["getpid"], "action": f"SCMP_ACT_NOPE{v}"}]}),
         lambda v: ("syscalls[0].action", f"scmp_act_nope{v}")),
    Kind("seccomp-empty-syscall-name", "seccomp",
         lambda b, w, v: b.seccomp({"defaultAction": "SCMP_ACT_ALLOW",
                                    "syscalls": [{"names": ["getpid"] * v + [""], "action": "SCMP_ACT_ERRNO"}]}),
         lambda v: (f"names[{v}]", "empty syscall name")),
    Kind("seccomp-bad-operator", "seccomp",
         lambda b, w, v: b.seccomp({"defaultAction": "SCMP_ACT_ALLOW",
                                    "syscalls": [{"names": ["getpid"], "action": "SCMP_ACT_ERRNO",
                                                  "args": [{"index": 0, "value": 1, "op": f"SCMP_CMP_X{v}"}]}]}),
         lambda v: ("op", f"scmp_cmp_x{v}")),
    Kind("seccomp-bad-arch", "seccomp",
         lambda b, w, v: b.seccomp({"defaultAction": "SCMP_ACT_ALLOW", "architectures": [f"SCMP_ARCH_NOPE{v}"]}),
         lambda v: ("architecture", f"scmp_arch_nope{v}")),
    Kind("cgroup-bad-cpuset", "cgroups",
         lambda b, w, v: b.resources(cpu={"cpus": f"{900 + v}"}),
         lambda v: ("cpuset.cpus", f"{900 + v}")),
    Kind("cgroup-memory-too-low", "cgroups",
         lambda b, w, v: b.resources(memory={"limit": 4096 * (v + 1)}),
         lambda v: ("memory", str(4096 * (v + 1)))),
    Kind("cgroup-unified-bad-key", "cgroups",
         lambda b, w, v: b.resources(unified={f"nosuch{v}.max": "1"}),
         lambda v: ("unified", f"nosuch{v}.max")),
    Kind("namespace-path-missing", "namespaces",
         lambda b, w, v: b.add_namespace(NS_TYPES[v], str(w / f"no-ns-{v}")),
         lambda v: ("namespace", f"no-ns-{v}")),
    Kind("namespace-type-unknown", "validate",
         lambda b, w, v: b.linux["namespaces"].append({"type": f"bogus{v}"}),
         lambda v: ("namespaces", f"bogus{v}")),
    Kind("uid-map-bad", "userns",
         lambda b, w, v: (b.add_namespace("user"),
                          b.linux.__setitem__("uidMappings", BAD_UID_MAPS[v]),
                          b.linux.__setitem__("gidMappings", [{"containerID": 0, "hostID": 100000, "size": 65536}])),
         lambda v: ("uidmappings", "size") if v == 0 else ("uid_map", "einval")),
    Kind("uid-map-without-userns", "validate",
         lambda b, w, v: b.linux.__setitem__("uidMappings", [{"containerID": 0, "hostID": 100000 + v, "size": 10}]),
         lambda v: ("uidmappings", "requires a user namespace")),
    Kind("namespace-path-wrong-type", "namespaces",
         lambda b, w, v: b.add_namespace(NS_TYPES[v], "/proc/self/ns/" + ["net", "pid", "pid", "pid"][v]),
         lambda v: (f"join {NS_TYPES[v]} namespace", "einval")),
    Kind("hostname-without-uts", "validate",
         lambda b, w, v: (b.remove_namespace("uts"), b.hostname(f"h{v}")),
         lambda v: (f'"h{v}"', "uts namespace")),
    _hook_fail("prestart"),
    _hook_fail("createRuntime"),
    _hook_fail("createContainer"),
    Kind("hook-timeout", "hooks",
         lambda b, w, v: b.hook("prestart", "/bin/sleep", ["sleep", "30"], timeout=1),
         lambda v: ("/bin/sleep", "timeout after 1s")),
    Kind("hook-killed-by-signal", "hooks",
         lambda b, w, v: b.hook("createRuntime", "/bin/sh", ["sh", "-c", f"kill -{[9, 15, 6, 9][v]} $$"]),
         lambda v: ("createruntime", f"killed by signal {[9, 15, 6, 9][v]}")),
    Kind("hook-relative-path", "validate", lambda b, w, v: b.hook("prestart", f"rel/hook{v}"),
         lambda v: ("hooks.prestart[0].path", f"rel/hook{v}")),
    Kind("hook-missing-binary", "hooks",
         lambda b, w, v: b.hook(["prestart", "createRuntime", "createContainer", "prestart"][v],
                                str(w / f"no-hook-{v}")),
         lambda v: (f"no-hook-{v}",), any_of=("no such file", "enoent")),
    Kind("rlimit-unknown-type", "validate", lambda b, w, v: b.rlimit(f"RLIMIT_BOGUS{v}", 1, 1),
         lambda v: ("rlimit", f"rlimit_bogus{v}")),
    Kind("rlimit-soft-above-hard", "child", lambda b, w, v: b.rlimit("RLIMIT_NOFILE", 2048 + v, 1024),
         lambda v: ("rlimit",)),
    Kind("sysctl-unknown", "child", lambda b, w, v: b.sysctls({f"net.ipv4.no_such_knob_{v}": "1"}),
         lambda v: (f"net.ipv4.no_such_knob_{v}",)),
    Kind("sysctl-not-namespaced", "validate", lambda b, w, v: b.sysctls({["vm.swappiness", "kernel.panic", "fs.file-max", "vm.overcommit_memory"][v]: "1"}),
         lambda v: (["vm.swappiness", "kernel.panic", "fs.file-max", "vm.overcommit_memory"][v],)),
    Kind("sysctl-bad-value", "child", lambda b, w, v: b.sysctls({"net.ipv4.ip_forward": f"nan{v}"}),
         lambda v: ("net.ipv4.ip_forward", f"nan{v}", "einval")),
    Kind("oom-score-adj-out-of-range", "create", lambda b, w, v: b.oom_score_adj(1001 + v),
         lambda v: ("oom_score_adj", str(1001 + v))),
    Kind("supplementary-gid-invalid", "child", lambda b, w, v: b.user(0, 0, [4294967295]),
         lambda v: ("setgroups", "einval")),
    Kind("cgroup-bad-cfs-period", "cgroups", lambda b, w, v: b.resources(cpu={"quota": 1000, "period": v + 1}),
         lambda v: ("cpu.cfs_period_us", "einval")),
    Kind("cgroup-blkio-weight-out-of-range", "cgroups", lambda b, w, v: b.resources(blockIO={"weight": 5000 + v}),
         lambda v: ("blkio", str(5000 + v))),
    Kind("cgroup-network-resources", "plan", lambda b, w, v: b.resources(network={"classID": v + 1}),
         lambda v: ("linux.resources.network", "not supported")),
    Kind("seccomp-errno-out-of-range", "seccomp",
         lambda b, w, v: b.seccomp({"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 100000 + v}),
         lambda v: ("defaulterrnoret", str(100000 + v))),
    Kind("seccomp-notify-listener-missing", "seccomp",
         lambda b, w, v: b.seccomp({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": str(w / f"no-listener-{v}.sock"),
                                    "syscalls": [{"names": ["getpid"], "action": "SCMP_ACT_NOTIFY"}]}),
         lambda v: ("seccomp listener", f"no-listener-{v}.sock")),
    Kind("pid-file-dir-missing", "create", lambda b, w, v: None,
         lambda v: (f"no-pid-dir-{v}", "enoent")),
    Kind("device-bad-type", "plan", lambda b, w, v: b.add_device(f"/dev/bad{v}", "x", 1, 3, allow=False),
         lambda v: ("devices[0].type", '"x"')),
    Kind("device-relative-path", "plan", lambda b, w, v: b.add_device(f"dev/rel{v}", "c", 1, 3, allow=False),
         lambda v: ("devices[0].path", f"dev/rel{v}")),
    Kind("scheduler-bad-policy", "plan",
         _mut(lambda c, v: c["process"].__setitem__("scheduler", {"policy": f"SCHED_BOGUS{v}"})),
         lambda v: ("process.scheduler.policy", f"sched_bogus{v}")),
    Kind("rootfs-propagation-bad", "validate", lambda b, w, v: b.rootfs_propagation(f"weird{v}"),
         lambda v: ("rootfspropagation", f"weird{v}")),
    Kind("terminal-without-console-socket", "create", lambda b, w, v: b.terminal(True),
         lambda v: ("console socket",)),
    Kind("console-socket-missing", "create", lambda b, w, v: b.terminal(True),
         lambda v: ("console socket", f"no-console-{v}.sock")),
    Kind("personality-bad-domain", "plan",
         lambda b, w, v: b.linux.__setitem__("personality", {"domain": f"LINUX_BOGUS{v}"}),
         lambda v: ("personality", f"linux_bogus{v}")),
    # A confined config (the policy annotation an engine passes) whose
    # interpreter is not in the rootfs: refused before clone (exec lock).
    Kind("exec-lock-interpreter-missing", "confine",
         _mut(lambda c, v: (c.setdefault("annotations", {}).__setitem__(
             "org.soyaos.comet.policy",
             '{"lockdown": true, "exec": ["/usr/bin/nope-%d"]}' % v),
             c["process"].__setitem__("args", [f"/usr/bin/nope-{v}"]))),
         lambda v: (f"/usr/bin/nope-{v}", "in the rootfs", "ENOENT")),
    # An egress allowlist whose nft ruleset the kernel refuses (the
    # egress-bad-ruleset fault, EXTRA_ENV): the init, its netns and the
    # state must all go.
    Kind("egress-ruleset-refused", "nft",
         _mut(lambda c, v: c.setdefault("annotations", {}).__setitem__(
             "org.soyaos.comet.capabilities",
             '{"egress": [{"host": "h%d.test", "port": %d, "protocol": "tcp"}], '
             '"fs": {"read": ["/bin"], "write": []}, "determinism_tier": "read-only"}'
             % (v, 8000 + v))),
         lambda v: ("egress: load the ruleset", "nft:")),
    Kind("cgroups-path-escapes", "cgroups", lambda b, w, v: b.cgroups_path("/" + "../" * (v + 1) + "evil"),
         lambda v: ("cgroupspath",)),
]

#: extra environment for kinds that need it: name -> dict
EXTRA_ENV = {
    "egress-ruleset-refused": {"COMET_FAULT": "egress-bad-ruleset", "COMET_DNS_UPSTREAM": "127.0.0.9"},
}

#: extra CLI args for kinds that need them: name -> fn(workdir, v) -> list
EXTRA_ARGS = {
    "console-socket-missing": lambda w, v: ["--console-socket", str(w / f"no-console-{v}.sock")],
    "pid-file-dir-missing": lambda w, v: ["--pid-file", str(w / f"no-pid-dir-{v}" / "pid")],
}
