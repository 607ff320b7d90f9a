// The resolver's decisions (see answer.hpp).
#include "comet/egress/answer.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <set>

#include "comet/capability/address.hpp"
#include "comet/egress/host_addrs.hpp"

namespace comet::egress {

using dns::Message;

QueryDecision check_query(const Allowlist& a, const Message& q) {
  QueryDecision d;
  if (q.response()) return d;  // drop: never answer an answer
  d.action = QueryAction::reply;
  if (q.opcode() != 0) {
    d.reply = dns::error_reply(q, dns::kNotImp);
    return d;
  }
  if (q.questions.size() != 1) {
    d.reply = dns::error_reply(q, dns::kFormErr);
    return d;
  }
  const dns::Question& qq = q.questions.front();
  bool type_ok = qq.type == dns::kTypeA || qq.type == dns::kTypeAaaa || qq.type == dns::kTypeCname;
  if (!a.resolvable(qq.name)) {
    d.reply = dns::error_reply(q, dns::kNxDomain);
    d.refused = true;
    return d;
  }
  if (qq.qclass != dns::kClassIn || !type_ok) {
    d.reply = dns::error_reply(q, dns::kRefused);
    d.refused = true;
    return d;
  }
  d.action = QueryAction::forward;
  return d;
}

Message upstream_query(const Message& q, uint16_t id) {
  Message u;
  u.id = id;
  u.flags = dns::kFlagRd;
  u.questions.push_back(q.questions.front());
  return u;
}

bool unpinnable(const std::vector<uint8_t>& a) {
  // one rule with the manifest's IP literals (comet/capability/address.hpp)
  return capability::refused_address_kind(a.data(), a.size()).has_value();
}

std::string address_text(const std::vector<uint8_t>& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.size() == 4) inet_ntop(AF_INET, a.data(), buf, sizeof buf);
  if (a.size() == 16) inet_ntop(AF_INET6, a.data(), buf, sizeof buf);
  return buf;
}

AnswerDecision answer(const Allowlist& a, const Message& query, const Message& up,
                      const TtlPolicy& ttl, const std::vector<std::vector<uint8_t>>& host) {
  AnswerDecision d;
  const dns::Question& q = query.questions.front();
  bool same_question = up.response() && up.questions.size() == 1 &&
                       up.questions[0].name == q.name && up.questions[0].type == q.type &&
                       up.questions[0].qclass == q.qclass;
  int rc = up.rcode();
  if (!same_question || (rc != dns::kNoError && rc != dns::kNxDomain)) {
    d.reply = dns::error_reply(query, dns::kServFail);
    return d;
  }
  Message r = dns::error_reply(query, static_cast<uint16_t>(rc));
  auto cap = [&](uint32_t t) { return std::min(t, ttl.max_ttl_s); };

  // The CNAME chain from the asked name, every link allowed.
  std::string cur = q.name;
  std::set<std::string> seen{cur};
  for (int hop = 0; hop < 16; ++hop) {
    auto it = std::find_if(up.answers.begin(), up.answers.end(), [&](const dns::Record& rr) {
      return rr.type == dns::kTypeCname && rr.rclass == dns::kClassIn && rr.name == cur;
    });
    if (it == up.answers.end()) break;
    if (!a.resolvable(it->target)) {
      d.reply = dns::error_reply(query, dns::kNxDomain);
      d.refused = true;
      return d;
    }
    if (!seen.insert(it->target).second) {  // a loop
      d.reply = dns::error_reply(query, dns::kServFail);
      return d;
    }
    dns::Record c = *it;
    c.ttl = cap(c.ttl);
    r.answers.push_back(std::move(c));
    cur = it->target;
    if (q.type == dns::kTypeCname) break;  // a CNAME query gets the first link only
  }

  std::vector<Service> services = a.any() ? std::vector<Service>{} : a.services(q.name);
  if (q.type == dns::kTypeA || q.type == dns::kTypeAaaa) {
    for (const dns::Record& rr : up.answers) {
      if (rr.type != q.type || rr.rclass != dns::kClassIn || rr.name != cur) continue;
      if (unpinnable(rr.rdata) || is_host_address(rr.rdata, host)) continue;
      dns::Record k = rr;
      k.ttl = cap(rr.ttl);
      uint32_t timeout =
          std::min(std::max(k.ttl, ttl.min_pin_s) + ttl.slack_s, ttl.max_ttl_s + ttl.slack_s);
      std::string text = address_text(rr.rdata);
      // One pin per (address, service): an address listed twice with two
      // TTLs pins for the longer, so no record outlives its pin (two pins
      // for one element would leave the set with whichever nft kept).
      for (const Service& s : services) {
        auto same = std::find_if(d.pins.begin(), d.pins.end(),
                                 [&](const Pin& p) { return p.address == text && p.service == s; });
        if (same == d.pins.end())
          d.pins.push_back(Pin{text, rr.rdata.size() == 16, s, timeout});
        else
          same->timeout_s = std::max(same->timeout_s, timeout);
      }
      r.answers.push_back(std::move(k));
    }
  }
  d.reply = std::move(r);
  return d;
}

}  // namespace comet::egress
