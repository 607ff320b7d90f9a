// The permission layer (auto_allow.hpp): the walk over a command and the
// scripts it runs (shell_reader.hpp reads them), the floor's rules at each
// simple command (floor_rules.hpp), and the verdict.
#include "comet/capability/auto_allow.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "floor_rules.hpp"
#include "util.hpp"

namespace comet::capability {

namespace floor_rules {

namespace {

// The rules that look at one command: its name, options and operands.
void check_command(Analysis& an, const Unwrapped& u, const std::string& n,
                   const std::optional<std::string>& cwd, int depth) {
  if (n == "rm") rule_rm(an, u, cwd);
  if (n == "git" || n.rfind("git-", 0) == 0) {
    rule_git(an, u, cwd, depth);
    rule_git_config(an, u);
  }
  if (n == "chmod" || n == "chown" || n == "chgrp") rule_chmod(an, u, cwd);
  if (n == "dd") rule_dd(an, u);
  if (is_mkfs(n)) an.hit("mkfs", n + " formats or repartitions a disk");
  if (one_of(n, {"sudo", "sudoedit", "su", "doas", "pkexec", "run0"}))
    an.hit("sudo", n + " runs a command as another user");
  if (is_shutdown(u)) an.hit("shutdown", n + " stops or restarts the machine");
  if (std::string why = remote_destroy(u); !why.empty()) an.hit("remote-destroy", why);
  rule_protected_args(an, u, cwd);
  if (!an.done()) rule_git_dir_words(an, u);
  if (one_of(n, {"awk", "gawk", "mawk", "nawk", "busybox-awk"})) rule_awk(an, u, cwd, depth);
  if (n == "find") rule_find(an, u, cwd, depth);
  rule_custom(an, u);
}

// Code the command runs (eval, source, an interpreter, sh -c): a download
// run as code is on the floor; a script is read too.
void analyse_code(Analysis& an, const Unwrapped& u, const std::string& n,
                  const std::optional<std::string>& cwd, int depth) {
  if (n == "eval") {
    if (words_download(u.argv, 1)) {
      an.hit("pipe-to-shell", "eval runs what a download printed");
      return;
    }
    std::string text;
    for (std::size_t i = 1; i < u.argv.size(); ++i) {
      if (u.argv[i].expansion) {
        an.unanalysable = "eval of an expansion (" + u.argv[i].text + ")";
        return;
      }
      text += (i > 1 ? " " : "") + u.argv[i].text;
    }
    analyse_script(an, text, cwd, depth + 1);
    return;
  }
  if (n == "source" || n == ".") {
    if (words_download(u.argv, 1)) {
      an.hit("pipe-to-shell", n + " runs what a download printed");
      return;
    }
    // . <(echo git push -f): what runs is what a command printed.
    for (std::size_t i = 1; i < u.argv.size(); ++i)
      if (u.argv[i].process_sub || !u.argv[i].subs.empty())
        an.unanalysable = n + " of what a command prints (" + u.argv[i].text + ")";
    return;
  }
  if (!is_interpreter(n)) return;
  // bash <(curl ...), python3 <(wget -O- ...)
  for (std::size_t i = 1; i < u.argv.size(); ++i) {
    if (u.argv[i].process_sub && words_download(u.argv, i)) {
      an.hit("pipe-to-shell", n + " runs a script straight from a download");
      return;
    }
    if (u.argv[i].process_sub && is_shell(n)) {
      an.unanalysable = n + " runs what a command prints (" + u.argv[i].text + ")";
      return;
    }
  }
  if (!is_shell(n)) return;
  analyse_shell_argv(an, u, n, cwd, depth);
}

void analyse_list(Analysis& an, const Script& sc, std::optional<std::string>& cwd, int depth);

// Commands whose arguments are data, never a command they run.
bool data_only(const std::string& n) {
  return one_of(n, {"echo", "printf",  "grep",   "egrep",   "fgrep", "rg",   "ag",   "cat",
                    "less", "more",    "head",   "tail",    "wc",    "sort", "uniq", "test",
                    "[",    "[[",      "true",   "false",   ":",     "man",  "info", "which",
                    "type", "whereis", "whatis", "apropos", "git",   "jq"});
}

// What a download may be piped into: commands that read stdin as data
// (python3 -m json.tool, jq, checksums, decompressors, pagers, tee).
bool consumes_data(const Unwrapped& u, const std::string& n) {
  if (data_only(n) && n != "git") return true;
  if (one_of(n, {"tee",     "cut",    "tr",     "sha256sum", "sha512sum", "sha1sum", "md5sum",
                 "b2sum",   "base64", "gunzip", "zcat",      "xz",        "unxz",    "bzip2",
                 "bunzip2", "zstd",   "od",     "hexdump",   "xxd",       "file",    "cmp",
                 "diff",    "column", "fold",   "nl",        "gpg",       "sponge",  "pv",
                 "yq",      "gzip",   "tar",    "unzip",     "less",      "more"}))
    return true;
  // An interpreter given its program inline (python3 -c, perl -e, node -e,
  // python3 -m json.tool): stdin is the program's data, as before; a
  // program file (bash /dev/stdin) is not.
  if (!is_interpreter(n) || is_shell(n)) return false;
  for (std::size_t i = 1; i < u.argv.size(); ++i) {
    const std::string& a = u.argv[i].text;
    if (a.size() < 2 || a[0] != '-') return false;
    if (a[1] != '-' && a.find_first_of("cmeE", 1) != std::string::npos) return true;
    if (a == "--eval" || a == "--command") return true;
  }
  return false;
}

// A name the floor has a rule for, or a shell.
bool floor_command(const std::string& n) {
  return n == "git" || n.rfind("git-", 0) == 0 || is_mkfs(n) || is_shell(n) || is_remote_tool(n) ||
         one_of(n, {"rm", "dd", "chmod", "chown", "chgrp", "sudo", "su", "doas", "pkexec", "run0",
                    "shutdown", "reboot", "halt", "poweroff", "telinit", "systemctl", "init"});
}

// A command that runs another (chrt 0 CMD, taskset 1 CMD, flock F CMD,
// fakeroot CMD, unshare CMD, parallel CMD ::: x, script -qc 'CMD', watch
// 'CMD', su -c 'CMD'), whatever the runner is called: every tail of the
// argv that starts with a command the floor has a rule for is read as a
// command, and every word with blanks that starts with one as a script
// (red team round 9: a list of runners is never complete). Data commands
// (echo, grep, git's own messages) are not.
void analyse_runners(Analysis& an, const Unwrapped& u, const std::string& n,
                     const std::optional<std::string>& cwd, int depth) {
  // (a remote tool runs others too: `npm exec -- kubectl delete`, `pnpm
  // dlx`, `yarn dlx`: red team round 24)
  if (data_only(n) || (floor_command(n) && !is_remote_tool(n)) || n == "eval" || n == "source" ||
      n == ".")
    return;
  for (std::size_t k = 1; k < u.argv.size() && !an.done(); ++k) {
    const Word& w = u.argv[k];
    if (w.text.empty() || w.text[0] == '-') continue;
    const std::size_t blank = w.text.find_first_of(" \t\n;|&");
    if (blank != std::string::npos) {
      const std::string first = w.text.substr(0, w.text.find_first_of(" \t\n"));
      // a script if any of its words is a command the floor has a rule for
      // (red team round 21: `flock F -c "cd /tmp/r && git push"`)
      bool names_one = false;
      for (std::size_t at = 0; at < w.text.size() && !names_one;) {
        const std::size_t b = w.text.find_first_not_of(" \t\n;|&()", at);
        if (b == std::string::npos) break;
        const std::size_t e = w.text.find_first_of(" \t\n;|&()", b);
        names_one = floor_command(base_name(w.text.substr(b, e == std::string::npos ? e : e - b)));
        at = e;
      }
      // (one whose first word is no such command is read only if it is
      // shell: python3 -c 'import os; os.system(...)' is not)
      if (names_one && !floor_command(base_name(first))) {
        try {
          (void)parse_script(w.text, depth + 1);
        } catch (const ParseError&) {
          names_one = false;
        }
      }
      if (names_one) analyse_script(an, w.text, cwd, depth + 1);
      continue;
    }
    if (!floor_command(base_name(w.text))) continue;
    Simple tail;
    tail.words.assign(u.argv.begin() + static_cast<long>(k), u.argv.end());
    std::optional<std::string> c = cwd;
    analyse_simple(an, tail, c, depth + 1);
    return;
  }
}

// Builtins that keep a command to run later: trap CMD SIG, alias n='CMD'.
void analyse_kept(Analysis& an, const Unwrapped& u, const std::string& n,
                  const std::optional<std::string>& cwd, int depth) {
  if (n != "trap" && n != "alias") return;
  for (std::size_t k = 1; k < u.argv.size(); ++k) {
    const Word& w = u.argv[k];
    if (n == "trap" && (w.text == "-p" || w.text == "-l" || w.text == "--" || w.text == "-"))
      continue;
    if (w.expansion) {
      an.unanalysable = n + " of an expansion (" + w.text + ")";
      return;
    }
    std::string code = w.text;
    if (n == "alias") {
      const std::size_t eq = code.find('=');
      if (eq == std::string::npos) continue;
      code = code.substr(eq + 1);
    }
    analyse_script(an, code, cwd, depth + 1);
    if (n == "trap") return;  // the rest are signal names
  }
}

// What the whole script's verdict needs from this command (finish_script):
// the variables it sets, the files it writes, downloads or runs. A
// variable's value that a program runs as a command is read here.
void note_facts(Analysis& an, const Simple& s, const Unwrapped& u,
                const std::optional<std::string>& cwd, int depth) {
  for (const Word& w : u.env) note_variable(an, w, cwd, depth, !u.argv.empty());
  for (const Redirect& r : s.redirects) {
    if (r.op.find('>') == std::string::npos) continue;
    const std::string& t = r.target.text;
    if (r.op == ">&" && (t == "-" || t.find_first_not_of("0123456789") == std::string::npos))
      continue;  // 2>&1
    if (!t.empty() && t != "-") an.made_files.push_back(r.target.expansion ? "*" : base_name(t));
    note_written(an, t, "writes");
  }
  if (u.argv.empty() || u.argv[0].expansion) return;
  const std::string n = base_name(u.argv[0].text);
  // export NAME=V, declare -x NAME, readonly, local, unset NAME, read NAME,
  // printf -v NAME: the names they set (red team round 11: `export
  // GIT_CONFIG_COUNT=1 ...; git push` was missed).
  if (one_of(n, {"export", "declare", "typeset", "local", "readonly", "unset", "read", "printf",
                 "mapfile", "readarray", "getopts"})) {
    for (std::size_t k = 1; k < u.argv.size() && !an.done(); ++k) {
      const Word& w = u.argv[k];
      if (w.text.empty() || w.text[0] == '-') continue;
      if (n == "printf" && u.argv[k - 1].text != "-v") continue;  // printf's data
      Word named = w;
      if (!is_assignment(w)) named.text = w.text.substr(0, w.text.find('='));
      if (is_assignment(named) ||
          named.text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
                                       "0123456789") == std::string::npos)
        note_variable(an, named, cwd, depth, false);
    }
  }
  // A sourced file may set anything.
  if ((n == "source" || n == ".") && an.git_env_changed.empty())
    an.git_env_changed = n + " of a file (it may set git's variables)";
  if (is_downloader(n)) note_download_outputs(an, u);
  // sh < f: the file is the script.
  if (runs_stdin(u))
    for (const Redirect& r : s.redirects)
      if (r.op == "<" && !r.target.text.empty())
        an.ran_files.push_back(r.target.expansion ? "*" : base_name(r.target.text));
  // A .gitconfig named by any command but a reader; a file named config by
  // a writer (sed -i, perl -i, dd of=, ...).
  if (!data_only(n) && n != "git") {
    const bool writer = one_of(n, {"sed", "perl", "dd", "rsync", "truncate", "touch", "ed", "ex",
                                   "vi", "vim", "nvim", "nano", "emacs", "sponge", "awk", "gawk"});
    for (std::size_t k = 1; k < u.argv.size(); ++k) {
      std::string t = u.argv[k].text;
      if (t.rfind("of=", 0) == 0) t = t.substr(3);
      const std::string b = base_name(t);
      if (b.find("gitconfig") != std::string::npos || (writer && b == "config"))
        note_written(an, t, n + " writes");
    }
  }
  // An archive unpacked may hold a repository, its config and hooks with
  // it (red team round 19: `tar xf r.tar -C /tmp && git -C /tmp/r push`,
  // the archive's remote.origin.mirror made a plain push delete branches).
  if (an.git_env_changed.empty() &&
      one_of(n, {"tar",     "gtar",     "bsdtar",   "unzip", "unrar",      "unar",   "7z",  "7za",
                 "7zr",     "cpio",     "bsdcpio",  "pax",   "unsquashfs", "ar",     "jar", "rsync",
                 "busybox", "dpkg-deb", "rpm2cpio", "scp",   "rclone",     "gsutil", "aws"}))
    an.git_env_changed = n + " unpacks or copies files (a repository's config among them)";
  if (n == "tee" || n == "cp" || n == "mv" || n == "install" || n == "ln") {
    for (std::size_t k = 1; k < u.argv.size(); ++k) {
      const Word& w = u.argv[k];
      if (w.text.empty() || w.text[0] == '-') continue;
      if (n == "tee") an.made_files.push_back(w.expansion ? "*" : base_name(w.text));
      note_written(an, w.text, "writes");
    }
  }
  note_ran_file(an, u, n);
}

}  // namespace

void analyse_simple(Analysis& an, const Simple& s, std::optional<std::string>& cwd, int depth) {
  if (an.done()) return;
  rule_redirects(an, s);
  rule_protected_redirects(an, s, cwd);
  // Scripts in $( ), ` ` and <( ) run too.
  for (const Word& w : s.words) {
    for (const std::string& sub : w.subs) analyse_script(an, sub, cwd, depth + 1);
  }
  for (const Redirect& r : s.redirects) {
    for (const std::string& sub : r.target.subs) analyse_script(an, sub, cwd, depth + 1);
  }
  if (an.done()) return;
  // Bash expands braces before it runs anything: `{git,push,-f}` is
  // `git push -f` (red team round 10). Each such word becomes its words.
  std::vector<Word> words;
  for (const Word& w : s.words) {
    std::vector<std::string> alts;
    if (!w.brace || w.expansion || w.quoted) {
      words.push_back(w);
    } else if (!brace_expand(w.text, alts)) {
      // Too many words: an argument stays one word whose value is not
      // known (the path rules ask); a command word cannot be read.
      if (words.empty()) {
        an.unanalysable = "a command spelled by a brace expansion of too many words";
        return;
      }
      words.push_back(w);
    } else {
      for (std::string& a : alts) {
        Word one = w;
        one.text = std::move(a);
        one.brace = false;
        words.push_back(std::move(one));
      }
    }
  }
  Unwrapped u = unwrap(std::move(words));
  note_facts(an, s, u, cwd, depth);
  rule_words_arith(an, s, u);
  if (u.argv.empty() || an.done()) return;
  if (u.argv[0].expansion) {
    an.unanalysable = "runs a command named by an expansion (" + u.argv[0].text + ")";
    return;
  }
  if (u.cwd_unknown) cwd.reset();
  const std::string n = base_name(u.argv[0].text);
  if (u.via_sudo) an.hit("sudo", "runs a command as another user (sudo/doas)");
  if (n == "cd" || n == "pushd" || n == "popd") {
    if (u.argv.size() == 2 && n == "cd") {
      auto p = where(u.argv[1], cwd, an.ctx);
      if (p) {
        cwd = *p;
        return;
      }
    }
    cwd.reset();
    return;
  }
  check_command(an, u, n, cwd, depth);
  if (an.done()) return;
  // xargs: the words that decide (a +refspec, a protected name) come from
  // stdin (red team round 10: `echo +HEAD:main | xargs git push origin`).
  if (u.args_unknown && (n == "git" || !data_only(n))) {
    an.unanalysable = n + " with arguments read from stdin (xargs)";
    return;
  }
  // A script from a process substitution on stdin (`bash < <(curl ...)`).
  for (const Redirect& r : s.redirects)
    if (r.op == "<" && r.target.process_sub && !data_only(n)) {
      an.unanalysable = n + " reads what a command prints (" + r.target.text + ")";
      return;
    }
  // A shell that reads its commands from a here-string: what it runs.
  if (runs_stdin(u)) {
    for (const Redirect& r : s.redirects)
      if (r.op == "<<<") {
        if (r.target.expansion)
          an.unanalysable = n + " reads commands from an expansion";
        else
          analyse_script(an, r.target.text, cwd, depth + 1);
      }
  }
  if (an.done()) return;
  analyse_code(an, u, n, cwd, depth);
  if (an.done()) return;
  analyse_kept(an, u, n, cwd, depth);
  if (an.done()) return;
  analyse_runners(an, u, n, cwd, depth);
  if (an.done()) return;
  rule_bash_state(an, s, u, n);
}

namespace {

void analyse_list(Analysis& an, const Script& sc, std::optional<std::string>& cwd, int depth) {
  for (const Pipeline& p : sc.pipelines) {
    if (an.done()) return;
    // A download piped into something that runs its stdin.
    bool downloaded = false;
    for (const Stage& st : p.stages) {
      if (downloaded) {
        // Anything but a command known to treat its stdin as data (sed's e,
        // awk's system(), bash /dev/stdin: red team round 10).
        for (const Simple& s : st.simples) {
          Unwrapped su = unwrap(s.words);
          if (su.argv.empty()) continue;
          const std::string cn = base_name(su.argv[0].text);
          if (runs_stdin(su) || !consumes_data(su, cn))
            an.hit("pipe-to-shell", "a download is piped into " + cn + ", which may run it");
        }
        for (const Script& g : st.groups)
          if (!g.pipelines.empty())
            an.hit("pipe-to-shell", "a download is piped into a group of commands");
      }
      if (stage_downloads(st)) downloaded = true;
    }
    // Anything else piped into a shell that runs its stdin (echo git push
    // -f | sh): the commands are what the earlier stage printed.
    for (std::size_t k = 1; k < p.stages.size() && !an.done(); ++k)
      for (const Simple& s : p.stages[k].simples)
        if (Unwrapped su = unwrap(s.words); runs_stdin(su) && is_shell(base_name(su.argv[0].text)))
          an.unanalysable = base_name(su.argv[0].text) + " runs commands an earlier stage printed";
    // A pipeline's stages run in subshells: a cd in one does not move the
    // next. Keep it simple: any cd makes later relative paths unknown.
    for (const Stage& st : p.stages) {
      for (const Simple& s : st.simples) analyse_simple(an, s, cwd, depth);
      for (const Script& g : st.groups) {
        std::optional<std::string> inner = cwd;
        analyse_list(an, g, inner, depth + 1);
        if (inner != cwd) cwd.reset();
      }
    }
  }
}

}  // namespace

void analyse_script(Analysis& an, std::string_view text, std::optional<std::string> cwd,
                    int depth) {
  if (an.done()) return;
  if (depth > kMaxDepth) {
    an.unanalysable = "commands nested too deeply";
    return;
  }
  if (has_fork_bomb(text)) {
    an.hit("fork-bomb", "a fork bomb");
    if (an.match) return;
  }
  try {
    Script sc = parse_script(text, depth);
    analyse_list(an, sc, cwd, depth);
  } catch (const ParseError& e) {
    an.unanalysable = "cannot read the shell script: " + e.why;
  }
}

}  // namespace floor_rules

using detail::quote;
using floor_rules::analyse_simple;
using floor_rules::Analysis;
using floor_rules::Simple;
using floor_rules::Word;

namespace {

const std::vector<std::string> kBuiltinFloor = {"rm-rf-outside-workspace",
                                                "git-push-force",
                                                "pipe-to-shell",
                                                "chmod-recursive-outside-workspace",
                                                "dd-to-device",
                                                "mkfs",
                                                "sudo",
                                                "shutdown",
                                                "fork-bomb",
                                                "protected-path-write",
                                                "remote-destroy"};

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_not_of(
                                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                                   "VWXYZ0123456789_-./=:,+@%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) {
      if (c == '\'')
        out += "'\\''";
      else
        out += c;
    }
    out += '\'';
  }
  return out;
}

}  // namespace

const std::vector<std::string>& builtin_floor_ids() {
  return kBuiltinFloor;
}

Result<Floor> make_floor(const ProfileSet& set) {
  Floor f;
  for (const std::string& id : set.floor_disable) {
    if (std::find(kBuiltinFloor.begin(), kBuiltinFloor.end(), id) == kBuiltinFloor.end()) {
      std::vector<std::string_view> known(kBuiltinFloor.begin(), kBuiltinFloor.end());
      return Error::msg("floor.disable: unknown built-in floor rule " + quote(id) + " " +
                        detail::suggest(id, known));
    }
  }
  for (const std::string& id : kBuiltinFloor) {
    if (std::find(set.floor_disable.begin(), set.floor_disable.end(), id) ==
        set.floor_disable.end()) {
      f.builtin.push_back(id);
    }
  }
  for (const FloorRule& r : set.floor) {
    if (std::find(kBuiltinFloor.begin(), kBuiltinFloor.end(), r.id) != kBuiltinFloor.end()) {
      return Error::msg(r.file + ":" + std::to_string(r.loc.line) + ":" +
                        std::to_string(r.loc.column) + ": floor.add: " + quote(r.id) +
                        " is a built-in floor rule; pick another id");
    }
    f.custom.push_back(r);
  }
  return f;
}

Verdict can_auto_allow(const std::vector<std::string>& argv, const ResolvedProfile& profile,
                       const Floor& floor, const AutoAllowContext& ctx) {
  Verdict v;
  v.command = argv;
  v.profile = profile.name;
  v.confined = profile.sandboxed;
  Analysis an{floor, ctx, std::nullopt, "", {}, {}, "", "", {}, {}, {}, {}, "", "", false};
  // Not the names protected only while another path is missing (the
  // bare-repository names without .git): the floor cannot know.
  for (const std::string& e : profile.protect)
    if (!profile.protect_if_missing.count(e)) an.prot.push_back(e);
  an.prot_exact = profile.protect_unless_dir;
  for (const auto& [dir, names] : {std::pair{&ctx.workspace, &protected_workspace_names()},
                                   {&ctx.home, &protected_home_names()}}) {
    if (dir->empty()) continue;
    for (const std::string& n : *names) {
      std::string e = *dir + "/" + (n.back() == '/' ? n.substr(0, n.size() - 1) : n);
      if (std::find(an.prot.begin(), an.prot.end(), e) == an.prot.end()) an.prot.push_back(e);
    }
  }
  if (!ctx.workspace.empty()) {
    an.prot.push_back(ctx.workspace + "/.comet");
    an.prot_exact.push_back(ctx.workspace + "/.git");
  }
  // Exact-only entries must not also count for what is below them.
  for (const std::string& e : an.prot_exact)
    an.prot.erase(std::remove(an.prot.begin(), an.prot.end(), e), an.prot.end());
  if (argv.empty()) {
    v.reason = "no command";
    return v;
  }
  // argv is already split: read it as one simple command, then follow
  // whatever it runs.
  Simple top;
  for (const std::string& a : argv) {
    Word w;
    w.text = a;
    w.quoted = true;  // words of an argv are literal: no expansion happens
    top.words.push_back(std::move(w));
  }
  std::optional<std::string> cwd;
  if (!ctx.workspace.empty()) cwd = ctx.workspace;
  try {
    analyse_simple(an, top, cwd, 0);
    finish_script(an);
    finish_state(an);
  } catch (const std::exception& e) {
    an.unanalysable = std::string("analysis failed: ") + e.what();
  }
  if (an.match) {
    v.matched_rule = an.match->rule;
    v.reason = "on the floor (" + an.match->rule + "): " + an.match->reason + "; always ask";
    return v;
  }
  if (!an.unanalysable.empty()) {
    v.reason = an.unanalysable + "; ask";
    return v;
  }
  if (!profile.sandboxed) {
    v.reason = "profile " + profile.name + " runs commands unconfined";
    return v;
  }
  if (profile.base == "devbox") {
    v.reason = "profile " + profile.name +
               " (devbox) can write nearly everything: not confined enough to auto-allow";
    return v;
  }
  v.auto_allow = true;
  v.reason = "runs confined under profile " + profile.name + " (" + profile.base +
             (profile.network_restricted ? ", network restricted" : ", network open") +
             ") and is not on the floor: " + shell_join(argv);
  return v;
}

std::string verdict_to_json(const Verdict& v) {
  nlohmann::ordered_json j;
  j["command"] = v.command;
  j["profile"] = v.profile;
  j["confined"] = v.confined;
  j["auto_allow"] = v.auto_allow;
  j["reason"] = v.reason;
  if (v.matched_rule.empty())
    j["matched_rule"] = nullptr;
  else
    j["matched_rule"] = v.matched_rule;
  // argv is untrusted bytes and may be no UTF-8 (the reason quotes it): a
  // plain dump() would throw type_error 316 and end the CLI with
  // std::terminate. Show such bytes as U+FFFD instead.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace comet::capability
