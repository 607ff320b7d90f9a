// Who sent a DNS query (violations.hpp socket_owner): a scan of
// /proc/PID/net/{udp,tcp}[6] and of the fds of the processes in that
// network namespace. For reports only (racy by nature).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string_view>

#include "comet/base/sys.hpp"
#include "comet/reporting/violations.hpp"

namespace comet::runtime::violations {
namespace {
// The inode of the socket bound to PORT (and ADDR's address) in one of
// /proc/PID/net/{udp,tcp}[6], or 0.
unsigned long socket_inode(int pid, const sockaddr_storage& addr, bool tcp) {
  bool v6 = addr.ss_family == AF_INET6;
  unsigned port = 0;
  std::string want_addr;  // as the kernel prints it
  char hex[40];
  if (v6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    port = ntohs(a->sin6_port);
    const auto* w = reinterpret_cast<const std::uint32_t*>(a->sin6_addr.s6_addr);
    std::snprintf(hex, sizeof hex, "%08X%08X%08X%08X", w[0], w[1], w[2], w[3]);
  } else {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    port = ntohs(a->sin_port);
    std::snprintf(hex, sizeof hex, "%08X", a->sin_addr.s_addr);
  }
  want_addr = hex;
  auto text =
      read_file("/proc/" + std::to_string(pid) + "/net/" + (tcp ? "tcp" : "udp") + (v6 ? "6" : ""));
  if (!text.ok()) return 0;
  std::istringstream in(*text);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, st, queues, tr, retr, uid, timeout;
    unsigned long inode = 0;
    if (!(f >> sl >> local >> remote >> st >> queues >> tr >> retr >> uid >> timeout >> inode))
      continue;
    auto colon = local.find(':');
    if (colon == std::string::npos) continue;
    if (std::strtoul(local.c_str() + colon + 1, nullptr, 16) != port) continue;
    if (local.substr(0, colon) != want_addr) continue;
    return inode;
  }
  return 0;
}
}  // namespace

int socket_owner(int netns_pid, const sockaddr_storage& addr, bool tcp) {
  unsigned long inode = socket_inode(netns_pid, addr, tcp);
  if (inode == 0) return 0;
  struct stat ns;
  if (::stat(("/proc/" + std::to_string(netns_pid) + "/ns/net").c_str(), &ns) < 0) return 0;
  const std::string want = "socket:[" + std::to_string(inode) + "]";
  std::error_code ec;
  for (const auto& p : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = p.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat pns;
    if (::stat((p.path() / "ns/net").c_str(), &pns) < 0 || pns.st_ino != ns.st_ino ||
        pns.st_dev != ns.st_dev)
      continue;
    std::error_code fec;
    for (const auto& fd : std::filesystem::directory_iterator(p.path() / "fd", fec)) {
      char buf[64];
      ssize_t n = ::readlink(fd.path().c_str(), buf, sizeof buf - 1);
      if (n > 0 && std::string_view(buf, static_cast<std::size_t>(n)) == want)
        return std::atoi(name.c_str());
    }
  }
  return 0;
}

}  // namespace comet::runtime::violations
