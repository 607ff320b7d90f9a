// The unix-socket rule (capability::Policy::unix_allow, docs/sandbox.md):
// which unix socket a confined process may reach by name, decided by the
// violation reporter for the notifications the lock-down sends it
// (seccomp::LockdownOptions::unix_rule): connect, sendto with an address,
// sendmsg and sendmmsg.
//
// Why the reporter makes an allowed call itself: the address is in the
// process's memory, which another thread (or a shared mapping) can change
// between the reporter's look and the kernel's own read after a CONTINUE.
// So the reporter copies the address once, resolves it in the process's
// root (openat2 RESOLVE_IN_ROOT, no magic links), judges the socket inode
// it found, and, when allowed, connects (or sends) on a copy of the
// process's socket (pidfd_getfd) to that very inode
// ("/proc/self/fd/N" of an O_PATH fd), with the process's uid, gid and
// groups and no capabilities. A call on a socket that is not AF_UNIX (or a
// sendmsg on a stream or seqpacket one, where the kernel ignores or refuses
// an address) cannot reach a unix path, but CONTINUE would let another
// thread dup2 a unix socket onto the fd number after this look: it is
// CONTINUE only when the task is the only thread of its fd table (the
// lock-down refuses clone(CLONE_FILES) without CLONE_THREAD); otherwise the
// reporter makes that call too, on its copy (`emulate`). A fd that is not
// a socket is answered ENOTSOCK.
//
// The judgement, for a pathname socket: allowed when it is on a writable
// mount of the container (the workspace, a private /tmp: places the
// profile lets it write, so sockets it or the user made there) or when it
// is one of the allowlisted sockets (by device and inode); else EACCES and
// an event (surface "unix-socket"). An abstract name: in a network
// namespace of the container's own, every name is the container's; in the
// host's, only a name a process of the container bound (its pid namespace
// holds a socket with that inode); else ECONNREFUSED and an event.
#pragma once

#include <linux/seccomp.h>
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace comet::runtime {

struct UnixRuleState {
  std::vector<std::string> allow;  // paths as the container sees them
  // Filled on first use (resolved in the container's root).
  bool allow_resolved = false;
  std::vector<std::pair<dev_t, ino_t>> allow_ids;
};

// What to answer. continue_call: SECCOMP_USER_NOTIF_FLAG_CONTINUE (no event).
// Otherwise `ret` is the call's result (>= 0) or -errno; `refused` says an
// event is due, naming `requested`.
struct UnixOutcome {
  bool continue_call = false;
  // When set: the call is made by calling this (on the reporter's copy of
  // the socket), which returns `ret`. may_block: a blocking stream socket,
  // whose connect or send can wait on the peer: made on a thread of its
  // own so that the reporter is not stalled.
  std::function<long long()> emulate;
  bool may_block = false;
  long long ret = 0;
  bool refused = false;
  std::string requested;
};

bool unix_rule_call(int nr);
UnixOutcome unix_rule_judge(UnixRuleState& st, const struct seccomp_notif& req, int listener);

}  // namespace comet::runtime
