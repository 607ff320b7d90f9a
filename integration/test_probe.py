"""The probe itself, run on the host (no runtime involved): output shapes
the other tests rely on."""
import json
import os
import subprocess

import pytest

RLIMITS = ["RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_CORE", "RLIMIT_RSS",
           "RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_MEMLOCK", "RLIMIT_AS", "RLIMIT_LOCKS", "RLIMIT_SIGPENDING",
           "RLIMIT_MSGQUEUE", "RLIMIT_NICE", "RLIMIT_RTPRIO", "RLIMIT_RTTIME"]


def probe(probe_path, *args, rc=None):
    p = subprocess.run([str(probe_path), *args], capture_output=True, text=True, timeout=10)
    if rc is not None:
        assert p.returncode == rc, p
    return json.loads(p.stdout) if p.stdout.strip() else None, p.returncode


def test_info_shape(probe_path):
    d, rc = probe(probe_path, "info", rc=0)
    assert {"uid", "gid", "euid", "egid", "groups", "umask", "cwd", "hostname", "domainname", "pid", "ppid",
            "caps", "no_new_privs", "seccomp", "oom_score_adj", "rlimits", "fds", "ns", "cgroup", "env",
            "personality"} <= set(d)
    assert set(d["caps"]) == {"inh", "prm", "eff", "bnd", "amb"}
    assert all(len(v) == 16 and int(v, 16) >= 0 for v in d["caps"].values())
    assert list(d["rlimits"]) == RLIMITS
    assert all(isinstance(v, list) and len(v) == 2 for v in d["rlimits"].values())
    assert set(d["ns"]) == {"pid", "net", "mnt", "ipc", "uts", "user", "cgroup", "time"}
    assert d["ns"]["mnt"] == os.readlink("/proc/self/ns/mnt")
    assert d["fds"][:3] == [0, 1, 2]
    assert d["pid"] != os.getpid()


def test_unlimited_is_minus_one(probe_path):
    p = subprocess.run(["sh", "-c", f"ulimit -c unlimited; {probe_path} info"], capture_output=True, text=True,
                       timeout=10)
    assert json.loads(p.stdout)["rlimits"]["RLIMIT_CORE"] == [-1, -1]


def test_errno_names(probe_path, tmp_path):
    assert probe(probe_path, "open", str(tmp_path / "missing"))[0]["errno"] == "ENOENT"
    assert probe(probe_path, "readfd", "99")[0]["errno"] == "EBADF"
    assert probe(probe_path, "mkdir", str(tmp_path))[0]["errno"] == "EEXIST"
    assert probe(probe_path, "open", str(tmp_path), "w")[0]["errno"] == "EISDIR"
    d, rc = probe(probe_path, "stat", "/nonexistent")
    assert d == {"ok": False, "errno": "ENOENT", "data": None} and rc == 1


def test_read_write_roundtrip_binary_safe(probe_path, tmp_path):
    f = tmp_path / "f"
    d, _ = probe(probe_path, "write", str(f), "héllo\t\"x\"")
    assert d["ok"] and d["data"] == len("héllo\t\"x\"".encode())
    d, _ = probe(probe_path, "read", str(f))
    assert d["data"].encode("latin-1").decode() == "héllo\t\"x\""


def test_open_modes(probe_path, tmp_path):
    f = tmp_path / "new"
    assert probe(probe_path, "open", str(f), "r")[0]["errno"] == "ENOENT"
    assert probe(probe_path, "open", str(f), "creat")[0]["ok"] is True
    d, _ = probe(probe_path, "open", str(f), "rw")
    assert d["data"]["target"] == str(f)


def test_exit_and_sleep(probe_path):
    assert probe(probe_path, "exit", "42")[1] == 42
    d, rc = probe(probe_path, "sleep", "0.01", rc=0)
    assert d["data"] == {"slept": 0.01}


def test_sleep_handles_term(probe_path):
    p = subprocess.Popen([str(probe_path), "sleep", "30"], stdout=subprocess.PIPE, text=True)
    import time
    time.sleep(0.2)
    p.terminate()
    out, _ = p.communicate(timeout=10)
    assert p.returncode == 143
    assert json.loads(out)["data"] == {"signal": "TERM"}


def test_fork(probe_path):
    d, rc = probe(probe_path, "fork", "3", rc=0)
    assert d["data"] == {"forked": 3, "reaped": 3}


def test_usage_errors(probe_path):
    assert probe(probe_path, "nosuchcmd")[1] == 2
    assert probe(probe_path, "open")[1] == 2
    assert probe(probe_path, "unshare", "NOTAFLAG")[1] == 2


def test_help_lists_commands(probe_path):
    d, _ = probe(probe_path, "help", rc=0)
    names = {c.split()[0] for c in d["commands"]}
    assert {"info", "mounts", "open", "stat", "exec", "mkdir", "write", "read", "sleep", "exit", "signal-ignore",
            "readfd", "fork", "mount", "unshare", "clock_settime", "chroot-escape", "kill"} <= names


@pytest.mark.parametrize("sub", ["mounts"])
def test_mounts_lines(probe_path, sub):
    d, _ = probe(probe_path, sub, rc=0)
    assert any(" / " in line for line in d["data"])
