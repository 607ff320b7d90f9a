"""Egress enforcement end to end (issue 5, docs/egress.md).

The test builds its own internet (inet.py: a netns with test hosts, TCP
greeters on 80/443/8080/8443, a UDP echo, dnsmasq on two addresses), compiles
a pack that allows api.test:443:https and *.cdn.test:8443:tcp with
`comet-runtime pack bundle`, and runs it with `comet-runtime run` on a
busybox rootfs whose interpreter is netprobe.c (static; one JSON line per
check, with the errno the kernel gave). The resolver's upstream is the
test's dnsmasq (COMET_DNS_UPSTREAM).

Every refusal has a positive control: the same address, port or DNS server
answers from the host, so a refusal is the filter's doing."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from lib import config as cfg

from .conftest import ISSUE_EGRESS, dns_env
from .inet import ADDR, HOST_IP, sh

pytestmark = pytest.mark.comet_only

def host_connect(addr: str, port: int) -> str:
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    with socket.socket(fam, socket.SOCK_STREAM) as s:
        s.settimeout(2)
        s.connect((addr, port))
        return s.recv(100).decode()


def host_dns(server: str, name: str) -> str:
    r = subprocess.run(["busybox", "nslookup", name, server], capture_output=True, text=True,
                       timeout=10)
    return r.stdout


def by_cmd(lines):
    return [(l["cmd"], l["arg"], l["result"]) for l in lines]


# -- allowed -------------------------------------------------------------------------


def test_allowed_connects(internet, make_pack):
    pack = make_pack()
    r = pack.run(["tcp", "api.test", "443"], ["tcp", "a.cdn.test", "8443"],
                 ["resolve", "api.test", "aaaa"], ["tcp", ADDR["v6_listed"], "443"])
    assert r[0]["result"] == "ok", r[0]
    assert r[0]["greeting"] == f"hello {ADDR['api.test']} 443 "
    assert r[1]["result"] == "ok", r[1]
    assert r[1]["greeting"] == f"hello {ADDR['a.cdn.test']} 8443 "
    assert r[2]["result"] == "NOERROR" and r[2]["addrs"] == [ADDR["v6_listed"]], r[2]
    assert r[3]["result"] == "ok", r[3]  # IPv6, once the resolver answered it


def test_cname_chain_only_through_allowed_names(internet, make_pack):
    pack = make_pack()
    r = pack.run(["resolve", "good.cdn.test"], ["tcp", "good.cdn.test", "8443"],
                 ["resolve", "bad.cdn.test"], ["tcp", ADDR["other.test"], "8443"])
    assert r[0]["result"] == "NOERROR" and ADDR["a.cdn.test"] in r[0]["addrs"], r[0]
    assert r[1]["result"] == "ok", r[1]
    # bad.cdn.test CNAME other.test: the chain leaves the allowlist
    assert "bad.cdn.test" in host_dns(ADDR["dns"], "bad.cdn.test")
    assert r[2]["result"] == "NXDOMAIN", r[2]  # issue 26: not REFUSED (EAI_AGAIN)
    assert r[3]["result"] == "ECONNREFUSED", r[3]


# -- refused with ECONNREFUSED -------------------------------------------------------


def test_refused_connects(internet, make_pack):
    # positive controls: every target answers from the host
    assert host_connect(ADDR["api.test"], 8443).startswith("hello")
    assert host_connect(ADDR["other.test"], 443).startswith("hello")
    assert host_connect(ADDR["cdn.test"], 8443).startswith("hello")
    assert ADDR["other.test"] in host_dns(ADDR["dns"], "other.test")
    pack = make_pack()
    r = pack.run(["tcp", "api.test", "8443"],          # allowed name, other port
                 ["resolve", "other.test"],            # not allowed: no answer at all
                 ["tcp", ADDR["other.test"], "443"],   # its raw IP
                 ["tcp", ADDR["cdn.test"], "8443"],    # another host's raw IP, allowed port
                 ["resolve", "cdn.test"],              # wildcard: strict subdomains only
                 ["tcp", "cdn.test", "8443"])
    assert by_cmd(r) == [
        ("tcp", "api.test:8443", "ECONNREFUSED"),
        ("resolve", "other.test", "NXDOMAIN"),
        ("tcp", f"{ADDR['other.test']}:443", "ECONNREFUSED"),
        ("tcp", f"{ADDR['cdn.test']}:8443", "ECONNREFUSED"),
        ("resolve", "cdn.test", "NXDOMAIN"),
        ("tcp", "cdn.test:8443", "DNS_NXDOMAIN"),
    ]


def test_undeclared_port_is_econnrefused(internet, make_pack):
    assert host_connect(ADDR["api.test"], 80).startswith("hello")
    r = make_pack().run(["tcp", ADDR["api.test"], "80"], ["tcp", ADDR["other.test"], "8080"])
    assert [l["result"] for l in r] == ["ECONNREFUSED", "ECONNREFUSED"], r


# -- no path out ------------------------------------------------------------------------


def test_no_path_out(internet, make_pack):
    # controls: both DNS servers answer the host, the UDP echo echoes
    assert ADDR["api.test"] in host_dns(ADDR["dns2"], "api.test")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.settimeout(2)
        u.sendto(b"x", (ADDR["api.test"], 9000))
        assert u.recv(10) == b"x"
    assert host_connect(ADDR["v6_other"], 443).startswith("hello")
    pack = make_pack()
    r = pack.run(["dnsudp", ADDR["dns2"], "api.test"],   # another DNS server, UDP
                 ["dnsudp", ADDR["dns"], "api.test"],    # even the resolver's own upstream
                 ["dnstcp", ADDR["dns2"]],               # DNS over TCP
                 ["udp", ADDR["api.test"], "9000"],      # a UDP send
                 ["tcp", ADDR["v6_other"], "443"],       # IPv6 to an unlisted address
                 ["tcp", ADDR["api.test"], "853"],       # DoT port
                 ["uring", ADDR["other.test"], "443"],   # io_uring connect
                 ["nft"])                                # add an nft table
    # DNS elsewhere is dropped (the send fails, or nothing ever answers)
    assert r[0]["result"] in ("EPERM", "ETIMEDOUT"), r[0]
    assert r[1]["result"] in ("EPERM", "ETIMEDOUT"), r[1]
    assert r[2]["result"] in ("EPERM", "ETIMEDOUT"), r[2]
    # UDP: the send is dropped (EPERM) and the port-unreachable arrives
    assert r[3]["send"] == "EPERM" and r[3]["recv"] == "ECONNREFUSED", r[3]
    assert r[4]["result"] == "ECONNREFUSED", r[4]
    assert r[5]["result"] in ("EPERM", "ETIMEDOUT", "ECONNREFUSED", "EACCES"), r[5]
    # io_uring: either refused outright (lock-down) or its connect meets the rules
    assert r[6]["result"] != "ok", r[6]
    if r[6]["stage"] == "connect":
        assert r[6]["result"] == "ECONNREFUSED", r[6]
    # no CAP_NET_ADMIN: the ruleset cannot be changed
    assert r[7]["result"] == "EPERM", r[7]


def test_raw_packet_io_uring_unshare_refused(internet, make_pack):
    """The lock-down seccomp filter (policy.hpp): these never get as far as
    a packet."""
    pack = make_pack()
    r = pack.run(["raw"], ["packet"], ["uring", ADDR["other.test"], "443"], ["unshare"], ["nft"])
    assert r[0]["result"] == "EPERM", r[0]
    assert r[1]["result"] == "EPERM", r[1]
    assert r[2]["stage"] == "setup" and r[2]["result"] in ("EPERM", "ENOSYS"), r[2]
    assert r[3]["net"] == "EPERM" and r[3]["user_net"] == "EPERM", r[3]
    assert r[4]["result"] == "EPERM", r[4]


# -- DNS rebinding ---------------------------------------------------------------------------


def test_dns_rebinding(internet, make_pack, harness):
    pack = make_pack()
    go = pack.workdir / "go"
    new = ADDR["rebound"]
    assert host_connect(new, 443).startswith("hello")
    pack.set_commands(["resolve", "api.test"], ["tcp", new, "443"], ["waitfile", "/workdir/go"],
                      ["tcp", new, "443"], ["resolve", "api.test"], ["tcp", new, "443"],
                      ["tcp", "api.test", "443"])
    cid = harness.rt.new_id("rebind")
    p = subprocess.Popen([str(cfg.RUNTIME), "--root", str(harness.rt.root), "run", "--net-helper", "--bundle",
                          str(pack.bundle), cid], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dns_env(), text=True)
    try:
        lines = [json.loads(p.stdout.readline()) for _ in range(2)]
        assert lines[0]["result"] == "NOERROR" and lines[0]["addrs"] == [ADDR["api.test"]], lines
        assert lines[1]["result"] == "ECONNREFUSED", lines  # not (yet) api.test's
        internet.repoint_api(new)
        go.write_text("")
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        internet.write_hosts()
        internet.repoint_api(ADDR["api.test"])
    lines += [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    assert p.returncode in (0, 3), err
    assert [l["result"] for l in lines[2:]] == ["ok", "ECONNREFUSED", "NOERROR", "ok", "ok"], lines
    # re-pointed, but not yet answered by the resolver: still blocked
    assert lines[3]["arg"] == f"{new}:443"
    assert lines[4]["addrs"] == [new]
    assert lines[6]["greeting"] == f"hello {new} 443 "


# -- no egress: no network ---------------------------------------------------------------------


def _state_record(harness, cid) -> dict:
    return json.loads((harness.rt.root / cid / "state.json").read_text())


def test_no_egress_gets_no_network(internet, make_pack, harness):
    pack = make_pack("[]")
    r = pack.run(["tcp", ADDR["api.test"], "443"], ["resolve", "api.test"])
    assert r[0]["result"] in ("ENETUNREACH", "EPERM", "EAFNOSUPPORT", "EACCES"), r[0]
    assert r[1]["result"] == "NONAMESERVER", r[1]  # no resolver, resolv.conf untouched
    pack.set_commands(["sleep", "30"])
    cid = harness.rt.new_id("none")
    harness.rt("create", "--net-helper", "--bundle", str(pack.bundle), cid, env=dns_env()).expect_ok()
    rec = _state_record(harness, cid)
    assert rec["egress_resolver_pid"] == 0 and rec["egress_net_pid"] == 0, rec
    pid = rec["pid"]
    ns_links = subprocess.run(["nsenter", "-t", str(pid), "-n", "ip", "-o", "link"],
                              capture_output=True, text=True, timeout=10).stdout
    assert [l.split(":")[1].strip() for l in ns_links.splitlines()] == ["lo"], ns_links
    harness.rt("delete", "--force", cid).expect_ok()


# -- clean-up ------------------------------------------------------------------------------------


def _netns_inode(pid: int) -> int:
    return os.stat(f"/proc/{pid}/ns/net").st_ino


def _netns_holders(ino: int) -> list[str]:
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.stat(f"/proc/{d}/ns/net").st_ino == ino:
                out.append(d + " " + Path(f"/proc/{d}/cmdline").read_text().replace("\0", " "))
        except OSError:
            pass
    return out


def _host_state():
    return (sh("ip", "-o", "link").stdout.count("\n"), sh("nft", "list", "tables").stdout,
            sh("ip", "netns", "list").stdout)


def _alive(pid: int, start: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return int(stat.rsplit(")", 1)[1].split()[19]) == start and stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.serial  # compares the host's links, nft tables and named netns
@pytest.mark.parametrize("how", ["delete", "init-exit", "fault-after-nft"])
def test_cleanup_after_delete(internet, make_pack, harness, how):
    pack = make_pack()
    pack.set_commands(["sleep", "1.5" if how == "init-exit" else "60"])
    before = _host_state()
    cid = harness.rt.new_id("clean")
    env = dns_env()
    if how == "fault-after-nft":
        env["COMET_FAULT"] = "create-after-nft"
        res = harness.rt("create", "--net-helper", "--bundle", str(pack.bundle), cid, env=env)
        assert res.rc != 0  # SIGKILLed at the fault point
    else:
        harness.rt("create", "--net-helper", "--bundle", str(pack.bundle), cid, env=env).expect_ok()
        harness.rt("start", cid).expect_ok()
    rec = _state_record(harness, cid)
    resolver = (rec["egress_resolver_pid"], rec["egress_resolver_start"])
    helper = (rec["egress_net_pid"], rec["egress_net_start"])  # slirp4netns (or pasta)
    assert resolver[0] > 0 and helper[0] > 0, rec
    assert rec["egress_table"] == "comet" and rec["egress_netns"] == "", rec
    ns = None
    if how != "fault-after-nft":  # there the init dies with its runtime
        assert _alive(*resolver) and _alive(*helper)
        ns = _netns_inode(rec["pid"])
        assert ns != _netns_inode(os.getpid())
    if how == "init-exit":
        # the init exits by itself: its helpers follow it, before any delete
        deadline = time.time() + 10
        while time.time() < deadline and (_alive(*resolver) or _alive(*helper)):
            time.sleep(0.05)
        assert not _alive(*resolver) and not _alive(*helper)
    harness.rt("delete", "--force", cid).expect_ok()
    deadline = time.time() + 5
    while time.time() < deadline and ns and _netns_holders(ns):
        time.sleep(0.05)
    assert not _alive(*resolver), "resolver left running"
    assert not _alive(*helper), "the network helper left running"
    holders = _netns_holders(ns) if ns else []
    assert not holders, f"the container's netns is still held by {holders}"
    assert _host_state() == before
    assert not (harness.rt.root / cid).exists()


# -- unrestricted -----------------------------------------------------------------------------------


def test_open_egress(internet, make_pack):
    pack = make_pack('["*"]')
    r = pack.run(["tcp", "other.test", "443"], ["tcp", ADDR["cdn.test"], "80"],
                 ["dnsudp", ADDR["dns2"], "api.test"])
    assert r[0]["result"] == "ok", r[0]
    assert r[1]["result"] == "ok", r[1]
    assert r[2]["result"] in ("EPERM", "ETIMEDOUT"), r[2]  # DNS still only via the resolver


# -- upstreams -------------------------------------------------------------------------------------


def test_dns_upstream_flag_overrides_env(internet, make_pack, harness):
    """--dns-upstream picks the resolver's upstreams; it wins over
    COMET_DNS_UPSTREAM, which wins over /etc/resolv.conf (docs/egress.md)."""
    pack = make_pack()
    pack.set_commands(["resolve", "api.test"])
    dead = f"{ADDR['dns']}:5399"  # nothing listens there: no answer
    env = dict(os.environ, COMET_DNS_UPSTREAM=dead)
    # control: with only the env's dead upstream, the allowed name does not resolve
    res = harness.rt("run", "--net-helper", "--bundle", str(pack.bundle), harness.rt.new_id("up"), env=env,
                     timeout=30)
    line = json.loads(next(l for l in res.out.splitlines() if l.startswith("{")))
    assert line["result"] not in ("NOERROR", "ok"), line
    res = harness.rt("run", "--net-helper", "--dns-upstream", ADDR["dns"], "--bundle", str(pack.bundle),
                     harness.rt.new_id("up"), env=env, timeout=30)
    assert res.rc == 0, res
    line = json.loads(next(l for l in res.out.splitlines() if l.startswith("{")))
    assert line["result"] == "NOERROR" and line["addrs"] == [ADDR["api.test"]], line


def test_network_none_is_not_widened(internet, make_pack, harness):
    """A config alone (what an engine passes: a new network namespace, no
    path, an egress list) gets no connectivity helper: the namespace keeps
    loopback only, filtered. Only `pack run`, `sandbox` and `--net-helper`
    attach pasta (issue 21, item 13; podman's --network none is tested in
    engines/test_podman.py)."""
    pack = make_pack()
    pack.set_commands(["tcp", "api.test", "443"], ["tcp", ADDR["api.test"], "443"], ["sleep", "30"])
    cid = harness.rt.new_id("nohelper")
    harness.rt("create", "--bundle", str(pack.bundle), cid, env=dns_env()).expect_ok()
    try:
        rec = _state_record(harness, cid)
        assert rec["egress_net_pid"] == 0 and rec["egress_resolver_pid"] > 0, rec
    finally:
        harness.rt("delete", "--force", cid)
    pack.set_commands(["tcp", "api.test", "443"], ["tcp", ADDR["api.test"], "443"])
    res = harness.rt("run", "--bundle", str(pack.bundle), harness.rt.new_id("nohelper"),
                     env=dns_env(), timeout=30)
    lines = [json.loads(l) for l in res.out.splitlines() if l.startswith("{")]
    # the name may resolve (the resolver answers from its pins) or not (no
    # upstream reachable); either way nothing leaves the namespace
    assert lines[0]["result"] != "ok" and lines[1]["result"] == "ENETUNREACH", lines


def test_an_allowed_name_answering_with_a_host_address_is_not_pinned(internet, make_pack):
    """Attack (issue 21, item 5): api.test (allowed) answers with one of the
    host's own addresses on another interface (here the host's end of the
    test internet's veth, where a host service listens). On 4dba8cb the
    resolver pinned it and the agent reached the host service through
    pasta. Now an address of the host, on any interface, is never pinned:
    the answer leaves it out, and a connect to it is refused."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((HOST_IP, 443))
    srv.listen(8)
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            c.sendall(b"host-service\n")
            c.close()

    t = threading.Thread(target=serve)
    t.start()
    try:
        assert host_connect(HOST_IP, 443).startswith("host-service")  # the host service is there
        internet.repoint_api(HOST_IP)
        pack = make_pack()
        r = pack.run(["resolve", "api.test"], ["tcp", "api.test", "443"], ["tcp", HOST_IP, "443"])
    finally:
        stop.set()
        t.join()
        srv.close()
        internet.write_hosts()
        internet.repoint_api(ADDR["api.test"])
    assert HOST_IP not in r[0].get("addrs", []), r[0]
    assert r[1]["result"] != "ok" and "host-service" not in json.dumps(r[1]), r[1]
    assert r[2]["result"] == "ECONNREFUSED", r[2]


def test_an_egress_literal_that_is_a_host_address_is_refused(internet, make_pack, harness):
    """Red team (issue 21): a manifest listing one of the host's own
    addresses as an IP literal (here the host's end of the test internet's
    veth) passed validation and the agent reached a host-only service. The
    literal is checked against the host's addresses at create, like every
    DNS answer, and the run is refused with the entry named."""
    pack = make_pack(f"    - {{host: {HOST_IP}, port: 8082, protocol: tcp}}\n")
    pack.set_commands(["tcp", HOST_IP, "8082"])
    res = harness.rt("run", "--net-helper", "--bundle", str(pack.bundle), harness.rt.new_id("lit"),
                     env=dns_env(), timeout=30)
    assert res.rc == 1, res
    assert f"egress entry {HOST_IP}:8082: an address of this host" in res.err, res.err
    assert '"cmd"' not in res.out, res.out  # the agent never ran


def test_the_dns_upstream_from_the_runtime_config_file(internet, make_pack, workdir):
    """Issue 26, trap 5: podman forwards neither flags nor environment to its
    runtime, so the resolver's upstream can be set in a file
    (/etc/comet/runtime.yaml; here through COMET_RUNTIME_CONFIG): with no
    COMET_DNS_UPSTREAM, the allowed name resolves through the file's
    upstream, and a bad file is a one-line error."""
    pack = make_pack()
    conf = workdir / "runtime.yaml"
    conf.write_text(f"# test\ndns_upstream: {ADDR['dns']}\n")
    pack.set_commands(["tcp", "api.test", "443"])
    env = {k: v for k, v in os.environ.items() if k != "COMET_DNS_UPSTREAM"}
    env["COMET_RUNTIME_CONFIG"] = str(conf)
    cid = pack.h.rt.new_id("eg")
    res = pack.h.rt("run", "--net-helper", "--bundle", str(pack.bundle), cid, env=env, timeout=30)
    lines = [json.loads(l) for l in res.out.splitlines() if l.startswith("{")]
    assert res.rc == 0 and lines[0]["result"] == "ok", res
    conf.write_text("dns_upstreams: 192.0.2.1\n")
    cid = pack.h.rt.new_id("eg")
    res = pack.h.rt("run", "--net-helper", "--bundle", str(pack.bundle), cid, env=env, timeout=30)
    assert res.rc != 0, res
    assert f'{conf}:1: unknown setting \\"dns_upstreams\\"' in res.err, res.err
