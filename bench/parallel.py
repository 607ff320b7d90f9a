#!/usr/bin/env python3
"""50-way parallel create+start: comet-runtime vs runc, side by side.

Each round starts N threads per runtime behind a barrier; each thread runs
`create` then `start` of its own container (busybox bundle, `sleep 30`),
timing each command. The runtimes alternate which goes first from round to
round. After a round every container is deleted (--force, not timed).

Per round and runtime: the slowest create, the median create, the slowest
create+start. Printed: the median over rounds of each, and comet/runc.
The 1-minute load average before and after is printed too: the figures mean
little on a busy machine.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from lib import COMET, busybox_bundle, median, scratch, table


def timed_ms(cmd):
    """Wall time of cmd in ms. stderr goes to a file, not a pipe: a
    container init inherits create's stdio, so a pipe would never close."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                           timeout=120)
        ms = (time.perf_counter() - t0) * 1000
        if p.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{cmd} failed ({p.returncode}): {err.read().decode(errors='replace').strip()}")
    return ms


def one_round(base, bundle, n, tag):
    """N parallel create+start; returns (create_ms list, create+start ms list)."""
    creates, totals, errors = [None] * n, [None] * n, []
    go = threading.Barrier(n)

    def worker(i):
        cid = f"{tag}-{i}"
        try:
            go.wait()
            c = timed_ms(base + ["create", "--bundle", str(bundle), cid])
            s = timed_ms(base + ["start", cid])
            creates[i], totals[i] = c, c + s
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(n):  # cleanup, untimed
        subprocess.run(base + ["delete", "--force", f"{tag}-{i}"], capture_output=True, timeout=60)
    if errors:
        raise errors[0]
    return creates, totals


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=50, help="parallel containers per round")
    ap.add_argument("-r", "--rounds", type=int, default=5)
    a = ap.parse_args()
    load_before = os.getloadavg()
    with scratch("comet-bench-par-") as work:
        bundle = busybox_bundle(work / "bundle", ["/bin/sleep", "30"])
        rts = {"comet": [str(COMET), "--root", str(work / "state-comet")],
               "runc": ["runc", "--root", str(work / "state-runc")]}
        per = {k: {"slowest": [], "median": [], "slowest_total": []} for k in rts}
        names = list(rts)
        for r in range(a.rounds):
            order = names if r % 2 == 0 else names[::-1]
            for name in order:
                creates, totals = one_round(rts[name], bundle, a.n, f"p{name}{r}")
                per[name]["slowest"].append(max(creates))
                per[name]["median"].append(statistics.median(creates))
                per[name]["slowest_total"].append(max(totals))
                print(f"round {r} {name}: slowest create {max(creates):.1f} ms, "
                      f"median {statistics.median(creates):.1f} ms, slowest create+start "
                      f"{max(totals):.1f} ms", file=sys.stderr)
        load_after = os.getloadavg()
        m = {k: {f: median(v) for f, v in per[k].items()} for k in rts}
        rows = []
        for name in rts:
            rows.append([name, f"{m[name]['slowest']:.1f}", f"{m[name]['slowest'] / m['runc']['slowest']:.2f}x",
                         f"{m[name]['median']:.1f}", f"{m[name]['median'] / m['runc']['median']:.2f}x",
                         f"{m[name]['slowest_total']:.1f}"])
        print(f"{a.n} parallel create+start, busybox bundle, {a.rounds} rounds, medians over rounds in ms; "
              f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
        table(rows, ["runtime", "slowest create", "vs runc", "median create", "vs runc",
                     "slowest create+start"])


if __name__ == "__main__":
    sys.exit(main())
