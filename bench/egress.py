#!/usr/bin/env python3
"""Egress benchmark (issue 5, docs/egress.md), side by side in one run.

The egress suite's own internet (integration/egress/inet.py) and probe
(netprobe.c). Each round runs the same pack twice, interleaved:
  filtered   as the runtime sets it up (ruleset, network helper, resolver)
  no filter  the same container with the output chain deleted before
             `start` (sets, helper and resolver stay: only the filter goes)
and measures, inside the container:
  connect    median of N blocking connect+close to an allowed test host,
             by IP after one lookup (so excluding DNS)
  bulk       MiB/s of one TCP upload of M MiB to a sink on an allowed port
  dns        resolver answer time for an allowed name with a warm upstream:
             the same name N times (pinned once), and N distinct names
             (each answer adds a set element first)
Ruleset load time: the "ruleset_ms" the runtime records in
<state dir>/egress.json (libnftables' context and commands in the
container's netns) for a 50-entry manifest, N creates. The upstream's own
answer time (dnsmasq queried from the host) is printed beside the resolver's.

Bulk through the network helper (slirp4netns; pasta before 2026-12-06)
swings by several times between runs on a small VM, so the filter's own
cost on a bulk flow is also measured without the helper: the
container's ruleset (dumped from a created container) loaded into a client
namespace of the bench's own, joined to a server namespace by a veth pair,
against the same pair without it, interleaved (4 x M MiB per upload). And
through the container itself without the helper: the same pack joined to a
network namespace of the bench's own (`linux.namespaces[].path`, as an
engine's pod) wired to the test internet by a veth pair, filtered against
the same container with its table's output chain deleted before `start`,
interleaved (4 x M MiB per upload).

Usage: bench/egress.sh [--rounds R] [--n N] [--mib M] [--loads L] [--bulk-rounds B]   (as root)"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "integration"))
from egress.inet import ADDR, Internet, Pod  # noqa: E402
from lib.bundle import make_rootfs  # noqa: E402

COMET = Path(os.environ.get("COMET_RUNTIME", REPO / "build" / "runtime" / "comet-runtime"))
PROBE_SRC = REPO / "integration" / "probe" / "probe.c"
NETPROBE_SRC = REPO / "integration" / "egress" / "netprobe.c"


def sh(*a, **kw):
    return subprocess.run([str(x) for x in a], check=True, capture_output=True, text=True,
                          timeout=60, **kw)


def make_pack(work: Path, name: str, egress: list[str], netprobe: Path, probe: Path) -> Path:
    pack = work / f"pack-{name}"
    pack.mkdir()
    (pack / "agent").write_text("bench\n")
    lines = "".join(f"    - {e}\n" for e in egress)
    (pack / "soyapack.yaml").write_text(
        f"apiVersion: soyapack/v0\nname: bench-{name}\nversion: 1.0.0\n"
        "runtime:\n  interpreter: /netprobe\n  entrypoint: agent\n"
        f"capabilities:\n  egress:\n{lines}  fs:\n    read: [/workdir]\n"
        "  determinism_tier: read-only\n")
    rootfs = work / f"rootfs-{name}"
    make_rootfs(rootfs, probe)
    shutil.copy2(netprobe, rootfs / "netprobe")
    (rootfs / "etc" / "resolv.conf").write_text("")
    bundle = work / f"bundle-{name}"
    sh(COMET, "pack", "bundle", pack, "--rootfs", rootfs, "--bundle", bundle)
    return bundle


def set_args(bundle: Path, cmds: list[list[str]]):
    cfg = json.loads((bundle / "config.json").read_text())
    args = ["/netprobe", "agent"]
    for i, c in enumerate(cmds):
        args += (["--"] if i else []) + c
    cfg["process"]["args"] = args
    (bundle / "config.json").write_text(json.dumps(cfg))


def env():
    e = dict(os.environ)
    e["COMET_DNS_UPSTREAM"] = ADDR["dns"]
    return e


def run_container(root: Path, bundle: Path, cid: str, work: Path, unfilter: bool) -> list[dict]:
    out = work / f"{cid}.out"
    with open(out, "w") as f:
        subprocess.run([str(COMET), "--root", str(root), "create", "--net-helper", "--bundle", str(bundle), cid],
                       stdout=f, stderr=subprocess.STDOUT, check=True, env=env(), timeout=30)
    try:
        if unfilter:
            st = json.loads(sh(COMET, "--root", root, "state", cid).stdout)
            table = json.loads((root / cid / "state.json").read_text())["egress_table"]
            sh("nsenter", f"--net=/proc/{st['pid']}/ns/net", "nft", "delete", "chain", "inet",
               table, "output")
        sh(COMET, "--root", root, "start", cid)
        deadline = time.time() + 60
        while time.time() < deadline:
            st = json.loads(sh(COMET, "--root", root, "state", cid).stdout)
            if st["status"] == "stopped":
                break
            time.sleep(0.05)
    finally:
        subprocess.run([str(COMET), "--root", str(root), "delete", "--force", cid],
                       capture_output=True, timeout=30)
    return [json.loads(l) for l in out.read_text().splitlines() if l.startswith("{")]


def ruleset_ms(root: Path, bundle: Path, cid: str) -> float:
    # stdio to /dev/null: the init inherits it (a pipe would never close)
    subprocess.run([str(COMET), "--root", str(root), "create", "--net-helper", "--bundle", str(bundle), cid],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True, env=env(), timeout=30)
    try:
        return json.loads((root / cid / "egress.json").read_text())["ruleset_ms"]
    finally:
        subprocess.run([str(COMET), "--root", str(root), "delete", "--force", cid],
                       capture_output=True, timeout=30)


def host_dns_us(server: str, name: str, n: int) -> float:
    q = struct.pack(">HHHHHH", 1, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack(">HH", 1, 1)
    v = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        s.connect((server, 53))
        for _ in range(n):
            t0 = time.perf_counter()
            s.send(q)
            s.recv(1500)
            v.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(v)


def pct_quartiles(ratios):
    if len(ratios) < 4:
        return "n/a"
    q = statistics.quantiles(ratios, n=4)
    return f"{(q[0] - 1) * 100:+.1f} / {(q[2] - 1) * 100:+.1f}%"


def med(xs):
    return statistics.median(xs) if xs else float("nan")


SINK = """
import socket, struct
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5001)); s.listen(4); print("ready", flush=True)
while True:
    c, _ = s.accept()
    n = struct.unpack("!Q", c.recv(8, socket.MSG_WAITALL))[0]
    buf = bytearray(1 << 20); got = 0
    while got < n:
        k = c.recv_into(buf)
        if not k: break
        got += k
    c.sendall(b"ok"); c.close()
"""

UPLOAD = """
import socket, struct, sys, time
n = int(sys.argv[2]) << 20; chunk = b"x" * (1 << 20)
t0 = time.perf_counter()
c = socket.create_connection((sys.argv[1], 5001))
c.sendall(struct.pack("!Q", n))
for _ in range(n >> 20): c.sendall(chunk)
assert c.recv(2) == b"ok"
print((n >> 20) / (time.perf_counter() - t0))
"""


def filter_bulk(ruleset: str, mib: int, rounds: int) -> tuple[list[float], list[float]]:
    """The filter alone on a bulk flow, without a helper: two namespaces of our
    own joined by a veth pair; the client namespace holds the container's
    ruleset (with the server's address in its set) or nothing, alternately.
    Returns (filtered, unfiltered) MiB/s per round."""
    tag = f"{os.getpid() % 100000}"
    cli, srv = f"cmt-bfc-{tag}", f"cmt-bfs-{tag}"
    made, sink = [], None
    try:
        for ns in (cli, srv):
            sh("ip", "netns", "add", ns)
            made.append(ns)
        sh("ip", "link", "add", f"cbf{tag}c", "netns", cli, "type", "veth", "peer", "name",
           f"cbf{tag}s", "netns", srv)
        for ns, dev, addr in ((cli, f"cbf{tag}c", "10.218.0.1"), (srv, f"cbf{tag}s", "10.218.0.2")):
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        sink = subprocess.Popen(["ip", "netns", "exec", srv, sys.executable, "-c", SINK],
                                stdout=subprocess.PIPE, text=True)
        assert sink.stdout.readline().strip() == "ready"
        out = {True: [], False: []}
        for r in range(rounds):
            for filtered in ((True, False) if r % 2 == 0 else (False, True)):
                if filtered:
                    sh("ip", "netns", "exec", cli, "nft", "-f", "-", input=ruleset)
                    sh("ip", "netns", "exec", cli, "nft", "add element inet comet allow4 "
                       "{ 10.218.0.2 . tcp . 5001 }")
                v = float(sh("ip", "netns", "exec", cli, sys.executable, "-c", UPLOAD,
                             "10.218.0.2", str(mib)).stdout)
                out[filtered].append(v)
                if filtered:
                    sh("ip", "netns", "exec", cli, "nft", "delete", "table", "inet", "comet")
        return out[True], out[False]
    finally:
        if sink:
            sink.kill()
            sink.wait(timeout=10)
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


def engine_bulk(net: Internet, work: Path, root: Path, egress: list[str], netprobe: Path,
                probe: Path, mib: int, rounds: int) -> tuple[list[float], list[float]]:
    """Bulk through the container itself, without a helper: the pack joins a
    network namespace of the bench's own (`linux.namespaces[].path`, as an
    engine's pod), wired to the test internet by a veth pair. The runtime
    loads its table there; "no filter" is the same container with that
    table's output chain deleted before `start`. Returns (filtered,
    unfiltered) MiB/s per round."""
    out = {True: [], False: []}
    with Pod(net) as pod:
        bundle = make_pack(work, "engine", egress, netprobe, probe)
        cfg = json.loads((bundle / "config.json").read_text())
        for n in cfg["linux"]["namespaces"]:
            if n["type"] == "network":
                n["path"] = pod.path
        (bundle / "config.json").write_text(json.dumps(cfg))
        # the lookup pins api.test's address for its ports (docs/egress.md)
        set_args(bundle, [["resolve", "api.test"], ["bulk", ADDR["api.test"], "5001", str(mib)]])
        for r in range(rounds):
            for unfilter in ((False, True) if r % 2 == 0 else (True, False)):
                lines = run_container(root, bundle, f"bench-eg-pod-{r}-{int(unfilter)}", work,
                                      unfilter)
                assert len(lines) == 2 and [l["result"] for l in lines] == ["NOERROR", "ok"], lines
                out[not unfilter].append(lines[1]["mib_s"])
    return out[True], out[False]


def container_ruleset(root: Path, bundle: Path, cid: str) -> str:
    """The ruleset as the runtime loaded it, from a created (never started)
    container: its sets are still empty."""
    subprocess.run([str(COMET), "--root", str(root), "create", "--net-helper", "--bundle", str(bundle), cid],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True, env=env(), timeout=30)
    try:
        st = json.loads(sh(COMET, "--root", root, "state", cid).stdout)
        return sh("nsenter", f"--net=/proc/{st['pid']}/ns/net", "nft", "list", "ruleset").stdout
    finally:
        subprocess.run([str(COMET), "--root", str(root), "delete", "--force", cid],
                       capture_output=True, timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--loads", type=int, default=20)
    ap.add_argument("--bulk-rounds", type=int, default=15,
                    help="interleaved rounds of the two bulk measures without the helper")
    ap.add_argument("--wire", action="store_true",
                    help="only the wire judge's figures (bench/egress_wire.py)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/egress.py must run as root")
    work = Path(tempfile.mkdtemp(prefix="comet-bench-egress-"))
    os.chmod(work, 0o755)
    root = work / "root"
    net = None
    try:
        probe, netprobe = work / "probe", work / "netprobe"
        sh("cc", "-static", "-O2", "-o", probe, PROBE_SRC)
        sh("cc", "-static", "-O2", "-o", netprobe, NETPROBE_SRC)
        net = Internet(work).start()
        if a.wire:
            sys.path.insert(0, str(REPO / "bench"))
            import egress_wire  # noqa: E402
            egress_wire.report(egress_wire.wire_bench(net, work, root, netprobe, probe, make_pack,
                                                      set_args, env, COMET, REPO, a.rounds, a.n,
                                                      a.mib))
            return
        # Names for the distinct-name DNS runs (x<i>.cdn.test -> 10.213.1.<i>).
        base = net.hosts.read_text()
        extra = "".join(f"10.213.{1 + i // 250}.{i % 250 + 1} x{i}.cdn.test\n" for i in range(a.n))
        net.hosts.write_text(base + extra)
        net.dnsmasq.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        egress = ["{host: api.test, port: 443, protocol: https}",
                  "{host: api.test, port: 5001, protocol: tcp}",
                  '{host: "*.cdn.test", port: 8443, protocol: tcp}']
        bundle = make_pack(work, "main", egress, netprobe, probe)
        api = ADDR["api.test"]
        set_args(bundle, [["resolve", "api.test"], ["connbench", api, "443", str(a.n)],
                          ["bulk", api, "5001", str(a.mib)], ["dnsbench", "api.test", str(a.n)],
                          ["dnsbench", "x%d.cdn.test", str(a.n)]])
        res = {False: [], True: []}  # unfilter -> rounds
        bulk_failed = {False: 0, True: 0}
        for r in range(a.rounds):
            for unfilter in ((False, True) if r % 2 == 0 else (True, False)):
                lines = run_container(root, bundle, f"bench-eg-{r}-{int(unfilter)}", work, unfilter)
                # pasta's bulk path stalled now and then (docs/egress.md): a
                # failed round's bulk figure is dropped and counted, the rest kept
                assert len(lines) == 5 and all(l["result"] in ("ok", "NOERROR")
                                               for i, l in enumerate(lines) if i != 2), lines
                if lines[2]["result"] != "ok":
                    bulk_failed[unfilter] += 1
                res[unfilter].append(lines)
        fifty = ([f"{{host: s{i}.test, port: 443, protocol: https}}" for i in range(25)] +
                 [f"{{host: 10.214.0.{i + 1}, port: 8443, protocol: tcp}}" for i in range(25)])
        b50 = make_pack(work, "fifty", fifty, netprobe, probe)
        set_args(b50, [["sleep", "0"]])
        loads = [ruleset_ms(root, b50, f"bench-eg-load-{i}") for i in range(a.loads)]
        b4 = bundle
        loads4 = [ruleset_ms(root, b4, f"bench-eg-load4-{i}") for i in range(a.loads)]
        upstream = [host_dns_us(ADDR["dns"], "api.test", a.n) for _ in range(a.rounds)]
        ruleset = container_ruleset(root, bundle, "bench-eg-ruleset")
        assert "table inet comet" in ruleset, ruleset
        veth_f, veth_n = filter_bulk(ruleset, a.mib * 4, a.bulk_rounds)
        pod_f, pod_n = engine_bulk(net, work, root, egress, netprobe, probe, a.mib * 4,
                                   a.bulk_rounds)
    finally:
        if net:
            net.close()
        if root.exists():
            for cid in os.listdir(root):
                if not cid.startswith("."):
                    subprocess.run([str(COMET), "--root", str(root), "delete", "--force", cid],
                                   capture_output=True, timeout=30)
        shutil.rmtree(work, ignore_errors=True)

    def col(unf, idx, key):
        return med([rnd[idx][key] for rnd in res[unf] if rnd[idx]["result"] in ("ok", "NOERROR")])

    c_f, c_n = col(False, 1, "median_us"), col(True, 1, "median_us")
    b_f, b_n = col(False, 2, "mib_s"), col(True, 2, "mib_s")
    d_f, d_n = col(False, 3, "median_us"), col(True, 3, "median_us")
    x_f, x_n = col(False, 4, "median_us"), col(True, 4, "median_us")
    load = os.getloadavg()[0]
    print(f"\negress benchmark: {a.rounds} rounds interleaved, N={a.n}, bulk {a.mib} MiB, "
          f"load {load:.1f}; medians\n")
    print("| measure | filtered | no filter | difference | target |")
    print("|---|---|---|---|---|")
    print(f"| TCP connect to an allowed host, excluding DNS | {c_f:.0f} us | {c_n:.0f} us | "
          f"{c_f - c_n:+.0f} us | at most +1000 us |")
    print(f"| bulk TCP upload ({a.mib} MiB) through the network helper | {b_f:.0f} MiB/s | {b_n:.0f} MiB/s | "
          f"{(b_f / b_n - 1) * 100:+.1f}% (stalled uploads dropped: {bulk_failed[False]} / "
          f"{bulk_failed[True]}) | at most -5% |")
    print(f"| resolver answer, allowed name, warm upstream (pinned) | {d_f:.0f} us | {d_n:.0f} us | "
          f"upstream alone {med(upstream):.0f} us | under 1000 us |")
    print(f"| resolver answer, a new name each time (adds a pin) | {x_f:.0f} us | {x_n:.0f} us | | "
          "under 1000 us |")
    print(f"| ruleset load, 50-entry manifest | {med(loads):.2f} ms | | (4 entries: "
          f"{med(loads4):.2f} ms) | under 5 ms |")
    # Interleaved A/B rounds: the difference is the median of the per-round
    # ratios (each pair ran back to back), beside the medians of each side.
    for what, f, n in ((f"bulk TCP upload ({a.mib * 4} MiB), the filter alone: veth, no helper",
                        veth_f, veth_n),
                       (f"bulk TCP upload ({a.mib * 4} MiB) through the container, engine netns "
                        "(veth), no helper", pod_f, pod_n)):
        pairs = [x / y for x, y in zip(f, n)]
        print(f"| {what} | {med(f):.0f} MiB/s | {med(n):.0f} MiB/s | "
              f"{(med(pairs) - 1) * 100:+.1f}% (median of {len(pairs)} paired rounds; "
              f"quartiles {pct_quartiles(pairs)}) | at most -5% |")
    print(f"\nbulk through the container, engine netns, per round (filtered / no filter): "
          + ", ".join(f"{x:.0f}/{y:.0f}" for x, y in zip(pod_f, pod_n)) + " MiB/s")
    q = statistics.quantiles(loads, n=4) if len(loads) >= 4 else [float("nan")] * 3
    print(f"\nruleset load, 50 entries, N={len(loads)}: min {min(loads):.2f}, quartiles "
          f"{q[0]:.2f} / {q[1]:.2f} / {q[2]:.2f}, max {max(loads):.2f} ms (libnftables context "
          f"+ commands; entering the namespace and lo up are apart)")


if __name__ == "__main__":
    main()
