// Matching requests against a capabilities block: egress and fs.
#include <gtest/gtest.h>

#include "comet/capability/match.hpp"

using namespace comet::capability;

namespace {

Egress egress(std::vector<EgressEntry> entries, bool any = false) {
  Egress e;
  e.entries = std::move(entries);
  e.any = any;
  return e;
}

}  // namespace

TEST(CapabilityMatch, HostMatching) {
  struct Case {
    const char* pattern;
    const char* host;
    bool matches;
  };
  const Case cases[] = {
      {"api.openai.com", "api.openai.com", true},
      {"api.openai.com", "API.OpenAI.com", true},
      {"api.openai.com.", "api.openai.com", true},
      {"api.openai.com", "api.openai.com.", true},
      {"api.openai.com", "api.openai.com.evil.test", false},
      {"api.openai.com", "xapi.openai.com", false},
      // Wildcards: strict subdomains at any depth, never the apex.
      {"*.cdn.test", "a.cdn.test", true},
      {"*.cdn.test", "a.b.cdn.test", true},
      {"*.CDN.test", "A.cdn.TEST.", true},
      {"*.cdn.test", "cdn.test", false},
      {"*.cdn.test", "evilcdn.test", false},
      {"*.cdn.test", "cdn.test.evil", false},
      {"*.0.0.1", "127.0.0.1", false},  // never an IP literal
      // IPv6 literals compare in canonical form.
      {"2001:db8::1", "2001:DB8:0:0:0:0:0:1", true},
      {"2001:db8::1", "2001:db8::2", false},
      {"", "", false},
  };
  for (const Case& c : cases)
    EXPECT_EQ(host_matches(c.pattern, c.host), c.matches) << c.pattern << " ~ " << c.host;
  EXPECT_EQ(normalize_host("Api.Example.COM."), "api.example.com");
}

TEST(CapabilityMatch, EgressNeedsHostPortAndProtocol) {
  Egress e = egress({{"api.openai.com", 443, Protocol::https}});
  auto d = egress_allows(e, "api.openai.com", 443, Protocol::https);
  EXPECT_TRUE(d.allowed);
  ASSERT_TRUE(d.index);
  EXPECT_EQ(*d.index, 0u);
  EXPECT_EQ(d.entry, "api.openai.com:443:https");
  EXPECT_EQ(d.path, "capabilities.egress[0]");
  EXPECT_FALSE(egress_allows(e, "api.openai.com", 80, Protocol::https).allowed);
  EXPECT_FALSE(egress_allows(e, "api.openai.com", 443, Protocol::tcp).allowed);
  EXPECT_FALSE(egress_allows(e, "api.anthropic.com", 443, Protocol::https).allowed);
  d = egress_allows(e, "api.anthropic.com", 443, Protocol::https);
  EXPECT_EQ(d.entry, "no match");
  EXPECT_FALSE(d.index);
  EXPECT_EQ(d.path, "");
  EXPECT_FALSE(egress_allows(Egress{}, "a.test", 443, Protocol::https).allowed);
}

TEST(CapabilityMatch, ExactDecidesOverWildcardAndLongerSuffixOverShorter) {
  Egress e = egress({{"*.test", 443, Protocol::https},
                     {"*.cdn.test", 443, Protocol::https},
                     {"img.cdn.test", 443, Protocol::https}});
  EXPECT_EQ(*egress_allows(e, "img.cdn.test", 443, Protocol::https).index, 2u);
  EXPECT_EQ(*egress_allows(e, "js.cdn.test", 443, Protocol::https).index, 1u);
  EXPECT_EQ(*egress_allows(e, "other.test", 443, Protocol::https).index, 0u);
  EXPECT_EQ(egress_allows(e, "js.cdn.test", 443, Protocol::https).entry, "*.cdn.test:443:https");
}

TEST(CapabilityMatch, StarAllowsEverythingButEntriesStillDecide) {
  Egress any = egress({}, true);
  auto d = egress_allows(any, "anything.test", 1234, Protocol::udp);
  EXPECT_TRUE(d.allowed);
  EXPECT_TRUE(d.any);
  EXPECT_EQ(d.entry, "*");
  EXPECT_EQ(d.path, "capabilities.egress");
  Capabilities caps;
  caps.egress = egress({{"a.test", 53, Protocol::dns}}, true);
  d = egress_allows(caps, "a.test", 53, Protocol::dns);
  EXPECT_FALSE(d.any);
  EXPECT_EQ(*d.index, 0u);
}

TEST(CapabilityMatch, IpLiterals) {
  Egress e = egress({{"192.168.1.1", 8080, Protocol::http}, {"::1", 53, Protocol::dns}});
  EXPECT_TRUE(egress_allows(e, "192.168.1.1", 8080, Protocol::http).allowed);
  EXPECT_FALSE(egress_allows(e, "192.168.1.2", 8080, Protocol::http).allowed);
  auto d = egress_allows(e, "0:0:0:0:0:0:0:1", 53, Protocol::dns);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.entry, "[::1]:53:dns");
}

TEST(CapabilityMatch, FsPrefixMatchOnComponents) {
  FsPolicy p;
  p.read = {"/workdir/inputs"};
  p.write = {"/workdir/out"};
  auto d = fs_decision(p, "/workdir/out/foo.json");
  EXPECT_EQ(d.access, Access::write);
  EXPECT_TRUE(d.from_write);
  EXPECT_EQ(*d.index, 0u);
  EXPECT_EQ(d.entry, "/workdir/out");
  EXPECT_EQ(d.path, "capabilities.fs.write[0]");
  EXPECT_EQ(fs_decision(p, "/workdir/out").access, Access::write);
  // /workdir/outside is not under /workdir/out: only the implicit read.
  d = fs_decision(p, "/workdir/outside");
  EXPECT_EQ(d.access, Access::read);
  EXPECT_TRUE(d.implicit);
  EXPECT_EQ(d.entry, "/workdir");
  EXPECT_EQ(d.path, "");
  d = fs_decision(p, "/workdir/inputs/a/b.csv");
  EXPECT_EQ(d.access, Access::read);
  EXPECT_FALSE(d.implicit);
  EXPECT_EQ(d.path, "capabilities.fs.read[0]");
  EXPECT_EQ(fs_decision(p, "/workdir").access, Access::read);
  d = fs_decision(p, "/etc/passwd");
  EXPECT_EQ(d.access, Access::denied);
  EXPECT_EQ(d.entry, "no match");
  EXPECT_EQ(fs_decision(p, "/").access, Access::denied);
  EXPECT_EQ(fs_decision(p, "/workdirx").access, Access::denied);
}

TEST(CapabilityMatch, FsNormalisesTheRequest) {
  FsPolicy p;
  p.write = {"/workdir/out"};
  EXPECT_EQ(fs_decision(p, "/workdir/out/../../etc/shadow").access, Access::denied);
  EXPECT_EQ(fs_decision(p, "/workdir/inputs/../out/x").access, Access::write);
  EXPECT_EQ(fs_decision(p, "//workdir///out/./x").access, Access::write);
  // Relative paths are taken from the sandbox cwd, /workdir.
  EXPECT_EQ(fs_decision(p, "out/x").access, Access::write);
  EXPECT_EQ(fs_decision(p, "agent.py").access, Access::read);
  EXPECT_EQ(fs_decision(p, "../etc/passwd").access, Access::denied);
}

TEST(CapabilityMatch, FsLongestEntryDecidesAndWriteWinsTies) {
  FsPolicy p;
  p.read = {"/data", "/tmp"};
  p.write = {"/data/cache", "/tmp"};
  EXPECT_EQ(fs_decision(p, "/data/x").access, Access::read);
  EXPECT_EQ(fs_decision(p, "/data/cache/x").access, Access::write);
  auto d = fs_decision(p, "/tmp/x");
  EXPECT_EQ(d.access, Access::write);
  EXPECT_EQ(d.path, "capabilities.fs.write[1]");
  // An explicit /workdir read entry decides instead of the implicit one.
  p.read.push_back("/workdir");
  d = fs_decision(p, "/workdir/agent.py");
  EXPECT_FALSE(d.implicit);
  EXPECT_EQ(d.path, "capabilities.fs.read[2]");
  // Malformed (relative) entries match nothing.
  FsPolicy bad;
  bad.write = {"out"};
  EXPECT_EQ(fs_decision(bad, "/workdir/out/x").access, Access::read);
  EXPECT_EQ(to_string(Access::denied), "denied");
  EXPECT_EQ(to_string(Access::write), "write");
}
