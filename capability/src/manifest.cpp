// Enum tables, Manifest helpers, tool URLs and example covers.
#include <algorithm>
#include <cctype>

#include "comet/capability/manifest.hpp"
#include "util.hpp"

namespace comet::capability {

using detail::quote;

namespace {

const std::vector<ToolKindInfo> kKinds = {
    {ToolKind::http_get, "builtin.http_get", true, false, false},
    {ToolKind::http_head, "builtin.http_head", true, false, false},
    {ToolKind::http_post, "builtin.http_post", true, true, false},
    {ToolKind::http_put, "builtin.http_put", true, true, false},
    {ToolKind::http_patch, "builtin.http_patch", true, true, false},
    {ToolKind::http_delete, "builtin.http_delete", true, true, false},
    {ToolKind::tcp_connect, "builtin.tcp_connect", true, true, false},
    {ToolKind::udp_send, "builtin.udp_send", true, true, false},
    {ToolKind::dns_query, "builtin.dns_query", true, false, false},
    {ToolKind::fs_read, "builtin.fs_read", false, false, false},
    {ToolKind::fs_write, "builtin.fs_write", false, false, true},
};

const std::vector<std::string_view> kProtocols = {"https", "http", "tcp", "udp", "dns", "tls"};
const std::vector<std::string_view> kTiers = {"read-only", "side-effect", "unrestricted"};

}  // namespace

const std::vector<ToolKindInfo>& tool_kinds() {
  return kKinds;
}

const ToolKindInfo& info(ToolKind kind) {
  for (const auto& k : kKinds) {
    if (k.kind == kind) return k;
  }
  return kKinds.front();  // unreachable: every enumerator is in the table
}

std::optional<ToolKind> parse_tool_kind(std::string_view name) {
  for (const auto& k : kKinds) {
    if (k.name == name) return k.kind;
  }
  return std::nullopt;
}

std::string_view to_string(ToolKind k) {
  return info(k).name;
}
std::string_view to_string(Protocol p) {
  return kProtocols[static_cast<std::size_t>(p)];
}
std::string_view to_string(Tier t) {
  return kTiers[static_cast<std::size_t>(t)];
}

std::optional<Protocol> parse_protocol(std::string_view s) {
  for (std::size_t i = 0; i < kProtocols.size(); ++i) {
    if (kProtocols[i] == s) return static_cast<Protocol>(i);
  }
  return std::nullopt;
}

std::optional<Tier> parse_tier(std::string_view s) {
  for (std::size_t i = 0; i < kTiers.size(); ++i) {
    if (kTiers[i] == s) return static_cast<Tier>(i);
  }
  return std::nullopt;
}

const std::vector<std::string_view>& protocol_names() {
  return kProtocols;
}
const std::vector<std::string_view>& tier_names() {
  return kTiers;
}

Loc Manifest::loc(const std::string& path) const {
  std::string p = path;
  while (true) {
    if (auto it = locations.find(p); it != locations.end()) return it->second;
    std::size_t cut = p.find_last_of(".[");
    if (cut == std::string::npos || cut == 0) break;
    p.resize(cut);
  }
  return Loc{};
}

std::string Manifest::where(const std::string& path) const {
  Loc l = loc(path);
  std::string out;
  if (!file.empty()) {
    out = file;
    if (l.line > 0) out += ":" + std::to_string(l.line) + ":" + std::to_string(l.column);
    out += ": ";
  }
  if (!path.empty()) out += path + ": ";
  return out;
}

// --- tool URLs ----------------------------------------------------------------

namespace {

struct Authority {
  std::string host;
  std::optional<int> port;
};

Result<Authority> split_authority(std::string_view auth, std::string_view whole) {
  const std::string bad = "expected scheme://host[:port][/path], got " + quote(whole);
  if (auth.find('@') != std::string_view::npos) {
    return Error::msg("a tool URL must not carry credentials, got " + quote(whole));
  }
  Authority a;
  std::string_view port;
  if (!auth.empty() && auth[0] == '[') {
    std::size_t close = auth.find(']');
    if (close == std::string_view::npos) return Error::msg(bad);
    a.host = std::string(auth.substr(1, close - 1));
    std::string_view rest = auth.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return Error::msg(bad);
      port = rest.substr(1);
      if (port.empty()) return Error::msg(bad);
    }
    if (!detail::is_ipv6(a.host)) return Error::msg(bad);
  } else {
    std::size_t colon = auth.find(':');
    a.host = std::string(auth.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = auth.substr(colon + 1);
      if (port.empty()) return Error::msg(bad);
    }
  }
  if (!port.empty()) {
    if (port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return Error::msg("expected a port 1..65535 in " + quote(whole));
    }
    int p = std::stoi(std::string(port));
    if (p < 1 || p > 65535) return Error::msg("expected a port 1..65535 in " + quote(whole));
    a.port = p;
  }
  if (a.host.empty()) return Error::msg(bad);
  if (a.host.find('*') != std::string::npos) {
    return Error::msg("a tool URL names one host, not a wildcard, got " + quote(whole));
  }
  if (auto problem = detail::check_host(a.host)) return Error::msg(*problem);
  return a;
}

}  // namespace

Result<Endpoint> parse_tool_url(ToolKind kind, std::string_view url) {
  const ToolKindInfo& k = info(kind);
  if (!k.network) {
    return Error::msg(std::string(k.name) + " takes a path, not a url");
  }
  std::size_t sep = url.find("://");
  if (sep == std::string_view::npos || sep == 0) {
    return Error::msg("expected an absolute URL such as https://host/path, got " + quote(url));
  }
  std::string scheme = detail::lower(url.substr(0, sep));
  std::vector<std::string_view> allowed;
  switch (kind) {
    case ToolKind::tcp_connect:
      allowed = {"tcp"};
      break;
    case ToolKind::udp_send:
      allowed = {"udp"};
      break;
    case ToolKind::dns_query:
      allowed = {"dns"};
      break;
    default:
      allowed = {"https", "http"};
      break;
  }
  if (std::find(allowed.begin(), allowed.end(), scheme) == allowed.end()) {
    std::vector<std::string> names;
    for (auto a : allowed) names.push_back(std::string(a) + "://");
    return Error::msg(std::string(k.name) + " expects a " + detail::join(names, " or ") +
                      " URL, got " + quote(url));
  }
  std::string_view rest = url.substr(sep + 3);
  std::size_t end = rest.find_first_of("/?#");
  TRY(Authority a, split_authority(rest.substr(0, end), url));
  Endpoint e;
  e.protocol = *parse_protocol(scheme);
  e.host = detail::lower(a.host);
  if (a.port) {
    e.port = *a.port;
  } else if (e.protocol == Protocol::https) {
    e.port = 443;
  } else if (e.protocol == Protocol::http) {
    e.port = 80;
  } else if (e.protocol == Protocol::dns) {
    e.port = 53;
  } else {
    return Error::msg(scheme + ":// URLs need an explicit port, got " + quote(url));
  }
  if (end != std::string_view::npos) e.path = std::string(rest.substr(end));
  return e;
}

// --- covers ---------------------------------------------------------------------

Result<Cover> parse_cover(std::string_view text) {
  const std::string bad =
      "expected \"egress:HOST:PORT\", \"egress:*\", \"fs.read:PATH\" or \"fs.write:PATH\", got " +
      quote(text);
  Cover c;
  std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return Error::msg(bad);
  std::string_view kind = text.substr(0, colon);
  std::string_view rest = text.substr(colon + 1);
  if (kind == "fs.read" || kind == "fs.write") {
    c.kind = kind == "fs.read" ? Cover::Kind::fs_read : Cover::Kind::fs_write;
    if (rest.empty() || rest[0] != '/') {
      return Error::msg("expected an absolute path after " + std::string(kind) + ":, got " +
                        quote(text));
    }
    c.path = std::string(rest);
    return c;
  }
  if (kind != "egress") return Error::msg(bad);
  c.kind = Cover::Kind::egress;
  if (rest == "*") {
    c.any = true;
    return c;
  }
  std::string_view host, port;
  if (!rest.empty() && rest[0] == '[') {
    std::size_t close = rest.find("]:");
    if (close == std::string_view::npos) return Error::msg(bad);
    host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
  } else {
    std::size_t last = rest.rfind(':');
    if (last == std::string_view::npos) return Error::msg(bad);
    host = rest.substr(0, last);
    port = rest.substr(last + 1);
  }
  if (host.empty() || port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    return Error::msg(bad);
  }
  if (auto problem = detail::check_host(host)) return Error::msg(*problem);
  c.host = std::string(host);
  c.port = std::stoi(std::string(port));
  if (auto problem = detail::check_port(c.port)) return Error::msg(*problem);
  return c;
}

std::string to_string(const Cover& c) {
  switch (c.kind) {
    case Cover::Kind::fs_read:
      return "fs.read:" + c.path;
    case Cover::Kind::fs_write:
      return "fs.write:" + c.path;
    case Cover::Kind::egress:
      break;
  }
  if (c.any) return "egress:*";
  bool v6 = c.host.find(':') != std::string::npos;
  return "egress:" + (v6 ? "[" + c.host + "]" : c.host) + ":" + std::to_string(c.port);
}

}  // namespace comet::capability
