// Internal helpers shared by the manifest parser, validator, lint, matching
// and profiles: strings, sandbox paths, host names and per-value checks.
// Every check returns the problem text, or nullopt when the value is fine;
// callers add the "file:line:col: path: " prefix.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comet/oci/spec.hpp"

#include "comet/base/sys.hpp"

namespace comet::capability::detail {

std::string lower(std::string_view s);
// JSON-style double-quoted rendering for messages: "a\"b".
std::string quote(std::string_view s);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
// Full matches of the manifest's patterns (kNamePattern, kIdentPattern,
// kEnvKeyPattern, kSemverPattern in manifest.hpp), without std::regex.
bool matches_name(std::string_view s);
bool matches_ident(std::string_view s);
bool matches_env_key(std::string_view s);
bool matches_semver(std::string_view s);
std::size_t edit_distance(std::string_view a, std::string_view b);
// `(did you mean "x"?)` or `(known: a, b, c)`.
std::string suggest(std::string_view got, const std::vector<std::string_view>& known);

// Field path helpers: child("a", "b") = "a.b", index("a", 2) = "a[2]".
std::string child(const std::string& path, std::string_view key);
std::string index(const std::string& path, std::size_t i);

// --- sandbox paths (always absolute, '/'-separated, lexical only) ---------
// Lexical normalisation: collapse "//", drop ".", resolve ".." (never above
// "/"), drop a trailing '/'. Relative input is taken relative to `base`.
std::string normalize_path(std::string_view path, std::string_view base = "/");
// Absolute and already in normal form (no "//", ".", "..", trailing '/').
bool is_normal_absolute(std::string_view path);
bool has_dotdot(std::string_view path);
// Component-wise prefix: "/a/b/c" is under "/a/b" and "/a/b"; "/a/bc" is not.
using ::comet::path_under;
std::size_t path_depth(std::string_view path);  // "/" 0, "/a" 1, "/a/b" 2

// --- hosts ----------------------------------------------------------------
bool is_ipv4(std::string_view host);
bool is_ipv6(std::string_view host);
bool is_ip_literal(std::string_view host);
bool is_wildcard(std::string_view host);  // "*.suffix"
// Lower case, one trailing dot dropped, IPv6 in canonical (RFC 5952) form.
std::string canonical_host(std::string_view host);

// --- value checks -----------------------------------------------------------
std::optional<std::string> check_api_version(std::string_view v);
std::optional<std::string> check_name(std::string_view v);   // pack / profile name
std::optional<std::string> check_ident(std::string_view v);  // tool / example name
std::optional<std::string> check_semver(std::string_view v);
std::optional<std::string> check_interpreter(std::string_view v);
std::optional<std::string> check_entrypoint(std::string_view v);
std::optional<std::string> check_env_key(std::string_view v);
std::optional<std::string> check_host(std::string_view v);
// check_host, and never an address a pack may not reach
// (refused_literal_kind, comet/capability/address.hpp).
std::optional<std::string> check_egress_host(std::string_view v);
std::optional<std::string> check_port(long long v);
// Any absolute or relative path string is syntactically accepted in fs
// lists; these two are lint rules (and validate errors).
std::optional<std::string> fs_path_form_problem(std::string_view v);
std::optional<std::string> fs_path_reserved_problem(std::string_view v, bool write);

// An OCI mount entry (the compilers' one way to write one).
oci::Mount mount(std::string dest, std::string type, std::string source,
                 std::vector<std::string> options);

}  // namespace comet::capability::detail
