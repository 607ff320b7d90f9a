// Internal: pieces of the manifest parser shared with capabilities_from_json.
#pragma once

#include <string>

#include "comet/capability/manifest.hpp"
#include "yaml_read.hpp"

namespace comet::capability::detail {

// Parse a capabilities mapping found at `path` ("capabilities" in a
// manifest, "" in the annotation form).
Result<Capabilities> parse_capabilities(const Reader& r, const Field& f, const std::string& path);

// Per-value shape checks over a model (the parser applies the same checks
// while it reads). Returns the first problem, prefixed with m.where(path).
Status check_shape(const Manifest& m);

}  // namespace comet::capability::detail
