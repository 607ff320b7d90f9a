// The runtime-spec state document (runtime.md "State") and features.json
// (features.md). Plain data plus JSON rendering.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace comet::oci {

enum class ContainerStatus { kCreating, kCreated, kRunning, kPaused, kStopped };

const char* status_name(ContainerStatus s);  // "creating" "created" "running" "paused" "stopped"

struct State {
  std::string oci_version;  // the runtime-spec version this runtime implements
  std::string id;
  ContainerStatus status = ContainerStatus::kCreating;
  int pid = 0;  // omitted from JSON when the status is stopped
  std::string bundle;
  std::map<std::string, std::string> annotations;
};

// {"ociVersion":..,"id":..,"status":..,"pid":..,"bundle":..,"annotations":{..}}
std::string to_json(const State& st, int indent = 2);

// features.md: what this runtime implements. Filled in by runtime/, rendered here.
struct Features {
  std::string oci_version_min, oci_version_max;
  std::vector<std::string> hooks;
  std::vector<std::string> mount_options;
  std::vector<std::string> namespaces;
  std::vector<std::string> capabilities;
  bool cgroup_v1 = false, cgroup_v2 = false, cgroup_systemd = false, cgroup_systemd_user = false,
       cgroup_rdma = false;
  bool seccomp_enabled = false;
  std::vector<std::string> seccomp_actions, seccomp_operators, seccomp_archs, seccomp_known_flags,
      seccomp_supported_flags;
  bool apparmor = false, selinux = false, intel_rdt = false, idmap_mounts = false;
  bool net_devices = false;
  // linux.memoryPolicy (features-linux.md, v1.3): omitted when both empty.
  std::vector<std::string> memory_policy_modes, memory_policy_flags;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> potentially_unsafe_config_annotations;
};

std::string to_json(const Features& f, int indent = 2);

}  // namespace comet::oci
