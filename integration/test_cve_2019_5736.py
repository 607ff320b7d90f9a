"""CVE-2019-5736 (runc binary overwrite through /proc/self/exe) attack tests.

comet's defences (docs: "exec trampoline"): every container process's final
exec goes through a sealed memfd trampoline, so a "#!/proc/self/exe"
interpreter resolves to the trampoline (which exits 127 unless argv[0] is
its marker), never the runtime's binary; and runtime processes on the
container side are non-dumpable, so /proc/PID/exe of a created container's
init cannot be opened from inside the container."""
import json
import os
import subprocess

import pytest

from lib import wait_for
from lib.procfs import sha256

SHEBANGS = ["#!/proc/self/exe", "#!/proc/self/exe --help", "#!/proc/self/exe spec"]
RUNTIME_WORDS = ("usage", "comet-runtime", "subcommand", "runc")


@pytest.fixture
def runtime_hash(runtime_binary):
    """sha256 of the host's runtime binary; the test fails if it changed."""
    before = sha256(runtime_binary)
    yield before
    assert sha256(runtime_binary) == before, f"{runtime_binary} was modified"


def evil_bundle(bundle, shebang):
    b = bundle().readonly(False).cwd("/")
    script = b.rootfs / "evil-script"
    script.write_text(shebang + "\n")
    os.chmod(script, 0o755)
    return b


def assert_not_runtime(res, b):
    """The runtime did not run as the script's interpreter."""
    text = (res.out + res.err).lower()
    for w in RUNTIME_WORDS:
        assert w not in text, f"runtime output ({w!r}) from the container: {res!r}"
    assert not (b.rootfs / "config.json").exists(), "`spec` ran inside the container"


@pytest.mark.comet_only
@pytest.mark.parametrize("shebang", SHEBANGS)
def test_shebang_proc_self_exe_init(rt, bundle, runtime_hash, shebang):
    b = evil_bundle(bundle, shebang).args("/evil-script")
    res = rt.run(rt.new_id(), b, timeout=15)
    assert res.rc == 127, res
    assert_not_runtime(res, b)


@pytest.mark.comet_only
@pytest.mark.parametrize("args", [["/proc/self/exe"], ["/proc/self/exe", "--help"], ["/proc/self/exe", "spec"]])
def test_proc_self_exe_as_init(rt, bundle, runtime_hash, args):
    b = bundle().readonly(False).args(*args)
    res = rt.run(rt.new_id(), b, timeout=15)
    assert res.rc == 127, res
    assert_not_runtime(res, b)


@pytest.mark.comet_only
def test_marker_named_symlink_only_reruns_trampoline(rt, bundle, runtime_hash):
    # an image whose entrypoint is named like the trampoline's marker and
    # points at /proc/self/exe: the kernel starts the trampoline again (it is
    # /proc/self/exe at that point), which runs "comet-exec PATH ARG0..." ->
    # /probe exit 9.  Had the runtime binary run, it would not exit 9.
    b = bundle().readonly(False).cwd("/")
    os.symlink("/proc/self/exe", b.rootfs / "bin" / "comet-exec")
    b.args("comet-exec", "/probe", "/probe", "exit", "9")
    res = rt.run(rt.new_id(), b, timeout=15)
    assert res.rc == 9, res
    assert_not_runtime(res, b)


@pytest.mark.comet_only
@pytest.mark.parametrize("shebang", SHEBANGS)
def test_shebang_proc_self_exe_exec(rt, bundle, runtime_hash, shebang):
    b = evil_bundle(bundle, shebang).probe("sleep", "60")
    cid = rt.start_detached(b)
    res = rt("exec", cid, "/evil-script", timeout=15)
    assert res.rc == 127, res
    assert_not_runtime(res, b)
    res = rt("exec", cid, "/proc/self/exe", "--help", timeout=15)
    assert res.rc == 127, res
    assert_not_runtime(res, b)
    assert rt.status(cid) == "running"


@pytest.fixture
def created(rt, bundle):
    """A created (not started) container: its init is the runtime, waiting."""
    b = bundle()
    cid = rt.new_id()
    rt.create(cid, b).expect_ok()
    return cid, b


DENIED = ("EACCES", "EPERM")


@pytest.mark.comet_only  # runc 1.1.5's waiting init can be opened for reading
@pytest.mark.parametrize("mode", ["r", "w", "rw"])
def test_created_init_exe_not_openable_from_exec(rt, created, runtime_hash, mode):
    cid, _ = created
    res = rt("exec", cid, "/probe", "open", "/proc/1/exe", mode)
    assert res.rc == 1 and res.probe()["errno"] in DENIED, res
    assert rt.status(cid) == "created"


@pytest.mark.comet_only
def test_created_init_proc_files_denied(rt, created, runtime_hash):
    cid, _ = created
    assert rt("exec", cid, "/probe", "readlink", "/proc/1/exe").probe()["errno"] in DENIED
    assert rt("exec", cid, "/probe", "open", "/proc/1/mem", "r").probe()["errno"] in DENIED
    assert rt("exec", cid, "/probe", "read", "/proc/1/environ").probe()["errno"] in DENIED
    # the runtime's own open fds (fifo, state, the binary...) cannot be reopened
    fds = rt("exec", cid, "/probe", "ls", "/proc/1/fd").probe()
    for fd in fds["data"] or []:
        res = rt("exec", cid, "/probe", "open", f"/proc/1/fd/{fd}", "r")
        assert res.probe()["errno"] in DENIED, (fd, res)


@pytest.mark.comet_only
@pytest.mark.parametrize("mode", ["r", "w"])
def test_created_init_exe_not_openable_via_nsenter(rt, created, probe_path, runtime_hash, mode):
    # a process in the container's pid/net/ipc/uts namespaces without
    # CAP_SYS_PTRACE (dropped by setpriv after nsenter joined them)
    cid, _ = created
    pid = rt.pid(cid)
    cmd = ["nsenter", "-t", str(pid), "--pid", "--net", "--ipc", "--uts", "--",
           "setpriv", "--bounding-set", "-sys_ptrace", "--inh-caps", "-sys_ptrace", "--",
           str(probe_path)]
    info = json.loads(subprocess.run(cmd + ["info"], capture_output=True, timeout=10, check=True).stdout)
    assert info["ns"]["pid"] == os.readlink(f"/proc/{pid}/ns/pid")
    p = subprocess.run(cmd + ["open", f"/proc/{pid}/exe", mode], capture_output=True, text=True, timeout=10)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert json.loads(p.stdout)["errno"] in DENIED, p.stdout
    assert rt.status(cid) == "created"


def test_exe_scan_during_execs(rt, bundle, runtime_binary, runtime_hash):
    # the attack loop: the container init keeps opening /proc/PID/exe of
    # every process it can see while the runtime execs into the container
    b = bundle().probe("exe-scan", "3")
    cid = rt.start_detached(b)
    for _ in range(15):
        if rt.status(cid) != "running":
            break
        rt("exec", cid, "/probe", "exit", "0", timeout=10)
    assert rt.wait_status(cid, "stopped", timeout=10) == "stopped"
    assert wait_for(lambda: rt.output(cid).strip(), 5)
    scan = json.loads(rt.output(cid).strip().splitlines()[-1])
    assert scan["data"]["scans"] > 0, scan
    st = os.stat(runtime_binary)
    host = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for seen in scan["data"]["opened"]:
        assert (seen["dev_major"], seen["dev_minor"], seen["ino"]) != host, f"runtime binary opened: {seen}"
        assert seen["writable"] is False, seen
    assert scan["ok"] is True, scan
