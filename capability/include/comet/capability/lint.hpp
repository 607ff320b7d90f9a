// `pack lint`: consistency of capabilities, tools and examples.
//
// Pure: the facts lint needs from the filesystem (is the interpreter in
// the rootfs? is the entrypoint in the pack?) come through callbacks. Each rule has a stable id, a
// fixed severity (egress-wildcard-host alone is raised to error by --strict) and an explanation,
// also published in docs/lint-rules.md.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "comet/capability/manifest.hpp"

namespace comet::capability {

enum class Severity { error, warning };
std::string_view to_string(Severity s);  // "error" "warning"

struct Finding {
  std::string rule_id;  // "egress-uncovered-tool"
  Severity severity = Severity::error;
  std::string path;     // field path: "tools[0].url"
  std::string message;  // one line, as printed after "err   "
  std::string explanation;
  Loc loc;  // position of path in the manifest (line 0: unknown)
};

struct LintOptions {
  bool strict = false;
  // When set, runtime.interpreter is checked against the rootfs the pack
  // will run on (interpreter-missing). Receives the in-sandbox path.
  std::function<bool(const std::string&)> exists_in_rootfs;
  // When set, runtime.entrypoint is checked against the pack directory
  // (entrypoint-missing). Receives the entrypoint as the manifest writes it.
  std::function<bool(const std::string&)> exists_in_pack;
};

struct RuleInfo {
  std::string_view id;
  Severity severity;  // without --strict
  bool strict_only;   // only runs under --strict
  bool strict_error;  // raised to error under --strict
  bool validate;      // an error that validate() refuses too
  std::string_view summary;
  std::string_view explanation;
};

// Every rule, in the order lint runs them (and docs/lint-rules.md lists them).
const std::vector<RuleInfo>& lint_rules();
const RuleInfo* find_rule(std::string_view id);

// All findings, sorted by position in the manifest (stable).
std::vector<Finding> lint(const Manifest& m, const LintOptions& opts = {});

std::size_t count(const std::vector<Finding>& findings, Severity s);
bool has_errors(const std::vector<Finding>& findings);

// "1 error · 0 warnings" (U+00B7 middle dot, correct plurals).
std::string summary_line(std::size_t errors, std::size_t warnings);

// One line per finding, "err   <message>" / "warn  <message>", then the
// summary line; every line ends in '\n'.
std::string render_text(const std::vector<Finding>& findings);

// {"file":..., "findings":[{"rule","severity","path","line","column",
//  "message","explanation"}], "errors":N, "warnings":N}
std::string render_json(const std::vector<Finding>& findings, std::string_view file = "",
                        int indent = -1);

}  // namespace comet::capability
