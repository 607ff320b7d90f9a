#pragma once
// Addresses a pack can never be let through to, whether an egress entry
// names one as an IP literal (manifest validation) or an allowed name
// resolves to one (the egress resolver's pinning, egress/answer.hpp): the
// host's own loopback, the link it sits on (link-local, where a cloud's
// metadata service answers: 169.254.169.254, AWS's fd00:ec2::254),
// unspecified, multicast, reserved and broadcast addresses, and IPv6 forms
// that carry an IPv4 address (mapped, compatible; NAT64 and 6to4 with a
// refused IPv4 inside). One predicate for both, so that DNS cannot open what
// a literal may not name. The host's other interface addresses are not
// known here: the resolver checks those when it pins (docs/egress.md).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace comet::capability {

// What kind of refused address the 4 (IPv4) or 16 (IPv6) bytes are, e.g.
// "a cloud metadata address"; nullopt when a pack may reach it. Any other
// length is "not an IP address".
std::optional<std::string> refused_address_kind(const std::uint8_t* addr, std::size_t len);

// The same for an IP literal in text; nullopt for a literal that may be
// reached and for anything that is not an IP literal.
std::optional<std::string> refused_literal_kind(std::string_view host);

}  // namespace comet::capability
