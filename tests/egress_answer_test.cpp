// egress/answer: what the resolver forwards, refuses, answers and pins.
#include <gtest/gtest.h>

#include "comet/egress/answer.hpp"
#include "comet/egress/host_addrs.hpp"
#include "comet/egress/nethelper.hpp"
#include "comet/egress/pasta.hpp"
#include "comet/egress/resolver.hpp"
#include "comet/egress/slirp.hpp"

#include <cstdlib>

using namespace comet::egress;
using namespace comet::egress::dns;
using comet::capability::Egress;
using comet::capability::Protocol;

namespace {

Allowlist pack() {
  Egress e;
  e.entries = {{"api.test", 443, Protocol::https}, {"*.cdn.test", 8443, Protocol::tcp}};
  return Allowlist(e);
}

Message query(const std::string& name, uint16_t type = kTypeA) {
  Message m;
  m.id = 99;
  m.flags = kFlagRd;
  m.questions.push_back({name, type, kClassIn});
  return m;
}

Record a(const std::string& name, std::vector<uint8_t> addr, uint32_t ttl = 30) {
  Record r;
  r.name = name;
  r.type = addr.size() == 16 ? kTypeAaaa : kTypeA;
  r.ttl = ttl;
  r.rdata = std::move(addr);
  return r;
}

Record cname(const std::string& name, const std::string& target, uint32_t ttl = 30) {
  Record r;
  r.name = name;
  r.type = kTypeCname;
  r.ttl = ttl;
  r.target = target;
  return r;
}

Message upstream_for(const Message& q, std::vector<Record> answers, uint16_t rcode = kNoError) {
  Message u = upstream_query(q, 4242);
  u.flags |= kFlagQr | kFlagRa;
  u.set_rcode(rcode);
  u.answers = std::move(answers);
  return u;
}

}  // namespace

TEST(EgressAnswer, QueriesForwardedOrRefused) {
  Allowlist al = pack();
  EXPECT_EQ(check_query(al, query("api.test")).action, QueryAction::forward);
  EXPECT_EQ(check_query(al, query("a.cdn.test", kTypeAaaa)).action, QueryAction::forward);
  for (const char* n : {"other.test", "cdn.test", "api.test.evil"}) {
    QueryDecision d = check_query(al, query(n));
    EXPECT_EQ(d.action, QueryAction::reply) << n;
    // NXDOMAIN, not REFUSED: getaddrinfo says the name does not exist
    // (EAI_NONAME) instead of EAI_AGAIN, which agents retry (issue 26)
    EXPECT_EQ(d.reply.rcode(), kNxDomain) << n;
    EXPECT_TRUE(d.refused) << n;
  }
  // allowed name, other type (TXT): refused
  EXPECT_EQ(check_query(al, query("api.test", 16)).reply.rcode(), kRefused);
  EXPECT_TRUE(check_query(al, query("api.test", 16)).refused);
  EXPECT_FALSE(check_query(al, query("api.test")).refused);
  // class CH
  Message ch = query("api.test");
  ch.questions[0].qclass = 3;
  EXPECT_EQ(check_query(al, ch).reply.rcode(), kRefused);
  // opcode 2 (status), no question, two questions, a response
  Message op = query("api.test");
  op.flags |= 2 << 11;
  EXPECT_EQ(check_query(al, op).reply.rcode(), kNotImp);
  Message none = query("api.test");
  none.questions.clear();
  EXPECT_EQ(check_query(al, none).reply.rcode(), kFormErr);
  Message two = query("api.test");
  two.questions.push_back(two.questions[0]);
  EXPECT_EQ(check_query(al, two).reply.rcode(), kFormErr);
  Message resp = query("api.test");
  resp.flags |= kFlagQr;
  EXPECT_EQ(check_query(al, resp).action, QueryAction::drop);
}

TEST(EgressAnswer, AllowedAnswerIsPinnedForItsServices) {
  Message q = query("api.test");
  auto d = answer(pack(), q, upstream_for(q, {a("api.test", {10, 77, 0, 10}, 30)}));
  EXPECT_EQ(d.reply.rcode(), kNoError);
  EXPECT_EQ(d.reply.id, 99);
  ASSERT_EQ(d.reply.answers.size(), 1u);
  EXPECT_EQ(d.reply.answers[0].ttl, 30u);
  ASSERT_EQ(d.pins.size(), 1u);
  EXPECT_EQ(d.pins[0].address, "10.77.0.10");
  EXPECT_EQ(d.pins[0].service, (Service{kTcp, 443, true}));  // https: judged
  EXPECT_EQ(d.pins[0].timeout_s, 65u);  // max(30, 60) + 5: never shorter than the TTL
  // a long TTL: timeout = TTL + slack
  auto d2 = answer(pack(), q, upstream_for(q, {a("api.test", {10, 77, 0, 10}, 600)}));
  EXPECT_EQ(d2.pins[0].timeout_s, 605u);
  // capped
  auto d3 = answer(pack(), q, upstream_for(q, {a("api.test", {10, 77, 0, 10}, 999999)}));
  EXPECT_EQ(d3.reply.answers[0].ttl, 3600u);
  EXPECT_EQ(d3.pins[0].timeout_s, 3605u);
  EXPECT_GE(d3.pins[0].timeout_s, d3.reply.answers[0].ttl);
}

// Found by the dns_message fuzzer: an address listed twice with two TTLs
// gave two pins for one set element (105 s and 3005 s), so the set could
// keep the shorter while the client caches the longer.
TEST(EgressAnswer, AnAddressListedTwicePinsOnceForTheLongerTtl) {
  Message q = query("api.test");
  for (bool longer_first : {false, true}) {
    std::vector<Record> recs = {a("api.test", {10, 77, 0, 10}, 100),
                                a("api.test", {10, 77, 0, 10}, 3000)};
    if (longer_first) std::swap(recs[0], recs[1]);
    auto d = answer(pack(), q, upstream_for(q, recs));
    ASSERT_EQ(d.pins.size(), 1u) << longer_first;
    EXPECT_EQ(d.pins[0].timeout_s, 3005u) << longer_first;
    ASSERT_EQ(d.reply.answers.size(), 2u);
    for (const Record& r : d.reply.answers) EXPECT_GE(d.pins[0].timeout_s, r.ttl);
  }
}

TEST(EgressAnswer, CnameChainOnlyWhenEveryNameIsAllowed) {
  Message q = query("api.test");
  auto ok = answer(
      pack(), q,
      upstream_for(q, {cname("api.test", "edge.cdn.test"), a("edge.cdn.test", {10, 77, 0, 20})}));
  EXPECT_EQ(ok.reply.rcode(), kNoError);
  ASSERT_EQ(ok.reply.answers.size(), 2u);
  ASSERT_EQ(ok.pins.size(), 1u);
  EXPECT_EQ(ok.pins[0].address, "10.77.0.20");
  EXPECT_EQ(ok.pins[0].service, (Service{kTcp, 443, true}));  // the asked name's entries
  auto bad =
      answer(pack(), q,
             upstream_for(q, {cname("api.test", "evil.test"), a("evil.test", {10, 77, 0, 66})}));
  EXPECT_EQ(bad.reply.rcode(), kNxDomain);
  EXPECT_TRUE(bad.refused);
  EXPECT_TRUE(bad.reply.answers.empty());
  EXPECT_TRUE(bad.pins.empty());
  // a two-step chain whose second link leaves the allowlist
  auto bad2 =
      answer(pack(), q,
             upstream_for(q, {cname("api.test", "x.cdn.test"), cname("x.cdn.test", "cdn.test"),
                              a("cdn.test", {10, 77, 0, 67})}));
  EXPECT_EQ(bad2.reply.rcode(), kNxDomain);
  EXPECT_TRUE(bad2.refused);
  EXPECT_TRUE(bad2.pins.empty());
  // records for names off the chain are dropped
  auto off =
      answer(pack(), q,
             upstream_for(q, {a("api.test", {10, 77, 0, 10}), a("other.test", {10, 77, 0, 99})}));
  ASSERT_EQ(off.reply.answers.size(), 1u);
  ASSERT_EQ(off.pins.size(), 1u);
}

TEST(EgressAnswer, RebindingToLocalAddressesIsNeverPinned) {
  Message q = query("api.test");
  auto d =
      answer(pack(), q,
             upstream_for(q, {a("api.test", {127, 0, 0, 1}), a("api.test", {0, 0, 0, 0}),
                              a("api.test", {169, 254, 169, 254}), a("api.test", {224, 0, 0, 1}),
                              a("api.test", {255, 255, 255, 255})}));
  EXPECT_TRUE(d.pins.empty());
  EXPECT_TRUE(d.reply.answers.empty());
  Message q6 = query("api.test", kTypeAaaa);
  std::vector<uint8_t> lo6(16, 0), mapped(16, 0), ll(16, 0), good(16, 0);
  lo6[15] = 1;
  mapped[10] = mapped[11] = 0xff;
  mapped[12] = 10;
  ll[0] = 0xfe;
  ll[1] = 0x80;
  good[0] = 0xfd;
  good[15] = 7;
  auto d6 = answer(pack(), q6,
                   upstream_for(q6, {a("api.test", lo6), a("api.test", mapped), a("api.test", ll),
                                     a("api.test", good)}));
  ASSERT_EQ(d6.pins.size(), 1u);
  EXPECT_EQ(d6.pins[0].address, "fd00::7");
  EXPECT_TRUE(d6.pins[0].v6);
  // the rule is the manifest literals' (capability/address.hpp): AWS's IPv6
  // metadata address, and local IPv4 inside NAT64 and 6to4
  std::vector<uint8_t> imds6 = {0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54};
  std::vector<uint8_t> nat64 = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 169, 254, 169, 254};
  std::vector<uint8_t> six2four = {0x20, 0x02, 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  auto d7 = answer(pack(), q6,
                   upstream_for(q6, {a("api.test", imds6), a("api.test", nat64),
                                     a("api.test", six2four), a("api.test", good)}));
  ASSERT_EQ(d7.pins.size(), 1u);
  EXPECT_EQ(d7.pins[0].address, "fd00::7");
}

// Issue 21, item 5: an address of the host, on any interface, is never
// pinned (the resolver passes the host's addresses as they are now).
TEST(EgressAnswer, AnAddressOfTheHostIsNeverPinned) {
  Message q = query("api.test");
  std::vector<std::vector<uint8_t>> host = {{10, 213, 0, 1}, {172, 17, 0, 1}};
  auto d = answer(pack(), q,
                  upstream_for(q, {a("api.test", {172, 17, 0, 1}), a("api.test", {10, 1, 2, 3})}),
                  TtlPolicy{}, host);
  ASSERT_EQ(d.pins.size(), 1u);
  EXPECT_EQ(d.pins[0].address, "10.1.2.3");
  ASSERT_EQ(d.reply.answers.size(), 1u);  // the host's address is not passed on either
}

// The host's addresses through a NETLINK_ROUTE socket (no privilege needed):
// this namespace's loopback is among them.
TEST(EgressHostAddrs, DumpIncludesLoopback) {
  auto fd = open_route_socket();
  ASSERT_TRUE(fd.ok()) << fd.error().what();
  auto addrs = interface_addresses(fd->get());
  ASSERT_TRUE(addrs.ok()) << addrs.error().what();
  EXPECT_TRUE(is_host_address({127, 0, 0, 1}, *addrs));
  EXPECT_FALSE(is_host_address({192, 0, 2, 77}, *addrs));
  // twice through one socket: sequence numbers keep the dumps apart
  auto again = interface_addresses(fd->get());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), addrs->size());
}

TEST(EgressAnswer, UpstreamErrorsAndMismatches) {
  Message q = query("api.test");
  auto nx = answer(pack(), q, upstream_for(q, {}, kNxDomain));
  EXPECT_EQ(nx.reply.rcode(), kNxDomain);
  EXPECT_FALSE(nx.refused);  // the upstream's own NXDOMAIN is no violation
  EXPECT_TRUE(nx.pins.empty());
  auto sf = answer(pack(), q, upstream_for(q, {}, kRefused));
  EXPECT_EQ(sf.reply.rcode(), kServFail);
  Message other = query("other.test");
  auto mm = answer(pack(), q, upstream_for(other, {a("other.test", {10, 0, 0, 1})}));
  EXPECT_EQ(mm.reply.rcode(), kServFail);
  EXPECT_TRUE(mm.pins.empty());
  Message not_resp = upstream_for(q, {a("api.test", {10, 0, 0, 1})});
  not_resp.flags &= static_cast<uint16_t>(~kFlagQr);
  EXPECT_EQ(answer(pack(), q, not_resp).reply.rcode(), kServFail);
}

TEST(EgressAnswer, OpenEgressAnswersWithoutPins) {
  Egress any;
  any.any = true;
  Allowlist al(any);
  Message q = query("anything.example");
  EXPECT_EQ(check_query(al, q).action, QueryAction::forward);
  auto d = answer(al, q, upstream_for(q, {a("anything.example", {10, 1, 1, 1})}));
  EXPECT_EQ(d.reply.answers.size(), 1u);
  EXPECT_TRUE(d.pins.empty());
}

TEST(EgressResolverConfig, Upstreams) {
  auto u = parse_upstreams("10.0.0.1, 10.0.0.2:5353,[fd00::1]:53 fd00::2");
  ASSERT_TRUE(u.ok()) << u.error().what();
  ASSERT_EQ(u->size(), 4u);
  EXPECT_EQ((*u)[0].text, "10.0.0.1:53");
  EXPECT_EQ((*u)[1].text, "10.0.0.2:5353");
  EXPECT_EQ((*u)[2].text, "[fd00::1]:53");
  EXPECT_EQ((*u)[3].text, "[fd00::2]:53");
  EXPECT_FALSE(parse_upstreams("dns.example").ok());
  EXPECT_FALSE(parse_upstreams("10.0.0.1:0").ok());
  EXPECT_FALSE(parse_upstreams("[fd00::1").ok());
  EXPECT_EQ(
      resolv_conf_nameservers("# x\nsearch a\nnameserver 10.1.1.1\nnameserver fe80::1%eth0\n"
                              "nameserver  fd00::53\nnameserver 1.1.1.1\nnameserver 8.8.8.8\n"),
      (std::vector<std::string>{"10.1.1.1", "fd00::53", "1.1.1.1"}));
  EXPECT_NE(container_resolv_conf().find("nameserver 127.0.0.1\n"), std::string::npos);
}

TEST(EgressPasta, Arguments) {
  auto a = pasta_args("/usr/bin/pasta", "/run/x/pasta.pid");
  auto has = [&](const std::string& s) { return std::find(a.begin(), a.end(), s) != a.end(); };
  EXPECT_TRUE(has("--config-net"));
  EXPECT_TRUE(has("--no-map-gw"));
  EXPECT_TRUE(has("/proc/self/fd/3"));
  EXPECT_TRUE(has("/run/x/pasta.pid"));
  // no inbound forwarding of any kind
  int nones = 0;
  for (std::size_t i = 0; i + 1 < a.size(); ++i)
    if ((a[i] == "-t" || a[i] == "-u" || a[i] == "-T" || a[i] == "-U") && a[i + 1] == "none")
      ++nones;
  EXPECT_EQ(nones, 4);
}

TEST(EgressSlirp, Arguments) {
  auto a = slirp_args("/usr/bin/slirp4netns");
  auto has = [&](const std::string& s) { return std::find(a.begin(), a.end(), s) != a.end(); };
  EXPECT_EQ(a.front(), "/usr/bin/slirp4netns");
  EXPECT_TRUE(has("--configure"));
  EXPECT_TRUE(has("--disable-host-loopback"));  // no way to the host's 127.0.0.1
  EXPECT_TRUE(has("--disable-dns"));            // the resolver is comet's own
  EXPECT_TRUE(has("--enable-sandbox"));
  EXPECT_TRUE(has("--enable-seccomp"));
  EXPECT_TRUE(has("--netns-type=path"));
  EXPECT_TRUE(has("/proc/self/fd/3"));  // the namespace by fd: the init is not dumpable
  EXPECT_TRUE(has("--ready-fd=4"));
  EXPECT_TRUE(has("--mtu=" + std::to_string(kSlirpMtu)));
  EXPECT_EQ(a.back(), "tap0");
  // no API socket: nothing can add a port forward later
  for (const auto& arg : a) {
    EXPECT_NE(arg.rfind("--api-socket", 0), 0u) << arg;
    EXPECT_NE(arg, "-a");
  }
}

TEST(EgressNetHelper, Choice) {
  struct Env {
    const char* helper;
    const char* pasta;
  };
  auto with = [](Env e) {
    e.helper ? ::setenv("COMET_NET_HELPER", e.helper, 1) : ::unsetenv("COMET_NET_HELPER");
    e.pasta ? ::setenv("COMET_PASTA", e.pasta, 1) : ::unsetenv("COMET_PASTA");
    auto r = choose_net_helper();
    ::unsetenv("COMET_NET_HELPER");
    ::unsetenv("COMET_PASTA");
    return r;
  };
  auto is = [&](Env e, NetHelperKind k) {
    auto r = with(e);
    return r.ok() && *r == k;
  };
  EXPECT_TRUE(is({nullptr, nullptr}, NetHelperKind::slirp4netns));  // the default
  EXPECT_TRUE(is({"", ""}, NetHelperKind::slirp4netns));
  EXPECT_TRUE(is({"pasta", nullptr}, NetHelperKind::pasta));
  EXPECT_TRUE(is({"slirp4netns", nullptr}, NetHelperKind::slirp4netns));
  // COMET_PASTA alone still means "this pasta"; COMET_NET_HELPER wins over it
  EXPECT_TRUE(is({nullptr, "/opt/passt/pasta"}, NetHelperKind::pasta));
  EXPECT_TRUE(is({"slirp4netns", "/opt/passt/pasta"}, NetHelperKind::slirp4netns));
  auto bad = with({"veth", nullptr});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("COMET_NET_HELPER"), std::string::npos);
  EXPECT_STREQ(net_helper_name(NetHelperKind::slirp4netns), "slirp4netns");
  EXPECT_STREQ(net_helper_name(NetHelperKind::pasta), "pasta");
}
