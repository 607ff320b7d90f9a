// An ordinary user's runtime moving itself into a user namespace (and a
// mount namespace) of its own, as rootless podman's pause process and
// `buildah unshare` do: from there it is uid 0 with every capability over
// what it creates (mounts, the container's network namespace and its nft
// table, slirp4netns), and the kernel still treats it as the user outside.
// `pack run` does this first when it runs as an ordinary user (docs/rootless.md,
// "pack run").
//
//   the runtime (uid U)            a helper child (uid U, outside)
//   fork ───────────────────────▶  waits on the pipe
//   unshare(USER|NS); write 1 ──▶  newuidmap/newgidmap PARENT 0 U 1 1 SUB N
//   wait for the child ◀───────── exit 0, or the helper's refusal on the pipe
//   no maps yet (no range, the helper refused): write "0 U 1" itself
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/oci/spec.hpp"

namespace comet::runtime {

struct SubIdRange {
  uint32_t start = 0;
  uint32_t count = 0;
};

// The first range of the user NAME (or numeric UID) in TEXT, the content of
// /etc/subuid or /etc/subgid ("name:start:count" lines); nullopt for none.
std::optional<SubIdRange> find_subid_range(const std::string& text, const std::string& name,
                                           uint32_t uid);

// The maps of the runtime's own user namespace: 0 is OWN; with RANGE, 1..N
// are the subordinate ids (so that an agent's uid 65534 is one of them).
std::vector<oci::IdMapping> own_namespace_maps(uint32_t own,
                                               const std::optional<SubIdRange>& range);

struct EnteredUserNs {
  bool subordinate = false;  // ids 1..N are mapped too (newuidmap)
  std::string why_not;       // when not: the reason, for a debug line
};

// Moves this single-threaded process into a new user and mount namespace,
// as uid and gid 0 there. The mount namespace's mounts are slaves of the
// host's (a less privileged mount namespace gets no shared peer), so what
// is mounted in it never reaches the host. A refused unshare is
// userns_refusal()'s line.
Result<EnteredUserNs> enter_user_namespace();

// Then exec this runtime again with the same arguments, so that its memory
// belongs to the new user namespace: a process's mm keeps the user
// namespace it was exec'd in, and ptrace checks (pidfd_getfd, /proc/PID/fd,
// which the reporter uses on the container's processes before they exec)
// need CAP_SYS_PTRACE there. user_dirs() goes along in COMET_USER_DIRS.
// Returns only on error.
Status reexec_in_user_namespace();

// True when this process's user namespace maps only one uid (no
// subordinate range).
bool own_ids_only();

}  // namespace comet::runtime
