"""`comet-runtime pack run` as an ordinary user (issue 24; docs/rootless.md
"pack run"): the runtime moves into a user namespace of its own (the user's
id as 0, the subordinate range through newuidmap), keeps its caches, run
state and flags in the user's XDG dirs, and enforces every capability:
the mounts, Landlock, the reporter (exit 3 and an event), and egress (the
nft allowlist in the container's network namespace, the allowlisting
resolver, slirp4netns as the user). fs.read/fs.write events need CAP_BPF:
off, with one warning. Each test checks that nothing of the user is left:
no process (of the user's id or its subordinate range), no run directory.
The egress tests reach the egress suite's own internet (a netns the test
makes, integration/egress/inet.py) through the host: no external network."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from egress.inet import ADDR, Internet  # noqa: E402
from lib import config as cfg  # noqa: E402
from lib import packs  # noqa: E402
from lib.rootless import SUBID_COUNT, OrdinaryUser  # noqa: E402

pytestmark = pytest.mark.comet_only

RT = str(cfg.RUNTIME)
EGRESS_DIR = Path(__file__).resolve().parents[1] / "egress"


@pytest.fixture(scope="module")
def user():
    # the setuid newuidmap/newgidmap need the bounding set a login shell has
    with OrdinaryUser(setuid_helpers=True) as u:
        yield u


@pytest.fixture(scope="session")
def packprobe(session_dir) -> Path:
    return packs.build_packprobe(session_dir)


@pytest.fixture(scope="session")
def netprobe(session_dir) -> Path:
    out = session_dir / "netprobe"
    if not out.exists():
        subprocess.run(["cc", "-static", "-O2", "-o", str(out), str(EGRESS_DIR / "netprobe.c")],
                       check=True, capture_output=True, timeout=120)
    return out


TUN = Path("/dev/net/tun")


@pytest.fixture
def tun_mode():
    """Sets /dev/net/tun's mode for one test, as udev would (0666 on udev
    hosts; this machine has no udev and the kernel's default is 0600), and
    puts the host's mode back."""
    before = TUN.stat().st_mode & 0o777
    yield lambda mode: os.chmod(TUN, mode)
    os.chmod(TUN, before)


@pytest.fixture
def tun(tun_mode):
    tun_mode(0o666)


@pytest.fixture(scope="module")
def internet(session_dir):
    if not shutil.which("dnsmasq"):
        pytest.fail("dnsmasq is missing (scripts/deps.sh installs dnsmasq-base)")
    net = Internet(session_dir).start()
    yield net
    net.close()


def _chown(user: OrdinaryUser, path: Path) -> None:
    subprocess.run(["chown", "-R", f"{user.uid}:{user.gid}", str(path)], check=True)


def probe_pack(user: OrdinaryUser, name: str, packprobe: Path, manifest: str = packs.MANIFEST):
    w = user.make_dir(name)
    p, rootfs = packs.make_pack(w, packprobe, manifest)
    _chown(user, w)
    return p, rootfs


def net_pack(user: OrdinaryUser, name: str, netprobe: Path) -> tuple[Path, Path]:
    w = user.make_dir(name)
    p = w / "pack"
    p.mkdir()
    (p / "agent").write_text("netprobe commands come from the arguments\n")
    (p / "soyapack.yaml").write_text(
        "apiVersion: soyapack/v0\nname: rootless-egress\nversion: 1.0.0\n"
        "runtime:\n  interpreter: /netprobe\n  entrypoint: agent\n"
        "capabilities:\n  egress:\n    - {host: api.test, port: 443, protocol: tcp}\n"
        "  fs:\n    read: [/workdir]\n  determinism_tier: read-only\n")
    rootfs = w / "rootfs"
    for d in ("etc", "proc", "sys", "dev", "tmp", "workdir"):
        (rootfs / d).mkdir(parents=True)
    shutil.copy2(netprobe, rootfs / "netprobe")
    os.chmod(rootfs / "netprobe", 0o755)
    (rootfs / "etc" / "resolv.conf").write_text("")
    _chown(user, w)
    return p, rootfs


def pack_run(user: OrdinaryUser, pack, *args, extra=(), events: Path | None = None,
             timeout: float = 60):
    p, rootfs = pack
    ev = ["--events", str(events)] if events else []
    return user.run([RT, "pack", "run", str(p), "--rootfs", str(rootfs), *ev, *extra, "--",
                     *args], timeout=timeout)


def lines(res, key="op") -> list[dict]:
    return [json.loads(l) for l in res.stdout.splitlines() if l.startswith("{") and key in l]


def events_of(path: Path) -> list[dict]:
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()] \
        if path.exists() else []


def processes_of(user: OrdinaryUser) -> list[str]:
    """Processes whose real uid is the user's or one of its subordinate ids
    (the agent runs as one of those)."""
    ids = {user.uid} | set(range(user.subid, user.subid + SUBID_COUNT))
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            status = Path(f"/proc/{d}/status").read_text()
            uid = int(next(l for l in status.splitlines() if l.startswith("Uid:")).split()[1])
            if uid in ids:
                out.append(f"{d} {Path(f'/proc/{d}/cmdline').read_bytes()[:80]!r}")
        except (FileNotFoundError, ProcessLookupError, StopIteration):
            pass
    return out


def assert_nothing_left(user: OrdinaryUser) -> None:
    # the helpers killed at the end (resolver, slirp4netns) may take a moment
    # to be reaped by init
    deadline = time.monotonic() + 3
    while processes_of(user) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_of(user) == []
    runs = user.runtime_dir / "comet-runtime" / "packs"
    assert not runs.exists() or list(runs.iterdir()) == []
    state = user.runtime_dir / "comet-runtime"
    # .events@: the kept events of the last runs (docs/events.md), on purpose
    left = [p.name for p in state.iterdir() if p.name not in ("packs", "cache", ".events@")] \
        if state.exists() else []
    assert left == [], left


@pytest.fixture(autouse=True)
def _clean(user):
    yield
    left = processes_of(user)
    for line in left:  # only this test's: the ids are the test user's
        try:
            os.kill(int(line.split()[0]), 9)
        except ProcessLookupError:
            pass


def test_pack_run_as_the_user_keeps_everything_in_its_dirs(user, packprobe):
    pack = probe_pack(user, "p-dirs", packprobe)
    res = pack_run(user, pack, "write=/workdir/out/x")
    assert res.returncode == 0, res.stderr
    assert "EACCES" not in res.stderr and "/var/" not in res.stderr, res.stderr
    assert lines(res)[0]["ok"] is True
    # the run cache is the user's (read-only tier: cacheable); a second run
    # is replayed from it
    store = user.home / ".cache" / "comet-runtime" / "packs"
    assert store.is_dir() and store.stat().st_uid == user.uid
    assert "cache miss" in res.stderr and "cache stored" in res.stderr, res.stderr
    again = pack_run(user, pack, "write=/workdir/out/x")
    assert again.returncode == 0 and "cache hit" in again.stderr, again.stderr
    assert_nothing_left(user)


def test_the_users_rootfs_is_never_written(user, packprobe):
    """Issue 27 item 7 as an ordinary user: the rootfs (no mount points of
    its own) is unchanged after runs, and the first rerun is a hit."""
    p, rootfs = probe_pack(user, "p-untouched", packprobe)
    packs.strip_mount_points(rootfs)
    before = packs.tree_state(rootfs)
    first = pack_run(user, (p, rootfs), "write=/workdir/out/x")
    assert first.returncode == 0, first.stderr
    assert "cache miss" in first.stderr, first.stderr
    assert packs.tree_state(rootfs) == before
    again = pack_run(user, (p, rootfs), "write=/workdir/out/x")
    assert again.returncode == 0 and "cache hit" in again.stderr, again.stderr
    real = pack_run(user, (p, rootfs), "write=/workdir/out/x", extra=("--no-cache",))
    assert real.returncode == 0, real.stderr
    assert packs.tree_state(rootfs) == before
    assert_nothing_left(user)


def test_default_rootfs_is_cached_in_the_users_data_dir(user):
    w = user.make_dir("p-default")
    p = w / "pack"
    p.mkdir()
    (p / "soyapack.yaml").write_text(packs.manifest("default-rootfs", interpreter="/bin/true"))
    (p / "agent.txt").write_text("ignored\n")
    _chown(user, w)
    res = user.run([RT, "pack", "run", str(p), "--no-cache"])
    assert res.returncode == 0, res.stderr
    cache = user.home / ".local" / "share" / "comet-runtime" / "rootfs"
    assert cache.is_dir() and any(cache.iterdir()), res.stderr
    assert cache.stat().st_uid == user.uid
    assert_nothing_left(user)


def test_fs_violations_are_refused_and_an_exec_is_reported(user, packprobe, tmp_path):
    pack = probe_pack(user, "p-fs", packprobe)
    ev = user.home / "fs.events.jsonl"
    res = pack_run(user, pack, "write=/etc/passwd", "open-read=/home/x/.ssh/id_rsa",
                   "exec=/bin/busybox", extra=["--no-cache"], events=ev)
    r = {l["op"]: l for l in lines(res)}
    assert r["write"]["errno"] == "EROFS", res.stdout
    assert r["open-read"]["errno"] == "ENOENT", res.stdout
    assert r["exec"]["errno"] == "EACCES", res.stdout  # Landlock's exec lock
    assert res.returncode == 3, res.stderr
    got = events_of(ev)
    assert [(e["surface"], e["requested"]) for e in got] == [("exec", "/bin/busybox")], got
    assert got[0]["pack"] == {"name": "probe-pack", "version": "0.0.1"}
    # fs.read/fs.write events need CAP_BPF: one warning, enforcement unchanged
    assert res.stderr.count("fs.read/fs.write violation events are off") == 1, res.stderr
    assert "no CAP_BPF" in res.stderr and "no cgroup2 directory" not in res.stderr, res.stderr
    # the violation flag is the user's
    flags = user.home / ".local" / "share" / "comet-runtime" / "flags"
    assert flags.is_dir() and any(flags.iterdir()), res.stderr
    assert_nothing_left(user)


def test_a_users_violations_are_said_and_kept_in_the_users_root(user, packprobe):
    """Issue 26, trap 2, as an ordinary user: the run with a violation says
    so on stderr, the events stay in the user's own state root (0700, the
    user's) for `events --violations ID`, and the user's flags list names
    the version on that same run."""
    pack = probe_pack(user, "p-said", packprobe)
    cid = "said-by-user"
    res = pack_run(user, pack, "exec=/bin/busybox", extra=["--no-cache", "--id", cid])
    assert res.returncode == 3, res.stderr
    kept = user.runtime_dir / "comet-runtime" / ".events@" / f"{cid}.jsonl"
    said = [x for x in res.stderr.splitlines() if x.startswith("comet: ")]
    assert said == [f"comet: 1 capability violation: exec \u00d71 (/bin/busybox); events: {kept}"], res.stderr
    assert "pack probe-pack@0.0.1 is flagged" in res.stderr, res.stderr
    assert kept.stat().st_uid == user.uid and kept.parent.stat().st_mode & 0o777 == 0o700
    ev = user.run([RT, "events", "--violations", cid])
    assert ev.returncode == 0, ev.stderr
    assert [json.loads(x)["requested"] for x in ev.stdout.splitlines()] == ["/bin/busybox"]
    listed = user.run([RT, "pack", "flags", "list"])
    assert "probe-pack@0.0.1" in listed.stdout, listed
    assert_nothing_left(user)


def test_a_limit_the_manifest_sets_is_refused_not_dropped(user, packprobe):
    # errors.md: rootless-pack-limit
    man = packs.MANIFEST + "resources:\n  memory: 64Mi\n"
    pack = probe_pack(user, "p-limit", packprobe, man)
    res = pack_run(user, pack, "stdio", extra=["--no-cache"])
    assert res.returncode == 125, res
    assert "resources.memory" in res.stderr and "cgroup" in res.stderr, res.stderr
    assert lines(res) == []
    assert_nothing_left(user)


def test_without_subordinate_ids_the_agent_runs_as_the_user(packprobe):
    with OrdinaryUser(subids=False) as u:
        pack = probe_pack(u, "p-own", packprobe)
        res = pack_run(u, pack, "write=/workdir/out/x", "mount-tmpfs=/tmp",
                       extra=["--no-cache"])
        r = {l["op"]: l for l in lines(res)}
        assert "write" in r, (res.returncode, res.stdout, res.stderr)
        assert r["write"]["ok"] is True, res.stdout
        assert r["mount-tmpfs"]["ok"] is False, res.stdout  # no capability
        assert res.returncode == 3, res.stderr
        assert_nothing_left(u)


def test_egress_allowed_and_refused(user, netprobe, internet, tun):
    pack = net_pack(user, "p-net", netprobe)
    dns = ["--dns-upstream", ADDR["dns"], "--no-cache"]
    ok = pack_run(user, pack, "tcp", "api.test", "443", extra=dns)
    got = lines(ok, "cmd")
    assert got and got[0]["result"] == "ok", (ok.stdout, ok.stderr)
    assert ok.returncode == 0, ok.stderr
    ev = user.home / "net.events.jsonl"
    bad = pack_run(user, pack, "tcp", ADDR["other.test"], "443", "--", "resolve", "other.test",
                   extra=dns, events=ev)
    got = lines(bad, "cmd")
    assert [g["result"] for g in got] == ["ECONNREFUSED", "NXDOMAIN"], bad.stdout
    assert bad.returncode == 3, bad.stderr
    seen = sorted((e["surface"], e["requested"]) for e in events_of(ev))
    assert seen == [("dns", "other.test"), ("egress", f"{ADDR['other.test']}:443/tcp")], seen
    assert_nothing_left(user)


def test_egress_cannot_bypass_the_rules(user, netprobe, internet, tun):
    """The container's own network namespace is the user's: it cannot add
    nft rules of its own (no capability), and the helper's host loopback is
    closed."""
    pack = net_pack(user, "p-bypass", netprobe)
    res = pack_run(user, pack, "nft", "--", "tcp", "10.0.2.2", "22", "--", "dnsudp",
                   ADDR["dns"], "api.test", extra=["--dns-upstream", ADDR["dns"], "--no-cache"])
    got = {g["cmd"]: g["result"] for g in lines(res, "cmd")}
    assert got["nft"] != "ok", res.stdout
    assert got["tcp"] != "ok", res.stdout
    assert got["dnsudp"] != "ok", res.stdout
    assert res.returncode == 3, res.stderr
    assert_nothing_left(user)


def test_egress_without_a_usable_tun_device_is_refused(user, netprobe, internet, tun_mode):
    # errors.md: rootless-tun
    tun_mode(0o600)
    pack = net_pack(user, "p-notun", netprobe)
    res = pack_run(user, pack, "tcp", "api.test", "443",
                   extra=["--dns-upstream", ADDR["dns"], "--no-cache"])
    assert res.returncode == 125, res
    assert "/dev/net/tun" in res.stderr, res.stderr
    assert lines(res, "cmd") == []
    assert_nothing_left(user)


def test_a_host_refusing_user_namespaces_is_one_line_125(user, packprobe, tmp_path):
    # errors.md: rootless-userns (pack run's own user namespace)
    os.chmod(tmp_path, 0o755)
    tool = tmp_path / "deny_userns"
    subprocess.run(["cc", "-O2", "-o", str(tool),
                    str(Path(__file__).resolve().parents[1] / "tools" / "deny_userns.c")],
                   check=True)
    pack = probe_pack(user, "p-nouserns", packprobe)
    p, rootfs = pack
    res = user.run([str(tool), RT, "pack", "run", str(p), "--rootfs", str(rootfs), "--no-cache",
                    "--", "stdio"])
    assert res.returncode == 125, (res.stdout, res.stderr)
    errs = [l for l in res.stderr.splitlines() if "level=error" in l]
    assert len(errs) == 1, res.stderr
    assert "rootless: cannot create a user namespace (Operation not permitted)" in errs[0], errs
    assert lines(res) == []
    assert_nothing_left(user)


def test_default_pids_limit_is_rlimit_nproc_without_a_cgroup(user, packprobe):
    """No cgroup (none delegated): the manifest's default resources.pids (128,
    docs/policy.md)
    becomes RLIMIT_NPROC, counted inside the user namespace (docs/rootless.md
    "Limits"); the user's own session has a far larger one."""
    pack = probe_pack(user, "p-nproc", packprobe)
    res = pack_run(user, pack, "cat=/proc/self/limits", extra=["--no-cache"])
    assert res.returncode == 0, res.stderr
    row = [l.split() for l in res.stdout.splitlines() if l.startswith("Max processes")]
    assert row and row[0][2] == row[0][3] == "128", res.stdout
    mine = user.run(["cat", "/proc/self/limits"]).stdout
    assert "Max processes             128 " not in mine
    assert_nothing_left(user)
