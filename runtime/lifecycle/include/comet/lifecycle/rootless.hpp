// The OCI lifecycle as an ordinary user (docs/rootless.md): what create
// decides differently and how it says no. The mechanisms are in
// runtime/host: user_dirs.hpp (dirs, userns_refusal), id_maps.hpp (direct
// or newuidmap), cgroups.hpp (plan_rootless_cgroups).
#pragma once

#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/host/cgroups.hpp"
#include "comet/host/state_store.hpp"
#include "comet/oci/spec.hpp"

namespace comet::runtime {

// A layer that cannot be applied as this user (a cgroup limit, the user
// namespace itself): create and run exit with this, as `sandbox` does when
// it cannot start.
constexpr int kExitRefused = 125;

// "rootless: " + WHY: an error is_refusal() knows.
Error refusal(const std::string& why);
// "layer " + WHY: a confinement layer this kernel cannot give, for root
// and user alike (Landlock, the seccomp listener; confine.cpp). Also a
// refusal: exit 125.
Error layer_refusal(const std::string& why);
bool is_refusal(const Error& e);

// The limits RES sets that the rootless cgroup cannot hold: none when there
// is no cgroup (NOTE says why), or a controller the delegated subtree does
// not offer. One line naming the field, the reason and the way out.
Status check_rootless_limits(const CgroupPlan& plan, const std::string& note,
                             const oci::Resources* res);

// The container's processes: its cgroup's, or (no cgroup: rootless) every
// process in the init's pid namespace when it has one of its own. For ps,
// kill --all and delete.
std::vector<int> container_pids(const ContainerRecord& rec);

// The owner state and list show (runc's list: the name of the user the
// state belongs to): "" for root, else the user's name, "#UID" when the
// user has none. In a user namespace (rootless podman, pack run) uid 0 is
// the user that /proc/self/uid_map maps it to.
std::string container_owner();

// The record's "rootless" notes keys.
inline constexpr const char* kNoteCgroup = "cgroup";
inline constexpr const char* kNoteFsEvents = "fs-events";

}  // namespace comet::runtime
