"""Shared helpers for the benchmark scripts: bundles, packs, timing, medians."""
import contextlib
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMET = Path(os.environ.get("COMET_RUNTIME", REPO / "build" / "runtime" / "comet-runtime"))


def _integration_packs():
    """integration/lib/packs.py, whose manifest() the benchmarks share (the
    suite's package is also named `lib`, so it is loaded by path)."""
    spec = importlib.util.spec_from_file_location("comet_integration_packs",
                                                  REPO / "integration" / "lib" / "packs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


manifest = _integration_packs().manifest


def static_pack(work: Path, agent_src: Path, agent: str, manifest_text: str, cc_args=()):
    """WORK/rootfs with AGENT_SRC built static as /usr/bin/AGENT, and WORK/pack
    with MANIFEST_TEXT as its soyapack.yaml: (pack, rootfs)."""
    rootfs = work / "rootfs"
    for d in ("usr/bin", "proc", "dev", "sys", "tmp", "workdir", "etc"):
        (rootfs / d).mkdir(parents=True, exist_ok=True)
    subprocess.run(["cc", "-static", "-O2", "-o", str(rootfs / "usr/bin" / agent), str(agent_src),
                    *cc_args], check=True)
    pack = work / "pack"
    pack.mkdir()
    (pack / "soyapack.yaml").write_text(manifest_text)
    (pack / "agent.txt").write_text("x\n")
    return pack, rootfs


def busybox_bundle(root: Path, args):
    """A bundle with a busybox-static rootfs and runc's default config."""
    rootfs = root / "rootfs" / "bin"
    rootfs.mkdir(parents=True)
    shutil.copy("/bin/busybox", rootfs / "busybox")
    out = subprocess.run([str(rootfs / "busybox"), "--list"], capture_output=True, text=True).stdout
    for applet in out.split():
        if applet != "busybox":
            (rootfs / applet).symlink_to("busybox")
    subprocess.run(["runc", "spec"], cwd=root, check=True)
    cfg = json.loads((root / "config.json").read_text())
    cfg["process"]["terminal"] = False
    cfg["process"]["args"] = args
    (root / "config.json").write_text(json.dumps(cfg, indent=2))
    return root


def timed(cmd, **kw):
    """Run cmd; return (ms, peak RSS in KiB of the command itself).

    The RSS comes from GNU time (-f %M -o FILE), a small C parent, so it is
    the runtime's own peak, not the forked Python's. stdio is /dev/null:
    a container init inherits create's stdio, so a pipe would never close."""
    with tempfile.NamedTemporaryFile("r", prefix="comet-bench-rss-") as out:
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name] + list(cmd),
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, **kw)
        ms = (time.perf_counter() - t0) * 1000
        if p.returncode != 0:
            raise RuntimeError(f"{cmd} failed ({p.returncode})")
        return ms, int(out.read().strip().splitlines()[-1])


def run_ms(cmd, **kw):
    """Wall time of cmd in ms, stdio on /dev/null, nothing in between."""
    t0 = time.perf_counter()
    p = subprocess.run(list(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, **kw)
    ms = (time.perf_counter() - t0) * 1000
    if p.returncode != 0:
        raise RuntimeError(f"{cmd} failed ({p.returncode})")
    return ms


def median(xs):
    return statistics.median(xs)


def table(rows, header):
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))


@contextlib.contextmanager
def scratch(prefix):
    """A fresh directory /tmp/PREFIX*, removed with all it holds (a rootfs, a
    state root) when the block ends, however it ends."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        yield d
    finally:
        subprocess.run(["rm", "-rf", str(d)])
