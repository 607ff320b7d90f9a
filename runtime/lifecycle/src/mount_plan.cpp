// Pure: OCI mounts -> MountOps, with libmount's option names
// (mount_optmap.hpp).
#include <linux/mount.h>
#include <sys/mount.h>

#include <cstring>

#include "comet/base/sys.hpp"
#include "comet/lifecycle/mount_optmap.hpp"
#include "comet/lifecycle/mounts.hpp"

namespace comet::runtime {
namespace {

constexpr unsigned long kPropagation = MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE;

struct RecAttr {
  const char* name;
  unsigned long long attr;
  bool clear;
};
// runc's recursive attributes (runtime-spec "rro" & co.), applied with
// mount_setattr(AT_RECURSIVE).
constexpr RecAttr kRecAttrs[] = {
    {"rro", MOUNT_ATTR_RDONLY, false},
    {"rrw", MOUNT_ATTR_RDONLY, true},
    {"rnosuid", MOUNT_ATTR_NOSUID, false},
    {"rsuid", MOUNT_ATTR_NOSUID, true},
    {"rnodev", MOUNT_ATTR_NODEV, false},
    {"rdev", MOUNT_ATTR_NODEV, true},
    {"rnoexec", MOUNT_ATTR_NOEXEC, false},
    {"rexec", MOUNT_ATTR_NOEXEC, true},
    {"rnodiratime", MOUNT_ATTR_NODIRATIME, false},
    {"rdiratime", MOUNT_ATTR_NODIRATIME, true},
    {"rnoatime", MOUNT_ATTR_NOATIME, false},
    {"rstrictatime", MOUNT_ATTR_STRICTATIME, false},
    {"rrelatime", MOUNT_ATTR_RELATIME, false},
};

const MountOptName* find_opt(const std::string& name) {
  for (const MountOptName& m : linux_mount_opts())
    if (name == m.name) return &m;
  return nullptr;
}

}  // namespace

Result<MountOptions> parse_mount_options(const std::vector<std::string>& opts) {
  MountOptions o;
  for (const auto& opt : opts) {
    if (opt.empty()) continue;
    if (opt == "bind") {
      o.bind = true;
      continue;
    }
    if (opt == "rbind") {
      o.bind = o.recursive_bind = true;
      continue;
    }
    if (opt == "tmpcopyup") {
      o.tmpcopyup = true;
      continue;
    }
    // The sandbox's pinned symlinks (profile_compile.cpp Op::pin_link): the
    // bind takes the link itself, not what it leads to. Userspace-only
    // ("x-"), never passed to the kernel.
    if (opt == "x-comet.link") {
      o.link = true;
      continue;
    }
    // The sandbox's hiding of an engine's runtime socket (dir): nothing to
    // do when it is gone by the time the mounts are made.
    if (opt == "x-comet.if-exists") {
      o.if_exists = true;
      continue;
    }
    // The sandbox's writable binds: a source that became a symlink since
    // the plan fails the run instead of binding where it leads.
    if (opt == "x-comet.nofollow") {
      o.nofollow = true;
      continue;
    }
    if (opt == "x-comet.or-rbind") {
      o.or_rbind = true;
      continue;
    }
    if (opt.rfind("x-comet.whiteout=", 0) == 0) {
      o.whiteouts.push_back(opt.substr(17));
      continue;
    }
    if (opt == "idmap" || opt == "ridmap") {
      o.idmap = true;
      o.ridmap = o.ridmap || opt == "ridmap";
      continue;
    }
    bool rec = false;
    for (const auto& r : kRecAttrs) {
      if (opt == r.name) {
        (r.clear ? o.rec_attr_clr : o.rec_attr_set) |= r.attr;
        rec = true;
      }
    }
    if (rec) continue;
    if (const MountOptName* m = find_opt(opt)) {
      unsigned long f = m->flag;
      if (f & kPropagation) {
        o.propagation = f;  // includes MS_REC for the r* forms
        continue;
      }
      if (m->invert)
        o.flags &= ~f;
      else
        o.flags |= f;
      continue;
    }
    if (!o.data.empty()) o.data += ',';
    o.data += opt;
  }
  o.flags &= ~(MS_BIND | MS_REC);
  return o;
}

namespace {

Status check_map(const std::vector<oci::IdMapping>& v, const std::string& field) {
  for (size_t j = 0; j < v.size(); j++) {
    const std::string f = field + "[" + std::to_string(j) + "]";
    if (v[j].size == 0) return Error::msg(f + ".size: must be at least 1");
    if (uint64_t{v[j].container_id} + v[j].size - 1 > 0xfffffffeULL ||
        uint64_t{v[j].host_id} + v[j].size - 1 > 0xfffffffeULL)
      return Error::msg(f + ": the range passes the largest id (4294967294)");
  }
  if (v.size() > 340) return Error::msg(field + ": more than 340 ranges");
  return {};
}

// runc 1.2's rules: mappings make the bind idmapped; the idmap/ridmap
// option alone takes the container's mappings; both maps or neither.
Status plan_idmap(const oci::Spec& spec, const oci::Mount& m, const std::string& field,
                  MountOp& op) {
  const bool maps = !m.uid_mappings.empty() || !m.gid_mappings.empty();
  if (!maps && !op.opt.idmap) return {};
  op.idmapped = true;
  if (!op.opt.bind)
    return Error::msg(field +
                      ": an idmapped mount (idmap, ridmap, uidMappings) must be a bind mount");
  if (maps && (m.uid_mappings.empty() || m.gid_mappings.empty()))
    return Error::msg(field + ": an idmapped mount needs both uidMappings and gidMappings");
  op.uid_map = m.uid_mappings;
  op.gid_map = m.gid_mappings;
  if (!maps) {
    if (!spec.linux_ || spec.linux_->uid_mappings.empty() || spec.linux_->gid_mappings.empty())
      return Error::msg(field +
                        ": idmap without uidMappings/gidMappings takes the container's "
                        "linux.uidMappings and linux.gidMappings, and there are none");
    op.uid_map = spec.linux_->uid_mappings;
    op.gid_map = spec.linux_->gid_mappings;
  }
  TRYV(check_map(op.uid_map, field + ".uidMappings"));
  TRYV(check_map(op.gid_map, field + ".gidMappings"));
  return {};
}

}  // namespace

Result<std::vector<MountOp>> plan_mounts(const oci::Spec& spec, const std::string& bundle) {
  std::vector<MountOp> ops;
  for (size_t i = 0; i < spec.mounts.size(); i++) {
    const auto& m = spec.mounts[i];
    std::string field = "mounts[" + std::to_string(i) + "]";
    if (m.destination.empty() || m.destination[0] != '/')
      return Error::msg(field + ".destination \"" + m.destination + "\": must be an absolute path");
    MountOp op;
    auto opt = parse_mount_options(m.options);
    if (!opt.ok()) return std::move(opt).error().wrap(field);
    op.opt = std::move(*opt);
    op.dest = clean_path(m.destination);
    op.type = m.type;
    op.source = m.source;
    if (op.type == "bind") op.opt.bind = true;
    if (op.opt.bind) {
      op.type = "bind";
      if (!op.source.empty() && op.source[0] != '/') op.source = join_path(bundle, op.source);
      if (op.source.empty()) return Error::msg(field + ".source: a bind mount needs a source");
    }
    TRYV(plan_idmap(spec, m, field, op));
    if (op.type == "cgroup" || op.type == "cgroup2") op.cgroup = true;
    if (op.type.empty() && !op.opt.bind)
      return Error::msg(field + ".type: required for a non-bind mount to " + m.destination);
    ops.push_back(std::move(op));
  }
  return ops;
}

}  // namespace comet::runtime
