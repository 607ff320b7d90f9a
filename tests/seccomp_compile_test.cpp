// compile(): the decisions of compiled filters, checked with the evaluator.
#include <linux/audit.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/syscall.h>

#include <gtest/gtest.h>

#include "comet/seccomp/bpf_eval.hpp"
#include "comet/seccomp/seccomp.hpp"

#include "support/seccomp_spec.hpp"

namespace cs = comet::seccomp;
namespace oci = comet::oci;

namespace {

using comet::test::arg;
using comet::test::profile;
using comet::test::rule;

cs::Program must_compile(const oci::Seccomp& s, const cs::CompileOptions& o = {}) {
  auto r = cs::compile(s, o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().what());
  if (!r.ok()) return {};
  EXPECT_EQ(cs::check_filter(r->filter), "") << cs::disassemble(r->filter);
  return std::move(r).value();
}

int nr_of(const char* name, uint32_t arch_token = SCMP_ARCH_NATIVE) {
  return seccomp_syscall_resolve_name_arch(arch_token, name);
}

uint32_t run(const cs::Program& p, int nr, std::array<uint64_t, 6> args = {},
             uint32_t audit_arch = cs::native_audit_arch()) {
  return cs::evaluate(p.filter, cs::make_seccomp_data(nr, args, audit_arch));
}
uint32_t run(const cs::Program& p, const char* name, std::array<uint64_t, 6> args = {}) {
  return run(p, nr_of(name), args);
}

constexpr uint32_t kEperm = SECCOMP_RET_ERRNO | EPERM;

}  // namespace

TEST(SeccompCompile, DefaultActionAppliesToUnlistedSyscalls) {
  const auto p = must_compile(
      profile("SCMP_ACT_ERRNO", {rule({"read", "write", "exit_group"}, "SCMP_ACT_ALLOW")}));
  EXPECT_EQ(run(p, "read"), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "write"), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "exit_group"), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "getpid"), kEperm);  // ERRNO without errnoRet: EPERM
  EXPECT_EQ(run(p, "close"), kEperm);
  EXPECT_FALSE(p.needs_listener);
  EXPECT_EQ(p.flags, 0U);
}

TEST(SeccompCompile, ActionsMapToKernelReturnValues) {
  auto s = profile("SCMP_ACT_ALLOW", {
                                         rule({"getpid"}, "SCMP_ACT_KILL"),
                                         rule({"getppid"}, "SCMP_ACT_KILL_THREAD"),
                                         rule({"getuid"}, "SCMP_ACT_KILL_PROCESS"),
                                         rule({"getgid"}, "SCMP_ACT_TRAP"),
                                         rule({"geteuid"}, "SCMP_ACT_ERRNO"),
                                         rule({"getegid"}, "SCMP_ACT_ERRNO", {}, 38),
                                         rule({"gettid"}, "SCMP_ACT_TRACE"),
                                         rule({"getpgrp"}, "SCMP_ACT_TRACE", {}, 1234),
                                         rule({"getsid"}, "SCMP_ACT_LOG"),
                                         rule({"sync"}, "SCMP_ACT_NOTIFY"),
                                     });
  s.listener_path = "/run/agent.sock";
  s.listener_metadata = "meta";
  const auto p = must_compile(s);
  EXPECT_EQ(run(p, "getpid"), SECCOMP_RET_KILL_THREAD);
  EXPECT_EQ(run(p, "getppid"), SECCOMP_RET_KILL_THREAD);
  EXPECT_EQ(run(p, "getuid"), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(run(p, "getgid"), SECCOMP_RET_TRAP);
  EXPECT_EQ(run(p, "geteuid"), SECCOMP_RET_ERRNO | EPERM);
  EXPECT_EQ(run(p, "getegid"), SECCOMP_RET_ERRNO | 38);
  EXPECT_EQ(run(p, "gettid"), SECCOMP_RET_TRACE | EPERM);  // runc's default trace value
  EXPECT_EQ(run(p, "getpgrp"), SECCOMP_RET_TRACE | 1234);
  EXPECT_EQ(run(p, "getsid"), SECCOMP_RET_LOG);
  EXPECT_EQ(run(p, "sync"), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(run(p, "read"), SECCOMP_RET_ALLOW);
  EXPECT_TRUE(p.needs_listener);
  EXPECT_EQ(p.listener_path, "/run/agent.sock");
  EXPECT_EQ(p.listener_metadata, "meta");
}

TEST(SeccompCompile, DefaultErrnoRet) {
  auto s = profile("SCMP_ACT_ERRNO", {rule({"read"}, "SCMP_ACT_ALLOW")});
  s.default_errno_ret = 13;
  const auto p = must_compile(s);
  EXPECT_EQ(run(p, "getpid"), SECCOMP_RET_ERRNO | 13);
  EXPECT_EQ(run(p, "read"), SECCOMP_RET_ALLOW);
}

TEST(SeccompCompile, ErrnoRuleWithErrnoRet) {
  const auto p = must_compile(
      profile("SCMP_ACT_ALLOW", {rule({"mkdir", "mkdirat"}, "SCMP_ACT_ERRNO", {}, 30)}));
  EXPECT_EQ(run(p, "mkdirat"), SECCOMP_RET_ERRNO | 30);
  EXPECT_EQ(run(p, "mkdir"), SECCOMP_RET_ERRNO | 30);
  EXPECT_EQ(run(p, "rmdir"), SECCOMP_RET_ALLOW);
}

TEST(SeccompCompile, ArgumentEq) {
  const auto p = must_compile(profile(
      "SCMP_ACT_ERRNO", {rule({"personality"}, "SCMP_ACT_ALLOW", {arg(0, "SCMP_CMP_EQ", 8)})}));
  EXPECT_EQ(run(p, "personality", {8}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "personality", {0}), kEperm);
  EXPECT_EQ(run(p, "personality", {8 | (1ULL << 32)}), kEperm);  // the high half counts
}

TEST(SeccompCompile, ArgumentMaskedEq) {
  // value is the mask, valueTwo the expected masked value.
  const auto p = must_compile(profile(
      "SCMP_ACT_ALLOW", {rule({"clone"}, "SCMP_ACT_ERRNO",
                              {arg(0, "SCMP_CMP_MASKED_EQ", CLONE_NEWUSER, CLONE_NEWUSER)})}));
  EXPECT_EQ(run(p, "clone", {CLONE_NEWUSER | CLONE_NEWNS}), kEperm);
  EXPECT_EQ(run(p, "clone", {CLONE_NEWUSER}), kEperm);
  EXPECT_EQ(run(p, "clone", {CLONE_NEWNS | SIGCHLD}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "clone", {0}), SECCOMP_RET_ALLOW);
}

TEST(SeccompCompile, OtherOperators) {
  const auto p = must_compile(profile(
      "SCMP_ACT_ALLOW", {
                            rule({"getpriority"}, "SCMP_ACT_ERRNO", {arg(1, "SCMP_CMP_NE", 5)}),
                            rule({"setpriority"}, "SCMP_ACT_ERRNO", {arg(2, "SCMP_CMP_LT", 10)}),
                            rule({"kill"}, "SCMP_ACT_ERRNO", {arg(1, "SCMP_CMP_LE", 9)}),
                            rule({"tkill"}, "SCMP_ACT_ERRNO", {arg(1, "SCMP_CMP_GE", 1ULL << 33)}),
                            rule({"tgkill"}, "SCMP_ACT_ERRNO", {arg(2, "SCMP_CMP_GT", 20)}),
                        }));
  EXPECT_EQ(run(p, "getpriority", {0, 5}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "getpriority", {0, 6}), kEperm);
  EXPECT_EQ(run(p, "setpriority", {0, 0, 9}), kEperm);
  EXPECT_EQ(run(p, "setpriority", {0, 0, 10}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "kill", {0, 9}), kEperm);
  EXPECT_EQ(run(p, "kill", {0, 10}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "tkill", {0, 1ULL << 33}), kEperm);
  EXPECT_EQ(run(p, "tkill", {0, (1ULL << 33) - 1}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "tgkill", {0, 0, 21}), kEperm);
  EXPECT_EQ(run(p, "tgkill", {0, 0, 20}), SECCOMP_RET_ALLOW);
}

TEST(SeccompCompile, DifferentIndexesAreAnded) {
  const auto p = must_compile(profile(
      "SCMP_ACT_ERRNO",
      {rule({"kill"}, "SCMP_ACT_ALLOW", {arg(0, "SCMP_CMP_EQ", 1), arg(1, "SCMP_CMP_EQ", 9)})}));
  EXPECT_EQ(run(p, "kill", {1, 9}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "kill", {1, 15}), kEperm);
  EXPECT_EQ(run(p, "kill", {2, 9}), kEperm);
}

TEST(SeccompCompile, SameIndexIsOred) {
  // Like runc: two conditions on arg 0 become two rules, either one matches.
  const auto p = must_compile(profile(
      "SCMP_ACT_ERRNO",
      {rule({"personality"}, "SCMP_ACT_ALLOW",
            {arg(0, "SCMP_CMP_EQ", 0), arg(0, "SCMP_CMP_EQ", 8), arg(1, "SCMP_CMP_EQ", 3)})}));
  EXPECT_EQ(run(p, "personality", {0}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "personality", {8}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "personality", {5, 3}), SECCOMP_RET_ALLOW);  // the arg-1 rule alone
  EXPECT_EQ(run(p, "personality", {5, 4}), kEperm);
}

TEST(SeccompCompile, UnknownSyscallNamesAreSkipped) {
  const auto p = must_compile(
      profile("SCMP_ACT_ERRNO", {rule({"not_a_syscall", "read", "also_not_one"}, "SCMP_ACT_ALLOW"),
                                 rule({"fake_syscall_2"}, "SCMP_ACT_KILL")}));
  EXPECT_EQ(run(p, "read"), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "write"), kEperm);
}

TEST(SeccompCompile, RulesEqualToTheDefaultAreSkipped) {
  const auto p =
      must_compile(profile("SCMP_ACT_ERRNO", {
                                                 rule({"read"}, "SCMP_ACT_ERRNO"),
                                                 rule({"write"}, "SCMP_ACT_ERRNO", {}, 1),
                                                 rule({"close"}, "SCMP_ACT_ERRNO", {}, 2),
                                                 rule({"getpid"}, "SCMP_ACT_ALLOW"),
                                             }));
  EXPECT_EQ(run(p, "read"), kEperm);
  EXPECT_EQ(run(p, "write"), kEperm);
  EXPECT_EQ(run(p, "close"), SECCOMP_RET_ERRNO | 2);  // a different errno is a different action
  EXPECT_EQ(run(p, "getpid"), SECCOMP_RET_ALLOW);
  const auto all = must_compile(profile("SCMP_ACT_ALLOW", {rule({"read"}, "SCMP_ACT_ALLOW")}));
  EXPECT_EQ(run(all, "read"), SECCOMP_RET_ALLOW);
}

TEST(SeccompCompile, EmptyProfile) {
  const auto p = must_compile(profile("SCMP_ACT_ALLOW"));
  EXPECT_EQ(run(p, "read"), SECCOMP_RET_ALLOW);
  const auto k = must_compile(profile("SCMP_ACT_KILL_PROCESS"));
  EXPECT_EQ(run(k, "read"), SECCOMP_RET_KILL_PROCESS);
}

#if defined(__x86_64__)
TEST(SeccompCompile, ForeignArchitectureGetsLibseccompBadArchAction) {
  const auto p = must_compile(profile("SCMP_ACT_ALLOW", {rule({"getpid"}, "SCMP_ACT_ERRNO")}));
  // libseccomp's default bad-arch action is SCMP_ACT_KILL (kill the thread).
  EXPECT_EQ(run(p, 20, {}, AUDIT_ARCH_I386), SECCOMP_RET_KILL_THREAD);
  EXPECT_EQ(run(p, 172, {}, AUDIT_ARCH_AARCH64), SECCOMP_RET_KILL_THREAD);
  // x32 calls on the x86_64 audit arch are a different ABI: also refused.
  EXPECT_EQ(run(p, nr_of("getpid", SCMP_ARCH_X32), {}, AUDIT_ARCH_X86_64), SECCOMP_RET_KILL_THREAD);
  EXPECT_EQ(run(p, "getpid"), kEperm);
}

TEST(SeccompCompile, ListedArchitecturesUseTheirOwnSyscallNumbers) {
  // exit_group: a high number on each ABI, so that getppid is not above
  // the profile's range (which would give ENOSYS from the stub).
  auto s = profile("SCMP_ACT_ERRNO", {rule({"getpid", "read", "exit_group"}, "SCMP_ACT_ALLOW")});
  s.architectures = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"};
  const auto p = must_compile(s);
  EXPECT_EQ(run(p, nr_of("getpid", SCMP_ARCH_X86), {}, AUDIT_ARCH_I386), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, nr_of("getppid", SCMP_ARCH_X86), {}, AUDIT_ARCH_I386), kEperm);
  EXPECT_EQ(run(p, nr_of("getpid", SCMP_ARCH_X32), {}, AUDIT_ARCH_X86_64), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, nr_of("read", SCMP_ARCH_X32), {}, AUDIT_ARCH_X86_64), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, nr_of("getppid", SCMP_ARCH_X32), {}, AUDIT_ARCH_X86_64), kEperm);
  EXPECT_EQ(run(p, "getpid"), SECCOMP_RET_ALLOW);
  // Still not aarch64.
  EXPECT_EQ(run(p, 172, {}, AUDIT_ARCH_AARCH64), SECCOMP_RET_KILL_THREAD);
}

TEST(SeccompCompile, NativeArchitectureListedTwiceIsFine) {
  auto s = profile("SCMP_ACT_ERRNO", {rule({"read"}, "SCMP_ACT_ALLOW")});
  s.architectures = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X86"};
  const auto p = must_compile(s);
  EXPECT_EQ(run(p, "read"), SECCOMP_RET_ALLOW);
}

TEST(SeccompCompile, EnosysStubForSyscallsNewerThanTheProfile) {
  auto s = profile("SCMP_ACT_ERRNO", {rule({"read", "getpid"}, "SCMP_ACT_ALLOW"),
                                      rule({"openat2"}, "SCMP_ACT_ERRNO", {}, 1)});
  s.architectures = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"};
  const auto p = must_compile(s);
  const int last = nr_of("openat2");  // 437, the largest number the profile names
  EXPECT_EQ(run(p, "openat2"), kEperm);
  EXPECT_EQ(run(p, last - 1), kEperm);  // known to the profile's range: the default
  EXPECT_EQ(run(p, last + 1), SECCOMP_RET_ERRNO | ENOSYS);
  EXPECT_EQ(run(p, 1000), SECCOMP_RET_ERRNO | ENOSYS);
  EXPECT_EQ(run(p, "read"), SECCOMP_RET_ALLOW);
  // i386 and x32 have their own limits.
  const int last32 = nr_of("openat2", SCMP_ARCH_X86);
  EXPECT_EQ(run(p, last32 + 1, {}, AUDIT_ARCH_I386), SECCOMP_RET_ERRNO | ENOSYS);
  EXPECT_EQ(run(p, last32 - 1, {}, AUDIT_ARCH_I386), kEperm);
  const int lastx32 = nr_of("openat2", SCMP_ARCH_X32);
  EXPECT_EQ(run(p, lastx32 + 1, {}, AUDIT_ARCH_X86_64), SECCOMP_RET_ERRNO | ENOSYS);
  EXPECT_EQ(run(p, lastx32 - 1, {}, AUDIT_ARCH_X86_64), kEperm);
  EXPECT_EQ(run(p, nr_of("getpid", SCMP_ARCH_X32), {}, AUDIT_ARCH_X86_64), SECCOMP_RET_ALLOW);
  // Unlisted architectures still get the bad-arch action.
  EXPECT_EQ(run(p, 1000, {}, AUDIT_ARCH_AARCH64), SECCOMP_RET_KILL_THREAD);

  // Without x32 in the profile, x32 calls are not stubbed: the filter kills them.
  s.architectures = {"SCMP_ARCH_X86_64"};
  const auto q = must_compile(s);
  EXPECT_EQ(run(q, 1000), SECCOMP_RET_ERRNO | ENOSYS);
  EXPECT_EQ(run(q, lastx32 + 1, {}, AUDIT_ARCH_X86_64), SECCOMP_RET_KILL_THREAD);
}

TEST(SeccompCompile, EnosysStubOnlyForX32) {
  auto s = profile("SCMP_ACT_ERRNO", {rule({"read", "close"}, "SCMP_ACT_ALLOW")});
  s.architectures = {"SCMP_ARCH_X32"};
  const auto p = must_compile(s);
  // The native arch is always present (and stubbed) as well.
  EXPECT_EQ(run(p, "write"), kEperm);
  EXPECT_EQ(run(p, nr_of("close") + 1), SECCOMP_RET_ERRNO | ENOSYS);
  EXPECT_EQ(run(p, nr_of("read", SCMP_ARCH_X32), {}, AUDIT_ARCH_X86_64), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, nr_of("write", SCMP_ARCH_X32), {}, AUDIT_ARCH_X86_64), kEperm);
  EXPECT_EQ(run(p, nr_of("close", SCMP_ARCH_X32) + 1, {}, AUDIT_ARCH_X86_64),
            SECCOMP_RET_ERRNO | ENOSYS);
}

TEST(SeccompCompile, EnosysStubNeedsANonZeroLargestSyscall) {
  // As in runc: a profile naming only syscall 0 (read on x86_64) gets no stub.
  const auto p = must_compile(profile("SCMP_ACT_ERRNO", {rule({"read"}, "SCMP_ACT_ALLOW")}));
  EXPECT_EQ(run(p, 1000), kEperm);
}
#endif

TEST(SeccompCompile, EnosysStubSkippedWhenPermissiveOrAlreadyEnosys) {
  const auto allow = must_compile(profile("SCMP_ACT_ALLOW", {rule({"read"}, "SCMP_ACT_ERRNO")}));
  EXPECT_EQ(run(allow, 1000), SECCOMP_RET_ALLOW);
  const auto log = must_compile(profile("SCMP_ACT_LOG", {rule({"read"}, "SCMP_ACT_ERRNO")}));
  EXPECT_EQ(run(log, 1000), SECCOMP_RET_LOG);
  const auto trace = must_compile(profile("SCMP_ACT_TRACE", {rule({"read"}, "SCMP_ACT_ALLOW")}));
  EXPECT_EQ(run(trace, 1000), SECCOMP_RET_TRACE | EPERM);

  auto s = profile("SCMP_ACT_ERRNO", {rule({"read"}, "SCMP_ACT_ALLOW")});
  s.default_errno_ret = ENOSYS;
  const auto enosys = must_compile(s);
  cs::CompileOptions no_stub;
  no_stub.enosys_stub = false;
  const auto plain = must_compile(s, no_stub);
  EXPECT_EQ(enosys.filter.size(), plain.filter.size());
  EXPECT_EQ(run(enosys, 1000), SECCOMP_RET_ERRNO | ENOSYS);
}

TEST(SeccompCompile, EnosysStubCanBeDisabled) {
  cs::CompileOptions o;
  o.enosys_stub = false;
  const auto spec = profile("SCMP_ACT_ERRNO", {rule({"read", "write"}, "SCMP_ACT_ALLOW")});
  const auto p = must_compile(spec, o);
  EXPECT_EQ(run(p, 1000), kEperm);
  EXPECT_EQ(run(p, "read"), SECCOMP_RET_ALLOW);
  const auto with = must_compile(spec);
  EXPECT_EQ(run(with, 1000), SECCOMP_RET_ERRNO | ENOSYS);
  EXPECT_GT(with.filter.size(), p.filter.size());
}

TEST(SeccompCompile, FlagsMapToProgramFlags) {
  auto s = profile("SCMP_ACT_ALLOW");
  s.flags = {"SECCOMP_FILTER_FLAG_LOG"};
  EXPECT_EQ(must_compile(s).flags, SECCOMP_FILTER_FLAG_LOG);
  s.flags = {"SECCOMP_FILTER_FLAG_SPEC_ALLOW"};
  EXPECT_EQ(must_compile(s).flags, SECCOMP_FILTER_FLAG_SPEC_ALLOW);
  s.flags = {"SECCOMP_FILTER_FLAG_TSYNC"};
  EXPECT_EQ(must_compile(s).flags, SECCOMP_FILTER_FLAG_TSYNC);
  s.flags = {"SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
             "SECCOMP_FILTER_FLAG_SPEC_ALLOW", "SECCOMP_FILTER_FLAG_LOG"};
  EXPECT_EQ(must_compile(s).flags,
            SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_LOG | SECCOMP_FILTER_FLAG_SPEC_ALLOW);
  // NEW_LISTENER is load()'s business; TSYNC with a listener needs TSYNC_ESRCH.
  s.syscalls = {rule({"getppid"}, "SCMP_ACT_NOTIFY")};
  s.listener_path = "/run/l.sock";
  s.flags = {"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"};
  auto p = must_compile(s);
  EXPECT_EQ(p.flags, SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV);
  EXPECT_TRUE(p.needs_listener);
  s.flags = {"SECCOMP_FILTER_FLAG_TSYNC"};
  EXPECT_EQ(must_compile(s).flags, SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH);
}

TEST(SeccompCompile, NotifyOnAnUnknownSyscallStillAsksForAListener) {
  auto s = profile("SCMP_ACT_ALLOW", {rule({"no_such_syscall"}, "SCMP_ACT_NOTIFY")});
  s.listener_path = "/run/l.sock";
  EXPECT_TRUE(must_compile(s).needs_listener);  // as runc: any NOTIFY rule
}

namespace {

// A profile with many syscalls, arguments and actions (the special rules
// are on syscalls below 100, outside the allowed range).
oci::Seccomp big_profile() {
  std::vector<std::string> names;
  for (int nr = 100; nr < 300; nr += 2) {
    char* n = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (n != nullptr) names.emplace_back(n);
    free(n);  // NOLINT: libseccomp allocates with malloc
  }
  auto s = profile(
      "SCMP_ACT_ERRNO",
      {rule(names, "SCMP_ACT_ALLOW"), rule({"kill"}, "SCMP_ACT_ALLOW", {arg(1, "SCMP_CMP_EQ", 0)}),
       rule({"getpid"}, "SCMP_ACT_TRAP"), rule({"mkdir"}, "SCMP_ACT_ERRNO", {}, 17),
       rule({"ioctl"}, "SCMP_ACT_ALLOW", {arg(1, "SCMP_CMP_MASKED_EQ", 0xff00, 0x5400)})});
  s.architectures = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"};
  return s;
}

void expect_same_decisions(const cs::Program& a, const cs::Program& b) {
  const std::array<std::array<uint64_t, 6>, 4> argsets = {{
      {0, 0, 0, 0, 0, 0},
      {1, 0x5401, 2, 3, 4, 5},
      {~0ULL, 9, 0xffffffffULL, 1ULL << 40, 0, 0},
      {7, 0x1234, 0, 0, 0, 0},
  }};
  std::vector<uint32_t> arches = {cs::native_audit_arch()};
#if defined(__x86_64__)
  arches.push_back(AUDIT_ARCH_I386);
  arches.push_back(AUDIT_ARCH_AARCH64);
#endif
  for (uint32_t arch : arches) {
    for (int nr = -1; nr < 520; ++nr) {
      for (const auto& args : argsets) {
        ASSERT_EQ(run(a, nr, args, arch), run(b, nr, args, arch))
            << "nr " << nr << " arch " << arch;
      }
    }
#if defined(__x86_64__)
    for (int nr = 0x40000000; nr < 0x40000000 + 560; nr += 3) {
      ASSERT_EQ(run(a, nr, argsets[1], arch), run(b, nr, argsets[1], arch)) << "x32 nr " << nr;
    }
#endif
  }
}

}  // namespace

TEST(SeccompCompile, BinaryTreeAndLinearFiltersDecideTheSame) {
  const auto spec = big_profile();
  cs::CompileOptions linear, tree;
  linear.optimize = cs::Optimize::kLinear;
  tree.optimize = cs::Optimize::kBinaryTree;
  const auto l = must_compile(spec, linear);
  const auto t = must_compile(spec, tree);
  const auto a = must_compile(spec);  // > 32 names: auto picks the tree
  EXPECT_NE(l.filter.size(), t.filter.size());
  EXPECT_EQ(a.filter.size(), t.filter.size());
  expect_same_decisions(l, t);
  EXPECT_EQ(run(t, "getpid"), SECCOMP_RET_TRAP);
  EXPECT_EQ(run(t, "mkdir"), SECCOMP_RET_ERRNO | 17);
  EXPECT_EQ(run(t, "ioctl", {1, 0x5401}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(t, "ioctl", {1, 0x8901}), kEperm);

  // Docker's profile, too.
  const auto d = cs::docker_default_profile();
  const auto dl = must_compile(d, linear);
  const auto dt = must_compile(d, tree);
  expect_same_decisions(dl, dt);
}

TEST(SeccompCompile, SmallProfilesStayLinearOnAuto) {
  const auto spec = profile("SCMP_ACT_ERRNO", {rule({"read", "write"}, "SCMP_ACT_ALLOW")});
  cs::CompileOptions linear;
  linear.optimize = cs::Optimize::kLinear;
  EXPECT_EQ(must_compile(spec).filter.size(), must_compile(spec, linear).filter.size());
  // Forcing the tree with no rule at all is ignored (libseccomp <= 2.5.4 bug).
  cs::CompileOptions tree;
  tree.optimize = cs::Optimize::kBinaryTree;
  const auto empty = must_compile(profile("SCMP_ACT_ERRNO"), tree);
  EXPECT_EQ(run(empty, "read"), kEperm);
}

TEST(SeccompCompile, OneArgumentOverloadUsesDefaultOptions) {
  const auto spec = big_profile();
  auto a = cs::compile(spec);
  ASSERT_TRUE(a.ok());
  const auto b = must_compile(spec);
  ASSERT_EQ(a->filter.size(), b.filter.size());
  for (std::size_t i = 0; i < b.filter.size(); ++i) {
    EXPECT_EQ(a->filter[i].code, b.filter[i].code);
    EXPECT_EQ(a->filter[i].k, b.filter[i].k);
  }
}
