// dns_message: the resolver's DNS parser and builder, and its decisions, on
// arbitrary bytes (what a container or an upstream can send).
//
// Invariants (beyond "no crash, no sanitizer report"):
//   1. parse() never reads past the buffer (ASan) and never throws.
//   2. A message that parses builds (or the builder refuses it cleanly),
//      and what it builds parses back to an equal message (a fixed point:
//      names normalised, CNAME targets decompressed).
//   3. Every parsed name is valid text for the builder, at most 255 octets
//      on the wire.
//   4. check_query() forwards only single-question IN queries of type
//      A/AAAA/CNAME for names the allowlist resolves; answer() on the same
//      bytes taken as the upstream's reply pins only addresses of the
//      chain's last name, for the asked name's services, with a timeout no
//      shorter than the TTL handed out.
#include <cstddef>
#include <cstdint>
#include <string>

#include "comet/egress/answer.hpp"
#include "comet/egress/dns_message.hpp"
#include "fuzz_check.hpp"

namespace dns = comet::egress::dns;
namespace eg = comet::egress;

namespace {

const eg::Allowlist& allowlist() {
  static const eg::Allowlist a([] {
    comet::capability::Egress e;
    e.entries = {{"api.test", 443, comet::capability::Protocol::https},
                 {"*.cdn.test", 8443, comet::capability::Protocol::tcp}};
    return e;
  }());
  return a;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = dns::parse(data, size);
  if (!m.ok()) return 0;
  for (const auto& q : m->questions) FUZZ_CHECK(dns::valid_name(q.name) || q.name.empty(), q.name);
  for (const auto* sec : {&m->answers, &m->authority, &m->additional})
    for (const auto& r : *sec) {
      FUZZ_CHECK(dns::valid_name(r.name) || r.name.empty(), r.name);
      if (r.type == dns::kTypeCname)
        FUZZ_CHECK(dns::valid_name(r.target) || r.target.empty(), r.target);
    }
  auto wire = dns::build(*m);
  if (wire.ok()) {
    auto again = dns::parse(*wire);
    FUZZ_CHECK(again.ok(), "built message does not parse: " + again.error().what());
    FUZZ_CHECK(*again == *m, "parse(build(m)) != m");
  }

  eg::QueryDecision qd = eg::check_query(allowlist(), *m);
  if (qd.action == eg::QueryAction::forward) {
    FUZZ_CHECK(m->questions.size() == 1, "forwarded a query without exactly one question");
    const auto& q = m->questions[0];
    FUZZ_CHECK(q.qclass == dns::kClassIn, "forwarded a non-IN query");
    FUZZ_CHECK(q.type == dns::kTypeA || q.type == dns::kTypeAaaa || q.type == dns::kTypeCname,
               "forwarded type " + std::to_string(q.type));
    FUZZ_CHECK(allowlist().resolvable(q.name), "forwarded " + q.name);
    // The same message as the upstream's answer to itself.
    dns::Message up = *m;
    up.flags |= dns::kFlagQr;
    eg::AnswerDecision ad = eg::answer(allowlist(), *m, up);
    auto services = allowlist().services(q.name);
    for (const auto& p : ad.pins) {
      bool svc = false;
      for (const auto& s : services) svc = svc || s == p.service;
      FUZZ_CHECK(svc, "pinned a service the name does not open");
      FUZZ_CHECK(p.address != "127.0.0.1" && p.address != "::1" && p.address != "0.0.0.0",
                 "pinned " + p.address);
    }
    for (const auto& r : ad.reply.answers) {
      if (r.type != q.type) continue;
      for (const auto& p : ad.pins)
        if (p.address == eg::address_text(r.rdata))
          FUZZ_CHECK(p.timeout_s >= r.ttl, "pin shorter than its record's TTL");
    }
    (void)dns::build(ad.reply);
  }
  return 0;
}
