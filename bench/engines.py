#!/usr/bin/env python3
"""comet-runtime vs runc under real engines, side by side in one run.

  podman   `podman --runtime R run --rm --network none IMAGE true`
  ctr      `ctr run --rm --runc-binary R --runc-root DIR IMAGE ID true`
  cri      a pod cycle through containerd's CRI plugin with handler comet or
           runc: RunPodSandbox -> CreateContainer/StartContainer of `true` ->
           wait for its exit -> RemoveContainer -> StopPodSandbox ->
           RemovePodSandbox

Each is timed N times per runtime, interleaved (comet, runc, comet, ...),
after one warm-up each; the script prints medians and the comet/runc ratio.
The engines are set up as integration/engines does (docs/engines.md
snippets, private daemons and state in a temp dir, everything removed
afterwards); the runtimes are the real binaries, no wrapper.
"""
import argparse
import os
import statistics
import sys
import time

from lib import REPO, table  # bench/lib.py; the suite's own `lib` package comes next

sys.modules.pop("lib")
sys.path.insert(0, str(REPO / "integration"))

from engines import crilib  # noqa: E402
from engines import enginelib as el  # noqa: E402
from lib.probe import locate_or_build  # noqa: E402

RUNC = "/usr/sbin/runc"


def podman_env(work, comet):
    d = work / "podman"
    d.mkdir()
    conf = el.snippet_toml("podman-containers.conf")
    conf["engine"]["runtimes"]["comet-runtime"] = [str(comet)]
    conf = el.merge(conf, {"network": {"network_config_dir": str(d / "networks")}})
    (d / "containers.conf").write_text(el.to_toml(conf))
    env = dict(os.environ, CONTAINERS_CONF=str(d / "containers.conf"))
    return d, el.podman_argv(d), env


def measure(res, key, fn):
    """Time fn() into res[key]; a failed run is counted in res[key + "!"]
    (with its error) instead of timed."""
    t0 = time.perf_counter()
    try:
        fn()
    except (AssertionError, crilib.CRIError) as e:
        res.setdefault(key + "!", []).append(str(e).strip().splitlines()[-1][:300])
        return
    res[key].append((time.perf_counter() - t0) * 1000)


def compare(results, what, runs, n):
    """results[what] = {runtime: times}: one untimed warm-up run of each
    runs[runtime](), then N rounds, interleaved."""
    res = results[what] = {k: [] for k in runs}
    for k, fn in runs.items():
        measure({k: []}, k, fn)
    for _ in range(n):
        for k, fn in runs.items():
            measure(res, k, fn)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=10, help="runs per runtime and engine (>= 10 for the report)")
    ap.add_argument("--only", choices=["podman", "ctr", "cri"], action="append", help="run only these (repeatable)")
    a = ap.parse_args()
    only = set(a.only or ["podman", "ctr", "cri"])
    comet = el.RUNTIME
    if os.geteuid() != 0:
        sys.exit("engines bench: run as root")
    el.ensure_packages("podman", "containerd", "python3-grpcio", "protobuf-compiler", "python3-grpc-tools", "python3-yaml",
                       "runc")
    work = el.mkworkdir("cmt-bench-engines-")
    watch = el.LeakWatch(work)
    cleanup = el.Cleanup()
    results = {}  # what -> {"comet": [...], "runc": [...]}
    try:
        images = el.build_images(work / "images", locate_or_build(work))
        print(f"comet-runtime: {comet}\nrunc:          {RUNC}\nN = {a.n} per runtime (interleaved, 1 warm-up)\n",
              flush=True)

        if "podman" in only:
            pd, pargv, penv = podman_env(work, comet)
            cleanup.add("podman store", lambda: (el.run(pargv + ["rm", "-af", "-t", "0"], env=penv, timeout=120),
                                                 el.run(pargv + ["rmi", "-af"], env=penv, timeout=120),
                                                 el.umount_all_under(pd)))
            el.run(pargv + ["import", "--change", 'CMD ["/bin/sh"]', images.rootfs_tar, el.BB_IMAGE], env=penv,
                   check=True, timeout=120)

            def podman_run(rt):
                el.run(pargv + ["--runtime", rt, "run", "--rm", "--network", "none", el.BB_IMAGE, "true"], env=penv,
                       check=True, timeout=60)

            compare(results, "podman run --rm --network none IMAGE true",
                    {"comet": lambda: podman_run("comet-runtime"), "runc": lambda: podman_run("runc")}, a.n)

        if "ctr" in only or "cri" in only:
            (work / "containerd").mkdir()
            (work / "fifo").mkdir()
            daemon = crilib.CRIContainerd(work / "containerd", images, comet, work / "comet-k8s")
            cleanup.add("containerd", daemon.stop)
            cleanup.add("CRI pods", daemon.remove_everything)
            cd = daemon.cd
            cd.ctr("images", "import", images.bb_oci, check=True, timeout=120)

        if "ctr" in only:
            seq = iter(range(1 << 30))

            def ctr_run(binary, root):
                cid = f"bench-{next(seq)}"
                cd.ctr("run", "--rm", "--runc-binary", binary, "--runc-root", root, "--fifo-dir", work / "fifo",
                       el.BB_IMAGE, cid, "true", check=True, timeout=60)

            compare(results, "ctr run --rm IMAGE ID true",
                    {"comet": lambda: ctr_run(comet, work / "ctr-comet"),
                     "runc": lambda: ctr_run(RUNC, work / "ctr-runc")}, a.n)

        if "cri" in only:
            cg_root = f"/cmt-kubepods-bench-{os.getpid()}"
            watch.cgroup_paths.add(cg_root)
            cleanup.add("pod cgroups", lambda: crilib.remove_cgroup_tree(cg_root))
            pod_yaml = {"metadata": {"name": "bench"}, "spec": {}}
            spec = {"name": "c", "image": el.BB_IMAGE, "command": ["true"]}

            def cri_cycle(handler):
                pod = crilib.Pod(daemon.cri, work / "containerd", pod_yaml, handler, cg_root, {})
                try:
                    pod.run()
                    cid = pod.start_container(spec)
                    pod.wait_exited(cid)
                finally:
                    pod.teardown()

            compare(results, "CRI pod cycle (sandbox + 1 container)",
                    {"comet": lambda: cri_cycle("comet"), "runc": lambda: cri_cycle("runc")}, a.n)
    finally:
        errors = cleanup.run()
        el.remove_tree(work)
        watch.remove_engine_own()
        left = watch.problems()
        if errors or left:
            print("cleanup problems:\n  " + "\n  ".join(errors + left), file=sys.stderr)
            watch.force_clean()

    rows, failures = [], []
    for what, r in results.items():
        if not r["comet"] or not r["runc"]:
            failures.append(f"{what}: no successful run ({r})")
            continue
        mc, mr = statistics.median(r["comet"]), statistics.median(r["runc"])
        nf = {k: len(r.get(k + "!", [])) for k in ("comet", "runc")}
        rows.append([what, f"{mc:.1f}", f"{mr:.1f}", f"{mc / mr:.2f}",
                     f"{min(r['comet']):.1f}-{max(r['comet']):.1f}", f"{min(r['runc']):.1f}-{max(r['runc']):.1f}",
                     f"{nf['comet']}/{nf['runc']}"])
        for k in ("comet", "runc"):
            for err in r.get(k + "!", [])[:3]:
                failures.append(f"{what} [{k}]: {err}")
    table(rows, ["what", "comet ms", "runc ms", "comet/runc", "comet min-max", "runc min-max", "failed c/r"])
    print(f"\n(medians of the successful runs out of {a.n} each; ratio < 1 means comet-runtime is faster;"
          " failed runs are not timed)")
    if failures:
        print("\nfailed runs:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
