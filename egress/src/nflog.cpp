#include "comet/egress/nflog.hpp"

#include <arpa/inet.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace comet::egress {
namespace {

uint16_t be16(const uint8_t* p) {
  return static_cast<uint16_t>((p[0] << 8) | p[1]);
}

std::string addr_text(int family, const uint8_t* p) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (!::inet_ntop(family, p, buf, sizeof buf)) return "";
  return buf;
}

// The IP packet's addresses, protocol and ports (when the snaplen reached them).
bool decode_packet(const uint8_t* p, std::size_t len, Blocked& b) {
  if (len < 1) return false;
  const unsigned version = p[0] >> 4;
  std::size_t l4_off = 0;
  if (version == 4) {
    if (len < 20) return false;
    const std::size_t ihl = static_cast<std::size_t>(p[0] & 0xf) * 4;
    if (ihl < 20 || len < ihl) return false;
    b.v6 = false;
    b.l4 = p[9];
    b.src = addr_text(AF_INET, p + 12);
    b.dst = addr_text(AF_INET, p + 16);
    l4_off = ihl;
  } else if (version == 6) {
    if (len < 40) return false;
    b.v6 = true;
    b.l4 = p[6];  // no extension headers on what a socket sends here
    b.src = addr_text(AF_INET6, p + 8);
    b.dst = addr_text(AF_INET6, p + 24);
    l4_off = 40;
  } else {
    return false;
  }
  if ((b.l4 == IPPROTO_TCP || b.l4 == IPPROTO_UDP) && len >= l4_off + 4) {
    b.sport = be16(p + l4_off);
    b.dport = be16(p + l4_off + 2);
  }
  return !b.src.empty() && !b.dst.empty();
}

}  // namespace

std::vector<Blocked> parse_nflog(const uint8_t* buf, std::size_t len) {
  std::vector<Blocked> out;
  std::size_t off = 0;
  while (off + NLMSG_HDRLEN <= len) {
    nlmsghdr h;
    std::memcpy(&h, buf + off, sizeof h);
    if (h.nlmsg_len < NLMSG_HDRLEN || off + h.nlmsg_len > len) break;
    const std::size_t end = off + h.nlmsg_len;
    const bool packet = h.nlmsg_type == ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET);
    std::size_t a = off + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nfgenmsg));
    off += NLMSG_ALIGN(h.nlmsg_len);
    if (!packet || a > end) continue;
    Blocked b;
    const uint8_t* payload = nullptr;
    std::size_t payload_len = 0;
    while (a + NLA_HDRLEN <= end) {
      nlattr at;
      std::memcpy(&at, buf + a, sizeof at);
      if (at.nla_len < NLA_HDRLEN || a + at.nla_len > end) break;
      const uint8_t* data = buf + a + NLA_HDRLEN;
      const std::size_t dlen = at.nla_len - NLA_HDRLEN;
      switch (at.nla_type & NLA_TYPE_MASK) {
        case NFULA_PAYLOAD:
          payload = data;
          payload_len = dlen;
          break;
        case NFULA_PREFIX:
          b.prefix.assign(reinterpret_cast<const char*>(data),
                          strnlen(reinterpret_cast<const char*>(data), dlen));
          break;
        default:
          break;
      }
      a += NLA_ALIGN(at.nla_len);
    }
    if (payload && decode_packet(payload, payload_len, b)) out.push_back(std::move(b));
  }
  return out;
}

namespace {

// One NFULNL_MSG_CONFIG request with one attribute; waits for the ack.
Status config(int fd, uint16_t group, uint16_t attr, const void* data, std::size_t len) {
  alignas(nlmsghdr) uint8_t buf[128] = {};
  auto* h = reinterpret_cast<nlmsghdr*>(buf);
  h->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;
  h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  h->nlmsg_seq = 1;
  auto* g = reinterpret_cast<nfgenmsg*>(buf + NLMSG_HDRLEN);
  g->nfgen_family = AF_UNSPEC;
  g->version = NFNETLINK_V0;
  g->res_id = htons(group);
  auto* at = reinterpret_cast<nlattr*>(buf + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nfgenmsg)));
  at->nla_type = attr;
  at->nla_len = static_cast<uint16_t>(NLA_HDRLEN + len);
  std::memcpy(reinterpret_cast<uint8_t*>(at) + NLA_HDRLEN, data, len);
  h->nlmsg_len =
      static_cast<uint32_t>(NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nfgenmsg)) + NLA_ALIGN(at->nla_len));
  sockaddr_nl k = {};
  k.nl_family = AF_NETLINK;
  if (::sendto(fd, buf, h->nlmsg_len, 0, reinterpret_cast<sockaddr*>(&k), sizeof k) < 0)
    return Error::sys(errno, "nflog: send config");
  alignas(nlmsghdr) uint8_t ack[256];
  ssize_t n = ::recv(fd, ack, sizeof ack, 0);
  if (n < static_cast<ssize_t>(NLMSG_HDRLEN + sizeof(nlmsgerr)))
    return Error::sys(n < 0 ? errno : EPROTO, "nflog: config ack");
  auto* ah = reinterpret_cast<nlmsghdr*>(ack);
  if (ah->nlmsg_type == NLMSG_ERROR) {
    auto* e = reinterpret_cast<nlmsgerr*>(ack + NLMSG_HDRLEN);
    if (e->error != 0) return Error::sys(-e->error, "nflog: config");
  }
  return {};
}

}  // namespace

Result<NflogSocket> NflogSocket::open() {
  NflogSocket s;
  s.fd_.reset(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER));
  if (!s.fd_.valid()) return Error::sys(errno, "nflog: socket(NETLINK_NETFILTER)");
  sockaddr_nl me = {};
  me.nl_family = AF_NETLINK;
  if (::bind(s.fd_.get(), reinterpret_cast<sockaddr*>(&me), sizeof me) < 0)
    return Error::sys(errno, "nflog: bind");
  nfulnl_msg_config_cmd bind = {NFULNL_CFG_CMD_BIND};
  TRYV(config(s.fd_.get(), kNflogGroup, NFULA_CFG_CMD, &bind, sizeof bind));
  nfulnl_msg_config_mode mode = {};
  mode.copy_range = htonl(kNflogSnaplen);
  mode.copy_mode = NFULNL_COPY_PACKET;
  TRYV(config(s.fd_.get(), kNflogGroup, NFULA_CFG_MODE, &mode, sizeof mode));
  // Every packet at once (the default batches up to 100, or 1 s): the
  // report must be readable by the time the refused call returns.
  uint32_t one = htonl(1);
  TRYV(config(s.fd_.get(), kNflogGroup, NFULA_CFG_QTHRESH, &one, sizeof one));
  int big = 1 << 20;
  (void)::setsockopt(s.fd_.get(), SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  int fl = 1;
  (void)::setsockopt(s.fd_.get(), SOL_NETLINK, NETLINK_NO_ENOBUFS, &fl, sizeof fl);
  return s;
}

std::vector<Blocked> NflogSocket::drain() {
  std::vector<Blocked> out;
  alignas(nlmsghdr) static uint8_t buf[1 << 16];
  for (int i = 0; i < 256; ++i) {
    ssize_t n = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) break;
    auto got = parse_nflog(buf, static_cast<std::size_t>(n));
    out.insert(out.end(), got.begin(), got.end());
  }
  return out;
}

}  // namespace comet::egress
