// OCI hooks: fork+exec path with args/env, the container state JSON on
// stdin, and a timeout after which the hook is killed.
#pragma once

#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/oci/spec.hpp"

namespace comet::runtime {

// Runs one hook. Errors: "hook /path exited with status 3",
// "hook /path: timed out after 2s", "hook /path: exec: ENOENT".
Status run_hook(const oci::Hook& hook, const std::string& state_json) noexcept;
// Runs hooks in order and stops at the first failure (every kind but
// poststop: runtime-spec "the runtime MUST generate an error").
Status run_hooks(const std::vector<oci::Hook>& hooks, const std::string& kind,
                 const std::string& state_json) noexcept;
// Runs every hook whatever the others did and warns for each failure
// (poststop: "the failure MUST be logged ... the remaining hooks ... run").
// Returns how many failed.
int run_hooks_warning(const std::vector<oci::Hook>& hooks, const std::string& kind,
                      const std::string& state_json) noexcept;

}  // namespace comet::runtime
