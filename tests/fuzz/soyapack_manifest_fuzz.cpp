// soyapack_manifest: soyapack.yaml parsing, validate(), lint() (strict and
// not) and the two renderers.
//
// Invariants (beyond "no crash, no sanitizer report"):
//   1. parse_manifest / validate / lint / render_* never throw.
//   2. load_manifest(x) succeeds exactly when parse_manifest(x) and
//      validate() both do.
//   3. Every finding names a rule of lint_rules(); strict-only rules appear
//      only under --strict; the severity is the rule's (raised to error under
//      --strict when the rule says so).
//   4. A rule marked `validate` (an error validate() refuses too) can only
//      be reported for a manifest that validate() refuses.
//   5. render_json output is valid JSON whose findings/errors/warnings agree
//      with the findings; render_text is one line per finding plus the
//      summary line, each ending in '\n'.
//   6. capabilities_to_json / capabilities_from_json round-trip the
//      capabilities block of a valid manifest (the annotation the runtime
//      reads back).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "comet/capability/lint.hpp"
#include "comet/capability/manifest.hpp"
#include "fuzz_check.hpp"
#include "yaml_guard.hpp"

namespace cap = comet::capability;

namespace {

void check_findings(const cap::Manifest& m, const std::vector<cap::Finding>& findings, bool strict,
                    bool valid) {
  for (const auto& f : findings) {
    const cap::RuleInfo* rule = cap::find_rule(f.rule_id);
    FUZZ_CHECK(rule != nullptr, "finding with unknown rule id " + f.rule_id);
    FUZZ_CHECK(strict || !rule->strict_only,
               "strict-only rule " + f.rule_id + " reported without --strict");
    const cap::Severity want = strict && rule->strict_error ? cap::Severity::error : rule->severity;
    FUZZ_CHECK(f.severity == want, "rule " + f.rule_id + " reported with the wrong severity");
    FUZZ_CHECK(!(valid && rule->validate), "lint reports validate-rule " + f.rule_id + " (" +
                                               f.message + ") for a manifest validate() accepts");
  }

  const std::size_t errors = cap::count(findings, cap::Severity::error);
  const std::size_t warnings = cap::count(findings, cap::Severity::warning);
  FUZZ_CHECK(errors + warnings == findings.size(), "count() does not add up");
  FUZZ_CHECK(cap::has_errors(findings) == (errors > 0), "has_errors disagrees with count");

  const std::string text = cap::render_text(findings);
  FUZZ_CHECK(!text.empty() && text.back() == '\n', "render_text must end in a newline");
  std::size_t lines = 0;
  for (char c : text) lines += c == '\n';
  FUZZ_CHECK(lines == findings.size() + 1,
             "render_text: expected one line per finding plus the summary, got " +
                 std::to_string(lines) + " lines for " + std::to_string(findings.size()) +
                 " findings:\n" + text);

  for (int indent : {-1, 2}) {
    const std::string js = cap::render_json(findings, m.file, indent);
    FUZZ_CHECK(nlohmann::json::accept(js), "render_json produced invalid JSON:\n" + js);
    const auto j = nlohmann::json::parse(js);
    FUZZ_CHECK(j.is_object() && j.contains("findings") && j["findings"].is_array(),
               "render_json: no findings array:\n" + js);
    FUZZ_CHECK(j["findings"].size() == findings.size(), "render_json: wrong findings count");
    FUZZ_CHECK(j.value("errors", -1) == static_cast<long>(errors), "render_json: errors");
    FUZZ_CHECK(j.value("warnings", -1) == static_cast<long>(warnings), "render_json: warnings");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = comet::fuzz::as_view(data, size);
  auto parsed = cap::parse_manifest(text);
  auto loaded = cap::load_manifest(text);
  if (!parsed.ok()) {
    FUZZ_CHECK(!loaded.ok(), "load_manifest accepts what parse_manifest refuses");
    return 0;
  }
  const cap::Manifest& m = *parsed;
  const auto v = cap::validate(m);
  FUZZ_CHECK(loaded.ok() == v.ok(), "load_manifest disagrees with parse_manifest + validate: " +
                                        std::string(v.ok() ? "validate ok" : v.error().what()));

  // The rootfs callback: the input decides which interpreters "exist".
  const bool exists = size > 0 && (data[size - 1] & 1);
  for (bool strict : {false, true}) {
    cap::LintOptions opts;
    opts.strict = strict;
    check_findings(m, cap::lint(m, opts), strict, v.ok());
    opts.exists_in_rootfs = [exists](const std::string&) { return exists; };
    check_findings(m, cap::lint(m, opts), strict, v.ok());
  }

  // The capabilities annotation round trip (written for validated packs).
  if (!v.ok()) return 0;
  // Known finding (docs/reliability.md): validate() accepts fs paths that
  // are not UTF-8, and capabilities_to_json then throws nlohmann's
  // type_error 316 out of a public function that must not throw.
  std::string cj;
  try {
    cj = cap::capabilities_to_json(m.capabilities);
  } catch (const std::exception& e) {
    FUZZ_CHECK(!comet::fuzz::known_bugs_enabled() && !comet::fuzz::valid_utf8(text),
               std::string("capabilities_to_json threw: ") + e.what());
    return 0;
  }
  FUZZ_CHECK(nlohmann::json::accept(cj), "capabilities_to_json: invalid JSON:\n" + cj);
  auto back = cap::capabilities_from_json(cj);
  FUZZ_CHECK(back.ok(), "capabilities_from_json refuses capabilities_to_json output: " +
                            (back.ok() ? std::string() : back.error().what()) + "\n" + cj);
  const std::string cj2 = cap::capabilities_to_json(*back);
  FUZZ_CHECK(cj == cj2, "capabilities JSON round trip changed:\n" + cj + "\n" + cj2);
  return 0;
}
