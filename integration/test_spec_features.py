"""`spec` and `features`."""
import json

from lib import default_config


def test_spec_writes_default_config(rt, workdir):
    d = workdir / "spec"
    d.mkdir()
    res = rt("spec", cwd=d)
    assert res.rc == 0, res
    assert json.loads((d / "config.json").read_text()) == default_config()


def test_spec_bundle_flag(rt, workdir):
    d = workdir / "spec2"
    d.mkdir()
    res = rt("spec", "--bundle", str(d))
    assert res.rc == 0, res
    assert json.loads((d / "config.json").read_text()) == default_config()


def test_spec_refuses_to_overwrite(rt, workdir):
    d = workdir / "spec3"
    d.mkdir()
    (d / "config.json").write_text("keep me")
    res = rt("spec", cwd=d)
    assert res.rc != 0
    assert "File config.json exists. Remove it first" in res.error
    assert (d / "config.json").read_text() == "keep me"


def test_features_json_shape(rt):
    res = rt("features")
    assert res.rc == 0, res
    f = json.loads(res.out)
    assert f["ociVersionMin"].startswith("1.0")
    assert f["ociVersionMax"].startswith("1.")
    assert set(f["hooks"]) >= {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"}
    assert {"bind", "rbind", "ro", "nosuid", "nodev", "noexec", "private", "rslave"} <= set(f["mountOptions"])
    lx = f["linux"]
    assert {"cgroup", "ipc", "mount", "network", "pid", "user", "uts"} <= set(lx["namespaces"])
    assert {"CAP_SYS_ADMIN", "CAP_KILL", "CAP_NET_BIND_SERVICE"} <= set(lx["capabilities"])
    assert isinstance(lx["cgroup"]["v1"], bool) and isinstance(lx["cgroup"]["v2"], bool)
    sc = lx["seccomp"]
    assert sc["enabled"] is True
    assert {"SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL"} <= set(sc["actions"])
    assert {"SCMP_CMP_EQ", "SCMP_CMP_MASKED_EQ"} <= set(sc["operators"])
    assert "SCMP_ARCH_X86_64" in sc["archs"]
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in f.get("annotations", {}).items())


def test_features_lists_what_is_implemented(rt):
    """runc 1.4's schema, each field as implemented (issue 27): idmapped
    mounts, netDevices, memoryPolicy's modes and flags, the unsafe
    annotations, ociVersionMax 1.3.0; intelRdt is refused, so not claimed."""
    f = json.loads(rt("features").expect_ok().out)
    assert f["ociVersionMax"] == "1.3.0"
    assert {"idmap", "ridmap"} <= set(f["mountOptions"])
    lx = f["linux"]
    assert lx["mountExtensions"] == {"idmap": {"enabled": True}}
    assert lx["netDevices"] == {"enabled": True}
    assert lx["intelRdt"] == {"enabled": False}
    assert set(lx["memoryPolicy"]["modes"]) == {
        "MPOL_DEFAULT", "MPOL_PREFERRED", "MPOL_BIND", "MPOL_INTERLEAVE", "MPOL_LOCAL",
        "MPOL_PREFERRED_MANY", "MPOL_WEIGHTED_INTERLEAVE"}
    assert set(lx["memoryPolicy"]["flags"]) == {
        "MPOL_F_NUMA_BALANCING", "MPOL_F_RELATIVE_NODES", "MPOL_F_STATIC_NODES"}
    assert lx["apparmor"] == {"enabled": True} and lx["selinux"] == {"enabled": True}
    assert f["potentiallyUnsafeConfigAnnotations"] == ["org.soyaos.comet."]
    # Nothing beyond runc 1.4's schema (features.md, features-linux.md).
    assert set(f) <= {"ociVersionMin", "ociVersionMax", "hooks", "mountOptions", "linux",
                      "annotations", "potentiallyUnsafeConfigAnnotations"}
    assert set(lx) <= {"namespaces", "capabilities", "cgroup", "seccomp", "apparmor", "selinux",
                       "intelRdt", "memoryPolicy", "mountExtensions", "netDevices"}
