// What the container's ruleset refused, from the kernel: the reject and
// drop rules of ruleset_text() log the packet to an NFLOG group
// (nfnetlink_log, per network namespace) before refusing it, and the DNS
// resolver, which lives in that namespace for as long as the container,
// reads the group and reports each one (docs/events.md, surface egress).
// Reporting only: the rule refuses the packet whether or not anyone reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"

namespace comet::egress {

inline constexpr uint16_t kNflogGroup = 17229;  // "CM"; groups are per netns
inline constexpr const char* kNflogPrefixEgress = "comet-egress";
inline constexpr const char* kNflogPrefixDns = "comet-dns";
// A new inbound connection or datagram to a socket of the container's
// (the input chain): reported as "inbound from ADDR:PORT".
inline constexpr const char* kNflogPrefixInbound = "comet-inbound";
inline constexpr unsigned kNflogSnaplen = 128;  // the IP and L4 headers

// One refused packet, decoded from its headers.
struct Blocked {
  std::string prefix;  // kNflogPrefixEgress or kNflogPrefixDns
  bool v6 = false;
  std::string src, dst;  // canonical text
  uint8_t l4 = 0;        // IPPROTO_TCP, IPPROTO_UDP, ...
  uint16_t sport = 0, dport = 0;
  bool operator==(const Blocked&) const = default;
};

// The packets in one recv() of an NFLOG socket (a sequence of netlink
// messages). Pure: what is not an NFULNL_MSG_PACKET, or does not parse, is
// skipped.
std::vector<Blocked> parse_nflog(const uint8_t* buf, std::size_t len);

// A socket bound to kNflogGroup in the calling thread's network namespace,
// copying the first kNflogSnaplen bytes of each packet. Non-blocking.
class NflogSocket {
 public:
  static Result<NflogSocket> open();
  int fd() const { return fd_.get(); }
  // Everything queued now (never blocks).
  std::vector<Blocked> drain();

 private:
  UniqueFd fd_;
};

}  // namespace comet::egress
