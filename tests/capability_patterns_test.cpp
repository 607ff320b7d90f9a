// The hand-written matchers (capability/src/util.cpp) against the published
// patterns (manifest.hpp, also in the JSON Schema), read by std::regex: the
// same answer on hand-picked cases and on every string of a small alphabet.
#include <gtest/gtest.h>

#include <functional>
#include <regex>
#include <string>

#include "../capability/src/util.hpp"
#include "comet/capability/manifest.hpp"

namespace cap = comet::capability;
namespace detail = comet::capability::detail;

namespace {

void agree(std::string_view pattern, const std::function<bool(std::string_view)>& fn,
           const std::string& alphabet, std::size_t max_len) {
  std::regex re{std::string(pattern)};
  std::string s;
  std::size_t checked = 0;
  std::function<void()> rec = [&] {
    ASSERT_EQ(fn(s), std::regex_match(s, re)) << "\"" << s << "\" against " << pattern;
    ++checked;
    if (s.size() == max_len) return;
    for (char c : alphabet) {
      s.push_back(c);
      rec();
      s.pop_back();
    }
  };
  rec();
  EXPECT_GT(checked, 1000u);
}

TEST(CapabilityPatterns, NameAgreesWithRegex) {
  agree(cap::kNamePattern, detail::matches_name, "a0-_A", 5);
  std::regex re{std::string(cap::kNamePattern)};
  for (std::string s : {std::string(63, 'a'), std::string(64, 'a'), std::string("-"),
                        std::string("summarize-inputs")})
    EXPECT_EQ(detail::matches_name(s), std::regex_match(s, re)) << s;
}

TEST(CapabilityPatterns, IdentAgreesWithRegex) {
  agree(cap::kIdentPattern, detail::matches_ident, "a0-_A", 5);
  std::regex re{std::string(cap::kIdentPattern)};
  for (std::string s : {std::string(63, 'b'), std::string(64, 'b'), std::string("_x")})
    EXPECT_EQ(detail::matches_ident(s), std::regex_match(s, re)) << s;
}

TEST(CapabilityPatterns, EnvKeyAgreesWithRegex) {
  agree(cap::kEnvKeyPattern, detail::matches_env_key, "aZ0_-", 5);
}

TEST(CapabilityPatterns, SemverAgreesWithRegex) {
  // Every string up to 7 of these, plus the spec's own examples.
  agree(cap::kSemverPattern, detail::matches_semver, "01.-+a", 7);
  std::regex re{std::string(cap::kSemverPattern)};
  for (const char* s : {"1.0.0",
                        "1.4.2",
                        "0.0.0",
                        "01.0.0",
                        "1.0",
                        "1.0.0-alpha",
                        "1.0.0-alpha.1",
                        "1.0.0-0.3.7",
                        "1.0.0-x.7.z.92",
                        "1.0.0-x-y-z.--",
                        "1.0.0-alpha+001",
                        "1.0.0+20130313144700",
                        "1.0.0-beta+exp.sha.5114f85",
                        "1.0.0+21AF26D3----117B344092BD",
                        "1.0.0-01",
                        "1.0.0-",
                        "1.0.0+",
                        "1.0.0-a..b",
                        "1.0.0+a..b",
                        "1.0.0-0a",
                        "1.0.0-00a",
                        "10.20.30",
                        "1.2.3.4",
                        "1.2.3-rc.1+build.1",
                        "v1.2.3",
                        " 1.2.3",
                        "1.2.3 "}) {
    EXPECT_EQ(detail::matches_semver(s), std::regex_match(std::string(s), re)) << s;
  }
}

}  // namespace
