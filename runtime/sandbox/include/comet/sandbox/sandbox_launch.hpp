// The direct launch path of `comet-runtime sandbox` (docs/sandbox.md):
// the planned oci::Spec is run without an OCI container. No state dir, no
// bundle or config.json on disk, no hooks, no second exec of the runtime.
// What stays is every enforcement layer of the core, derived by the same
// functions as create (policy_from_annotations, tighten, plan_child,
// plan_confinement, lockdown_options), and the violation reporter.
//
//   runtime                                  sandbox child (PID 1 of its pid ns)
//   -------                                  -----------------------------------
//   [guardian: clone(CLONE_VM), setsid]      (only for cgroups or placeholders)
//   placeholders (no git rule only), cgroups (limits only)
//   block signals; clone3(ns flags,  ------>  PDEATHSIG; tmpfs skeleton, mounts,
//     CLONE_VM | CLONE_VFORK): this thread    pivot_root (in its own mount ns, on
//     waits for the child's exec, a helper    a stack of its own in the runtime's
//     thread meanwhile: starts the reporter   memory, while the helper joins)
//     thread, joins the cgroups (an RCU
//     grace period each), then
//   kGo ---------------------------------->  (wait for kGo), cgroup ns,
//                                            setsid, identity, PDEATHSIG again
//                                            fork the command (CLONE_VFORK), exec
//                                            the trampoline's init ("comet-init")
//                                   <------  kError, or EOF once both exec'd
//   forward signals to the init  ------->    the init forwards them to the command
//   waitpid(init): its status is the command's
//   reporter summary on stderr; remove cgroups, placeholders; "done" to the guardian
//   (with the removed directories' fds: their last close is its), not waited for
//
// A SIGKILL of the runtime kills the init (PDEATHSIG), so the kernel kills
// the whole pid namespace; the skeleton and every mount live in the
// child's mount namespace and go with it; the guardian (EOF on its socket) removes
// the cgroups and the placeholders that are still the empty ones we made.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/capability/profile_compile.hpp"
#include "comet/oci/spec.hpp"
#include "comet/reporting/fswatch.hpp"

namespace comet::runtime {

struct SandboxLaunch {
  std::string id;            // names the sandbox in events and cgroups
  oci::Spec spec;            // as planned (capability/profile_compile.hpp)
  std::string skeleton_dir;  // an existing host dir the child covers with its tmpfs
  std::string rootfs;        // the empty root, inside skeleton_dir
  std::vector<std::pair<std::string, mode_t>> files;  // bind sources, inside skeleton_dir
  std::vector<capability::Symlink> symlinks;          // in rootfs
  std::vector<capability::Placeholder> placeholders;  // created on the host, removed after
  // Placeholders are possible (a profile without the git rule, whose init
  // refuses the missing protected names otherwise): planned under the
  // workspace's registry, shared with its other sandboxes.
  bool placeholders_shared = false;
  // Missing protected names the init refuses (capability::SandboxPlan):
  // they, and what could take the place of a directory on the way to one.
  std::vector<std::string> refused_names;
  std::string workspace;  // keys the placeholders shared with its other sandboxes
  uid_t owner_uid = 0;    // of the placeholders
  gid_t owner_gid = 0;
  std::string events;  // --events FILE|unix:PATH, or ""
  // Where the workspace's placeholder registry lives (<this>/.placeholders):
  // the host's /run/comet-runtime for root, the user's runtime dir rootless.
  std::string placeholder_root = "/run/comet-runtime";
  // An ordinary caller (docs/sandbox.md "Rootless"): a user namespace that
  // maps only the caller's uid and gid; limits without a cgroup where none
  // is delegated (pids: RLIMIT_NPROC; a memory limit the profile names
  // itself, memory_explicit, is refused then; the default is not enforced).
  bool rootless = false;
  bool memory_explicit = false;
  // fs.read / fs.write events (fswatch.hpp), in its sandbox mode: what the
  // profile writes, protects and denies. Filed under the sandbox's cgroup2
  // directory, so only when it has one (a limit).
  FsView fs_view;
  // Fills in the plan (spec, rootfs, files, symlinks, placeholders, owner,
  // fs_view); again under the workspace's placeholder lock when
  // placeholders_shared.
  std::function<Status(SandboxLaunch&)> plan;
};

// Runs it to the end and exits the process with the command's status
// (128+N for signal N), once what it made on the host is undone; returns
// only the error that kept it from starting. (The exit skips freeing the
// plan and the parse trees: see the end of launch_sandbox.)
Result<int> launch_sandbox(SandboxLaunch& l);

}  // namespace comet::runtime
