"""`--no-pivot`: MS_MOVE + chroot instead of pivot_root, for roots that
cannot be pivoted (an initramfs), and what it gives up."""
import os


def _env(**kw):
    return dict(os.environ, **kw)


def test_no_pivot_runs_in_the_rootfs(rt, bundle):
    res = rt.run_probe(bundle(), "ls", "/", extra=("--no-pivot",))
    names = res.probe()["data"]
    assert "probe" in names, names
    assert "work" not in names and "boot" not in names, names


def test_no_pivot_is_the_way_out_when_pivot_root_fails(rt, bundle):
    # COMET_FAULT=pivot-root-einval: pivot_root fails as on a ramfs root
    env = _env(COMET_FAULT="pivot-root-einval")
    res = rt.run(rt.new_id(), bundle().probe("exit", "0"), env=env)
    assert res.rc == 1, res
    assert "pivot_root" in res.error and "EINVAL" in res.error, res
    res = rt.run(rt.new_id(), bundle().probe("exit", "7"), "--no-pivot", env=env)
    assert res.rc == 7, res


def test_no_pivot_chroot_needs_the_capability(rt, bundle):
    b = bundle().add_mount("/tmp", "tmpfs", "tmpfs", ["size=1m"])
    res = rt.run_probe(b, "chroot-escape", "/tmp/jail", extra=("--no-pivot",))
    assert res.probe()["errno"] == "EPERM"



def test_no_pivot_chroot_escape_stays_in_the_rootfs(rt, bundle):
    # The classic escape (chroot into a subdir, chdir("..") past it, chroot
    # ".") with CAP_SYS_CHROOT: the rootfs is moved onto "/", so ".." from
    # its root climbs only through stacked mount roots and stays there.
    b = bundle().caps(["CAP_SYS_CHROOT"]).add_mount("/tmp", "tmpfs", "tmpfs", ["size=1m"])
    p = rt.run_probe(b, "chroot-escape", "/tmp/jail", extra=("--no-pivot",)).probe()
    assert p["ok"] is True, p
    assert p["data"]["escaped"] is False, p
    assert p["data"]["after"]["ino"] == p["data"]["before"]["ino"], p
