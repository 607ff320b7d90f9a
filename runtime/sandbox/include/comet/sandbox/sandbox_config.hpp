// The runtime side of `comet-runtime sandbox`: who invoked it, which
// sandbox.yaml files apply, and the host facts the pure planner
// (capability/profile_compile.hpp) needs.
//
// Config files, in merge order (capability/profile.hpp merges them):
//   1. /etc/comet/sandbox.yaml              global, the administrator's
//      (COMET_SANDBOX_GLOBAL_CONFIG=FILE replaces this path: a test hook, so
//      tests never touch /etc; the file it names is protected like /etc's)
//   2. $XDG_CONFIG_HOME/comet/sandbox.yaml  global, the user's (default
//      ~/.config/comet/sandbox.yaml)
//   3. <workspace>/.comet/sandbox.yaml      the workspace's: may only add
// A missing file is skipped; an unreadable one is an error (fail-closed).
//
// The invoking user: SUDO_UID/SUDO_GID (and SUDO_USER's passwd entry) when
// running as root under sudo, else the caller's uid/gid. Under sudo the
// user's home, config and runtime dirs are used, never root's: HOME and
// XDG_CONFIG_HOME from the environment are ignored (sudo may have kept or
// reset them), ~ is the passwd home of SUDO_UID, the config home is
// ~/.config, the runtime dir /run/user/UID when it exists. The workload's
// HOME, USER and LOGNAME are set to that user's.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/capability/profile.hpp"
#include "comet/capability/profile_compile.hpp"

namespace comet::runtime {

using Environ = std::map<std::string, std::string>;
Environ current_environ();

struct Invoker {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
  std::string home;  // absolute, or "" when unknown
  bool via_sudo = false;
};

// getuid()/getgid() and the environment (SUDO_UID, SUDO_GID, HOME).
Result<Invoker> invoking_user(const Environ& env);

struct ConfigPaths {
  std::string global;     // /etc/comet/sandbox.yaml or $COMET_SANDBOX_GLOBAL_CONFIG
  std::string user;       // <config home>/comet/sandbox.yaml ("" when no home)
  std::string workspace;  // <workspace>/.comet/sandbox.yaml
};

capability::ResolveContext resolve_context(const Invoker& who, const std::string& workspace,
                                           const Environ& env);
ConfigPaths config_paths(const capability::ResolveContext& ctx, const Environ& env);

struct ConfigFileState {
  std::string path;
  std::string role;  // "global", "user", "workspace"
  bool loaded = false;
};

struct LoadedConfig {
  capability::ProfileSet set;
  std::vector<ConfigFileState> files;
};

// Reads the files that exist and merges them; errors carry file:line:col.
Result<LoadedConfig> load_sandbox_config(const ConfigPaths& paths);

// The planner's host facts: lstat/stat/realpath of each path, and "/"'s
// entries. Never fails: an unreadable path is "missing".
capability::HostPath host_path(const std::string& path);
// host_path() for one plan's many paths: the existing prefixes of missing
// paths (the workspace, home) are resolved once.
class HostPaths {
 public:
  capability::HostPath get(const std::string& path);

 private:
  std::map<std::string, std::optional<std::string>> heads_;
};
// Every mount point of the caller's mount namespace (/proc/self/mountinfo,
// unescaped).
std::vector<std::string> host_mount_points();
std::vector<capability::TopEntry> host_top_level();
// A protect or deny entry with a `*` (SandboxInputs::globbed): glob(3) of
// the pattern up to its last component holding a `*`, dot-names included
// (not . and ..), each match followed by the rest of the pattern; sorted.
// Matches nothing: empty.
std::vector<std::string> host_glob(const std::string& pattern);

// The workload's environment: the caller's, with the invoking user's HOME,
// USER and LOGNAME under sudo (sandbox_env() then drops the dangerous ones).
std::vector<std::string> workload_env(const Environ& env, const Invoker& who);

}  // namespace comet::runtime
