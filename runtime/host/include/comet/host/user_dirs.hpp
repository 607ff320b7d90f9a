// Where the runtime keeps its files, for root and for an ordinary user, and
// whether this user can have a user namespace at all.
//
//   as root:  /run/comet-runtime, /var/lib/comet-runtime, /var/cache/comet-runtime
//   as user:  $XDG_RUNTIME_DIR/comet-runtime (else /tmp/comet-runtime-UID);
//             also as uid 0 of a user namespace (rootless podman), as runc
//             does unless USER=root,
//             $XDG_DATA_HOME/comet-runtime (else ~/.local/share/comet-runtime),
//             $XDG_CACHE_HOME/comet-runtime (else ~/.cache/comet-runtime)
//             where ~ is $HOME, else the passwd home of outer_uid() (podman's
//             cleanup runs `delete` with no HOME: not /root, the user's)
//
// runc rootless uses $XDG_RUNTIME_DIR/runc the same way. Running as root with
// SUDO_UID set is root, not rootless (the sandbox then drops to the invoker).
#pragma once

#include <string>

#include "comet/base/result.hpp"

namespace comet::runtime {

// True when the runtime runs without root on the host: an effective uid
// other than 0, or uid 0 of a user namespace that is not the initial one
// (rootless podman runs the OCI runtime inside its user namespace, as
// runc's userns.RunningInUserNS() sees it).
bool rootless() noexcept;
// True when this process is in a user namespace other than the initial one
// (/proc/self/uid_map is not "0 0 4294967295").
bool in_user_namespace() noexcept;

// The effective uid as the parent user namespace sees it: geteuid(), or in
// a user namespace the id /proc/self/uid_map maps it to (uid 0 of rootless
// podman's namespace is the user who ran podman).
unsigned long outer_uid() noexcept;

struct UserDirs {
  std::string runtime;  // state of running containers and sandboxes (tmpfs)
  std::string data;     // flags, the default rootfs cache
  std::string cache;    // the pack cache
};

// The directories for this user (computed once; not created).
const UserDirs& user_dirs();

// mkdir -p with mode 0700 for what it creates; the last component must be a
// directory owned by the caller (not a symlink) when the caller is not root,
// so another user cannot pre-create /tmp/comet-runtime-UID for us.
Status ensure_private_dir(const std::string& path);

// The one-line reason an unprivileged user namespace could not be created,
// naming the host setting and the fix when one of the known ones is set
// (kernel.unprivileged_userns_clone, user.max_user_namespaces, AppArmor's
// kernel.apparmor_restrict_unprivileged_userns). err is the errno of the
// failed clone/unshare.
std::string userns_refusal(int err);

}  // namespace comet::runtime
