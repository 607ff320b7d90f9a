#include "comet/egress/host_addrs.hpp"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace comet::egress {

Result<UniqueFd> open_route_socket() {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (fd.get() < 0) return Error::sys(errno, "egress: netlink route socket");
  struct sockaddr_nl sa = {};
  sa.nl_family = AF_NETLINK;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0)
    return Error::sys(errno, "egress: bind the netlink route socket");
  struct timeval tv = {1, 0};  // a dump never takes that long; never hang the resolver
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

Result<std::vector<std::vector<uint8_t>>> interface_addresses(int route_fd) {
  static uint32_t seq = 0;
  struct {
    nlmsghdr nh;
    ifaddrmsg ifa;
  } req = {};
  req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(ifaddrmsg));
  req.nh.nlmsg_type = RTM_GETADDR;
  req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.nh.nlmsg_seq = ++seq;
  req.ifa.ifa_family = AF_UNSPEC;
  struct sockaddr_nl kernel = {};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(route_fd, &req, req.nh.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) < 0)
    return Error::sys(errno, "egress: RTM_GETADDR");
  std::vector<std::vector<uint8_t>> out;
  // The netlink macros cast char pointers to the headers; the buffer is
  // aligned for them and the kernel keeps every message and attribute
  // 4-byte aligned (NLMSG_ALIGN, RTA_ALIGN).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wcast-align"
  alignas(nlmsghdr) char buf[16384];
  for (;;) {
    ssize_t n = ::recv(route_fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::sys(errno, "egress: RTM_GETADDR reply");
    if (n == 0) return Error::msg("egress: RTM_GETADDR: the kernel closed the socket");
    auto len = static_cast<unsigned>(n);
    for (auto* nh = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
      if (nh->nlmsg_seq != req.nh.nlmsg_seq) continue;  // a late reply to an earlier dump
      if (nh->nlmsg_type == NLMSG_DONE) return out;
      if (nh->nlmsg_type == NLMSG_ERROR) {
        auto* e = static_cast<nlmsgerr*>(NLMSG_DATA(nh));
        return Error::sys(-e->error, "egress: RTM_GETADDR");
      }
      if (nh->nlmsg_type != RTM_NEWADDR) continue;
      auto* ifa = static_cast<ifaddrmsg*>(NLMSG_DATA(nh));
      const std::size_t want = ifa->ifa_family == AF_INET    ? 4
                               : ifa->ifa_family == AF_INET6 ? 16
                                                             : 0;
      if (!want) continue;
      int rlen = static_cast<int>(IFA_PAYLOAD(nh));
      for (auto* rta = IFA_RTA(ifa); RTA_OK(rta, rlen); rta = RTA_NEXT(rta, rlen)) {
        if ((rta->rta_type != IFA_ADDRESS && rta->rta_type != IFA_LOCAL) ||
            RTA_PAYLOAD(rta) != want)
          continue;
        const auto* p = static_cast<const uint8_t*>(RTA_DATA(rta));
        std::vector<uint8_t> a(p, p + want);
        if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(std::move(a));
      }
    }
  }
}

#pragma GCC diagnostic pop

bool is_host_address(const std::vector<uint8_t>& addr,
                     const std::vector<std::vector<uint8_t>>& host) {
  return std::find(host.begin(), host.end(), addr) != host.end();
}

}  // namespace comet::egress
