"""docs/errors.md is the table of every error the CLI prints. For each row
whose test column says `recipe` or `fault` (a test-only COMET_FAULT),
RECIPES[id] makes the CLI print it; the
test checks the exit status and that one line of stderr matches the
message (`<...>` matches any text). Rows marked `internal` / `untested` are
reported as skipped with that reason, and a recipe without a row (or a row
without a recipe) fails, so the table and the test cannot drift apart."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from lib.config import REPO_DIR

pytestmark = pytest.mark.comet_only

TABLE = REPO_DIR / "docs" / "errors.md"
ROW = re.compile(r"^\|\s*([a-z][a-z0-9-]*)\s*\|(.*)\|\s*$")


def parse_table(path: Path = TABLE) -> list[dict]:
    rows = []
    for line in path.read_text().splitlines():
        m = ROW.match(line)
        if not m or m.group(1) == "id":
            continue
        cols = [c.strip() for c in re.split(r"(?<!\\)\|", m.group(2))]
        assert len(cols) >= 4, f"malformed row: {line}"
        msg = re.search(r"`([^`]*)`", cols[0])
        assert msg, f"row {m.group(1)}: no `message`"
        rows.append({"id": m.group(1), "message": msg.group(1).replace("\\|", "|"),
                     "exit": int(cols[1]), "test": cols[2], "todo": cols[3]})
    return rows


def template_regex(message: str) -> re.Pattern:
    parts = re.split(r"<[^>]+>", message)
    return re.compile(".+?".join(re.escape(p) for p in parts), re.DOTALL)


# -- helpers for the recipes -------------------------------------------------
class X:
    def __init__(self, harness):
        self.h = harness
        self.rt = harness.rt
        self.w = harness.workdir

    def bundle(self, **kw):
        return self.h.bundle(**kw)

    def cfg(self, mutate, *extra, **kw):
        b = self.bundle()
        mutate(b)
        return self.rt.create(self.rt.new_id(), b, *extra, **kw)

    def cli(self, *args, **kw):
        return self.rt(*args, **kw)

    def stopped(self):
        cid = self.rt.new_id()
        self.rt.create(cid, self.bundle().probe("exit", "0")).expect_ok()
        self.rt.start(cid).expect_ok()
        assert self.rt.wait_status(cid, "stopped") == "stopped"
        return cid

    def running(self):
        return self.rt.start_detached(self.bundle().probe("sleep", "60"))

    def script(self, name, body):
        p = self.w / name
        p.write_text("#!/bin/sh\n" + body + "\n")
        os.chmod(p, 0o755)
        return str(p)

    def seccomp(self, profile):
        return self.cfg(lambda b: b.seccomp(profile))

    def rule(self, **r):
        base = {"names": ["getpid"], "action": "SCMP_ACT_ERRNO"}
        base.update(r)
        return self.seccomp({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [base]})


def _set(path, value):
    def mutate(b):
        d = b.config
        keys = path.split(".")
        for k in keys[:-1]:
            d = d.setdefault(k, {})
        d[keys[-1]] = value
    return mutate


def _del(path):
    def mutate(b):
        d = b.config
        keys = path.split(".")
        for k in keys[:-1]:
            d = d[k]
        del d[keys[-1]]
    return mutate


def _m(c, h, size=1):
    return {"containerID": c, "hostID": h, "size": size}


def _idmap(b, uid=None, gid=None, src="/tmp"):
    b.add_mount("/mnt/x", "bind", src, ["bind"])
    m = b.mount_for("/mnt/x")
    if uid is not None:
        m["uidMappings"] = uid
    if gid is not None:
        m["gidMappings"] = gid


def r_netdev_move(x):
    # The host's loopback cannot change namespace (NETIF_F_NETNS_LOCAL).
    return x.cfg(_set("linux.netDevices", {"lo": {}}))


def r_egress_resolver_taken(x):
    """An engine's namespace where something already serves 127.0.0.1:53
    (another pack's resolver, in a pod)."""
    ns = f"cmt-err-{os.getpid()}-{x.rt.new_id('n')[-6:]}"
    subprocess.run(["ip", "netns", "add", ns], check=True, timeout=10)
    holder = None
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True, timeout=10)
        holder = subprocess.Popen(
            ["ip", "netns", "exec", ns, "python3", "-c",
             "import socket,time\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
             "s.bind(('127.0.0.1',53))\nprint('bound',flush=True)\ntime.sleep(60)"],
            stdout=subprocess.PIPE, text=True)
        assert holder.stdout.readline().strip() == "bound"
        caps = json.dumps({"egress": [{"host": "api.test", "port": 443, "protocol": "https"}],
                           "fs": {"read": ["/bin"], "write": []}, "determinism_tier": "read-only"})

        def mutate(b):
            b.config.setdefault("annotations", {})["org.soyaos.comet.capabilities"] = caps
            for n in b.config["linux"]["namespaces"]:
                if n["type"] == "network":
                    n["path"] = f"/run/netns/{ns}"
        return x.cfg(mutate, env=dict(os.environ, COMET_DNS_UPSTREAM="127.0.0.9"))
    finally:
        if holder:
            holder.kill()
            holder.wait(timeout=10)
        subprocess.run(["ip", "netns", "del", ns], timeout=10)


def r_egress_ruleset(x):
    caps = json.dumps({"egress": [{"host": "h.test", "port": 80, "protocol": "tcp"}],
                       "fs": {"read": ["/bin"], "write": []}, "determinism_tier": "read-only"})
    return x.cfg(lambda b: b.config.setdefault("annotations", {}).__setitem__(
        "org.soyaos.comet.capabilities", caps),
        env=dict(os.environ, COMET_FAULT="egress-bad-ruleset", COMET_DNS_UPSTREAM="127.0.0.9"))


def r_sc_too_big(x):
    # distinct 64-bit values (both halves differ) cannot be merged: 2+ instructions each
    rules = [{"names": ["getpid"], "action": "SCMP_ACT_ERRNO",
              "args": [{"index": 0, "value": (i << 32) | i, "op": "SCMP_CMP_EQ"}]} for i in range(3000)]
    return x.seccomp({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": rules})


def r_state_lock(x):
    cid = x.rt.new_id()
    x.rt.create(cid, x.bundle().probe("sleep", "60")).expect_ok()
    lock = x.rt.root / cid / "lock"
    lock.unlink()
    os.symlink("lock", lock)  # a loop: open() gets ELOOP
    try:
        return x.cli("state", cid)
    finally:
        lock.unlink()


def r_start_init_exited(x):
    cid = x.rt.new_id()
    x.rt.create(cid, x.bundle().probe("sleep", "60"),
                env=dict(os.environ, COMET_FAULT="init-exit-at-start")).expect_ok()
    return x.cli("start", cid)


def r_exec_notify(x):
    """exec into a container whose seccomp has a NOTIFY rule (its listener
    went to listenerPath at create)."""
    import socket
    import threading
    path = x.w / "notify.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)
    srv.settimeout(10)
    held = []

    def serve():
        conn, _ = srv.accept()
        with conn:
            _msg, fds, _f, _a = socket.recv_fds(conn, 65536, 4)
            held.extend(fds)  # kept open: the container's notified call waits, never runs

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        b = x.bundle().probe("sleep", "60").seccomp(
            {"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": str(path),
             "syscalls": [{"names": ["getpriority"], "action": "SCMP_ACT_NOTIFY"}]})
        cid = x.rt.new_id()
        x.rt.create(cid, b).expect_ok()
        t.join(10)
        x.rt.start(cid).expect_ok()
        return x.cli("exec", cid, "/probe", "exit", "0")
    finally:
        for fd in held:
            os.close(fd)
        srv.close()


def r_child_pivot(x):
    # an initramfs root cannot be made here: the fault makes pivot_root fail
    # with the EINVAL such a root gets (docs/reliability.md)
    return x.cfg(lambda b: None, env=dict(os.environ, COMET_FAULT="pivot-root-einval"))


def r_spec_exists(x):
    d = x.w / "specdir"
    d.mkdir()
    x.cli("spec", "--bundle", str(d)).expect_ok()
    return x.cli("spec", "--bundle", str(d))


def r_id_exists(x):
    cid = x.rt.new_id()
    b = x.bundle().probe("sleep", "60")
    x.rt.create(cid, b).expect_ok()
    return x.rt.create(cid, b)


def r_state_corrupt(x):
    cid = x.rt.new_id()
    x.rt.create(cid, x.bundle().probe("sleep", "60")).expect_ok()
    sf = x.rt.root / cid / "state.json"
    good = sf.read_text()
    sf.write_text('{"id": "' + cid + '", "bund')
    res = x.rt.state_raw(cid)
    sf.write_text(good)  # so that teardown's delete --force can kill the init
    return res


def _small_tmpfs(x, name):
    mnt = x.w / name
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=True)
    x.h.add_cleanup(lambda: subprocess.run(["umount", "-l", str(mnt)], check=True))
    return mnt


def r_state_enospc(x):
    mnt = _small_tmpfs(x, "full")
    with open(mnt / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        except OSError:
            pass
    b = x.bundle().write()
    return x.rt("create", "--bundle", str(b.path), x.rt.new_id(), root=False,
                global_args=["--root", str(mnt / "root")])


def r_state_mkdir(x):
    b = x.bundle().write()
    return x.rt("create", "--bundle", str(b.path), x.rt.new_id(), root=False,
                global_args=["--root", "/etc/passwd/comet-root"])


def r_start_stopped(x):
    return x.rt.start(x.stopped())


def r_start_running(x):
    return x.rt.start(x.running())


def r_start_creating(x):
    cid = x.rt.new_id()
    # killed before the init is told it may go on: the init lives, the record says not done
    res = x.rt.create(cid, x.bundle().probe("sleep", "60"), env={"COMET_FAULT": "create-before-ready"})
    assert res.rc == -signal.SIGKILL, res
    return x.rt.start(cid)


def r_start_exec_failed(x):
    b = x.bundle().seccomp({"defaultAction": "SCMP_ACT_ALLOW",
                            "syscalls": [{"names": ["execveat"], "action": "SCMP_ACT_ERRNO"}]})
    return x.rt.run(x.rt.new_id(), b)


def r_delete_running(x):
    return x.rt.delete(x.running())


def r_update_resources(x):
    f = x.w / "res.json"
    f.write_text('{"memory": {"limit": "lots"}}')
    return x.cli("update", "--resources", str(f), x.running())


def r_exec_paused(x):
    cid = x.running()
    x.cli("pause", cid).expect_ok()
    res = x.cli("exec", cid, "/bin/true")
    x.cli("resume", cid).expect_ok()
    return res


def r_exec_process_file(x):
    f = x.w / "process.json"
    f.write_text('{"args": "notalist"}')
    return x.cli("exec", "--process", str(f), x.running())


def r_cfg_missing(x):
    b = x.bundle()  # never written
    return x.cli("create", "--bundle", str(b.path), x.rt.new_id())


def _userns_without_maps(b):
    b.add_namespace("user")
    b.linux.pop("uidMappings", None)
    b.linux.pop("gidMappings", None)


def _sysctl_no_netns(b):
    b.remove_namespace("network")
    b.sysctls({"net.ipv4.ip_forward": "1"})


def r_memory_low(x):
    return x.cfg(lambda b: b.resources(memory={"limit": 4096}))


def r_console(x):
    return x.cfg(lambda b: b.terminal(True), "--console-socket", str(x.w / "nope.sock"))


def r_pidfile(x):
    return x.cfg(lambda b: None, "--pid-file", str(x.w / "no-dir" / "pid"))


def r_exec_perm(x):
    return x.cfg(lambda b: b.args("/etc/passwd"))


def r_uid_map(x):
    def m(b):
        b.add_namespace("user")
        b.linux["uidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 10},
                                  {"containerID": 5, "hostID": 200000, "size": 10}]
        b.linux["gidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 65536}]
    return x.cfg(m)


def r_become_root(x):
    def m(b):
        b.add_namespace("user")
        b.linux["uidMappings"] = [{"containerID": 1, "hostID": 100000, "size": 10}]
        b.linux["gidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 65536}]
    return x.cfg(m)


def r_pack_invalid(x):
    d = x.w / "badpack"
    d.mkdir()
    (d / "soyapack.yaml").write_text("apiVersion: soyapack/v0\nname: Bad Name!\nversion: 1\n")
    return x.cli("pack", "validate", str(d), root=False)


def r_pack_bundle(x, *args, pack="weather-egress"):
    rootfs = x.w / "prootfs"
    rootfs.mkdir(exist_ok=True)
    return x.cli("pack", "bundle", str(REPO_DIR / "examples" / pack), "--rootfs", str(rootfs),
                 *args, root=False)


def r_pack_bundle_unwritable(x):
    out = x.w / "pout"
    out.mkdir(mode=0o755)  # root's: the agent (nobody) cannot write it
    return r_pack_bundle(x, "--bundle", str(x.w / "pb"), "--output", str(out))


def fault(name):
    """The environment for a test-only fault (base/include/comet/base/fault.hpp)."""
    return dict(os.environ, COMET_FAULT=name)


def r_start_fifo_closed(x):
    cid = x.rt.new_id()
    x.rt.create(cid, x.bundle().probe("sleep", "60"), env=fault("init-close-fifo")).expect_ok()
    return x.cli("start", cid)


def r_freeze_timeout(x):
    cid = x.running()
    return x.cli("pause", cid, env=fault("freezer-stuck"))


def r_no_freezer(x):
    """A record without a freezer (as an older runtime wrote it)."""
    cid = x.running()
    st = x.rt.root / cid / "state.json"
    rec = json.loads(st.read_text())
    assert rec["freezer_dir"], rec
    rec["freezer_dir"] = ""
    st.write_text(json.dumps(rec))
    return x.cli("pause", cid)


def r_child_dev_null(x):
    """The runtime's own mount namespace has /dev/zero where /dev/null was:
    the init copies that namespace and refuses the impostor. Private to the
    unshare, so the host's /dev/null is never touched."""
    b = x.bundle().write()
    return x.rt("create", "--bundle", str(b.path), x.rt.new_id(),
                prefix=["unshare", "-m", "--propagation", "private", "sh", "-c",
                        'mount --bind /dev/zero /dev/null && exec "$@"', "sh"])


def r_child_other(x):
    return x.cfg(lambda b: b.hostname("faulty"), env=fault("sethostname-eperm"))


def r_pack_compile_abs(x):
    rootfs = x.w / "prootfs"
    rootfs.mkdir()
    return x.cli("pack", "bundle", str(REPO_DIR / "examples" / "weather-egress"), "--rootfs", "prootfs",
                 "--bundle", "pb", root=False, cwd=x.w, env=fault("pack-relative-paths"))


def r_child_seccomp_load(x):
    """A filter with a NOTIFY rule loads during create (its listener goes to
    listenerPath before the hooks): the failure reaches the CLI. Without one
    the filter loads just before execve, after `start`; a failure there goes
    to the container's stderr (the runtime has exited)."""
    import socket
    path = x.w / "listener.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
        srv.bind(str(path))
        srv.listen(1)  # the runtime's connect lands in the backlog; the load fails first
        return x.cfg(lambda b: b.seccomp(
            {"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": str(path),
             "syscalls": [{"names": ["getpriority"], "action": "SCMP_ACT_NOTIFY"}]}),
            env=fault("seccomp-load-einval"))


SECCOMP_ONE = {"defaultAction": "SCMP_ACT_ALLOW",
               "syscalls": [{"names": ["getpid"], "action": "SCMP_ACT_ERRNO"}]}


PACK = str(REPO_DIR / "examples" / "summarize-inputs")


SIDE_EFFECT_PACK = """\
apiVersion: soyapack/v0
name: writer
version: 1.0.0
runtime: {interpreter: /usr/bin/python3, entrypoint: agent.py}
capabilities:
  egress: []
  fs: {read: [/workdir], write: [/workdir/out]}
  determinism_tier: side-effect
"""


def r_cache_tier(x):
    d = x.w / "sepack"
    d.mkdir()
    (d / "soyapack.yaml").write_text(SIDE_EFFECT_PACK)
    return x.cli("pack", "run", str(d), "--rootfs", str(x.w), "--cache=allow-upstream")


def _fake_entries(x, *keys):
    store = x.w / "store"
    for k in keys:
        (store / k[:2] / k).mkdir(parents=True)
    return store


def r_cache_show_ambiguous(x):
    store = _fake_entries(x, "abcd" + "0" * 60, "abcd" + "1" * 60)
    return x.cli("cache", "show", "abcd", "--cache-dir", str(store), root=False)


def r_cache_prune_failed(x):
    store = x.w / "rostore"
    (store / "tmp" / "junk").mkdir(parents=True)  # not a temp dir of ours: prune removes it
    subprocess.run(["mount", "--bind", str(store), str(store)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(store)], check=True)
        return x.cli("cache", "prune", "--cache-dir", str(store), root=False)
    finally:
        subprocess.run(["umount", str(store)], check=True)


def r_cache_show_corrupt(x):
    store = _fake_entries(x, "abcd" + "0" * 60)  # no entry.json: partial
    return x.cli("cache", "show", "abcd" + "0" * 60, "--cache-dir", str(store), root=False)

RECIPES = {
    # command line
    "cli-no-command": lambda x: x.cli(),
    "cli-unknown-command": lambda x: x.cli("frobnicate"),
    "cli-missing-arg": lambda x: x.cli("start"),
    "cli-bad-option": lambda x: x.cli("list", "extra-word"),
    "cli-bad-log-format": lambda x: x.cli("--log-format", "xml", "list"),
    "cli-log-file": lambda x: x.cli("--log", str(x.w / "no-dir" / "x.log"), "list"),
    "cli-ps-no-id": lambda x: x.cli("ps"),
    "cli-exec-no-id": lambda x: x.cli("exec"),
    "cli-update-number": lambda x: x.cli("update", "--memory", "lots", "cmt-x"),
    "cli-events-interval": lambda x: x.cli("events", "--interval", "soon", "cmt-x"),
    "cli-events-interval-positive": lambda x: x.cli("events", "--interval", "0s", "cmt-x"),
    "cli-spec-exists": r_spec_exists,
    "cli-signal-unknown": lambda x: x.cli("kill", "cmt-x", "SIGBOGUS"),
    "cli-signal-empty": lambda x: x.cli("kill", "cmt-x", ""),
    # ids and state
    "id-chars": lambda x: x.cli("state", "bad!id"),
    "id-dots": lambda x: x.cli("state", ".."),
    "id-dotdot": lambda x: x.cli("state", "a..b"),
    "id-long": lambda x: x.cli("state", "a" * 1025),
    "id-exists": r_id_exists,
    "not-exist": lambda x: x.cli("state", "cmt-missing"),
    "state-corrupt": r_state_corrupt,
    "state-enospc": r_state_enospc,
    "state-mkdir": r_state_mkdir,
    # lifecycle
    "start-stopped": r_start_stopped,
    "start-running": r_start_running,
    "start-creating": r_start_creating,
    "start-exec-failed": r_start_exec_failed,
    "kill-not-running": lambda x: x.rt.kill(x.stopped(), "KILL"),
    "delete-running": r_delete_running,
    "pause-not-running": lambda x: x.cli("pause", x.stopped()),
    "resume-not-paused": lambda x: x.cli("resume", x.running()),
    "update-stopped": lambda x: x.cli("update", "--memory", "100000000", x.stopped()),
    "update-resources": r_update_resources,
    "update-file": lambda x: x.cli("update", "--resources", str(x.w / "no-such.json"), x.running()),
    "ps-failed": lambda x: x.cli("ps", x.running(), "--no-such-ps-option"),
    "events-stopped": lambda x: x.cli("events", "--stats", x.stopped()),
    "exec-stopped": lambda x: x.cli("exec", x.stopped(), "/bin/true"),
    "exec-paused": r_exec_paused,
    "exec-no-command": lambda x: x.cli("exec", x.running()),
    "exec-env": lambda x: x.cli("exec", "--env", "NOEQUALS", x.running(), "/bin/true"),
    "exec-user": lambda x: x.cli("exec", "--user", "1:2:3", x.running(), "/bin/true"),
    "exec-user-int": lambda x: x.cli("exec", "--user", "alice", x.running(), "/bin/true"),
    "exec-process-file": r_exec_process_file,
    "exec-tty-detach": lambda x: x.cli("exec", "--tty", "--detach", x.running(), "/bin/sh"),
    "exec-console-notty": lambda x: x.cli("exec", "--console-socket", str(x.w / "c.sock"), x.running(),
                                          "/bin/true"),
    # config.json
    "cfg-bundle": lambda x: x.cli("create", "--bundle", str(x.w / "no-bundle"), x.rt.new_id()),
    "cfg-missing": r_cfg_missing,
    "cfg-pack-name-alone": lambda x: x.cfg(lambda b: b.config.setdefault("annotations", {}).__setitem__(
        "org.soyaos.comet.pack", "p@1.0.0")),
    "cfg-annotation-typo": lambda x: x.cfg(lambda b: b.config.setdefault("annotations", {}).__setitem__(
        "org.soyaos.comet.capabilites", '{"egress":[]}')),
    "cfg-json": lambda x: x.cfg(lambda b: b.write_raw('{"ociVersion": ')),
    "cfg-type": lambda x: x.cfg(_set("process.args", "notalist")),
    "cfg-version": lambda x: x.cfg(_set("ociVersion", "2.0.0")),
    "cfg-version-semver": lambda x: x.cfg(_set("ociVersion", "1.x")),
    "cfg-process": lambda x: x.cfg(_del("process")),
    "cfg-root-path": lambda x: x.cfg(_set("root.path", "")),
    "cfg-args": lambda x: x.cfg(lambda b: b.args()),
    "cfg-cwd": lambda x: x.cfg(lambda b: b.cwd("relative")),
    "cfg-rlimit-type": lambda x: x.cfg(lambda b: b.rlimit("RLIMIT_BOGUS", 1, 1)),
    "cfg-rlimit-dup": lambda x: x.cfg(lambda b: b.process.__setitem__(
        "rlimits", [{"type": "RLIMIT_NOFILE", "soft": 1, "hard": 1}] * 2)),
    "cfg-rlimit-order": lambda x: x.cfg(lambda b: b.rlimit("RLIMIT_NOFILE", 10, 5)),
    "cfg-hook-path": lambda x: x.cfg(lambda b: b.hook("prestart", "relative/hook")),
    "cfg-hook-timeout": lambda x: x.cfg(lambda b: b.hook("prestart", "/bin/true", timeout=0)),
    "cfg-ns-type": lambda x: x.cfg(lambda b: b.linux["namespaces"].append({"type": "bogus"})),
    "cfg-ns-dup": lambda x: x.cfg(lambda b: b.linux["namespaces"].append({"type": "pid"})),
    "cfg-ns-path": lambda x: x.cfg(lambda b: b.add_namespace("network", "relative/ns")),
    "cfg-maps-no-userns": lambda x: x.cfg(_set("linux.uidMappings", [{"containerID": 0, "hostID": 1, "size": 1}])),
    "cfg-userns-no-maps": lambda x: x.cfg(_userns_without_maps),
    "cfg-map-size": lambda x: x.cfg(lambda b: (b.userns(), b.linux["uidMappings"][0].__setitem__("size", 0))),
    "cfg-timens": lambda x: x.cfg(_set("linux.timeOffsets", {"monotonic": {"secs": 1}})),
    "cfg-device-type": lambda x: x.cfg(lambda b: b.add_device("/dev/x", "x", 1, 3, allow=False)),
    "cfg-device-rule-type": lambda x: x.cfg(lambda b: b.resources(devices=[{"allow": True, "type": "x"}])),
    "cfg-device-access": lambda x: x.cfg(lambda b: b.resources(devices=[{"allow": True, "type": "c",
                                                                          "access": "xyz"}])),
    "cfg-sysctl-netns": lambda x: x.cfg(_sysctl_no_netns),
    "cfg-sysctl-global": lambda x: x.cfg(lambda b: b.sysctls({"vm.swappiness": "1"})),
    "cfg-masked": lambda x: x.cfg(lambda b: b.masked_paths(["relative"])),
    "cfg-propagation": lambda x: x.cfg(lambda b: b.rootfs_propagation("sideways")),
    "cfg-personality": lambda x: x.cfg(_set("linux.personality", {"domain": "LINUX64"})),
    "cfg-hostname": lambda x: x.cfg(lambda b: (b.remove_namespace("uts"), b.hostname("h"))),
    "cfg-tty-no-socket": lambda x: x.cfg(lambda b: b.terminal(True)),
    "cfg-socket-no-tty": lambda x: x.cfg(lambda b: None, "--console-socket", str(x.w / "c.sock")),
    "cfg-systemd": lambda x: x.cfg(lambda b: None, global_args=["--systemd-cgroup"]),
    "rootless-limit-no-cgroup": lambda x: x.cfg(lambda b: b.resources(memory={"limit": 64 << 20}),
                                                global_args=["--cgroup-manager", "disabled"]),
    # planning
    "plan-rootfs": lambda x: x.cfg(_set("root.path", "no-such-rootfs")),
    "plan-iopriority": lambda x: x.cfg(_set("process.ioPriority", {"class": "IOPRIO_CLASS_BE", "priority": 9})),
    "plan-scheduler": lambda x: x.cfg(_set("process.scheduler", {"policy": "SCHED_FIFO"})),
    "plan-affinity": lambda x: x.cfg(_set("process.execCPUAffinity", {"final": "1-0"})),
    "plan-mempolicy": lambda x: x.cfg(_set("linux.memoryPolicy", {"mode": "MPOL_BIND", "nodes": ""})),
    "plan-intelrdt": lambda x: x.cfg(_set("linux.intelRdt", {"closID": "x"})),
    "plan-mnt-ns": lambda x: x.cfg(lambda b: b.userns().remove_namespace("mount")),
    "plan-mnt-ns-propagation": lambda x: x.cfg(
        lambda b: (_set("linux.rootfsPropagation", "shared")(b), b.remove_namespace("mount"))),
    "plan-mount-dest": lambda x: x.cfg(lambda b: b.add_mount("rel", "tmpfs", "tmpfs")),
    "plan-mount-source": lambda x: x.cfg(lambda b: b.add_mount("/mnt/x", "bind", None, ["bind"])),
    "plan-mount-type": lambda x: x.cfg(lambda b: b.add_mount("/mnt/x", None, "tmpfs", [])),
    "plan-idmap-bind": lambda x: x.cfg(lambda b: b.add_mount("/mnt/x", "tmpfs", "tmpfs", ["idmap"])),
    "plan-idmap-both": lambda x: x.cfg(lambda b: _idmap(b, uid=[_m(0, 1000)])),
    "plan-idmap-size": lambda x: x.cfg(lambda b: _idmap(b, [_m(0, 1000, 0)], [_m(0, 1000)])),
    "plan-idmap-range": lambda x: x.cfg(lambda b: _idmap(b, [_m(4294967290, 0, 10)], [_m(0, 1)])),
    "plan-idmap-none": lambda x: x.cfg(lambda b: b.add_mount("/mnt/x", "bind", "/tmp", ["bind", "idmap"])),
    "idmap-open-tree": lambda x: x.cfg(lambda b: _idmap(b, [_m(0, 1)], [_m(0, 1)], src="/nonexistent-src")),
    "idmap-setattr": lambda x: x.cfg(lambda b: _idmap(b, [_m(0, 1)], [_m(0, 1)], src="/sys/kernel")),
    "netdev-name": lambda x: x.cfg(_set("linux.netDevices", {"lo": {"name": "a/b"}})),
    "netdev-netns": lambda x: x.cfg(lambda b: (b.remove_namespace("network"),
                                               _set("linux.netDevices", {"lo": {}})(b))),
    "netdev-missing": lambda x: x.cfg(_set("linux.netDevices", {"cmtnosuch0": {}})),
    "netdev-move": r_netdev_move,
    "plan-device-path": lambda x: x.cfg(lambda b: b.add_device("dev/x", "c", 1, 3, allow=False)),
    "plan-rlimit": lambda x: x.cfg(lambda b: b.rlimit("RLIMIT_NOFILE", 1 << 40, 1 << 40)),
    "plan-cgroups-path": lambda x: x.cfg(lambda b: b.cgroups_path("system.slice:x:y")),
    "plan-net-res": lambda x: x.cfg(lambda b: b.resources(network={"classID": 1})),
    "plan-rdma": lambda x: x.cfg(lambda b: b.resources(rdma={"mlx": {"hcaHandles": 1}})),
    "plan-cgroup-write": lambda x: x.cfg(lambda b: b.resources(cpu={"cpus": "999"})),
    "plan-memory-low": r_memory_low,
    "plan-ns-open": lambda x: x.cfg(lambda b: b.add_namespace("network", str(x.w / "no-ns"))),
    "plan-console": r_console,
    "plan-listener": lambda x: x.seccomp({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": str(x.w / "l.sock"),
                                          "syscalls": [{"names": ["getpid"], "action": "SCMP_ACT_NOTIFY"}]}),
    "plan-pidfile": r_pidfile,
    "plan-oom": lambda x: x.cfg(lambda b: b.oom_score_adj(5000)),
    # in the container
    "child-exec-enoent": lambda x: x.cfg(lambda b: b.args("/no/such/binary")),
    "child-exec-path": lambda x: x.cfg(lambda b: b.args("no-such-command")),
    "child-exec-dir": lambda x: x.cfg(lambda b: b.args("/etc")),
    "child-exec-perm": r_exec_perm,
    "child-cwd": lambda x: x.cfg(lambda b: b.cwd("/etc/passwd")),
    "child-pivot": r_child_pivot,
    "child-bind-source": lambda x: x.cfg(lambda b: b.bind(x.w / "no-src", "/mnt/x")),
    "child-mount": lambda x: x.cfg(lambda b: b.add_mount("/mnt/x", "nosuchfs", "none", [])),
    "child-mount-target": lambda x: x.cfg(lambda b: b.add_mount("/etc/passwd/x", "tmpfs", "tmpfs", [])),
    "child-tmpcopyup": lambda x: x.cfg(lambda b: b.add_mount("/mnt/q", "mqueue", "mqueue", ["tmpcopyup"])),
    "child-sysctl-open": lambda x: x.cfg(lambda b: b.sysctls({"net.ipv4.no_such_knob": "1"})),
    "child-sysctl-write": lambda x: x.cfg(lambda b: b.sysctls({"net.ipv4.ip_forward": "nan"})),
    "child-ns-join": lambda x: x.cfg(lambda b: b.add_namespace("network", "/proc/self/ns/pid")),
    "child-uid-map": r_uid_map,
    "child-become-root": r_become_root,
    "child-setgroups": lambda x: x.cfg(lambda b: b.user(0, 0, [4294967295])),
    "child-mknod": lambda x: x.cfg(lambda b: b.add_device("/dev/zz", "c", -1, 5)),
    # hooks
    "hook-exit": lambda x: x.cfg(lambda b: b.hook("prestart", x.script("h.sh", "exit 4"))),
    "hook-signal": lambda x: x.cfg(lambda b: b.hook("createRuntime", "/bin/sh", ["sh", "-c", "kill -9 $$"])),
    "hook-timeout": lambda x: x.cfg(lambda b: b.hook("prestart", "/bin/sleep", ["sleep", "30"], timeout=1)),
    "hook-exec": lambda x: x.cfg(lambda b: b.hook("createContainer", str(x.w / "no-hook"))),
    # seccomp
    "sc-action": lambda x: x.seccomp({"defaultAction": "SCMP_ACT_NOPE"}),
    "sc-errno": lambda x: x.seccomp({"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 5000}),
    "sc-empty-name": lambda x: x.rule(names=[""]),
    "sc-notify-write": lambda x: x.seccomp({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/tmp/x",
                                            "syscalls": [{"names": ["write"], "action": "SCMP_ACT_NOTIFY"}]}),
    "sc-notify-listener": lambda x: x.rule(action="SCMP_ACT_NOTIFY"),
    "sc-notify-default": lambda x: x.seccomp({"defaultAction": "SCMP_ACT_NOTIFY"}),
    "sc-arg-index": lambda x: x.rule(args=[{"index": 6, "value": 0, "op": "SCMP_CMP_EQ"}]),
    "sc-operator": lambda x: x.rule(args=[{"index": 0, "value": 0, "op": "SCMP_CMP_ABOUT"}]),
    "sc-flag": lambda x: x.seccomp({"defaultAction": "SCMP_ACT_ALLOW", "flags": ["SECCOMP_FILTER_FLAG_NOPE"]}),
    "sc-arch": lambda x: x.seccomp({"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_VAX"]}),
    # packs
    "pack-open": lambda x: x.cli("pack", "validate", str(x.w / "no-pack"), root=False),
    "pack-invalid": r_pack_invalid,
    "pack-bundle-o": lambda x: r_pack_bundle(x, "-o", str(x.w / "pb")),
    "pack-bundle-no-bundle": lambda x: r_pack_bundle(x),
    "pack-bundle-output-undeclared": lambda x: r_pack_bundle(x, "--bundle", str(x.w / "pb"), "--output", str(x.w / "po"), pack="bad-lint"),
    "pack-bundle-unwritable": r_pack_bundle_unwritable,
    "pack-dir-flag": lambda x: x.cli("pack", "run", str(REPO_DIR / "examples" / "summarize-inputs"),
                                     "--input", str(x.w / "no-such-input"), root=False),
    "pack-explain-args": lambda x: x.cli("pack", "explain", PACK, root=False),
    "pack-explain-host": lambda x: x.cli("pack", "explain", PACK, "--host", "api.test", root=False),
    "pack-explain-port": lambda x: x.cli("pack", "explain", PACK, "--host", "api.test:0", root=False),
    "pack-explain-proto": lambda x: x.cli("pack", "explain", PACK, "--host", "api.test:443:gopher", root=False),
    # the pack run cache
    "cache-mode": lambda x: x.cli("pack", "run", PACK, "--cache=always", root=False),
    "cache-tier": r_cache_tier,
    "cache-show-missing": lambda x: x.cli("cache", "show", "0123abcd", "--cache-dir", str(x.w / "store"),
                                          root=False),
    "egress-resolver-taken": r_egress_resolver_taken,
    "sc-too-big": r_sc_too_big,
    "start-init-exited": r_start_init_exited,
    "exec-notify": r_exec_notify,
    "state-lock": r_state_lock,
    "egress-ruleset": r_egress_ruleset,
    "egress-dns-upstream": lambda x: x.cli("run", "--dns-upstream", "10.0.0.1:dns", "-b", ".", "c1"),
    "cache-show-ambiguous": r_cache_show_ambiguous,
    "cache-show-corrupt": r_cache_show_corrupt,
    "cache-prune-failed": r_cache_prune_failed,
    "cache-prune-size": lambda x: x.cli("cache", "prune", "--max-size", "lots", "--cache-dir", str(x.w),
                                        root=False),
    # failures that cannot be caused from outside on a sane host: test-only
    # faults (docs/reliability.md "Fault points")
    "start-fifo-closed": r_start_fifo_closed,
    "freeze-timeout": r_freeze_timeout,
    "no-freezer": r_no_freezer,
    "plan-socketpair": lambda x: x.cfg(lambda b: None, env=fault("socketpair-emfile")),
    "plan-clone": lambda x: x.cfg(lambda b: None, env=fault("clone3-eagain")),
    "plan-trampoline": lambda x: x.cfg(lambda b: None, env=fault("memfd-enosys")),
    "plan-sync": lambda x: x.cfg(lambda b: None, env=fault("sync-econnreset")),
    "plan-sync-order": lambda x: x.cfg(lambda b: None, env=fault("sync-out-of-order")),
    "child-seccomp-load": r_child_seccomp_load,
    "child-dev-null": r_child_dev_null,
    "child-other": r_child_other,
    "sc-internal": lambda x: x.cfg(lambda b: b.seccomp(SECCOMP_ONE), env=fault("seccomp-export-enomem")),
    "pack-compile-abs": r_pack_compile_abs,
}

# rows whose message comes after a usage text on stderr
MULTI_LINE = {"cli-no-command", "ps-failed"}

ROWS = parse_table()


def test_table_and_recipes_agree():
    ids = [r["id"] for r in ROWS]
    assert len(ids) == len(set(ids)), "duplicate ids in docs/errors.md"
    kinds = ("recipe", "fault", "internal", "untested", "rootless")
    assert all(r["test"] in kinds for r in ROWS), [r for r in ROWS if r["test"] not in kinds]
    # rows only an ordinary user sees are triggered by the rootless suite
    rootless_suite = "".join(p.read_text()
                             for p in sorted((REPO_DIR / "integration" / "rootless").glob("*.py")))
    missing = [r["id"] for r in ROWS
               if r["test"] == "rootless" and f"errors.md: {r['id']}" not in rootless_suite]
    assert missing == [], f"rows marked rootless that the rootless suite does not trigger: {missing}"
    with_recipe = {r["id"] for r in ROWS if r["test"] in ("recipe", "fault")}
    assert with_recipe - set(RECIPES) == set(), "rows marked recipe without a recipe"
    assert set(RECIPES) - with_recipe == set(), "recipes for rows not marked recipe (or missing rows)"
    skipped = [r["id"] for r in ROWS if r["test"] in ("internal", "untested")]
    assert skipped == [], f"every row is triggered (recipe or fault); not: {skipped}"


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_error_row(harness, row):
    if row["test"] not in ("recipe", "fault"):
        pytest.skip(f"{row['test']}: {row['todo']}")
    res = RECIPES[row["id"]](X(harness))
    pattern = template_regex(row["message"])
    lines = [ln.strip() for ln in res.error.strip().splitlines() if ln.strip()]
    assert res.rc == row["exit"], f"{row['id']}: exit {res.rc}, table says {row['exit']}: {res!r}"
    assert lines, f"{row['id']}: nothing on stderr: {res!r}"
    if row["id"] not in MULTI_LINE:
        assert len(lines) == 1, f"{row['id']}: not one line: {lines}"
    assert any(pattern.fullmatch(ln) for ln in lines), \
        f"{row['id']}: no line matches {row['message']!r}: {lines}"
