// Spec -> ChildContext (pure apart from reading nothing; no syscalls).
#pragma once

#include <string>

#include "comet/base/result.hpp"
#include "comet/lifecycle/child.hpp"
#include "comet/oci/spec.hpp"

namespace comet::runtime {

struct PlanInputs {
  std::string id;
  std::string bundle;  // absolute
  std::string rootfs;  // absolute, resolved
  bool no_pivot = false;
  bool no_new_keyring = false;
  int preserve_fds = 0;
  HostFacilities host{};  // AppArmor, SELinux, resctrl (detect_host_facilities())
};

Result<ChildContext> plan_child(const oci::Spec& spec, const PlanInputs& in);
int namespace_flag(const std::string& type);

}  // namespace comet::runtime
