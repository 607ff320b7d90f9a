#include "comet/capability/address.hpp"

#include <arpa/inet.h>

#include <cstring>

namespace comet::capability {

namespace {

std::optional<std::string> v4_kind(std::uint32_t v4) {
  if (v4 == 0xa9fea9feU) return "a cloud metadata address";  // 169.254.169.254
  if ((v4 >> 24) == 0) return "the unspecified address";     // 0.0.0.0/8
  if ((v4 >> 24) == 127) return "a loopback address";
  if ((v4 >> 16) == 0xa9fe) return "a link-local address";  // 169.254.0.0/16
  if (v4 == 0xffffffffU) return "the broadcast address";
  if ((v4 >> 28) == 0xe) return "a multicast address";  // 224.0.0.0/4
  if ((v4 >> 28) == 0xf) return "a reserved address";   // 240.0.0.0/4
  return std::nullopt;
}

std::uint32_t be32(const std::uint8_t* b) {
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
         b[3];
}

}  // namespace

std::optional<std::string> refused_address_kind(const std::uint8_t* a, std::size_t len) {
  if (len == 4) return v4_kind(be32(a));
  if (len != 16) return "not an IP address";
  static const std::uint8_t kZero[16] = {};
  static const std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static const std::uint8_t kNat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  static const std::uint8_t kMetadata[16] = {0xfd, 0, 0x0e, 0xc2, 0, 0, 0,    0,
                                             0,    0, 0,    0,    0, 0, 0x02, 0x54};
  if (std::memcmp(a, kMetadata, 16) == 0) return "a cloud metadata address";
  if (std::memcmp(a, kZero, 16) == 0) return "the unspecified address";
  if (std::memcmp(a, kZero, 15) == 0 && a[15] == 1) return "a loopback address";
  if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) return "a link-local address";  // fe80::/10
  if (a[0] == 0xff) return "a multicast address";
  // An IPv4 address in IPv6 clothing: mapped and compatible ones are the
  // IPv4 address to the host's stack; say which IPv4 kind when it is one.
  if (std::memcmp(a, kMapped, 12) == 0 || std::memcmp(a, kZero, 12) == 0) {
    if (auto k = v4_kind(be32(a + 12))) return *k;
    return std::string(std::memcmp(a, kMapped, 12) == 0 ? "an IPv4-mapped address"
                                                        : "an IPv4-compatible address") +
           " (name the IPv4 address itself)";
  }
  // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach the IPv4 address inside
  if (std::memcmp(a, kNat64, 12) == 0)
    if (auto k = v4_kind(be32(a + 12))) return *k + " (inside a NAT64 address)";
  if (a[0] == 0x20 && a[1] == 0x02)
    if (auto k = v4_kind(be32(a + 2))) return *k + " (inside a 6to4 address)";
  return std::nullopt;
}

std::optional<std::string> refused_literal_kind(std::string_view host) {
  std::string h(host);
  if (!h.empty() && h.back() == '.') h.pop_back();
  std::uint8_t buf[16];
  if (inet_pton(AF_INET, h.c_str(), buf) == 1) return refused_address_kind(buf, 4);
  if (h.find(':') != std::string::npos && inet_pton(AF_INET6, h.c_str(), buf) == 1)
    return refused_address_kind(buf, 16);
  return std::nullopt;
}

}  // namespace comet::capability
