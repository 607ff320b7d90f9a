// Test-only fault points (docs/reliability.md). With COMET_FAULT=<point> in
// the environment, the runtime SIGKILLs itself when it reaches that point,
// so the reliability suite can check that `delete --force` recovers from a
// runtime killed at every stage of create and start. Points:
//   create-after-record   the first state record is written, nothing cloned
//   create-after-clone    the init exists, ids/cgroups not yet set up
//   create-after-mounts   the init has made its mounts (hooks not run)
//   create-before-ready   the init is ready, the final record not written
//   start-waiting-fifo    `start` opened the exec fifo, before reading it
// and three that are not a kill of the runtime:
//   egress-bad-ruleset    the egress ruleset gets a line nft refuses, so the
//                         load fails (egress/src/egress.cpp)
//   init-exit-at-start    the container's init exits as `start` opens the
//                         exec fifo (child.cpp): start's "container init
//                         exited before start"
//   pivot-root-einval     the init's pivot_root fails with EINVAL, as on an
//                         initramfs root (child.cpp; --no-pivot unaffected)
// The error table's faults (socketpair-emfile, clone3-eagain, memfd-enosys,
// sync-econnreset, sync-out-of-order, seccomp-export-enomem,
// seccomp-load-einval, sethostname-eperm, init-close-fifo, freezer-stuck,
// pack-relative-paths) are comet::fault_is()/fault_fail() sites
// (comet/base/fault.hpp); docs/reliability.md "Fault points" lists them.
// Unset (the normal case) costs one getenv per point.
#pragma once

namespace comet::runtime {

void fault_point(const char* name) noexcept;

}  // namespace comet::runtime
