// An ordinary caller's sandbox (sandbox_parts.hpp, docs/sandbox.md
// "Rootless"): the user namespace and the limits without a cgroup.
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "comet/host/log.hpp"
#include "comet/host/user_dirs.hpp"
#include "comet/lifecycle/child.hpp"
#include "comet/sandbox/sandbox_launch.hpp"
#include "sandbox_parts.hpp"

namespace comet::runtime::sandbox_parts {

Status plan_rootless(const SandboxLaunch& l, ChildContext& ctx, oci::Linux& lx) {
  // The command runs as the caller's own uid and gid inside (files it
  // writes in the workspace are the caller's), as bwrap --unshare-user
  // without --uid: no subordinate ids, so no newuidmap.
  ctx.ns.new_ns_flags |= CLONE_NEWUSER;
  ctx.ns.userns = true;
  ctx.ns.self_map_uid = static_cast<long>(::getuid());
  ctx.ns.self_map_gid = static_cast<long>(::getgid());
  if (ctx.proc.uid != ::getuid() || ctx.proc.gid != ::getgid())
    return Error::msg("sandbox: rootless, the command runs as the caller (uid " +
                      std::to_string(::getuid()) + "), not uid " + std::to_string(ctx.proc.uid));
  ctx.proc.additional_gids.clear();  // setgroups is denied in the namespace
  // A new sysfs needs a network namespace the user namespace owns: with
  // the host's network (the open profiles), the host's /sys is bound
  // read-only instead, recursively, as bwrap --ro-bind /sys /sys.
  if (!(ctx.ns.new_ns_flags & CLONE_NEWNET)) {
    TRY(MountOptions sys_ro, parse_mount_options({"rbind", "rro", "nosuid", "nodev", "noexec"}));
    for (MountOp& m : ctx.fs.mounts) {
      if (m.type != "sysfs") continue;
      m.type = "bind";
      m.source = "/sys";
      m.opt = sys_ro;
    }
  }
  if (!lx.resources) return ok();
  oci::Resources& r = *lx.resources;
  if (r.memory && r.memory->limit && *r.memory->limit > 0) {
    if (l.memory_explicit)
      return Error::msg(
          "sandbox: the profile's limits.memory needs a cgroup, and this user can write none "
          "(rootless): remove it, or run where a cgroup2 subtree is delegated");
    log::debug("sandbox: rootless without a delegated cgroup: the default memory limit (" +
               std::to_string(*r.memory->limit) + " bytes) is not enforced");
  }
  if (r.pids && r.pids->limit > 0) {
    // RLIMIT_NPROC is counted per user in each user namespace (kernel 5.14
    // ucounts): here the sandbox's own processes.
    const rlim_t n = static_cast<rlim_t>(r.pids->limit);
    auto& rl = ctx.proc.rlimits;
    rl.erase(std::remove_if(rl.begin(), rl.end(),
                            [](const ResolvedRlimit& x) { return x.resource == RLIMIT_NPROC; }),
             rl.end());
    rl.push_back({RLIMIT_NPROC, {n, n}});
  }
  lx.resources.reset();  // no cgroup
  return ok();
}

Error clone_sandbox_error(const Error& e, int ns_flags) {
  if (ns_flags & CLONE_NEWUSER) {
    const int n = e.err();
    if (n == EPERM || n == EACCES || n == ENOSPC || n == EUSERS || n == EINVAL)
      return Error(n, "sandbox: " + userns_refusal(n));
  }
  return e;
}

Result<long> clone_sandbox_child(int ns_flags, int cgroup_fd) {
  auto pid = clone_into(ns_flags, cgroup_fd);
  if (!pid.ok() && pid.error().err() == ENOSYS && cgroup_fd < 0) {
    long r = ::syscall(SYS_clone, static_cast<unsigned long>(ns_flags) | SIGCHLD, nullptr, nullptr,
                       nullptr, 0);
    if (r < 0)
      pid = Error::sys(errno, "clone");
    else
      pid = r;
  }
  if (!pid.ok()) return clone_sandbox_error(pid.error(), ns_flags);
  return pid;
}

}  // namespace comet::runtime::sandbox_parts
