"""`exec`: a new process in a running (or created) container joins the init's
namespaces and cgroups and gets the container's seccomp filter,
capabilities and no_new_privs; flags and --process change what it runs."""
import json
import os
import stat

import pytest

from lib import ConsoleSocket, cap_mask, pid_alive, wait_for
from lib import config as cfg
from lib.asserts import assert_one_line_error
from lib.procfs import NAMESPACES, cgroup_lines, ns_links, stat_key


def mkdir_errno_profile():
    return {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
            "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}]}


@pytest.fixture
def running(rt, bundle):
    """Factory: running(b=None) -> (cid, bundle) of a started container whose
    init is `/probe sleep 60` (unless the bundle says otherwise)."""
    def start(b=None):
        b = b if b is not None else bundle().probe("sleep", "60")
        return rt.start_detached(b), b
    return start


def exec_probe(rt, cid, *args, extra=(), **kw):
    return rt("exec", *extra, cid, "/probe", *args, **kw)


def assert_exec_error(res, *needles):
    """Like assert_one_line_error, but runc's exec exits 255 on its own errors."""
    assert res.rc != 0, res
    msg = res.error.strip()
    assert msg and "\n" not in msg, f"error is not one line: {msg!r}"
    for n in needles:
        assert n.lower() in msg.lower(), f"{n!r} not in error {msg!r}"
    for bad in ("panic", "goroutine", "segmentation fault", "core dumped", "terminate called"):
        assert bad not in msg.lower(), msg


def test_exec_joins_init_namespaces(rt, running):
    cid, b = running()
    init = rt.pid(cid)
    info = exec_probe(rt, cid, "info").expect_ok().probe()
    assert info["ns"] == ns_links(init)
    # the namespaces the config asks for really are private to the container
    mine = ns_links(os.getpid())
    for n in ("pid", "net", "mnt", "ipc", "uts"):
        assert info["ns"][n] != mine[n], n
    assert info["pid"] != 1 and info["hostname"] == b.config["hostname"]


def test_exec_namespaces_match_init_own_view(rt, bundle):
    # the init reports its own namespaces (probe info run by the init shell)
    b = bundle().sh("/probe info; exec /probe sleep 60")
    cid = rt.start_detached(b)
    assert wait_for(lambda: rt.output(cid).strip(), 5)
    init_view = json.loads(rt.output(cid).splitlines()[0])["ns"]
    exec_view = exec_probe(rt, cid, "info").expect_ok().probe()["ns"]
    assert set(exec_view) == set(NAMESPACES)
    assert exec_view == init_view


def test_exec_into_user_namespace(rt, running, bundle, workdir):
    cid, _ = running(bundle().userns(100000, 100000).probe("sleep", "60"))
    init = rt.pid(cid)
    info = exec_probe(rt, cid, "info").expect_ok().probe()
    assert info["ns"] == ns_links(init)
    assert (info["uid"], info["gid"]) == (0, 0)
    pf = workdir / "exec.pid"
    rt("exec", "--detach", "--pid-file", str(pf), cid, "/probe", "sleep", "60").expect_ok()
    with open(f"/proc/{int(pf.read_text())}/status") as f:
        uid_line = next(line for line in f if line.startswith("Uid:"))
    assert uid_line.split()[1:] == ["100000"] * 4, uid_line


def test_exec_cgroup_namespace_and_rlimits(rt, running, bundle):
    b = bundle().probe("sleep", "60").add_namespace("cgroup").rlimit("RLIMIT_NOFILE", 123, 456)
    cid, _ = running(b)
    init = rt.pid(cid)
    info = exec_probe(rt, cid, "info").expect_ok().probe()
    assert info["ns"]["cgroup"] == ns_links(init)["cgroup"]
    assert "0::/" in info["cgroup"], info["cgroup"]  # the container's cgroup is its root
    assert info["rlimits"]["RLIMIT_NOFILE"] == [123, 456]


@pytest.mark.comet_only  # runc 1.1.5 leaves an exec'd process at umask 0022
def test_exec_gets_config_umask(rt, running, bundle):
    cid, _ = running(bundle().probe("sleep", "60").user(0, 0, umask=0o077))
    assert exec_probe(rt, cid, "info").expect_ok().probe()["umask"] == "0077"


@pytest.mark.parametrize("limits", [False, True], ids=["no-limits", "memory+pids"])
def test_exec_detached_same_cgroups(rt, running, bundle, workdir, limits):
    b = bundle().probe("sleep", "60")
    if limits:
        b.resources(memory={"limit": 128 * 1024 * 1024}, pids={"limit": 64})
    cid, _ = running(b)
    pidfile = workdir / "exec.pid"
    rt("exec", "--detach", "--pid-file", str(pidfile), cid, "/probe", "sleep", "60").expect_ok()
    pid = int(pidfile.read_text())
    assert cgroup_lines(pid) == cgroup_lines(rt.pid(cid))


def test_exec_gets_container_seccomp(rt, running, bundle):
    cid, b = running(bundle().readonly(False).seccomp(mkdir_errno_profile()).probe("sleep", "60"))
    res = exec_probe(rt, cid, "mkdir", "/tmp/d")
    assert res.rc == 1 and res.probe()["errno"] == "EPERM", res
    assert not (b.rootfs / "tmp" / "d").exists()
    assert exec_probe(rt, cid, "info").probe()["seccomp"] == 2
    # other syscalls are allowed
    assert exec_probe(rt, cid, "write", "/tmp/f", "x").probe()["ok"] is True


def test_exec_without_seccomp_config_has_no_filter(rt, running, bundle):
    cid, b = running(bundle().readonly(False).probe("sleep", "60"))
    assert exec_probe(rt, cid, "mkdir", "/tmp/d").probe()["ok"] is True
    assert (b.rootfs / "tmp" / "d").is_dir()
    assert exec_probe(rt, cid, "info").probe()["seccomp"] == 0


def host_caps(pid):
    keys = {"CapInh": "inh", "CapPrm": "prm", "CapEff": "eff", "CapBnd": "bnd", "CapAmb": "amb"}
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return {v: fields[k].strip() for k, v in keys.items()}


ALL_SETS = ("bounding", "effective", "permitted", "inheritable", "ambient")


@pytest.mark.parametrize("caps,sets", [
    (None, None),
    (["CAP_KILL", "CAP_CHOWN", "CAP_NET_BIND_SERVICE"], ("bounding", "effective", "permitted")),
    (["CAP_KILL", "CAP_CHOWN"], ALL_SETS),
], ids=["default-caps", "three-caps", "with-ambient"])
def test_exec_gets_container_capabilities(rt, running, bundle, caps, sets):
    b = bundle().probe("sleep", "60")
    if caps is not None:
        b.caps(caps, sets=sets)
    cid, _ = running(b)
    got = exec_probe(rt, cid, "info").probe()["caps"]
    conf = b.process["capabilities"]
    assert int(got["bnd"], 16) == cap_mask(conf["bounding"])
    assert int(got["prm"], 16) == cap_mask(conf["permitted"])
    assert int(got["eff"], 16) == cap_mask(conf["effective"])
    if sets == ALL_SETS:
        assert int(got["inh"], 16) == int(got["amb"], 16) == cap_mask(caps)
    # exactly what the container's init has
    assert got == host_caps(rt.pid(cid))


def test_exec_cap_flag_adds_capability(rt, running, bundle):
    cid, _ = running(bundle().caps(["CAP_KILL"]).probe("sleep", "60"))
    got = rt("exec", "--cap", "CAP_SYS_ADMIN", "--cwd", "/", cid, "/probe", "info").expect_ok().probe()["caps"]
    for s in ("bnd", "prm", "eff"):
        assert int(got[s], 16) & cap_mask(["CAP_KILL", "CAP_SYS_ADMIN"]) == cap_mask(["CAP_KILL", "CAP_SYS_ADMIN"]), got


@pytest.mark.parametrize("config_nnp,flag,want", [(True, False, 1), (False, False, 0), (False, True, 1)])
def test_exec_no_new_privs(rt, running, bundle, config_nnp, flag, want):
    cid, _ = running(bundle().no_new_privileges(config_nnp).probe("sleep", "60"))
    extra = ["--no-new-privs"] if flag else []
    assert exec_probe(rt, cid, "info", extra=extra).probe()["no_new_privs"] == want


def test_exec_env_cwd_user(rt, running):
    cid, b = running()
    res = rt("exec", "--env", "FOO=bar baz", "--cwd", "/tmp", "--user", "65534:65534", cid, "/probe", "info")
    info = res.expect_ok().probe()
    assert "FOO=bar baz" in info["env"]
    # the config's environment is kept
    assert set(b.process["env"]) <= set(info["env"])
    assert info["cwd"] == "/tmp"
    assert (info["uid"], info["gid"], info["euid"], info["egid"]) == (65534, 65534, 65534, 65534)
    # the container's own process is unchanged
    assert rt("exec", cid, "/probe", "info").probe()["uid"] == 0


def test_exec_env_overrides_config(rt, running):
    cid, _ = running()
    info = rt("exec", "--env", "TERM=dumb", "--cwd", "/", cid, "/probe", "info").expect_ok().probe()
    assert [e for e in info["env"] if e.startswith("TERM=")] == ["TERM=dumb"]


@pytest.mark.parametrize("opt,val,check", [
    ("--env", "FOO=bar", lambda i: "FOO=bar" in i["env"]),
    ("-e", "FOO=bar", lambda i: "FOO=bar" in i["env"]),
    ("--cap", "CAP_SYS_ADMIN", lambda i: int(i["caps"]["eff"], 16) & cap_mask(["CAP_SYS_ADMIN"])),
    ("--additional-gids", "5", lambda i: 5 in i["groups"]),
])
def test_exec_repeatable_option_before_id(rt, running, opt, val, check):
    # the usual runc spelling: `exec -e K=V ID CMD...`
    cid, _ = running()
    res = rt("exec", opt, val, cid, "/probe", "info")
    assert res.rc == 0, res
    assert check(res.probe())


@pytest.mark.parametrize("user", ["nobody", "65534:abc"])
def test_exec_non_numeric_user_fails_cleanly(rt, running, user):
    cid, _ = running()
    res = rt("exec", "--user", user, cid, "/probe", "info")
    assert_exec_error(res)
    assert 0 < res.rc < 256, res
    assert res.out == ""


@pytest.mark.parametrize("option, needle", [
    (["--env", "NOEQUALS"], "NOEQUALS"),  # an env entry without "="
    (["--cwd", "tmp"], "absolute"),  # a relative cwd
    (["--cwd", "/no/such/dir"], "/no/such/dir"),  # a cwd that does not exist
], ids=["env-without-equals", "relative-cwd", "missing-cwd"])
def test_exec_bad_option_fails_and_the_container_runs_on(rt, running, option, needle):
    cid, _ = running()
    res = rt("exec", *option, cid, "/probe", "info")
    assert_exec_error(res, needle)
    assert res.out == ""
    assert rt.status(cid) == "running"


def test_exec_exit_status_propagated(rt, running):
    cid, _ = running()
    assert rt("exec", cid, "sh", "-c", "exit 7").rc == 7
    assert rt("exec", cid, "/probe", "exit", "0").rc == 0
    assert rt("exec", cid, "/probe", "exit", "42").rc == 42


def test_exec_killed_by_signal_status(rt, running):
    cid, _ = running()
    assert rt("exec", cid, "sh", "-c", "kill -9 $$").rc == 128 + 9


def test_exec_stdout_and_stdin(rt, running):
    cid, _ = running()
    res = rt("exec", cid, "sh", "-c", "read x; echo got:$x; echo err >&2", input="hello\n")
    assert res.rc == 0, res
    assert res.out == "got:hello\n"
    assert "err" in res.err


def test_exec_detach_pid_file(rt, running, workdir):
    cid, b = running()
    init = rt.pid(cid)
    pidfile = workdir / "exec.pid"
    res = rt("exec", "--detach", "--pid-file", str(pidfile), cid, "/probe", "sleep", "60", timeout=10)
    assert res.rc == 0, res
    pid = int(pidfile.read_text())
    assert pid != init and pid_alive(pid)
    assert ns_links(pid) == ns_links(init)
    assert stat_key(f"/proc/{pid}/root") == stat_key(b.rootfs)
    # --detach returns once the first exec is made: that of the exec
    # trampoline (argv[0] comet-exec, lifecycle/trampoline.hpp), which then
    # execs the target, so the target's argv shows a moment later.
    def cmdline():
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[:3]
    assert wait_for(lambda: cmdline() == [b"/probe", b"sleep", b"60"], 5), cmdline()
    assert pid in rt("ps", "--format", "json", cid).expect_ok().json()
    # the container's kill reaches it (and teardown checks nothing is left)
    rt.kill(cid, "KILL").expect_ok()
    assert wait_for(lambda: not pid_alive(pid), 5)


def test_kill_all_reaches_exec_processes(rt, running, workdir):
    cid, _ = running()
    pids = []
    for i in range(2):
        pf = workdir / f"exec{i}.pid"
        rt("exec", "--detach", "--pid-file", str(pf), cid, "/probe", "sleep", "60").expect_ok()
        pids.append(int(pf.read_text()))
    rt("kill", "--all", cid, "KILL").expect_ok()
    assert rt.wait_status(cid, "stopped") == "stopped"
    assert wait_for(lambda: not any(pid_alive(p) for p in pids), 5), pids


def test_exec_process_file(rt, running, workdir):
    cid, b = running()
    proc = json.loads(json.dumps(b.process))
    proc.update(args=["/probe", "info"], env=["A=1", "PATH=/bin"], cwd="/etc",
                user={"uid": 65534, "gid": 65534})
    pf = workdir / "process.json"
    pf.write_text(json.dumps(proc))
    info = rt("exec", "--process", str(pf), cid).expect_ok().probe()
    assert {"A=1", "PATH=/bin"} <= set(info["env"])
    assert not any(e.startswith("TERM=") for e in info["env"]), "config env must not leak into --process"
    assert info["cwd"] == "/etc"
    assert (info["uid"], info["gid"]) == (65534, 65534)


@pytest.mark.comet_only  # runc 1.1.5 opens a file named "-"
def test_exec_process_from_stdin(rt, running):
    cid, b = running()
    proc = json.loads(json.dumps(b.process))
    proc.update(args=["/bin/sh", "-c", "echo from-stdin-process; exit 3"])
    res = rt("exec", "--process", "-", cid, input=json.dumps(proc))
    assert res.rc == 3, res
    assert res.out == "from-stdin-process\n"


@pytest.fixture
def console(harness):
    cs = ConsoleSocket(harness.path("exec.sock"))
    harness.add_cleanup(cs.close)
    return cs


@pytest.mark.comet_only  # runc only takes --console-socket together with --detach
def test_exec_tty_console_socket(rt, running, console):
    cid, _ = running()
    res = rt("exec", "--tty", "--console-socket", console.path, cid, "sh", "-c", "tty; echo exec-tty-ok; exit 5",
             timeout=15)
    assert res.rc == 5, res
    master = console.wait_master()
    assert stat.S_ISCHR(os.fstat(master).st_mode)
    out = console.read_until(b"exec-tty-ok\r\n", timeout=5)
    assert b"exec-tty-ok\r\n" in out, out
    assert b"/dev/pts/" in out, out


def test_exec_tty_detached_console_socket(rt, running, console):
    cid, _ = running()
    res = rt("exec", "--detach", "--tty", "--console-socket", console.path, cid,
             "sh", "-c", "tty; /probe readfd 0; echo exec-tty-ok; sleep 1", timeout=15)
    assert res.rc == 0, res
    master = console.wait_master()
    assert stat.S_ISCHR(os.fstat(master).st_mode)
    out = console.read_until(b"exec-tty-ok\r\n", timeout=5)
    assert b"exec-tty-ok\r\n" in out, out
    tty = out.split(b"\r\n")[0].decode()
    assert tty.startswith("/dev/pts/"), out
    assert f'"target":"{tty}"'.encode() in out, "stdin is not the pty"


@pytest.mark.comet_only  # runc opens the caller's /dev/tty instead
def test_exec_tty_without_console_socket_fails(rt, running):
    cid, _ = running()
    res = rt("exec", "--tty", cid, "true")
    assert_one_line_error(res, "console")


def test_exec_into_created_container(rt, bundle):
    cid = rt.new_id()
    rt.create(cid, bundle().probe("info")).expect_ok()
    init = rt.pid(cid)
    info = rt("exec", cid, "/probe", "info").expect_ok().probe()
    assert info["ns"] == ns_links(init)
    assert rt.status(cid) == "created", "exec must not start the container"


def test_exec_into_stopped_container_fails(rt, bundle):
    cid = rt.start_detached(bundle().probe("exit", "0"))
    assert rt.wait_status(cid, "stopped") == "stopped"
    res = rt("exec", cid, "/probe", "info")
    assert_exec_error(res, "cannot exec in a stopped container")
    assert res.out == ""


def test_exec_into_missing_container_fails(rt):
    res = rt("exec", "cmt-no-such-container", "/probe", "info")
    assert_exec_error(res, "does not exist")


@pytest.mark.parametrize("cmd", ["/no/such/binary", "no-such-command"])
def test_exec_missing_binary(rt, running, cmd):
    cid, _ = running()
    res = rt("exec", cid, cmd)
    assert res.rc != 0
    assert cmd in res.error, res
    assert res.out == ""
    assert rt.status(cid) == "running"


@pytest.fixture
def two_fds(scratch_fds):
    return scratch_fds(2, "pfd")


def test_exec_preserve_fds_one(rt, running, workdir, two_fds):
    cid, _ = running()
    info = rt("exec", "--preserve-fds", "1", cid, "/probe", "info", fds=two_fds).expect_ok().probe()
    assert info["fds"] == [0, 1, 2, 3]
    d = rt("exec", "--preserve-fds", "1", cid, "/probe", "readfd", "3", fds=two_fds).probe()
    assert d["ok"] and d["data"]["target"] == str(workdir / "pfd0"), d
    assert rt("exec", "--preserve-fds", "1", cid, "/probe", "readfd", "4", fds=two_fds).probe()["errno"] == "EBADF"
    res = rt("exec", "--preserve-fds", "1", cid, "sh", "-c", "echo through-fd3 >&3", fds=two_fds)
    assert res.rc == 0, res
    assert (workdir / "pfd0").read_text() == "through-fd3\n"
    assert (workdir / "pfd1").read_text() == ""


def test_exec_sees_no_runtime_fds(rt, running, two_fds):
    cid, _ = running()
    # fds 3 and 4 are open in the runtime process, not preserved
    info = rt("exec", cid, "/probe", "info", fds=two_fds).expect_ok().probe()
    assert info["fds"] == [0, 1, 2]
    listing = rt("exec", cid, "/probe", "ls", "/proc/self/fd").probe()["data"]
    assert sorted(listing, key=int) == ["0", "1", "2", "3"]  # 3: the probe's own directory fd
