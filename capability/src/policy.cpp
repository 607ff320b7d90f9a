#include "comet/capability/policy.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "comet/capability/compile.hpp"
#include "comet/capability/manifest.hpp"
#include "util.hpp"

namespace comet::capability {

std::string_view to_string(NetworkPolicy n) {
  switch (n) {
    case NetworkPolicy::open:
      return "open";
    case NetworkPolicy::egress:
      return "egress";
    case NetworkPolicy::none:
      return "none";
  }
  return "open";
}

std::string policy_to_json(const Policy& p) {
  nlohmann::ordered_json j;
  j["lockdown"] = p.lockdown;
  if (p.exec) j["exec"] = *p.exec;
  j["network"] = std::string(to_string(p.network));
  if (!p.profile.empty()) j["profile"] = p.profile;
  if (!p.deny.empty()) j["deny"] = p.deny;
  if (p.unix_allow) j["unix"] = {{"allow", *p.unix_allow}};
  if (p.git_own) j["git"] = {{"own", *p.git_own}};
  return j.dump();
}

namespace {

Error bad(const std::string& what) {
  return Error::msg("annotation " + std::string(kAnnotationPolicy) + ": " + what);
}

}  // namespace

Result<Policy> policy_from_json(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("expected a JSON object");
  Policy p;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    if (k == "lockdown") {
      if (!v.is_boolean()) return bad("lockdown: expected true or false");
      p.lockdown = v.get<bool>();
    } else if (k == "exec") {
      if (!v.is_array()) return bad("exec: expected an array of absolute paths");
      std::vector<std::string> paths;
      for (const auto& e : v) {
        if (!e.is_string() || e.get<std::string>().empty() || e.get<std::string>()[0] != '/')
          return bad("exec: expected an array of absolute paths");
        paths.push_back(e.get<std::string>());
      }
      p.exec = std::move(paths);
    } else if (k == "network") {
      std::string n = v.is_string() ? v.get<std::string>() : "";
      if (n == "open")
        p.network = NetworkPolicy::open;
      else if (n == "egress")
        p.network = NetworkPolicy::egress;
      else if (n == "none")
        p.network = NetworkPolicy::none;
      else
        return bad("network: expected \"none\", \"egress\" or \"open\"");
    } else if (k == "deny") {
      if (!v.is_array()) return bad("deny: expected an array of absolute paths");
      for (const auto& e : v) {
        if (!e.is_string() || e.get<std::string>().empty() || e.get<std::string>()[0] != '/')
          return bad("deny: expected an array of absolute paths");
        p.deny.push_back(e.get<std::string>());
      }
    } else if (k == "unix") {
      const char* want = "unix: expected {\"allow\": [absolute paths]}";
      if (!v.is_object() || v.size() != 1 || !v.contains("allow") || !v["allow"].is_array())
        return bad(want);
      std::vector<std::string> allow;
      for (const auto& e : v["allow"]) {
        if (!e.is_string() || e.get<std::string>().empty() || e.get<std::string>()[0] != '/')
          return bad(want);
        allow.push_back(e.get<std::string>());
      }
      p.unix_allow = std::move(allow);
    } else if (k == "git") {
      const char* want = "git: expected {\"own\": [absolute paths]}";
      if (!v.is_object() || v.size() != 1 || !v.contains("own") || !v["own"].is_array())
        return bad(want);
      std::vector<std::string> own;
      for (const auto& e : v["own"]) {
        if (!e.is_string() || e.get<std::string>().empty() || e.get<std::string>()[0] != '/')
          return bad(want);
        own.push_back(e.get<std::string>());
      }
      p.git_own = std::move(own);
    } else if (k == "profile") {
      if (!v.is_string()) return bad("profile: expected a string");
      p.profile = v.get<std::string>();
    } else {
      return bad("unknown key \"" + k + "\"");
    }
  }
  return p;
}

namespace {
// The org.soyaos.comet.* annotations a config may carry. Others in the
// namespace pass through (engines forward `org.soyaos.comet.*` patterns),
// but one a typo away from these is refused: `org.soyaos.comet.capabilites`
// would otherwise run the container unconfined while its config looks
// confined (issue 26, trap 1).
constexpr std::string_view kConfigAnnotations[] = {
    kAnnotationCapabilities, kAnnotationPolicy,  kAnnotationPack,
    kAnnotationProfile,      kAnnotationSeccomp, "org.soyaos.comet.events",
};

Status check_annotation_names(const std::map<std::string, std::string>& annotations) {
  const std::vector<std::string_view> known(std::begin(kConfigAnnotations),
                                            std::end(kConfigAnnotations));
  for (const auto& [key, value] : annotations) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string low = detail::lower(key);
    for (std::string_view k : known) {
      if (detail::edit_distance(low, k) > 3) continue;
      return Error::msg("annotation " + key + ": unknown " + detail::suggest(key, known) +
                        "; a misspelt annotation would leave the container unconfined");
    }
  }
  return {};
}
}  // namespace

Result<std::optional<Policy>> policy_from_annotations(
    const std::map<std::string, std::string>& annotations) {
  TRYV(check_annotation_names(annotations));
  std::optional<Policy> out;
  if (auto it = annotations.find(std::string(kAnnotationPolicy)); it != annotations.end()) {
    TRY(Policy p, policy_from_json(it->second));
    out = std::move(p);
  }
  if (auto it = annotations.find("org.soyaos.comet.capabilities"); it != annotations.end()) {
    TRY(Capabilities caps, capabilities_from_json(it->second));
    NetworkPolicy n = caps.egress.any               ? NetworkPolicy::open
                      : caps.egress.entries.empty() ? NetworkPolicy::none
                                                    : NetworkPolicy::egress;
    if (!out) out = Policy{};
    out->lockdown = true;
    // The stricter of the two: a policy annotation cannot open what the
    // capabilities close, nor the other way round.
    out->network = std::max(out->network, n);
    for (const EgressEntry& e : caps.egress.entries) {
      if (e.protocol == Protocol::udp || e.protocol == Protocol::dns) continue;
      out->tcp_connect_ports.push_back(static_cast<uint16_t>(e.port));
    }
    if (!caps.egress.entries.empty()) out->tcp_connect_ports.push_back(53);
    std::sort(out->tcp_connect_ports.begin(), out->tcp_connect_ports.end());
    out->tcp_connect_ports.erase(
        std::unique(out->tcp_connect_ports.begin(), out->tcp_connect_ports.end()),
        out->tcp_connect_ports.end());
  }
  return out;
}

namespace {

bool has_ns(const oci::Linux& l, const std::string& type) {
  return std::any_of(l.namespaces.begin(), l.namespaces.end(),
                     [&](const oci::Namespace& n) { return n.type == type; });
}

}  // namespace

Status tighten(oci::Spec& spec, const Policy& p) {
  if (spec.process) {
    spec.process->capabilities = oci::Capabilities{};
    spec.process->no_new_privileges = true;
  }
  if (spec.root) spec.root->readonly = true;
  if (!spec.linux_) spec.linux_ = oci::Linux{};
  oci::Linux& l = *spec.linux_;
  for (const char* ns : {"pid", "ipc", "uts", "mount", "cgroup"}) {
    if (!has_ns(l, ns)) l.namespaces.push_back(oci::Namespace{ns, ""});
  }
  // Network open (a sandbox profile on the host's network) keeps the
  // config's choice; anything stricter is enforced in a namespace of its own.
  if (p.network != NetworkPolicy::open && !has_ns(l, "network"))
    l.namespaces.push_back(oci::Namespace{"network", ""});
  if (p.network != NetworkPolicy::open) {
    // The allowlist (or nothing at all) is enforced inside a network
    // namespace; the host's own namespace can never be one.
    for (const auto& n : l.namespaces) {
      if (n.type == "network" && n.path == "/proc/1/ns/net")
        return Error::msg("policy: network " + std::string(to_string(p.network)) +
                          " cannot be enforced in the host's network namespace");
    }
  }
  return {};
}

}  // namespace comet::capability
