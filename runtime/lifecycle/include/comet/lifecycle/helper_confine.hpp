// Confinement of the runtime's long-lived helpers that parse untrusted
// bytes: the egress DNS resolver (egress/resolver.hpp) reads the agent's
// queries and the upstream's answers, so it must not be full root.
//
// confine_helper() is called in the helper's process, after it has made
// everything that needs privilege (the listeners and the nft context in the
// container's network namespace), and before it reports ready. It is one
// way: there is nothing to undo. In order:
//
//   1. a mount namespace of its own (slave of the host's, so that unmounts
//      on the host reach it and it pins nothing), with the whole tree
//      read-only, nosuid, nodev and noexec, except `writable` (its state
//      dir), which stays writable;
//   2. every capability dropped (bounding, permitted, effective,
//      inheritable, ambient) except `keep_caps`;
//   3. no_new_privs;
//   4. a seccomp filter that refuses with EPERM: exec; ptrace and reading or
//      writing other processes' memory; every signal except to
//      `signal_pid` (its companion, the network helper) and to itself,
//      including pidfd_send_signal; pidfd_open except of `signal_pid`; new netlink,
//      packet and raw sockets (its nft and NFLOG sockets are already open);
//      unix sockets unless `allow_unix` (a unix: delivery target), so it
//      cannot reach a container-runtime socket as uid 0; io_uring; mount,
//      namespace and module calls; bpf, perf, keys, kexec.
//
// It stays uid 0 so that it can still attribute a refused packet to the
// agent's process (/proc/PID/fd of a capability-less uid-0 process). What
// that leaves and what it costs: docs/egress.md, "The resolver's own
// confinement". Fail closed: any step failing is an error and the caller
// (create) fails.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comet/base/result.hpp"

namespace comet::runtime {

struct HelperConfinement {
  std::vector<std::string> writable;  // directories that stay writable
  uint64_t keep_caps = 0;             // bit N: capability N stays
  int signal_pid = 0;                 // the one other process it may signal (0: none)
  bool allow_unix = false;            // may create AF_UNIX sockets
};

Status confine_helper(const HelperConfinement& c);

}  // namespace comet::runtime
