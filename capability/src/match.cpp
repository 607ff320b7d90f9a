#include "comet/capability/match.hpp"

#include <cstdint>

#include "util.hpp"

namespace comet::capability {

std::string normalize_host(std::string_view host) {
  return detail::canonical_host(host);
}

bool host_matches(std::string_view pattern, std::string_view host) {
  std::string p = normalize_host(pattern);
  std::string h = normalize_host(host);
  if (h.empty() || p.empty()) return false;
  if (!detail::is_wildcard(p)) return p == h;
  if (detail::is_ip_literal(h)) return false;
  std::string_view suffix = std::string_view(p).substr(1);  // ".cdn.test"
  return h.size() > suffix.size() &&
         h.compare(h.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string to_string(const EgressEntry& e) {
  bool v6 = e.host.find(':') != std::string::npos;
  return (v6 ? "[" + e.host + "]" : e.host) + ":" + std::to_string(e.port) + ":" +
         std::string(to_string(e.protocol));
}

EgressDecision egress_allows(const Egress& policy, std::string_view host, int port,
                             Protocol proto) {
  EgressDecision d;
  std::optional<std::size_t> best;
  std::size_t best_rank = 0;  // exact: max; wildcard: suffix length
  for (std::size_t i = 0; i < policy.entries.size(); ++i) {
    const EgressEntry& e = policy.entries[i];
    if (e.port != port || e.protocol != proto || !host_matches(e.host, host)) continue;
    std::size_t rank = detail::is_wildcard(e.host) ? normalize_host(e.host).size() : SIZE_MAX;
    if (!best || rank > best_rank) {
      best = i;
      best_rank = rank;
    }
  }
  if (best) {
    d.allowed = true;
    d.index = best;
    d.entry = to_string(policy.entries[*best]);
    d.path = detail::index("capabilities.egress", *best);
  } else if (policy.any) {
    d.allowed = true;
    d.any = true;
    d.entry = "*";
    d.path = "capabilities.egress";
  } else {
    d.entry = "no match";
  }
  return d;
}

std::string_view to_string(Access a) {
  switch (a) {
    case Access::read:
      return "read";
    case Access::write:
      return "write";
    case Access::denied:
      break;
  }
  return "denied";
}

FsDecision fs_decision(const FsPolicy& policy, std::string_view path) {
  const std::string p = detail::normalize_path(path, kWorkdir);
  FsDecision d;
  d.entry = "no match";
  std::optional<std::size_t> best_depth;
  auto consider = [&](const std::string& raw, bool write, std::optional<std::size_t> idx) {
    if (raw.empty() || raw[0] != '/') return;  // a relative entry matches nothing
    std::string e = detail::normalize_path(raw);
    if (!detail::path_under(p, e)) return;
    std::size_t depth = detail::path_depth(e);
    bool better = !best_depth || depth > *best_depth ||
                  (depth == *best_depth && write && d.access != Access::write) ||
                  (depth == *best_depth && !write && d.implicit && idx);
    if (!better) return;
    best_depth = depth;
    d.access = write ? Access::write : Access::read;
    d.implicit = !idx;
    d.from_write = write;
    d.index = idx;
    d.entry = e;
    d.path =
        idx ? detail::index(write ? "capabilities.fs.write" : "capabilities.fs.read", *idx) : "";
  };
  consider(std::string(kWorkdir), false, std::nullopt);
  for (std::size_t i = 0; i < policy.read.size(); ++i) consider(policy.read[i], false, i);
  for (std::size_t i = 0; i < policy.write.size(); ++i) consider(policy.write[i], true, i);
  return d;
}

}  // namespace comet::capability
