"""Fail closed (issue 24; docs/rootless.md "Fail closed"): a confinement
layer the kernel cannot give is an error naming the layer and the reason,
exit 125, unless the user runs without it explicitly
(COMET_ALLOW_MISSING=LAYER). Tested as an ordinary user without changing
the host: integration/tools/deny_layer.c installs a seccomp filter around
the runtime that makes the layer's syscall fail as on a kernel without it
(landlock_create_ruleset: ENOSYS; seccomp with NEW_LISTENER: EINVAL).
Each test checks that the user has no process and no run state left."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lib import config as cfg  # noqa: E402
from lib import packs  # noqa: E402
from lib.rootless import SUBID_COUNT, OrdinaryUser  # noqa: E402

pytestmark = pytest.mark.comet_only

RT = str(cfg.RUNTIME)
TOOLS = Path(__file__).resolve().parents[1] / "tools"


@pytest.fixture(scope="module")
def user():
    with OrdinaryUser(setuid_helpers=True) as u:
        yield u


@pytest.fixture(scope="module")
def deny(tmp_path_factory):
    d = tmp_path_factory.mktemp("deny-layer")
    os.chmod(d, 0o755)
    tool = d / "deny_layer"
    subprocess.run(["cc", "-O2", "-o", str(tool), str(TOOLS / "deny_layer.c")], check=True)
    return tool


@pytest.fixture(scope="session")
def packprobe(session_dir) -> Path:
    return packs.build_packprobe(session_dir)


@pytest.fixture(scope="module")
def pack(user, packprobe):
    w = user.make_dir("pack")
    p, rootfs = packs.make_pack(w, packprobe)
    subprocess.run(["chown", "-R", f"{user.uid}:{user.gid}", str(w)], check=True)
    return p, rootfs


def pack_run(user, deny, layer, pack, *args, env=None):
    p, rootfs = pack
    wrap = [str(deny), layer] if layer else []
    return user.run(wrap + [RT, "pack", "run", str(p), "--rootfs", str(rootfs), "--no-cache",
                            "--", *args], env=env)


def sandbox(user, deny, layer, *cmd, env=None):
    ws = user.make_dir("ws")
    return user.run([str(deny), layer, RT, "sandbox", "--profile", "workspace", "--", *cmd],
                    cwd=str(ws), env=env)


def errors(stderr: str) -> list[str]:
    return [l for l in stderr.splitlines() if "level=error" in l]


def results(res) -> dict:
    return {d["op"]: d for d in (json.loads(l) for l in res.stdout.splitlines()
                                 if l.startswith("{") and '"op"' in l)}


def assert_nothing_left(user: OrdinaryUser) -> None:
    ids = {user.uid} | set(range(user.subid, user.subid + SUBID_COUNT))

    def procs():
        out = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                st = Path(f"/proc/{d}/status").read_text()
            except OSError:
                continue
            uid = int(next(l for l in st.splitlines() if l.startswith("Uid:")).split()[1])
            if uid in ids and "\nState:\tZ" not in st:
                out.append(d)
        return out
    deadline = time.monotonic() + 5
    while procs() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert procs() == []
    state = user.runtime_dir / "comet-runtime"
    # .events@: the kept events of the last runs (docs/events.md), on purpose
    left = [str(p.relative_to(state)) for p in state.rglob("*")
            if p.relative_to(state).parts[0] not in ("cache", ".events@") and p != state / "packs"] \
        if state.exists() else []
    assert left == [], left


LANDLOCK_LINE = ("layer landlock: this kernel has no Landlock (landlock_create_ruleset: ENOSYS; "
                 "Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)")
LISTENER_LINE = ("layer seccomp-listener: this kernel cannot make a seccomp user-notification "
                 "listener (seccomp SECCOMP_FILTER_FLAG_NEW_LISTENER: EINVAL; Linux 5.0 or "
                 "later has it)")


def test_the_filters_deny_what_they_say(user, deny):
    # the control: without the wrapper the layers work (every other suite),
    # with it the probe syscalls fail as on an old kernel
    probe = ("import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); "
             "r=l.syscall(444,0,0,1); print(r, ctypes.get_errno())")
    r = user.run([str(deny), "landlock", "/usr/bin/python3", "-c", probe])
    assert r.stdout.split() == ["-1", "38"], r  # ENOSYS
    probe = ("import ctypes; l=ctypes.CDLL(None,use_errno=True); "
             "r=l.syscall(317,1,8,0); print(r, ctypes.get_errno())")
    r = user.run([str(deny), "listener", "/usr/bin/python3", "-c", probe])
    assert r.stdout.split() == ["-1", "22"], r  # EINVAL
    r = user.run(["/usr/bin/python3", "-c", probe])
    assert r.stdout.split() == ["-1", "14"], r  # EFAULT: the kernel has the flag


def test_pack_run_without_landlock_is_125_naming_it(user, deny, pack):
    # errors.md: layer-missing
    res = pack_run(user, deny, "landlock", pack, "stdio")
    assert res.returncode == 125, (res.stdout, res.stderr)
    errs = errors(res.stderr)
    assert len(errs) == 1 and LANDLOCK_LINE in errs[0], res.stderr
    assert "the exec lock cannot hold" in errs[0] and "COMET_ALLOW_MISSING=landlock" in errs[0]
    assert results(res) == {}  # the agent never ran
    assert_nothing_left(user)


def test_sandbox_without_landlock_is_125_naming_it(user, deny):
    # before: the sandbox ran, silently without its Landlock write rules
    res = sandbox(user, deny, "landlock", "sh", "-c", "echo ran")
    assert res.returncode == 125, (res.stdout, res.stderr)
    assert "ran" not in res.stdout
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and LANDLOCK_LINE in lines[0], res.stderr
    assert_nothing_left(user)


def test_oci_run_of_a_pack_bundle_without_landlock_is_125(user, deny):
    rel = f"b-{secrets.token_hex(3)}"
    root = user.make_dir(f"{rel}/rootfs")
    (root / "bin").mkdir()
    shutil.copy2(cfg.BUSYBOX, root / "bin" / "busybox")
    (root / "bin" / "true").symlink_to("busybox")
    for d in ("proc", "sys", "dev", "etc", "tmp"):
        (root / d).mkdir()
    b = user.home / rel
    subprocess.run(["chown", "-R", f"{user.uid}:{user.gid}", str(b)], check=True)
    assert user.run([RT, "spec", "--rootless", "--bundle", str(b)]).returncode == 0
    conf = json.loads((b / "config.json").read_text())
    conf["process"].update(terminal=False, args=["/bin/true"])
    conf["annotations"] = {"org.soyaos.comet.capabilities":
                           json.dumps({"egress": [], "determinism_tier": "read-only"})}
    (b / "config.json").write_text(json.dumps(conf))
    res = user.run([str(deny), "landlock", RT, "run", "l" + secrets.token_hex(3)], cwd=str(b))
    assert res.returncode == 125, (res.stdout, res.stderr)
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and LANDLOCK_LINE in lines[0], res.stderr
    assert_nothing_left(user)


def test_pack_run_without_the_listener_is_125_naming_it(user, deny, pack):
    # before: exit 1 with "load the lock-down seccomp filter: Invalid argument"
    res = pack_run(user, deny, "listener", pack, "stdio")
    assert res.returncode == 125, (res.stdout, res.stderr)
    errs = errors(res.stderr)
    assert len(errs) == 1 and LISTENER_LINE in errs[0], res.stderr
    assert "COMET_ALLOW_MISSING=seccomp-listener" in errs[0]
    assert results(res) == {}
    assert_nothing_left(user)


def test_sandbox_cannot_run_without_the_listener_even_when_allowed(user, deny):
    # errors.md: layer-listener-needed
    # the workspace profile's unix-socket rule is enforced by the reporter
    for env in (None, {"COMET_ALLOW_MISSING": "seccomp-listener"}):
        res = sandbox(user, deny, "listener", "sh", "-c", "echo ran", env=env)
        assert res.returncode == 125, (res.stdout, res.stderr)
        lines = [l for l in res.stderr.splitlines() if l.strip()]
        assert len(lines) == 1 and LISTENER_LINE in lines[0], res.stderr
        assert "unix-socket rule is enforced through it: cannot run without it" in lines[0]
    assert_nothing_left(user)


def test_allowed_missing_landlock_runs_said_and_the_mounts_still_hold(user, deny, pack):
    env = {"COMET_ALLOW_MISSING": "landlock"}
    res = pack_run(user, deny, "landlock", pack, "write=/etc/passwd", env=env)
    assert res.returncode == 0, (res.stdout, res.stderr)
    assert results(res)["write"]["errno"] == "EROFS", res.stdout  # the read-only rootfs
    assert res.stderr.count("running without it (COMET_ALLOW_MISSING)") == 1, res.stderr
    assert "the exec lock holds no files" in res.stderr
    assert errors(res.stderr) == []
    # what the switch gives up: nothing holds the exec lock's files; the
    # exec is still reported (the reporter knows the list), exit 3
    res = pack_run(user, deny, "landlock", pack, "exec=/bin/busybox", env=env)
    assert "exec" not in results(res), res.stdout  # busybox ran in the probe's place
    assert res.returncode == 3, (res.stdout, res.stderr)
    assert_nothing_left(user)


def test_allowed_missing_listener_refuses_without_reporting(user, deny, pack):
    env = {"COMET_ALLOW_MISSING": "landlock,seccomp-listener"}
    res = pack_run(user, deny, "listener", pack, "exec=/bin/busybox", env=env)
    r = results(res)
    assert r["exec"]["errno"] == "EACCES", res.stdout  # Landlock's exec lock: still there
    assert res.returncode == 0, res.stderr  # nothing reported: no exit 3
    assert res.stderr.count("running without it (COMET_ALLOW_MISSING)") == 1, res.stderr
    assert_nothing_left(user)


def test_a_layer_the_kernel_has_is_applied_whatever_the_switch(user, pack):
    res = user.run([RT, "pack", "run", str(pack[0]), "--rootfs", str(pack[1]), "--no-cache",
                    "--", "exec=/bin/busybox"],
                   env={"COMET_ALLOW_MISSING": "landlock,seccomp-listener"})
    assert results(res)["exec"]["errno"] == "EACCES", res.stdout
    assert res.returncode == 3, res.stderr
    assert "COMET_ALLOW_MISSING" not in res.stderr
    assert_nothing_left(user)
