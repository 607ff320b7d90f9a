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
  // work_tree: core.worktree, where the host's git takes the work tree's
  // top (relative paths of the configs run there); it names nothing to protect.
  enum class Kind { hooks_dir, program, config_file, work_tree };
  Kind kind;
  std::string key;    // lower-case section[.subsection].name as written
  std::string value;  // unquoted, unescaped
};

// A key whose value git runs or reads as code (git_config.cpp's table,
// checked against git-config(1) of git 2.39): `pattern` is lower-case
// "section.name", "section.*.name" (any subsection) or "section.+" (any
// name); `when` says which values count.
struct GitKeyRule {
  enum class When { always, bang /* "!..." */, not_bool, ext_url /* "ext::..." */ };
  const char* pattern;
  GitConfigRef::Kind kind;
  When when;
};
const std::vector<GitKeyRule>& git_executed_keys();

// The values of `text` (git-config(1) syntax: sections, "subsections",
// quotes, backslash escapes, # and ; comments, continued lines) under the
// keys of git_executed_keys(): core.hooksPath and init.templateDir
// (directories of hooks), include.path and includeIf.*.path (config
// files), and the programs. Malformed lines are skipped.
std::vector<GitConfigRef> git_config_refs(std::string_view text);

// The absolute paths those values name: a hooks directory (relative to
// `worktree`) and, when it lies below `worktree`, also the top directory
// of it there (.husky for .husky/_: husky's hooks run the scripts beside
// it); every word of a program's command line that holds a '/' (relative to
// `worktree`, "~/" to `home`); a config file (relative to `config_dir`,
// "~/" to `home`). Cleaned ("." and ".." resolved as text). In a program,
// $PWD, ${PWD}, $(git rev-parse --show-toplevel) and its backquoted form
// are `worktree`, $HOME and ${HOME} `home`; a program that builds a path
// from any other expansion ($X/bin/y, $(cmd)/y: a "$" or "`" with a "/"
// after it) names nothing: its key goes to `unresolved` (the sandbox
// refuses to start, red team round 11).
// A path whose `..` follows a name (`bin/../tools/x.sh`, `../../s/sub/../pc.sh`):
// the shell and the kernel take `bin/..` where `bin` really leads, so a
// directory replaced by a link moves it. A leading `..` does not count.
bool dotdot_after_name(const std::string& path);

std::vector<std::string> git_config_paths(const std::vector<GitConfigRef>& refs,
                                          const std::string& worktree,
                                          const std::string& config_dir, const std::string& home,
                                          std::vector<std::string>* unresolved = nullptr);

}  // namespace comet::capability
