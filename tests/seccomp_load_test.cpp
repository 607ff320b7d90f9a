// load(): real filters in forked children (no root needed: no_new_privs).
#include <fcntl.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

#include <gtest/gtest.h>

#include "comet/seccomp/seccomp.hpp"

#include "support/seccomp_spec.hpp"

namespace cs = comet::seccomp;
namespace oci = comet::oci;

namespace {

using comet::test::profile;
using comet::test::rule;

cs::Program compile_or_die(const oci::Seccomp& s) {
  auto r = cs::compile(s);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().what());
  return r.ok() ? std::move(r).value() : cs::Program{};
}

struct Outcome {
  bool exited = false;
  int code = -1;
  int signal = 0;
};

// Fork; the child runs body (which must not return normally: it _exits).
Outcome in_child(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid < 0) return {};
  if (pid == 0) _exit(body());
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  Outcome o;
  if (WIFEXITED(status)) {
    o.exited = true;
    o.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    o.signal = WTERMSIG(status);
  }
  return o;
}

constexpr int kNnpFailed = 200;
constexpr int kLoadFailedBase = 100;  // + errno (small ones)

// no_new_privs, then load; on failure exit kLoadFailedBase + errno.
int nnp_and_load(const cs::Program& p, int* listener = nullptr) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(kNnpFailed);
  int fd = -1;
  const int rc = cs::load(p, listener != nullptr ? listener : &fd);
  if (rc != 0) _exit(kLoadFailedBase + (rc < 100 ? rc : 99));
  return 0;
}

// errno of a raw syscall, 0 when it succeeded.
int errno_of(long rc) {
  return rc < 0 ? errno : 0;
}

}  // namespace

TEST(SeccompLoad, DeniedSyscallFailsWithTheRuleErrno) {
  oci::Seccomp s = profile("SCMP_ACT_ALLOW", {rule({"getppid"}, "SCMP_ACT_ERRNO", {}, 77)});
  const cs::Program p = compile_or_die(s);
  const Outcome o = in_child([&] {
    nnp_and_load(p);
    return errno_of(syscall(SYS_getppid));
  });
  ASSERT_TRUE(o.exited) << "signal " << o.signal;
  EXPECT_EQ(o.code, 77);
}

TEST(SeccompLoad, DefaultErrnoIsEperm) {
  oci::Seccomp s;
  s.default_action = "SCMP_ACT_ERRNO";
  // What the child (and a sanitizer runtime) needs to finish; getppid is not listed.
  s.syscalls = {rule({"exit_group", "exit", "getpid", "write", "mmap", "munmap", "mprotect",
                      "madvise", "sigaltstack", "rt_sigaction", "rt_sigprocmask", "gettid",
                      "getrlimit", "prlimit64", "futex", "sched_yield", "read", "openat", "close"},
                     "SCMP_ACT_ALLOW")};
  cs::CompileOptions o;
  o.enosys_stub = false;
  auto r = cs::compile(s, o);
  ASSERT_TRUE(r.ok()) << r.error().what();
  const cs::Program p = std::move(r).value();
  const Outcome out = in_child([&] {
    nnp_and_load(p);
    if (syscall(SYS_getpid) <= 0) return 2;
    return errno_of(syscall(SYS_getppid)) == EPERM ? 42 : 3;
  });
  ASSERT_TRUE(out.exited) << "signal " << out.signal;
  EXPECT_EQ(out.code, 42);
}

TEST(SeccompLoad, DockerDefaultProfileInTheKernel) {
  const cs::Program p = compile_or_die(cs::docker_default_profile());
  const Outcome o = in_child([&] {
    nnp_and_load(p);
    if (syscall(SYS_getpid) <= 0) return 1;
    // READ_IMPLIES_EXEC is not one of the allowed personas: EPERM (without
    // the filter this call succeeds).
    if (errno_of(syscall(SYS_personality, 0x0400000UL)) != EPERM) return 2;
    if (syscall(SYS_personality, 0xffffffffUL) < 0) return 3;  // query: allowed
#ifdef SYS_clone3
    // clone3 gets ENOSYS (without the filter: EINVAL for a NULL/0 argument).
    if (errno_of(syscall(SYS_clone3, nullptr, 0)) != ENOSYS) return 4;
#endif
    if (errno_of(syscall(SYS_kexec_load, 0, 0, nullptr, 0)) != EPERM) return 5;
    if (errno_of(syscall(SYS_mount, "none", "/", "tmpfs", 0, nullptr)) != EPERM) return 6;
    // A number far beyond the profile: ENOSYS from the stub.
    if (errno_of(syscall(1000)) != ENOSYS) return 7;
    return 0;
  });
  ASSERT_TRUE(o.exited) << "signal " << o.signal;
  EXPECT_EQ(o.code, 0);
}

TEST(SeccompLoad, KillProcessAndTrapDeliverSigsys) {
  oci::Seccomp s = profile("SCMP_ACT_ALLOW", {rule({"getppid"}, "SCMP_ACT_KILL_PROCESS"),
                                              rule({"getpgrp"}, "SCMP_ACT_TRAP")});
  const cs::Program p = compile_or_die(s);
  Outcome o = in_child([&] {
    nnp_and_load(p);
    syscall(SYS_getppid);
    return 0;
  });
  EXPECT_FALSE(o.exited);
  EXPECT_EQ(o.signal, SIGSYS);
  o = in_child([&] {
    nnp_and_load(p);
    syscall(SYS_getpgrp);
    return 0;
  });
  EXPECT_FALSE(o.exited);
  EXPECT_EQ(o.signal, SIGSYS);
}

TEST(SeccompLoad, NotifyReturnsAListenerFd) {
  oci::Seccomp s;
  s.default_action = "SCMP_ACT_ALLOW";
  s.listener_path = "/run/agent.sock";
  s.flags = {"SECCOMP_FILTER_FLAG_TSYNC"};  // with a listener this needs TSYNC_ESRCH
  s.syscalls = {rule({"getppid"}, "SCMP_ACT_NOTIFY")};
  const cs::Program p = compile_or_die(s);
  ASSERT_TRUE(p.needs_listener);
  const Outcome o = in_child([&] {
    int fd = -1;
    nnp_and_load(p, &fd);
    if (fd < 0) return 1;
    if (fcntl(fd, F_GETFD) < 0) return 2;
    return 0;
  });
  ASSERT_TRUE(o.exited) << "signal " << o.signal;
  EXPECT_EQ(o.code, 0);
}

TEST(SeccompLoad, FlagsAreAccepted) {
  oci::Seccomp s = profile("SCMP_ACT_ALLOW", {rule({"getppid"}, "SCMP_ACT_ERRNO", {}, 5)});
  for (const auto& flag : cs::supported_flags()) {
    if (flag == "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV") continue;  // needs NOTIFY
    s.flags = {flag};
    const cs::Program p = compile_or_die(s);
    const Outcome o = in_child([&] {
      nnp_and_load(p);
      return errno_of(syscall(SYS_getppid));
    });
    ASSERT_TRUE(o.exited) << flag;
    EXPECT_EQ(o.code, 5) << flag;
  }
}

TEST(SeccompLoad, WithoutNoNewPrivsAndCapSysAdminTheKernelRefuses) {
  oci::Seccomp s = profile("SCMP_ACT_ALLOW", {rule({"getppid"}, "SCMP_ACT_ERRNO")});
  const cs::Program p = compile_or_die(s);
  const Outcome o = in_child([&] {
    // Drop privileges if we run as root (this clears the capability sets).
    if (geteuid() == 0 && setresgid(65534, 65534, 65534) == 0 &&
        setresuid(65534, 65534, 65534) != 0) {
      return 1;
    }
    int fd = -1;
    return cs::load(p, &fd);
  });
  ASSERT_TRUE(o.exited);
  EXPECT_EQ(o.code, EACCES);
}

TEST(SeccompLoad, InvalidProgramsAreRefusedBeforeTheSyscall) {
  int fd = 123;
  cs::Program empty;
  EXPECT_EQ(cs::load(empty, &fd), EINVAL);
  EXPECT_EQ(fd, -1);
  cs::Program huge;
  huge.filter.resize(BPF_MAXINSNS + 1, sock_filter{BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW});
  EXPECT_EQ(cs::load(huge, &fd), EINVAL);
  cs::Program notify;
  notify.filter = {sock_filter{BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW}};
  notify.needs_listener = true;
  EXPECT_EQ(cs::load(notify, nullptr), EINVAL);
}

TEST(SeccompLoad, KernelRejectsAMalformedProgram) {
  cs::Program bad;
  bad.filter = {sock_filter{BPF_LD | BPF_B | BPF_ABS, 0, 0, 0},
                sock_filter{BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW}};
  const Outcome o = in_child([&] {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return kNnpFailed;
    return cs::load(bad, nullptr);
  });
  ASSERT_TRUE(o.exited);
  EXPECT_EQ(o.code, EINVAL);
}
