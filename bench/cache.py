#!/usr/bin/env python3
"""The pack run cache (issue 9, docs/cache.md), side by side in one run.

A read-only pack with a 10 MB --input tree (100 files of 100 KB of words),
two agents:

  static    integration/cache/cacheagent.c on a two-file rootfs: reads
            every input byte (FNV-1a), writes one output file
  python    examples/summarize-inputs (python3 on the default rootfs):
            counts the words of every input, writes summary.json

For each, interleaved, N times: a cache hit (`pack run`, the entry already
recorded), a real run (`pack run --no-cache`), and a miss (`pack run` with an
empty store: run, tee stdout/stderr, record). Target: the hit at least 10x
faster than the real run. Also the hashing throughput of `cache hash` over
the input tree (SHA-256 via libcrypto, page cache warm, no memo) in MB/s.
Not a timed test: it prints medians and ratios.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from lib import COMET, REPO, manifest, median, run_ms, scratch, static_pack, table

AGENT_SRC = REPO / "integration" / "cache" / "cacheagent.c"
SUMMARIZE = REPO / "examples" / "summarize-inputs"

STATIC_MANIFEST = manifest("bench-cache", version="1.0.0", interpreter="/usr/bin/cacheagent",
                           read=("/workdir", "/workdir/inputs"), write=("/workdir/out",))

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi "
         "rho sigma tau upsilon phi chi psi omega").split()


def make_inputs(d: Path, files=100, size=100_000):
    rnd = random.Random(9)
    for i in range(files):
        sub = d / f"d{i % 10}"
        sub.mkdir(parents=True, exist_ok=True)
        text = []
        n = 0
        while n < size:
            w = rnd.choice(WORDS)
            text.append(w)
            n += len(w) + 1
        (sub / f"f{i:03}.txt").write_text(" ".join(text)[:size])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=20, help="runs per variant (default 20)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/cache.py must run as root")
    with scratch("comet-bench-cache-") as work:
        inputs = work / "inputs"
        make_inputs(inputs)
        total = sum(p.stat().st_size for p in inputs.rglob("*") if p.is_file())
        pack, rootfs = static_pack(work, AGENT_SRC, "cacheagent", STATIC_MANIFEST)
        state = work / "state"
        store = work / "store"
        # Private registries: a bench run leaves nothing behind.
        os.environ["COMET_FLAGS_DIR"] = str(work / "flags")
        os.environ["COMET_ROOTFS_CACHE"] = str(work / "rootfs-cache")
        os.environ["COMET_CACHE_DIR"] = str(store)
        agents = {
            "static": [str(pack), "--rootfs", str(rootfs), "--input", str(inputs), "--",
                       "inputs", "write=digest.txt:done"],
            "python": [str(SUMMARIZE), "--input", str(inputs)],
        }

        def cmd(agent, i, *extra):
            out = work / "out" / f"{agent}-{i}-{len(extra)}"
            return [str(COMET), "--root", str(state), "pack", "run", "--output", str(out), *extra,
                    *agents[agent]]

        # The inputs were just written: wait out the memo's settle time
        # (files changed in the last 2 s are always read), as for inputs
        # that are not being written while they are used.
        time.sleep(2.1)
        rows = []
        for agent in agents:
            run_ms(cmd(agent, "warm"))  # records the entry (and builds the default rootfs)
            run_ms(cmd(agent, "warm2"))  # a hit, the memo written
            hits, real, miss = [], [], []
            for i in range(a.n):  # interleaved
                hits.append(run_ms(cmd(agent, i)))
                real.append(run_ms(cmd(agent, i, "--no-cache")))
                fresh = work / f"store-{agent}-{i}"
                miss.append(run_ms(cmd(agent, i, "--cache-dir", str(fresh))))
                shutil.rmtree(fresh, ignore_errors=True)
                shutil.rmtree(work / "out", ignore_errors=True)
            h, r, m = median(hits), median(real), median(miss)
            rows.append([agent, f"{h:.1f} ms", f"{r:.1f} ms", f"{r / h:.1f}x",
                         f"{m:.1f} ms", f"{m - r:+.1f} ms"])
        speeds = []
        for _ in range(max(5, a.n // 2)):
            out = subprocess.run([str(COMET), "cache", "hash", str(inputs)], check=True,
                                 capture_output=True, text=True).stdout
            speeds.append(json.loads(out)["mb_per_s"])
        print(f"pack run with a {total / 1e6:.1f} MB --input tree ({len(list(inputs.rglob('*.txt')))}"
              f" files), N={a.n}, load {os.getloadavg()[0]:.2f}")
        table(rows, ["agent", "hit", "real run (--no-cache)", "real/hit", "miss (run+record)",
                     "miss vs real"])
        print(f"\nhashing (cache hash, SHA-256 via libcrypto, no memo): "
              f"{median(speeds):.0f} MB/s median over {len(speeds)}")


if __name__ == "__main__":
    main()
