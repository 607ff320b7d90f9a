// The rules of the auto-allow floor (auto_allow.hpp), shared by the files
// that hold them: floor_commands.cpp (command names, prefixes, and the
// rules of single commands), floor_git.cpp (git push and what git runs),
// floor_shells.cpp (the shells' options, files downloaded then run, the
// script-wide facts), floor_protected.cpp (protected-path-write) and
// auto_allow.cpp (the walk over a script, and the verdict). Internal: not
// installed, not part of the library's interface.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comet/capability/auto_allow.hpp"
#include "shell_reader.hpp"

namespace comet::capability::floor_rules {

using shell::kMaxDepth;
using shell::parse_script;
using shell::ParseError;
using shell::Pipeline;
using shell::Redirect;
using shell::Script;
using shell::Simple;
using shell::Stage;
using shell::Word;

struct Match {
  std::string rule;
  std::string reason;
};

struct Analysis {
  const Floor& floor;
  const AutoAllowContext& ctx;
  std::optional<Match> match;
  std::string unanalysable;  // why a script could not be read ("" when fine)
  // protected-path-write: absolute paths (a `*` is one component) and the
  // ones that count only as themselves ({workspace}/.git), not what is below.
  std::vector<std::string> prot, prot_exact;
  // Facts about the whole script, judged once the walk is over (order does
  // not matter: a loop or a function runs a later line before an earlier
  // one). See finish_script.
  std::string git_env_changed;           // what changed git's environment or config files
  std::string git_ran;                   // a git command that reads them
  std::vector<std::string> made_files;   // base names of files a download or a redirection wrote
  std::vector<std::string> ran_files;    // base names of files run as programs or scripts
  std::vector<std::string> arith_names;  // variables bash evaluates as arithmetic
  std::vector<std::string> code_vars;    // variables given a value that is not a plain number
  std::string made_link;                 // a symlink the script makes (ln -s)
  std::string recursive_rm;              // an rm -r the script runs
  bool pushed = false;                   // a git push the floor let through

  bool enabled(const char* id) const {
    return std::find(floor.builtin.begin(), floor.builtin.end(), id) != floor.builtin.end();
  }
  void hit(const char* id, std::string reason) {
    if (!match && enabled(id)) match = Match{id, std::move(reason)};
  }
  bool done() const { return match.has_value() || !unanalysable.empty(); }
};

// The command after its prefixes (env, nice, timeout, sudo, busybox, ...).
struct Unwrapped {
  std::vector<Word> argv;
  std::vector<std::string> env_names;  // NAME of each NAME=VALUE before the command
  std::vector<Word> env;               // the NAME=VALUE words themselves
  bool args_unknown = false;           // xargs: more arguments come from stdin
  bool cwd_unknown = false;            // env -C
  bool via_sudo = false;
};

// --- floor_commands.cpp: command names and prefixes ----------------------------

std::string base_name(const std::string& p);
bool is_assignment(const Word& w);
// NAME of NAME=V, NAME+=V, NAME[S]=V (the whole text when none of them).
std::string assigned_name(const std::string& text);
bool one_of(const std::string& s, std::initializer_list<const char*> names);
bool is_shell(const std::string& n);
bool is_interpreter(const std::string& n);
bool is_downloader(const std::string& n);
Unwrapped unwrap(std::vector<Word> argv);
// Where a path argument points, lexically, from `cwd`; nullopt when unknown.
std::optional<std::string> where(const Word& w, const std::optional<std::string>& cwd,
                                 const AutoAllowContext& ctx);

// --- floor_commands.cpp: the rules of one command ------------------------------

void rule_rm(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd);
void rule_git_config(Analysis& an, const Unwrapped& u);
void rule_chmod(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd);
void rule_dd(Analysis& an, const Unwrapped& u);
void rule_redirects(Analysis& an, const Simple& s);
bool is_mkfs(const std::string& n);
bool is_shutdown(const Unwrapped& u);
// A command-line tool that changes things elsewhere: a cluster, a cloud, a
// forge (kubectl, terraform, gh, aws, ...).
bool is_remote_tool(const std::string& n);
// Why the command deletes what lives elsewhere, which no sandbox can give
// back (kubectl delete, terraform destroy, gh repo delete, aws s3 rb,
// ...), or "".
std::string remote_destroy(const Unwrapped& u);
// Does this command run its stdin as code? (sh, bash -s, python3 -, ...)
bool runs_stdin(const Unwrapped& u);
bool stage_downloads(const Stage& st);
bool words_download(const std::vector<Word>& words, std::size_t from);
void rule_custom(Analysis& an, const Unwrapped& u);
bool has_fork_bomb(std::string_view t);

// --- floor_git.cpp: git push, git's config overrides, what git runs -------------

void rule_git(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd, int depth);
// A variable set in the script (NAME=V before a command, a bare assignment,
// export/declare/readonly/local/unset): a command git or a shell runs from it
// is read; one that changes where git finds its config is noted.
void note_variable(Analysis& an, const Word& assignment, const std::optional<std::string>& cwd,
                   int depth, bool prefix);
// A file the script writes whose name git reads config from (.gitconfig,
// config): noted in git_env_changed.
void note_written(Analysis& an, const std::string& path, const std::string& why);

// --- floor_shells.cpp: the options of sh, bash, dash, zsh, fish, ... -----------

// Reads a shell's argv: the -c script is read, a script file is noted in
// ran_files, an option it does not know asks.
void analyse_shell_argv(Analysis& an, const Unwrapped& u, const std::string& n,
                        const std::optional<std::string>& cwd, int depth);
// Files a command writes as a download (curl -o F, wget -O F, a URL's name).
void note_download_outputs(Analysis& an, const Unwrapped& u);
// The file an interpreter (python3 F, perl F) or a path (./F) runs.
void note_ran_file(Analysis& an, const Unwrapped& u, const std::string& n);
// The whole script's facts (above); called once after the walk.
void finish_script(Analysis& an);

// --- floor_protected.cpp: protected-path-write ---------------------------------

// Bash's brace expansion of one word, appended to out; false when it would
// make too many words (floor_protected.cpp).
bool brace_expand(const std::string& t, std::vector<std::string>& out, int depth = 0);

void rule_protected_redirects(Analysis& an, const Simple& s, const std::optional<std::string>& cwd);
void rule_git_dir_words(Analysis& an, const Unwrapped& u);
void rule_protected_args(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd);
void rule_awk(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd, int depth);
void rule_find(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd, int depth);

// --- floor_state.cpp: arithmetic, the shell's state, fds, symlinks ---------------

// Text bash evaluates as arithmetic: a $( ) or ` in it, or a positional
// parameter, asks; the variables it names are noted (finish_state).
void check_arith(Analysis& an, const std::string& expr, const std::string& what);
// A variable the script sets: `value` is its NAME=VALUE word, nullptr when
// the value cannot be known (read, for, printf -v). A state variable asks.
void note_value(Analysis& an, const std::string& name, const Word* value);
// The arithmetic in a command's words ($(( )), ${a[..]}, a[..]=), and exec
// of an input.
void rule_words_arith(Analysis& an, const Simple& s, const Unwrapped& u);
// The builtins that evaluate or change how bash runs what follows.
void rule_bash_state(Analysis& an, const Simple& s, const Unwrapped& u, const std::string& n);
// A shell's script file: a device or /proc file asks.
void rule_script_file(Analysis& an, const std::string& n, const Word& file);
// The script-wide facts of floor_state.cpp; called by finish_script.
void finish_state(Analysis& an);

// --- auto_allow.cpp: the walk (awk and find read the commands they run) ------

void analyse_simple(Analysis& an, const Simple& s, std::optional<std::string>& cwd, int depth);
void analyse_script(Analysis& an, std::string_view text, std::optional<std::string> cwd, int depth);

}  // namespace comet::capability::floor_rules
