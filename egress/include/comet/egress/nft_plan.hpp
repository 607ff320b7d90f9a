// The nftables ruleset for a container's network namespace, as nft script
// text (what libnftables' nft_run_cmd_from_buffer takes). Pure functions of
// the allowlist; tests pin the text with golden files
// (tests/data/egress/*.nft).
//
// Filtered (a list of entries), family inet so one table covers v4 and v6:
//
//   table inet <T>
//     set allow4  ipv4_addr . inet_proto . inet_service, flags timeout
//     set allow6  ipv6_addr . inet_proto . inet_service, flags timeout
//                 (IP literal entries are elements without a timeout; the
//                 resolver adds answered addresses with one)
//     chain output  hook output, policy drop:
//       ct state invalid drop
//       ct state established,related accept
//       oif lo to 127.0.0.1 port 53 (udp, tcp) accept    the resolver
//       oif lo, tcp to the judge's port, redirected there  the judge (judge.hpp)
//       oif lo drop                                      nothing else local
//       icmpv6 neighbour/router solicitation, advert     IPv6 needs them
//       port 53 and 853 anywhere else drop               no DNS, no DoT
//       daddr . l4proto . dport in the set accept
//       the judge's own (mark) to daddr . dport in the judge set accept
//       tcp: reject with tcp reset                       connect: ECONNREFUSED
//       udp: reject with icmp port-unreachable           (send: EPERM, the
//                                                        next recv ECONNREFUSED)
//       anything else: reject admin-prohibited
//
//     chain judge  hook output, type nat (only with an https or http entry):
//       the judge's own connections (mark), what the allow set takes: as is
//       daddr . tcp dport in the judge set: redirect to :kJudgePort
//
// Open (egress: ["*"]): policy accept, but DNS still only to the resolver.
// None (egress: []): policy drop, loopback only. Loaded only into an
// engine's namespace: one the runtime made for such a pack has nothing but lo.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "comet/egress/allowlist.hpp"

namespace comet::egress {

enum class Mode { none, filtered, open };
Mode mode_of(const Allowlist& a);

inline constexpr std::string_view kSet4 = "allow4";
inline constexpr std::string_view kSet6 = "allow6";
// https and http entries (judge.hpp): (address . port), redirected to the
// judge; only the judge's marked sockets may then reach them.
inline constexpr std::string_view kJudgeSet4 = "judge4";
inline constexpr std::string_view kJudgeSet6 = "judge6";
inline constexpr uint16_t kJudgePort = 54;          // 127.0.0.1 and ::1, beside the resolver's 53
inline constexpr uint32_t kJudgeMark = 0x636d6a67;  // "cmjg": SO_MARK needs CAP_NET_ADMIN
inline constexpr std::string_view kResolverAddress = "127.0.0.1";

// The whole script, for a table named `table` (family inet). With
// `replace` it starts with "add table; delete table", so loading it over a
// stale table in an engine's namespace replaces the old one atomically.
// Without it (a namespace the runtime has just made, which cannot hold the
// table) that prefix is left out: it makes libnftables' first run in a
// process about 2.5 ms slower (docs/egress.md, "Ruleset load time").
std::string ruleset_text(const Allowlist& a, std::string_view table, bool replace = true);

// One address the resolver answered, opened for one service until the
// timeout (seconds) runs out.
struct Pin {
  std::string address;  // canonical text
  bool v6 = false;
  Service service;
  uint32_t timeout_s = 0;
  bool operator==(const Pin&) const = default;
};

// "add element inet T allow4 { A . tcp . 443 timeout 65s, ... }" (one
// command per family). Empty when pins is empty.
std::string add_elements_text(std::string_view table, const std::vector<Pin>& pins);
// The same elements deleted (no timeouts).
std::string delete_elements_text(std::string_view table, const std::vector<Pin>& pins);

// The name of this container's table: "comet" in a namespace of its own,
// "comet_<16 hex digits of a hash of the id>" in an engine's (shared) one.
std::string table_name(std::string_view container_id, bool shared_netns);

}  // namespace comet::egress
