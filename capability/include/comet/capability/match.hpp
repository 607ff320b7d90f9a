// Matching a request against a capabilities block: which entry decides.
// Pure functions, shared by `explain`, lint and the runtime's violation
// reports ("the matching manifest entry, or no match").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "comet/capability/manifest.hpp"

namespace comet::capability {

// Lower case, one trailing dot dropped, IPv6 in canonical form.
std::string normalize_host(std::string_view host);

// Does an egress host pattern match a host? Exact (case-insensitive,
// trailing dot ignored), or "*.cdn.test" matching strict subdomains of
// cdn.test at any depth (a.cdn.test, a.b.cdn.test) but not cdn.test itself
// and never an IP literal.
bool host_matches(std::string_view pattern, std::string_view host);

struct EgressDecision {
  bool allowed = false;
  bool any = false;                  // decided by egress "*"
  std::optional<std::size_t> index;  // the deciding entry in policy.entries
  std::string entry;                 // "api.openai.com:443:https", "*" or "no match"
  std::string path;                  // "capabilities.egress[0]", "capabilities.egress" or ""
};

// Host, port and protocol must all match. An exact host entry decides over a
// wildcard one, a longer wildcard suffix over a shorter, any entry over "*".
EgressDecision egress_allows(const Egress& policy, std::string_view host, int port, Protocol proto);
inline EgressDecision egress_allows(const Capabilities& caps, std::string_view host, int port,
                                    Protocol proto) {
  return egress_allows(caps.egress, host, port, proto);
}

// "api.openai.com:443:https" ("[::1]:53:dns" for IPv6).
std::string to_string(const EgressEntry& e);

enum class Access { denied, read, write };
std::string_view to_string(Access a);  // "denied" "read" "write"

struct FsDecision {
  Access access = Access::denied;
  bool implicit = false;             // decided by the always-readable /workdir
  bool from_write = false;           // index is into fs.write (else fs.read)
  std::optional<std::size_t> index;  // the deciding entry
  std::string entry;                 // "/workdir/out", "/workdir" or "no match"
  std::string path;                  // "capabilities.fs.write[0]" or ""
};

// Prefix match on whole path components: /workdir/out/foo.json is under
// /workdir/out, /workdir/outside is not. The longest matching entry decides
// (so a read entry inside a write entry makes that subtree read-only); at
// equal length write decides over read. /workdir is always readable. A
// relative path is taken relative to /workdir (the sandbox cwd) and every
// path is normalised lexically first.
FsDecision fs_decision(const FsPolicy& policy, std::string_view path);
inline FsDecision fs_decision(const Capabilities& caps, std::string_view path) {
  return fs_decision(caps.fs, path);
}

}  // namespace comet::capability
