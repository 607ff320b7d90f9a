// The runtime config file (base/runtime_config.hpp): flat settings, and a
// one-line error naming the file and line for anything else.
#include "comet/base/runtime_config.hpp"

#include <gtest/gtest.h>

using comet::parse_runtime_config;

TEST(RuntimeConfig, TheSettingsAndComments) {
  auto c = parse_runtime_config(
      "# comet-runtime\n\ndns_upstream: 192.0.2.53:53,[2001:db8::53]:53  # ours\n", "/r.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->dns_upstream, "192.0.2.53:53,[2001:db8::53]:53");
  EXPECT_EQ(c->path, "/r.yaml");
  auto q = parse_runtime_config("dns_upstream: \"192.0.2.1\"\n", "/r.yaml");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->dns_upstream, "192.0.2.1");
  auto empty = parse_runtime_config("", "/r.yaml");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->dns_upstream, "");
}

TEST(RuntimeConfig, AnythingElseIsOneLineNamingTheFileAndLine) {
  const std::pair<const char*, const char*> bad[] = {
      {"dns_upstreams: 1.2.3.4\n",
       "/r.yaml:1: unknown setting \"dns_upstreams\" (known: dns_upstream)"},
      {"# x\ndns_upstream:\n", "/r.yaml:2: dns_upstream: no value"},
      {"egress:\n  dns: 1.2.3.4\n", "/r.yaml:1: unknown setting \"egress\" (known: dns_upstream)"},
      {"  dns_upstream: 1.2.3.4\n", "/r.yaml:1: expected `key: value` (a flat list of settings)"},
      {"just words\n", "/r.yaml:1: expected `key: value` (a flat list of settings)"},
  };
  for (const auto& [text, want] : bad) {
    auto c = parse_runtime_config(text, "/r.yaml");
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_EQ(c.error().message(), want) << text;
  }
}
