// nft script text for the container's output filter (see nft_plan.hpp).
#include "comet/egress/nft_plan.hpp"

#include <cstdio>

#include "comet/egress/judge.hpp"
#include "comet/egress/nflog.hpp"

namespace comet::egress {

Mode mode_of(const Allowlist& a) {
  if (a.any()) return Mode::open;
  if (a.none()) return Mode::none;
  return Mode::filtered;
}

namespace {

// A judged service's element has no protocol: the judge set is TCP only.
std::string element(const std::string& addr, const Service& s) {
  if (s.judged) return addr + " . " + std::to_string(s.port);
  return addr + " . " + std::string(l4_name(s.l4)) + " . " + std::to_string(s.port);
}

std::string set_block(std::string_view name, bool v6, bool judged,
                      const std::vector<LiteralRule>& lits) {
  std::string s = "\tset " + std::string(name) + " {\n";
  std::string key = judged ? " . inet_service\n" : " . inet_proto . inet_service\n";
  s += (v6 ? "\t\ttype ipv6_addr" : "\t\ttype ipv4_addr") + key;
  s += "\t\tflags timeout\n";
  std::vector<std::string> elems;
  for (const auto& l : lits)
    if (l.v6 == v6 && l.service.judged == judged) elems.push_back(element(l.address, l.service));
  if (!elems.empty()) {
    s += "\t\telements = { ";
    for (std::size_t i = 0; i < elems.size(); ++i) s += (i ? ", " : "") + elems[i];
    s += " }\n";
  }
  s += "\t}\n";
  return s;
}

// Loopback carries only DNS to the resolver; port 53/853 goes nowhere else.
constexpr std::string_view kDnsOnlyToResolver =
    "\t\toif \"lo\" ip daddr 127.0.0.1 meta l4proto { tcp, udp } th dport 53 accept\n";
// Every refusal is logged to the NFLOG group first (nflog.hpp): the
// resolver reports it. The log statement never decides anything.
std::string log_stmt(const char* prefix) {
  return std::string("log prefix \"") + prefix + "\" group " + std::to_string(kNflogGroup) +
         " snaplen " + std::to_string(kNflogSnaplen) + " ";
}
const std::string kNoOtherDns =
    "\t\tmeta l4proto { tcp, udp } th dport { 53, 853 } " + log_stmt(kNflogPrefixDns) + "drop\n";

}  // namespace

std::string ruleset_text(const Allowlist& a, std::string_view table, bool replace) {
  Mode m = mode_of(a);
  const std::string t(table);
  std::string s;
  if (replace) s = "add table inet " + t + "\ndelete table inet " + t + "\n";
  s += "table inet " + t + " {\n";
  if (m == Mode::none) {
    s += "\tchain output {\n";
    s += "\t\ttype filter hook output priority filter; policy drop;\n";
    s += "\t\toif \"lo\" accept\n";
    s += "\t\t" + log_stmt(kNflogPrefixEgress) + "drop\n";
    s += "\t}\n}\n";
    return s;
  }
  if (m == Mode::open) {
    s += "\tchain output {\n";
    s += "\t\ttype filter hook output priority filter; policy accept;\n";
    s += kDnsOnlyToResolver;
    s += kNoOtherDns;
    s += "\t}\n}\n";
    return s;
  }
  auto lits = a.literals();
  const bool judge = wants_judge(a.egress());
  char mark_buf[16];
  std::snprintf(mark_buf, sizeof mark_buf, "0x%08x", kJudgeMark);
  const std::string mark = mark_buf;
  s += set_block(kSet4, false, false, lits);
  s += "\n";
  s += set_block(kSet6, true, false, lits);
  s += "\n";
  if (judge) {
    s += set_block(kJudgeSet4, false, true, lits);
    s += "\n";
    s += set_block(kJudgeSet6, true, true, lits);
    s += "\n";
    // Before the filter (dstnat): what the agent sends to a judged
    // (address, port) goes to the judge instead; what a tcp or udp entry
    // allows as such, and the judge's own connections, stay as they are.
    s += "\tchain judge {\n";
    s += "\t\ttype nat hook output priority -100; policy accept;\n";
    s += "\t\tmeta mark " + mark + " return\n";
    s += "\t\tip daddr . meta l4proto . th dport @" + std::string(kSet4) + " return\n";
    s += "\t\tip6 daddr . meta l4proto . th dport @" + std::string(kSet6) + " return\n";
    s += "\t\tip daddr . tcp dport @" + std::string(kJudgeSet4) +
         " redirect to :" + std::to_string(kJudgePort) + "\n";
    s += "\t\tip6 daddr . tcp dport @" + std::string(kJudgeSet6) +
         " redirect to :" + std::to_string(kJudgePort) + "\n";
    s += "\t}\n\n";
  }
  s += "\tchain output {\n";
  s += "\t\ttype filter hook output priority filter; policy drop;\n";
  s += "\t\tct state invalid drop\n";
  s += "\t\tct state established,related accept\n";
  s += kDnsOnlyToResolver;
  // Only what the judge chain redirected reaches the judge (a direct
  // connect to its port is not NATed: dropped below). Not by oif: a
  // packet re-routed by the nat chain keeps the hook's original output
  // device (nft's oif is the one the hook started with).
  if (judge) {
    const std::string port = std::to_string(kJudgePort);
    s += "\t\tip daddr 127.0.0.1 tcp dport " + port + " ct status dnat accept\n";
    s += "\t\tip6 daddr ::1 tcp dport " + port + " ct status dnat accept\n";
  }
  s += "\t\toif \"lo\" " + log_stmt(kNflogPrefixEgress) + "drop\n";
  s += "\t\ticmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert } accept\n";
  // The kernel's own multicast listener reports: no socket sent them, so
  // they are dropped unreported.
  s += "\t\ticmpv6 type { mld-listener-report, mld2-listener-report } drop\n";
  s += kNoOtherDns;
  s += "\t\tip daddr . meta l4proto . th dport @" + std::string(kSet4) + " accept\n";
  s += "\t\tip6 daddr . meta l4proto . th dport @" + std::string(kSet6) + " accept\n";
  if (judge) {
    s +=
        "\t\tmeta mark " + mark + " ip daddr . tcp dport @" + std::string(kJudgeSet4) + " accept\n";
    s += "\t\tmeta mark " + mark + " ip6 daddr . tcp dport @" + std::string(kJudgeSet6) +
         " accept\n";
  }
  s += "\t\tmeta l4proto tcp " + log_stmt(kNflogPrefixEgress) + "reject with tcp reset\n";
  s += "\t\tmeta l4proto udp " + log_stmt(kNflogPrefixEgress) +
       "reject with icmpx type port-unreachable\n";
  s += "\t\t" + log_stmt(kNflogPrefixEgress) + "reject with icmpx type admin-prohibited\n";
  s += "\t}\n\n";
  // Inbound: only replies to what the agent opened (and loopback). A new
  // connection or datagram from a peer is refused; when it was for a
  // socket of the container's (the socket lookup finds a listener or a
  // bound UDP socket: the agent opened a way in), it is logged and
  // reported. Packets for no socket are refused unreported (a port scan
  // is not the agent's doing), and so are broadcast and multicast.
  s += "\tchain input {\n";
  s += "\t\ttype filter hook input priority filter; policy drop;\n";
  s += "\t\tiif \"lo\" accept\n";
  s += "\t\tct state established,related accept\n";
  s += "\t\ticmpv6 type { nd-router-advert, nd-neighbor-solicit, nd-neighbor-advert } accept\n";
  s += "\t\tmeta pkttype != host drop\n";
  for (const char* tr : {"0", "1"})
    s += std::string("\t\tmeta l4proto tcp socket transparent ") + tr + " " +
         log_stmt(kNflogPrefixInbound) + "reject with tcp reset\n";
  for (const char* tr : {"0", "1"})
    s += std::string("\t\tmeta l4proto udp socket transparent ") + tr + " " +
         log_stmt(kNflogPrefixInbound) + "reject with icmpx type port-unreachable\n";
  s += "\t\tmeta l4proto tcp reject with tcp reset\n";
  s += "\t\tmeta l4proto udp reject with icmpx type port-unreachable\n";
  s += "\t}\n}\n";
  return s;
}

namespace {
std::string elements_cmd(std::string_view verb, std::string_view table,
                         const std::vector<Pin>& pins, bool timeouts) {
  std::string out;
  for (bool judged : {false, true})
    for (bool v6 : {false, true}) {
      std::string list;
      for (const Pin& p : pins) {
        if (p.v6 != v6 || p.service.judged != judged) continue;
        if (!list.empty()) list += ", ";
        list += element(p.address, p.service);
        if (timeouts) list += " timeout " + std::to_string(p.timeout_s) + "s";
      }
      if (list.empty()) continue;
      out += std::string(verb) + " element inet " + std::string(table) + " " +
             std::string(judged ? (v6 ? kJudgeSet6 : kJudgeSet4) : (v6 ? kSet6 : kSet4)) + " { " +
             list + " }\n";
    }
  return out;
}
}  // namespace

std::string add_elements_text(std::string_view table, const std::vector<Pin>& pins) {
  return elements_cmd("add", table, pins, true);
}

std::string delete_elements_text(std::string_view table, const std::vector<Pin>& pins) {
  return elements_cmd("delete", table, pins, false);
}

std::string table_name(std::string_view container_id, bool shared_netns) {
  if (!shared_netns) return "comet";
  uint64_t h = 1469598103934665603ULL;  // FNV-1a 64
  for (unsigned char c : container_id) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "comet_%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace comet::egress
