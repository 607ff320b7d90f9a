"""The egress suite's own "internet": a network namespace joined to the
host by a veth pair, with test hosts on several addresses, the services of
inet_server.py and a dnsmasq serving their names. Traffic goes only between
the host and that namespace (the runtime's network helper relays the container's
flows through host sockets, and the host routes 10.213.0.0/24 and fd77::/64
to the veth). Everything is removed by close(), even after a failure."""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NET = "10.213.0"
HOST_IP = f"{NET}.1"
ADDR = {
    "api.test": f"{NET}.10",
    "other.test": f"{NET}.11",
    "a.cdn.test": f"{NET}.20",
    "cdn.test": f"{NET}.21",
    "rebound": f"{NET}.30",  # where api.test is re-pointed
    "dns": f"{NET}.53",      # the upstream the resolver uses
    "dns2": f"{NET}.54",     # "another DNS server"
    "v6_listed": "fd77::10",
    "v6_other": "fd77::99",
}


def sh(*args, check=True, **kw):
    return subprocess.run([str(a) for a in args], check=check, capture_output=True, text=True,
                          timeout=20, **kw)


class Internet:
    def __init__(self, workdir: Path):
        self.tag = secrets.token_hex(3)
        self.ns = f"cmt-inet-{self.tag}"
        self.veth_host = f"cmi{self.tag}h"
        self.veth_ns = f"cmi{self.tag}i"
        self.dir = Path(workdir) / f"inet-{self.tag}"
        self.dir.mkdir(parents=True)
        self.hosts = self.dir / "hosts"
        self.procs: list[subprocess.Popen] = []
        self.up = False

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> "Internet":
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def _start(self):
        sh("ip", "netns", "add", self.ns)
        self.up = True
        sh("ip", "link", "add", self.veth_host, "type", "veth", "peer", "name", self.veth_ns)
        sh("ip", "link", "set", self.veth_ns, "netns", self.ns)
        sh("ip", "addr", "add", f"{HOST_IP}/24", "dev", self.veth_host)
        sh("ip", "-6", "addr", "add", "fd77::1/64", "dev", self.veth_host, "nodad")
        sh("ip", "link", "set", self.veth_host, "up")
        n = ["ip", "-n", self.ns]
        sh(*n, "link", "set", "lo", "up")
        sh(*n, "link", "set", self.veth_ns, "up")
        for key, a in ADDR.items():
            if ":" in a:
                sh(*n, "-6", "addr", "add", f"{a}/64", "dev", self.veth_ns, "nodad")
            else:
                sh(*n, "addr", "add", f"{a}/24", "dev", self.veth_ns)
        sh(*n, "addr", "add", f"{NET}.2/24", "dev", self.veth_ns)
        sh(*n, "route", "add", "default", "via", HOST_IP)
        sh(*n, "-6", "route", "add", "default", "via", "fd77::1")
        self.write_hosts()
        self._spawn_server()
        self._spawn_dnsmasq()

    def _exec(self, *cmd, **kw) -> subprocess.Popen:
        p = subprocess.Popen(["ip", "netns", "exec", self.ns, *map(str, cmd)], **kw)
        self.procs.append(p)
        return p

    def _spawn_server(self):
        p = self._exec(sys.executable, "-u", HERE / "inet_server.py", stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
        line = p.stdout.readline()
        assert line.strip() == "ready", f"inet_server did not start: {line!r}"

    def _spawn_dnsmasq(self):
        self.dnsmasq_pidfile = self.dir / "dnsmasq.pid"
        self.dnsmasq = self._exec(
            "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts",
            "--bind-interfaces", f"--listen-address={ADDR['dns']},{ADDR['dns2']}",
            f"--addn-hosts={self.hosts}", "--local-ttl=30", "--user=root", "--group=root",
            f"--pid-file={self.dnsmasq_pidfile}", f"--log-facility={self.dir / 'dnsmasq.log'}",
            "--cname=good.cdn.test,a.cdn.test", "--cname=bad.cdn.test,other.test",
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 5
        while time.time() < deadline:
            r = sh("ip", "netns", "exec", self.ns, "ss", "-lnu", check=False).stdout
            if f"{ADDR['dns']}:53" in r:
                return
            time.sleep(0.05)
        raise AssertionError("dnsmasq did not start: " + (self.dir / "dnsmasq.log").read_text()
                             if (self.dir / "dnsmasq.log").exists() else "no log")

    def write_hosts(self, api: str | None = None):
        api = api or ADDR["api.test"]
        self.hosts.write_text(
            f"{api} api.test\n{ADDR['other.test']} other.test\n{ADDR['a.cdn.test']} a.cdn.test\n"
            f"{ADDR['cdn.test']} cdn.test\n{ADDR['v6_listed']} api.test\n")

    def repoint_api(self, addr: str):
        """Re-point api.test (the DNS rebinding step) and make dnsmasq reload."""
        self.write_hosts(api=addr)
        self.dnsmasq.send_signal(signal.SIGHUP)
        deadline = time.time() + 5
        while time.time() < deadline:
            r = sh("ip", "netns", "exec", self.ns, "busybox", "nslookup", "api.test", ADDR["dns"],
                   check=False).stdout
            if addr in r:
                return
            time.sleep(0.05)
        raise AssertionError(f"dnsmasq still does not answer {addr} for api.test")

    def close(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.procs.clear()
        sh("ip", "link", "del", self.veth_host, check=False)
        if self.up:
            sh("ip", "netns", "del", self.ns, check=False)
            self.up = False


POD_NET = "10.216.0"


class Pod:
    """A netns joined to the test internet, as an engine's CNI leaves it."""

    def __init__(self, internet: Internet):
        tag = secrets.token_hex(3)
        self.ns = f"cmt-pod-{tag}"
        self.path = f"/run/netns/{self.ns}"
        self.veth_pod, self.veth_inet = f"cmp{tag}p", f"cmp{tag}i"
        self.internet = internet
        self.made = False

    def __enter__(self) -> "Pod":
        try:
            sh("ip", "netns", "add", self.ns)
            self.made = True
            sh("ip", "link", "add", self.veth_pod, "type", "veth", "peer", "name", self.veth_inet)
            sh("ip", "link", "set", self.veth_pod, "netns", self.ns)
            sh("ip", "link", "set", self.veth_inet, "netns", self.internet.ns)
            inet = ["ip", "-n", self.internet.ns]
            sh(*inet, "addr", "add", f"{POD_NET}.1/24", "dev", self.veth_inet)
            sh(*inet, "link", "set", self.veth_inet, "up")
            pod = ["ip", "-n", self.ns]
            sh(*pod, "link", "set", "lo", "up")
            sh(*pod, "addr", "add", f"{POD_NET}.2/24", "dev", self.veth_pod)
            sh(*pod, "link", "set", self.veth_pod, "up")
            sh(*pod, "route", "add", "default", "via", f"{POD_NET}.1")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        # The inet end goes with the pod end; the netns goes last.
        sh("ip", "-n", self.internet.ns, "link", "del", self.veth_inet, check=False)
        if self.made:
            sh("ip", "netns", "del", self.ns, check=False)
            self.made = False

    def tables(self) -> list[str]:
        out = sh("ip", "netns", "exec", self.ns, "nft", "list", "tables").stdout
        return sorted(l.strip() for l in out.splitlines() if l.strip())

    def links(self) -> list[str]:
        out = sh("ip", "-n", self.ns, "-o", "link").stdout
        return sorted(l.split(":")[1].strip() for l in out.splitlines())

    def connect(self, addr: str, port: int) -> str:
        """A connect from the pod namespace itself, outside any container."""
        code = ("import socket,sys\n"
                "s=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=3)\n"
                "print(s.recv(100).decode())\n")
        r = sh("ip", "netns", "exec", self.ns, "python3", "-c", code, addr, str(port), check=False)
        return r.stdout.strip() or r.stderr.strip().splitlines()[-1]
