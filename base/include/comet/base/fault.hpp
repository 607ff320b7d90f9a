// Test-only fault injection (docs/reliability.md "Fault points"). With
// COMET_FAULT=<name> in the environment, the site of that name misbehaves on
// purpose, so the reliability suite and the error-table test can reach
// failures that cannot be caused from outside on a sane host. Unset (the
// normal case), a site costs one getenv.
//
// Two kinds of site:
//
// fault_point(name): the runtime SIGKILLs itself there, so the reliability
// suite can check that `delete --force` recovers from a runtime killed at
// every stage of create and start:
//   create-after-state-dir  the state dir and its config.json, no cgroup yet
//   create-mid-cgroups    the first hierarchy's cgroup made, the others not
//   create-after-cgroups  every cgroup made and limited, no record yet
//   create-after-fswatch  fs events: the cgroup filed with the program
//   create-after-reporter the pack's violation reporter started, no record
//   create-after-record   the first state record is written, nothing cloned
//   create-after-clone    the init exists, ids/cgroups not yet set up
//   create-after-mounts   the init has made its mounts (hooks not run)
//   create-after-nft      egress: ruleset, network helper and resolver set up
//                         and recorded
//   create-before-ready   the init is ready, the final record not written
//   start-waiting-fifo    `start` opened the exec fifo, before reading it
//
// fault_is(name) / fault_fail(name, err): a step goes wrong or a call fails:
//   egress-bad-ruleset    the egress ruleset gets a line nft refuses, so the
//                         load fails (egress/src/egress.cpp)
//   init-exit-at-start    the container's init exits as `start` opens the
//                         exec fifo (child.cpp): start's "container init
//                         exited before start"
//   pivot-root-einval     the init's pivot_root fails with EINVAL, as on an
//                         initramfs root (child.cpp; --no-pivot unaffected)
//   idmap-no-helper       newuidmap/newgidmap are not found, as on a host
//                         without the uidmap package (host/src/id_maps.cpp)
// sandbox-join-eio     the sandbox's cgroup join fails (sandbox_launch.cpp:
//                       the thread that joins while the child waits for kGo)
// sandbox-join-eio-slow-reporter  the same, and the reporter thread sleeps
//                       1 s before it serves (reporter.cpp): the failed
//                       launch must wait for it before it exits
// and the error table's: socketpair-emfile, clone3-eagain, memfd-enosys,
// sync-econnreset, sync-out-of-order, seccomp-export-enomem,
// seccomp-load-einval, sethostname-eperm, init-close-fifo, freezer-stuck,
// pack-relative-paths (docs/reliability.md lists what each does).
//
// Header-only and allocation-free: the sites in the fork-style child are
// safe (getenv reads the copied environment).
#pragma once

#include <signal.h>

#include <cerrno>
#include <cstring>

#include "comet/base/switches.hpp"

namespace comet {

// True if COMET_FAULT names this site.
inline bool fault_is(const char* name) noexcept {
  const char* want = switches::fault();
  return want && std::strcmp(want, name) == 0;
}

// For `if (fault_fail("x", EMFILE) || ::call(...) < 0) return Error::sys(errno, ...)`:
// when the site is named, errno is set to err and the call is skipped.
inline bool fault_fail(const char* name, int err) noexcept {
  if (!fault_is(name)) return false;
  errno = err;
  return true;
}

// SIGKILLs this process when COMET_FAULT names the point.
inline void fault_point(const char* name) noexcept {
  if (fault_is(name)) ::raise(SIGKILL);
}

}  // namespace comet
