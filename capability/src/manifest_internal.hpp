// Internal: pieces of the manifest parser shared with capabilities_from_json.
#pragma once

#include <optional>
#include <string>

#include "comet/capability/manifest.hpp"
#include "yaml_read.hpp"

namespace comet::capability::detail {

// Parse a capabilities mapping found at `path` ("capabilities" in a
// manifest, "" in the annotation form).
Result<Capabilities> parse_capabilities(const Reader& r, const Field& f, const std::string& path);

// A size as resources: (and sandbox.yaml's limits:) write it: "64Mi", "1G",
// "512k", 1048576: bytes; nullopt for anything else.
std::optional<long long> parse_size(const std::string& t);

// Per-value shape checks over a model (the parser applies the same checks
// while it reads). Returns the first problem, prefixed with m.where(path).
Status check_shape(const Manifest& m);

}  // namespace comet::capability::detail
