"""`pack explain --path` tells what the agent will see (issue 26, trap 3).

It used to answer `denied ... the path does not exist in the sandbox` for
/etc/passwd while the agent read the image's /etc/passwd. Here a probe agent
(packprobe) runs in a real `pack run` and reads and writes a list of paths
of every kind: the image's files (through a symlink, under a 0700 dir, a
0600 one), the pack's files, --input, /workdir/out, /tmp as a declared
tmpfs, /dev, /dev/shm, procfs, masked and read-only /proc paths, /sys,
missing paths. For every path `pack explain --format json` must say what
the agent observed: read ok / ENOENT / EACCES / ENOTDIR, write ok / EROFS /
EACCES / ENOENT ("write" of a directory: a new file in it)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from lib import config as cfg
from lib.packs import build_packprobe, make_pack, manifest, pack_run, results

pytestmark = pytest.mark.comet_only

MANIFEST = manifest("explain-pack", read=("/workdir", "/workdir/inputs"),
                    write=("/workdir/out", "/tmp"))

FILES = [
    "/etc/passwd",               # the image's file: the old explain said it did not exist
    "/etc/shadow",               # the image's, 0600 root: EACCES
    "/lib64/libx.so",            # through the image's symlink /lib64 -> usr/lib
    "/home/secret.txt",          # under a 0700 root dir: no search permission
    "/workdir/agent.txt",        # the pack's file
    "/workdir/sub/data.txt",
    "sub/data.txt",              # relative: to /workdir
    "/workdir/hidden.txt",       # the image has it, under the pack's /workdir: hidden
    "/workdir/inputs/data.txt",  # --input
    "/workdir/inputs/private.txt",  # --input, 0600 root
    "/workdir/out/new.txt",      # the output tmpfs
    "/tmp/new.txt",              # fs.write /tmp: a tmpfs
    "/dev/shm/x",                # a read-only tmpfs
    "/dev/null",
    "/dev/zero",
    "/dev/newfile",
    "/proc/self/status",
    "/proc/sys/kernel/hostname",  # read-only path
    "/proc/cmdline",             # masked
    "/proc/keys",                # masked
    "/sys/kernel/notes",         # /sys is the image's (empty) dir
    "/nonexistent",
    "/etc/nope/x",
    "/etc/passwd/x",
    "/etc/../etc/passwd",
]
DIRS = ["/", "/etc", "/home", "/workdir", "/workdir/sub", "/workdir/out", "/workdir/inputs",
        "/tmp", "/dev", "/dev/shm", "/proc", "/sys"]


@pytest.fixture(scope="session")
def packprobe(session_dir) -> Path:
    return build_packprobe(session_dir)


@pytest.fixture
def setup(workdir, packprobe):
    p, rootfs = make_pack(workdir, packprobe, MANIFEST)
    (rootfs / "etc/passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    (rootfs / "usr/lib").mkdir(parents=True)
    (rootfs / "usr/lib/libx.so").write_text("x")
    os.symlink("usr/lib", rootfs / "lib64")
    (rootfs / "home").mkdir(mode=0o700)
    os.chmod(rootfs / "home", 0o700)
    (rootfs / "home/secret.txt").write_text("s")
    (rootfs / "workdir/hidden.txt").write_text("the image's, under the pack")
    (p / "sub").mkdir()
    (p / "sub/data.txt").write_text("pack data")
    inp = workdir / "in"
    inp.mkdir()
    (inp / "data.txt").write_text("input data")
    (inp / "private.txt").write_text("secret")
    os.chmod(inp / "private.txt", 0o600)
    return p, rootfs, inp


def explain(pack, rootfs, inp, path):
    res = subprocess.run([str(cfg.RUNTIME), "pack", "explain", str(pack), "--rootfs", str(rootfs),
                          "--input", str(inp), "--format", "json", "--path", path],
                         capture_output=True, text=True, timeout=20)
    assert res.returncode in (0, 1), res
    j = json.loads(res.stdout)
    assert res.returncode == (0 if "ok" in (j["read"], j["write"]) else 1), (path, res)
    return j


def seen(r: dict) -> str:
    return "ok" if r["ok"] else r["errno"]


def test_explain_says_what_the_agent_sees(rt, setup, workdir):
    p, rootfs, inp = setup
    ops = [f"open-read={f}" for f in FILES] + [f"ls={d}" for d in DIRS]
    ops += [f"write={f}" for f in FILES]
    ops += [f"write={d.rstrip('/')}/.explain-{i}" for i, d in enumerate(DIRS)]
    res = pack_run(rt, (p, rootfs), *ops, extra=("--input", str(inp)))
    assert res.rc in (0, 3), res  # 3: violations were reported (they are meant to be)
    r = results(res)
    reads = r["open-read"] + r["ls"]
    writes = r["write"]
    paths = FILES + DIRS
    assert len(reads) == len(writes) == len(paths), res
    wrong = []
    for path, rd, wr in zip(paths, reads, writes):
        said = explain(p, rootfs, inp, path)
        if path in DIRS:
            assert said["kind"] == "directory" and said["write_means"].startswith("a new file"), said
        got = (seen(rd), seen(wr))
        if (said["read"], said["write"]) != got:
            wrong.append(f"{path}: explain says read {said['read']}, write {said['write']}; "
                         f"the agent saw read {got[0]}, write {got[1]} ({said['layer']})")
    assert not wrong, "\n".join(wrong)


def test_explain_names_the_layer_and_the_image(setup):
    p, rootfs, inp = setup
    j = explain(p, rootfs, inp, "/etc/passwd")
    assert (j["layer"], j["kind"], j["read"], j["write"]) == ("image", "file", "ok", "EROFS"), j
    assert j["host"] == str(rootfs / "etc/passwd")
    assert explain(p, rootfs, inp, "/lib64/libx.so")["resolved"] == "/usr/lib/libx.so"
    assert explain(p, rootfs, inp, "/workdir/inputs/data.txt")["layer"] == "input"
    assert explain(p, rootfs, inp, "/proc/cmdline")["layer"] == "masked"
    assert explain(p, rootfs, inp, "/workdir/hidden.txt")["read"] == "ENOENT"
    # the text form says the same, first line first
    res = subprocess.run([str(cfg.RUNTIME), "pack", "explain", str(p), "--rootfs", str(rootfs),
                          "--path", "/etc/passwd"], capture_output=True, text=True, timeout=20)
    assert res.returncode == 0, res
    assert res.stdout.splitlines()[0] == "/etc/passwd: file, readable, not writable", res.stdout
    assert "the image (rootfs " + str(rootfs) in res.stdout
    assert "does not exist" not in res.stdout
