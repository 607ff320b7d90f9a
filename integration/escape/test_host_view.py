"""What a pack may learn of the host, and take from it (issue 21, items 11
and 12). On 4dba8cb /proc/self/mountinfo inside a pack named the run
directory under the state root and the caller's --input, --output and
--rootfs paths; /proc/cmdline and the boot id were readable; a pack had no
pids or memory limit, its writable places were host disk, and a sparse file
became a full one in --output."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from lib.packs import MANIFEST, build_packprobe, make_pack, one, pack_run, results, run_with_events

pytestmark = pytest.mark.comet_only


@pytest.fixture(scope="session")
def packprobe(session_dir):
    return build_packprobe(session_dir)


def manifest_with(resources: str, write: str = "[/workdir/out]") -> str:
    m = MANIFEST.replace("    write: [/workdir/out]", f"    write: {write}")
    return m + "resources:\n" + "".join(f"  {line}\n" for line in resources.strip().splitlines())


def raw_before(res, marker: str) -> str:
    """The raw text a `cat` op printed (everything before its result line)."""
    return res.out


def test_no_host_path_in_mounts_and_no_host_identity(rt, workdir, packprobe):
    pack = make_pack(workdir, packprobe)
    inp, out = workdir / "my-inputs", workdir / "my-output"
    inp.mkdir()
    (inp / "data.txt").write_text("in\n")
    res = pack_run(rt, pack, "cat=/proc/self/mountinfo", "cat=/proc/self/mounts",
                   "cat=/proc/1/mountinfo", "cat=/proc/cmdline", "cat=/proc/sys/kernel/random/boot_id",
                   "open-read=/workdir/inputs/data.txt",
                   extra=("--input", str(inp), "--output", str(out)))
    assert res.rc == 0, res
    r = results(res)
    assert one(r, "open-read")["ok"] is True, r  # the input is there
    text = res.out
    for host_path in (str(workdir), str(rt.root), str(pack[1]), str(inp), str(out), "/tmp/"):
        assert host_path not in text, f"{host_path} visible inside the pack:\n{text}"
    cats = r["cat"]
    assert [c["ok"] for c in cats] == [True] * 5, cats
    assert cats[3]["data"] == "0" and cats[4]["data"] == "0", cats  # cmdline, boot_id: empty
    # nothing left on the host: no mount under the state root, no run dir
    mounts = open("/proc/self/mountinfo").read()
    assert str(rt.root) not in mounts, mounts
    assert not list((rt.root / "packs").iterdir()) if (rt.root / "packs").exists() else True


def test_pids_limit(rt, workdir, packprobe):
    pack = make_pack(workdir, packprobe, manifest_with("pids: 16"))
    res = pack_run(rt, pack, "threads=64")
    t = one(results(res), "threads")
    assert t["errno"] == "EAGAIN" and int(t["data"]) < 16, t


def test_memory_limit(rt, workdir, packprobe):
    pack = make_pack(workdir, packprobe, manifest_with("memory: 32Mi"))
    res = pack_run(rt, pack, "alloc=16")  # under the limit: fine
    assert one(results(res), "alloc")["ok"] is True, res
    res = pack_run(rt, pack, "alloc=96")  # over: the cgroup's OOM killer
    assert res.rc == 137 and "alloc" not in results(res), res


def test_writable_places_are_bounded_tmpfs(rt, workdir, packprobe):
    pack = make_pack(workdir, packprobe,
                     manifest_with("tmp: 4Mi", write="[/workdir/out, /workdir/scratch]"))
    res = pack_run(rt, pack, "fill-keep=/workdir/scratch/big:16", "statfs=/workdir/scratch")
    f = one(results(res), "fill-keep")
    assert f["errno"] == "ENOSPC" and int(f["data"]) <= 4 << 20, f


def test_output_limit_is_reported(rt, workdir, packprobe):
    pack = make_pack(workdir, packprobe, manifest_with("output: 4Mi"))
    out = workdir / "collected"
    res, ev = run_with_events(rt, pack, workdir, "fill-keep=/workdir/out/big:16",
                              extra=("--output", str(out)))
    assert one(results(res), "fill-keep")["errno"] == "ENOSPC", res.out
    assert res.rc == 3, res
    assert [(e["surface"], e["errno"]) for e in ev] == [("resource", "ENOSPC")], ev
    assert "resources.output" in ev[0]["requested"], ev
    assert "/workdir/out reached its limit" in res.err, res.err
    big = out / "big"
    assert not big.exists() or big.stat().st_size <= 4 << 20


def test_output_holes_are_kept(rt, workdir, packprobe):
    pack = make_pack(workdir, packprobe, manifest_with("output: 4Mi"))
    out = workdir / "collected"
    res = pack_run(rt, pack, "sparse=/workdir/out/sparse:1024", extra=("--output", str(out)))
    assert one(results(res), "sparse")["ok"] is True, res  # 1 GiB apparent, no blocks: fits
    assert res.rc == 0, res
    st = os.stat(out / "sparse")
    assert st.st_size == 1 << 30 and st.st_blocks * 512 < 1 << 20, (st.st_size, st.st_blocks)


def test_cache_entry_limit(rt, workdir, packprobe):
    pack = make_pack(workdir, packprobe, manifest_with("cache_entry: 1Mi"))
    res = pack_run(rt, pack, "fill-keep=/workdir/out/two:2")
    assert res.rc == 0, res
    assert "cache not stored" in res.out + res.err and "cache_entry" in res.out + res.err, res


@pytest.mark.parametrize("block,said", [
    ("pids: 0", "resources.pids: expected an integer 8..32768"),
    ("memory: lots", "resources.memory: expected a size"),
    ("memory: 1Mi", "resources.memory: expected a size of at least"),
    ("disk: 1Gi", "resources"),
])
def test_bad_resources_fail_validate(rt, workdir, packprobe, block, said):
    pack = make_pack(workdir, packprobe, manifest_with(block))
    res = rt("pack", "validate", str(pack[0]))
    assert res.rc != 0 and said in res.err, res


def test_dev_shm_is_not_a_place_to_write(rt, workdir, packprobe):
    """Red team (issue 21): /dev/shm took writes although fs.write did not
    list it (and cannot: fs.write may not name /dev). It is read-only, and a
    refused write there is an fs.write event."""
    pack = make_pack(workdir, packprobe)
    res, ev = run_with_events(rt, pack, workdir, "write=/dev/shm/x")
    assert one(results(res), "write")["errno"] == "EROFS", res.out
    assert res.rc == 3, res
    assert [(e["surface"], e["requested"]) for e in ev] == [("fs.write", "/dev/shm/x")], ev


def test_the_callers_stdio_files_are_not_the_agents(rt, workdir, packprobe):
    """Red team (issue 21, round 2): with stdout redirected to the caller's
    log file, the agent reopened /proc/self/fd/1 read-only, read the log and
    learned its host path. The agent's stdin is /dev/null and its stdout and
    stderr are pipes, whatever the caller's are."""
    pack = make_pack(workdir, packprobe)
    log = workdir / "caller.log"
    log.write_text("SECRET-CALLER-LOG-LINE\n")
    p, rootfs = pack
    with open(log, "a") as out, open(log) as inp:
        r = subprocess.run([str(rt.binary), "--root", str(rt.root), "pack", "run", str(p), "--rootfs",
                            str(rootfs), "--no-cache", "--", "stdio"], stdin=inp, stdout=out,
                           stderr=subprocess.STDOUT, timeout=60)
    assert r.returncode == 0
    text = log.read_text()
    line = next(l for l in text.splitlines() if '"op":"stdio"' in l)
    data = json.loads(line)["data"]
    assert "SECRET" not in data and str(workdir) not in data, data
    assert data.startswith("0=/dev/null|;1=pipe:[") and ";2=pipe:[" in data, data


def test_an_output_of_many_empty_entries_is_bounded(rt, workdir, packprobe):
    """Red team (issue 21, round 2): 60,000 empty directories under a 1 MiB
    output limit became 236 MB on the host. The output tmpfs has an inode
    limit, and collection charges a block per entry: it stops at the limit,
    reports it, exits 3."""
    pack = make_pack(workdir, packprobe, manifest_with("output: 1Mi"))
    out = workdir / "collected"
    res, ev = run_with_events(rt, pack, workdir, "mkdirs=/workdir/out/d:3000",
                              extra=("--output", str(out)))
    made = int(one(results(res), "mkdirs")["data"])
    assert made <= 1024, made  # nr_inodes of a 1 MiB tmpfs: 1024 (one is the root)
    assert res.rc == 3, res
    assert [e["surface"] for e in ev] == ["resource"], ev
    on_disk = int(subprocess.run(["du", "-sb", str(out)], capture_output=True, text=True).stdout.split()[0])
    assert on_disk <= (1 << 20) + (64 << 10), on_disk


def test_agent_chosen_names_in_the_runtimes_messages_are_escaped(rt, workdir, packprobe):
    """Red team (issue 21, round 3): a FIFO in /workdir/out named with an
    OSC title sequence reached the caller's terminal raw through the
    runtime's own "not collected" warning. Names are shown as \\x1b."""
    pack = make_pack(workdir, packprobe)
    out = workdir / "collected"
    res = pack_run(rt, pack, "mkfifo=/workdir/out/\x1b]0;PWNED\x07\x1b[31mRED",
                   extra=("--output", str(out)))
    assert one(results(res), "mkfifo")["ok"] is True, res.out
    assert "\x1b" not in res.err and "\x07" not in res.err, repr(res.err)
    assert "x1b]0;PWNED" in res.err and "is not a regular file" in res.err, res.err


def test_a_pack_symlink_cannot_place_a_mount_point_on_the_host(rt, workdir, packprobe):
    """Red team (issue 21, round 3): a pack shipping `scratch -> HOSTDIR` with
    fs.write /workdir/scratch/deep made HOSTDIR/deep on the host, as root.
    Mount points are made in the staged copy only, never through a link."""
    host_dir = workdir / "hostdir"
    host_dir.mkdir()
    pack = make_pack(workdir, packprobe,
                     MANIFEST.replace("    write: [/workdir/out]", "    write: [/workdir/out, /workdir/scratch/deep]"))
    (pack[0] / "scratch").symlink_to(host_dir)
    res = pack_run(rt, pack, "exit=0")
    assert res.rc != 0 and "passes through /scratch" in res.err, res
    assert list(host_dir.iterdir()) == [], list(host_dir.iterdir())


def test_a_sparse_file_in_a_pack_stays_sparse_when_staged(rt, workdir, packprobe):
    """Red team (issue 21, round 3): a 2 GiB sparse file in a pack became
    2 GiB of host disk in the run directory before the agent started."""
    pack = make_pack(workdir, packprobe)
    with open(pack[0] / "big", "wb") as f:
        f.truncate(1 << 30)
    res = pack_run(rt, pack, "blocks=/workdir/big")
    b = one(results(res), "blocks")
    assert b["ok"] is True and int(b["data"]) * 512 < 1 << 20, b


def test_a_policy_exec_list_cannot_widen_the_capabilities_exec_lock(rt, bundle):
    """Red team (issue 21, round 3): with the capabilities annotation, adding
    the policy annotation's exec list [/probe, /bin/busybox] let busybox run.
    The stricter of the two holds: a list that does not name the command is
    refused; one that does narrows the lock to the command."""
    caps = json.dumps({"egress": [], "determinism_tier": "read-only"})
    b = bundle().probe("exit", "0").annotations(**{
        "org.soyaos.comet.capabilities": caps,
        "org.soyaos.comet.policy": json.dumps({"exec": ["/bin/busybox"]})})
    cid = rt.new_id("polexec")
    res = rt.create(cid, b)
    assert res.rc != 0 and "does not name the config's command /probe" in res.error, res.error
    assert not (rt.root / cid).exists()
    b2 = bundle().args("/probe", "exec", "/bin/busybox", "true").annotations(**{
        "org.soyaos.comet.capabilities": caps,
        "org.soyaos.comet.policy": json.dumps({"exec": ["/probe", "/bin/busybox"]})})
    r = rt.run(rt.new_id("polexec"), b2)
    assert r.rc == 3, r  # busybox refused (EACCES), reported


@pytest.mark.parametrize("where", ["key", "interpreter"])
def test_pack_chosen_text_in_the_runtimes_errors_is_escaped(rt, workdir, packprobe, where):
    """Red team (issue 21, round 4): a manifest key or interpreter path with
    an OSC sequence reached the terminal raw through the runtime's own error
    line. Every log line shows control characters as \\xNN."""
    osc = r"\e]0;PWNED\a"  # YAML's escapes in a double-quoted scalar: ESC, BEL
    m = MANIFEST + f'"{osc}": 1\n' if where == "key" else \
        MANIFEST.replace("interpreter: /usr/bin/packprobe", f'interpreter: "/usr/bin/{osc}"')
    pack = make_pack(workdir, packprobe, m)
    res = rt("pack", "validate", str(pack[0])) if where == "key" else pack_run(rt, pack, "exit=0")
    assert res.rc != 0, res
    assert "\x1b" not in res.err and "\x07" not in res.err, repr(res.err)
    assert "x1b]0;PWNED" in res.err, res.err
