#include "comet/host/net_devices.hpp"

#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "comet/base/fd.hpp"

namespace comet::runtime {
namespace {

bool bad_name(const std::string& n) {
  if (n.empty() || n.size() >= IFNAMSIZ || n == "." || n == "..") return true;
  for (char c : n)
    if (c == '/' || c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\0') return true;
  return false;
}

void put_attr(char* buf, size_t& len, unsigned short type, const void* data, size_t n) {
  auto* rta = reinterpret_cast<struct rtattr*>(buf + len);
  rta->rta_type = type;
  rta->rta_len = static_cast<unsigned short>(RTA_LENGTH(n));
  std::memcpy(RTA_DATA(rta), data, n);
  len += RTA_ALIGN(rta->rta_len);
}

// RTM_NEWLINK on IFINDEX: into NETNS_FD, named NAME there. Returns 0 or an
// errno (the kernel's ack).
int newlink_move(int ifindex, int netns_fd, const std::string& name) {
  UniqueFd s(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!s) return errno;
  alignas(struct nlmsghdr) char buf[512] = {};
  auto* nh = reinterpret_cast<struct nlmsghdr*>(buf);
  nh->nlmsg_type = RTM_NEWLINK;
  nh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  nh->nlmsg_seq = 1;
  size_t len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
  auto* ifi = static_cast<struct ifinfomsg*>(NLMSG_DATA(nh));
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  const uint32_t fd = static_cast<uint32_t>(netns_fd);
  put_attr(buf, len, IFLA_NET_NS_FD, &fd, sizeof fd);
  if (!name.empty()) put_attr(buf, len, IFLA_IFNAME, name.c_str(), name.size() + 1);
  nh->nlmsg_len = static_cast<uint32_t>(len);
  struct sockaddr_nl sa = {};
  sa.nl_family = AF_NETLINK;
  if (::sendto(s.get(), buf, len, 0, reinterpret_cast<struct sockaddr*>(&sa), sizeof sa) < 0)
    return errno;
  alignas(struct nlmsghdr) char reply[1024];
  ssize_t n = ::recv(s.get(), reply, sizeof reply, 0);
  if (n < 0) return errno;
  auto* rh = reinterpret_cast<struct nlmsghdr*>(reply);
  if (!NLMSG_OK(rh, static_cast<unsigned>(n)) || rh->nlmsg_type != NLMSG_ERROR) return EPROTO;
  return -static_cast<struct nlmsgerr*>(NLMSG_DATA(rh))->error;
}

}  // namespace

Status check_net_device_names(const std::map<std::string, oci::NetDevice>& devs) {
  for (const auto& [host, d] : devs) {
    const std::string f = "linux.netDevices[\"" + host + "\"]";
    if (bad_name(host)) return Error::msg(f + ": not a network interface name");
    if (!d.name.empty() && bad_name(d.name))
      return Error::msg(f + ".name \"" + d.name + "\": not a network interface name");
  }
  return {};
}

Status check_net_devices_exist(const std::map<std::string, oci::NetDevice>& devs) {
  for (const auto& [host, d] : devs)
    if (::if_nametoindex(host.c_str()) == 0)
      return Error::sys(errno == ENXIO ? ENODEV : errno,
                        "linux.netDevices[\"" + host + "\"]: no such interface on the host");
  return {};
}

Status move_link(const std::string& name, int netns_fd, const std::string& new_name) {
  const unsigned idx = ::if_nametoindex(name.c_str());
  if (idx == 0) return Error::sys(errno, "network interface " + name);
  if (int e = newlink_move(static_cast<int>(idx), netns_fd, new_name.empty() ? name : new_name))
    return Error::sys(e, "move network interface " + name + " into the container's netns" +
                             (new_name.empty() || new_name == name ? "" : " as " + new_name));
  return {};
}

Status move_link_back(const std::string& netns_path, const std::string& name,
                      const std::string& host_name) {
  UniqueFd host(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!host) return Error::sys(errno, "open /proc/self/ns/net");
  UniqueFd ns(::open(netns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) return Error::sys(errno, "open " + netns_path);
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) < 0) return Error::sys(errno, "pipe2");
  UniqueFd r(pipefd[0]), w(pipefd[1]);
  const pid_t pid = ::fork();
  if (pid < 0) return Error::sys(errno, "fork");
  if (pid == 0) {
    int e = ::setns(ns.get(), CLONE_NEWNET) < 0 ? errno : 0;
    if (!e) {
      const unsigned idx = ::if_nametoindex(name.c_str());
      e = idx == 0 ? ENODEV : newlink_move(static_cast<int>(idx), host.get(), host_name);
    }
    (void)!::write(pipefd[1], &e, sizeof e);
    ::_exit(0);
  }
  w.reset();
  int e = EPROTO;
  if (::read(r.get(), &e, sizeof e) != sizeof e) e = EPROTO;
  int st;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (e)
    return Error::sys(e, "move network interface " + name + " back to the host as " + host_name);
  return {};
}

}  // namespace comet::runtime
