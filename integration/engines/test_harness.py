"""The engine suites' own machinery: the wrapper's argv log and the leak
check must see what they are meant to see (no engine needed)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from . import enginelib as el


def test_wrapper_logs_argv_status_and_config(tmp_path):
    real = tmp_path / "fake-runtime"
    real.write_text('#!/bin/sh\n[ "$1" = --version ] && exit 0\necho "$@" > "$(dirname "$0")/seen"\nexit 3\n')
    real.chmod(0o755)
    w = el.Wrapper(tmp_path / "w", root=tmp_path / "r", real=real)
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "config.json").write_text('{"annotations": {"a": "b"}}')
    (tmp_path / "p.json").write_text('{"args": ["x"]}')
    p = subprocess.run([w.path, "--log", "/x y/log.json", "--log-format", "json", "create", "--bundle", bundle,
                        "--pid-file", "/p", "cid1"], capture_output=True)
    assert p.returncode == 3
    assert (tmp_path / "w" / "runtime" / "seen").read_text().split()[:2] == ["--root", str(tmp_path / "r")]
    subprocess.run([w.path, "--root", "/r", "kill", "--all", "cid1", "9"])
    subprocess.run([w.path, "exec", "--process", tmp_path / "p.json", "--detach", "cid1"])
    c = w.calls()
    assert [x.verb for x in c] == ["create", "kill", "exec"]
    assert c[0].global_value("--log") == "/x y/log.json" and c[0].rc == 3 and c[0].cid == "cid1"
    assert c[1].args == ["--all", "cid1", "9"] and c[1].cid == "cid1" and c[1].global_value("--root") == "/r"
    assert w.config_of("cid1") == {"annotations": {"a": "b"}}
    assert w.exec_processes("cid1") == [{"args": ["x"]}]
    assert w.ids() == {"cid1"}


def test_leak_watch_sees_processes_mounts_cgroups_and_files(tmp_path):
    work = el.mkworkdir("cmt-selfcheck-")
    glob = tmp_path / "global"
    glob.mkdir()
    watch = el.LeakWatch(work, watched=[str(glob)])
    cid = f"cmt-selfcheck-{os.getpid()}"
    watch.ids.add(cid)
    cg = Path("/sys/fs/cgroup/pids") / cid
    proc = None
    try:
        assert watch.problems() == []
        proc = subprocess.Popen(["sleep", "60"], cwd=work)
        (work / "m").mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "none", work / "m"], check=True)
        cg.mkdir()
        (glob / "left").write_text("x")
        probs = "\n".join(watch.problems())
        assert f"{proc.pid}: sleep 60" in probs, probs
        assert str(work / "m") in probs and str(cg) in probs and str(glob / "left") in probs, probs
        proc.kill()
        proc.wait()
        watch.force_clean()
        (glob / "left").unlink()
        assert el.wait_for(lambda: watch.problems() == [], 3), watch.problems()
    finally:
        if proc and proc.poll() is None:
            proc.kill()
        el.umount_all_under(work)
        if cg.exists():
            cg.rmdir()
        el.remove_tree(work)


def test_run_in_pty_gives_a_terminal():
    rc, out = el.run_in_pty(["sh", "-c", "[ -t 0 ] && [ -t 1 ] && echo tty-ok; exit 2"], timeout=10)
    assert rc == 2 and "tty-ok" in out, out
