// The wire judge (docs/egress.md, "Host, port and protocol on the wire"):
// one process per container whose allowlist has an https, tls or http entry,
// forked by the resolver (resolver.hpp) before either confines itself, so
// it dies with it (PR_SET_PDEATHSIG) and teardown finds it as the
// resolver's child.
//
// It lives in the CONTAINER's network namespace, listening on
// 127.0.0.1:kJudgePort and [::1]:kJudgePort. The ruleset (nft_plan.hpp)
// redirects the agent's TCP connections to (address, port) pairs of the
// judge sets to that port. For each one it:
//
//   1. reads the original destination (SO_ORIGINAL_DST): where the agent
//      connected, an element of the judge set (nothing else is redirected
//      here; a direct connect to the port is dropped by the output chain);
//   2. reads the first flight, at most kFirstFlightMs and a bounded number
//      of bytes, and judges it (wire.hpp): a ClientHello whose SNI an
//      https entry for that port names, or HTTP/1.x requests whose Host an
//      http entry for that port names;
//   3. refused: reports it (on_refused, before the agent can see it), then
//      resets the agent's connection (SO_LINGER 0: the agent reads
//      ECONNRESET). Nothing was sent to the far end: it was never connected;
//   4. allowed: connects to the original destination, and only there, with
//      socket mark kJudgeMark (the output chain lets a marked socket reach
//      the judge set's elements and nothing else; the agent has no
//      CAP_NET_ADMIN to set a mark), sends the judged bytes, and relays
//      both ways, half-close and resets included. An http connection stays
//      parsed: every request head on it is judged before it is forwarded.
//      What is not read (a TLS stream after its ClientHello, an HTTP body
//      of known length, every response) is spliced through a pipe.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <string>

#include "comet/base/result.hpp"
#include "comet/capability/manifest.hpp"

namespace comet::egress {

// How long a new connection may take to send what is judged (the whole
// ClientHello, or the first request head) before it is reset and reported.
inline constexpr int kFirstFlightMs = 10000;

// A connection the judge refused.
struct WireRefusal {
  // "tls sni=NAME via ADDR:PORT", "tls no sni via ...", "not tls via ...",
  // "tls ech via ...", "http host=NAME via ...", ...
  std::string requested;
  sockaddr_storage agent = {};  // the agent's end of the connection (its local address)
};

struct JudgeConfig {
  capability::Egress egress;
  std::function<void(const WireRefusal&)> on_refused;
  std::function<void()> on_exit;
  // As ResolverConfig::confine (called with 0: no other process to signal).
  std::function<Status(int companion_pid)> confine;
};

struct JudgeFds {
  int netns = -1;       // the container's network namespace (entered for good)
  int ready = -1;       // "R\n" or "E <why>\n", then closed
  int init_pidfd = -1;  // the container's init: the judge exits with it
};

// Whether the allowlist has an entry the judge checks (https or http).
bool wants_judge(const capability::Egress& egress);

// Runs until the init exits; returns an exit code.
int judge_main(const JudgeConfig& cfg, const JudgeFds& fds) noexcept;

}  // namespace comet::egress
