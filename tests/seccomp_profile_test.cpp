// docker_default_profile(), and config.json seccomp blocks from test data.
#include <linux/audit.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/socket.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "comet/seccomp/bpf_eval.hpp"
#include "comet/seccomp/seccomp.hpp"

#include "support/slurp.hpp"

namespace cs = comet::seccomp;
namespace oci = comet::oci;

namespace {

constexpr uint32_t kEperm = SECCOMP_RET_ERRNO | EPERM;
constexpr uint32_t kEnosys = SECCOMP_RET_ERRNO | ENOSYS;

uint32_t run(const cs::Program& p, const char* name, std::array<uint64_t, 6> args = {},
             uint32_t token = SCMP_ARCH_NATIVE) {
  const int nr = seccomp_syscall_resolve_name_arch(token, name);
  EXPECT_NE(nr, __NR_SCMP_ERROR) << name;
  uint32_t audit = cs::native_audit_arch();
  if (token != SCMP_ARCH_NATIVE && token != SCMP_ARCH_X32) audit = token;
  return cs::evaluate(p.filter, cs::make_seccomp_data(nr, args, audit));
}

class DockerDefault : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto r = cs::compile(cs::docker_default_profile());
    ASSERT_TRUE(r.ok()) << r.error().what();
    prog_ = new cs::Program(std::move(r).value());
  }
  static void TearDownTestSuite() {
    delete prog_;
    prog_ = nullptr;
  }
  static const cs::Program& p() { return *prog_; }
  static cs::Program* prog_;
};
cs::Program* DockerDefault::prog_ = nullptr;

}  // namespace

TEST_F(DockerDefault, ProfileShape) {
  const oci::Seccomp s = cs::docker_default_profile();
  EXPECT_EQ(s.default_action, "SCMP_ACT_ERRNO");
  ASSERT_TRUE(s.default_errno_ret.has_value());
  EXPECT_EQ(*s.default_errno_ret, static_cast<uint32_t>(EPERM));
#if defined(__x86_64__)
  EXPECT_EQ(s.architectures,
            (std::vector<std::string>{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"}));
#endif
  std::size_t names = 0;
  for (const auto& sc : s.syscalls) names += sc.names.size();
  EXPECT_GT(names, 300U);
  EXPECT_EQ(cs::check_filter(p().filter), "");
  EXPECT_EQ(p().flags, 0U);
  EXPECT_FALSE(p().needs_listener);
}

TEST_F(DockerDefault, AllowsEverydaySyscalls) {
  for (const char* n : {"read", "write", "getpid", "openat", "close", "mmap", "execve",
                        "exit_group", "futex", "rt_sigaction", "newfstatat", "statx",
                        "io_uring_setup", "chroot", "ptrace", "seccomp", "prctl"}) {
    EXPECT_EQ(run(p(), n), SECCOMP_RET_ALLOW) << n;
  }
}

TEST_F(DockerDefault, DeniesPrivilegedSyscallsWithEperm) {
  for (const char* n :
       {"kexec_load",  "mount",         "umount2",           "unshare", "setns",
        "reboot",      "init_module",   "delete_module",     "bpf",     "perf_event_open",
        "swapon",      "pivot_root",    "open_by_handle_at", "keyctl",  "add_key",
        "userfaultfd", "clock_settime", "settimeofday",      "iopl",    "kcmp",
        "acct"}) {
    EXPECT_EQ(run(p(), n), kEperm) << n;
  }
}

TEST_F(DockerDefault, PersonalityArguments) {
  for (uint64_t persona : {0x0ULL, 0x8ULL, 0x20000ULL, 0x20008ULL, 0xffffffffULL}) {
    EXPECT_EQ(run(p(), "personality", {persona}), SECCOMP_RET_ALLOW) << persona;
  }
  EXPECT_EQ(run(p(), "personality", {0x0400000}), kEperm);  // READ_IMPLIES_EXEC
  EXPECT_EQ(run(p(), "personality", {0x1}), kEperm);
}

TEST_F(DockerDefault, CloneWithoutNamespaceFlags) {
  EXPECT_EQ(run(p(), "clone", {SIGCHLD}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p(), "clone",
                {CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
                 CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID}),
            SECCOMP_RET_ALLOW);
  for (uint64_t ns : {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
                      CLONE_NEWNET, CLONE_NEWCGROUP}) {
    EXPECT_EQ(run(p(), "clone", {ns | SIGCHLD}), kEperm) << std::hex << ns;
  }
  // clone3 hides its flags behind a pointer: ENOSYS so libc falls back to clone.
  EXPECT_EQ(run(p(), "clone3"), kEnosys);
}

TEST_F(DockerDefault, SocketFamilies) {
  EXPECT_EQ(run(p(), "socket", {AF_INET, SOCK_STREAM}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p(), "socket", {AF_UNIX, SOCK_DGRAM}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p(), "socket", {AF_NETLINK, SOCK_RAW}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p(), "socket", {AF_VSOCK, SOCK_STREAM}), kEperm);
}

TEST_F(DockerDefault, SyscallsNewerThanTheProfileGetEnosys) {
  EXPECT_EQ(cs::evaluate(p().filter, cs::make_seccomp_data(1000)), kEnosys);
  EXPECT_EQ(cs::evaluate(p().filter, cs::make_seccomp_data(5000)), kEnosys);
}

#if defined(__x86_64__)
TEST_F(DockerDefault, CompatArchitectures) {
  EXPECT_EQ(run(p(), "getpid", {}, SCMP_ARCH_X86), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p(), "socketcall", {}, SCMP_ARCH_X86), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p(), "mount", {}, SCMP_ARCH_X86), kEperm);
  EXPECT_EQ(run(p(), "arch_prctl"), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p(), "getpid", {}, SCMP_ARCH_X32), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p(), "kexec_load", {}, SCMP_ARCH_X32), kEperm);
  EXPECT_EQ(cs::evaluate(p().filter, cs::make_seccomp_data(20, {}, AUDIT_ARCH_AARCH64)),
            SECCOMP_RET_KILL_THREAD);
}
#endif

namespace {

using comet::test::slurp;

}  // namespace

TEST(SeccompConfigJson, ParsedBlockCompilesAndDecides) {
  auto spec = oci::parse_spec(slurp(COMET_TEST_DATA "/seccomp/config.json"));
  ASSERT_TRUE(spec.ok()) << spec.error().what();
  ASSERT_TRUE(spec->linux_ && spec->linux_->seccomp);
  auto r = cs::compile(*spec->linux_->seccomp);
  ASSERT_TRUE(r.ok()) << r.error().what();
  const cs::Program& p = *r;
  EXPECT_EQ(p.flags, SECCOMP_FILTER_FLAG_SPEC_ALLOW);
  EXPECT_EQ(run(p, "read"), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "getpid"), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "getppid"), kEperm);
  EXPECT_EQ(run(p, "personality", {8}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "personality", {9}), kEperm);
  EXPECT_EQ(run(p, "clone", {SIGCHLD}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(p, "clone", {CLONE_NEWUSER}), kEperm);
  EXPECT_EQ(run(p, "mkdirat"), SECCOMP_RET_ERRNO | 30);
  EXPECT_EQ(run(p, "kexec_load"), SECCOMP_RET_KILL_PROCESS);
}

TEST(SeccompConfigJson, BadActionNamesTheField) {
  auto spec = oci::parse_spec(slurp(COMET_TEST_DATA "/seccomp/bad_action.json"));
  ASSERT_TRUE(spec.ok()) << spec.error().what();
  auto r = cs::compile(*spec->linux_->seccomp);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().what(), "linux.seccomp.syscalls[3].action: unknown action \"SCMP_ACT_FOO\"");
}
