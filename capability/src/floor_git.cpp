// The floor's git rules (floor_rules.hpp): git push by allowlist, and what
// else git runs. Git runs commands from its config (core.pager, alias.X,
// core.sshCommand, ...), its environment (GIT_EDITOR, GIT_SSH_COMMAND, ...)
// and some of its options (rebase -x, submodule foreach, bisect run, ...):
// each such value is read as the script git gives to sh -c. A change of
// where git finds its config (GIT_CONFIG_*, HOME, XDG_CONFIG_HOME, GIT_DIR,
// a written .gitconfig) anywhere in the script makes any git command in it
// ask (red team round 11), and a git subcommand the floor does not know
// (an alias) asks.
#include <algorithm>

#include "floor_rules.hpp"
#include "util.hpp"

namespace comet::capability::floor_rules {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool starts(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

// Config keys that change neither what a push does nor what git runs.
bool harmless_git_key(const std::string& key) {
  for (const char* p : {"user.", "color.", "advice.", "log.", "format.", "i18n.", "column.",
                        "status.", "commit.", "tag.", "blame.", "grep.", "http."})
    if (starts(key, p)) return true;
  return one_of(
      key, {"core.quotepath",        "core.autocrlf",    "core.safecrlf",       "core.filemode",
            "core.ignorecase",       "core.longpaths",   "core.abbrev",         "safe.directory",
            "init.defaultbranch",    "protocol.version", "merge.conflictstyle", "merge.ff",
            "pull.rebase",           "pull.ff",          "rebase.autosquash",   "rebase.autostash",
            "fetch.prune",           "gc.auto",          "maintenance.auto",    "rerere.enabled",
            "diff.renames",          "diff.algorithm",   "diff.colormoved",     "diff.noprefix",
            "diff.mnemonicprefix",   "diff.relative",    "diff.submodule",      "gpg.format",
            "credential.interactive"});
}

enum class KeyKind {
  harmless,  // changes nothing the floor judges
  script,    // git runs the value as a command (through sh -c)
  alias,     // alias.X: a script after '!', else git's own arguments
  helper,    // credential helper: a script after '!', a helper's name, or a path
  other,     // anything else: a push or an alias may do anything with it
};

// git-config(1): the keys whose value git runs.
KeyKind classify_key(const std::string& key) {
  if (harmless_git_key(key)) return KeyKind::harmless;
  const std::string section = key.substr(0, key.find('.'));
  const std::string var = key.substr(key.rfind('.') + 1);
  const bool sub = std::count(key.begin(), key.end(), '.') >= 2;
  if (one_of(key, {"core.pager", "core.editor", "sequence.editor", "core.sshcommand",
                   "core.fsmonitor", "core.askpass", "core.gitproxy", "gpg.program",
                   "diff.external", "interactive.difffilter", "gpg.ssh.defaultkeycommand"}))
    return KeyKind::script;
  if (section == "pager" && !sub) return KeyKind::script;
  if (sub && section == "diff" && one_of(var, {"command", "textconv"})) return KeyKind::script;
  if (sub && section == "gpg" && var == "program") return KeyKind::script;
  if (sub && section == "filter" && one_of(var, {"clean", "smudge", "process"}))
    return KeyKind::script;
  if (sub && section == "merge" && var == "driver") return KeyKind::script;
  if (sub && one_of(section, {"difftool", "mergetool", "browser", "man"}) && var == "cmd")
    return KeyKind::script;
  if (section == "sendemail" && var.size() > 3 && var.compare(var.size() - 3, 3, "cmd") == 0)
    return KeyKind::script;
  if (section == "alias") return KeyKind::alias;
  if (section == "credential" && var == "helper") return KeyKind::helper;
  return KeyKind::other;
}

// A variable whose value a program runs as a command: git's, a pager's, an
// editor's, a shell's prompt hook.
bool command_variable(const std::string& n) {
  return one_of(
      n, {"GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "GIT_EXTERNAL_DIFF", "GIT_SSH_COMMAND",
          "GIT_SSH", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_PROXY_COMMAND", "EDITOR", "VISUAL", "PAGER",
          "MANPAGER", "SYSTEMD_PAGER", "PROMPT_COMMAND", "LESSOPEN", "LESSCLOSE"});
}

// A variable that changes which config git reads, which git runs or which
// repository it pushes from.
bool git_source_variable(const std::string& n) {
  if (one_of(n, {"HOME", "XDG_CONFIG_HOME", "PATH"})) return true;
  if (!starts(n, "GIT_") || command_variable(n)) return false;
  for (const char* p : {"GIT_TRACE", "GIT_AUTHOR_", "GIT_COMMITTER_"})
    if (starts(n, p)) return false;
  return !one_of(
      n, {"GIT_CURL_VERBOSE", "GIT_TERMINAL_PROMPT", "GIT_MERGE_AUTOEDIT", "GIT_OPTIONAL_LOCKS",
          "GIT_PROGRESS_DELAY", "GIT_FLUSH", "GIT_LFS_SKIP_SMUDGE", "GIT_SSL_NO_VERIFY"});
}

// Reads `text` as the script sh -c gets from git; a value with expansions asks.
void judge_value(Analysis& an, const Word& w, const std::string& what, const std::string& text,
                 const std::optional<std::string>& cwd, int depth) {
  if (an.done() || text.empty()) return;
  if (w.expansion) {
    an.unanalysable = what + " is a command given by an expansion (" + w.text + ")";
    return;
  }
  analyse_script(an, text, cwd, depth + 1);
  if (an.done()) return;
  // Git hands the command a file (the commit message, a diff) or its
  // stdin (what a pager shows), and the script can write both: a shell or
  // an interpreter given no inline code, sed, awk or xargs runs them as
  // code (GIT_EDITOR=sh git commit -m 'git push -f' -e).
  try {
    for (const Pipeline& p : parse_script(text, depth + 1).pipelines) {
      for (const Simple& s : p.stages.empty() ? std::vector<Simple>{} : p.stages[0].simples) {
        Unwrapped u = unwrap(s.words);
        if (u.argv.empty()) continue;
        const std::string n = base_name(u.argv[0].text);
        bool inline_code = false;
        for (std::size_t k = 1; k < u.argv.size() && !inline_code; ++k) {
          const std::string& a = u.argv[k].text;
          inline_code = (a.size() > 1 && a[0] == '-' && a[1] != '-' &&
                         a.find_first_of("ceEm", 1) != std::string::npos) ||
                        one_of(a, {"--eval", "--command"});
        }
        if ((is_interpreter(n) && !inline_code) ||
            one_of(n, {"sed", "awk", "gawk", "mawk", "nawk", "xargs", "source", ".", "eval"})) {
          an.unanalysable = what + "=" + text + ": " + n +
                            " may run what git gives it (a file or stdin the command can write) "
                            "as code";
          return;
        }
      }
    }
  } catch (const ParseError&) {
  }
}

// git -c KEY=VALUE: reads what git runs from it. True when the key is one
// a push or an alias may act on.
bool judge_config(Analysis& an, const Word& w, const std::string& kv,
                  const std::optional<std::string>& cwd, int depth) {
  const std::size_t eq = kv.find('=');
  const std::string key = lower(kv.substr(0, eq));
  const std::string value = eq == std::string::npos ? "" : kv.substr(eq + 1);
  const std::string what = "git -c " + key;
  switch (classify_key(key)) {
    case KeyKind::harmless:
      return false;
    case KeyKind::script:
      judge_value(an, w, what, value, cwd, depth);
      return false;
    case KeyKind::alias:
      judge_value(an, w, what, !value.empty() && value[0] == '!' ? value.substr(1) : "git " + value,
                  cwd, depth);
      return true;
    case KeyKind::helper: {
      if (!value.empty() && value[0] == '!') {
        judge_value(an, w, what, value.substr(1), cwd, depth);
      } else if (!value.empty()) {
        const std::string first = value.substr(0, value.find(' '));
        if (!one_of(first, {"store", "cache", "osxkeychain", "manager", "manager-core", "libsecret",
                            "gnome-keyring", "wincred"}))
          judge_value(an, w, what, value, cwd, depth);
      }
      return false;
    }
    case KeyKind::other:
      break;
  }
  return true;
}

// Options of git subcommands whose value git runs through sh -c.
bool script_option(const std::string& sub, const std::string& opt) {
  if (sub == "rebase") return one_of(opt, {"-x", "--exec"});
  if (sub == "difftool") return one_of(opt, {"-x", "--extcmd"});
  if (sub == "filter-branch")
    return one_of(opt, {"--env-filter", "--tree-filter", "--index-filter", "--parent-filter",
                        "--msg-filter", "--commit-filter", "--tag-name-filter", "--setup"});
  if (one_of(sub, {"fetch", "pull", "ls-remote", "fetch-pack", "archive", "clone"}))
    return one_of(opt, {"--upload-pack", "--exec", "-u"}) && !(opt == "-u" && sub != "clone");
  return false;
}

// The commands a git subcommand runs from its arguments: rebase -x CMD,
// difftool -x CMD, filter-branch --tree-filter CMD, grep -O CMD, fetch
// --upload-pack CMD, submodule foreach CMD, bisect run CMD ARGS (red team
// round 11: `git submodule foreach 'git push -f'` was auto-allowed).
void judge_subcommand_runs(Analysis& an, const std::vector<Word>& v, std::size_t i,
                           const std::string& sub, const std::optional<std::string>& cwd,
                           int depth) {
  if (sub == "submodule" || sub == "bisect") {
    std::size_t k = i;
    while (k < v.size() && starts(v[k].text, "-")) ++k;  // -q, --quiet
    const char* verb = sub == "submodule" ? "foreach" : "run";
    if (k >= v.size() || v[k].text != verb) return;
    ++k;
    if (sub == "bisect") {  // bisect run CMD ARGS: an argv
      Simple tail;
      tail.words.assign(v.begin() + static_cast<long>(k), v.end());
      std::optional<std::string> c = cwd;
      if (!tail.words.empty()) analyse_simple(an, tail, c, depth + 1);
      return;
    }
    // foreach [--recursive] CMD...: the words joined, run by sh -c.
    while (k < v.size() && one_of(v[k].text, {"--recursive", "-q", "--quiet"})) ++k;
    std::string text;
    for (std::size_t j = k; j < v.size(); ++j) {
      if (v[j].expansion) {
        an.unanalysable = "git submodule foreach of an expansion (" + v[j].text + ")";
        return;
      }
      text += (j > k ? " " : "") + v[j].text;
    }
    analyse_script(an, text, cwd, depth + 1);
    return;
  }
  for (std::size_t k = i; k < v.size() && !an.done(); ++k) {
    const std::string& a = v[k].text;
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-') continue;
    const std::string what = "git " + sub + " " + a.substr(0, a.find('='));
    if (starts(a, "--")) {
      const std::size_t eq = a.find('=');
      const std::string name = a.substr(0, eq);
      if (sub == "grep" && name == "--open-files-in-pager" && eq != std::string::npos)
        judge_value(an, v[k], what, a.substr(eq + 1), cwd, depth);
      if (!script_option(sub, name)) continue;
      if (eq != std::string::npos) {
        judge_value(an, v[k], what, a.substr(eq + 1), cwd, depth);
      } else if (k + 1 < v.size()) {
        judge_value(an, v[k + 1], what, v[k + 1].text, cwd, depth);
        ++k;
      }
      continue;
    }
    // A cluster of short options: the one that takes a value takes the
    // rest of the word, or the next word when it is last (-ix CMD, -xCMD).
    for (std::size_t c = 1; c < a.size(); ++c) {
      const std::string opt = std::string("-") + a[c];
      if (sub == "grep" && a[c] == 'O') {  // -O[PAGER]: only attached
        if (c + 1 < a.size()) judge_value(an, v[k], what, a.substr(c + 1), cwd, depth);
        break;
      }
      if (!script_option(sub, opt)) continue;
      if (c + 1 < a.size()) {
        judge_value(an, v[k], what, a.substr(c + 1), cwd, depth);
      } else if (k + 1 < v.size()) {
        judge_value(an, v[k + 1], what, v[k + 1].text, cwd, depth);
        ++k;
      }
      break;
    }
  }
}

// git's own commands that do not push and whose arguments the floor reads
// as far as it needs to; any other name is an alias or a git-NAME program.
bool known_subcommand(const std::string& sub) {
  static const std::initializer_list<const char*> kKnown = {"status",
                                                            "log",
                                                            "diff",
                                                            "show",
                                                            "add",
                                                            "commit",
                                                            "fetch",
                                                            "pull",
                                                            "branch",
                                                            "checkout",
                                                            "switch",
                                                            "restore",
                                                            "reset",
                                                            "stash",
                                                            "tag",
                                                            "merge",
                                                            "rebase",
                                                            "cherry-pick",
                                                            "rev-parse",
                                                            "ls-files",
                                                            "grep",
                                                            "blame",
                                                            "init",
                                                            "clone",
                                                            "config",
                                                            "remote",
                                                            "submodule",
                                                            "worktree",
                                                            "describe",
                                                            "shortlog",
                                                            "mv",
                                                            "rm",
                                                            "clean",
                                                            "bisect",
                                                            "notes",
                                                            "archive",
                                                            "apply",
                                                            "am",
                                                            "format-patch",
                                                            "gc",
                                                            "help",
                                                            "version",
                                                            "cat-file",
                                                            "ls-tree",
                                                            "for-each-ref",
                                                            "reflog",
                                                            "show-ref",
                                                            "symbolic-ref",
                                                            "rev-list",
                                                            "count-objects",
                                                            "fsck",
                                                            "prune",
                                                            "revert",
                                                            "sparse-checkout",
                                                            "var",
                                                            "whatchanged",
                                                            "range-diff",
                                                            "maintenance",
                                                            "name-rev",
                                                            "ls-remote",
                                                            "difftool",
                                                            "filter-branch",
                                                            "mergetool",
                                                            "bundle",
                                                            "merge-base",
                                                            "show-branch",
                                                            "cherry",
                                                            "diff-tree",
                                                            "diff-files",
                                                            "diff-index",
                                                            "hash-object",
                                                            "update-index",
                                                            "update-ref",
                                                            "read-tree",
                                                            "write-tree",
                                                            "commit-tree",
                                                            "mktree",
                                                            "check-ignore",
                                                            "check-attr",
                                                            "check-ref-format",
                                                            "interpret-trailers",
                                                            "stripspace",
                                                            "merge-file",
                                                            "merge-tree",
                                                            "verify-commit",
                                                            "verify-tag",
                                                            "pack-refs",
                                                            "repack",
                                                            "rerere",
                                                            "request-pull",
                                                            "annotate",
                                                            "column",
                                                            "stage",
                                                            "patch-id",
                                                            "mailinfo",
                                                            "mailsplit",
                                                            "fetch-pack",
                                                            "commit-graph",
                                                            "multi-pack-index",
                                                            "check-mailmap",
                                                            "verify-pack",
                                                            "unpack-objects",
                                                            "index-pack",
                                                            "pack-objects",
                                                            "fast-export",
                                                            "show-index",
                                                            "bugreport",
                                                            "credential"};
  return std::any_of(kKnown.begin(), kKnown.end(), [&](const char* k) { return sub == k; });
}

// git push's options that cannot rewrite or delete what the remote has.
bool plain_push_option(const std::string& a) {
  const std::string name = a.substr(0, a.find('='));
  return one_of(name, {"-u",
                       "--set-upstream",
                       "-q",
                       "--quiet",
                       "-v",
                       "--verbose",
                       "-n",
                       "--dry-run",
                       "--porcelain",
                       "--progress",
                       "--no-progress",
                       "--tags",
                       "--follow-tags",
                       "--no-follow-tags",
                       "--atomic",
                       "--no-atomic",
                       "--signed",
                       "--no-signed",
                       "--no-verify",
                       "--verify",
                       "--thin",
                       "--no-thin",
                       "-4",
                       "-6",
                       "--ipv4",
                       "--ipv6",
                       "--all",
                       "--branches",
                       "--recurse-submodules",
                       "--no-recurse-submodules",
                       "--no-force-with-lease"});
}

void rule_push_words(Analysis& an, const std::vector<Word>& v, std::size_t i) {
  for (std::size_t k = i; k < v.size(); ++k) {
    const std::string& a = v[k].text;
    if (v[k].expansion) {
      an.unanalysable = "git push with an expansion (" + a + ")";
      return;
    }
    // A glob or brace can spell a +refspec or :ref from a file's name
    // (touch ./+main; git push origin ?main: red team round 20).
    if (v[k].glob || v[k].brace) {
      an.unanalysable = "git push with a pattern the shell expands (" + a + ")";
      return;
    }
    if (one_of(a, {"-o", "--push-option", "--repo"})) {
      ++k;
      continue;
    }
    if (starts(a, "--push-option=") || starts(a, "--repo=")) continue;
    if (a == "-d" || starts(a, "--del") || starts(a, "--prune")) {
      an.hit("git-push-force", "git push " + a + " deletes remote refs");
      return;
    }
    if (a.size() > 1 && a[0] == '-') {
      if (plain_push_option(a)) continue;
      an.hit("git-push-force", "git push " + a +
                                   " (an option that can rewrite remote history; "
                                   "the floor allows only the plain ones)");
      return;
    }
    if (a.size() > 1 && a[0] == '+') {
      an.hit("git-push-force", "git push " + a + " (a +refspec force-updates the remote ref)");
      return;
    }
    if (a.size() > 1 && a[0] == ':') {
      an.hit("git-push-force", "git push " + a + " (an empty source deletes the remote ref)");
      return;
    }
  }
}

}  // namespace

void note_variable(Analysis& an, const Word& w, const std::optional<std::string>& cwd, int depth,
                   bool prefix) {
  const std::size_t eq = w.text.find('=');
  const std::string name = assigned_name(w.text);
  const std::string value = eq == std::string::npos ? "" : w.text.substr(eq + 1);
  if (eq != std::string::npos) note_value(an, name, &w);
  if (an.done()) return;
  if (command_variable(name)) {
    if (eq == std::string::npos) return;  // export NAME: the value it had
    std::string text = value;
    if (starts(name, "LESS")) text.erase(0, text.find_first_not_of('|'));  // LESSOPEN='|cmd %s'
    judge_value(an, w, name, text, cwd, depth);
    return;
  }
  // Files a shell runs before its script (bash(1) BASH_ENV, sh(1) ENV,
  // zsh's ZDOTDIR/.zshenv): what they hold is not in the command.
  if (one_of(name, {"BASH_ENV", "ENV", "ZDOTDIR"}) && !value.empty()) {
    an.unanalysable = name + "=" + value + " makes a shell run a file first";
    return;
  }
  if (git_source_variable(name) && an.git_env_changed.empty())
    an.git_env_changed = (prefix ? "" : "sets ") + name;
}

void note_written(Analysis& an, const std::string& path, const std::string& why) {
  const std::string b = base_name(path);
  const bool gitconfig = b == ".gitconfig" || b == "gitconfig" || b == "config" ||
                         (b.size() > 10 && b.compare(b.size() - 10, 10, ".gitconfig") == 0);
  if (gitconfig && an.git_env_changed.empty()) an.git_env_changed = why + " " + path;
}

// git push (and the commands that push for it) by allowlist: an option the
// floor does not know, a config override (-c, --config-env, GIT_CONFIG_*,
// HOME, GIT_DIR in the environment), an alias or a subcommand named by an
// expansion asks, rather than a list of the spellings of --force (red team
// rounds 8, 9 and 11 found them faster than they could be listed).
void rule_git(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd, int depth) {
  const auto& v = u.argv;
  const std::string prog = base_name(v[0].text);
  std::string sub = starts(prog, "git-") ? prog.substr(4) : "";
  std::vector<std::string> overrides;  // what a push or an alias may act on
  std::string any;                     // what changes every git command, unreadably
  for (const std::string& e : u.env_names)
    if (git_source_variable(e)) overrides.push_back(e + "=...");
  std::size_t i = 1;
  // Where git runs: the script's directory, then each -C (nullopt: unknown).
  std::optional<std::string> dir = cwd;
  while (sub.empty() && i < v.size() && v[i].text.size() > 1 && v[i].text[0] == '-') {
    const std::string& a = v[i].text;
    if (a == "-C")
      dir = i + 1 < v.size() && !v[i + 1].glob && !v[i + 1].brace ? where(v[i + 1], dir, an.ctx)
                                                                  : std::nullopt;
    const bool takes = one_of(
        a, {"-C", "-c", "--config-env", "--exec-path", "--git-dir", "--work-tree", "--namespace"});
    const Word& val =
        a == "-c" || a == "--config-env" ? (i + 1 < v.size() ? v[i + 1] : v[i]) : v[i];
    if (a == "-c" || starts(a, "-c")) {
      const std::string kv = a == "-c" ? (i + 1 < v.size() ? v[i + 1].text : "") : a.substr(2);
      if (judge_config(an, a == "-c" ? val : v[i], kv, cwd, depth)) {
        overrides.push_back("git -c " + kv);
        const std::string key = lower(kv.substr(0, kv.find('=')));
        if (classify_key(key) == KeyKind::other && any.empty())
          any = "git -c " + key + " (a setting the floor does not know)";
      }
    }
    if (a == "--config-env" || starts(a, "--config-env=")) {
      const std::string kv = a == "--config-env" ? val.text : a.substr(a.find('=') + 1);
      const std::string key = lower(kv.substr(0, kv.find('=')));
      if (!harmless_git_key(key)) {
        overrides.push_back("git --config-env " + kv);
        if (any.empty()) any = "git --config-env " + kv + " (a value from the environment)";
      }
    }
    if (starts(a, "--exec-path") && a != "--exec-path") {
      overrides.push_back("git " + a);
      if (any.empty()) any = "git " + a + " (runs git's programs from another directory)";
    }
    if (starts(a, "--git-dir")) overrides.push_back("git " + a + " (another repository's config)");
    i += takes && a.find('=') == std::string::npos ? 2 : 1;
  }
  for (const Word& e : u.env)
    if (e.text.rfind("GIT_EXEC_PATH=", 0) == 0 && any.empty())
      any = "GIT_EXEC_PATH (runs git's programs from another directory)";
  if (an.done()) return;
  if (sub.empty()) {
    if (i >= v.size()) return;  // git --version, git -h
    if (v[i].expansion) {
      an.unanalysable = "git with a subcommand named by an expansion (" + v[i].text + ")";
      return;
    }
    sub = v[i].text;
    ++i;
  }
  if (an.git_ran.empty()) an.git_ran = "git " + sub;
  const bool pushes = one_of(sub, {"push", "send-pack", "http-push"});
  if (!pushes && !known_subcommand(sub)) {
    // An alias (or a git-NAME program): what it runs is in the config
    // (red team round 11: the user's own `alias.pf = push --force`).
    if (!overrides.empty()) {
      an.hit("git-push-force",
             overrides[0] + " with git " + sub + " can make any push a forced one");
      return;
    }
    an.unanalysable = "git " + sub + " is not a git command the floor knows: an alias or a git-" +
                      sub + " program may run anything";
    return;
  }
  if (pushes && !overrides.empty()) {
    an.hit("git-push-force", overrides[0] + " can make a push a forced one");
    return;
  }
  if (sub == "send-pack" || sub == "http-push") {
    an.hit("git-push-force", "git " + sub + " pushes with its own --force, --mirror and +refspec");
    return;
  }
  if (sub == "push") {
    rule_push_words(an, v, i);
    // The workspace's own repository has its config protected, read by
    // this verdict; another one's (unpacked or fetched into /tmp by the
    // same script: python3 -m tarfile, wget -r, red team round 20; or moved
    // or linked into the workspace: round 21) can make the push a mirror or
    // a forced one. So a push runs at the workspace's top, or asks.
    if (!an.done() && (!dir || an.ctx.workspace.empty() || *dir != an.ctx.workspace))
      an.unanalysable = "git push from " + (dir ? *dir : std::string("a directory not known")) +
                        ", not the workspace's top (its repository's config may not be one the "
                        "sandbox protects)";
    else if (!an.done())
      an.pushed = true;
    return;
  }
  if (!any.empty()) {
    an.unanalysable = any + " with git " + sub;
    return;
  }
  judge_subcommand_runs(an, v, i, sub, cwd, depth);
}

}  // namespace comet::capability::floor_rules
