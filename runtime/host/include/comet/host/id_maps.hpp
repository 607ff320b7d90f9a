// The id maps of a new user namespace, written the way the caller may.
//
// Root writes /proc/PID/uid_map and gid_map itself. An ordinary user may
// write one line mapping its own euid (and egid, once /proc/PID/setgroups
// says "deny"): that is written directly. Anything more (ranges from
// /etc/subuid and /etc/subgid) goes through the setuid newuidmap and
// newgidmap of the uidmap package, as podman, runc and buildah do.
//
// The target must be dumpable while its maps are written by an ordinary
// user: a non-dumpable process's /proc/PID files belong to root
// (proc(5)), so neither the direct write nor newuidmap could open them.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/oci/spec.hpp"

namespace comet::runtime {

// True when MAPS is the one line "0 ID 1"-style mapping of exactly OWN
// (any container id): what an unprivileged process may write itself.
bool own_id_only(const std::vector<oci::IdMapping>& maps, uint32_t own);

// "0 1000 1\n1 300000 65536\n"
std::string id_map_text(const std::vector<oci::IdMapping>& maps);

// newuidmap/newgidmap's argv for PID: {"/usr/bin/newuidmap", "PID", "0",
// "1000", "1", ...}. HELPER is the resolved path.
std::vector<std::string> id_map_helper_argv(const std::string& helper, pid_t pid,
                                            const std::vector<oci::IdMapping>& maps);

// Writes PID's uid_map and gid_map through PROCFD (a verified procfs fd):
// directly when the caller is root or the map is its own id only, else
// with newuidmap/newgidmap. Errors are one line: the helper missing, no
// range for this user in /etc/subuid, or the helper's own refusal.
Status write_id_maps(int procfd, pid_t pid, const std::vector<oci::IdMapping>& uids,
                     const std::vector<oci::IdMapping>& gids);

}  // namespace comet::runtime
