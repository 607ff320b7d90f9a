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
import subprocess
import sys
from pathlib import Path

from lib import COMET, REPO, manifest, median, run_ms, scratch, static_pack, table

PACKPROBE_SRC = REPO / "integration" / "pack" / "packprobe.c"
COMPILE_BENCH = REPO / "build" / "bench" / "comet-compile-bench"

MANIFEST = manifest("bench-trivial", version="1.0.0")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=30, help="runs per variant (default 30)")
    ap.add_argument("--baseline", metavar="BINARY",
                    help="another comet-runtime (an older build): its pack run and plain run are "
                         "interleaved with this build's, and the ratios printed")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/pack.py must run as root")
    with scratch("comet-bench-pack-") as work:
        out = subprocess.run([str(COMPILE_BENCH), "50", "3000"], capture_output=True, text=True, check=True)
        print(out.stdout.strip())
        pack, rootfs = static_pack(work, PACKPROBE_SRC, "packprobe", MANIFEST, cc_args=["-lpthread"])
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
        old = str(Path(a.baseline).resolve()) if a.baseline else None
        # (variant, binary, its state root, pack run or plain run, id prefix, environment)
        variants = [
            ("comet pack run", COMET, "c", "pack", "bp", {}),
            ("comet pack run, reporting off", COMET, "c", "pack", "bq", {"COMET_VIOLATION_REPORTING": "off"}),
            ("comet pack run, own init off", COMET, "c", "pack", "bi", {"COMET_OWN_INIT": "off"}),
            ("comet pack run, fs events off", COMET, "c", "pack", "bf", {"COMET_FS_EVENTS": "off"}),
            ("comet run (plain)", COMET, "c", "run", "br", {}),
            ("runc run (plain)", "runc", "r", "run", "rr", {}),
        ]
        if old:
            variants += [("baseline pack run", old, "o", "pack", "op", {}),
                         ("baseline run (plain)", old, "o", "run", "or", {})]

        def argv(binary, root, verb, cid):
            head = [str(binary), "--root", str(state / root)]
            if verb == "pack":
                return head + ["pack", "run", str(pack), "--rootfs", str(rootfs), "--id", cid, "--no-cache",
                               "--", "exit=0"]
            return head + ["run", "-b", str(plain), cid]

        times = {v[0]: [] for v in variants}
        for i in range(a.n):
            for name, binary, root, verb, prefix, env in variants:  # interleaved
                times[name].append(run_ms(argv(binary, root, verb, f"{prefix}{i}"),
                                          env=dict(os.environ, **env) if env else None))
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


if __name__ == "__main__":
    main()
