// The sandbox planner: a resolved profile + workspace + command -> an OCI
// config that runs the command against the host's own filesystem.
//
// compile_profile() is pure (no syscalls, no environment, no clock): the
// runtime side (runtime/sandbox/src/sandbox_config.cpp) gathers the host facts it
// needs (the entries of "/", and lstat/realpath of every path the profile
// names) and passes them in; tests pin the output with golden files
// (tests/data/capability/sandbox/).
//
// Why a temp root: the runtime core cannot take root.path "/" (pivot_root
// of the current root is EBUSY, and --no-pivot's MS_MOVE of "/" is ELOOP),
// so the config's root is a per-run empty directory, read-only, holding the
// host's top-level symlinks (bin -> usr/bin, ...), and each top-level
// directory is bound into it. The view, built as mounts:
//   readable tree      rbind + rro,rnosuid,rnodev (recursive read-only: the
//                      host's submounts too); with read "/" every top-level
//                      directory and file of the host, else the read list
//                      only (strict: anything else answers ENOENT)
//   write P            rbind rw (exec allowed: it is a workspace)
//   /tmp               a private tmpfs (the profile's {tmp}); devbox, which
//                      writes "/", gets the host's /tmp instead
//   /proc              a fresh proc; /dev a minimal tmpfs (null zero full
//                      random urandom tty, pts, shm); /sys a read-only sysfs
//                      when "/" or /sys is readable
//   unix_sockets S     the socket allowlist of the unix-socket rule: in the
//                      policy annotation; a socket the view would hide (under
//                      the private /tmp, a hidden or denied directory) is
//                      bound back at its own path, after the hiding mounts
//   limits             pids -> linux.resources.pids, memory ->
//                      memory.limit and memory.swap (no swap beyond it), tmp
//                      -> the private /tmp's size= and nr_inodes=
//   protect P          rbind + rro over P when P lies in a writable tree;
//                      every directory between that tree's root and P is
//                      pinned (bound onto itself, still writable) so that P
//                      cannot be moved away by renaming a parent; a missing
//                      P there is created first (SandboxPlan::placeholders) so the
//                      workload cannot create it; a P that is a symlink in a
//                      writable tree cannot be protected: an error
//                      ({workspace}/.git too, whatever it points to)
//   pin P              (ResolvedProfile::pin) a directory inside a writable
//                      tree, bound onto itself, still writable: it cannot
//                      be renamed or removed (EBUSY); missing: nothing
//   deny P             a directory: an empty tmpfs, ro, mode 000; a file,
//                      socket or node: the empty mode-0000 file deny_file
//                      bound read-only over it. Either way open() answers
//                      EACCES (the workload holds no capabilities, so not
//                      even uid 0 passes mode 000)
//   runtime sockets    a runtime's own directory (/run/containerd, ...): an
//                      empty tmpfs, ro, mode 755 (the socket is gone:
//                      ENOENT); a lone socket (/run/docker.sock, ...): the
//                      empty mode-0666 file socket_file bound read-only over
//                      it (stat shows an empty regular file, connect() gets
//                      ECONNREFUSED). Applied after every bind, so binding
//                      /run in a custom profile cannot bring one back
//   hidden             the runtime's state roots: as a denied directory
// Precedence at one path and below it: deny > runtime sockets/hidden >
// protect > write > read. Mounts are ordered parents first.
//   namespaces   pid ipc uts mount cgroup; network: restricted = a new empty
//                netns (only lo); open = the host's (host_netns joined by
//                path, since the runtime's policy tightening adds a new
//                netns to any policy config that has no network entry)
//   process      CMD ARGS, cwd = the workspace, the invoking user's uid/gid
//                and no supplementary groups, no capabilities,
//                noNewPrivileges, the caller's env minus sandbox_env()'s
//                dangerous names
//   annotations  org.soyaos.comet.policy {"lockdown":B,"network":"none"|
//                "open","profile":NAME[,"deny":[...]][,"unix":{"allow":[...]}]},
//                lockdown false only for devbox, unix exactly when the
//                profile has the unix-socket rule;
//                org.soyaos.comet.profile NAME
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/capability/profile.hpp"
#include "comet/oci/spec.hpp"

namespace comet::capability {

enum class HostKind { missing, dir, file, socket, other };
std::string_view to_string(HostKind k);

// What the host has at a path (as the profile names it).
struct HostPath {
  HostKind kind = HostKind::missing;
  std::string real;      // realpath (a missing path: its parent's realpath + name)
  bool symlink = false;  // the path itself is a symlink
  // Every symlink met resolving the path, in order (absolute host paths of
  // the links themselves: a symlinked parent, each hop of a chain, the
  // path itself when it is one). One in a writable tree is pinned (bound
  // onto itself, so it cannot be removed or replaced).
  std::vector<std::string> links;
};

// One entry of the host's "/".
struct TopEntry {
  std::string name;  // "usr", "bin", ".dockerenv"
  HostKind kind;     // dir, file, other; symlinks have link set
  std::string link;  // symlink target as written ("usr/bin"), "" if not a symlink
};

struct SandboxInputs {
  std::string root_dir;           // the per-run empty root directory (absolute)
  std::string workspace;          // absolute, real: the process cwd
  std::string tmp = "/tmp";       // the profile's {tmp}
  std::vector<std::string> args;  // CMD ARGS
  std::vector<std::string> env;   // the caller's environment, KEY=VALUE
  uint32_t uid = 0, gid = 0;
  std::string deny_file;    // empty file, mode 0000
  std::string socket_file;  // empty file, mode 0666
  // An empty directory: the top layer of the read-only overlay that a
  // top-level directory holding denied paths is shown through ("" = none,
  // bound as it is). See make_overlay_view() in profile_compile.cpp.
  std::string empty_dir;
  // The host's mount points (/proc/self/mountinfo), for the overlay above:
  // it does not show what is mounted beneath its lower directory.
  std::vector<std::string> mount_points;
  std::string host_netns;  // open network: netns to join by path; "" = no entry
  // Runtime-side additions: protected (global config files or their dirs,
  // hook dirs, the runtime binary) and hidden (state roots) unless devbox.
  std::vector<std::string> protect;
  std::vector<std::string> hide;
  // Symlinks to pin where they are in a writable tree: the hops of links
  // found inside protected directories (`.claude/x.json -> ../hop`,
  // `hop -> cfg/x.json`: hop is pinned, cfg/x.json is in `protect`).
  std::vector<std::string> pin_links;
  std::vector<TopEntry> top_level;
  // Facts for every path in the profile's lists and in protect/hide above
  // (and for every path in `globbed`); a path without facts is taken as
  // missing.
  std::map<std::string, HostPath> host;
  // The expansion of every protect or deny entry holding a `*`, keyed by the
  // entry as the profile holds it: glob(3) of the pattern up to its last
  // component with a `*`, plus the rest of the pattern (so
  // {workspace}/.git/modules/*/hooks names the hooks of every module, there
  // or not). An entry without an expansion, or with an empty one, adds
  // nothing.
  std::map<std::string, std::vector<std::string>> globbed;
};

struct Symlink {
  std::string name;    // in root_dir
  std::string target;  // as on the host
};

// A protected name that does not exist on the host, inside a writable tree:
// the runtime creates it (empty, owned by the invoking user) before the run
// so that a read-only mount can cover it, and removes it after the run if it
// is still the placeholder it made (same inode, still empty, or for a file
// with `content`, still holding exactly that). A `content` file is written
// before the mount (.git/commondir: git dies on an empty one).
struct Placeholder {
  std::string path;     // absolute host path
  bool dir = false;     // an empty directory, else a regular file
  std::string content;  // what the file holds ("" = empty; ResolvedProfile::placeholder_content)
};

struct SandboxPlan {
  oci::Spec spec;
  std::vector<Symlink> symlinks;          // to make in root_dir before create
  std::vector<Placeholder> placeholders;  // missing protected names to create (parents first)
  // Missing protected names the git rule's init refuses to make (every
  // profile that writes the host and protects the workspace's .git): no
  // placeholder on the host, nothing in the command's view.
  std::vector<std::string> refused_names;
  // No git rule: missing protected names get placeholders, shared with the
  // workspace's other sandboxes (the runtime's registry).
  bool placeholders_shared = false;
  std::vector<std::string> notes;  // what was skipped and why, for --explain
};

Result<SandboxPlan> compile_profile(const ResolvedProfile& p, const SandboxInputs& in);

// The caller's environment minus what must not cross into a sandbox: the
// dynamic loader's and libc's variables (LD_*, GCONV_PATH, MALLOC_*, ...),
// shell start-up hooks (BASH_ENV, ENV, BASH_FUNC_*), and the sockets that
// reach the user's agents (SSH_AUTH_SOCK, GPG_AGENT_INFO, DOCKER_HOST,
// CONTAINER_HOST). PATH is added when absent. Order kept; a key given
// twice keeps its last value.
std::vector<std::string> sandbox_env(const std::vector<std::string>& env);
bool dangerous_env(std::string_view key);

}  // namespace comet::capability
