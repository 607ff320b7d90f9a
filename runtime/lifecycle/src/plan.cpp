// Spec -> ChildContext: every decision the child will act on, made here in
// the parent where errors can still be reported with the field name.
#include "comet/lifecycle/plan.hpp"

#include <sched.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstring>

#include "comet/base/sys.hpp"
#include "comet/host/log.hpp"

namespace comet::runtime {
namespace {

struct NsType {
  const char* name;
  int flag;
};
constexpr NsType kNamespaces[] = {
    {"user", CLONE_NEWUSER},     {"pid", CLONE_NEWPID},   {"network", CLONE_NEWNET},
    {"mount", CLONE_NEWNS},      {"ipc", CLONE_NEWIPC},   {"uts", CLONE_NEWUTS},
    {"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME},
};

struct RlimitName {
  const char* name;
  int res;
};
constexpr RlimitName kRlimits[] = {
    {"RLIMIT_AS", RLIMIT_AS},
    {"RLIMIT_CORE", RLIMIT_CORE},
    {"RLIMIT_CPU", RLIMIT_CPU},
    {"RLIMIT_DATA", RLIMIT_DATA},
    {"RLIMIT_FSIZE", RLIMIT_FSIZE},
    {"RLIMIT_LOCKS", RLIMIT_LOCKS},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
    {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
    {"RLIMIT_NICE", RLIMIT_NICE},
    {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_NPROC", RLIMIT_NPROC},
    {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
    {"RLIMIT_RTTIME", RLIMIT_RTTIME},
    {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
    {"RLIMIT_STACK", RLIMIT_STACK},
};

// Unknown names are skipped with a warning, as runc does: an unknown name
// can only ever grant less.
Result<uint64_t> cap_mask(const std::vector<std::string>& names, const std::string& field) {
  uint64_t m = 0;
  for (size_t i = 0; i < names.size(); i++) {
    cap_value_t v;
    std::string lower = names[i];
    for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (cap_from_name(lower.c_str(), &v) < 0 || lower.rfind("cap_", 0) != 0) {
      log::warn(field + ": ignoring unknown or unavailable capability " + names[i]);
      continue;
    }
    if (v > CAP_LAST_CAP) {
      // Known to libcap but not to this kernel: runc warns and skips.
      continue;
    }
    m |= 1ULL << v;
  }
  return m;
}

}  // namespace

int namespace_flag(const std::string& type) {
  for (auto& n : kNamespaces)
    if (type == n.name) return n.flag;
  return 0;
}

namespace {

// Fields this runtime does not implement: refused, never ignored.
Status refuse_unsupported(const oci::Process& p, const oci::Linux& lx, const HostFacilities& host) {
  (void)p;
  if (lx.has_intel_rdt && !host.resctrl)
    return Error::msg(
        "linux.intelRdt: this host has no resctrl filesystem (/sys/fs/resctrl: it needs a CPU "
        "with Intel RDT or AMD PQoS and `mount -t resctrl resctrl /sys/fs/resctrl`)");
  if (lx.has_intel_rdt) return Error::msg("linux.intelRdt: not supported by this runtime yet");
  return {};
}

// Namespaces: user joins first, so later setns calls have its privileges.
Status plan_namespaces(const oci::Linux& lx, ChildContext& c) {
  for (const auto& ns : lx.namespaces) {
    int flag = namespace_flag(ns.type);
    if (!flag) return Error::msg("linux.namespaces: unknown namespace type \"" + ns.type + "\"");
    if (ns.path.empty()) {
      c.ns.new_ns_flags |= flag;
    } else {
      JoinNs j{flag, ns.path, -1};
      if (flag == CLONE_NEWUSER)
        c.ns.joins.insert(c.ns.joins.begin(), j);
      else
        c.ns.joins.push_back(j);
    }
    if (flag == CLONE_NEWUSER) c.ns.userns = true;
  }
  c.ns.cgroupns = c.ns.new_ns_flags & CLONE_NEWCGROUP;
  c.ns.time_offsets = lx.time_offsets;
  c.ns.slow_path = !c.ns.joins.empty() || (c.ns.new_ns_flags & CLONE_NEWTIME);
  return {};
}

// The root, the mounts, the devices, masked and read-only paths, sysctls.
Status plan_files(const oci::Spec& spec, const oci::Linux& lx, const PlanInputs& in,
                  ChildContext& c) {
  c.fs.rootfs = in.rootfs;
  c.fs.rootfs_readonly = spec.root && spec.root->readonly;
  c.fs.no_pivot = in.no_pivot;
  if (!lx.rootfs_propagation.empty()) {
    auto o = parse_mount_options({lx.rootfs_propagation});
    if (!o.ok() || !o->propagation)
      return Error::msg("linux.rootfsPropagation \"" + lx.rootfs_propagation +
                        "\": unknown propagation");
    c.fs.rootfs_propagation = o->propagation;
  }
  TRY(c.fs.mounts, plan_mounts(spec, in.bundle));
  for (auto& m : c.fs.mounts)
    if (m.dest == "/dev" && m.type == "tmpfs") c.fs.dev_is_tmpfs = true;
  // No mount namespace, new or joined: the container inherits the runtime's
  // (runtime-spec), and its mounts are made there, as runc makes them. A
  // user namespace of the container's own cannot mount in the runtime's.
  const bool joins_mntns = std::any_of(c.ns.joins.begin(), c.ns.joins.end(),
                                       [](auto& j) { return j.clone_flag == CLONE_NEWNS; });
  if (!(c.ns.new_ns_flags & CLONE_NEWNS) && !joins_mntns) {
    if (c.ns.userns) {
      if (!c.fs.mounts.empty())
        return Error::msg(
            "mounts: without a mount namespace the mounts are made in the runtime's, which a "
            "user namespace of the container's cannot do: add a mount namespace");
    } else {
      if (c.fs.rootfs_propagation)
        return Error::msg("linux.rootfsPropagation \"" + lx.rootfs_propagation +
                          "\": needs a mount namespace (without one, the runtime's mounts "
                          "would change)");
      c.fs.host_mounts = true;
    }
  }
  for (size_t i = 0; i < lx.devices.size(); i++) {
    const auto& d = lx.devices[i];
    if (d.path.empty() || d.path[0] != '/')
      return Error::msg("linux.devices[" + std::to_string(i) + "].path \"" + d.path +
                        "\": must be absolute");
    if (d.type.empty() || std::strchr("cbup", d.type[0]) == nullptr || d.type.size() != 1)
      return Error::msg("linux.devices[" + std::to_string(i) + "].type \"" + d.type +
                        "\": must be c, b, u or p");
  }
  c.fs.devices = lx.devices;
  c.fs.masked_paths = lx.masked_paths;
  c.fs.readonly_paths = lx.readonly_paths;
  for (auto& [k, v] : lx.sysctl) c.proc.sysctl.emplace_back(k, v);
  return {};
}

// The process's command, environment, cwd, user and capabilities.
Status plan_process(const oci::Process& p, ChildContext& c) {
  c.proc.args = p.args;
  // A key given twice keeps its last value (runc's dedup), in the order of
  // the surviving entries.
  for (auto it = p.env.rbegin(); it != p.env.rend(); ++it) {
    std::string key = it->substr(0, it->find('='));
    if (std::none_of(c.proc.env.begin(), c.proc.env.end(),
                     [&](const std::string& e) { return e.substr(0, e.find('=')) == key; }))
      c.proc.env.push_back(*it);
  }
  std::reverse(c.proc.env.begin(), c.proc.env.end());
  c.proc.cwd = p.cwd.empty() ? "/" : p.cwd;
  if (c.proc.cwd[0] != '/')
    return Error::msg("process.cwd \"" + c.proc.cwd + "\": must be an absolute path");
  c.proc.uid = p.user.uid;
  c.proc.gid = p.user.gid;
  for (auto g : p.user.additional_gids) c.proc.additional_gids.push_back(g);
  c.proc.umask = p.user.umask ? static_cast<int>(*p.user.umask) : -1;
  if (p.capabilities) {
    c.proc.has_caps = true;
    TRY(c.proc.caps.bounding, cap_mask(p.capabilities->bounding, "process.capabilities.bounding"));
    TRY(c.proc.caps.effective,
        cap_mask(p.capabilities->effective, "process.capabilities.effective"));
    TRY(c.proc.caps.permitted,
        cap_mask(p.capabilities->permitted, "process.capabilities.permitted"));
    TRY(c.proc.caps.inheritable,
        cap_mask(p.capabilities->inheritable, "process.capabilities.inheritable"));
    TRY(c.proc.caps.ambient, cap_mask(p.capabilities->ambient, "process.capabilities.ambient"));
  }
  c.proc.no_new_privileges = p.no_new_privileges;
  c.proc.oom_score_adj = p.oom_score_adj;
  return {};
}

// Limits and the execution domain.
Status plan_limits(const oci::Process& p, const oci::Linux& lx, ChildContext& c) {
  for (size_t i = 0; i < p.rlimits.size(); i++) {
    const auto& r = p.rlimits[i];
    int res = -1;
    for (auto& n : kRlimits)
      if (r.type == n.name) res = n.res;
    if (res < 0)
      return Error::msg("process.rlimits[" + std::to_string(i) + "].type: unknown rlimit \"" +
                        r.type + "\"");
    c.proc.rlimits.push_back({res, {static_cast<rlim_t>(r.soft), static_cast<rlim_t>(r.hard)}});
  }
  if (lx.personality) {
    if (lx.personality->domain == "LINUX")
      c.proc.personality = PER_LINUX;
    else if (lx.personality->domain == "LINUX32")
      c.proc.personality = PER_LINUX32;
    else
      return Error::msg("linux.personality.domain \"" + lx.personality->domain +
                        "\": must be LINUX or LINUX32");
    if (!lx.personality->flags.empty())
      return Error::msg("linux.personality.flags: not supported by this runtime");
  }
  return {};
}

// linux.mountLabel: with SELinux, the label of every new filesystem that
// takes one (`context=`, as runc's label.FormatMountLabel); without it, a
// note (debug), as runc.
Status plan_mount_label(const oci::Linux& lx, const HostFacilities& host, ChildContext& c) {
  if (lx.mount_label.empty()) return {};
  if (!host.selinux) {
    c.proc.attrs.notes.push_back("linux.mountLabel \"" + lx.mount_label +
                                 "\": SELinux is not enabled on this host, not applied");
    return {};
  }
  for (MountOp& op : c.fs.mounts) {
    if (op.opt.bind || op.cgroup || op.type == "proc" || op.type == "sysfs") continue;
    op.opt.data +=
        std::string(op.opt.data.empty() ? "" : ",") + "context=\"" + lx.mount_label + "\"";
  }
  return {};
}

}  // namespace

Result<ChildContext> plan_child(const oci::Spec& spec, const PlanInputs& in) {
  ChildContext c;
  const oci::Process& p = *spec.process;
  const oci::Linux empty_linux;
  const oci::Linux& lx = spec.linux_ ? *spec.linux_ : empty_linux;
  TRYV(refuse_unsupported(p, lx, in.host));
  TRYV(plan_namespaces(lx, c));
  TRYV(plan_files(spec, lx, in, c));
  c.proc.hostname = spec.hostname;
  c.proc.set_hostname = !spec.hostname.empty();
  c.proc.domainname = spec.domainname;
  c.proc.set_domainname = !spec.domainname.empty();
  TRYV(plan_process(p, c));
  TRYV(plan_limits(p, lx, c));
  TRY(c.proc.attrs, plan_process_attrs(p, lx, in.host));
  TRYV(plan_mount_label(lx, in.host, c));
  c.proc.new_keyring = !in.no_new_keyring;
  c.proc.keyring_name = "_ses." + in.id;
  c.proc.terminal = p.terminal;
  if (p.console_size) {
    c.proc.has_console_size = true;
    c.proc.console_size = *p.console_size;
  }
  c.proc.preserve_fds = in.preserve_fds;
  if (spec.hooks) {
    c.proc.create_container_hooks = spec.hooks->create_container;
    c.proc.start_container_hooks = spec.hooks->start_container;
  }
  return c;
}

}  // namespace comet::runtime
