// The host's own addresses, for the resolver: a name may never be pinned to
// an address of the host on any interface (issue 21, item 5). With pasta the
// container's flows leave through host sockets, so an allowed name that
// answers with, say, the host's docker0 address would reach a host service
// listening on 0.0.0.0.
//
// The resolver opens one NETLINK_ROUTE socket in the host's namespace while
// it sets up (its seccomp filter refuses new netlink sockets afterwards) and
// dumps the addresses through it each time it pins an answer: a snapshot
// taken at create would miss an address added later.
#pragma once

#include <cstdint>
#include <vector>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"

namespace comet::egress {

// A NETLINK_ROUTE socket in the calling thread's network namespace.
Result<UniqueFd> open_route_socket();

// Every address of every interface (IFA_ADDRESS and IFA_LOCAL, IPv4 as 4
// octets, IPv6 as 16) of the namespace `route_fd` was opened in.
Result<std::vector<std::vector<uint8_t>>> interface_addresses(int route_fd);

// Pure: whether `addr` is one of `host`'s.
bool is_host_address(const std::vector<uint8_t>& addr,
                     const std::vector<std::vector<uint8_t>>& host);

}  // namespace comet::egress
