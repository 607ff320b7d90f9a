// egress/allowlist: which names the resolver answers and what an answer opens.
#include <gtest/gtest.h>

#include "comet/egress/allowlist.hpp"

using namespace comet::egress;
using comet::capability::Egress;
using comet::capability::Protocol;

namespace {
Egress issue_pack() {
  Egress e;
  e.entries = {{"api.test", 443, Protocol::https}, {"*.cdn.test", 8443, Protocol::tcp},
               {"api.test", 8080, Protocol::http}, {"feed.test", 9000, Protocol::udp},
               {"names.test", 53, Protocol::dns},  {"10.9.9.9", 443, Protocol::https}};
  return e;
}
}  // namespace

TEST(EgressAllowlist, ExactAndWildcardNames) {
  Allowlist a(issue_pack());
  EXPECT_TRUE(a.resolvable("api.test"));
  EXPECT_TRUE(a.resolvable("API.Test."));
  EXPECT_TRUE(a.resolvable("a.cdn.test"));
  EXPECT_TRUE(a.resolvable("x.y.cdn.test"));
  EXPECT_FALSE(a.resolvable("cdn.test"));  // strict subdomains only
  EXPECT_FALSE(a.resolvable("evilcdn.test"));
  EXPECT_FALSE(a.resolvable("other.test"));
  EXPECT_FALSE(a.resolvable("api.test.evil"));
  EXPECT_FALSE(a.resolvable("sub.api.test"));
  EXPECT_FALSE(a.resolvable("10.9.9.9"));  // literals are not names
  EXPECT_TRUE(a.resolvable("names.test"));
  EXPECT_FALSE(a.resolvable(""));
  EXPECT_FALSE(a.resolvable("a\\046cdn.test"));  // an escaped dot is not a label boundary
}

TEST(EgressAllowlist, ServicesPerName) {
  Allowlist a(issue_pack());
  // https and http: judged on the wire (judge.hpp)
  EXPECT_EQ(a.services("api.test"), (std::vector<Service>{{kTcp, 443, true}, {kTcp, 8080, true}}));
  EXPECT_EQ(a.services("a.cdn.test"), (std::vector<Service>{{kTcp, 8443}}));
  EXPECT_EQ(a.services("feed.test"), (std::vector<Service>{{kUdp, 9000}}));
  EXPECT_TRUE(a.services("names.test").empty());  // dns: resolvable, opens nothing
  EXPECT_TRUE(a.services("cdn.test").empty());
}

TEST(EgressAllowlist, LiteralsAndModes) {
  Allowlist a(issue_pack());
  auto l = a.literals();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].address, "10.9.9.9");
  EXPECT_FALSE(l[0].v6);
  EXPECT_EQ(l[0].service, (Service{kTcp, 443, true}));
  EXPECT_FALSE(a.any());
  EXPECT_FALSE(a.none());
  Egress any;
  any.any = true;
  EXPECT_TRUE(Allowlist(any).any());
  EXPECT_TRUE(Allowlist(any).resolvable("whatever.example"));
  EXPECT_TRUE(Allowlist(Egress{}).none());
  EXPECT_FALSE(Allowlist(Egress{}).resolvable("api.test"));
}

TEST(EgressAllowlist, ProtocolNames) {
  uint8_t l4 = 0;
  EXPECT_TRUE(l4_of(Protocol::https, &l4));
  EXPECT_EQ(l4, kTcp);
  EXPECT_TRUE(l4_of(Protocol::http, &l4));
  EXPECT_EQ(l4, kTcp);
  EXPECT_TRUE(l4_of(Protocol::tcp, &l4));
  EXPECT_EQ(l4, kTcp);
  EXPECT_TRUE(l4_of(Protocol::udp, &l4));
  EXPECT_EQ(l4, kUdp);
  EXPECT_FALSE(l4_of(Protocol::dns, &l4));
}
