#!/usr/bin/env python3
"""Rootless `run` of /bin/true, comet-runtime against runc, as the same
ordinary user, side by side (issue 24; target: comet at most 0.5x runc).

Run as root: it makes a test user with integration/lib/rootless.py
(removed at the end), a busybox bundle under its home from
`spec --rootless` (comet's and runc's are the same JSON), and times, as
that user, N interleaved runs of

  comet-runtime run ID                              (root: $XDG_RUNTIME_DIR/comet-runtime)
  runc --root $XDG_RUNTIME_DIR/runc run ID

The timing loop itself runs as the user, so setpriv is not in the figures.
No cgroup is delegated to the user: both run without one.
"""
import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

from lib import COMET, median, table

# integration/lib/rootless.py by path: bench/lib.py holds the name "lib".
_spec = importlib.util.spec_from_file_location(
    "rootless", Path(__file__).resolve().parent.parent / "integration" / "lib" / "rootless.py")
_rootless = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_rootless)
OrdinaryUser = _rootless.OrdinaryUser

INNER = r"""
import json, os, subprocess, sys, time
comet, bundle, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
xdg = os.environ["XDG_RUNTIME_DIR"]
cmds = {"comet": [comet], "runc": ["runc", "--root", xdg + "/runc"]}
out = {k: [] for k in cmds}
for i in range(n + 2):  # two warm-up rounds
    for name, base in cmds.items():
        t0 = time.perf_counter()
        p = subprocess.run(base + ["run", "--bundle", bundle, f"b{name}{i}"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        ms = (time.perf_counter() - t0) * 1000
        if p.returncode != 0:
            sys.exit(f"{name} run failed: {p.stderr.decode()}")
        if i >= 2:
            out[name].append(ms)
print(json.dumps(out))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=25)
    a = ap.parse_args()
    if not shutil.which("runc"):
        sys.exit("runc is not installed")
    with OrdinaryUser(prefix="cmtbn") as user:
        b = user.make_dir("bundle")
        rootfs = user.make_dir("bundle/rootfs/bin")
        shutil.copy("/bin/busybox", rootfs / "busybox")
        for applet in ("sh", "true"):
            (rootfs / applet).symlink_to("busybox")
        subprocess.run(["chown", "-R", f"{user.uid}:{user.gid}", str(b)], check=True)
        res = user.run([str(COMET), "spec", "--rootless"], cwd=str(b))
        if res.returncode:
            sys.exit(res.stderr)
        cfg = json.loads((b / "config.json").read_text())
        cfg["process"]["terminal"] = False
        cfg["process"]["args"] = ["/bin/true"]
        (b / "config.json").write_text(json.dumps(cfg, indent=2))
        res = user.run(["/usr/bin/python3", "-c", INNER, str(COMET), str(b), str(a.n)],
                       timeout=600)
        if res.returncode:
            sys.exit(res.stderr)
        times = json.loads(res.stdout)
    base = median(times["runc"])
    rows = [[name, f"{median(xs):.1f}", f"{median(xs) / base:.2f}x", f"{min(xs):.1f}"]
            for name, xs in times.items()]
    print(f"rootless run of /bin/true as an ordinary user, no cgroup, N={a.n} each, ms")
    table(rows, ["runtime", "median", "vs runc", "min"])


if __name__ == "__main__":
    sys.exit(main())
