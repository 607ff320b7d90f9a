// compile() error paths (exact messages) and the feature lists.
#include <algorithm>

#include <gtest/gtest.h>

#include "comet/seccomp/seccomp.hpp"

#include "support/seccomp_spec.hpp"

namespace cs = comet::seccomp;
namespace oci = comet::oci;

namespace {

using comet::test::arg;
using comet::test::rule;

oci::Seccomp valid() {
  return comet::test::profile(
      "SCMP_ACT_ERRNO", {rule({"read"}, "SCMP_ACT_ALLOW"), rule({"write"}, "SCMP_ACT_ALLOW"),
                         rule({"close"}, "SCMP_ACT_ALLOW"), rule({"getpid"}, "SCMP_ACT_ALLOW")});
}

std::string error_of(const oci::Seccomp& s) {
  auto r = cs::compile(s);
  if (r.ok()) return "<compiled>";
  return r.error().what();
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST(SeccompErrors, ValidBaseCompiles) {
  EXPECT_EQ(error_of(valid()), "<compiled>");
}

TEST(SeccompErrors, UnknownDefaultAction) {
  auto s = valid();
  s.default_action = "SCMP_ACT_FOO";
  EXPECT_EQ(error_of(s), "linux.seccomp.defaultAction: unknown action \"SCMP_ACT_FOO\"");
  s.default_action = "";
  EXPECT_EQ(error_of(s), "linux.seccomp.defaultAction: unknown action \"\"");
  s.default_action = "scmp_act_allow";  // names are case-sensitive, as in runc
  EXPECT_EQ(error_of(s), "linux.seccomp.defaultAction: unknown action \"scmp_act_allow\"");
}

TEST(SeccompErrors, UnknownRuleAction) {
  auto s = valid();
  s.syscalls[3].action = "SCMP_ACT_FOO";
  EXPECT_EQ(error_of(s), "linux.seccomp.syscalls[3].action: unknown action \"SCMP_ACT_FOO\"");
}

TEST(SeccompErrors, UnknownActionOnAnUnknownSyscallIsStillAnError) {
  auto s = valid();
  s.syscalls[1] = rule({"no_such_syscall"}, "SCMP_ACT_BOGUS");
  EXPECT_EQ(error_of(s), "linux.seccomp.syscalls[1].action: unknown action \"SCMP_ACT_BOGUS\"");
}

TEST(SeccompErrors, UnknownOperator) {
  auto s = valid();
  s.syscalls[2].args = {arg(0, "SCMP_CMP_EQ"), arg(0, "SCMP_CMP_FOO")};
  EXPECT_EQ(error_of(s), "linux.seccomp.syscalls[2].args[1].op: unknown operator \"SCMP_CMP_FOO\"");
}

TEST(SeccompErrors, ArgumentIndexOutOfRange) {
  auto s = valid();
  s.syscalls[0].args = {arg(6, "SCMP_CMP_EQ")};
  EXPECT_EQ(error_of(s), "linux.seccomp.syscalls[0].args[0].index: 6 out of range (0..5)");
}

TEST(SeccompErrors, UnknownArchitecture) {
  auto s = valid();
  s.architectures = {"SCMP_ARCH_X86_64", "SCMP_ARCH_VAX"};
  EXPECT_EQ(error_of(s), "linux.seccomp.architectures[1]: unknown architecture \"SCMP_ARCH_VAX\"");
  s.architectures = {"x86_64"};  // libseccomp's own spelling is not an OCI name
  EXPECT_EQ(error_of(s), "linux.seccomp.architectures[0]: unknown architecture \"x86_64\"");
}

TEST(SeccompErrors, ArchitectureTooNewForLibseccomp) {
  if (contains(cs::known_archs(), "SCMP_ARCH_LOONGARCH64")) GTEST_SKIP() << "libseccomp >= 2.6";
  auto s = valid();
  s.architectures = {"SCMP_ARCH_LOONGARCH64"};
  EXPECT_EQ(error_of(s),
            "linux.seccomp.architectures[0]: architecture \"SCMP_ARCH_LOONGARCH64\" is not "
            "supported by this libseccomp");
}

#if defined(__x86_64__)
TEST(SeccompErrors, ArchitectureOfTheOtherEndianness) {
  auto s = valid();
  s.architectures = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_S390X"};
  EXPECT_EQ(error_of(s),
            "linux.seccomp.architectures[2]: adding architecture \"SCMP_ARCH_S390X\": EDOM "
            "(Numerical argument out of domain)");
}
#endif

TEST(SeccompErrors, UnknownFlag) {
  auto s = valid();
  s.flags = {"SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_FOO"};
  EXPECT_EQ(error_of(s), "linux.seccomp.flags[1]: unknown flag \"SECCOMP_FILTER_FLAG_FOO\"");
  // NEW_LISTENER is implied by SCMP_ACT_NOTIFY, not a profile flag.
  s.flags = {"SECCOMP_FILTER_FLAG_NEW_LISTENER"};
  EXPECT_EQ(error_of(s),
            "linux.seccomp.flags[0]: unknown flag \"SECCOMP_FILTER_FLAG_NEW_LISTENER\"");
}

TEST(SeccompErrors, WaitKillableRecvWithoutNotify) {
  auto s = valid();
  s.flags = {"SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"};
  EXPECT_EQ(error_of(s),
            "linux.seccomp.flags[1]: SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV requires a "
            "SCMP_ACT_NOTIFY rule");
}

TEST(SeccompErrors, NotifyWithoutListenerPath) {
  auto s = valid();
  s.syscalls[2].action = "SCMP_ACT_NOTIFY";
  EXPECT_EQ(
      error_of(s),
      "linux.seccomp.syscalls[2].action: SCMP_ACT_NOTIFY requires linux.seccomp.listenerPath");
  s.listener_path = "/run/agent.sock";
  EXPECT_EQ(error_of(s), "<compiled>");
}

TEST(SeccompErrors, NotifyAsDefaultAction) {
  auto s = valid();
  s.default_action = "SCMP_ACT_NOTIFY";
  s.listener_path = "/run/agent.sock";
  EXPECT_EQ(error_of(s),
            "linux.seccomp.defaultAction: SCMP_ACT_NOTIFY cannot be the default action");
}

TEST(SeccompErrors, NotifyOnWrite) {
  auto s = valid();
  s.listener_path = "/run/agent.sock";
  s.syscalls[1] = rule({"pwrite64", "write"}, "SCMP_ACT_NOTIFY");
  EXPECT_EQ(error_of(s),
            "linux.seccomp.syscalls[1].names[1]: SCMP_ACT_NOTIFY cannot be used for the write "
            "syscall");
}

TEST(SeccompErrors, EmptySyscallName) {
  auto s = valid();
  s.syscalls[3].names = {"getpid", ""};
  EXPECT_EQ(error_of(s), "linux.seccomp.syscalls[3].names[1]: empty syscall name");
}

TEST(SeccompErrors, ErrnoRetOutOfRange) {
  auto s = valid();
  s.syscalls[0].action = "SCMP_ACT_ERRNO";
  s.syscalls[0].errno_ret = 70000;
  EXPECT_EQ(error_of(s), "linux.seccomp.syscalls[0].errnoRet: 70000 out of range (0..4094)");
  s.syscalls[0].errno_ret = 4095;
  EXPECT_EQ(error_of(s), "linux.seccomp.syscalls[0].errnoRet: 4095 out of range (0..4094)");
  s.syscalls[0].errno_ret = 4094;
  EXPECT_EQ(error_of(s), "<compiled>");
  // A trace value is 16 bits.
  s.syscalls[0].action = "SCMP_ACT_TRACE";
  s.syscalls[0].errno_ret = 70000;
  EXPECT_EQ(error_of(s), "linux.seccomp.syscalls[0].errnoRet: 70000 out of range (0..65535)");
  s.syscalls[0].errno_ret = 65535;
  EXPECT_EQ(error_of(s), "<compiled>");
  // errnoRet is ignored by actions that carry no data (as in runc).
  s.syscalls[0].action = "SCMP_ACT_ALLOW";
  s.syscalls[0].errno_ret = 70000;
  EXPECT_EQ(error_of(s), "<compiled>");
}

TEST(SeccompErrors, DefaultErrnoRetOutOfRange) {
  auto s = valid();
  s.default_errno_ret = 65536;
  EXPECT_EQ(error_of(s), "linux.seccomp.defaultErrnoRet: 65536 out of range (0..4094)");
}

TEST(SeccompErrors, FirstProblemWins) {
  auto s = valid();
  s.default_action = "SCMP_ACT_NOPE";
  s.flags = {"NOPE"};
  s.syscalls[0].action = "NOPE";
  EXPECT_EQ(error_of(s), "linux.seccomp.defaultAction: unknown action \"SCMP_ACT_NOPE\"");
  s.default_action = "SCMP_ACT_ALLOW";
  EXPECT_EQ(error_of(s), "linux.seccomp.flags[0]: unknown flag \"NOPE\"");
}

TEST(SeccompFeatures, KnownActions) {
  EXPECT_EQ(
      cs::known_actions(),
      (std::vector<std::string>{"SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD",
                                "SCMP_ACT_TRAP", "SCMP_ACT_ERRNO", "SCMP_ACT_TRACE",
                                "SCMP_ACT_ALLOW", "SCMP_ACT_LOG", "SCMP_ACT_NOTIFY"}));
}

TEST(SeccompFeatures, KnownOperators) {
  EXPECT_EQ(cs::known_operators(),
            (std::vector<std::string>{"SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ",
                                      "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ"}));
}

TEST(SeccompFeatures, KnownArchsAllCompile) {
  const auto archs = cs::known_archs();
  for (const char* a :
       {"SCMP_ARCH_X86", "SCMP_ARCH_X86_64", "SCMP_ARCH_X32", "SCMP_ARCH_ARM", "SCMP_ARCH_AARCH64",
        "SCMP_ARCH_MIPS", "SCMP_ARCH_MIPS64", "SCMP_ARCH_MIPS64N32", "SCMP_ARCH_MIPSEL",
        "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC", "SCMP_ARCH_PPC64",
        "SCMP_ARCH_PPC64LE", "SCMP_ARCH_S390", "SCMP_ARCH_S390X", "SCMP_ARCH_PARISC",
        "SCMP_ARCH_PARISC64", "SCMP_ARCH_RISCV64"}) {
    EXPECT_TRUE(contains(archs, a)) << a;
  }
  // Each one alone is accepted, or refused only for its endianness.
  for (const auto& a : archs) {
    auto s = valid();
    s.architectures = {a};
    const std::string e = error_of(s);
    EXPECT_TRUE(e == "<compiled>" || e.find("EDOM") != std::string::npos) << a << ": " << e;
  }
}

TEST(SeccompFeatures, KnownAndSupportedFlags) {
  const auto known = cs::known_flags();
  EXPECT_EQ(known, (std::vector<std::string>{"SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
                                             "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
                                             "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"}));
  const auto supported = cs::supported_flags();
  for (const auto& f : supported) EXPECT_TRUE(contains(known, f)) << f;
  // Every kernel with seccomp(2) (3.17) has TSYNC. (Unless seccomp(2) itself
  // is filtered for this test process, in which case nothing is supported.)
  if (!supported.empty()) {
    EXPECT_TRUE(contains(supported, "SECCOMP_FILTER_FLAG_TSYNC"));
  }
}
