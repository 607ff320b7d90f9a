// Builders of runtime-spec seccomp sections (oci::Seccomp) for the seccomp
// unit tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comet/oci/spec.hpp"

namespace comet::test {

inline oci::SeccompSyscall rule(std::vector<std::string> names, std::string action,
                                std::vector<oci::SeccompArg> args = {},
                                std::optional<std::uint32_t> errno_ret = std::nullopt) {
  oci::SeccompSyscall s;
  s.names = std::move(names);
  s.action = std::move(action);
  s.args = std::move(args);
  s.errno_ret = errno_ret;
  return s;
}

inline oci::SeccompArg arg(std::uint32_t index, std::string op, std::uint64_t value = 0,
                           std::uint64_t value_two = 0) {
  oci::SeccompArg a;
  a.index = index;
  a.op = std::move(op);
  a.value = value;
  a.value_two = value_two;
  return a;
}

inline oci::Seccomp profile(std::string default_action,
                            std::vector<oci::SeccompSyscall> rules = {}) {
  oci::Seccomp s;
  s.default_action = std::move(default_action);
  s.syscalls = std::move(rules);
  return s;
}

}  // namespace comet::test
