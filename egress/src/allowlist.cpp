#include "comet/egress/allowlist.hpp"

#include <arpa/inet.h>

#include <algorithm>

#include "comet/capability/match.hpp"

namespace comet::egress {

std::string_view l4_name(uint8_t l4) {
  return l4 == kUdp ? "udp" : "tcp";
}

bool l4_of(capability::Protocol p, uint8_t* l4) {
  switch (p) {
    case capability::Protocol::https:
    case capability::Protocol::http:
    case capability::Protocol::tcp:
    case capability::Protocol::tls:
      *l4 = kTcp;
      return true;
    case capability::Protocol::udp:
      *l4 = kUdp;
      return true;
    case capability::Protocol::dns:
      break;
  }
  return false;
}

bool is_ipv4_literal(std::string_view s) {
  std::string t(s);
  in_addr a;
  return inet_pton(AF_INET, t.c_str(), &a) == 1;
}

bool is_ipv6_literal(std::string_view s) {
  std::string t(s);
  in6_addr a;
  return inet_pton(AF_INET6, t.c_str(), &a) == 1;
}

namespace {
bool judged(capability::Protocol p) {
  return p == capability::Protocol::https || p == capability::Protocol::http ||
         p == capability::Protocol::tls;
}
bool is_literal(std::string_view host) {
  return is_ipv4_literal(host) || is_ipv6_literal(host);
}
}  // namespace

Allowlist::Allowlist(capability::Egress egress) : egress_(std::move(egress)) {}

bool Allowlist::resolvable(std::string_view name) const {
  if (egress_.any) return true;
  for (const auto& e : egress_.entries) {
    if (is_literal(e.host)) continue;
    if (capability::host_matches(e.host, name)) return true;
  }
  return false;
}

std::vector<Service> Allowlist::services(std::string_view name) const {
  std::vector<Service> out;
  for (const auto& e : egress_.entries) {
    uint8_t l4 = 0;
    if (is_literal(e.host) || !l4_of(e.protocol, &l4)) continue;
    if (!capability::host_matches(e.host, name)) continue;
    out.push_back(Service{l4, static_cast<uint16_t>(e.port), judged(e.protocol)});
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<LiteralRule> Allowlist::literals() const {
  std::vector<LiteralRule> out;
  for (const auto& e : egress_.entries) {
    uint8_t l4 = 0;
    if (!is_literal(e.host) || !l4_of(e.protocol, &l4)) continue;
    std::string h = capability::normalize_host(e.host);
    out.push_back(LiteralRule{h, is_ipv6_literal(h),
                              Service{l4, static_cast<uint16_t>(e.port), judged(e.protocol)}});
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace comet::egress
