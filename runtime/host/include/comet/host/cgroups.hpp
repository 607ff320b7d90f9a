// cgroups on v1, v2 and hybrid hosts (v1 controllers plus cgroup2 at
// /sys/fs/cgroup/unified). The plan is data (which directory in which
// hierarchy); the rest writes cgroupfs files.
//
// Path rules follow runc's cgroupfs manager: an absolute cgroupsPath is taken
// from each hierarchy's root, a relative one (and the default "<id>") from
// the runtime's own cgroup in that hierarchy.
#pragma once

#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/oci/spec.hpp"

namespace comet::runtime {

struct CgroupHierarchy {
  std::string mountpoint;                // /sys/fs/cgroup/memory
  std::vector<std::string> controllers;  // {"memory"}; v2: what cgroup.controllers offers
  bool v2 = false;
  std::string dir;  // the container's directory in this hierarchy
};

struct CgroupPlan {
  std::vector<CgroupHierarchy> hierarchies;
  bool v2_only = false;  // a pure cgroup2 host
  std::string freezer_dir;
  bool freezer_v2 = false;
  std::vector<std::string> dirs() const;
  const CgroupHierarchy* find(const std::string& controller) const;
};

// Reads /proc/self/mountinfo and /proc/self/cgroup.
//
// Where a cgroup2 hierarchy exists (v2 or hybrid), the container lives in
// it (born there with CLONE_INTO_CGROUP, frozen there, device rules as an
// eBPF program there). The v1 hierarchies are joined, all of them, only
// when RES sets a limit that a v1 controller enforces: on a hybrid host
// joining v1 costs the create one RCU grace period (~10 ms) however many
// hierarchies it joins, so it is paid only when it buys something. On a
// pure v1 host every hierarchy is joined, as runc does. EVERY_V1: join every
// v1 hierarchy on a hybrid host too, as runc does there (an OCI create: the
// device rules are then in v1 devices.list as well as in the eBPF program).
Result<CgroupPlan> plan_cgroups(const std::string& cgroups_path, const std::string& id,
                                const oci::Resources* res = nullptr, bool every_v1 = false);
// An ordinary user's cgroup (docs/rootless.md), as runc and crun choose it
// under a delegating manager: cgroupsPath when it lies in a cgroup2 subtree
// this user may write (delegated), else "<id>" below the caller's own
// cgroup when that one is delegated, else none. Only cgroup2: v1
// hierarchies are never delegated. A delegated directory is one whose
// parent this user can write and where this user can also write
// cgroup.procs of the common ancestor of its own cgroup and the new one
// (what the kernel checks to move or clone a process there).
struct RootlessCgroup {
  CgroupPlan plan;   // empty: no cgroup
  std::string note;  // for state: "DIR (delegated)" or "none (not delegated)"
};
RootlessCgroup plan_rootless_cgroups(const std::string& cgroups_path, const std::string& id);
// The controllers RES's limits need, by their cgroup2 names ("memory",
// "cpu", "cpuset", "pids", "io", "hugetlb", plus "unified:KEY" and
// "network"/"rdma"). Device rules are not limits: see docs/rootless.md.
std::vector<std::string> limit_controllers(const oci::Resources& res);
// The controllers of a cgroup2 directory: FILE cgroup.controllers (what it
// has), or cgroup.subtree_control (what its children get).
std::vector<std::string> cgroup2_controllers(const std::string& dir,
                                             const char* file = "cgroup.controllers");

// v1 controllers RES needs ("memory", "pids", ...).
std::vector<std::string> needed_v1_controllers(const oci::Resources* res);
// Drops the v1 hierarchies that hold no controller RES needs (cgroup2 is
// kept): a sandbox's cgroups are for its limits, and each v1 directory is a
// mkdir, a cgroup.procs write and an rmdir (cpuset's mkdir alone ~3 ms).
void keep_needed_v1(CgroupPlan& plan, const oci::Resources& res);
bool is_cgroup2_dir(const std::string& dir);

// mkdir every directory (v1 cpuset gets its parent's cpus/mems first).
Status create_cgroups(const CgroupPlan& plan);
// DEVICE_FILTER false: the device rules are not attached (an ordinary user
// cannot load the eBPF program; docs/rootless.md). Device rules go to the
// cgroup2 eBPF program and, when the plan has a v1 devices hierarchy, to its
// devices.deny ("a" first) and devices.allow.
Status apply_resources(const CgroupPlan& plan, const oci::Resources& res,
                       bool device_filter = true);
Status join_cgroups(const CgroupPlan& plan, int pid, bool skip_v2 = false);
// rmdir every directory, retrying briefly while the last tasks leave.
Status destroy_cgroups(const std::vector<std::string>& dirs);
// Move the calling process to the root of every cgroup hierarchy mounted
// at its root (mountinfo root "/"), so a helper that outlives its caller
// never keeps the caller's cgroup busy. Best effort; returns how many moves
// succeeded (0 when it was at every root already: no write then).
int move_self_to_root_cgroups();
// Where the cgroup2 hierarchy is mounted (its root), or "" when it is not.
std::string cgroup2_mountpoint();
// The pids in a container's cgroup (from the first dir that lists them).
std::vector<int> cgroup_pids(const std::vector<std::string>& dirs);
Status freeze(const std::string& dir, bool v2, bool frozen);
bool cgroup_frozen(const std::string& dir, bool v2);

}  // namespace comet::runtime
