// comet-confine-probe: the attack side of the resolver's confinement
// (runtime/helper_confine.hpp), for integration/egress/test_resolver_confinement.py.
//
//   comet-confine-probe WRITABLE_DIR SIGNAL_PID
//
// Applies confine_helper() exactly as create does for the resolver
// (writable = WRITABLE_DIR, CAP_NET_ADMIN kept, SIGNAL_PID the companion),
// then tries what a compromised resolver would, and prints one JSON line
// per attempt: {"check": NAME, "errno": "EPERM"} ("0" when it worked).
// Needs root (it is run as root by the integration suite, never by ctest).
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/io_uring.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "comet/lifecycle/helper_confine.hpp"

namespace {

void report(const char* check, long rc) {
  std::printf("{\"check\":\"%s\",\"errno\":\"%s\"}\n", check,
              rc < 0 ? comet::errno_name(errno).c_str() : "0");
  std::fflush(stdout);
}

long closing(long fd) {
  if (fd >= 0) ::close(static_cast<int>(fd));
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: comet-confine-probe WRITABLE_DIR SIGNAL_PID\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int companion = std::atoi(argv[2]);
  comet::runtime::HelperConfinement hc;
  hc.writable = {dir};
  hc.keep_caps = 1ULL << CAP_NET_ADMIN;
  hc.signal_pid = companion;
  comet::Status st = comet::runtime::confine_helper(hc);
  if (!st.ok()) {
    std::fprintf(stderr, "confine_helper: %s\n", st.error().what().c_str());
    return 1;
  }
  // The file system: read-only but the state dir.
  report("write-etc", closing(::open("/etc/comet-confine-attack", O_CREAT | O_WRONLY, 0600)));
  report("append-passwd", closing(::open("/etc/passwd", O_WRONLY | O_APPEND)));
  report("write-proc-sys", closing(::open("/proc/sys/kernel/domainname", O_WRONLY)));
  report("chmod-usr-bin", ::chmod("/usr/bin/env", 04755));
  report("write-state-dir",
         closing(::open((dir + "/confine-ok").c_str(), O_CREAT | O_WRONLY, 0600)));
  report("read-etc", closing(::open("/etc/hostname", O_RDONLY)));
  // Processes.
  char* const args[] = {const_cast<char*>("/bin/true"), nullptr};
  report("execve", ::execve("/bin/true", args, environ));
  report("kill-init", ::kill(1, 0));
  report("kill-parent", ::kill(::getppid(), 0));
  report("kill-group", ::kill(0, 0));
  report("kill-companion", ::kill(companion, 0));
  report("pidfd-open-init", closing(::syscall(SYS_pidfd_open, 1, 0)));
  int proc1 = ::open("/proc/1", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  report("pidfd-send-proc-dir", ::syscall(SYS_pidfd_send_signal, proc1, 0, nullptr, 0));
  report("ptrace-companion", ::ptrace(PTRACE_ATTACH, companion, nullptr, nullptr));
  // Sockets: what the resolver uses works, the rest does not.
  int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  report("socket-udp", udp);
  int mark = 0x1234;
  report("so-mark", ::setsockopt(udp, SOL_SOCKET, SO_MARK, &mark, sizeof mark));
  report("socket-tcp", closing(::socket(AF_INET6, SOCK_STREAM, 0)));
  report("socket-netlink-route", closing(::socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)));
  report("socket-netlink-netfilter", closing(::socket(AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER)));
  report("socket-raw", closing(::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP)));
  report("socket-packet", closing(::socket(AF_PACKET, SOCK_DGRAM, 0)));
  report("socket-unix", closing(::socket(AF_UNIX, SOCK_STREAM, 0)));
  int sv[2];
  report("socketpair", ::socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
  // Namespaces, mounts, io_uring.
  report("unshare-mount", ::unshare(CLONE_NEWNS));
  report("unshare-user", ::unshare(CLONE_NEWUSER));
  report("mount-tmpfs", ::mount("none", dir.c_str(), "tmpfs", 0, nullptr));
  struct io_uring_params p = {};
  report("io-uring-setup", closing(::syscall(SYS_io_uring_setup, 4, &p)));
  // _exit: under ASan, LeakSanitizer's exit-time check needs ptrace, which
  // the filter refuses (as it should).
  std::fflush(stdout);
  ::_exit(0);
}
