// What the host's git runs or reads because its config says so (issue 22,
// red team round 4): `core.hooksPath = .husky` makes .husky/pre-commit a
// hook the host's `git commit` runs, `core.fsmonitor = ./x.sh` runs a file
// of the workspace at every `git status`, `include.path` reads more config.
// A sandbox protects what these name when it lies where the command can
// write. Pure: the caller reads the files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace comet::capability {

// One config value that names a file or a program.
struct GitConfigRef {
  enum class Kind { hooks_dir, program, config_file };
  Kind kind;
  std::string key;    // lower-case section[.subsection].name as written
  std::string value;  // unquoted, unescaped
};

// The values of `text` (git-config(1) syntax: sections, "subsections",
// quotes, backslash escapes, # and ; comments, continued lines) under the
// keys that name one: core.hooksPath (a directory of hooks);
// include.path and includeIf.*.path (config files); and the programs:
// core.fsmonitor (not a boolean), core.sshCommand, core.editor,
// core.pager, core.askPass, sequence.editor, diff.external,
// diff.*.textconv, diff.*.command, merge.*.driver, filter.*.clean,
// filter.*.smudge, filter.*.process, credential.helper,
// credential.*.helper, gpg.program, gpg.*.program, pager.*, core.gitProxy,
// gpg.ssh.defaultKeyCommand, interactive.diffFilter, remote.*.uploadpack,
// remote.*.receivepack, difftool.*.cmd, mergetool.*.cmd, guitool.*.cmd,
// browser.*.cmd, and alias.* and submodule.*.update that start with "!".
// Malformed lines are skipped.
std::vector<GitConfigRef> git_config_refs(std::string_view text);

// The absolute paths those values name: a hooks directory (relative to
// `worktree`) and, when it lies below `worktree`, also the top directory
// of it there (.husky for .husky/_: husky's hooks run the scripts beside
// it); every word of a program's command line that holds a '/' (relative to
// `worktree`, "~/" to `home`); a config file (relative to `config_dir`,
// "~/" to `home`). Cleaned ("." and ".." resolved as text).
std::vector<std::string> git_config_paths(const std::vector<GitConfigRef>& refs,
                                          const std::string& worktree,
                                          const std::string& config_dir, const std::string& home);

}  // namespace comet::capability
