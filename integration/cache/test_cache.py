"""The deterministic-tier cache of `pack run` (issue 9, docs/cache.md).

The agent is cacheagent.c (a static program used as runtime.interpreter: one
operation per argument). Every test has a private store (COMET_CACHE_DIR
under its workdir). What is checked: a miss then a hit with byte-identical
stdout, stderr, out/ tree and exit status; each input changes the key; a hit
starts no container; side-effect and unrestricted packs never hit; egress
needs --cache=allow-upstream; a corrupt or partial entry is discarded; four
concurrent identical runs leave one valid entry; prune; a violating run is
not cached; --no-cache; a store on another filesystem."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from lib import packs

pytestmark = pytest.mark.comet_only

AGENT_SRC = Path(__file__).resolve().parent / "cacheagent.c"
KEY = r"[0-9a-f]{64}"


def manifest(tier="read-only", egress="[]", env="{GREETING: hello}", description="cache test"):
    return f"""\
apiVersion: soyapack/v0
name: cache-pack
version: 1.0.0
description: {description}
runtime:
  interpreter: /usr/bin/cacheagent
  entrypoint: agent.txt
  args: []
  env: {env}
capabilities:
  egress: {egress}
  fs:
    read: [/workdir, /workdir/inputs]
    write: [/workdir/out]
  determinism_tier: {tier}
"""


@pytest.fixture(scope="session")
def agent(session_dir) -> Path:
    out = session_dir / "cacheagent"
    if not out.exists():
        subprocess.run(["cc", "-static", "-O2", "-o", str(out), str(AGENT_SRC)], check=True)
    return out


class Pack:
    """A pack dir, a rootfs holding the agent, an input tree and a private store."""

    def __init__(self, rt, workdir: Path, agent: Path, text: str | None = None):
        self.rt = rt
        self.w = workdir
        self.rootfs = workdir / "rootfs"
        for d in ("usr/bin", "proc", "dev", "sys", "tmp", "workdir", "etc"):
            (self.rootfs / d).mkdir(parents=True, exist_ok=True)
        shutil.copy2(agent, self.rootfs / "usr/bin/cacheagent")
        (self.rootfs / "etc/marker").write_text("rootfs v1\n")
        self.dir = workdir / "pack"
        self.dir.mkdir()
        (self.dir / "soyapack.yaml").write_text(text or manifest())
        (self.dir / "agent.txt").write_text("pack file v1\n")
        self.inputs = workdir / "inputs"
        (self.inputs / "sub").mkdir(parents=True)
        (self.inputs / "a.txt").write_text("alpha\n")
        (self.inputs / "sub/b.bin").write_bytes(bytes(range(256)) * 4)
        self.cache = workdir / "cache"
        self.n = 0

    def env(self, cache: Path | None = None) -> dict:
        return {**os.environ, "COMET_CACHE_DIR": str(cache or self.cache)}

    def run(self, *ops, extra=(), output=True, inputs=True, root=None, cache=None, timeout=60):
        args = ["pack", "run", str(self.dir), "--rootfs", str(self.rootfs)]
        if inputs:
            args += ["--input", str(self.inputs)]
        out = None
        if output:
            self.n += 1
            out = self.w / f"out{self.n}"
            args += ["--output", str(out)]
        args += [*extra, "--", *ops]
        kw = {}
        if root is not None:
            kw = {"root": False, "global_args": ["--root", str(root)]}
        res = self.rt(*args, env=self.env(cache), timeout=timeout, **kw)
        res.outdir = out
        return res

    def entries(self, cache: Path | None = None) -> list[Path]:
        c = cache or self.cache
        return sorted(p for p in c.glob("??/*") if re.fullmatch(KEY, p.name))


def cache_lines(res) -> list[str]:
    return [ln for ln in res.err.splitlines() if ln.startswith("cache ")]


def agent_stderr(res) -> str:
    return "".join(ln + "\n" for ln in res.err.splitlines() if not ln.startswith("cache "))


def status(res) -> tuple[str, str]:
    """('hit'|'miss'|'none', key)."""
    lines = cache_lines(res)
    for ln in lines:
        m = re.fullmatch(rf"cache (hit|miss) ({KEY})", ln)
        if m:
            return m.group(1), m.group(2)
    return "none", ""


def tree_of(d: Path | None) -> dict[str, bytes]:
    if d is None or not d.exists():
        return {}
    return {str(p.relative_to(d)): (p.read_bytes() if p.is_file() else b"<dir>")
            for p in sorted(d.rglob("*"))}


@pytest.fixture
def pack(rt, workdir, agent):
    return Pack(rt, workdir, agent)


OPS = ("out=first line", "err=to stderr", "env=GREETING", "cat=/workdir/agent.txt",
       "cat=/etc/marker", "inputs", "write=result.txt:42", "write=deep/er/x.txt:x", "exit=5")


def test_miss_then_hit_is_byte_identical(pack):
    miss = pack.run(*OPS)
    assert miss.rc == 5, miss
    kind, key = status(miss)
    assert kind == "miss", miss
    assert cache_lines(miss) == [f"cache miss {key}", f"cache stored {key}"], miss.err
    assert "GREETING=hello" in miss.out and "pack file v1" in miss.out and "rootfs v1" in miss.out
    assert "input a.txt 6 " in miss.out and "input sub/b.bin 1024 " in miss.out
    assert agent_stderr(miss) == "to stderr\n"
    assert tree_of(miss.outdir) == {"deep": b"<dir>", "deep/er": b"<dir>",
                                    "deep/er/x.txt": b"x", "result.txt": b"42"}
    hit = pack.run(*OPS)
    assert status(hit) == ("hit", key), hit
    assert cache_lines(hit) == [f"cache hit {key}"], hit.err
    assert hit.rc == 5
    assert hit.out_path.read_bytes() == miss.out_path.read_bytes()
    assert agent_stderr(hit) == agent_stderr(miss)
    assert tree_of(hit.outdir) == tree_of(miss.outdir)
    # the recorded entry says the same
    shown = pack.rt("cache", "show", key[:12], env=pack.env(), root=False)
    assert shown.rc == 0, shown
    e = json.loads(shown.out)
    assert e["key"] == key and e["exit"] == 5 and e["pack"] == "cache-pack@1.0.0"
    assert {f["path"] for f in e["files"]} == {"stdout", "stderr", "out/result.txt",
                                               "out/deep/er/x.txt"}


def test_hit_starts_no_container(pack, workdir):
    first = pack.run("out=slow", "sleep=1500")
    assert first.rc == 0 and status(first)[0] == "miss", first
    # a fresh state root: a real run makes <root>/packs/<id> and a container
    # there; a hit makes nothing, and does not wait for the agent's sleep
    root = workdir / "fresh-root"
    root.mkdir()
    t0 = time.monotonic()
    hit = pack.run("out=slow", "sleep=1500", root=root)
    took = time.monotonic() - t0
    assert status(hit)[0] == "hit", hit
    assert hit.out == "slow\n"
    assert list(root.iterdir()) == [], "a hit created state: a container was started"
    assert took < 1.0, f"the hit took {took:.2f}s: the agent ran"
    # and the same with --no-cache does run (so the check above can fail)
    t0 = time.monotonic()
    real = pack.run("out=slow", "sleep=1500", root=root, extra=("--no-cache",))
    assert real.rc == 0 and real.out == "slow\n" and cache_lines(real) == [], real
    assert time.monotonic() - t0 >= 1.5
    assert (root / "packs").is_dir()


def _change_file(p: Pack):
    (p.dir / "agent.txt").write_text("pack file v2\n")


def _change_input_byte(p: Pack):
    data = bytearray((p.inputs / "sub/b.bin").read_bytes())
    data[500] ^= 1
    (p.inputs / "sub/b.bin").write_bytes(bytes(data))


MUTATIONS = {
    "pack-file-byte": (_change_file, None, "pack file v2"),
    "manifest": (lambda p: (p.dir / "soyapack.yaml").write_text(manifest(description="other")),
                 None, None),
    "env-value": (lambda p: (p.dir / "soyapack.yaml").write_text(manifest(env="{GREETING: bye}")),
                  None, "GREETING=bye"),
    "arg": (None, ("out=first line", "out=extra"), "extra"),
    "rootfs-file": (lambda p: (p.rootfs / "etc/marker").write_text("rootfs v2\n"), None,
                    "rootfs v2"),
    "rootfs-mode": (lambda p: os.chmod(p.rootfs / "etc/marker", 0o600), None, None),
    "input-byte": (_change_input_byte, None, None),
    "input-new-file": (lambda p: (p.inputs / "c.txt").write_text(""), None, "input c.txt 0"),
    "input-mode": (lambda p: os.chmod(p.inputs / "a.txt", 0o604), None, " 604\n"),
    "no-input": (None, "no-input", None),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_each_input_changes_the_key(pack, name):
    mutate, ops, expect = MUTATIONS[name]
    base = ("out=first line", "env=GREETING", "cat=/workdir/agent.txt", "cat=/etc/marker",
            "inputs")
    a = pack.run(*base)
    assert a.rc == 0 and status(a)[0] == "miss", a
    b = pack.run(*base)
    assert status(b) == ("hit", status(a)[1]), "unchanged: a hit"
    inputs = True
    if mutate:
        mutate(pack)
    if ops == "no-input":
        inputs, ops = False, None
    c = pack.run(*(ops or base), inputs=inputs)
    assert c.rc == 0, c
    kind, key = status(c)
    assert kind == "miss", f"{name}: {c.err}"
    assert key != status(a)[1]
    if expect:
        assert expect in c.out, c.out
    assert c.out != a.out or name in ("manifest", "rootfs-mode", "input-mode"), \
        "the agent saw the change"
    d = pack.run(*(ops or base), inputs=inputs)
    assert status(d) == ("hit", key) and d.out == c.out


@pytest.mark.parametrize("tier", ["side-effect", "unrestricted"])
def test_side_effect_and_unrestricted_never_hit(rt, workdir, agent, tier):
    p = Pack(rt, workdir, agent, manifest(tier=tier))
    for _ in range(2):
        res = p.run("out=x")
        assert res.rc == 0 and res.out == "x\n", res
        assert cache_lines(res) == [], res.err
    assert not p.cache.exists() or p.entries() == []
    for flag in (("--cache=allow-upstream",), ("--cache-dir", str(workdir / "c2"))):
        res = p.run("out=x", extra=flag)
        assert res.rc == 2, res
        assert f"is a {tier} pack; only read-only packs are cached" in res.error, res.err
        assert res.out == "" and not (workdir / "c2").exists()


def test_egress_needs_allow_upstream(rt, workdir, agent):
    p = Pack(rt, workdir, agent,
             manifest(egress="[{host: 192.0.2.1, port: 9, protocol: tcp}]"))
    res = p.run("out=x")
    assert res.rc == 0 and cache_lines(res) == [], res
    res = p.run("out=x", extra=("--cache=allow-upstream",))
    assert res.rc == 0 and status(res)[0] == "miss", res
    hit = p.run("out=x", extra=("--cache=allow-upstream",))
    assert status(hit) == ("hit", status(res)[1]) and hit.out == "x\n"
    e = json.loads(rt("cache", "show", status(res)[1], env=p.env(), root=False).out)
    assert e["allow_upstream"] is True


@pytest.mark.parametrize("damage", ["byte", "truncate", "no-entry-json", "extra-file"])
def test_corrupt_entry_is_discarded(pack, damage):
    a = pack.run("out=real output", "write=r.txt:R")
    key = status(a)[1]
    [entry] = pack.entries()
    if damage == "byte":
        (entry / "stdout").write_text("real outpuT\n")
    elif damage == "truncate":
        (entry / "out/r.txt").write_text("")
    elif damage == "no-entry-json":
        (entry / "entry.json").unlink()
    else:
        (entry / "out/evil.txt").write_text("not recorded")
    b = pack.run("out=real output", "write=r.txt:R")
    assert b.rc == 0, b
    assert any(f"discarded the corrupt entry {key}" in ln for ln in b.error.splitlines()), b.err
    assert status(b) == ("miss", key), b.err
    assert b.out == "real output\n" and tree_of(b.outdir) == {"r.txt": b"R"}
    assert f"cache stored {key}" in cache_lines(b)
    c = pack.run("out=real output", "write=r.txt:R")
    assert status(c) == ("hit", key) and c.out == "real output\n"
    assert tree_of(c.outdir) == {"r.txt": b"R"}


def test_concurrent_identical_runs(pack):
    results = [None] * 4

    def one(i):
        results[i] = pack.run("out=same", "sleep=300", "write=o.txt:o")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    keys = {status(r)[1] for r in results}
    assert len(keys) == 1, [r.err for r in results]
    key = keys.pop()
    for r in results:
        assert r.rc == 0 and r.out == "same\n", r
        assert tree_of(r.outdir) == {"o.txt": b"o"}
    stored = [ln for r in results for ln in cache_lines(r) if ln.startswith("cache stored")]
    assert sum(1 for ln in stored if ln == f"cache stored {key}") <= 1, stored
    assert [e.name for e in pack.entries()] == [key]
    assert list((pack.cache / "tmp").iterdir()) == []
    assert pack.rt("cache", "show", key, env=pack.env(), root=False).rc == 0
    assert status(pack.run("out=same", "sleep=300", "write=o.txt:o"))[0] == "hit"


def test_violating_run_is_not_cached(pack):
    for _ in range(2):
        res = pack.run("violate", "out=after")
        assert res.rc == 3, res
        kind, key = status(res)
        assert kind == "miss", res.err
        assert f"cache not stored {key}: exit 3 (a capability violation, or the agent's own 3)" \
            in cache_lines(res), res.err
    assert pack.entries() == []


def test_reporting_off_bypasses_the_cache(pack):
    env = {**pack.env(), "COMET_VIOLATION_REPORTING": "off"}
    args = ["pack", "run", str(pack.dir), "--rootfs", str(pack.rootfs), "--", "violate"]
    for _ in range(2):
        res = pack.rt(*args, env=env)
        assert res.rc == 0 and "unshare -1" in res.out, res  # refused, but not reported
        assert cache_lines(res) == [], res.err
    assert pack.entries() == []
    res = pack.rt(*args, env=pack.env())
    assert res.rc == 3 and status(res)[0] == "miss", res


def test_killed_or_oversized_runs_are_not_cached(pack):
    res = pack.run("out=x", "exit=130")
    assert res.rc == 130 and "killed by a signal" in "".join(cache_lines(res)), res.err
    big = 64 * 1024 * 1024 + 1
    res = pack.run(f"big={big}", timeout=120, output=False)
    assert res.rc == 0 and len(res.out) == big, res.rc
    assert "was not captured whole" in "".join(cache_lines(res)), cache_lines(res)
    assert pack.entries() == []


def test_no_cache_neither_reads_nor_writes(pack):
    a = pack.run("out=one")
    [entry] = pack.entries()
    before = {p: p.stat().st_mtime_ns for p in entry.rglob("*")}
    b = pack.run("out=one", extra=("--no-cache",))
    assert b.rc == 0 and b.out == "one\n" and cache_lines(b) == [], b
    assert pack.entries() == [entry]
    assert {p: p.stat().st_mtime_ns for p in entry.rglob("*")} == before
    assert status(a)[0] == "miss"


def test_prune(pack):
    keys = []
    for i in range(3):
        r = pack.run(f"out=run {i}", "big=10000")
        keys.append(status(r)[1])
    env = pack.env()
    ls = pack.rt("cache", "ls", "--format", "json", env=env, root=False)
    listed = json.loads(ls.out)
    assert sorted(e["key"] for e in listed) == sorted(keys)
    # keys[0] is used again: keys[1] becomes the least recently used
    for k, t in zip(keys, (3000, 1000, 2000)):
        os.utime(pack.cache / k[:2] / k, ns=(t * 10**9, t * 10**9))
    assert status(pack.run("out=run 0", "big=10000")) == ("hit", keys[0])
    # a stale temp dir of a dead writer, and a corrupt entry
    stale = pack.cache / "tmp" / f"{keys[0]}.999999999.abcdef"
    stale.mkdir()
    (pack.cache / keys[2][:2] / keys[2] / "stdout").write_text("tampered")
    res = pack.rt("cache", "prune", env=env, root=False)
    assert res.rc == 0, res
    assert f"removed temp tmp/{stale.name}" in res.out
    assert f"removed corrupt entry {keys[2]}" in res.out
    assert not stale.exists()
    assert {e.name for e in pack.entries()} == {keys[0], keys[1]}
    size = min(e["size"] for e in listed)
    res = pack.rt("cache", "prune", "--max-size", str(size), env=env, root=False)
    assert res.rc == 0 and res.out.startswith(f"evicted {keys[1]}"), res
    assert [e.name for e in pack.entries()] == [keys[0]]
    res = pack.rt("cache", "prune", "--max-size", "0", env=env, root=False)
    assert pack.entries() == [] and res.rc == 0


def test_store_on_another_filesystem(pack, workdir):
    mnt = workdir / "cachefs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)], check=True)
    try:
        store = mnt / "store"
        a = pack.run("out=x", "write=f:F", extra=("--cache-dir", str(store)))
        assert a.rc == 0 and status(a)[0] == "miss", a
        assert f"cache stored {status(a)[1]}" in cache_lines(a)
        assert os.stat(store).st_dev != os.stat(pack.rt.root).st_dev
        b = pack.run("out=x", "write=f:F", extra=("--cache-dir", str(store)))
        assert status(b) == ("hit", status(a)[1]) and tree_of(b.outdir) == {"f": b"F"}
        assert pack.entries() == [], "--cache-dir wins over $COMET_CACHE_DIR"
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_rootfs_is_never_written_and_the_second_run_hits(pack):
    """Issue 27 item 7: `pack run --rootfs DIR` left dev/, proc/, workdir/ in
    DIR, so the first rerun missed (a new tree digest). The rootfs is a
    lower layer (RunMounts::view): nothing of it changes, not even an mtime,
    and the first identical rerun is a hit."""
    packs.strip_mount_points(pack.rootfs)
    os.chmod(pack.rootfs / "etc", 0o750)
    os.utime(pack.rootfs / "etc/marker", ns=(1_000_000_000, 1_000_000_000))
    before = packs.tree_state(pack.rootfs)
    assert not any(d in before for d in packs.MOUNT_POINT_DIRS)
    ops = ("out=x", "cat=/etc/marker", "write=r.txt:1")
    first = pack.run(*ops)
    assert first.rc == 0, first
    assert status(first)[0] == "miss", first.err
    assert packs.tree_state(pack.rootfs) == before
    second = pack.run(*ops)
    assert status(second) == ("hit", status(first)[1]), second.err
    third = pack.run(*ops, extra=("--no-cache",))  # a real run again
    assert third.rc == 0, third
    assert packs.tree_state(pack.rootfs) == before
