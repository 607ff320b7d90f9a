#include "util.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>

#include "comet/capability/address.hpp"
#include "comet/capability/manifest.hpp"

namespace comet::capability::detail {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

namespace {
bool is_lower_digit(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_alnum_dash(char c) {
  return is_alpha(c) || is_digit(c) || c == '-';
}
// "0" or [1-9][0-9]*, consumed from s at i.
bool numeric(std::string_view s, std::size_t& i) {
  if (i >= s.size() || !is_digit(s[i])) return false;
  if (s[i] == '0') {
    ++i;
    return i >= s.size() || !is_digit(s[i]);
  }
  while (i < s.size() && is_digit(s[i])) ++i;
  return true;
}
// A dot-separated list of [0-9a-zA-Z-]+ identifiers up to '+' or the end;
// `prerelease`: an all-digit identifier has no leading zero.
bool dotted(std::string_view s, std::size_t& i, bool prerelease) {
  for (;;) {
    std::size_t b = i;
    bool digits = true;
    for (; i < s.size() && is_alnum_dash(s[i]); ++i) digits = digits && is_digit(s[i]);
    if (i == b) return false;
    if (prerelease && digits && s[b] == '0' && i - b > 1) return false;
    if (i >= s.size() || s[i] != '.') return true;
    ++i;
  }
}
}  // namespace

// Hand-written: these run on every manifest and capabilities annotation,
// and std::regex cost ~1 ms per process to build (tests check them
// against the patterns, which the JSON Schema publishes).
bool matches_name(std::string_view s) {  // kNamePattern
  if (s.empty() || s.size() > 63) return false;
  for (char c : s)
    if (!is_lower_digit(c) && c != '-') return false;
  return true;
}

bool matches_ident(std::string_view s) {  // kIdentPattern
  if (s.empty() || s.size() > 63 || !is_lower_digit(s[0])) return false;
  for (char c : s)
    if (!is_lower_digit(c) && c != '-' && c != '_') return false;
  return true;
}

bool matches_env_key(std::string_view s) {  // kEnvKeyPattern
  if (s.empty() || is_digit(s[0])) return false;
  for (char c : s)
    if (!is_alpha(c) && !is_digit(c) && c != '_') return false;
  return true;
}

bool matches_semver(std::string_view s) {  // kSemverPattern
  std::size_t i = 0;
  for (int part = 0; part < 3; ++part) {
    if (part > 0 && (i >= s.size() || s[i++] != '.')) return false;
    if (!numeric(s, i)) return false;
  }
  if (i < s.size() && s[i] == '-' && !dotted(s, ++i, /*prerelease=*/true)) return false;
  if (i < s.size() && s[i] == '+' && !dotted(s, ++i, /*prerelease=*/false)) return false;
  return i == s.size();
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string suggest(std::string_view got, const std::vector<std::string_view>& known) {
  std::string_view best;
  // Close enough to be a typo: one edit in a short word, two in a longer.
  std::size_t best_d = got.size() <= 4 ? 2 : 3;
  for (auto k : known) {
    std::size_t d = edit_distance(lower(got), k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  if (!best.empty()) return "(did you mean " + quote(best) + "?)";
  std::vector<std::string> names(known.begin(), known.end());
  return "(known: " + join(names, ", ") + ")";
}

std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string index(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// --- paths -------------------------------------------------------------------

std::string normalize_path(std::string_view path, std::string_view base) {
  std::string full;
  if (path.empty() || path[0] != '/') {
    full = std::string(base) + "/" + std::string(path);
  } else {
    full = std::string(path);
  }
  std::vector<std::string_view> parts;
  std::string_view rest = full;
  while (!rest.empty()) {
    std::size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (auto p : parts) {
    out += '/';
    out += p;
  }
  return out.empty() ? "/" : out;
}

bool is_normal_absolute(std::string_view path) {
  return !path.empty() && path[0] == '/' && normalize_path(path) == path;
}

bool has_dotdot(std::string_view path) {
  std::string_view rest = path;
  while (true) {
    std::size_t slash = rest.find('/');
    if (rest.substr(0, slash) == "..") return true;
    if (slash == std::string_view::npos) return false;
    rest = rest.substr(slash + 1);
  }
}

std::size_t path_depth(std::string_view path) {
  return static_cast<std::size_t>(std::count(path.begin(), path.end(), '/')) -
         (path == "/" ? 1 : 0);
}

// --- hosts -------------------------------------------------------------------

bool is_ipv4(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  in_addr a{};
  return inet_pton(AF_INET, std::string(host).c_str(), &a) == 1;
}

bool is_ipv6(std::string_view host) {
  in6_addr a{};
  return host.find(':') != std::string_view::npos &&
         inet_pton(AF_INET6, std::string(host).c_str(), &a) == 1;
}

bool is_ip_literal(std::string_view host) {
  return is_ipv4(host) || is_ipv6(host);
}

bool is_wildcard(std::string_view host) {
  return host.size() > 2 && host.substr(0, 2) == "*.";
}

std::string canonical_host(std::string_view host) {
  std::string h = lower(host);
  if (is_ipv6(h)) {
    in6_addr a{};
    char buf[INET6_ADDRSTRLEN] = {};
    if (inet_pton(AF_INET6, h.c_str(), &a) == 1 && inet_ntop(AF_INET6, &a, buf, sizeof buf)) {
      return buf;
    }
    return h;
  }
  if (!h.empty() && h.back() == '.') h.pop_back();
  return h;
}

namespace {

bool is_dns_label(std::string_view l) {
  if (l.empty() || l.size() > 63) return false;
  if (l.front() == '-' || l.back() == '-') return false;
  return std::all_of(l.begin(), l.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
  });
}

bool all_digits_and_dots(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == '.' || std::isdigit(static_cast<unsigned char>(c));
  });
}

}  // namespace

std::optional<std::string> check_egress_host(std::string_view v) {
  if (auto kind = refused_literal_kind(v))
    return quote(v) + " is " + *kind + ": an egress entry can never name it";
  return check_host(v);
}

std::optional<std::string> check_host(std::string_view v) {
  const std::string got = ", got " + quote(v);
  if (v.empty()) return "expected a host name, got an empty string";
  if (v == "*") return "the host \"*\" is not allowed in an entry; write egress: [\"*\"] instead";
  if (v.find(':') != std::string_view::npos) {
    if (is_ipv6(v)) return std::nullopt;
    return "expected a host name or IP address (no port, no brackets)" + got;
  }
  std::string_view name = v;
  if (is_wildcard(name)) name.remove_prefix(2);
  if (name.find('*') != std::string_view::npos) {
    return "a wildcard must be a leading \"*.\" label" + got;
  }
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  if (all_digits_and_dots(name)) {
    if (!is_wildcard(v) && is_ipv4(name)) return std::nullopt;
    return "expected a host name or IP address" + got;
  }
  if (name.empty() || name.size() > 253) return "expected a host name" + got;
  std::string_view rest = name;
  while (true) {
    std::size_t dot = rest.find('.');
    if (!is_dns_label(rest.substr(0, dot))) return "expected a host name" + got;
    if (dot == std::string_view::npos) break;
    rest = rest.substr(dot + 1);
  }
  return std::nullopt;
}

// --- value checks ------------------------------------------------------------

std::optional<std::string> check_api_version(std::string_view v) {
  if (v == kApiVersion) return std::nullopt;
  return "expected " + quote(kApiVersion) + ", got " + quote(v);
}

std::optional<std::string> check_name(std::string_view v) {
  if (matches_name(v)) return std::nullopt;
  return "expected 1 to 63 of [a-z0-9-], got " + quote(v);
}

std::optional<std::string> check_ident(std::string_view v) {
  if (matches_ident(v)) return std::nullopt;
  return "expected 1 to 63 of [a-z0-9_-] starting with a letter or digit, got " + quote(v);
}

std::optional<std::string> check_semver(std::string_view v) {
  if (matches_semver(v)) return std::nullopt;
  return "expected a semantic version like 1.4.2, got " + quote(v);
}

std::optional<std::string> check_interpreter(std::string_view v) {
  if (is_normal_absolute(v) && v != "/") return std::nullopt;
  return "expected an absolute, normalised path to a program in the rootfs, got " + quote(v);
}

std::optional<std::string> check_entrypoint(std::string_view v) {
  if (!v.empty() && v[0] != '/' && !has_dotdot(v) &&
      normalize_path(v, "/workdir") == "/workdir/" + std::string(v)) {
    return std::nullopt;
  }
  return "expected a normalised path relative to /workdir, without \"..\", got " + quote(v);
}

std::optional<std::string> check_env_key(std::string_view v) {
  if (matches_env_key(v)) return std::nullopt;
  return "expected an environment variable name ([A-Za-z_][A-Za-z0-9_]*), got " + quote(v);
}

std::optional<std::string> check_port(long long v) {
  if (v >= 1 && v <= 65535) return std::nullopt;
  return "expected an integer 1..65535, got " + std::to_string(v);
}

std::optional<std::string> fs_path_form_problem(std::string_view v) {
  if (v.empty() || v[0] != '/') return quote(v) + " is not an absolute path";
  if (has_dotdot(v)) return quote(v) + " contains \"..\"";
  if (!is_normal_absolute(v)) {
    return quote(v) + " is not normalised (write " + quote(normalize_path(v)) + ")";
  }
  return std::nullopt;
}

std::optional<std::string> fs_path_reserved_problem(std::string_view v, bool write) {
  std::string p = normalize_path(v);
  if (write && p == kWorkdir) {
    return "/workdir holds the pack's own files and stays read-only; list a sub-path such as "
           "/workdir/out";
  }
  if (p == "/") return quote(v) + " is the sandbox root; name the directories the pack needs";
  for (std::string_view r : {"/proc", "/sys", "/dev"}) {
    if (path_under(p, r)) {
      return quote(v) + " is under " + std::string(r) + ", which the runtime sets up itself";
    }
  }
  return std::nullopt;
}

oci::Mount mount(std::string dest, std::string type, std::string source,
                 std::vector<std::string> options) {
  oci::Mount m;
  m.destination = std::move(dest);
  m.type = std::move(type);
  m.source = std::move(source);
  m.options = std::move(options);
  return m;
}

}  // namespace comet::capability::detail
