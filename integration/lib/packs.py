"""Pack sandboxes for the enforcement and escape suites: a static agent
(integration/pack/packprobe.c) used as runtime.interpreter, a rootfs that
holds it (and busybox, so that there is something else to try to run), a
pack directory, and `pack run` of a list of operations."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

PACKPROBE_SRC = Path(__file__).resolve().parent.parent / "pack" / "packprobe.c"

# The mount points a rootfs usually carries: a rootfs without them is the
# one a run would have to add them to (issue 27 item 7).
MOUNT_POINT_DIRS = ("proc", "dev", "sys", "tmp", "workdir")


def tree_state(root: Path) -> dict[str, tuple]:
    """Every entry of the tree ROOT (itself included), not followed: type and
    mode, owner, size, mtime (ns), and the content's SHA-256 or the link's
    target. Equal before and after a run: the run changed nothing of it."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in [""] + sorted(dirnames) + sorted(filenames):
            p = os.path.join(dirpath, name) if name else dirpath
            st = os.lstat(p)
            if os.path.islink(p):
                what = os.readlink(p)
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    what = hashlib.sha256(f.read()).hexdigest()
            else:
                what = ""
            out[os.path.relpath(p, root)] = (st.st_mode, st.st_uid, st.st_gid, st.st_size,
                                             st.st_mtime_ns, what)
    return out


def strip_mount_points(rootfs: Path) -> None:
    for d in MOUNT_POINT_DIRS:
        if (rootfs / d).is_dir() and not any((rootfs / d).iterdir()):
            (rootfs / d).rmdir()


def manifest(name: str, *, version: str = "0.0.1", interpreter: str = "/usr/bin/packprobe",
             egress: str = "[]", read=("/workdir",), write=(), tier: str = "read-only") -> str:
    """A soyapack.yaml whose entrypoint is agent.txt (make_pack writes it):
    EGRESS is the YAML of capabilities.egress, READ and WRITE the fs paths.
    Also the benchmarks' (bench/lib.py)."""
    return (f"apiVersion: soyapack/v0\nname: {name}\nversion: {version}\n"
            f"runtime:\n  interpreter: {interpreter}\n  entrypoint: agent.txt\n  args: []\n"
            f"capabilities:\n  egress: {egress}\n"
            f"  fs:\n    read: [{', '.join(read)}]\n    write: [{', '.join(write)}]\n"
            f"  determinism_tier: {tier}\n")


MANIFEST = manifest("probe-pack", read=("/workdir", "/workdir/inputs"), write=("/workdir/out",))


def build_packprobe(session_dir: Path) -> Path:
    out = session_dir / "packprobe"
    if not out.exists():
        subprocess.run(["cc", "-static", "-O2", "-o", str(out), str(PACKPROBE_SRC), "-lpthread"],
                       check=True)
    return out


def make_pack(workdir: Path, packprobe: Path, manifest: str = MANIFEST) -> tuple[Path, Path]:
    rootfs = workdir / "rootfs"
    for d in ("usr/bin", "bin", "proc", "dev", "sys", "tmp", "workdir", "etc"):
        (rootfs / d).mkdir(parents=True, exist_ok=True)
    shutil.copy2(packprobe, rootfs / "usr/bin/packprobe")
    shutil.copy2("/bin/busybox", rootfs / "bin/busybox")
    (rootfs / "etc/shadow").write_text("root:x:::::::\n")
    os.chmod(rootfs / "etc/shadow", 0o600)
    p = workdir / "pack"
    p.mkdir()
    (p / "soyapack.yaml").write_text(manifest)
    (p / "agent.txt").write_text("the entrypoint, ignored by packprobe\n")
    return p, rootfs


def pack_run(rt, pack, *ops, extra=(), timeout=60):
    p, rootfs = pack
    return rt("pack", "run", str(p), "--rootfs", str(rootfs), *extra, "--", *ops, timeout=timeout)


def results(res) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for line in res.out.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            out.setdefault(d["op"], []).append(d)
    return out


def one(r, op):
    assert op in r, f"{op} did not report: {r}"
    return r[op][0]


def events_of(path: Path) -> list[dict]:
    """The JSON lines of an events file (--events FILE), [] when there is none."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_with_events(rt, pack, workdir, *ops, name="ev.jsonl", extra=()):
    """`pack run` with --events WORKDIR/NAME: (the result, its events)."""
    ev = workdir / name
    res = pack_run(rt, pack, *ops, extra=("--events", str(ev), *extra))
    return res, events_of(ev)
