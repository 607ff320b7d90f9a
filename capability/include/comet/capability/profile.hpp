// Sandbox profiles: named capability presets for running commands against
// the host's own filesystem (`comet-runtime sandbox --profile P -- CMD`),
// also nameable by a pack (manifest `profile:`).
//
// Built-ins (SPEC.md section 2):
//   workspace (default)  write: workspace, ~/.comet, tmp          network open
//   devbox               write: everything but /data              network open
//   read-only            write: ~/.comet, tmp                     network restricted
//   strict               write: workspace, ~/.comet/sessions, tmp;
//                        read: an allowlist of system dirs only   network restricted
//   off                  no sandbox (explicit; the runtime logs it)
// Custom profiles `extends:` a built-in (not off) and add to it.
//
// Config (sandbox.yaml):
//   default: strict                 # global files only
//   deny: [~/.ssh, ~/.aws]          # for every sandboxed profile
//   profiles:
//     ci:
//       extends: strict
//       description: CI jobs
//       read: [/opt/sdk]            # added to the base's lists
//       write: ["{workspace}/build"]
//       deny: [~/.netrc]
//       protect: ["{workspace}/tools"]   # readable, never writable
//       unix_sockets: ["{runtime}/bus"]  # the unix-socket allowlist; global files only
//       limits: {pids: 512, memory: 2Gi, tmp: 256Mi}  # per key replaces the base's
//       network: open               # restricted | open; replaces the base's
//   runtime_sockets: [/srv/ci/dockerd.sock]   # hidden too (beside the built-in list)
//   unix_sockets: [/run/dbus/system_bus_socket]  # every sandboxed profile; global files only
//   protect: ["{workspace}/Makefile"]  # every sandboxed profile but devbox
//   hooks: [/etc/comet/hooks.d]     # hook sources: never writable inside (but devbox)
//   floor:                          # the permission layer (auto_allow.hpp)
//     add:
//       - {id: terraform-destroy, command: "terraform destroy", reason: "..."}
//     disable: [sudo]               # built-in floor rules off; global files only
// Paths are absolute, or start with ~, {workspace} or {tmp} ({runtime},
// $XDG_RUNTIME_DIR, too in runtime_sockets).
//
// Merging: global files in order (/etc/comet/sandbox.yaml, then
// $XDG_CONFIG_HOME/comet/sandbox.yaml; finding them is the runtime's job),
// then the workspace file (.comet/sandbox.yaml), which may only add: new
// custom profiles, deny and protect paths, runtime sockets, hook dirs and
// floor rules (each only takes access away). Redefining a built-in or a
// profile defined earlier, a workspace `default:`, `floor.disable` or
// `unix_sockets`, or a workspace profile's limit above its base's, is an
// error naming the profile (or field) and the position(s). So no workspace file can make a global
// or built-in profile weaker (tests prove it over a corpus of workspace files).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/capability/manifest.hpp"

namespace comet::capability {

inline constexpr std::string_view kDefaultProfile = "workspace";

// workspace devbox read-only strict off
const std::vector<std::string_view>& builtin_profile_names();
bool is_builtin_profile(std::string_view name);

enum class Network { open, restricted };

struct CustomProfile {
  std::string name;
  std::string extends;  // a built-in other than off
  std::string description;
  std::vector<std::string> read, write, deny, protect;  // as written (unexpanded)
  std::optional<Network> network;                       // unset: the base's
  std::vector<std::string> unix_sockets;                // global/user files only
  // limits: {pids, memory, tmp}; each set key replaces the base's. A
  // workspace file's profile may only lower them.
  std::optional<long long> pids, memory, tmp;
  Loc pids_loc, memory_loc, tmp_loc;
  std::string file;  // where it is defined
  Loc loc;
  bool from_workspace = false;
  // Positions of what a workspace file's profile may not grant (red team
  // round 11): extends devbox, network open, read/write entries outside
  // {workspace}.
  Loc extends_loc = {}, network_loc = {};
  std::vector<Loc> read_locs = {}, write_locs = {};
};

struct DenyPath {
  std::string path;  // as written
  std::string file;
  Loc loc;
  // protect: a missing one's placeholder is an empty file, not a directory
  // (a config file a git config includes: git reads a directory as a bad
  // config and stops, red team round 8).
  bool missing_is_file = false;
};

// A path a config file names (deny, runtime_sockets, hooks), with its origin.
using ConfigPath = DenyPath;

// A floor rule from a config file: a command that must always ask
// (auto_allow.hpp). `command` is a list of words, each a glob (fnmatch);
// the first is matched against argv[0] and its basename, the rest against
// the following arguments in order (a prefix match).
struct FloorRule {
  std::string id;  // [a-z0-9-]
  std::vector<std::string> command;
  std::string reason;
  std::string file;
  Loc loc;
};

struct ProfileSet {
  std::string default_profile{kDefaultProfile};
  std::map<std::string, CustomProfile> custom;
  std::vector<DenyPath> deny;               // applies to every sandboxed profile
  std::vector<ConfigPath> runtime_sockets;  // beside the built-in list
  std::vector<ConfigPath> hooks;            // protected like the config
  std::vector<ConfigPath> protect;          // every sandboxed profile but devbox
  std::vector<ConfigPath> unix_sockets;     // the unix-socket allowlist (global files only)
  std::vector<FloorRule> floor;             // added to the built-in floor
  std::vector<std::string> floor_disable;   // built-in floor rule ids (global files only)
};

struct ConfigDoc {
  std::string text;
  std::string filename;  // for messages: "/etc/comet/sandbox.yaml"
};

// Parse and merge. An empty (or comment-only) document is an empty config.
Result<ProfileSet> merge(const std::vector<ConfigDoc>& global_docs,
                         const std::optional<ConfigDoc>& workspace_doc = std::nullopt);

struct ResolveContext {
  std::string workspace;    // absolute; needed by profiles that name it
  std::string home;         // absolute; "~"
  std::string tmp;          // absolute; "{tmp}"
  std::string config_home;  // $XDG_CONFIG_HOME; default home/.config
  std::string runtime_dir;  // $XDG_RUNTIME_DIR; optional (user runtime sockets)
  long long uid = -1;       // the invoking user; -1 unknown. /root is denied unless 0
  // A relative $XDG_CONFIG_HOME: git takes it from its own working
  // directory, so {workspace}/REL/git is where the host's git in the
  // workspace reads its config (protected; config_home stays the default).
  std::string config_home_relative = {};
  // $ZDOTDIR (absolute, or relative like config_home_relative): where the
  // host's zsh reads its rc files; the home table's zsh names are protected
  // there too (red team round 11).
  std::string zdotdir = {};
  // Every account's home directory (the passwd database, read by the
  // runtime): a workspace at or above any of them is refused as the
  // caller's own is, since a root caller's workspace profile would make
  // another user's rc files writable.
  std::vector<std::string> homes = {};
};

struct ResolvedProfile {
  std::string name;       // the profile resolved ("workspace" when asked for "")
  std::string base;       // the built-in it derives from
  bool sandboxed = true;  // false only for off
  // Absolute, normalised, de-duplicated host paths; "/" means everything.
  std::vector<std::string> read;   // readable (deny wins inside)
  std::vector<std::string> write;  // writable (deny and protect win inside)
  std::vector<std::string> deny;   // neither readable nor writable
  // Readable, never writable: hook and config sources, git's config and
  // hooks, shell rc files, agent and editor config (kProtected*, profile.cpp).
  // An entry may hold `*` (glob(3), expanded by the runtime:
  // SandboxInputs::globbed). A missing entry inside a writable tree gets an
  // empty placeholder: a directory, or a file for the entries also in
  // `protect_files`. An entry also in `protect_unless_dir` ({workspace}/.git)
  // is protected only when it is not a directory (a "gitdir:" file, or
  // missing: a directory placeholder then covers everything below it).
  std::vector<std::string> protect;
  std::vector<std::string> protect_files;
  std::vector<std::string> protect_unless_dir;
  // Entries of `protect` that are protected only while another path is
  // missing on the host (entry -> that path): the bare-repository names at
  // the workspace root (HEAD, config, objects, refs) while {workspace}/.git
  // is missing. The floor (auto_allow.hpp) does not ask about them.
  std::map<std::string, std::string> protect_if_missing;
  // What a missing file entry's placeholder holds (default: empty), keyed
  // like `protect` (a `*` entry covers its matches): .git/commondir gets
  // ".\n" (the repository itself), as git dies on an empty one.
  std::map<std::string, std::string> placeholder_content;
  // Pinned, not protected: a directory that exists inside a writable tree
  // is bound onto itself (still writable), so it cannot be renamed or
  // removed (EBUSY): {workspace}/.git/objects and .git/refs, which git needs
  // to take .git for a repository. A missing one, or one outside any
  // writable tree: nothing.
  std::vector<std::string> pin;
  bool network_restricted = false;  // connect/bind/send* and io_uring refused
  // Container-runtime API sockets (docker, podman, containerd, cri-o,
  // buildkit and the config's runtime_sockets) are made unreachable: every
  // sandboxed profile but devbox. `runtime_socket_dirs` are the runtimes'
  // own directories, hidden whole; the other sockets are hidden one by one
  // (profile_compile.hpp says how).
  bool block_runtime_sockets = false;
  std::vector<std::string> runtime_sockets;
  std::vector<std::string> runtime_socket_dirs;
  // The unix-socket rule (every sandboxed profile but devbox): a connect()
  // (or a sendto/sendmsg with an address) to a pathname unix socket that is
  // not in a place the profile can write is refused (EACCES) and reported,
  // unless the socket is one of `unix_sockets` (absolute, as configured).
  bool unix_socket_rule = false;
  std::vector<std::string> unix_sockets;
  // Resource limits; 0 = none. pids: tasks; memory: bytes (no swap beyond
  // it); tmp: bytes of the private /tmp tmpfs.
  struct Limits {
    long long pids = 0;
    long long memory = 0;
    long long tmp = 0;
  } limits;
};

// The built-in protected names (issue 22), relative to the workspace and to
// the home directory; a trailing "/" marks a directory, `*` one component.
// resolve() adds them to every sandboxed profile but devbox; the auto-allow
// floor (protected-path-write) asks about writes to them in any profile.
const std::vector<std::string>& protected_workspace_names();
const std::vector<std::string>& protected_home_names();

// A built-in's default limits (profile.hpp's table in docs/sandbox.md):
// workspace, read-only, strict: 2048 pids, 4 GiB, /tmp 1 GiB; devbox: 8192
// pids, 8 GiB, tmp 0 (the host's /tmp); off and unknown names: none.
ResolvedProfile::Limits builtin_limits(std::string_view builtin);

// Fail-closed: an unknown name, a missing context path a profile needs, or
// a path that does not expand to an absolute one is an error. "" resolves
// the set's default.
Result<ResolvedProfile> resolve(const ProfileSet& set, std::string_view name,
                                const ResolveContext& ctx);
// The built-ins alone (no config files).
Result<ResolvedProfile> resolve(std::string_view name, const ResolveContext& ctx);

// A container runtime's API socket, as a path a workload asks for: the
// file name of one the profiles hide (docker.sock, containerd.sock, ...),
// or anything below one of their runtime directories (/run/containerd/,
// also under /var/run or /run/user/N), or one of a few more sockets of the
// same kind that no profile needs to hide (cri-dockerd, dockershim,
// containerd's ttrpc). The runtime-socket violation surface.
bool is_runtime_socket(std::string_view path);

}  // namespace comet::capability
