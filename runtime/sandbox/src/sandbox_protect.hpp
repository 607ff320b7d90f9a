// What the sandbox protects because the host reads it (sandbox_cli.cpp's
// prepare and plan): the paths git's config names, the modules' git
// directories, and where a symlink in a protected directory leads.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/capability/profile.hpp"

namespace comet::runtime::sandbox_parts {

// The git directory a `.git` entry at `at` names ("" if none).
std::string git_dir_of(const std::string& at);

// The configs the host's git takes from its environment (the caller's,
// which the host's git shares): GIT_CONFIG_GLOBAL and GIT_CONFIG_SYSTEM
// name files; GIT_CONFIG_COUNT with GIT_CONFIG_KEY_<n>/GIT_CONFIG_VALUE_<n>
// give entries, written out here as a config's text, with the variables
// that say what a config key would (GIT_SSH_COMMAND, GIT_EXEC_PATH, ...);
// GIT_DIR and GIT_COMMON_DIR name git directories.
struct GitEnvConfigs {
  std::vector<std::string> files;
  std::string text;
  std::vector<std::string> git_dirs;
};
// CWD: where a relative GIT_CONFIG_GLOBAL is taken from. An environment
// git would refuse (a malformed GIT_CONFIG_PARAMETERS) is an error.
Result<GitEnvConfigs> git_env_configs(const std::map<std::string, std::string>& env,
                                      const std::string& cwd);

// The git directories the searches found (the repository holding the
// workspace or a write path, the nested ones) and the `.git` symlinks that
// name them: the plan follows the symlinks in their control files and
// pins those chains (sandbox_cli.cpp plan_inputs; red team round 16).
struct GitDirs {
  std::vector<std::string> dirs;
  std::vector<std::string> dot_git_links;
};

// Adds to set.protect what the host's git runs or reads because its config
// says so, and the modules' git directories the built-in entries miss.
// Refuses a program value it cannot name (built by a shell expansion).
// WALK_CUT: where the search for nested repositories stopped short ("": it
// saw everything); the caller fails closed when the profile writes there.
Status protect_git_config_paths(const std::string& ws, const capability::ResolveContext& ctx,
                                const GitEnvConfigs& genv, capability::ProfileSet& set,
                                std::string* walk_cut, GitDirs* found);

// The same for a profile's write paths outside the workspace (TREES): the
// workspace's table at every repository top in or below each, and what the
// configs of those repositories and of the one holding each tree name.
// WALK_CUT: where a search stopped short (the caller fails closed).
// WORKSPACE: not searched again where a tree holds it.
Status protect_write_trees(const std::vector<std::string>& trees, const std::string& workspace,
                           const capability::ResolveContext& ctx, const GitEnvConfigs& genv,
                           capability::ProfileSet& set, std::string* walk_cut, GitDirs* found);

// Where the symlinks inside the protected directory DIR lead (16 levels,
// BUDGET directories and links): OUT gets what to protect, PINS the further links of
// chains, to pin (sandbox_protect.cpp); CUT is set when a limit left
// entries unread (the caller fails closed). LINKED (when given) gets the
// regular files in it that have more than one name (hard links), and the
// links that lead through `dir/..` ("PATH -> TEXT"): both refused.
void protect_link_targets(const std::string& dir, int depth, int& budget,
                          std::vector<std::string>& out, std::vector<std::string>& pins, bool* cut,
                          std::vector<std::string>* linked = nullptr);

}  // namespace comet::runtime::sandbox_parts
