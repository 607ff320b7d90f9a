"""The wire judge's cost (docs/egress.md, "Host, port and protocol on the
wire"), side by side with the filter off: `bench/egress.py --wire`.

An engine-style pod namespace joined to the test internet (inet.py) with
one pack container, allowed good.front.test:9443:https,
good.front.test:9081:http and good.front.test:9082 and :9083 (https: what
follows the ClientHello is not read by the judge). "No filter" is the same namespace with an
`accept` inserted at the head of the judge's nat chain and of the output
chain (one rule each; removed again for the judged rounds), so the rounds
interleave on the same container, resolver and path. A real TLS front
(integration/egress/cdn_server.py) serves the name. From each pod's
namespace, interleaved rounds of:
  - connect + TLS 1.3 handshake (Python's ssl), N sequential: median;
  - bulk upload after the head: one HTTP POST of M MiB to the sink (9081,
    an http entry: the judge parses the head and follows the body);
  - bulk upload and download after a ClientHello (9082, 9083: a real
    ClientHello of Python's TLS client, then M MiB of plain bytes, so that
    the measure is the relay's and not Python's TLS);
  - 200 TLS connections opened at once, each a handshake and a request:
    how many were answered, the slowest."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

FRONT_NAME = "good.front.test"
FRONT = "10.213.0.40"

CLIENT = r"""
import socket, ssl, statistics, sys, threading, time
mode, front, name, ca = sys.argv[1:5]
ctx = ssl.create_default_context(cafile=ca)
ctx.check_hostname = False
if mode == "hs":
    ts = []
    for _ in range(int(sys.argv[5])):
        t0 = time.perf_counter()
        s = ctx.wrap_socket(socket.create_connection((front, 9443), timeout=10), server_hostname=name)
        ts.append((time.perf_counter() - t0) * 1e6)
        s.close()
    print(statistics.median(ts))
elif mode == "bulk":
    n = int(sys.argv[5]) << 20
    chunk = b"x" * (1 << 20)
    t0 = time.perf_counter()
    c = socket.create_connection((front, 9081), timeout=30)
    c.sendall(b"POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n" % (name.encode(), n))
    for _ in range(n >> 20):
        c.sendall(chunk)
    c.shutdown(socket.SHUT_WR)
    got = int(c.recv(64))
    assert got >= n, got
    print((n >> 20) / (time.perf_counter() - t0))
elif mode in ("tlsup", "tlsdown"):
    n = int(sys.argv[5]) << 20
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=name)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = out.read()
    t0 = time.perf_counter()
    if mode == "tlsup":
        c = socket.create_connection((front, 9082), timeout=30)
        c.sendall(hello)
        chunk = memoryview(b"x" * (1 << 20))
        for _ in range(n >> 20):
            c.sendall(chunk)
        c.shutdown(socket.SHUT_WR)
        got = int(c.recv(64))
        assert got >= n, got
    else:
        c = socket.create_connection((front, 9083), timeout=30)
        c.sendall(hello + b"\nSEND %d\n" % n)
        buf = bytearray(1 << 20)
        got = 0
        while k := c.recv_into(buf):
            got += k
        assert got == n, got
    print((n >> 20) / (time.perf_counter() - t0))
elif mode == "conc":
    k = int(sys.argv[5]); ok = []; slow = [0.0]; lock = threading.Lock()
    start = threading.Event()
    def one():
        start.wait()
        t0 = time.perf_counter()
        try:
            s = ctx.wrap_socket(socket.create_connection((front, 9443), timeout=20), server_hostname=name)
            s.sendall(b"GET / HTTP/1.1\r\nHost: " + name.encode() + b"\r\n\r\n")
            s.settimeout(20)
            r = s.recv(4096)
            s.close()
            good = r.startswith(b"HTTP/1.1 200")
        except OSError:
            good = False
        with lock:
            ok.append(good); slow[0] = max(slow[0], time.perf_counter() - t0)
    th = [threading.Thread(target=one) for _ in range(k)]
    for t in th: t.start()
    start.set()
    for t in th: t.join()
    print(sum(ok), round(slow[0] * 1000))
"""


def run(sh, cmd_prefix, *args, timeout=300):
    r = subprocess.run([*cmd_prefix, sys.executable, "-c", CLIENT, *map(str, args)],
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        rules = subprocess.run([*cmd_prefix, "nft", "list", "ruleset"], capture_output=True,
                               text=True).stdout
        raise RuntimeError(f"{cmd_prefix} {args[0]}: {r.stderr.strip().splitlines()[-3:]}\n{rules}")
    return r.stdout.split()


def wire_bench(net, work: Path, root: Path, netprobe: Path, probe: Path, make_pack, set_args, env,
               comet: Path, repo: Path, rounds: int, n: int, mib: int) -> dict:
    from egress.inet import Pod  # noqa: E402

    def sh(*a, **kw):
        return subprocess.run([str(x) for x in a], check=True, capture_output=True, text=True,
                              timeout=60, **kw)

    certs = work / "cdn-certs"
    certs.mkdir()
    for name in (FRONT_NAME, "evil.front.test"):
        sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
           f"/CN={name}", "-addext", f"subjectAltName=DNS:{name}", "-keyout",
           certs / f"{name}.key", "-out", certs / f"{name}.pem")
    sh("ip", "-n", net.ns, "addr", "add", f"{FRONT}/24", "dev", net.veth_ns)
    cdn = subprocess.Popen(["ip", "netns", "exec", net.ns, sys.executable, "-u",
                            repo / "integration" / "egress" / "cdn_server.py", FRONT, certs],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    procs, pods = [], []
    try:
        assert cdn.stdout.readline().strip() == "ready"
        net.hosts.write_text(net.hosts.read_text() + f"{FRONT} {FRONT_NAME}\n")
        net.dnsmasq.send_signal(1)
        time.sleep(0.5)
        egress = [f"{{host: {FRONT_NAME}, port: 9443, protocol: https}}",
                  f"{{host: {FRONT_NAME}, port: 9081, protocol: http}}",
                  f"{{host: {FRONT_NAME}, port: 9082, protocol: https}}",
                  f"{{host: {FRONT_NAME}, port: 9083, protocol: https}}"]
        pod = Pod(net).__enter__()  # one pod: every pod of inet.py has the same addresses
        pods.append(pod)
        bundle = make_pack(work, "wire", egress, netprobe, probe)
        cfg = json.loads((bundle / "config.json").read_text())
        for x in cfg["linux"]["namespaces"]:
            if x["type"] == "network":
                x["path"] = pod.path
        (bundle / "config.json").write_text(json.dumps(cfg))
        # the agent stays (the judge lives as long as the container): 20 waits of 20 s
        set_args(bundle, [["resolve", FRONT_NAME]] + [["waitfile", "/workdir/never"]] * 20)
        cid = "bench-wire"
        with open(work / f"{cid}.out", "w") as out:  # helpers outlive create: no pipe
            subprocess.run([str(comet), "--root", str(root), "create", "--bundle", str(bundle),
                            cid], stdout=out, stderr=subprocess.STDOUT, check=True, env=env(),
                           timeout=60)
        procs.append(cid)
        table = json.loads((root / cid / "state.json").read_text())["egress_table"]
        subprocess.run([str(comet), "--root", str(root), "start", cid], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        ns = ["ip", "netns", "exec", pod.ns]
        deadline = time.time() + 20  # until the agent's lookup has pinned the name
        while FRONT not in sh(*ns, "nft", "list", "set", "inet", table, "judge4").stdout:
            assert time.time() < deadline, "the agent's lookup pinned nothing"
            time.sleep(0.1)

        # "No filter": an accept in front of the judge's nat chain and of the
        # output chain (one rule each), removed again for the judged rounds.
        bypass: list[str] = []

        def judged_mode(on: bool):
            if on:
                for chain, h in zip(("judge", "output"), bypass):
                    sh(*ns, "nft", "delete", "rule", "inet", table, chain, "handle", h)
                bypass.clear()
            elif not bypass:
                for chain in ("judge", "output"):
                    o = sh(*ns, "nft", "--echo", "--handle", "insert", "rule", "inet", table,
                           chain, "accept").stdout
                    bypass.append(o.rsplit("# handle", 1)[1].split()[0])

        ca = certs / f"{FRONT_NAME}.pem"
        hs = {True: [], False: []}
        bulk = {m: {True: [], False: []} for m in BULK}
        for r in range(rounds):
            for judged in ((True, False) if r % 2 == 0 else (False, True)):
                # a lookup through the container's resolver renews the pin
                # (it lives max(TTL, 60 s) + 5 s; a run takes longer)
                subprocess.run([*ns, "busybox", "nslookup", FRONT_NAME, "127.0.0.1"],
                               capture_output=True, timeout=30)
                judged_mode(judged)
                hs[judged].append(float(run(sh, ns, "hs", FRONT, FRONT_NAME, ca, n)[0]))
                for m in BULK:
                    bulk[m][judged].append(float(run(sh, ns, m, FRONT, FRONT_NAME, ca, mib)[0]))
        conc = {}
        for j in (True, False):
            subprocess.run([*ns, "busybox", "nslookup", FRONT_NAME, "127.0.0.1"],
                           capture_output=True, timeout=30)
            judged_mode(j)
            conc[j] = run(sh, ns, "conc", FRONT, FRONT_NAME, ca, 200)
        return {"hs": hs, "bulk": bulk, "conc": conc}
    finally:
        for cid in procs:
            subprocess.run([str(comet), "--root", str(root), "delete", "--force", cid],
                           capture_output=True, timeout=30)
        for pod in pods:
            pod.__exit__(None, None, None)
        cdn.kill()
        cdn.wait(timeout=10)
        subprocess.run(["ip", "-n", net.ns, "addr", "del", f"{FRONT}/24", "dev", net.veth_ns],
                       capture_output=True, timeout=30)


BULK = {"bulk": "bulk upload, one HTTP POST through an http entry",
        "tlsup": "bulk upload after a ClientHello (https entry)",
        "tlsdown": "bulk download after a ClientHello (https entry)"}


def report(res: dict) -> None:
    med = statistics.median
    hs, bulk, conc = res["hs"], res["bulk"], res["conc"]
    d_us = [a - b for a, b in zip(hs[True], hs[False])]
    print(f"connect + TLS handshake, median of per-round medians: judged {med(hs[True]):.0f} us, "
          f"no filter {med(hs[False]):.0f} us, added {med(d_us):+.0f} us "
          f"(paired rounds {min(d_us):+.0f}..{max(d_us):+.0f}); target <= +1000 us")
    for m, what in BULK.items():
        b = bulk[m]
        ratios = sorted(a / x for a, x in zip(b[True], b[False]))
        q = len(ratios) // 4
        print(f"{what} (MiB/s): judged {med(b[True]):.0f}, no filter {med(b[False]):.0f}, "
              f"paired median ratio {med(ratios):.3f} ({(med(ratios) - 1) * 100:+.1f}%; "
              f"quartiles {ratios[q]:.3f}..{ratios[-1 - q]:.3f}); target >= -5%")
    for j in (True, False):
        ok, slow = conc[j]
        print(f"200 concurrent TLS connections, {'judged' if j else 'no filter'}: {ok}/200 "
              f"answered, slowest {slow} ms")
