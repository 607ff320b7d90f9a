"""What an agent sees inside a pack sandbox (issue 4): the exec lock, the
clock, the namespace lock-down, sockets, the filesystem view, and `pack run`
itself (args, exit status, --input/--output, clean-up). The agent is
packprobe.c, a static program used as runtime.interpreter: it performs one
operation per argument and prints one JSON line for each."""
from __future__ import annotations

import json
import platform
import subprocess
from pathlib import Path

import pytest

from lib.packs import MANIFEST, build_packprobe, make_pack, one, pack_run, results

pytestmark = pytest.mark.comet_only


@pytest.fixture(scope="session")
def packprobe(session_dir) -> Path:
    return build_packprobe(session_dir)


@pytest.fixture
def pack(workdir, packprobe):
    """A pack dir and a rootfs holding packprobe at /usr/bin and busybox at /bin."""
    return make_pack(workdir, packprobe)


def test_exec_lock(rt, pack):
    res = pack_run(rt, pack, "fork", "vfork", "clone-process", "clone3", "thread",
                   "exec=/bin/busybox", "memfd-exec", "copy-self=/workdir/out/copy",
                   "exec=/workdir/out/copy", "copy-self=/dev/shm/copy", "exec=/dev/shm/copy",
                   "copy-self=/tmp/copy", "exec=/tmp/copy")
    assert res.rc in (0, 3), res  # 3: a violation was reported
    r = results(res)
    for op in ("fork", "vfork", "clone-process"):
        assert one(r, op)["errno"] == "EPERM", r[op]
    assert one(r, "clone3")["errno"] == "ENOSYS"
    assert one(r, "thread")["ok"] is True, "threads must still work"
    # only the interpreter may be executed: busybox is there and readable
    # (and neither can a copy of it written where the agent can write)
    execs = r["exec"]
    # (/dev/shm is read-only in a pack: the copy there fails, so its exec is ENOENT)
    assert [e["errno"] for e in execs] == ["EACCES", "EACCES", "ENOENT", "ENOENT"], execs
    assert one(r, "memfd-exec")["errno"] == "EPERM"  # memfd_create is refused
    copies = r["copy-self"]
    assert [c["ok"] for c in copies] == [True, False, False], copies
    assert copies[1]["errno"] == "EROFS", "/dev/shm is read-only in a pack"
    assert copies[2]["errno"] == "EROFS", "/tmp is not declared writable here"


def test_exec_of_the_interpreter_itself_works(rt, pack):
    res = pack_run(rt, pack, "exec=/usr/bin/packprobe")
    assert res.rc in (0, 3), res  # 3: a violation was reported
    assert "exec" not in results(res), "execve of the interpreter must succeed"


def test_clock_cannot_be_set_but_can_be_read(rt, pack):
    r = results(pack_run(rt, pack, "clock_settime", "settimeofday", "adjtimex-set",
                         "adjtimex-read", "clock_gettime"))
    assert one(r, "clock_settime")["errno"] == "EPERM"
    assert one(r, "settimeofday")["errno"] == "EPERM"
    assert one(r, "adjtimex-set")["errno"] == "EPERM"
    # adjtimex and clock_adjtime are refused whatever they ask (a filter
    # cannot read struct timex's modes): a read of them too
    assert one(r, "adjtimex-read")["errno"] == "EPERM"
    assert one(r, "clock_gettime")["ok"] is True


def test_namespace_lockdown(rt, pack):
    ops = ["mount-tmpfs", "remount-root-rw", "umount=/proc", "unshare-user", "unshare-net",
           "setns=/proc/self/ns/net", "ptrace-attach", "bpf", "keyctl", "io_uring_setup", "mknod=/workdir/out/n"]
    r = results(pack_run(rt, pack, *ops))
    for op in ops:
        name = op.split("=")[0]
        assert one(r, name)["errno"] == "EPERM", (op, r.get(name))


@pytest.mark.parametrize("op", ["int80-getpid", "int80-unshare-user", "x32-getpid", "x32-unshare-user"])
def test_other_syscall_abis_are_killed(rt, pack, packprobe, op):
    """Attack: step around the x86_64 rules through the i386 table (int 0x80)
    or the x32 one (bit 30). Neither seccomp filter of a confined container
    has any other ABI in it, so the first such syscall kills the agent with
    SIGSYS, before the kernel runs it, even getpid. (Where the kernel has no
    i386 entry at all, int 0x80 is a SIGSEGV fault instead.)"""
    if platform.machine() != "x86_64":
        pytest.skip("x86_64 only")
    killer = 31  # SIGSYS: the filter's default action for another ABI
    if op.startswith("int80"):
        host = subprocess.run([str(packprobe), "x", op], capture_output=True, text=True)
        if host.returncode == -11:
            # A kernel booted with ia32_emulation=false (or built with
            # IA32_EMULATION_DEFAULT_DISABLED) has no i386 entry: int 0x80
            # faults with SIGSEGV before seccomp or the syscall runs. The
            # kernel closes this door itself; the agent must still not get
            # through it, and must die at the same point.
            killer = 11
        else:
            # The host runs it (IA32 emulation is on), so only the filter stops it.
            assert host.returncode == 0 and json.loads(host.stdout)["ok"] is True, host
    res = pack_run(rt, pack, "socket-unix", op, "socket-unix")
    assert res.rc == 128 + killer, res
    r = results(res)
    assert len(r["socket-unix"]) == 1, r  # it ran, then the agent died at op
    assert op not in r, r


def test_sockets_with_no_egress(rt, pack):
    r = results(pack_run(rt, pack, "socket-raw", "socket-packet", "socket-packet-hibits",
                         "socket-inet", "socket-unix"))
    for op in ("socket-raw", "socket-packet", "socket-packet-hibits", "socket-inet"):
        assert one(r, op)["errno"] == "EPERM", (op, r[op])
    assert one(r, "socket-unix")["ok"] is True


def test_filesystem_view(rt, pack, workdir):
    r = results(pack_run(rt, pack, "open-read=/dev/urandom", "open-read=/dev/null",
                         "open-read=/dev/zero", "stat=/etc/shadow", "stat=/bin/sh",
                         "stat=/workdir/agent.txt", "write=/workdir/out/x", "write=/workdir/y",
                         "write=/etc/z", "write=/usr/bin/packprobe"))
    reads = r["open-read"]
    assert [x["ok"] for x in reads] == [True, True, True], reads
    assert reads[0]["data"] == "16" and reads[1]["data"] == "0" and reads[2]["data"] == "16"
    stats = r["stat"]
    # /etc/shadow exists in this rootfs: the rootfs is the only thing that
    # decides what exists; /bin/sh does not exist in it
    assert stats[1]["errno"] == "ENOENT"
    assert stats[2]["ok"] is True, "the pack's files are at /workdir"
    writes = r["write"]
    assert writes[0]["ok"] is True
    assert [w["errno"] for w in writes[1:]] == ["EROFS", "EROFS", "EROFS"], writes


def test_args_exit_status_and_output(rt, pack, workdir):
    out = workdir / "collected"
    res = pack_run(rt, pack, "write=/workdir/out/result.txt", "exit=7", extra=("--output", str(out)))
    assert res.rc == 7, res
    assert (out / "result.txt").read_bytes() == b"hello\n"
    # nothing of the run is left: no container, no run directory
    assert rt("list", "-q").out.strip() == ""
    assert list((rt.root / "packs").iterdir()) == []


def test_input_is_read_only(rt, pack, workdir):
    inp = workdir / "in"
    inp.mkdir()
    (inp / "data.txt").write_text("0123456789abcdefXYZ")
    r = results(pack_run(rt, pack, "open-read=/workdir/inputs/data.txt",
                         "write=/workdir/inputs/data.txt", extra=("--input", str(inp))))
    assert one(r, "open-read")["data"] == "16"
    assert one(r, "write")["errno"] == "EROFS"
    assert (inp / "data.txt").read_text() == "0123456789abcdefXYZ"


def test_state_records_the_layers(rt, pack, workdir):
    p, rootfs = pack
    b = workdir / "bundle"
    res = rt("pack", "bundle", str(p), "--rootfs", str(rootfs), "--bundle", str(b), "--output",
             str(workdir / "o"))
    assert res.rc in (0, 3), res  # 3: a violation was reported
    cid = rt.new_id("layers")
    assert rt.create(cid, b).rc == 0
    st = json.loads(rt("state", cid).out)
    layers = st["org.soyaos.comet.layers"]
    for want in ("seccomp:docker-default", "seccomp:lockdown", "seccomp:exec-lock",
                 "seccomp:network-none", "landlock:exec", "landlock:no-symlinks", "fs-events"):
        assert want in layers, layers
    assert rt("delete", "--force", cid).rc == 0


def test_bad_manifest_runs_nothing(rt, pack):
    p, _ = pack
    (p / "soyapack.yaml").write_text(MANIFEST.replace("egress: []", "egress: [{host: a.test, port: https, protocol: https}]"))
    res = pack_run(rt, pack, "exit=0")
    assert res.rc == 1, res
    assert "capabilities.egress[0].port" in res.err
    assert not (rt.root / "packs").exists() or list((rt.root / "packs").iterdir()) == []


def test_interpreter_missing_from_rootfs_is_refused(rt, pack):
    p, rootfs = pack
    (rootfs / "usr/bin/packprobe").unlink()
    res = pack_run(rt, pack, "exit=0")
    assert res.rc == 1, res
    assert "/usr/bin/packprobe" in res.err
    assert rt("list", "-q").out.strip() == ""


CAPS = json.dumps({"egress": [], "fs": {"read": ["/workdir"], "write": []}, "determinism_tier": "read-only"})


def test_engine_config_with_the_annotation_is_tightened(rt, bundle, workdir):
    """podman --annotation org.soyaos.comet.capabilities=...: the runtime
    tightens whatever config it is given: no capabilities, read-only root,
    the lock-down filter, no socket but AF_UNIX."""
    b = bundle()
    b.config.setdefault("annotations", {})["org.soyaos.comet.capabilities"] = CAPS
    ev = workdir / "ev.jsonl"
    res = rt.run_probe(b, "info", extra=("--events", str(ev)))
    assert res.rc == 0, (res.err, ev.read_text() if ev.exists() else "no events")
    caps = {k: int(v, 16) for k, v in res.probe()["caps"].items()}
    assert caps == {"bnd": 0, "eff": 0, "prm": 0, "inh": 0, "amb": 0}
    b2 = bundle()
    b2.config.setdefault("annotations", {})["org.soyaos.comet.capabilities"] = CAPS
    res = rt.run_probe(b2, "unshare", "CLONE_NEWUSER")
    assert res.rc in (1, 3) and res.probe()["errno"] == "EPERM", res
    b3 = bundle()
    b3.config.setdefault("annotations", {})["org.soyaos.comet.capabilities"] = CAPS
    res = rt.run_probe(b3, "write", "/newfile", "x")
    assert res.rc in (1, 3) and res.probe()["errno"] == "EROFS", res


@pytest.mark.parametrize("key,value,needle", [
    ("org.soyaos.comet.policy", "{not json", "org.soyaos.comet.policy"),
    ("org.soyaos.comet.policy", '{"network":"sideways"}', "network"),
    ("org.soyaos.comet.capabilities", '{"egress":[{"host":"a.test","port":0}]}',
     "org.soyaos.comet.capabilities"),
])
def test_unparseable_policy_is_refused(rt, bundle, key, value, needle):
    b = bundle()
    b.config.setdefault("annotations", {})[key] = value
    cid = rt.new_id("badpol")
    res = rt.create(cid, b)
    assert res.rc == 1, res
    assert needle in res.err, res.err
    assert rt("list", "-q").out.strip() == ""
