// Runtime-wide settings in a file (docs/engines.md "Runtime settings"):
// what an engine cannot pass on a command line or in the environment
// (podman forwards neither to its OCI runtime). /etc/comet/runtime.yaml,
// or $COMET_RUNTIME_CONFIG; a missing file is no setting. Flat `key:
// value` lines and comments; anything else is a one-line error.
//
//   dns_upstream: 192.0.2.53:53,[2001:db8::53]:53   # the resolver's upstreams
#pragma once

#include <string>

#include "comet/base/result.hpp"

namespace comet {

struct RuntimeConfig {
  std::string path;          // the file read ("" when none)
  std::string dns_upstream;  // "" when not set
};

// Parses the text of a runtime config file (PATH names it in errors).
Result<RuntimeConfig> parse_runtime_config(const std::string& text, const std::string& path);
// Reads $COMET_RUNTIME_CONFIG or /etc/comet/runtime.yaml.
Result<RuntimeConfig> runtime_config();

}  // namespace comet
