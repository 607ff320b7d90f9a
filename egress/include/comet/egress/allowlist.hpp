// A pack's egress list as the enforcement sees it: which names the resolver
// may answer, and which (L4 protocol, port) pairs an address answered for a
// name opens. Pure. Protocol names (docs/egress.md):
//   https, http        TCP to the port, judged on the wire (judge.hpp)
//   tcp                TCP to the port
//   udp                UDP to the port
//   dns                the name may be resolved through the runtime's
//                      resolver; opens no connection at all
// Host matching is capability::host_matches (exact, or "*.suffix" for
// strict subdomains only, never an IP literal).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "comet/capability/manifest.hpp"

namespace comet::egress {

inline constexpr uint8_t kTcp = 6;
inline constexpr uint8_t kUdp = 17;

struct Service {
  uint8_t l4 = kTcp;  // IPPROTO_TCP / IPPROTO_UDP
  uint16_t port = 0;
  // https and http: the connection is judged on the wire (judge.hpp), its
  // address goes to the judge set instead of the allow set.
  bool judged = false;
  auto operator<=>(const Service&) const = default;
};

// "tcp" / "udp".
std::string_view l4_name(uint8_t l4);

// An IP literal entry: the address opens directly, no DNS involved.
struct LiteralRule {
  std::string address;  // canonical text
  bool v6 = false;
  Service service;
  auto operator<=>(const LiteralRule&) const = default;
};

class Allowlist {
 public:
  explicit Allowlist(capability::Egress egress);

  // egress: ["*"]: every name resolves, nothing is pinned.
  bool any() const { return egress_.any; }
  // No entry at all: no network.
  bool none() const { return !egress_.any && egress_.entries.empty(); }
  // Some name entry (any protocol, dns included) matches `name`.
  bool resolvable(std::string_view name) const;
  // What an address answered for `name` opens: sorted, without duplicates.
  // Empty for a dns-only name.
  std::vector<Service> services(std::string_view name) const;
  // The IP literal entries (dns-protocol literals open nothing and are left
  // out), sorted.
  std::vector<LiteralRule> literals() const;
  const capability::Egress& egress() const { return egress_; }

 private:
  capability::Egress egress_;
};

// Protocol -> L4, false for dns.
bool l4_of(capability::Protocol p, uint8_t* l4);
bool is_ipv4_literal(std::string_view s);
bool is_ipv6_literal(std::string_view s);

}  // namespace comet::egress
