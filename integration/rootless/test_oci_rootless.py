"""The OCI verbs as an ordinary user (issue 24, docs/rootless.md): a
`spec --rootless` bundle through create/start/state/exec/ps/pause/kill/
delete/run, the cgroup rule (a delegated cgroup2 subtree, or none recorded
in state and limits refused with exit 125), ID mappings through newuidmap,
a host that refuses user namespaces, and rootless podman with
--runtime comet-runtime. Each test checks that the user has no process
left and an empty state dir.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from lib import config as cfg
from lib.rootless import OrdinaryUser

pytestmark = pytest.mark.comet_only

RT = str(cfg.RUNTIME)
CG2 = Path("/sys/fs/cgroup/unified")
TOOLS = Path(__file__).resolve().parent.parent / "tools"


@pytest.fixture(scope="module")
def user():
    # newuidmap and rootless podman need the setuid helpers to work.
    with OrdinaryUser(setuid_helpers=True) as u:
        yield u


def make_rootfs(user: OrdinaryUser, rel: str) -> Path:
    root = user.make_dir(rel)
    (root / "bin").mkdir(exist_ok=True)
    shutil.copy2(cfg.BUSYBOX, root / "bin" / "busybox")
    for applet in ("sh", "true", "sleep", "cat", "id", "echo", "ls"):
        (root / "bin" / applet).symlink_to("busybox")
    for d in ("proc", "sys", "dev", "etc", "tmp"):
        (root / d).mkdir(exist_ok=True)
    subprocess.run(["chown", "-R", f"{user.uid}:{user.gid}", str(root)], check=True)
    return root


def bundle(user: OrdinaryUser, args: list[str], edit=None) -> Path:
    """A `spec --rootless` bundle made by the user, ARGS as its process."""
    rel = f"b-{secrets.token_hex(3)}"
    make_rootfs(user, f"{rel}/rootfs")
    b = user.home / rel
    res = user.run([RT, "spec", "--rootless", "--bundle", str(b)])
    assert res.returncode == 0, res.stderr
    conf = json.loads((b / "config.json").read_text())
    conf["process"]["terminal"] = False
    conf["process"]["args"] = args
    if edit:
        edit(conf)
    (b / "config.json").write_text(json.dumps(conf))
    return b


def rt(user: OrdinaryUser, *args, bundle_dir: Path | None = None, wrap=None, timeout=30):
    argv = [RT, *[str(a) for a in args]]
    return user.run(argv if wrap is None else wrap + argv,
                    cwd=str(bundle_dir) if bundle_dir else None, timeout=timeout)


class Done:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def detached(popen, argv, **kw) -> Done:
    """create and run -d: the container keeps the runtime's stdio, so it
    goes to files (a pipe would stay open while the container runs)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, **kw)
        rc = p.wait(timeout=30)
        out.seek(0)
        err.seek(0)
        return Done(rc, out.read().decode(), err.read().decode())


def rt_detached(user: OrdinaryUser, *args, bundle_dir: Path | None = None) -> Done:
    return detached(user.popen, [RT, *[str(a) for a in args]],
                    cwd=str(bundle_dir) if bundle_dir else None)


def state_dir(user: OrdinaryUser) -> Path:
    return user.runtime_dir / "comet-runtime"


def live_pids(user: OrdinaryUser) -> list[int]:
    """The user's processes but zombies: a container's init, orphaned when
    create exited, is reaped by this machine's PID 1, which may take a while."""
    out = []
    for pid in user.pids():
        try:
            if "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text():
                out.append(pid)
        except OSError:
            pass
    return out


# The seccomp program cache (a cache, kept across runs, in the runtime dir a
# sandbox hides) is no container's state.
KEPT = {"cache", ".events@"}  # .events@: the kept events of the last runs (docs/events.md)


def assert_nothing_left(user: OrdinaryUser) -> None:
    left = [p.name for p in state_dir(user).iterdir() if p.name not in KEPT] \
        if state_dir(user).exists() else []
    assert left == [], f"state left in {state_dir(user)}: {left}"
    # delete sends SIGKILL to the init and the helpers (the reporter): give a
    # loaded machine a moment to finish their exits.
    deadline = time.monotonic() + 5
    while live_pids(user) and time.monotonic() < deadline:
        time.sleep(0.05)
    left_pids = live_pids(user)
    assert left_pids == [], [Path(f"/proc/{p}/cmdline").read_bytes()[:80] for p in left_pids]


def one_line(stderr: str) -> str:
    lines = [l for l in stderr.splitlines() if l.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


# -- spec --rootless -----------------------------------------------------------

def test_spec_rootless_is_runcs(user):
    d = user.make_dir("spec")
    res = user.run([RT, "spec", "--rootless"], cwd=str(d))
    assert res.returncode == 0, res.stderr
    conf = json.loads((d / "config.json").read_text())
    lx = conf["linux"]
    assert [n["type"] for n in lx["namespaces"]] == ["pid", "ipc", "uts", "mount", "user"]
    assert lx["uidMappings"] == [{"containerID": 0, "hostID": user.uid, "size": 1}]
    assert lx["gidMappings"] == [{"containerID": 0, "hostID": user.gid, "size": 1}]
    assert "resources" not in lx
    mounts = {m["destination"]: m for m in conf["mounts"]}
    assert mounts["/sys"] == {"destination": "/sys", "type": "none", "source": "/sys",
                              "options": ["rbind", "nosuid", "noexec", "nodev", "ro"]}
    assert not any(o.startswith(("gid=", "uid=")) for m in conf["mounts"] for o in m.get("options", []))
    # The same spec runc writes for this user.
    if shutil.which("runc"):
        r = user.make_dir("spec-runc")
        assert user.run(["runc", "spec", "--rootless"], cwd=str(r)).returncode == 0
        assert json.loads((r / "config.json").read_text()) == conf


# -- the verbs, no cgroup ------------------------------------------------------

def test_verbs_without_cgroup(user):
    b = bundle(user, ["sleep", "100"])
    cid = "v" + secrets.token_hex(3)
    try:
        res = rt_detached(user, "create", cid, bundle_dir=b)
        assert res.returncode == 0, res.stderr
        st = json.loads(rt(user, "state", cid).stdout)
        assert st["status"] == "created"
        assert st["org.soyaos.comet.rootless"]["cgroup"] == "none (not delegated)"
        # runc's owner: the user's name (root's containers: "")
        assert st["owner"] == user.name, st
        listed = json.loads(rt(user, "list", "--format", "json").stdout)
        assert [(e["id"], e["owner"]) for e in listed] == [(cid, user.name)], listed
        assert rt(user, "start", cid).returncode == 0
        ex = rt(user, "exec", cid, "id")
        assert ex.returncode == 0, ex.stderr
        assert ex.stdout.startswith("uid=0(") or ex.stdout.startswith("uid=0 "), ex.stdout
        um = rt(user, "exec", cid, "cat", "/proc/self/uid_map").stdout.split()
        assert um == ["0", str(user.uid), "1"]
        ps = rt(user, "ps", "--format", "json", cid)
        assert ps.returncode == 0 and json.loads(ps.stdout) == [st["pid"]], ps.stdout + ps.stderr
        pause = rt(user, "pause", cid)
        assert pause.returncode != 0
        assert "no cgroup to freeze" in one_line(pause.stderr)
        upd = rt(user, "update", "--memory", str(64 << 20), cid)
        assert upd.returncode != 0
        assert "linux.resources.memory needs a cgroup" in one_line(upd.stderr)
        assert rt(user, "kill", cid, "KILL").returncode == 0
        assert rt(user, "delete", "--force", cid).returncode == 0
    finally:
        rt(user, "delete", "--force", cid)
    assert_nothing_left(user)


def test_pack_fs_events_off_recorded_enforcement_kept(user):
    """fs.read/fs.write events need CAP_BPF: as a user, create warns once and
    state records it; the pack's confinement layers are still there."""
    def caps(conf):
        conf["annotations"] = {"org.soyaos.comet.capabilities":
                               json.dumps({"egress": [], "determinism_tier": "read-only"})}
    b = bundle(user, ["sh", "-c", "read -t 5 _ < /dev/ptmx; exit 0"], caps)
    cid = "f" + secrets.token_hex(3)
    try:
        res = rt_detached(user, "create", cid, bundle_dir=b)
        assert res.returncode == 0, res.stderr
        assert res.stderr.count("fs.read/fs.write violation events are off") == 1, res.stderr
        assert f"events are off for {cid}: no CAP_BPF" in res.stderr, res.stderr
        st = json.loads(rt(user, "state", cid).stdout)
        assert st["org.soyaos.comet.rootless"]["fs-events"] == "off (no CAP_BPF)"
        assert "landlock:exec" in st["org.soyaos.comet.layers"], st
    finally:
        rt(user, "delete", "--force", cid)
    assert_nothing_left(user)


def test_run_exit_status_and_default_root(user):
    b = bundle(user, ["sh", "-c", "exit 3"])
    res = rt(user, "run", "r" + secrets.token_hex(3), bundle_dir=b)
    assert res.returncode == 3, res.stderr
    assert state_dir(user).is_dir() and oct(state_dir(user).stat().st_mode & 0o777) == "0o700"
    assert_nothing_left(user)


def test_memory_limit_refused_without_cgroup(user):
    def limit(conf):
        conf["linux"]["resources"] = {"memory": {"limit": 64 << 20}}
    b = bundle(user, ["true"], limit)
    res = rt(user, "run", "m" + secrets.token_hex(3), bundle_dir=b)
    assert res.returncode == 125, res.stderr
    line = one_line(res.stderr)
    assert "linux.resources.memory needs a cgroup" in line and "none (not delegated)" in line
    assert_nothing_left(user)


# -- a delegated cgroup2 subtree -----------------------------------------------

@pytest.fixture
def delegated(user):
    """What a delegating manager (systemd's Delegate=yes) gives the user: a
    cgroup2 subtree it owns, and its session (where its processes run)
    inside it."""
    if not (CG2 / "cgroup.procs").exists():
        pytest.skip("no cgroup2 hierarchy at /sys/fs/cgroup/unified")
    top = CG2 / f"comet-rl-{secrets.token_hex(3)}"
    session = top / "session"
    session.mkdir(parents=True)
    for d in (top, session):
        for f in ("", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"):
            os.chown(d / f if f else d, user.uid, user.gid)
    wrap = ["sh", "-c", f'echo $$ > {session}/cgroup.procs && exec "$@"', "sh"]
    try:
        yield top, wrap
    finally:
        user.kill_processes()
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            d.rmdir()
        top.rmdir()


def run_in_session(user, wrap, argv, cwd=None):
    # Root places the user's process in its session (cgroup.procs of the
    # common ancestor is root's), then it drops to the user.
    return subprocess.run(wrap + user.argv(argv), env=user.env(), cwd=cwd or str(user.home),
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("where", ["cgroupsPath", "own"])
def test_verbs_in_delegated_cgroup(user, delegated, where):
    top, wrap = delegated
    cid = "d" + secrets.token_hex(3)
    rel = f"/{top.name}/ctr-{cid}"

    def path(conf):
        if where == "cgroupsPath":
            conf["linux"]["cgroupsPath"] = rel
    b = bundle(user, ["sleep", "100"], path)
    expect = CG2 / rel.lstrip("/") if where == "cgroupsPath" else top / "session" / cid

    def r(*args):
        return run_in_session(user, wrap, [RT, *args], cwd=str(b))
    try:
        res = detached(lambda argv, **kw: subprocess.Popen(wrap + user.argv(argv), env=user.env(), **kw),
                       [RT, "run", "-d", cid], cwd=str(b))
        assert res.returncode == 0, res.stderr
        st = json.loads(r("state", cid).stdout)
        assert st["org.soyaos.comet.rootless"]["cgroup"] == f"{expect} (delegated)"
        assert str(st["pid"]) in (expect / "cgroup.procs").read_text().split()
        cg = r("exec", cid, "cat", "/proc/self/cgroup").stdout
        assert f"0::/{expect.relative_to(CG2)}" in cg, cg
        assert r("pause", cid).returncode == 0
        assert json.loads(r("state", cid).stdout)["status"] == "paused"
        assert (expect / "cgroup.freeze").read_text().strip() == "1"
        assert r("resume", cid).returncode == 0
        assert json.loads(r("state", cid).stdout)["status"] == "running"
        assert r("kill", "--all", cid, "KILL").returncode == 0
        assert r("delete", "--force", cid).returncode == 0
        assert not expect.exists()
    finally:
        r("delete", "--force", cid)
    assert_nothing_left(user)


def test_delegated_cgroup_without_the_controller_refuses_the_limit(user, delegated):
    # errors.md: rootless-limit-controller
    top, wrap = delegated
    if "pids" in (top / "session" / "cgroup.subtree_control").read_text().split():
        pytest.skip("the session gives its children pids")

    def limit(conf):
        conf["linux"]["resources"] = {"pids": {"limit": 50}}
    b = bundle(user, ["true"], limit)
    res = run_in_session(user, wrap, [RT, "run", "p" + secrets.token_hex(3)], cwd=str(b))
    assert res.returncode == 125, res.stderr
    assert "linux.resources.pids needs the pids controller" in one_line(res.stderr)
    assert list((top / "session").iterdir()) and not [p for p in (top / "session").iterdir() if p.is_dir()]
    assert_nothing_left(user)


# -- ID mappings ---------------------------------------------------------------

def test_subordinate_ranges_through_newuidmap(user):
    def maps(conf):
        for key, own in (("uidMappings", user.uid), ("gidMappings", user.gid)):
            conf["linux"][key] = [{"containerID": 0, "hostID": own, "size": 1},
                                  {"containerID": 1, "hostID": user.subid, "size": 1000}]
    b = bundle(user, ["cat", "/proc/self/uid_map", "/proc/self/gid_map"], maps)
    res = rt(user, "run", "u" + secrets.token_hex(3), bundle_dir=b)
    assert res.returncode == 0, res.stderr
    rows = [l.split() for l in res.stdout.splitlines()]
    want = [["0", str(user.uid), "1"], ["1", str(user.subid), "1000"]]
    assert rows == want + [["0", str(user.gid), "1"], ["1", str(user.subid), "1000"]]
    assert_nothing_left(user)


def test_range_not_granted_is_refused_in_one_line(user):
    # errors.md: rootless-idmap-refused
    def maps(conf):
        conf["linux"]["uidMappings"] = [{"containerID": 0, "hostID": user.uid, "size": 1},
                                        {"containerID": 1, "hostID": 100, "size": 10}]
    b = bundle(user, ["true"], maps)
    res = rt(user, "run", "n" + secrets.token_hex(3), bundle_dir=b)
    assert res.returncode == 1
    line = one_line(res.stderr)
    assert "linux.uidMappings" in line and "newuidmap refused" in line, line
    assert_nothing_left(user)


def two_ranges(user):
    def maps(conf):
        for key, own in (("uidMappings", user.uid), ("gidMappings", user.gid)):
            conf["linux"][key] = [{"containerID": 0, "hostID": own, "size": 1},
                                  {"containerID": 1, "hostID": 400000, "size": 10}]
    return maps


def test_no_newuidmap_is_one_line(user):
    # errors.md: rootless-idmap-helper (COMET_FAULT: as on a host without uidmap)
    b = bundle(user, ["true"], two_ranges(user))
    res = user.run([RT, "run", "h" + secrets.token_hex(3)], cwd=str(b),
                   env={"COMET_FAULT": "idmap-no-helper"})
    assert res.returncode == 1
    line = one_line(res.stderr)
    assert "linux.uidMappings maps more than this user's own id, which needs newuidmap: " \
           "not found (install the uidmap package)" in line, line
    assert_nothing_left(user)


def test_no_subordinate_range_is_one_line():
    # errors.md: rootless-idmap-subid
    with OrdinaryUser(setuid_helpers=True, subids=False) as bare:
        b = bundle(bare, ["true"], two_ranges(bare))
        res = rt(bare, "run", "s" + secrets.token_hex(3), bundle_dir=b)
        assert res.returncode == 1
        line = one_line(res.stderr)
        assert f"/etc/subuid has no range for uid {bare.uid}" in line, line
        assert_nothing_left(bare)


# -- a host that refuses user namespaces -----------------------------------------

@pytest.mark.parametrize("path", ["clone", "two-stage"])
def test_userns_refused_names_the_cause(user, path):
    # errors.md: rootless-userns
    # two-stage (a time namespace): the child unshares the user namespace
    # itself; before, that said `unshare namespaces: EPERM`
    def timens(conf):
        if path == "two-stage":
            conf["linux"]["namespaces"].append({"type": "time"})
    tmp = Path(tempfile.mkdtemp(prefix="comet-deny-userns-"))
    try:
        os.chmod(tmp, 0o755)
        tool = tmp / "deny_userns"
        subprocess.run(["cc", "-O2", "-o", str(tool), str(TOOLS / "deny_userns.c")], check=True)
        b = bundle(user, ["true"], timens)
        if path == "two-stage":  # the control: it runs where user namespaces are allowed
            ok = rt(user, "run", "t" + secrets.token_hex(3), bundle_dir=b)
            assert ok.returncode == 0, ok.stderr
        wrap = [str(tool)] + (["--unshare-only"] if path == "two-stage" else [])
        res = rt(user, "run", "x" + secrets.token_hex(3), bundle_dir=b, wrap=wrap)
        assert res.returncode == 125, res.stderr
        line = one_line(res.stderr)
        assert "rootless: cannot create a user namespace (Operation not permitted)" in line, line
        assert "clone3" not in line
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert_nothing_left(user)


# -- rootless podman -------------------------------------------------------------

PACK_CAPS = json.dumps({"egress": [], "determinism_tier": "read-only"})
PODMAN_CONF = """[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "{home}/pm/events.log"
runtime_supports_json = ["crun", "runc", "comet-runtime"]
# podman 4.3 reads this key without the final s (containers/common's toml tag)
runtime_supports_nocgroup = ["crun", "comet-runtime"]
[engine.runtimes]
comet-runtime = ["{rt}"]
"""


@pytest.mark.skipif(not shutil.which("podman"), reason="podman is not installed")
def test_rootless_podman_run_exec_stop(user):
    pm = user.make_dir("pm")
    (pm / "containers.conf").write_text(PODMAN_CONF.format(home=user.home, rt=RT))
    rootfs = make_rootfs(user, "pm/rootfs")
    subprocess.run(["tar", "-C", str(rootfs), "-cf", str(pm / "rootfs.tar"), "."], check=True)
    os.chown(pm / "rootfs.tar", user.uid, user.gid)
    env = {"CONTAINERS_CONF": str(pm / "containers.conf")}
    base = ["podman", "--root", str(pm / "storage"), "--runroot", str(user.runtime_dir / "pm"),
            "--storage-driver", "vfs", "--runtime", "comet-runtime"]

    def podman(*args, timeout=90):
        return user.run(base + list(args), env=env, timeout=timeout)

    res = podman("import", "--change", 'CMD ["/bin/sh"]', str(pm / "rootfs.tar"), "localhost/bb:rl")
    assert res.returncode == 0, res.stderr
    res = podman("run", "--rm", "--network", "none", "localhost/bb:rl", "echo", "hi")
    assert (res.returncode, res.stdout.strip()) == (0, "hi"), res.stderr
    res = podman("run", "-d", "--name", "rl1", "--network", "none", "localhost/bb:rl",
                 "sleep", "100")
    assert res.returncode == 0, res.stderr
    try:
        ex = podman("exec", "rl1", "cat", "/proc/self/uid_map")
        assert ex.returncode == 0, ex.stderr
        # podman's user namespace: root is the user, the rest its subordinate range.
        assert ex.stdout.split()[:3] == ["0", str(user.uid), "1"], ex.stdout
        assert podman("stop", "-t", "1", "rl1").returncode == 0
        st = podman("inspect", "--format", "{{.State.Status}}", "rl1")
        assert st.stdout.strip() == "exited", st.stdout + st.stderr
    finally:
        podman("rm", "-f", "rl1")
    # --cgroups=disabled: comet-runtime gets --cgroup-manager disabled.
    res = podman("run", "--rm", "--cgroups=disabled", "--network", "none", "localhost/bb:rl",
                 "cat", "/proc/self/cgroup")
    assert res.returncode == 0, res.stderr
    # A pack's capabilities by annotation (docs/policy.md): the exec lock
    # refuses the shell's fork, the runtime's own init makes the status 3;
    # a clean command's status passes through.
    caps = '"org.soyaos.comet.capabilities=' + PACK_CAPS.replace('"', '""') + '"'
    for script, status in (("sleep 0; exit 0", 3), ("echo clean; exit 5", 5)):
        res = podman("run", "--rm", "--network", "none", "--annotation", caps,
                     "--annotation", "org.soyaos.comet.pack=rl-test@0.0.1", "localhost/bb:rl",
                     "sh", "-c", "read -t 0.2 _ < /dev/ptmx; " + script)
        assert res.returncode == status, res.stdout + res.stderr
        if status == 3:
            assert "can't fork" in res.stderr, res.stderr
    # docs/rootless.md's --annotation line, as written (issue 26, trap 1:
    # every engine example confines, read from the docs): it had a `{...}`
    # placeholder that no shell could run
    from engines import enginelib as el
    doc = (Path(__file__).resolve().parent.parent.parent / "docs" / "rootless.md").read_text()
    block = re.search(r"<!-- test: integration/rootless/test_oci_rootless.py runs the --annotation line -->\n"
                      r"```sh\n(.*?)```", doc, re.S).group(1)
    line = next(ln for ln in block.splitlines() if "--annotation" in ln).split("   #")[0]
    pack_dir = el.doc_pack_dir(user.make_dir("doc-pack"))
    for old, new in [("podman --runtime comet-runtime", " ".join(shlex.quote(a) for a in base)),
                     ("comet-runtime pack annotation ./engines-example", f"{shlex.quote(RT)} pack annotation {pack_dir}"),
                     (" IMAGE ", " localhost/bb:rl ")]:
        assert old in line, (old, line)
        line = line.replace(old, new)
    res = user.run(["bash", "-c", line], env=env, timeout=90)
    assert res.returncode == 3, res.stdout + res.stderr
    assert (user.home / ".local/share/comet-runtime/flags/engines-example@0.1.0.json").is_file()
    # the violation flagged the pack version, in the user's own data dir
    # (the runtime runs as uid 0 of podman's user namespace: its files are
    # the user's), and the user's `pack flags list` shows it
    flag = user.home / ".local" / "share" / "comet-runtime" / "flags" / "rl-test@0.0.1.json"
    assert flag.is_file() and flag.stat().st_uid == user.uid, \
        sorted(str(p) for p in user.home.rglob("flags*"))
    assert json.loads(flag.read_text())["count"] >= 1, flag.read_text()
    flags = user.run([RT, "pack", "flags", "list"])
    assert "rl-test@0.0.1" in flags.stdout, flags.stdout + flags.stderr
    # Only podman's own pause process (it holds its user namespace: catatonit
    # -P where catatonit is installed, else podman's own, "podman") is left,
    # once conmon has run the --rm cleanup it started. podman names it in
    # $XDG_RUNTIME_DIR/libpod/tmp/pause.pid.
    def left():
        pause = user.runtime_dir / "libpod" / "tmp" / "pause.pid"
        try:
            pause_pid = int(pause.read_text().strip())
        except (OSError, ValueError):
            pause_pid = -1
        out = []
        for p in live_pids(user):
            try:
                if p != pause_pid and \
                        not Path(f"/proc/{p}/cmdline").read_bytes().startswith(b"catatonit\0-P"):
                    out.append(p)
            except OSError:
                pass
        return out
    deadline = time.monotonic() + 20
    while left() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left() == [], [Path(f"/proc/{p}/cmdline").read_bytes()[:80] for p in left()]
    assert [p.name for p in (user.runtime_dir / "comet-runtime").iterdir()
            if p.name not in KEPT] == []
