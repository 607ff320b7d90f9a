// lockdown_profile(): the stacked filter of confined containers, checked by
// evaluating the compiled BPF (bpf_eval) on crafted seccomp_data.
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>

#include "comet/seccomp/bpf_eval.hpp"
#include "comet/seccomp/seccomp.hpp"

namespace cs = comet::seccomp;

namespace {

constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kEperm = SECCOMP_RET_ERRNO | EPERM;
constexpr uint32_t kEnosys = SECCOMP_RET_ERRNO | ENOSYS;

cs::Program compile(cs::LockdownOptions o) {
  cs::CompileOptions co;
  co.enosys_stub = false;
  auto r = cs::compile(cs::lockdown_profile(o), co);
  EXPECT_TRUE(r.ok()) << r.error().what();
  return r.ok() ? std::move(r).value() : cs::Program{};
}

uint32_t run(const cs::Program& p, const char* name, std::array<uint64_t, 6> args = {},
             uint32_t audit = cs::native_audit_arch()) {
  const int nr = seccomp_syscall_resolve_name(name);
  EXPECT_NE(nr, __NR_SCMP_ERROR) << name;
  return cs::evaluate(p.filter, cs::make_seccomp_data(nr, args, audit));
}

}  // namespace

TEST(Lockdown, NamespaceCallsAreRefused) {
  auto p = compile({});
  EXPECT_EQ(cs::check_filter(p.filter), "");
  for (const char* n : {"mount",
                        "umount2",
                        "pivot_root",
                        "open_tree",
                        "move_mount",
                        "fsopen",
                        "fsconfig",
                        "fsmount",
                        "fspick",
                        "mount_setattr",
                        "unshare",
                        "setns",
                        "ptrace",
                        "process_vm_readv",
                        "process_vm_writev",
                        "bpf",
                        "perf_event_open",
                        "userfaultfd",
                        "keyctl",
                        "add_key",
                        "request_key",
                        "kexec_load",
                        "kexec_file_load",
                        "init_module",
                        "finit_module",
                        "delete_module",
                        "open_by_handle_at",
                        "clock_settime",
                        "settimeofday",
                        "adjtimex",
                        "clock_adjtime",
                        "io_uring_setup",
                        "io_uring_enter",
                        "io_uring_register"}) {
    EXPECT_EQ(run(p, n), kEperm) << n;
  }
  for (const char* n : {"read", "write", "openat", "clock_gettime", "getpid", "execve", "execveat",
                        "seccomp", "landlock_create_ruleset"}) {
    EXPECT_EQ(run(p, n), kAllow) << n;
  }
}

TEST(Lockdown, CloneFlags) {
  auto p = compile({});
  EXPECT_EQ(run(p, "clone3"), kEnosys);
  EXPECT_EQ(run(p, "clone", {SIGCHLD}), kAllow) << "a plain fork is allowed without the exec lock";
  for (uint64_t f : {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
                     CLONE_NEWNET, CLONE_NEWCGROUP}) {
    EXPECT_EQ(run(p, "clone", {f | SIGCHLD}), kEperm) << std::hex << f;
  }
}

TEST(Lockdown, ExecLock) {
  cs::LockdownOptions o;
  o.exec_lock = true;
  auto p = compile(o);
  EXPECT_EQ(run(p, "fork"), kEperm);
  EXPECT_EQ(run(p, "vfork"), kEperm);
  EXPECT_EQ(run(p, "memfd_create"), kEperm);
  EXPECT_EQ(run(p, "clone", {SIGCHLD}), kEperm);
  EXPECT_EQ(run(p, "clone", {CLONE_VM | CLONE_VFORK | SIGCHLD}), kEperm);
  // glibc's pthread_create
  uint64_t thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                    CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
  EXPECT_EQ(run(p, "clone", {thread}), kAllow);
  EXPECT_EQ(run(p, "clone3"), kEnosys);
}

TEST(Lockdown, SocketsAreComparedAs32BitValues) {
  auto p = compile({});
  EXPECT_EQ(run(p, "socket", {AF_PACKET, SOCK_RAW}), kEperm);
  EXPECT_EQ(run(p, "socket", {AF_PACKET, SOCK_DGRAM}), kEperm);
  // high bits the kernel ignores (it reads an int) do not hide the family
  EXPECT_EQ(run(p, "socket", {(1ULL << 32) | AF_PACKET, SOCK_DGRAM}), kEperm);
  EXPECT_EQ(run(p, "socket", {AF_INET, SOCK_RAW}), kEperm);
  EXPECT_EQ(run(p, "socket", {AF_INET6, SOCK_RAW | SOCK_CLOEXEC}), kEperm);
  // SOCK_PACKET: a packet socket whatever the family
  EXPECT_EQ(run(p, "socket", {AF_INET, SOCK_PACKET}), kEperm);
  // netlink's SOCK_RAW is its datagram type (glibc's getaddrinfo, getifaddrs)
  EXPECT_EQ(run(p, "socket", {AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0}), kAllow);
  EXPECT_EQ(run(p, "socket", {(1ULL << 32) | AF_NETLINK, SOCK_RAW, 0}), kEperm);
  // other netlink protocols stay refused as raw sockets, whatever the policy
  EXPECT_EQ(run(p, "socket", {AF_NETLINK, SOCK_RAW, 12 /* NETLINK_NETFILTER */}), kEperm);
  EXPECT_EQ(run(p, "socket", {AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */}), kEperm);
  EXPECT_EQ(run(p, "socket", {AF_INET, SOCK_STREAM}), kAllow);
  EXPECT_EQ(run(p, "socket", {AF_UNIX, SOCK_STREAM}), kAllow);
}

TEST(Lockdown, NetworkNone) {
  cs::LockdownOptions o;
  o.network_none = true;
  auto p = compile(o);
  EXPECT_EQ(run(p, "socket", {AF_INET, SOCK_STREAM}), kEperm);
  EXPECT_EQ(run(p, "socket", {AF_INET6, SOCK_DGRAM}), kEperm);
  EXPECT_EQ(run(p, "socket", {AF_NETLINK, SOCK_DGRAM}), kEperm);
  EXPECT_EQ(run(p, "socketpair", {AF_INET, SOCK_STREAM}), kEperm);
  EXPECT_EQ(run(p, "socket", {AF_UNIX, SOCK_STREAM}), kAllow);
  EXPECT_EQ(run(p, "socketpair", {AF_UNIX, SOCK_STREAM}), kAllow);
  // high bits over AF_UNIX: refused (stricter than the kernel, never looser)
  EXPECT_EQ(run(p, "socket", {(1ULL << 32) | AF_UNIX, SOCK_STREAM}), kEperm);
}

TEST(Lockdown, SocketFamiliesOnlyTheOnesNetfilterSees) {
  cs::LockdownOptions o;
  o.socket_families = true;
  auto p = compile(o);
  EXPECT_EQ(cs::check_filter(p.filter), "");
  for (uint64_t f : {AF_UNIX, AF_INET, AF_INET6}) {
    EXPECT_EQ(run(p, "socket", {f, SOCK_STREAM}), kAllow) << f;
    EXPECT_EQ(run(p, "socketpair", {f, SOCK_STREAM}), kAllow) << f;
  }
  EXPECT_EQ(run(p, "socket", {AF_NETLINK, SOCK_DGRAM, 0 /* NETLINK_ROUTE */}), kAllow);
  EXPECT_EQ(run(p, "socket", {AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0}), kAllow);  // glibc's
  EXPECT_EQ(run(p, "socket", {AF_NETLINK, SOCK_DGRAM, 9 /* NETLINK_AUDIT */}), kEperm);
  EXPECT_EQ(run(p, "socket", {AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */}), kEperm);
  EXPECT_EQ(run(p, "socket", {AF_NETLINK, SOCK_DGRAM, 12 /* NETLINK_NETFILTER */}), kEperm);
  for (uint64_t f = 0; f < 64; f++) {
    if (f == AF_UNIX || f == AF_INET || f == AF_INET6 || f == AF_NETLINK) continue;
    EXPECT_EQ(run(p, "socket", {f, SOCK_STREAM}), kEperm) << f;
    EXPECT_EQ(run(p, "socketpair", {f, SOCK_STREAM}), kEperm) << f;
  }
  // AF_VSOCK behind high bits the kernel ignores: still refused
  EXPECT_EQ(run(p, "socket", {(1ULL << 32) | AF_VSOCK, SOCK_STREAM}), kEperm);
  EXPECT_EQ(run(p, "socket", {0xffffffffULL, SOCK_STREAM}), kEperm);
  // off by default (a sandbox profile with an open network)
  auto q = compile({});
  EXPECT_EQ(run(q, "socket", {AF_VSOCK, SOCK_STREAM}), kAllow);
}

TEST(Lockdown, NetworkNoneWithTheFamilyListAsPacksGetIt) {
  // network none sets both (reporter.cpp lockdown_options): the two sets of
  // rules on socket's family must not shadow each other in libseccomp's tree
  for (bool notify : {false, true}) {
    cs::LockdownOptions o;
    o.network_none = true;
    o.socket_families = true;
    o.exec_lock = true;
    o.notify = notify;
    auto p = compile(o);
    const uint32_t refused = notify ? SECCOMP_RET_USER_NOTIF : kEperm;
    for (uint64_t f : {AF_INET, AF_INET6, AF_NETLINK, AF_VSOCK, AF_PACKET, 0, 63})
      for (uint64_t t : {SOCK_STREAM, SOCK_DGRAM, SOCK_RAW}) {
        EXPECT_EQ(run(p, "socket", {f, t}), refused) << f << " " << t;
        EXPECT_EQ(run(p, "socketpair", {f, t}), refused) << f << " " << t;
      }
    EXPECT_EQ(run(p, "socket", {AF_UNIX, SOCK_STREAM}), kAllow);
    EXPECT_EQ(run(p, "socket", {AF_UNIX, SOCK_DGRAM}), kAllow);
    EXPECT_EQ(run(p, "socketpair", {AF_UNIX, SOCK_STREAM}), kAllow);
    EXPECT_EQ(run(p, "socket", {AF_UNIX, SOCK_RAW}), refused);
  }
  // and an egress policy: the family list without network none
  cs::LockdownOptions e;
  e.socket_families = true;
  e.notify = true;
  auto q = compile(e);
  EXPECT_EQ(run(q, "socket", {AF_INET, SOCK_STREAM}), kAllow);
  EXPECT_EQ(run(q, "socket", {AF_INET6, SOCK_DGRAM}), kAllow);
  EXPECT_EQ(run(q, "socket", {AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0}), kAllow);
  EXPECT_EQ(run(q, "socket", {AF_INET, SOCK_RAW}), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(run(q, "socket", {AF_VSOCK, SOCK_STREAM}), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(run(q, "socket", {AF_NETLINK, SOCK_RAW, 12}), SECCOMP_RET_USER_NOTIF);
}

TEST(Lockdown, TerminalInjectionIsRefused) {
  auto p = compile({});
  constexpr uint64_t kTiocsti = 0x5412, kTioclinux = 0x541C, kTcgets = 0x5401;
  EXPECT_EQ(run(p, "ioctl", {0, kTiocsti}), kEperm);
  EXPECT_EQ(run(p, "ioctl", {7, kTioclinux}), kEperm);
  // the command is an unsigned int: high bits do not hide it
  EXPECT_EQ(run(p, "ioctl", {0, (1ULL << 32) | kTiocsti}), kEperm);
  EXPECT_EQ(run(p, "ioctl", {0, kTcgets}), kAllow);
  cs::LockdownOptions n;
  n.notify = true;
  auto q = compile(n);
  EXPECT_EQ(run(q, "ioctl", {0, kTiocsti}), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(run(q, "ioctl", {0, kTcgets}), kAllow);
}

TEST(Lockdown, OtherArchitecturesAreKilled) {
  auto p = compile({});
  uint32_t r = cs::evaluate(p.filter, cs::make_seccomp_data(2, {}, AUDIT_ARCH_I386));
  // libseccomp's bad-architecture action: kill (the thread)
  EXPECT_TRUE(r == SECCOMP_RET_KILL_THREAD || r == SECCOMP_RET_KILL_PROCESS) << std::hex << r;
}

TEST(Lockdown, WithoutNamespacesOnlyClone3) {
  cs::LockdownOptions o;
  o.namespaces = false;
  auto p = compile(o);
  EXPECT_EQ(run(p, "mount"), kAllow);
  EXPECT_EQ(run(p, "clone3"), kEnosys);
}

TEST(Lockdown, DeviceNodesAreRefusedFifosAndFilesAreNot) {
  auto p = compile({});
  // mknod(path, mode, dev) and mknodat(dirfd, path, mode, dev)
  EXPECT_EQ(run(p, "mknod", {0, S_IFCHR | 0666, 0x103}), kEperm);
  EXPECT_EQ(run(p, "mknod", {0, S_IFBLK | 0600, 0x700}), kEperm);
  EXPECT_EQ(run(p, "mknodat", {0, 0, S_IFCHR | 0666, 0x103}), kEperm);
  EXPECT_EQ(run(p, "mknodat", {0, 0, S_IFBLK | 0600, 0x700}), kEperm);
  // The kernel reads the mode as 16 bits: higher bits do not hide the type.
  EXPECT_EQ(run(p, "mknod", {0, 0xffff0000ULL | S_IFCHR, 0x103}), kEperm);
  EXPECT_EQ(run(p, "mknodat", {0, 0, 0x7fff0000ULL | S_IFBLK, 0x700}), kEperm);
  for (uint64_t mode :
       {uint64_t{S_IFIFO | 0600}, uint64_t{S_IFREG | 0600}, uint64_t{S_IFSOCK}, uint64_t{0600}}) {
    EXPECT_EQ(run(p, "mknod", {0, mode, 0}), kAllow) << mode;
    EXPECT_EQ(run(p, "mknodat", {0, 0, mode, 0}), kAllow) << mode;
  }
  cs::LockdownOptions notify;
  notify.notify = true;
  auto q = compile(notify);
  EXPECT_EQ(run(q, "mknodat", {0, 0, S_IFCHR | 0666, 0x103}), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(run(q, "mknodat", {0, 0, S_IFIFO | 0600, 0}), kAllow);
}

TEST(Lockdown, ConnectNotifiesOnlyWhenReporting) {
  EXPECT_EQ(run(compile({}), "connect"), kAllow);  // the ERRNO program: no rule
  cs::LockdownOptions notify;
  notify.notify = true;
  EXPECT_EQ(run(compile(notify), "connect"), SECCOMP_RET_USER_NOTIF);
  // not in what a base filter must let through: the base allows it anyway
  auto names = cs::lockdown_reportable(notify);
  EXPECT_EQ(std::find(names.begin(), names.end(), "connect"), names.end());
}
