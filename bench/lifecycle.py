#!/usr/bin/env python3
"""comet-runtime vs runc (and crun) on one busybox bundle, side by side.

  run      `RUNTIME run ID` of /bin/true
  cycle    create + start + wait for exit + delete

Each is timed N times per runtime, interleaved, and the script prints the
medians, the ratio to runc and the peak RSS of the runtime process.
crun 1.8 refuses this host's hybrid cgroups, so it runs (as ENGINES.md says)
in a private mount namespace without the cgroup2 mount: its figures include
that unshare + umount wrapper; the `wrapper` row shows what it costs alone.
"""
import argparse
import shutil
import subprocess
import sys
import time

from lib import COMET, busybox_bundle, median, run_ms, scratch, table, timed


def runtimes(state):
    rts = {"comet": [str(COMET), "--root", str(state / "comet")],
           "runc": ["runc", "--root", str(state / "runc")]}
    if shutil.which("crun"):
        rts["crun"] = None  # built per command, see crun_cmd
    return rts


def crun_cmd(state, verb_args):
    inner = " ".join(["crun", "--root", str(state / "crun")] + verb_args)
    return ["unshare", "-m", "sh", "-c", f"umount /sys/fs/cgroup/unified && exec {inner}"]


def cmd(rts, name, state, verb_args):
    if name == "crun":
        return crun_cmd(state, verb_args)
    return rts[name] + verb_args


def wait_stopped(rts, name, state, cid, timeout=5.0):
    end = time.time() + timeout
    while time.time() < end:
        out = subprocess.run(cmd(rts, name, state, ["state", cid]), capture_output=True, text=True)
        if '"stopped"' in out.stdout:
            return
        time.sleep(0.0005)
    raise RuntimeError(f"{name}: {cid} did not stop")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=25)
    a = ap.parse_args()
    with scratch("comet-bench-") as work:
        bundle = busybox_bundle(work / "bundle", ["/bin/true"])
        state = work / "state"
        rts = runtimes(state)
        res = {k: {"run": [], "cycle": [], "rss": []} for k in rts}
        wrapper = []
        for i in range(a.n):
            for name in rts:
                cid = f"b{name}{i}"
                res[name]["run"].append(run_ms(cmd(rts, name, state, ["run", "--bundle", str(bundle), cid])))
                subprocess.run(cmd(rts, name, state, ["delete", "-f", cid]), capture_output=True)
                cid = f"c{name}{i}"
                t0 = time.perf_counter()
                run_ms(cmd(rts, name, state, ["create", "--bundle", str(bundle), cid]))
                run_ms(cmd(rts, name, state, ["start", cid]))
                wait_stopped(rts, name, state, cid)
                run_ms(cmd(rts, name, state, ["delete", cid]))
                res[name]["cycle"].append((time.perf_counter() - t0) * 1000)
                if i < 5:  # peak RSS under GNU time, kept out of the timings
                    cid = f"r{name}{i}"
                    res[name]["rss"].append(timed(cmd(rts, name, state, ["run", "--bundle", str(bundle), cid]))[1])
                    subprocess.run(cmd(rts, name, state, ["delete", "-f", cid]), capture_output=True)
            if "crun" in rts:
                wrapper.append(timed(["unshare", "-m", "sh", "-c",
                                      "umount /sys/fs/cgroup/unified && exec true"])[0])
        base = {m: median(res["runc"][m]) for m in ("run", "cycle")}
        rows = []
        for name in rts:
            r, c = median(res[name]["run"]), median(res[name]["cycle"])
            rows.append([name, f"{r:.1f}", f"{r / base['run']:.2f}x", f"{c:.1f}",
                         f"{c / base['cycle']:.2f}x", max(res[name]["rss"])])
        if wrapper:
            rows.append(["(crun wrapper)", f"{median(wrapper):.1f}", "", "", "", ""])
        print(f"busybox bundle, /bin/true, N={a.n} each, medians in ms")
        table(rows, ["runtime", "run", "vs runc", "create+start+wait+delete", "vs runc",
                     "peak RSS KiB"])


if __name__ == "__main__":
    sys.exit(main())
