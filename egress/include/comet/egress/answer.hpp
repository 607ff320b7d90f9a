// What the resolver does with a query and with the upstream's answer. Pure
// decisions, so that every rule below is unit-tested without a socket:
//
// A query from the container is forwarded only when it is a standard query
// (opcode 0) with one question, class IN, type A, AAAA or CNAME, for a name
// the allowlist resolves. A name the allowlist does not take is answered
// NXDOMAIN (getaddrinfo: EAI_NONAME, "does not exist", so agents do not
// retry as they do on REFUSED's EAI_AGAIN); an allowed name asked with
// another type or class REFUSED; both are refusals (a dns violation).
// FORMERR when it has no single question, NOTIMP for another opcode; a
// message that is a response, or has no header, is dropped.
//
// The upstream's answer is re-built, never passed through: its question
// must be ours; the CNAME chain from the asked name is followed only while
// every target is allowed too (one target that is not: NXDOMAIN, a
// refusal, nothing pinned); the A/AAAA records of the chain's last name are kept except
// unspecified, loopback, link-local, multicast, broadcast and v4-mapped
// addresses (a rebinding to those never reaches the set); authority and
// additional sections are dropped. Every kept address becomes one Pin per
// service the asked name's entries open, with timeout
// max(TTL, min_pin) + slack (so never shorter than the TTL the client was
// given, which is capped at max_ttl).
#pragma once

#include <cstdint>
#include <vector>

#include "comet/egress/allowlist.hpp"
#include "comet/egress/dns_message.hpp"
#include "comet/egress/nft_plan.hpp"

namespace comet::egress {

struct TtlPolicy {
  uint32_t min_pin_s = 60;    // short TTLs (CDNs) still pin for a minute
  uint32_t slack_s = 5;       // the client's TTL runs out before the pin does
  uint32_t max_ttl_s = 3600;  // a pin (and the TTL handed out) never exceeds this
};

enum class QueryAction { forward, reply, drop };

struct QueryDecision {
  QueryAction action = QueryAction::drop;
  dns::Message reply;    // for QueryAction::reply
  bool refused = false;  // the allowlist's answer: a dns violation
};

QueryDecision check_query(const Allowlist& a, const dns::Message& q);

// The query sent upstream for a forwarded one: a fresh id, RD, the single
// question, nothing else (no EDNS: answers stay within 512 octets or come
// back truncated and are retried over TCP).
dns::Message upstream_query(const dns::Message& q, uint16_t id);

struct AnswerDecision {
  dns::Message reply;
  std::vector<Pin> pins;  // to add to the set before the reply is sent
  bool refused = false;   // the allowlist's answer: a dns violation
};

// host: the host's own addresses (host_addrs.hpp); an answer naming one is
// left out like an unpinnable address: never pinned, never passed on.
AnswerDecision answer(const Allowlist& a, const dns::Message& query, const dns::Message& upstream,
                      const TtlPolicy& ttl = {},
                      const std::vector<std::vector<uint8_t>>& host = {});

// An address a name may never be pinned to (see above). addr: 4 or 16 octets.
bool unpinnable(const std::vector<uint8_t>& addr);
std::string address_text(const std::vector<uint8_t>& addr);

}  // namespace comet::egress
