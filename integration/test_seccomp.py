"""linux.seccomp: errno rules, defaultAction errno, argument conditions."""
import platform

import pytest

from lib import config as cfg
from lib.asserts import assert_refused

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="syscall list is x86_64")

ALL_SYSCALLS = (cfg.DATA_DIR / "syscalls-x86_64.txt").read_text().split()


def allow_all_but(names, action="SCMP_ACT_ERRNO", errno_ret=None):
    rule = {"names": list(names), "action": action}
    if errno_ret is not None:
        rule["errnoRet"] = errno_ret
    return {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"], "syscalls": [rule]}


def test_errno_rule_default_is_eperm(rt, bundle):
    b = bundle().readonly(False).seccomp(allow_all_but(["mkdir", "mkdirat"]))
    assert rt.run_probe(b, "mkdir", "/tmp/d").probe()["errno"] == "EPERM"
    assert not (b.rootfs / "tmp" / "d").exists()


def test_errno_rule_custom_errno(rt, bundle):
    b = bundle().readonly(False).seccomp(allow_all_but(["mkdir", "mkdirat"], errno_ret=122))  # EDQUOT
    assert rt.run_probe(b, "mkdir", "/tmp/d").probe()["errno"] == "EDQUOT"


def test_other_syscalls_unaffected(rt, bundle):
    b = bundle().readonly(False).seccomp(allow_all_but(["mkdir", "mkdirat"]))
    assert rt.run_probe(b, "write", "/tmp/f", "x").probe()["ok"] is True


def test_seccomp_mode_reported(rt, bundle):
    assert rt.run_probe(bundle().seccomp(allow_all_but(["mkdir"])), "info").probe()["seccomp"] == 2
    assert rt.run_probe(bundle(), "info").probe()["seccomp"] == 0


def test_default_action_errno(rt, bundle):
    # allow every syscall by name except mkdir/mkdirat; the default action
    # (errno 38, ENOSYS) applies to them
    allowed = [s for s in ALL_SYSCALLS if s not in ("mkdir", "mkdirat")]
    prof = {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38, "architectures": ["SCMP_ARCH_X86_64"],
            "syscalls": [{"names": allowed, "action": "SCMP_ACT_ALLOW"}]}
    b = bundle().readonly(False).seccomp(prof)
    assert rt.run_probe(b, "mkdir", "/tmp/d").probe()["errno"] == "ENOSYS"
    assert rt.run_probe(b, "write", "/tmp/f", "x").probe()["ok"] is True


def test_default_action_errno_without_ret_is_eperm(rt, bundle):
    allowed = [s for s in ALL_SYSCALLS if s not in ("mkdir", "mkdirat")]
    prof = {"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86_64"],
            "syscalls": [{"names": allowed, "action": "SCMP_ACT_ALLOW"}]}
    b = bundle().readonly(False).seccomp(prof)
    assert rt.run_probe(b, "mkdir", "/tmp/d").probe()["errno"] == "EPERM"


def test_argument_condition(rt, bundle):
    # kill(pid, SIGUSR1) -> EACCES; kill(pid, 0) allowed
    prof = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
            "syscalls": [{"names": ["kill"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13,
                          "args": [{"index": 1, "value": 10, "op": "SCMP_CMP_EQ"}]}]}
    b = bundle().seccomp(prof)
    assert rt.run_probe(b, "kill", "1", "0").probe()["ok"] is True
    assert rt.run_probe(b, "kill", "1", "USR1").probe()["errno"] == "EACCES"


def test_masked_eq_condition(rt, bundle):
    # unshare(flags & CLONE_NEWUSER == CLONE_NEWUSER) -> ENOTSUP (95)
    newuser = 0x10000000
    prof = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
            "syscalls": [{"names": ["unshare"], "action": "SCMP_ACT_ERRNO", "errnoRet": 95,
                          "args": [{"index": 0, "value": newuser, "valueTwo": newuser,
                                    "op": "SCMP_CMP_MASKED_EQ"}]}]}
    b = bundle().seccomp(prof)
    assert rt.run_probe(b, "unshare", "NEWUSER").probe()["errno"] == "EOPNOTSUPP"
    # NEWNS does not match the condition: plain EPERM from the missing CAP_SYS_ADMIN
    assert rt.run_probe(b, "unshare", "NEWNS").probe()["errno"] == "EPERM"


def test_kill_action(rt, bundle):
    b = bundle().readonly(False).seccomp(allow_all_but(["mkdir", "mkdirat"], action="SCMP_ACT_KILL_PROCESS"))
    res = rt.run_probe(b, "mkdir", "/tmp/d")
    assert res.rc == 128 + 31, res  # SIGSYS


def test_unknown_action_fails(rt, harness, bundle):
    b = bundle().seccomp(allow_all_but(["mkdir"], action="SCMP_ACT_BOGUS"))
    assert_refused(harness, "run", b, "SCMP_ACT_BOGUS")


def test_unknown_syscall_name_is_ignored(rt, bundle):
    b = bundle().readonly(False).seccomp(allow_all_but(["mkdir", "mkdirat", "no_such_syscall_xyz"]))
    assert rt.run_probe(b, "mkdir", "/tmp/d").probe()["errno"] == "EPERM"


def test_seccomp_applies_to_children(rt, bundle):
    b = bundle().readonly(False).seccomp(allow_all_but(["mkdir", "mkdirat"]))
    res = rt.run(rt.new_id(), b.sh("/probe mkdir /tmp/d"))
    assert res.probe()["errno"] == "EPERM"
