#!/usr/bin/env python3
"""Pack benchmarks (issue 4), side by side in one run:

  compile   soyapack.yaml -> config.json in process, 50 entries
            (build/bench/comet-compile-bench; target < 1 ms)
  pack run  `comet-runtime pack run` of a trivial agent (a static program
            that exits 0 as runtime.interpreter) against a plain
            `comet-runtime run` of the same rootfs and program with runc's
            default config (target: at most 5 ms more at the median), and
            runc's `run` of that plain bundle for scale; also with reporting
            off, with the pack's own PID 1 off (COMET_OWN_INIT=off:
            the agent is the init, docs/events.md), and with the fs events
            off (COMET_FS_EVENTS=off: no BPF ring, docs/events.md)

`pack run` is timed with --no-cache (a cache hit starts no container; see
bench/cache.py). The pack run figure includes everything pack run does: parse, validate,
compile, stage /workdir, the confinement layers (Landlock, two seccomp
filters), run, collect, and remove the run directory.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from lib import COMET, REPO, median, run_ms, table, tmpdir

PACKPROBE_SRC = REPO / "integration" / "pack" / "packprobe.c"
COMPILE_BENCH = REPO / "build" / "bench" / "comet-compile-bench"

MANIFEST = """\
apiVersion: soyapack/v0
name: bench-trivial
version: 1.0.0
runtime:
  interpreter: /usr/bin/packprobe
  entrypoint: agent.txt
capabilities:
  egress: []
  fs:
    read: [/workdir]
    write: []
  determinism_tier: read-only
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=30, help="runs per variant (default 30)")
    ap.add_argument("--baseline", metavar="BINARY",
                    help="another comet-runtime (an older build): its pack run and plain run are "
                         "interleaved with this build's, and the ratios printed")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/pack.py must run as root")
    work = tmpdir("comet-bench-pack-")
    try:
        out = subprocess.run([str(COMPILE_BENCH), "50", "3000"], capture_output=True, text=True, check=True)
        print(out.stdout.strip())
        rootfs = work / "rootfs"
        for d in ("usr/bin", "proc", "dev", "sys", "tmp", "workdir", "etc"):
            (rootfs / d).mkdir(parents=True, exist_ok=True)
        subprocess.run(["cc", "-static", "-O2", "-o", str(rootfs / "usr/bin/packprobe"), str(PACKPROBE_SRC),
                        "-lpthread"], check=True)
        pack = work / "pack"
        pack.mkdir()
        (pack / "soyapack.yaml").write_text(MANIFEST)
        (pack / "agent.txt").write_text("x\n")
        plain = work / "plain"
        plain.mkdir()
        subprocess.run(["runc", "spec"], cwd=plain, check=True)
        cfg = json.loads((plain / "config.json").read_text())
        cfg["root"] = {"path": str(rootfs), "readonly": True}
        cfg["process"]["terminal"] = False
        cfg["process"]["args"] = ["/usr/bin/packprobe", "x", "exit=0"]
        (plain / "config.json").write_text(json.dumps(cfg))
        state = work / "state"
        # A private flags registry: a bench run never leaves a flag behind.
        os.environ["COMET_FLAGS_DIR"] = str(work / "flags")
        variants = {
            "comet pack run": lambda i: [str(COMET), "--root", str(state / "c"), "pack", "run", str(pack),
                                         "--rootfs", str(rootfs), "--id", f"bp{i}", "--no-cache", "--", "exit=0"],
            "comet pack run, reporting off": lambda i: [str(COMET), "--root", str(state / "c"), "pack", "run",
                                                        str(pack), "--rootfs", str(rootfs), "--id", f"bq{i}",
                                                        "--no-cache", "--", "exit=0"],
            "comet pack run, own init off": lambda i: [str(COMET), "--root", str(state / "c"), "pack", "run",
                                                       str(pack), "--rootfs", str(rootfs), "--id", f"bi{i}",
                                                       "--no-cache", "--", "exit=0"],
            "comet pack run, fs events off": lambda i: [str(COMET), "--root", str(state / "c"), "pack", "run",
                                                        str(pack), "--rootfs", str(rootfs), "--id", f"bf{i}",
                                                        "--no-cache", "--", "exit=0"],
            "comet run (plain)": lambda i: [str(COMET), "--root", str(state / "c"), "run", "-b", str(plain),
                                            f"br{i}"],
            "runc run (plain)": lambda i: ["runc", "--root", str(state / "r"), "run", "-b", str(plain), f"rr{i}"],
        }
        if a.baseline:
            old = str(Path(a.baseline).resolve())
            variants["baseline pack run"] = lambda i: [old, "--root", str(state / "o"), "pack", "run", str(pack),
                                                       "--rootfs", str(rootfs), "--id", f"op{i}", "--no-cache",
                                                       "--", "exit=0"]
            variants["baseline run (plain)"] = lambda i: [old, "--root", str(state / "o"), "run", "-b", str(plain),
                                                          f"or{i}"]
        times = {k: [] for k in variants}
        for i in range(a.n):
            for k, mk in variants.items():  # interleaved
                env = (dict(os.environ, COMET_VIOLATION_REPORTING="off") if "reporting off" in k
                       else dict(os.environ, COMET_OWN_INIT="off") if "own init off" in k
                       else dict(os.environ, COMET_FS_EVENTS="off") if "fs events off" in k else None)
                times[k].append(run_ms(mk(i), env=env))
        base = median(times["comet run (plain)"])
        rows = []
        for k, xs in times.items():
            m = median(xs)
            rows.append([k, f"{m:.1f} ms", f"{m - base:+.1f} ms", f"{m / base:.2f}x"])
        print(f"\npack run vs plain run, N={a.n}, load {os.getloadavg()[0]:.2f}")
        table(rows, ["variant", "median", "vs comet plain", "ratio"])
        if a.baseline:
            print(f"\nthis build against the baseline {a.baseline} (same rounds, interleaved)")
            table([[k, f"{median(times[k]):.1f} ms", f"{median(times[b]):.1f} ms",
                    f"{median(times[k]) / median(times[b]):.2f}x"]
                   for k, b in (("comet pack run", "baseline pack run"),
                                ("comet run (plain)", "baseline run (plain)"))],
                  ["variant", "this build", "baseline", "ratio"])
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
