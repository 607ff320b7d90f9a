// auto_allow_shell: the shell reader of the permission layer (shell_reader.cpp),
// reached the way `sandbox --can-auto-allow -- bash -c SCRIPT` reaches it.
//
// Input: the SCRIPT. It is judged as `bash -c SCRIPT` under the workspace
// profile with the built-in floor, and its verdict is written as JSON.
//
// Invariants (beyond "no crash, no sanitizer report, no timeout"):
//   1. can_auto_allow and verdict_to_json never throw.
//   2. Every verdict has a reason; a floor match has a rule id that is a
//      built-in one; an auto-allowed verdict matched no rule.
//   3. verdict_to_json is valid JSON.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comet/capability/auto_allow.hpp"
#include "comet/capability/profile.hpp"
#include "fuzz_check.hpp"

namespace cap = comet::capability;

namespace {

const cap::ResolvedProfile& workspace_profile() {
  static const cap::ResolvedProfile p = [] {
    cap::ResolveContext c;
    c.workspace = "/home/ada/src/app";
    c.home = "/home/ada";
    c.tmp = "/tmp";
    auto r = cap::resolve("workspace", c);
    FUZZ_CHECK(r.ok(), "the workspace profile does not resolve");
    return *r;
  }();
  return p;
}

const cap::Floor& builtin_floor() {
  static const cap::Floor f = [] {
    auto r = cap::make_floor(cap::ProfileSet{});
    FUZZ_CHECK(r.ok(), "the built-in floor does not build");
    return *r;
  }();
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> argv = {"bash", "-c",
                                         std::string(comet::fuzz::as_view(data, size))};
  const cap::AutoAllowContext ctx{"/home/ada/src/app", "/home/ada"};
  const cap::Verdict v = cap::can_auto_allow(argv, workspace_profile(), builtin_floor(), ctx);
  FUZZ_CHECK(!v.reason.empty(), "a verdict without a reason");
  if (!v.matched_rule.empty()) {
    const auto& ids = cap::builtin_floor_ids();
    FUZZ_CHECK(std::find(ids.begin(), ids.end(), v.matched_rule) != ids.end(),
               "matched an unknown rule: " + v.matched_rule);
    FUZZ_CHECK(!v.auto_allow, "auto-allowed although rule " + v.matched_rule + " matched");
  }
  const std::string j = cap::verdict_to_json(v);
  FUZZ_CHECK(nlohmann::json::accept(j), "verdict_to_json produced invalid JSON:\n" + j);
  return 0;
}
