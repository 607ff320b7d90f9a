"""`comet-runtime sandbox` (docs/sandbox.md): what CMD sees from inside each
profile, config files and their precedence, protection of the runtime's own
files, exit status, and that nothing is left behind.

CMD is a Python probe (lib/sandbox.py) run with the host's /usr/bin/python3;
each check asserts the errno the probe saw. The workspace lives in the
test's scratch dir under /tmp, which every profile but devbox replaces with
a private tmpfs (the workspace itself is bound in)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lib import config as cfg
from lib.sandbox import (TcpListener, by_arg, probe_cmd, sandbox_argv, sandbox_env, sandbox_ids,
                         sandbox_leftovers)

pytestmark = pytest.mark.comet_only

USER_UID = 1000  # a non-root user to run as, through SUDO_UID (we are root)
USER_GID = 1000


def _user_exists() -> bool:
    try:
        import pwd

        pwd.getpwuid(USER_UID)
        return True
    except KeyError:
        return False


@pytest.fixture
def sbx(rt, workdir, ws):
    """sbx(*cmd, profile=, workspace=, env=, sudo=, runtime=) -> Result. The
    global config is COMET_SANDBOX_GLOBAL_CONFIG=<workdir>/global.yaml
    (absent unless a test writes it); after every call the state root must
    be empty again."""
    global_cfg = workdir / "global.yaml"

    def call(*cmd, profile=None, workspace=None, env=None, sudo=False, runtime=None, args=(),
             timeout=60):
        e = sandbox_env(global_cfg, HOME="/root")
        e.pop("XDG_CONFIG_HOME", None)
        if sudo:
            e.update(SUDO_UID=str(USER_UID), SUDO_GID=str(USER_GID), SUDO_USER="user")
        e.update(env or {})
        argv = sandbox_argv(cmd, ws=workspace or ws, profile=profile, args=args)
        # --debug: the log names the container id, for the leftover check
        if runtime:
            res = subprocess.run([str(runtime), "--root", str(rt.root), "--debug", *argv], env=e,
                                 capture_output=True, text=True, timeout=timeout)
            res.rc, res.out, res.err = res.returncode, res.stdout, res.stderr
            res.error = res.stderr
        else:
            res = rt(*argv, env=e, timeout=timeout, global_args=["--debug"])
        left = sandbox_leftovers(rt.root, sandbox_ids(res.err))
        assert not left, f"left behind by {argv[:6]}: {sorted(left)}"
        return res

    call.global_cfg = global_cfg
    return call


def test_workspace_profile_view(sbx, ws):
    (ws / "in.txt").write_text("hello")
    res = sbx(*probe_cmd("id", "read=in.txt", "write=out.txt", f"write={ws}/abs.txt",
                         "write=/etc/comet-sandbox-test", "write=/root/comet-sandbox-test",
                         "read=/etc/hostname", "write=/tmp/scratch", "read=/tmp/scratch",
                         "ls=/tmp", "ls=/run/comet-runtime", "write=/usr/comet-x"))
    assert res.rc == 0, res
    r = by_arg(res)
    me = r[("id", "")]["data"]
    assert me["cwd"] == str(ws)
    assert me["uid"] == 0 and me["groups"] in ([], [0]), me
    assert r[("read", "in.txt")]["data"] == "hello"
    assert r[("write", "out.txt")]["ok"] and r[("write", f"{ws}/abs.txt")]["ok"]
    assert (ws / "out.txt").read_text() == "x"  # the host's workspace, written
    for p in ("/etc/comet-sandbox-test", "/root/comet-sandbox-test", "/usr/comet-x"):
        assert r[("write", p)]["errno"] == "EROFS", r[("write", p)]
        assert not os.path.exists(p)
    assert r[("read", "/etc/hostname")]["ok"]
    # /tmp is private: writable, and only the workspace's path is in it
    assert r[("write", "/tmp/scratch")]["ok"] and not os.path.exists("/tmp/scratch")
    assert r[("ls", "/tmp")]["data"] == sorted([ws.parts[2], "scratch"]), r[("ls", "/tmp")]
    # the runtime's state is hidden
    assert r[("ls", "/run/comet-runtime")]["errno"] == "EACCES"


@pytest.mark.skipif(not _user_exists(), reason=f"no user {USER_UID} on this host")
def test_runs_as_the_sudo_user(sbx, ws):
    res = sbx(*probe_cmd("id", "write=mine.txt", f"write=/home/{'x'}", "write=/etc/x"),
              sudo=True)
    assert res.rc == 0, res
    r = by_arg(res)
    me = r[("id", "")]["data"]
    assert (me["uid"], me["gid"], me["groups"]) == (USER_UID, USER_GID, [])
    assert me["home"] != "/root"
    assert "SUDO_UID" in me["env"]  # the environment passes, minus the dangerous names
    assert r[("write", "mine.txt")]["ok"]
    assert (ws / "mine.txt").stat().st_uid == USER_UID
    assert r[("write", "/etc/x")]["errno"] == "EROFS"
    # $HOME outside the profile's write list
    res = sbx(*probe_cmd(f"write={me['home']}/comet-sandbox-test"), sudo=True)
    assert by_arg(res)[("write", f"{me['home']}/comet-sandbox-test")]["errno"] == "EROFS"


def test_dangerous_environment_is_dropped(sbx):
    res = sbx(*probe_cmd("id"), env={"LD_PRELOAD": "/nonexistent.so", "BASH_ENV": "/x",
                                     "SSH_AUTH_SOCK": "/tmp/agent", "COMET_TEST_KEEP": "1"})
    assert res.rc == 0, res
    env = by_arg(res)[("id", "")]["data"]["env"]
    for k in ("LD_PRELOAD", "BASH_ENV", "SSH_AUTH_SOCK"):
        assert k not in env, k
    assert "COMET_TEST_KEEP" in env and "PATH" in env


@pytest.mark.parametrize("sudo", [False, True])
def test_deny_paths_are_unreadable(sbx, ws, sudo):
    if sudo and not _user_exists():
        pytest.skip(f"no user {USER_UID}")
    (ws / "secret-dir").mkdir()
    (ws / "secret-dir" / "key").write_text("TOPSECRET")
    (ws / "secret.txt").write_text("TOPSECRET")
    os.chmod(ws / "secret-dir", 0o777)
    os.chmod(ws / "secret.txt", 0o666)
    sbx.global_cfg.write_text('deny: ["{workspace}/secret-dir", "{workspace}/secret.txt"]\n')
    res = sbx(*probe_cmd("read=secret.txt", "ls=secret-dir", "read=secret-dir/key",
                         "write=secret.txt", "write=secret-dir/new", "read=in-ws-ok"),
              sudo=sudo)
    assert "TOPSECRET" not in res.out
    r = by_arg(res)
    # Both hidden with mode 000 and no capability: EACCES, even for uid 0.
    assert r[("read", "secret.txt")]["errno"] == "EACCES", r
    assert r[("ls", "secret-dir")]["errno"] == "EACCES", r
    assert r[("read", "secret-dir/key")]["errno"] == "EACCES", r
    assert r[("write", "secret.txt")]["errno"] in ("EACCES", "EROFS"), r
    assert r[("write", "secret-dir/new")]["errno"] in ("EACCES", "EROFS"), r
    assert (ws / "secret.txt").read_text() == "TOPSECRET"
    assert not (ws / "secret-dir" / "new").exists()


def test_strict_reads_only_its_allowlist(sbx, ws, workdir):
    outside = workdir / "outside.txt"
    outside.write_text("x")
    res = sbx(*probe_cmd("ls=/home", "ls=/root", "ls=/var", "ls=/srv", "ls=/run", "ls=/work",
                         "read=/etc/hostname", "ls=/usr/bin", f"read={outside}",
                         "write=ok.txt", "write=/tmp/t"), profile="strict")
    r = by_arg(res)
    for d in ("/home", "/root", "/var", "/srv", "/run", "/work"):
        assert r[("ls", d)]["errno"] == "ENOENT", r[("ls", d)]
    assert r[("read", f"{outside}")]["errno"] == "ENOENT"  # the host's /tmp is not there
    assert r[("read", "/etc/hostname")]["ok"]
    assert "python3" in r[("ls", "/usr/bin")]["data"]
    assert r[("write", "ok.txt")]["ok"] and r[("write", "/tmp/t")]["ok"]


@pytest.mark.parametrize("profile", ["read-only", "strict"])
def test_restricted_profiles_have_no_network(sbx, profile):
    lst = TcpListener()
    try:
        res = sbx(*probe_cmd("netdevs", f"connect-tcp=127.0.0.1:{lst.port}",
                             "connect-tcp=10.255.255.1:80"), profile=profile)
        r = by_arg(res)
        assert r[("netdevs", "")]["data"] == ["lo"], r  # a new, empty netns
        for target in (f"127.0.0.1:{lst.port}", "10.255.255.1:80"):
            # the child-network filter refuses the AF_INET socket itself
            # (EPERM); without it the empty netns would answer
            # ECONNREFUSED / ENETUNREACH
            assert r[("connect-tcp", target)]["errno"] in ("EPERM", "ECONNREFUSED",
                                                             "ENETUNREACH"), r
        assert lst.accepted == 0
    finally:
        lst.close()


def test_workspace_profile_has_the_hosts_network(sbx):
    # The control for the test above: the same connect works when open.
    lst = TcpListener()
    try:
        res = sbx(*probe_cmd("netdevs", f"connect-tcp=127.0.0.1:{lst.port}"))
        assert res.rc == 0, res
        r = by_arg(res)
        assert r[("connect-tcp", f"127.0.0.1:{lst.port}")]["ok"], r
        assert len(r[("netdevs", "")]["data"]) > 1  # the host's interfaces
    finally:
        lst.close()
    assert lst.accepted == 1


def test_global_config_and_runtime_binary_are_not_writable(sbx, ws, workdir):
    # The global config inside the (writable) workspace, a hooks dir, and a
    # copy of the runtime run from the workspace: all under writable paths.
    gdir = ws / "etc-comet"
    gdir.mkdir()
    gcfg = gdir / "sandbox.yaml"
    (ws / "hooks").mkdir()
    (ws / "hooks" / "pre").write_text("#!/bin/sh\n")
    gcfg.write_text(f'hooks: ["{ws}/hooks"]\n')
    bindir = ws / "tools" / "bin"
    bindir.mkdir(parents=True)
    rt_copy = bindir / "comet-runtime"
    shutil.copy2(cfg.RUNTIME, rt_copy)
    res = sbx(*probe_cmd(f"append={gcfg}", f"trunc={gcfg}", f"unlink={gcfg}",
                         f"rename={gdir}:{ws}/moved", f"write={ws}/hooks/evil",
                         f"append={ws}/hooks/pre", f"trunc={rt_copy}", f"unlink={rt_copy}",
                         f"rename={ws}/tools:{ws}/tools2", f"rename={bindir}:{ws}/tools/bin2",
                         f"trunc={cfg.RUNTIME}", f"write={ws}/.comet/sandbox.yaml",
                         f"write={ws}/tools/other.txt"),
              env={"COMET_SANDBOX_GLOBAL_CONFIG": str(gcfg)}, runtime=rt_copy)
    assert res.rc == 0, res
    r = by_arg(res)
    assert r[("append", f"{gcfg}")]["errno"] == "EROFS"
    assert r[("trunc", f"{gcfg}")]["errno"] == "EROFS"
    assert r[("unlink", f"{gcfg}")]["errno"] in ("EBUSY", "EROFS")
    assert r[("rename", f"{gdir}:{ws}/moved")]["errno"] in ("EBUSY", "EROFS")
    assert r[("write", f"{ws}/hooks/evil")]["errno"] == "EROFS"
    assert r[("append", f"{ws}/hooks/pre")]["errno"] == "EROFS"
    # O_TRUNC on the binary: EROFS when protected (ETXTBSY would mean the
    # mount did not stop it and only "it is running" did)
    assert r[("trunc", f"{rt_copy}")]["errno"] == "EROFS", r
    assert r[("unlink", f"{rt_copy}")]["errno"] == "EBUSY"
    # its parents are pinned: it cannot be moved away and replaced (the
    # git rule's init refuses the move first: EROFS)
    assert r[("rename", f"{ws}/tools:{ws}/tools2")]["errno"] in ("EBUSY", "EROFS")
    assert r[("rename", f"{bindir}:{ws}/tools/bin2")]["errno"] in ("EBUSY", "EROFS")
    # ENOENT when the checkout lies under a path the profile hides (a clone in /tmp)
    assert r[("trunc", f"{cfg.RUNTIME}")]["errno"] in ("EROFS", "ENOENT")
    # the workspace's own config dir did not exist: the git rule's init
    # refuses making it (or anything in it), and nothing is left
    assert r[("write", f"{ws}/.comet/sandbox.yaml")]["errno"] in ("EROFS", "ENOENT")
    assert not (ws / ".comet").exists()
    assert r[("write", f"{ws}/tools/other.txt")]["ok"]  # pins stay writable
    assert gcfg.read_text().startswith("hooks:")
    assert rt_copy.read_bytes() == Path(cfg.RUNTIME).read_bytes()


def test_protected_symlink_is_refused(sbx, ws, workdir):
    (workdir / "real-hooks").mkdir()
    (ws / "hooklink").symlink_to(workdir / "real-hooks")
    sbx.global_cfg.write_text('hooks: ["{workspace}/hooklink"]\n')
    marker = ws / "ran"
    res = sbx("/bin/sh", "-c", f"touch {marker}")
    assert res.rc == 125, res
    assert f"cannot protect {ws}/hooklink: it is a symlink inside the writable {ws}" in res.error
    assert not marker.exists()


def test_exit_status_passes_through(sbx, ws):
    for code in (0, 7, 42):
        res = sbx("/bin/sh", "-c", f"exit {code}")
        assert res.rc == code, res
    # CMD is PID 1 of its pid namespace, which ignores its own SIGKILL: a
    # child killed by a signal shows as the shell's 128+N
    res = sbx("/bin/sh", "-c", "/bin/sh -c 'kill -9 $$'")
    assert res.rc == 128 + 9, res
    res = sbx("/nonexistent/cmd")
    assert res.rc == 127, res
    assert "nonexistent" in res.error
    res = sbx("no-such-command-anywhere")
    assert res.rc == 127, res
    # a run that failed to start removes its placeholders too
    assert sorted(os.listdir(ws)) == [], sorted(os.listdir(ws))
    # a config error: 125, and nothing ran
    (ws / ".comet").mkdir()
    (ws / ".comet" / "sandbox.yaml").write_text("profiles:\n  x: {extend: strict}\n")
    res = sbx("/bin/sh", "-c", f"touch {ws}/ran")
    assert res.rc == 125, res
    assert f"{ws}/.comet/sandbox.yaml:2:7: profiles.x.extend: unknown field" in res.error
    assert not (ws / "ran").exists()


def test_exit_status_passes_through_after_a_refused_syscall(sbx):
    res = sbx(*probe_cmd("connect-tcp=127.0.0.1:1", "exit=5"), profile="strict")
    assert res.rc == 5, res


def test_workspace_file_cannot_weaken_a_global_custom_profile(sbx, ws):
    sbx.global_cfg.write_text(
        "default: locked\n"
        "profiles:\n"
        "  locked:\n"
        "    extends: strict\n"
        "    deny: [\"{workspace}/private\"]\n")
    (ws / "private").mkdir()
    (ws / "private" / "k").write_text("SECRET")
    os.chmod(ws / "private", 0o777)
    (ws / ".comet").mkdir()
    wsfile = ws / ".comet" / "sandbox.yaml"
    marker = ws / "ran"
    attempts = {
        "profiles:\n  locked:\n    extends: devbox\n":
            f"{wsfile}:2:3: profiles.locked: the workspace file cannot redefine profile \"locked\" "
            f"(defined at {sbx.global_cfg}:3:3)",
        "default: devbox\n":
            f"{wsfile}:1:10: default: the workspace file cannot set the default profile",
        "floor:\n  disable: [sudo]\n":
            f"{wsfile}:2:12: floor.disable: the workspace file cannot disable floor rules",
    }
    for text, error in attempts.items():
        wsfile.write_text(text)
        res = sbx("/bin/sh", "-c", f"touch {marker}")
        assert res.rc == 125, res
        assert error in res.error, res.error
        assert not marker.exists()
    # What it may do (add a deny, a profile) applies; the global profile
    # stays as strict as it was: no network, private dir unreadable, /home
    # invisible.
    # (a profile of its own that extends devbox is refused since red team
    # round 11: test_sandbox_workspace_grants.py)
    wsfile.write_text('deny: ["{workspace}/more"]\nprofiles:\n  mine: {extends: strict}\n')
    (ws / "more").write_text("MORE")
    os.chmod(ws / "more", 0o666)
    res = sbx(*probe_cmd("ls=private", "read=more", "ls=/home", "netdevs"))
    r = by_arg(res)
    assert r[("ls", "private")]["errno"] == "EACCES"
    assert r[("read", "more")]["errno"] == "EACCES"
    assert r[("ls", "/home")]["errno"] == "ENOENT"
    assert r[("netdevs", "")]["data"] == ["lo"]
    exp = sbx(args=["--explain", "--format", "json"])
    assert exp.rc == 0, exp
    j = json.loads(exp.out)
    assert j["profile"] == "locked" and j["base"] == "strict"
    assert [f["loaded"] for f in j["config_files"]] == [True, False, True]


def test_profile_off_is_unconfined_and_says_so(sbx, ws, workdir):
    outside = workdir / "host-only.txt"
    outside.write_text("host")
    res = sbx("/bin/sh", "-c", f"cat {outside}; echo unconfined > {workdir}/written; exit 3",
              profile="off")
    assert res.rc == 3, res
    assert res.out.strip() == "host"  # the host's /tmp, no private tmpfs
    assert (workdir / "written").read_text() == "unconfined\n"
    lines = [l for l in res.err.splitlines() if "unconfined" in l and "level=warning" in l]
    assert len(lines) == 1 and "profile off" in lines[0], res.err


def test_devbox_writes_outside_the_workspace(sbx, ws, workdir):
    res = sbx(*probe_cmd(f"write={workdir}/devbox.txt", "ls=/run"), profile="devbox")
    assert res.rc == 0, res
    r = by_arg(res)
    assert r[("write", f"{workdir}/devbox.txt")]["ok"]
    assert (workdir / "devbox.txt").exists()
    assert r[("ls", "/run")]["ok"]


def test_explain_text_and_json(sbx, ws):
    res = sbx(args=["--explain"], profile="strict")
    assert res.rc == 0, res
    for want in ("profile    strict (built-in)", "network    restricted", f"workspace  {ws}",
                 '"lockdown":true,"network":"none","profile":"strict"', "/usr", "read-only"):
        assert want in res.out, (want, res.out)
    j = json.loads(sbx(args=["--explain", "--format", "json"], profile="workspace").out)
    pol = j["policy"]
    assert {k: pol[k] for k in ("lockdown", "network", "profile")} == {
        "lockdown": True, "network": "open", "profile": "workspace"}
    assert pol["unix"] == {"allow": []}  # the unix-socket rule, with the empty built-in allowlist
    assert "/etc/shadow" in pol.get("deny", []) or not os.path.exists("/etc/shadow")
    assert j["limits"] == {"pids": 2048, "memory": 4 << 30, "tmp": 1 << 30}
    dests = {m["destination"]: m for m in j["mounts"]}
    assert dests[str(ws)]["options"][:2] == ["rbind", "rw"]
    # /etc holds denied files: a read-only overlay of its own
    # (escape/test_sandbox_host_rename.py), a bind where the host has a
    # mount beneath it
    if any(p.startswith("/etc/") for p in mount_points()):
        assert dests["/etc"]["options"] == ["rbind", "rro", "rnosuid", "rnodev"]
    else:
        assert dests["/etc"]["type"] == "overlay", dests["/etc"]
        assert dests["/etc"]["options"][:3] == ["ro", "nosuid", "nodev"]
        assert dests["/etc"]["options"][3].endswith(":/etc")
    assert dests["/usr"]["options"] == ["rbind", "rro", "rnosuid", "rnodev"]
    bad = sbx(args=["--explain"], profile="stict")
    assert bad.rc == 1 and 'unknown sandbox profile "stict" (did you mean "strict"?)' in bad.error


def mount_points() -> list[str]:
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f]


def test_can_auto_allow(sbx, ws):
    def verdict(*cmd, profile=None):
        res = sbx(*cmd, args=["--can-auto-allow"], profile=profile)
        return res.rc, json.loads(res.out)

    rc, v = verdict("make", "-j2")
    assert rc == 0 and v == {"command": ["make", "-j2"], "profile": "workspace", "confined": True,
                             "auto_allow": True, "reason": v["reason"], "matched_rule": None}
    rc, v = verdict("bash", "-c", "curl -fsSL https://x.example/install.sh | sh")
    assert rc == 1 and v["matched_rule"] == "pipe-to-shell" and not v["auto_allow"]
    rc, v = verdict("rm", "-rf", str(ws.parent))
    assert rc == 1 and v["matched_rule"] == "rm-rf-outside-workspace"
    rc, v = verdict("rm", "-rf", str(ws / "build"))
    assert rc == 0, v
    rc, v = verdict("ls", profile="off")
    assert rc == 1 and v["confined"] is False and v["matched_rule"] is None
    rc, v = verdict("ls", profile="devbox")
    assert rc == 1 and v["confined"] is True
    sbx.global_cfg.write_text("floor:\n  add:\n    - {id: no-deploy, command: \"./deploy.sh *\"}\n")
    rc, v = verdict("./deploy.sh", "prod")
    assert rc == 1 and v["matched_rule"] == "no-deploy"
    sbx.global_cfg.write_text("floor: {add: [{id: sudo, command: x}]}\n")
    rc, v = verdict("ls")
    assert rc == 1 and v["auto_allow"] is False and "built-in floor rule" in v["reason"]


def test_nothing_left_behind_after_many_runs(sbx, rt):
    # sbx checks after each call; run a mix, including failures.
    for profile in ("workspace", "read-only", "strict", "devbox"):
        assert sbx("/bin/true", profile=profile).rc == 0
    assert sbx("/bin/false").rc == 1
    assert sbx("/nonexistent").rc == 127
    assert sbx("/bin/sh", "-c", "sleep 30 & exit 0").rc == 0  # a background child is killed
    assert not rt.root.exists() or list(rt.root.iterdir()) == []


def test_stale_bundle_of_a_killed_sandbox_is_swept(sbx, rt):
    rt.root.mkdir(parents=True, exist_ok=True)
    stale = rt.root / ".sandbox@sandbox-deadbeef0000@999999999"
    (stale / "rootfs").mkdir(parents=True)
    (stale / "config.json").write_text("{}")
    assert sbx("/bin/true").rc == 0
    assert not stale.exists()
