// Mounts as a plan of data (made in the parent, testable without root) and
// an executor that runs in the container child before pivot_root.
//
// Every destination is resolved inside the rootfs with openat2(2)
// RESOLVE_IN_ROOT and mounted through /proc/self/fd/N, so a symlink in the
// image can never redirect a mount onto the host (CVE-2025-31133,
// CVE-2025-52565 class).
#pragma once

#include <string>
#include <vector>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"
#include "comet/oci/spec.hpp"

namespace comet::runtime {

struct MountOptions {
  unsigned long flags = 0;        // MS_* for the mount itself (no propagation)
  unsigned long propagation = 0;  // MS_SHARED|MS_PRIVATE|MS_SLAVE|MS_UNBINDABLE (+MS_REC)
  unsigned long long rec_attr_set = 0, rec_attr_clr = 0;  // rro, rnosuid...: mount_setattr
  std::string data;                                       // fs-specific options, comma separated
  bool bind = false;
  bool recursive_bind = false;
  bool tmpcopyup = false;
  bool link = false;       // "x-comet.link": a bind of a symlink onto itself (mount_link)
  bool if_exists = false;  // "x-comet.if-exists": skipped when the target is gone
  // "x-comet.nofollow": the source is opened following no symlink
  // (RESOLVE_NO_SYMLINKS) and bound through that fd (child_mounts.cpp)
  bool nofollow = false;
  // "x-comet.or-rbind": an overlay the kernel refuses is a read-only rbind
  // of the destination's host path instead (the sandbox's overlay views,
  // profile_compile.cpp overlay_view: in a user namespace, a mount the host
  // made beneath the directory since the plan is locked there, and an
  // overlay over it is EINVAL)
  bool or_rbind = false;
  // "x-comet.whiteout=NAME" (an overlay's): the child makes its first
  // lowerdir (under the sandbox's own tmpfs) and a whiteout NAME in it, so
  // that the overlay never shows NAME from the host's directory, whenever
  // the host makes it (a denied file's temporary copies: shadow+, ...)
  std::vector<std::string> whiteouts;
  bool idmap = false;   // "idmap" / "ridmap": an idmapped bind mount
  bool ridmap = false;  // "ridmap": the mapping on every submount too
};

// Parse an OCI mount option list with libmount's Linux option map.
// Unknown options become fs data (as runc does).
Result<MountOptions> parse_mount_options(const std::vector<std::string>& opts);

struct MountOp {
  std::string source;  // host path for binds, else the fs source ("proc", "tmpfs")
  std::string dest;    // inside the rootfs, cleaned, absolute
  std::string type;    // "bind" for binds
  MountOptions opt;
  bool cgroup = false;  // type cgroup/cgroup2: expanded by the executor
  // An idmapped bind mount (runtime-spec 1.2): the mount's own mappings, or
  // the container's when the config gives only the idmap/ridmap option.
  // The parent makes the mount (open_tree + mount_setattr(MOUNT_ATTR_IDMAP),
  // which needs CAP_SYS_ADMIN over the filesystem: the container's user
  // namespace does not have it) and hands it over as TREE_FD; the child
  // move_mounts it onto the target.
  bool idmapped = false;
  std::vector<oci::IdMapping> uid_map, gid_map;
  int tree_fd = -1;
};

Result<std::vector<MountOp>> plan_mounts(const oci::Spec& spec, const std::string& bundle);

// The detached idmapped tree of OP (parent side): a user namespace with
// OP's mappings (made by a short-lived child, as runc and crun do), then
// open_tree(OPEN_TREE_CLONE) + mount_setattr(MOUNT_ATTR_IDMAP).
Result<UniqueFd> open_idmapped_tree(const MountOp& op);

}  // namespace comet::runtime
