// The per-container DNS resolver (docs/egress.md, "DNS").
//
// One process per container, started by the runtime at create and killed
// at delete (it also exits by itself when the container's init does). It
// lives in the HOST network namespace: only its two listening sockets
// (127.0.0.1:53, UDP and TCP) and its nftables context are made inside the
// container's namespace, by a setns() there and back. Every upstream
// socket is therefore a host socket: its traffic never crosses the
// container's rules, and nothing in the container can forge it.
//
// For each query: check_query() (answer.hpp); a forwarded one goes to the
// upstreams in order (UDP, 1.5 s each, TCP when the answer is truncated);
// answer() re-builds the reply; its pins are added to the container's nft
// set BEFORE the reply is sent (so the connect that follows passes), and a
// failed set update turns the reply into SERVFAIL (fail closed).
#pragma once

#include <sys/socket.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/capability/manifest.hpp"
#include "comet/egress/answer.hpp"
#include "comet/egress/judge.hpp"
#include "comet/egress/nflog.hpp"

namespace comet::egress {

inline constexpr uint16_t kDnsPort = 53;

struct Upstream {
  sockaddr_storage addr = {};
  socklen_t len = 0;
  std::string text;  // "10.0.0.1:53", "[fd00::1]:53"
};

// "10.0.0.1", "10.0.0.1:5353", "fd00::1", "[fd00::1]:5353", comma or
// space separated (COMET_DNS_UPSTREAM).
Result<std::vector<Upstream>> parse_upstreams(std::string_view list);
// The nameserver lines of a resolv.conf text, at most three, as text.
std::vector<std::string> resolv_conf_nameservers(std::string_view text);
// What the container's /etc/resolv.conf says.
std::string container_resolv_conf();

// A query the allowlist refused (answer.hpp): a name it does not take or a
// CNAME chain through one (answered NXDOMAIN), a record type other than
// A/AAAA/CNAME (REFUSED); for the violation report (issue 6).
struct DnsRefusal {
  std::string name;
  uint16_t qtype = 0;
  uint16_t rcode = 0;  // the answer the agent got: dns::kNxDomain or dns::kRefused
  bool tcp = false;
  sockaddr_storage client = {};  // the querying socket, in the container's netns
};

struct ResolverConfig {
  capability::Egress egress;
  std::string table;                   // nft table in the container's netns
  std::vector<std::string> upstreams;  // parse_upstreams() form
  TtlPolicy ttl;
  // The network helper (nethelper.hpp), killed when the init exits, so
  // that a container whose runtime died leaves nothing running once its
  // init is gone.
  int companion_pid = 0;
  unsigned long long companion_start = 0;
  // Called in the resolver, before the refusing answer is sent (so that the
  // report is written before the agent can see the failure), and once when
  // the resolver exits. Exceptions are swallowed; enforcement never
  // depends on them.
  std::function<void(const DnsRefusal&)> on_refused;
  // Called in the resolver for every packet the ruleset refused (read from
  // the NFLOG group, nflog.hpp); set: the resolver binds the group.
  std::function<void(const Blocked&)> on_blocked;
  std::function<void()> on_exit;
  // With an https or http entry the resolver first forks the wire judge
  // (judge.hpp), its child, which reports its refusals here (in its own
  // process) and runs `confine` and `on_exit` as well.
  std::function<void(const WireRefusal&)> on_wire_refused;
  // Called in the resolver once its listeners, NFLOG socket and nft context
  // exist, before it reports ready, with companion_pid: gives up what it no
  // longer needs (runtime/helper_confine.hpp). An error fails the start.
  std::function<Status(int companion_pid)> confine;
};

// The fds the resolver runs with (all owned by it).
struct ResolverFds {
  int netns = -1;       // the container's network namespace
  int host_netns = -1;  // the namespace it was started in
  int ready = -1;       // writes "R\n" when listening, or "E <why>\n"; then closed
  int init_pidfd = -1;  // the container's init: the resolver exits with it
};

// Runs until the init exits or a fatal error; returns an exit code.
int resolver_main(const ResolverConfig& cfg, const ResolverFds& fds) noexcept;

}  // namespace comet::egress
