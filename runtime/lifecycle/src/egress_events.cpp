// The egress resolver's violation events (docs/events.md): what create
// hands egress::setup() to report the queries it refused and the packets
// the ruleset dropped.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <memory>
#include <optional>

#include "comet/egress/nflog.hpp"
#include "comet/reporting/violations.hpp"
#include "lifecycle_internal.hpp"

namespace comet::runtime {
namespace {

// A packet the egress ruleset refused (egress/nflog.hpp), as the violation
// event the agent's call stands for.
violations::Event blocked_event(const egress::Blocked& b, const std::string& cid,
                                const std::optional<violations::PackId>& pack, int ipid) {
  violations::Event e;
  e.container = cid;
  e.pack = pack;
  const bool dns = b.prefix == egress::kNflogPrefixDns;
  // A peer's new connection to a socket of the agent's: the local
  // end is the destination.
  const bool inbound = b.prefix == egress::kNflogPrefixInbound;
  e.surface = dns ? "dns" : "egress";
  const char* proto = b.l4 == IPPROTO_TCP ? "tcp" : b.l4 == IPPROTO_UDP ? "udp" : nullptr;
  std::string host = b.v6 ? "[" + b.dst + "]" : b.dst;
  e.requested = proto ? host + ":" + std::to_string(b.dport) + "/" + proto
                      : host + "/proto " + std::to_string(b.l4);
  if (inbound)
    e.requested = "inbound from " + (b.v6 ? "[" + b.src + "]" : b.src) + ":" +
                  std::to_string(b.sport) + (proto ? std::string("/") + proto : "") + " to port " +
                  std::to_string(b.dport);
  e.syscall = proto ? proto : "ip";  // the transport, as for dns
  const bool loopback = b.dst.rfind("127.", 0) == 0 || b.dst == "::1";
  // What the rule that refused it makes the agent see (inbound: the
  // peer; the agent's listener sees nothing).
  e.err = dns || loopback ? ETIMEDOUT : proto ? ECONNREFUSED : EHOSTUNREACH;
  sockaddr_storage src = {};
  const std::string& local = inbound ? b.dst : b.src;
  const uint16_t local_port = inbound ? b.dport : b.sport;
  if (b.v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&src);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(local_port);
    ::inet_pton(AF_INET6, local.c_str(), &a->sin6_addr);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&src);
    a->sin_family = AF_INET;
    a->sin_port = htons(local_port);
    ::inet_pton(AF_INET, local.c_str(), &a->sin_addr);
  }
  int owner = proto ? violations::socket_owner(ipid, src, b.l4 == IPPROTO_TCP) : 0;
  if (owner <= 0 && proto && inbound) {  // a listener on the any-address
    if (b.v6)
      reinterpret_cast<sockaddr_in6*>(&src)->sin6_addr = in6addr_any;
    else
      reinterpret_cast<sockaddr_in*>(&src)->sin_addr.s_addr = htonl(INADDR_ANY);
    owner = violations::socket_owner(ipid, src, b.l4 == IPPROTO_TCP);
  }
  e.pid = owner > 0 ? owner : ipid;
  return e;
}

}  // namespace

void report_egress_violations(egress::SetupRequest& er, const std::string& state_dir,
                              const std::map<std::string, std::string>& annotations,
                              const std::string& cid, int init_pid) {
  // DNS violations (docs/events.md): the resolver reports what it answers
  // REFUSED, rate-limited, before the answer goes out. It runs in a copy
  // of this process, so the writer lives there.
  auto out = std::make_shared<violations::RateLimited>(state_dir);
  auto pack = violations::pack_of(annotations);
  int ipid = init_pid;
  er.on_dns_refused = [out, pack, cid, ipid](const egress::DnsRefusal& r) {
    violations::Event e;
    e.container = cid;
    e.pack = pack;
    e.surface = "dns";
    const bool address = r.qtype == 1 || r.qtype == 28 || r.qtype == 5;  // A AAAA CNAME
    e.requested = address ? r.name : r.name + " (type " + std::to_string(r.qtype) + ")";
    e.syscall = r.tcp ? "tcp" : "udp";  // the transport: the resolver sees no syscall
    int owner = violations::socket_owner(ipid, r.client, r.tcp);
    e.pid = owner > 0 ? owner : ipid;
    e.err_name = r.rcode == 3 ? "NXDOMAIN" : "REFUSED";  // the DNS answer (dns_message.hpp)
    out->report(e);
  };
  // Egress violations: the packets the ruleset refused, from its NFLOG
  // group (egress/nflog.hpp), read by the resolver.
  er.on_egress_blocked = [out, pack, cid, ipid](const egress::Blocked& b) {
    out->report(blocked_event(b, cid, pack, ipid));
  };
  // Connections the wire judge refused (egress/judge.hpp): "tls sni=NAME
  // via ADDR:PORT" and the like; the agent saw a reset.
  er.on_wire_refused = [out, pack, cid, ipid](const egress::WireRefusal& w) {
    violations::Event e;
    e.container = cid;
    e.pack = pack;
    e.surface = "egress";
    e.requested = w.requested;
    e.syscall = "tcp";
    e.err = ECONNRESET;
    int owner = violations::socket_owner(ipid, w.agent, /*tcp=*/true);
    e.pid = owner > 0 ? owner : ipid;
    out->report(e);
  };
  er.on_resolver_exit = [out] { out->finish(); };
}

}  // namespace comet::runtime
