"""A full or read-only state directory (--root on a 64 KiB tmpfs the test
mounts and unmounts): create fails with one clear line, exit 1; nothing
half-written is ever taken for a container; existing containers can still
be inspected, and `delete --force` works afterwards."""
from __future__ import annotations

import errno
import json
import os
import subprocess

import pytest

from common import STATUSES, figure
from lib.asserts import assert_one_line_error
from lib.runtime import Runtime

pytestmark = pytest.mark.comet_only


@pytest.fixture
def small_root(harness):
    """(Runtime on a 64 KiB tmpfs root, the mount point)."""
    mnt = harness.workdir / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0711", "tmpfs", str(mnt)], check=True)
    srt = Runtime(harness.rt.binary, mnt / "root", harness.workdir)
    # LIFO: the deletes run before the unmount
    harness.add_cleanup(lambda: subprocess.run(["umount", "-l", str(mnt)], check=True))

    def delete_all():
        subprocess.run(["mount", "-o", "remount,rw", str(mnt)], capture_output=True)
        for cid in srt.ids:
            srt("delete", "--force", cid, timeout=15)
        harness.rt.pids.update(srt.pids)
    harness.add_cleanup(delete_all)
    harness.rt.ids.extend([])  # the harness checks its own rt's ids only
    return srt, mnt


def fill(path, keep_free: int) -> int:
    """Fill the filesystem of `path` until at most keep_free bytes are left;
    returns the bytes written."""
    total = 0
    with open(path, "ab") as f:
        chunk = b"\0" * 4096
        while True:
            st = os.statvfs(os.path.dirname(path))
            if st.f_bavail * st.f_frsize <= keep_free:
                break
            try:
                f.write(chunk)
                f.flush()
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
                break
            total += len(chunk)
    return total


def check_list_consistent(srt, allowed_ids):
    """list and state never show a torn or half-made container."""
    res = srt("list", "--format", "json")
    assert res.rc == 0, res
    entries = json.loads(res.out) or []
    for e in entries:
        assert e["id"] in allowed_ids, f"list shows a container that was never made: {e}"
        assert e["status"] in STATUSES, e
    return {e["id"] for e in entries}


def _running_keeper(srt, bundle):
    """A container started before the fault, that must survive it: (its
    bundle, its id)."""
    b = bundle().probe("sleep", "60").write()
    keep = srt.new_id("keep")
    srt("create", "--bundle", str(b.path), keep).expect_ok()
    srt("start", keep).expect_ok()
    return b, keep


def test_full_state_dir(small_root, bundle):
    srt, mnt = small_root
    b, keep = _running_keeper(srt, bundle)
    filler = mnt / "filler"
    failures = successes = 0
    messages = set()
    # from full to 32 KiB free, one page more each round: every create either
    # succeeds completely or fails with nothing left that looks like state
    for free in range(0, 32 * 1024 + 1, 4096):
        if filler.exists():
            filler.unlink()
        fill(str(filler), free)
        cid = srt.new_id("full")
        res = srt("create", "--bundle", str(b.path), cid)
        if res.rc == 0:
            successes += 1
            st = srt("state", cid)
            assert st.rc == 0 and json.loads(st.out)["status"] == "created", st
        else:
            failures += 1
            assert res.rc == 1, res
            msg = assert_one_line_error(res, any_of=("enospc", "no space left"))
            messages.add(msg.replace(cid, "ID").replace(str(mnt), "MNT"))
            assert str(mnt) in res.error, f"the error must name the path: {res.error!r}"
            st = srt("state", cid)
            assert st.rc == 1 and "does not exist" in st.error, f"half-made container visible: {st!r}"
        shown = check_list_consistent(srt, {keep, cid})
        assert keep in shown
        assert srt("state", keep).rc == 0
        srt("delete", "--force", cid).expect_ok()
        assert srt("state", cid).rc == 1
        assert not (mnt / "root" / cid).exists(), f"state dir of {cid} left after delete --force"
    assert failures >= 1, "the state dir was never full enough to fail a create"
    figure("full_state_dir", creates=failures + successes, failed=failures, succeeded=successes,
           errors=sorted(messages))
    filler.unlink()
    # with space again, create works
    cid = srt.new_id("after")
    srt("create", "--bundle", str(b.path), cid).expect_ok()
    srt("delete", "--force", cid).expect_ok()
    srt("delete", "--force", keep).expect_ok()
    assert sorted(os.listdir(mnt / "root")) == []


def test_read_only_state_dir(small_root, bundle):
    srt, mnt = small_root
    b, keep = _running_keeper(srt, bundle)
    subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
    try:
        cid = srt.new_id("ro")
        res = srt("create", "--bundle", str(b.path), cid)
        assert res.rc == 1, res
        msg = assert_one_line_error(res, any_of=("erofs", "read-only file system"))
        assert str(mnt / "root") in msg, f"the error must name the path: {msg!r}"
        figure("read_only_state_dir", error=msg.replace(cid, "ID").replace(str(mnt), "MNT"))
        st = srt("state", keep)
        assert st.rc == 0 and json.loads(st.out)["status"] == "running", st
        assert check_list_consistent(srt, {keep}) == {keep}
        assert srt("state", cid).rc == 1
        res = srt("delete", "--force", cid)  # nothing to delete: force is a no-op
        assert res.rc == 0, res
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(mnt)], check=True)
    srt("delete", "--force", keep).expect_ok()
    assert os.listdir(mnt / "root") == []


def test_bare_state_dir_is_cleaned_by_delete_force(rt):
    # a create SIGKILLed right after mkdir: no lock, no record
    cid = rt.new_id("bare")
    (rt.root / cid).mkdir(parents=True)
    assert rt("list", "-q").out.split() == []
    st = rt.state_raw(cid)
    assert st.rc == 1 and "does not exist" in st.error, st
    rt.delete(cid, "--force").expect_ok()
    assert not (rt.root / cid).exists()


def test_tombstone_of_a_killed_delete_is_swept(rt, bundle):
    # a delete SIGKILLed mid-removal leaves <root>/.deleted@ID@PID; it is
    # never listed, and the next delete removes it
    p = subprocess.Popen(["true"])
    p.wait()  # a pid that is dead
    tomb = rt.root / f".deleted@cmt-gone@{p.pid}"
    (tomb / "sub").mkdir(parents=True)
    (tomb / "sub" / "state.json").write_text("{}")
    assert rt("list", "-q").out.split() == []
    cid = rt.new_id()
    rt.create(cid, bundle().probe("sleep", "30")).expect_ok()
    rt.delete(cid, "--force").expect_ok()
    assert not tomb.exists(), "stale tombstone not swept"
    assert os.listdir(rt.root) == []
