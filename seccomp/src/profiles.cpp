// The built-in Docker-like default profile: moby's profiles/seccomp/default.json
// as Docker resolves it for the host architecture, Docker's default
// capability set (which has CAP_SYS_CHROOT but not CAP_SYS_ADMIN,
// CAP_SYS_PTRACE, CAP_SYS_MODULE, ...) and a kernel >= 4.8.
#include <algorithm>
#include <cerrno>
#include <initializer_list>
#include <optional>
#include <string_view>

#include "comet/seccomp/seccomp.hpp"

namespace comet::seccomp {
namespace {

// Allowed unconditionally on every architecture (names a given architecture
// or libseccomp does not know are skipped by compile()).
constexpr std::string_view kAllowed =
    "accept accept4 access adjtimex alarm bind brk cachestat capget capset chdir chmod chown "
    "chown32 clock_adjtime clock_adjtime64 clock_getres clock_getres_time64 clock_gettime "
    "clock_gettime64 clock_nanosleep clock_nanosleep_time64 close close_range connect "
    "copy_file_range creat dup dup2 dup3 epoll_create epoll_create1 epoll_ctl epoll_ctl_old "
    "epoll_pwait epoll_pwait2 epoll_wait epoll_wait_old eventfd eventfd2 execve execveat exit "
    "exit_group faccessat faccessat2 fadvise64 fadvise64_64 fallocate fanotify_mark fchdir fchmod "
    "fchmodat fchmodat2 fchown fchown32 fchownat fcntl fcntl64 fdatasync fgetxattr flistxattr "
    "flock fork fremovexattr fsetxattr fstat fstat64 fstatat64 fstatfs fstatfs64 fsync ftruncate "
    "ftruncate64 futex futex_requeue futex_time64 futex_wait futex_waitv futex_wake futimesat "
    "getcpu getcwd getdents getdents64 getegid getegid32 geteuid geteuid32 getgid getgid32 "
    "getgroups getgroups32 getitimer getpeername getpgid getpgrp getpid getppid getpriority "
    "getrandom getresgid getresgid32 getresuid getresuid32 getrlimit get_robust_list getrusage "
    "getsid getsockname getsockopt get_thread_area gettid gettimeofday getuid getuid32 getxattr "
    "inotify_add_watch inotify_init inotify_init1 inotify_rm_watch io_cancel ioctl io_destroy "
    "io_getevents io_pgetevents io_pgetevents_time64 ioprio_get ioprio_set io_setup io_submit "
    "io_uring_enter io_uring_register io_uring_setup ipc kill landlock_add_rule "
    "landlock_create_ruleset landlock_restrict_self lchown lchown32 lgetxattr link linkat listen "
    "listxattr llistxattr _llseek lremovexattr lseek lsetxattr lstat lstat64 madvise "
    "map_shadow_stack membarrier memfd_create memfd_secret mincore mkdir mkdirat mknod mknodat "
    "mlock mlock2 mlockall mmap mmap2 mprotect mq_getsetattr mq_notify mq_open mq_timedreceive "
    "mq_timedreceive_time64 mq_timedsend mq_timedsend_time64 mq_unlink mremap msgctl msgget "
    "msgrcv msgsnd msync munlock munlockall munmap name_to_handle_at nanosleep newfstatat "
    "_newselect open openat openat2 pause pidfd_open pidfd_send_signal pipe pipe2 pkey_alloc "
    "pkey_free pkey_mprotect poll ppoll ppoll_time64 prctl pread64 preadv preadv2 prlimit64 "
    "process_mrelease pselect6 pselect6_time64 pwrite64 pwritev pwritev2 read readahead readlink "
    "readlinkat readv recv recvfrom recvmmsg recvmmsg_time64 recvmsg remap_file_pages "
    "removexattr rename renameat renameat2 restart_syscall rmdir rseq rt_sigaction rt_sigpending "
    "rt_sigprocmask rt_sigqueueinfo rt_sigreturn rt_sigsuspend rt_sigtimedwait "
    "rt_sigtimedwait_time64 rt_tgsigqueueinfo sched_getaffinity sched_getattr sched_getparam "
    "sched_get_priority_max sched_get_priority_min sched_getscheduler sched_rr_get_interval "
    "sched_rr_get_interval_time64 sched_setaffinity sched_setattr sched_setparam "
    "sched_setscheduler sched_yield seccomp select semctl semget semop semtimedop "
    "semtimedop_time64 send sendfile sendfile64 sendmmsg sendmsg sendto setfsgid setfsgid32 "
    "setfsuid setfsuid32 setgid setgid32 setgroups setgroups32 setitimer setpgid setpriority "
    "setregid setregid32 setresgid setresgid32 setresuid setresuid32 setreuid setreuid32 "
    "setrlimit set_robust_list setsid setsockopt set_thread_area set_tid_address setuid setuid32 "
    "setxattr shmat shmctl shmdt shmget shutdown sigaltstack signalfd signalfd4 sigprocmask "
    "sigreturn socketcall socketpair splice stat stat64 statfs statfs64 statx symlink symlinkat "
    "sync sync_file_range syncfs sysinfo tee tgkill time timer_create timer_delete "
    "timer_getoverrun timer_gettime timer_gettime64 timer_settime timer_settime64 timerfd_create "
    "timerfd_gettime timerfd_gettime64 timerfd_settime timerfd_settime64 times tkill truncate "
    "truncate64 ugetrlimit umask uname unlink unlinkat utime utimensat utimensat_time64 utimes "
    "vfork vmsplice wait4 waitid waitpid write writev "
    // "minKernel": "4.8"
    "process_vm_readv process_vm_writev ptrace "
    // CAP_SYS_CHROOT is in Docker's default capability set
    "chroot";

// "includes": {"arches": [...]} entries for the host architecture.
#if defined(__x86_64__)
constexpr std::string_view kArchAllowed = "arch_prctl modify_ldt";
#elif defined(__i386__)
constexpr std::string_view kArchAllowed = "modify_ldt";
#elif defined(__aarch64__) || defined(__arm__)
constexpr std::string_view kArchAllowed =
    "arm_fadvise64_64 arm_sync_file_range sync_file_range2 breakpoint cacheflush set_tls";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
constexpr std::string_view kArchAllowed = "sync_file_range2 swapcontext";
#elif defined(__s390x__) || defined(__s390__)
constexpr std::string_view kArchAllowed =
    "s390_pci_mmio_read s390_pci_mmio_write s390_runtime_instr";
#elif defined(__riscv)
constexpr std::string_view kArchAllowed = "riscv_flush_icache";
#else
constexpr std::string_view kArchAllowed = "";
#endif

// archMap: the host architecture and its sub-architectures.
#if defined(__x86_64__)
constexpr std::string_view kArches = "SCMP_ARCH_X86_64 SCMP_ARCH_X86 SCMP_ARCH_X32";
#elif defined(__aarch64__)
constexpr std::string_view kArches = "SCMP_ARCH_AARCH64 SCMP_ARCH_ARM";
#elif defined(__s390x__)
constexpr std::string_view kArches = "SCMP_ARCH_S390X SCMP_ARCH_S390";
#elif defined(__riscv)
constexpr std::string_view kArches = "SCMP_ARCH_RISCV64";
#else
constexpr std::string_view kArches = "";
#endif

// personality(2) personas an unprivileged container may select: PER_LINUX,
// PER_LINUX32 (8), UNAME26 (0x20000), PER_LINUX32|UNAME26, and 0xffffffff
// (query).
constexpr uint64_t kPersonalities[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};

// clone(2) without namespace flags (CLONE_NEWNS|NEWUTS|NEWIPC|NEWUSER|NEWPID|
// NEWNET|NEWCGROUP): "excludes": {"caps": ["CAP_SYS_ADMIN"]}.
constexpr uint64_t kCloneNamespaceMask = 2114060288;  // 0x7E020000
#if defined(__s390x__) || defined(__s390__)
constexpr uint32_t kCloneFlagsArg = 1;  // s390 swaps clone's first two arguments
#else
constexpr uint32_t kCloneFlagsArg = 0;
#endif

constexpr uint64_t kAfVsock = 40;

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const std::size_t sp = s.find(' ');
    if (sp != 0) out.emplace_back(s.substr(0, sp));
    if (sp == std::string_view::npos) break;
    s.remove_prefix(sp + 1);
  }
  return out;
}

oci::SeccompSyscall allow(std::vector<std::string> names, std::vector<oci::SeccompArg> args = {}) {
  oci::SeccompSyscall s;
  s.names = std::move(names);
  s.action = "SCMP_ACT_ALLOW";
  s.args = std::move(args);
  return s;
}

oci::SeccompArg arg(uint32_t index, uint64_t value, std::string op) {
  oci::SeccompArg a;
  a.index = index;
  a.value = value;
  a.op = std::move(op);
  return a;
}

oci::Seccomp build() {
  oci::Seccomp p;
  p.default_action = "SCMP_ACT_ERRNO";
  p.default_errno_ret = EPERM;
  p.architectures = split(kArches);
  p.syscalls.push_back(allow(split(kAllowed)));
  if (!kArchAllowed.empty()) p.syscalls.push_back(allow(split(kArchAllowed)));
  p.syscalls.push_back(allow({"socket"}, {arg(0, kAfVsock, "SCMP_CMP_NE")}));
  for (uint64_t persona : kPersonalities) {
    p.syscalls.push_back(allow({"personality"}, {arg(0, persona, "SCMP_CMP_EQ")}));
  }
  p.syscalls.push_back(
      allow({"clone"}, {arg(kCloneFlagsArg, kCloneNamespaceMask, "SCMP_CMP_MASKED_EQ")}));
  // Without CAP_SYS_ADMIN clone3 cannot be filtered on its flags (they are
  // behind a pointer): ENOSYS makes libc fall back to clone.
  oci::SeccompSyscall clone3;
  clone3.names = {"clone3"};
  clone3.action = "SCMP_ACT_ERRNO";
  clone3.errno_ret = ENOSYS;
  p.syscalls.push_back(std::move(clone3));
  return p;
}

oci::SeccompSyscall deny(std::vector<std::string> names, uint32_t err,
                         std::vector<oci::SeccompArg> args = {}) {
  oci::SeccompSyscall s;
  s.names = std::move(names);
  s.action = "SCMP_ACT_ERRNO";
  s.errno_ret = err;
  s.args = std::move(args);
  return s;
}

oci::SeccompArg masked(uint32_t index, uint64_t mask, uint64_t value) {
  oci::SeccompArg a = arg(index, mask, "SCMP_CMP_MASKED_EQ");
  a.value_two = value;
  return a;
}

// Calls that undo the hiding mounts, build a new sandbox, reach another
// process or the kernel's keyring, load code into the kernel, or set the
// clock. Docker's default allows some of them (ptrace, process_vm_*,
// chroot, io_uring); the others it leaves to missing capabilities, which a
// second layer should not rely on.
constexpr std::string_view kLockdownDenied =
    "mount umount umount2 pivot_root chroot open_tree move_mount fsopen fsconfig fsmount fspick "
    "mount_setattr unshare setns ptrace process_vm_readv process_vm_writev pidfd_getfd bpf "
    "perf_event_open userfaultfd keyctl add_key request_key kexec_load kexec_file_load "
    "init_module finit_module delete_module open_by_handle_at swapon swapoff reboot acct "
    "quotactl quotactl_fd lookup_dcookie iopl ioperm syslog vhangup nfsservctl "
    "settimeofday clock_settime clock_settime64 stime adjtimex clock_adjtime clock_adjtime64 "
    "io_uring_setup io_uring_enter "
    "io_uring_register";

constexpr uint64_t kCloneNamespaceFlags[] = {0x00020000, 0x02000000, 0x04000000, 0x08000000,
                                             0x10000000, 0x20000000, 0x40000000};
constexpr uint64_t kCloneThread = 0x00010000;
constexpr uint64_t kCloneFiles = 0x00000400;
constexpr uint64_t kLow32 = 0xffffffff;  // the kernel reads int arguments as 32 bits
constexpr uint64_t kAfUnix = 1;
constexpr uint64_t kAfPacket = 17;
constexpr uint64_t kSockTypeMask = 0xf;
constexpr uint64_t kSockRaw = 3;
constexpr uint64_t kSockPacket = 10;
constexpr uint64_t kAfInet = 2;
constexpr uint64_t kAfInet6 = 10;
constexpr uint64_t kAfNetlink = 16;
constexpr uint64_t kModeFmt = 0170000;   // S_IFMT
constexpr uint64_t kModeSuid = 04000;    // S_ISUID
constexpr uint64_t kModeSgid = 02000;    // S_ISGID
constexpr uint64_t kModeChr = 0020000;   // S_IFCHR
constexpr uint64_t kModeBlk = 0060000;   // S_IFBLK
constexpr uint64_t kModeReg = 0100000;   // S_IFREG
constexpr uint64_t kModeFifo = 0010000;  // S_IFIFO
constexpr uint64_t kModeSock = 0140000;  // S_IFSOCK
constexpr uint64_t kTiocsti = 0x5412;    // TIOCSTI: push input into a terminal
constexpr uint64_t kTioclinux = 0x541C;  // TIOCLINUX: the console's selection paste

// Rules (names and conditions; the caller picks the action) that match
// `call` with a socket family other than the `allowed` ones, each also with
// `extra` when given. Every allowed family is below AF_PACKET (17): the
// families under it one by one, 17 and up as one ">=" range. Equalities
// and a range, never "!=": libseccomp cannot stack a "!=" on the family
// beside another rule's "!=" (network none's), the second is never reached.
// A 64-bit compare of the 32-bit family can only refuse more (junk in the
// upper half), never less.
std::vector<oci::SeccompSyscall> refuse_families(const char* call,
                                                 std::initializer_list<uint64_t> allowed,
                                                 std::optional<oci::SeccompArg> extra = {}) {
  std::vector<oci::SeccompSyscall> out;
  auto rule = [&](oci::SeccompArg family) {
    oci::SeccompSyscall r;
    r.names = {call};
    r.args = {std::move(family)};
    if (extra) r.args.push_back(*extra);
    out.push_back(std::move(r));
  };
  for (uint64_t f = 0; f < kAfPacket; f++)
    if (std::find(allowed.begin(), allowed.end(), f) == allowed.end()) rule(masked(0, kLow32, f));
  rule(arg(0, kAfPacket, "SCMP_CMP_GE"));
  return out;
}

}  // namespace

std::vector<std::string> lockdown_denied_syscalls() {
  return split(kLockdownDenied);
}

// Set-user-ID and set-group-ID modes: a command run as root (a sandbox
// without sudo, a pack's root in a host tree) could leave a setuid-root
// program for any local user to run (red team round 8); chmod of one's own
// file needs no capability. Set-group-ID without group execute is refused
// too: an ACL can grant the execute afterwards (red team round 9). (A
// creating call's mode: the git rule's init strips the bits.) A setgid
// directory is refused as well.
template <typename Deny>
void refuse_setid_modes(oci::Seccomp& p, const Deny& deny) {
  for (uint64_t bits : {kModeSuid, kModeSgid}) {
    p.syscalls.push_back(deny({"chmod", "fchmod"}, EPERM, {masked(1, bits, bits)}));
    p.syscalls.push_back(deny({"fchmodat", "fchmodat2"}, EPERM, {masked(2, bits, bits)}));
  }
}

namespace {

// The unix-socket rule's notifications (runtime/reporting unix_rule.hpp).
// A process that shares its fd table without being a thread of the same
// group could swap a socket under the rule's CONTINUE; threads it can see.
// That clone is refused with EINVAL (not a violation: as for an impossible
// flag combination).
void add_unix_rule(oci::Seccomp& p) {
  p.syscalls.push_back(::comet::seccomp::deny(
      {"clone"}, EINVAL, {masked(kCloneFlagsArg, kCloneFiles | kCloneThread, kCloneFiles)}));
  oci::SeccompSyscall c;
  c.names = {"sendmsg", "sendmmsg"};
  c.action = "SCMP_ACT_NOTIFY";
  p.syscalls.push_back(std::move(c));
  oci::SeccompSyscall t;
  t.names = {"sendto"};
  t.action = "SCMP_ACT_NOTIFY";
  t.args = {arg(4, 0, "SCMP_CMP_NE")};
  p.syscalls.push_back(std::move(t));
}

}  // namespace

oci::Seccomp lockdown_profile(const LockdownOptions& o) noexcept {
  try {
    oci::Seccomp p;
    p.default_action = "SCMP_ACT_ALLOW";
    // Reporting: the same rules, as notifications (LockdownOptions::notify).
    auto deny = [&o](std::vector<std::string> names, uint32_t err,
                     std::vector<oci::SeccompArg> args = {}) {
      oci::SeccompSyscall s = ::comet::seccomp::deny(std::move(names), err, std::move(args));
      if (o.notify) s.action = "SCMP_ACT_NOTIFY";
      return s;
    };
    if (o.notify) p.listener_path = kReporterListener;
    // Native architecture only: any other ABI (int 0x80, x32) is killed, so
    // no rule can be stepped around through a second syscall table.
    if (o.namespaces) {
      p.syscalls.push_back(deny(lockdown_denied_syscalls(), EPERM));
      for (uint64_t f : kCloneNamespaceFlags)
        p.syscalls.push_back(deny({"clone"}, EPERM, {masked(kCloneFlagsArg, f, f)}));
      p.syscalls.push_back(deny({"socket"}, EPERM, {masked(0, kLow32, kAfPacket)}));
      // SOCK_RAW, but for NETLINK_ROUTE, where SOCK_RAW is the ordinary
      // datagram type glibc opens (getaddrinfo's AI_ADDRCONFIG, getifaddrs):
      // it reads this netns's links and addresses, and changing them needs
      // CAP_NET_ADMIN (refuse_families: why not a "!=" on the family). And
      // SOCK_PACKET (10), which the kernel turns into a packet socket
      // whatever the family says.
      for (auto& r : refuse_families("socket", {kAfNetlink}, masked(1, kSockTypeMask, kSockRaw)))
        p.syscalls.push_back(deny(r.names, EPERM, r.args));
      p.syscalls.push_back(deny({"socket"}, EPERM,
                                {masked(1, kSockTypeMask, kSockRaw), masked(0, kLow32, kAfNetlink),
                                 arg(2, 0, "SCMP_CMP_NE")}));
      p.syscalls.push_back(deny({"socket"}, EPERM, {masked(1, kSockTypeMask, kSockPacket)}));
      // Device nodes: no capability allows them here (EPERM anyway); as a
      // rule they are reported (surface "device"). The kernel reads the
      // mode as 16 bits, and the file-type bits are inside those.
      for (uint64_t type : {kModeChr, kModeBlk}) {
        p.syscalls.push_back(deny({"mknod"}, EPERM, {masked(1, kModeFmt, type)}));
        p.syscalls.push_back(deny({"mknodat"}, EPERM, {masked(2, kModeFmt, type)}));
      }
      refuse_setid_modes(p, deny);
      // Terminal injection: a confined process that reaches a terminal it
      // shares with a person (an inherited stdin) must not type into it
      // (what it pushes runs as that person when the run ends). The command
      // is an unsigned int: 32 bits.
      for (uint64_t req : {kTiocsti, kTioclinux})
        p.syscalls.push_back(deny({"ioctl"}, EPERM, {masked(1, kLow32, req)}));
    }
    // clone3 keeps its flags behind a pointer: ENOSYS, and libc falls back
    // to clone(2), whose flags the rules above and below can see. Not a
    // violation: never reported.
    p.syscalls.push_back(::comet::seccomp::deny({"clone3"}, ENOSYS));
    if (o.exec_lock) {
      // memfd_secret too: an fd Landlock does not see, like memfd_create's.
      p.syscalls.push_back(deny({"fork", "vfork", "memfd_create", "memfd_secret"}, EPERM));
      p.syscalls.push_back(deny({"clone"}, EPERM, {masked(kCloneFlagsArg, kCloneThread, 0)}));
      // Reporting only: execve is refused by Landlock, not here. The
      // reporter answers these with CONTINUE (what the ERRNO program, which
      // has no such rule, says), which is safe only because Landlock still
      // decides; it reports the ones whose file is not an allowed one.
      if (o.notify) {
        oci::SeccompSyscall ex;
        ex.names = {"execve", "execveat"};
        ex.action = "SCMP_ACT_NOTIFY";
        p.syscalls.push_back(std::move(ex));
      }
    }
    // Reporting only, as execve above: connect(2) notifies so the reporter
    // can see a container runtime's socket asked for (its sockaddr is
    // behind a pointer). The ERRNO program has no such rule: the reporter
    // answers CONTINUE, and the mounts (the socket is not there) decide.
    if (o.notify) {
      oci::SeccompSyscall c;
      c.names = {"connect"};
      c.action = "SCMP_ACT_NOTIFY";
      p.syscalls.push_back(std::move(c));
    }
    // The unix-socket rule: the reporter judges the address it copied and,
    // when allowed, makes the call itself on a copy of the socket, so that
    // no other thread can change the address between its look and the
    // kernel's (CONTINUE would re-read it). Only datagram sends can carry
    // an address to a unix path: sendto's is an argument (NULL: not
    // notified), sendmsg's and sendmmsg's are behind a pointer.
    if (o.unix_rule && o.notify) add_unix_rule(p);
    // The git rule (runtime/create_rule.hpp): every call that makes a name
    // or opens for writing notifies; the reporter has the sandbox's init
    // judge the name and make the call (CONTINUE would let another thread
    // change the path after the look). mknod of a device stays the EPERM
    // above: only the other file types notify.
    if (o.create_rule && o.notify) {
      auto notify = [&](std::vector<std::string> names, std::vector<oci::SeccompArg> args) {
        oci::SeccompSyscall c;
        c.names = std::move(names);
        c.action = "SCMP_ACT_NOTIFY";
        c.args = std::move(args);
        p.syscalls.push_back(std::move(c));
      };
      // umask: only seen (CONTINUE), for the umask the emulated creates use
      notify({"creat", "openat2", "mkdir", "mkdirat", "symlink", "symlinkat", "link", "linkat",
              "rename", "renameat", "renameat2", "umask", "bind"},
             {});
      constexpr uint64_t kCreat = 0100, kAccMode = 3;
      for (auto [call, flags] : {std::pair<const char*, uint32_t>{"open", 1}, {"openat", 2}}) {
        notify({call}, {masked(flags, kCreat, kCreat)});
        notify({call}, {masked(flags, kAccMode, 1)});
        notify({call}, {masked(flags, kAccMode, 2)});
      }
      for (uint64_t type : {uint64_t{0}, kModeReg, kModeFifo, kModeSock}) {
        notify({"mknod"}, {masked(1, kModeFmt, type)});
        notify({"mknodat"}, {masked(2, kModeFmt, type)});
      }
    }
    if (o.socket_families) {
      for (const char* call : {"socket", "socketpair"})
        for (auto& r : refuse_families(call, {kAfUnix, kAfInet, kAfInet6, kAfNetlink}))
          p.syscalls.push_back(deny(r.names, EPERM, r.args));
      // NETLINK_ROUTE (0) only: getaddrinfo's AI_ADDRCONFIG, if_nameindex.
      oci::SeccompArg nl = masked(0, kLow32, kAfNetlink);
      oci::SeccompArg proto = arg(2, 0, "SCMP_CMP_NE");
      p.syscalls.push_back(deny({"socket"}, EPERM, {nl, proto}));
      // ICMP echo ("ping") sockets: the kernel decides by ping_group_range
      // and refuses unreported; a policy of host:port entries has no ICMP.
      p.syscalls.push_back(
          deny({"socket"}, EPERM, {masked(0, kLow32, kAfInet), masked(2, kLow32, 1)}));
      p.syscalls.push_back(
          deny({"socket"}, EPERM, {masked(0, kLow32, kAfInet6), masked(2, kLow32, 58)}));
    }
    if (o.network_none) {
      // Only AF_UNIX sockets can exist, so connect, bind, listen, accept and
      // send* can only ever reach a unix socket.
      p.syscalls.push_back(deny({"socket", "socketpair"}, EPERM, {arg(0, kAfUnix, "SCMP_CMP_NE")}));
    }
    return p;
  } catch (...) {
    return {};
  }
}

std::vector<std::string> lockdown_reportable(const LockdownOptions& o) {
  LockdownOptions q = o;
  q.notify = false;
  std::vector<std::string> out;
  for (const auto& s : lockdown_profile(q).syscalls)
    for (const auto& n : s.names)
      if (n != "clone3" && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  return out;
}

oci::Seccomp docker_default_profile() noexcept {
  try {
    return build();
  } catch (...) {
    return {};  // an empty default action: compile() refuses it
  }
}

}  // namespace comet::seccomp
