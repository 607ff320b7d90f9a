// validate(): the parser's per-value checks again (for manifests built in
// code), then the lint rules marked `validate` (tier consistency, fs path
// form, duplicate names), which a pack cannot run without.
#include "comet/capability/lint.hpp"
#include "manifest_internal.hpp"
#include "util.hpp"

namespace comet::capability {

using detail::index;

namespace detail {

namespace {

struct Checker {
  const Manifest& m;
  std::optional<Error> first;

  void check(const std::optional<std::string>& problem, const std::string& path) {
    if (problem && !first) first = Error::msg(m.where(path) + *problem);
  }
};

}  // namespace

Status check_shape(const Manifest& m) {
  Checker c{m, std::nullopt};
  c.check(check_api_version(m.api_version), "apiVersion");
  c.check(check_name(m.name), "name");
  c.check(check_semver(m.version), "version");
  c.check(check_interpreter(m.runtime.interpreter), "runtime.interpreter");
  c.check(check_entrypoint(m.runtime.entrypoint), "runtime.entrypoint");
  for (const auto& [k, v] : m.runtime.env) c.check(check_env_key(k), "runtime.env." + k);
  for (std::size_t i = 0; i < m.tools.size(); ++i) {
    const Tool& t = m.tools[i];
    const std::string path = index("tools", i);
    c.check(check_ident(t.name), path + ".name");
    const ToolKindInfo& k = info(t.kind);
    if (k.network) {
      if (!t.path.empty())
        c.check(std::string(k.name) + " takes a url, not a path", path + ".path");
      auto ep = parse_tool_url(t.kind, t.url);
      if (!ep.ok()) c.check(ep.error().message(), path + ".url");
    } else {
      if (!t.url.empty()) c.check(std::string(k.name) + " takes a path, not a url", path + ".url");
      if (t.path.empty()) c.check(std::string(k.name) + " needs a path", path);
    }
  }
  for (std::size_t i = 0; i < m.examples.size(); ++i) {
    const Example& e = m.examples[i];
    const std::string path = index("examples", i);
    c.check(check_ident(e.name), path + ".name");
    for (std::size_t j = 0; j < e.covers.size(); ++j) {
      auto cover = parse_cover(e.covers[j]);
      if (!cover.ok()) c.check(cover.error().message(), index(path + ".covers", j));
    }
  }
  const Egress& eg = m.capabilities.egress;
  if (eg.any && !eg.entries.empty()) {
    c.check("\"*\" must be the only entry", "capabilities.egress");
  }
  for (std::size_t i = 0; i < eg.entries.size(); ++i) {
    const std::string path = index("capabilities.egress", i);
    c.check(check_egress_host(eg.entries[i].host), path + ".host");
    c.check(check_port(eg.entries[i].port), path + ".port");
  }
  if (!m.profile.empty()) c.check(check_name(m.profile), "profile");
  if (c.first) return *c.first;
  return {};
}

}  // namespace detail

namespace {

// Lint messages name their subject ("capabilities.fs.read[0] ... "); after
// the "path: " prefix of an error that would say it twice.
std::string without_subject(const std::string& path, const std::string& msg) {
  std::size_t sp = msg.find(' ');
  if (sp == std::string::npos) return msg;
  const std::string subject = msg.substr(0, sp);
  bool prefix = path == subject ||
                (path.size() > subject.size() && path.compare(0, subject.size(), subject) == 0 &&
                 (path[subject.size()] == '.' || path[subject.size()] == '['));
  return prefix ? msg.substr(sp + 1) : msg;
}

}  // namespace

Status validate(const Manifest& m) {
  try {
    TRYV(detail::check_shape(m));
    for (const Finding& f : lint(m)) {
      const RuleInfo* r = find_rule(f.rule_id);
      if (!r || (r->validate && f.severity == Severity::error)) {
        return Error::msg(m.where(f.path) + without_subject(f.path, f.message));
      }
    }
    return {};
  } catch (const std::exception& e) {
    return Error::msg(m.file + ": " + e.what());
  }
}

}  // namespace comet::capability
