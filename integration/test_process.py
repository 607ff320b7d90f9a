"""process: args, env, cwd, user, umask, rlimits, noNewPrivileges, oomScoreAdj."""
import pytest

from lib.asserts import assert_nothing_left, assert_refused


def info(rt, b):
    res = rt.run_probe(b, "info")
    assert res.rc == 0, res
    return res.probe()


def test_args_passed_verbatim(rt, bundle):
    b = bundle().args("/bin/sh", "-c", 'for a in "$@"; do echo "[$a]"; done', "sh", "a b", "", "c\"d", "--x")
    res = rt.run(rt.new_id(), b)
    assert res.rc == 0, res
    assert res.out == '[a b]\n[]\n[c"d]\n[--x]\n'


def test_pid_one_and_ppid_zero(rt, bundle):
    d = info(rt, bundle())
    assert d["pid"] == 1
    assert d["ppid"] == 0


def test_env_exact(rt, bundle):
    b = bundle().env("FOO=bar", "EMPTY=", "WITH=equals=sign", "HOME=/custom", replace=True)
    d = info(rt, b)
    assert d["env"] == ["FOO=bar", "EMPTY=", "WITH=equals=sign", "HOME=/custom"]


def test_home_added_from_passwd(rt, bundle):
    # runc adds HOME from the container's /etc/passwd when env lacks it
    d = info(rt, bundle().env("A=1", replace=True))
    assert d["env"] == ["A=1", "HOME=/root"]


def test_home_for_unknown_user_is_root_dir(rt, bundle):
    d = info(rt, bundle().user(1234, 1234).env("A=1", replace=True))
    assert d["env"] == ["A=1", "HOME=/"]


def test_default_env_from_spec(rt, bundle):
    d = info(rt, bundle())
    assert d["env"][:2] == ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"]


def test_cwd(rt, bundle):
    b = bundle()
    (b.rootfs / "work").mkdir()
    assert info(rt, b.cwd("/work"))["cwd"] == "/work"


def test_cwd_created_when_missing(rt, bundle):
    # runc creates a missing cwd (even with a read-only root)
    b = bundle().cwd("/does/not/exist")
    assert info(rt, b)["cwd"] == "/does/not/exist"
    assert (b.rootfs / "does" / "not" / "exist").is_dir()


def test_cwd_is_a_file_fails(rt, harness, bundle):
    b = bundle().cwd("/etc/passwd")
    cid = rt.new_id()
    res = rt.run(cid, b.probe("info"))
    assert res.rc != 0
    assert "/etc/passwd" in res.error
    assert_nothing_left(harness, cid)


def test_user_uid_gid_groups(rt, bundle):
    d = info(rt, bundle().user(1000, 1001, [5, 7, 1001]))
    assert (d["uid"], d["euid"], d["gid"], d["egid"]) == (1000, 1000, 1001, 1001)
    assert sorted(d["groups"]) == [5, 7, 1001]


def test_user_without_additional_gids_has_no_groups(rt, bundle):
    d = info(rt, bundle().user(1000, 1000))
    assert d["groups"] == []


def test_root_user_has_no_supplementary_groups(rt, bundle):
    assert info(rt, bundle())["groups"] == []


def test_nobody_user(rt, bundle):
    d = info(rt, bundle().user(65534, 65534))
    assert (d["uid"], d["gid"]) == (65534, 65534)
    assert d["caps"]["eff"] == "0000000000000000"
    assert d["caps"]["prm"] == "0000000000000000"


@pytest.mark.parametrize("umask,expected", [(None, "0022"), (0o077, "0077"), (0, "0000"), (0o027, "0027")])
def test_umask(rt, bundle, umask, expected):
    b = bundle().user(0, 0, umask=umask)
    assert info(rt, b)["umask"] == expected


def test_umask_applies_to_created_files(rt, bundle):
    b = bundle().readonly(False).user(0, 0, umask=0o077)
    b.sh("/probe write /tmp/f x >/dev/null; /probe stat /tmp/f")
    res = rt.run(rt.new_id(), b)
    assert res.rc == 0, res
    assert res.probe()["data"]["mode"] == "0600"  # 0644 & ~077


def test_rlimits(rt, bundle):
    b = (bundle().rlimit("RLIMIT_NOFILE", 100, 200).rlimit("RLIMIT_CORE", 0, 0)
         .rlimit("RLIMIT_NPROC", 500, 600).rlimit("RLIMIT_MSGQUEUE", 4096, 8192))
    r = info(rt, b)["rlimits"]
    assert r["RLIMIT_NOFILE"] == [100, 200]
    assert r["RLIMIT_CORE"] == [0, 0]
    assert r["RLIMIT_NPROC"] == [500, 600]
    assert r["RLIMIT_MSGQUEUE"] == [4096, 8192]


def test_default_rlimit_from_spec(rt, bundle):
    assert info(rt, bundle())["rlimits"]["RLIMIT_NOFILE"] == [1024, 1024]


def test_rlimit_unlimited(rt, bundle):
    b = bundle().rlimit("RLIMIT_CPU", 2**64 - 1, 2**64 - 1)
    assert info(rt, b)["rlimits"]["RLIMIT_CPU"] == [-1, -1]


def test_rlimit_soft_above_hard_fails(rt, harness, bundle):
    b = bundle().rlimit("RLIMIT_NOFILE", 300, 200)
    cid = rt.new_id()
    res = rt.run(cid, b)
    assert res.rc != 0
    assert "rlimit" in res.error.lower() or "invalid argument" in res.error
    assert_nothing_left(harness, cid)


def test_unknown_rlimit_fails(rt, harness, bundle):
    b = bundle().rlimit("RLIMIT_BOGUS", 1, 1)
    assert_refused(harness, "run", b, "RLIMIT_BOGUS")


@pytest.mark.parametrize("nnp,expected", [(True, 1), (False, 0)])
def test_no_new_privileges(rt, bundle, nnp, expected):
    assert info(rt, bundle().no_new_privileges(nnp))["no_new_privs"] == expected


def test_no_new_privileges_absent_means_off(rt, bundle):
    b = bundle()
    del b.process["noNewPrivileges"]
    assert info(rt, b)["no_new_privs"] == 0


# negative values need CAP_SYS_RESOURCE, which the test host may lack
@pytest.mark.parametrize("adj", [0, 123, 1000])
def test_oom_score_adj(rt, bundle, adj):
    assert info(rt, bundle().oom_score_adj(adj))["oom_score_adj"] == adj


def test_oom_score_adj_out_of_range_fails(rt, harness, bundle):
    cid = rt.new_id()
    res = rt.run(cid, bundle().oom_score_adj(5000).probe("info"))
    assert res.rc != 0
    assert_nothing_left(harness, cid)
