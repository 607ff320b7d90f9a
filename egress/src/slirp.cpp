#include "comet/egress/slirp.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "comet/base/switches.hpp"
#include "comet/egress/proc.hpp"
#include "netns_thread.hpp"

namespace comet::egress {

namespace {

constexpr int kReadyMs = 5000;

Status write_sysctl(const std::string& path, const char* value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Error::sys(errno, "open " + path);
  ssize_t n = ::write(fd, value, std::strlen(value));
  int e = errno;
  ::close(fd);
  if (n < 0) return Error::sys(e, "write " + path);
  return ok();
}

// The kernel's struct in6_ifreq (linux/ipv6.h, which clashes with glibc's
// netinet/in.h).
struct In6Ifreq {
  struct in6_addr addr;
  std::uint32_t prefixlen;
  int ifindex;
};

Status configure_ipv6_here() {
  std::string conf = std::string("/proc/sys/net/ipv6/conf/") + kSlirpTap + "/";
  if (::access(conf.c_str(), F_OK) != 0) return ok();  // no IPv6 in this kernel
  // Our address at once: no DAD; and no second one, nor a second default
  // route, from slirp's router advertisements.
  TRYV(write_sysctl(conf + "accept_dad", "0"));
  TRYV(write_sysctl(conf + "accept_ra", "0"));
  TRYV(write_sysctl(conf + "autoconf", "0"));
  unsigned idx = ::if_nametoindex(kSlirpTap);
  if (idx == 0) return Error::sys(errno, std::string("no ") + kSlirpTap + " in the namespace");
  UniqueFd s(::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return Error::sys(errno, "socket(AF_INET6)");
  In6Ifreq r = {};
  ::inet_pton(AF_INET6, kSlirpIPv6, &r.addr);
  r.prefixlen = 64;
  r.ifindex = static_cast<int>(idx);
  if (::ioctl(s.get(), SIOCSIFADDR, &r) < 0 && errno != EEXIST)
    return Error::sys(errno, std::string("add ") + kSlirpIPv6 + "/64 to " + kSlirpTap);
  struct in6_rtmsg rt = {};
  ::inet_pton(AF_INET6, kSlirpGatewayIPv6, &rt.rtmsg_gateway);
  rt.rtmsg_dst = in6addr_any;
  rt.rtmsg_dst_len = 0;
  rt.rtmsg_flags = RTF_UP | RTF_GATEWAY;
  rt.rtmsg_metric = 1;
  rt.rtmsg_ifindex = static_cast<int>(idx);
  if (::ioctl(s.get(), SIOCADDRT, &rt) < 0 && errno != EEXIST)
    return Error::sys(errno, std::string("add the IPv6 default route via ") + kSlirpGatewayIPv6);
  return ok();
}

}  // namespace

std::string slirp_binary() {
  if (std::string p = switches::slirp4netns(); !p.empty()) return p;
  for (const char* c : {"/usr/bin/slirp4netns", "/usr/local/bin/slirp4netns"})
    if (::access(c, X_OK) == 0) return c;
  return "";
}

std::vector<std::string> slirp_args(const std::string& binary) {
  return {binary,
          "--configure",  // tap up, 10.0.2.100/24, default route via 10.0.2.2
          "--mtu=" + std::to_string(kSlirpMtu),
          "--disable-host-loopback",  // 10.0.2.2 is not the host's 127.0.0.1
          "--disable-dns",            // no forwarder at 10.0.2.3
          "--enable-ipv6",
          "--enable-sandbox",  // own mount ns, capabilities dropped
          "--enable-seccomp",
          "--ready-fd=" + std::to_string(kSlirpReadyFd),
          "--netns-type=path",
          "/proc/self/fd/" + std::to_string(kSlirpNetnsFd),
          kSlirpTap};
}

Status slirp_ipv6(int netns_fd) {
  return in_netns(netns_fd, [] { return configure_ipv6_here(); });
}

Result<Helper> start_slirp(int netns_fd, const std::string& log_file) {
  std::string bin = slirp_binary();
  if (bin.empty())
    return Error::msg(
        "egress: slirp4netns not found (install Debian's slirp4netns package, or set "
        "COMET_SLIRP4NETNS)");
  std::vector<std::string> args = slirp_args(bin);
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  UniqueFd log(::open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) return Error::sys(errno, "pipe for slirp4netns");
  UniqueFd rd(p[0]), wr(p[1]);
  pid_t pid = ::fork();
  if (pid < 0) return Error::sys(errno, "fork for slirp4netns");
  if (pid == 0) {
    child_stdio(log.get());
    // fds 3 and 4, without CLOEXEC: by way of fds above both, so that
    // neither source is overwritten by the other's dup2.
    int ns = ::fcntl(netns_fd, F_DUPFD_CLOEXEC, 10);
    int ready = ::fcntl(wr.get(), F_DUPFD_CLOEXEC, 10);
    if (ns < 0 || ready < 0 || ::dup2(ns, kSlirpNetnsFd) < 0 || ::dup2(ready, kSlirpReadyFd) < 0)
      ::_exit(126);
    int keep[] = {kSlirpNetnsFd, kSlirpReadyFd};
    close_fds_except(keep, 2);
    ::setsid();
    // A mount namespace of its own whose mounts are slaves of the host's:
    // --enable-sandbox pivots into a tmpfs and detaches the old root, and
    // a detach in a namespace whose mounts are still peers of the host's
    // propagates there (it unmounted the host's /run/netns/* in a test). A
    // slave sends nothing back, and still gets the host's unmounts, so it
    // pins none of the mounts it copied (as the resolver's namespace).
    if (::unshare(CLONE_NEWNS) < 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) < 0)
      ::_exit(125);
    char* envp[] = {nullptr};
    ::execve(argv[0], argv.data(), envp);
    ::_exit(127);
  }
  wr.reset();
  auto fail = [&](const std::string& what) -> Error {
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::string how;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 125)
      how = "exit 125: could not make a mount namespace for it";
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
      how = "exit 127: could not run " + bin;
    else if (WIFEXITED(status))
      how = "exit " + std::to_string(WEXITSTATUS(status));
    else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
      how = "signal " + std::to_string(WTERMSIG(status));
    std::string why = last_log_line(log_file, 4095, [](std::string_view l) {
      return l.rfind("WARNING:", 0) == 0;  // its own warnings say nothing of the failure
    });
    std::string detail = how.empty() ? why : why.empty() ? how : how + ": " + why;
    return Error::msg("egress: slirp4netns " + what + (detail.empty() ? "" : " (" + detail + ")"));
  };
  // "1" once the tap is up and configured; EOF if it exits first.
  char c = 0;
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(kReadyMs);
  for (;;) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    end - std::chrono::steady_clock::now())
                                    .count());
    if (left <= 0) return fail("did not configure the namespace within 5 s");
    struct pollfd pf = {rd.get(), POLLIN, 0};
    int r = ::poll(&pf, 1, left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = ::read(rd.get(), &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n == 1 && c == '1') break;
    return fail("failed");
  }
  Helper h{pid, start_time(pid)};
  if (h.start == 0) return fail("exited right after it started");
  if (Status st = slirp_ipv6(netns_fd); !st.ok()) {
    (void)fail("");
    return std::move(st).error().wrap("egress: IPv6 for slirp4netns");
  }
  return h;
}

}  // namespace comet::egress
