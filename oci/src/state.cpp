// The runtime-spec state document (runtime.md "State") and the features
// document (features.md, features-linux.md), rendered with nlohmann.
#include "comet/oci/state.hpp"

#include <string>

#include <nlohmann/json.hpp>

namespace comet::oci {
namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& j, int indent) {
  try {
    return j.dump(indent < 0 ? -1 : indent, ' ', false, ojson::error_handler_t::replace);
  } catch (...) {
    return std::string();  // only std::bad_alloc can get here
  }
}

ojson string_map(const std::map<std::string, std::string>& m) {
  ojson j = ojson::object();
  for (const auto& [k, v] : m) j[k] = v;
  return j;
}

ojson features_json(const Features& f) {
  ojson j = ojson::object();
  j["ociVersionMin"] = f.oci_version_min;
  j["ociVersionMax"] = f.oci_version_max;
  j["hooks"] = f.hooks;
  j["mountOptions"] = f.mount_options;

  ojson linux_ = ojson::object();
  linux_["namespaces"] = f.namespaces;
  linux_["capabilities"] = f.capabilities;
  linux_["cgroup"] = ojson{{"v1", f.cgroup_v1},
                           {"v2", f.cgroup_v2},
                           {"systemd", f.cgroup_systemd},
                           {"systemdUser", f.cgroup_systemd_user},
                           {"rdma", f.cgroup_rdma}};
  ojson seccomp = ojson::object();
  seccomp["enabled"] = f.seccomp_enabled;
  if (f.seccomp_enabled) {
    seccomp["actions"] = f.seccomp_actions;
    seccomp["operators"] = f.seccomp_operators;
    seccomp["archs"] = f.seccomp_archs;
    seccomp["knownFlags"] = f.seccomp_known_flags;
    seccomp["supportedFlags"] = f.seccomp_supported_flags;
  }
  linux_["seccomp"] = std::move(seccomp);
  linux_["apparmor"] = ojson{{"enabled", f.apparmor}};
  linux_["selinux"] = ojson{{"enabled", f.selinux}};
  linux_["intelRdt"] = ojson{{"enabled", f.intel_rdt}};
  if (!f.memory_policy_modes.empty() || !f.memory_policy_flags.empty())
    linux_["memoryPolicy"] =
        ojson{{"modes", f.memory_policy_modes}, {"flags", f.memory_policy_flags}};
  linux_["mountExtensions"] = ojson{{"idmap", ojson{{"enabled", f.idmap_mounts}}}};
  linux_["netDevices"] = ojson{{"enabled", f.net_devices}};
  j["linux"] = std::move(linux_);

  if (!f.annotations.empty()) j["annotations"] = string_map(f.annotations);
  if (!f.potentially_unsafe_config_annotations.empty())
    j["potentiallyUnsafeConfigAnnotations"] = f.potentially_unsafe_config_annotations;
  return j;
}

}  // namespace

const char* status_name(ContainerStatus s) {
  switch (s) {
    case ContainerStatus::kCreating:
      return "creating";
    case ContainerStatus::kCreated:
      return "created";
    case ContainerStatus::kRunning:
      return "running";
    case ContainerStatus::kPaused:
      return "paused";
    case ContainerStatus::kStopped:
      return "stopped";
  }
  return "unknown";
}

std::string to_json(const State& st, int indent) {
  try {
    ojson j = ojson::object();
    j["ociVersion"] = st.oci_version;
    j["id"] = st.id;
    j["status"] = status_name(st.status);
    j["pid"] = st.pid;  // runc prints 0 for a stopped container
    j["bundle"] = st.bundle;
    if (!st.annotations.empty()) j["annotations"] = string_map(st.annotations);
    return dump(j, indent);
  } catch (...) {
    return std::string();
  }
}

std::string to_json(const Features& f, int indent) {
  try {
    return dump(features_json(f), indent);
  } catch (...) {
    return std::string();
  }
}

}  // namespace comet::oci
