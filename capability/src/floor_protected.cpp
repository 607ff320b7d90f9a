// protected-path-write (floor_rules.hpp): a write to a path the host's
// tools obey (git config and hooks, shell start-up files, editor and agent
// settings) by a redirection, a writing command's operands, awk's program
// strings, or find's -delete/-fprint/-exec.
#include <fnmatch.h>

#include "comet/base/sys.hpp"
#include "floor_rules.hpp"
#include "util.hpp"

namespace comet::capability::floor_rules {

using detail::path_under;
using detail::quote;

namespace {

std::vector<std::string> components(const std::string& p) {
  return path_components(p);
}

// `path` at or below `entry`, whose `*` components match any one component.
bool at_or_below(const std::string& path, const std::string& entry) {
  if (entry.find('*') == std::string::npos) return path_under(path, entry);
  const auto pc = components(path), ec = components(entry);
  if (pc.size() < ec.size()) return false;
  for (std::size_t i = 0; i < ec.size(); ++i) {
    if (fnmatch(ec[i].c_str(), pc[i].c_str(), FNM_PERIOD) != 0) return false;
  }
  return true;
}

// What git reads from any repository, nested ones too: .git/config, hooks,
// info, and the same of its modules and worktrees.
bool git_control_path(const std::string& p) {
  const auto c = components(p);
  for (std::size_t i = 0; i + 1 < c.size(); ++i) {
    if (c[i] != ".git") continue;
    std::size_t k = i + 1;
    if ((c[k] == "modules" || c[k] == "worktrees") && k + 2 < c.size()) k += 2;
    if (one_of(c[k], {"config", "config.worktree", "hooks", "info", "gitdir", "commondir", "HEAD",
                      "rebase-merge", "rebase-apply", "sequencer"}))
      return true;
  }
  return false;
}

// A pathname pattern (an unquoted glob) that could name `entry` or a path
// below it (components matched one by one, as the shell does: a leading
// dot only explicitly). A `*` component of an entry matches anything.
bool glob_may_hit(const std::string& pattern, const std::string& entry) {
  const auto pc = components(pattern), ec = components(entry);
  if (pc.size() < ec.size()) return false;
  for (std::size_t i = 0; i < ec.size(); ++i) {
    if (ec[i] == "*") continue;
    if (fnmatch(pc[i].c_str(), ec[i].c_str(), FNM_PERIOD) != 0) return false;
  }
  return true;
}

// A pattern with a component that could be ".git" and anything after it:
// what git reads is too varied to match name by name (fail closed).
bool glob_under_git(const std::string& pattern) {
  const auto pc = components(pattern);
  for (std::size_t i = 0; i + 1 < pc.size(); ++i)
    if (fnmatch(pc[i].c_str(), ".git", FNM_PERIOD) == 0) return true;
  return false;
}

// A path a command writes: protected, or not known (an expansion).
std::optional<std::string> protected_target(const Analysis& an, const Word& w,
                                            const std::optional<std::string>& cwd) {
  if (w.text.empty()) return std::nullopt;
  if (w.brace && !w.expansion) {
    std::vector<std::string> alts;
    if (!brace_expand(w.text, alts)) return "?" + w.text;
    if (alts.size() > 1) {
      for (const std::string& a : alts) {
        Word one = w;
        one.text = a;
        one.brace = false;
        if (auto t = protected_target(an, one, cwd)) return t;
      }
      return std::nullopt;
    }
  }
  auto p = where(w, cwd, an.ctx);
  if (w.glob && !w.expansion) {
    // Whatever it matches when it runs: ask if that could be protected.
    if (p) {
      if (glob_under_git(*p)) return *p;
      for (const std::string& e : an.prot_exact)
        if (components(*p).size() == components(e).size() && glob_may_hit(*p, e)) return *p;
      for (const std::string& e : an.prot)
        if (glob_may_hit(*p, e)) return *p;
      return std::nullopt;
    }
    if (w.tilde) return "?" + w.text;
    const std::string rel = detail::normalize_path(w.text);
    if (glob_under_git(rel)) return w.text;
    for (const std::string& n : protected_workspace_names()) {
      std::string e = n.back() == '/' ? n.substr(0, n.size() - 1) : n;
      if (glob_may_hit(rel, "/" + e)) return w.text;
    }
    return std::nullopt;
  }
  if (!p) {
    if (w.expansion || w.tilde) return "?" + w.text;  // not known before it runs
    // A relative path after a cd that cannot be followed: by its name.
    if (git_control_path(w.text)) return w.text;
    const std::string rel = detail::normalize_path(w.text).substr(1);
    for (const std::string& n : protected_workspace_names()) {
      std::string e = n.back() == '/' ? n.substr(0, n.size() - 1) : n;
      if (at_or_below("/" + rel, "/" + e)) return w.text;
    }
    return std::nullopt;
  }
  if (git_control_path(*p)) return *p;
  for (const std::string& e : an.prot_exact)
    if (*p == e) return *p;
  for (const std::string& e : an.prot)
    if (at_or_below(*p, e)) return *p;
  return std::nullopt;
}

// `target` from protected_target(): "?WORD" when the path is not known.
void hit_protected(Analysis& an, const std::string& what, const std::string& target) {
  const std::string kinds =
      "a protected path (git config or hooks, shell start-up files, editor or agent settings) "
      "the host's tools obey";
  if (target[0] == '?')
    an.hit("protected-path-write", what + " writes " + quote(target.substr(1)) +
                                       ", a path not known before it runs: it could be " + kinds);
  else
    an.hit("protected-path-write", what + " writes " + quote(target) + ", " + kinds);
}

}  // namespace

// Bash's brace expansion of one word ("a{b,c}d" -> "abd" "acd"), lexically,
// appended to `out`; a `{` without a top-level comma stays as it is. False
// when it would make more than kMaxBraceWords words: `{a,b,c,d}` ten times
// is a million (fuzz_auto_allow_shell: a timeout), so such a word counts as
// one whose paths are not known.
constexpr std::size_t kMaxBraceWords = 1024;

bool brace_expand(const std::string& t, std::vector<std::string>& out, int depth) {
  if (depth > 8) {
    out.push_back(t);
    return out.size() <= kMaxBraceWords;
  }
  for (std::size_t open = t.find('{'); open != std::string::npos; open = t.find('{', open + 1)) {
    int level = 0;
    std::vector<std::size_t> commas;
    std::size_t close = std::string::npos;
    for (std::size_t i = open; i < t.size(); ++i) {
      if (t[i] == '{') ++level;
      if (t[i] == '}' && --level == 0) {
        close = i;
        break;
      }
      if (t[i] == ',' && level == 1) commas.push_back(i);
    }
    if (close == std::string::npos) break;
    if (commas.empty()) continue;
    std::size_t from = open + 1;
    commas.push_back(close);
    for (std::size_t c : commas) {
      const std::string alt = t.substr(0, open) + t.substr(from, c - from) + t.substr(close + 1);
      if (!brace_expand(alt, out, depth + 1)) return false;
      from = c + 1;
    }
    return true;
  }
  out.push_back(t);
  return out.size() <= kMaxBraceWords;
}

void rule_protected_redirects(Analysis& an, const Simple& s,
                              const std::optional<std::string>& cwd) {
  for (const Redirect& r : s.redirects) {
    if (r.op.find('>') == std::string::npos) continue;
    // >&N and N>&M duplicate a descriptor; >&- closes one.
    if (r.op.back() == '&' && !r.target.text.empty() &&
        (r.target.text == "-" ||
         std::all_of(r.target.text.begin(), r.target.text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == '-'; })))
      continue;
    if (auto t = protected_target(an, r.target, cwd)) {
      hit_protected(an, "a redirection (" + r.op + ")", *t);
      return;
    }
  }
}

// Any command but a reader, with a word that names a git directory or
// something in one, at any depth (`cp -t sub/.git config`, `curl -o
// x/.git/config URL`, `perl -e 'open F,">x/.git/hooks/y"'`): a nested
// repository's config and hooks are not protected by the sandbox.
void rule_git_dir_words(Analysis& an, const Unwrapped& u) {
  const auto& v = u.argv;
  const std::string n = base_name(v[0].text);
  if (one_of(n, {"git",  "cat",      "less",     "more", "head", "tail", "grep",  "egrep", "fgrep",
                 "rg",   "ls",       "stat",     "file", "wc",   "diff", "cmp",   "find",  "du",
                 "tree", "realpath", "readlink", "test", "[",    "echo", "printf"}))
    return;
  if (n == "sed" && !std::any_of(v.begin() + 1, v.end(), [](const Word& w) {
        return w.text.rfind("--in-place", 0) == 0 ||
               (w.text.size() >= 2 && w.text[0] == '-' && w.text[1] != '-' &&
                w.text.find('i') != std::string::npos);
      }))
    return;  // sed without -i only prints
  for (std::size_t i = 1; i < v.size(); ++i) {
    const std::string& t = v[i].text;
    for (std::size_t at = t.find(".git"); at != std::string::npos; at = t.find(".git", at + 1)) {
      const bool starts = at == 0 || t[at - 1] == '/' || t[at - 1] == '=' || t[at - 1] == '"' ||
                          t[at - 1] == '\'' || t[at - 1] == '>' || t[at - 1] == ' ';
      const char after = at + 4 < t.size() ? t[at + 4] : '\0';
      if (starts &&
          (after == '\0' || after == '/' || after == '"' || after == '\'' || after == ' ')) {
        an.hit("protected-path-write", n + " names a git directory (" + t +
                                           "): a repository's config and hooks run "
                                           "on the host");
        return;
      }
    }
  }
}

// Commands that write the files their arguments name. Every non-option word
// is taken as a path (a mode, a sed script or an owner never names a
// protected file); for sed only with -i.
void rule_protected_args(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd) {
  const auto& v = u.argv;
  const std::string n = base_name(v[0].text);
  // Editors, downloaders and the like write the files they name too (red
  // team round 3); `git mv|checkout|restore` write their path operands.
  const bool git_writer =
      n == "git" && v.size() > 1 && one_of(v[1].text, {"mv", "checkout", "restore"});
  const bool writer =
      git_writer ||
      one_of(n, {"cp",    "mv",  "ln",    "link",  "install",  "tee",   "touch",  "chmod",  "chown",
                 "chgrp", "rm",  "rmdir", "mkdir", "truncate", "patch", "unlink", "shred",  "rsync",
                 "unzip", "tar", "dd",    "sed",   "perl",     "curl",  "wget",   "sponge", "cpio",
                 "ed",    "ex",  "vi",    "vim",   "nvim",     "nano",  "emacs"});
  if (!writer) return;
  if (n == "sed" || n == "perl") {
    const bool in_place = std::any_of(v.begin() + 1, v.end(), [](const Word& w) {
      return w.text.rfind("--in-place", 0) == 0 ||
             (w.text.size() >= 2 && w.text[0] == '-' && w.text[1] != '-' &&
              w.text.find('i') != std::string::npos);
    });
    if (!in_place) return;
  }
  bool opts = true;
  for (std::size_t i = git_writer ? 2 : 1; i < v.size(); ++i) {
    const Word& w = v[i];
    Word target = w;
    if (opts && w.text == "--") {
      opts = false;
      continue;
    }
    if (n == "dd") {
      if (w.text.rfind("of=", 0) != 0) continue;
      target.text = w.text.substr(3);
    } else if (opts && w.text.size() > 1 && w.text[0] == '-' && !w.expansion) {
      // -C DIR (tar), -d DIR (unzip), -t DIR (cp, mv, install, ln), --target-directory=DIR
      auto eq = w.text.find('=');
      if (eq != std::string::npos && w.text.rfind("--", 0) == 0) {
        target.text = w.text.substr(eq + 1);
      } else if (one_of(w.text, {"-C", "-d", "-t", "--directory", "--target-directory"}) &&
                 i + 1 < v.size()) {
        target = v[++i];
      } else {
        continue;
      }
    }
    if (auto t = protected_target(an, target, cwd)) {
      hit_protected(an, n, *t);
      return;
    }
    // .git/objects and .git/refs are pinned, not protected: a mode that
    // takes away the search bit makes .git invalid to another user's git.
    if (one_of(n, {"chmod", "chown", "chgrp"})) {
      const auto p = where(target, cwd, an.ctx);
      const auto c = components(p ? *p : target.text);
      if (c.size() >= 2 && c[c.size() - 2] == ".git" && one_of(c.back(), {"objects", "refs"})) {
        hit_protected(an, n, p ? *p : target.text);
        return;
      }
    }
  }
}

// awk's output redirections (print > "file", >> and | "cmd") and system()
// sit inside its program: every string literal of the program is taken as
// a path it may write, and, when the program pipes or calls system(), as a
// shell script too. `gawk -i inplace` writes its file operands.
void rule_awk(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd, int depth) {
  const auto& v = u.argv;
  std::size_t i = 1;
  bool inplace = false, from_file = false;
  for (; i < v.size(); ++i) {
    const std::string& a = v[i].text;
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || a[0] != '-') break;
    if (one_of(a, {"-f", "--file"})) from_file = true;
    if (one_of(a, {"-i", "--include"}) && i + 1 < v.size() && v[i + 1].text == "inplace")
      inplace = true;
    if (a.rfind("-iinplace", 0) == 0 || a == "--include=inplace") inplace = true;
    if (one_of(a, {"-F", "-v", "-f", "-i", "--file", "--include", "--assign", "--field-separator",
                   "-e", "--source", "-l", "--load"})) {
      if (one_of(a, {"-e", "--source"}) && i + 1 < v.size()) {
        // gawk -e PROGRAM: read below with the rest
        ++i;
        continue;
      }
      ++i;
    }
  }
  std::vector<std::string> programs;
  for (std::size_t k = 1; k < v.size(); ++k)
    if (one_of(v[k - 1].text, {"-e", "--source"})) programs.push_back(v[k].text);
  if (!from_file && programs.empty() && i < v.size()) programs.push_back(v[i++].text);
  for (const std::string& prog : programs) {
    std::vector<std::string> literals;
    for (std::size_t k = 0; k < prog.size(); ++k) {
      if (prog[k] != '"') continue;
      std::string lit;
      for (++k; k < prog.size() && prog[k] != '"'; ++k) {
        if (prog[k] == '\\' && k + 1 < prog.size()) ++k;
        lit += prog[k];
      }
      literals.push_back(std::move(lit));
    }
    for (const std::string& lit : literals) {
      Word w;
      w.text = lit;
      w.quoted = true;
      if (auto t = protected_target(an, w, cwd)) {
        hit_protected(an, base_name(v[0].text) + " (a string of its program)", *t);
        return;
      }
    }
    if (prog.find("system") != std::string::npos || prog.find('|') != std::string::npos) {
      for (const std::string& lit : literals) analyse_script(an, lit, cwd, depth + 1);
      if (an.done()) return;
    }
  }
  if (!inplace) return;
  for (; i < v.size(); ++i) {
    if (v[i].text.find('=') != std::string::npos && !v[i].expansion) continue;  // var=value
    if (auto t = protected_target(an, v[i], cwd)) {
      hit_protected(an, base_name(v[0].text) + " -i inplace", *t);
      return;
    }
  }
}

// find: the commands of -exec/-execdir/-ok/-okdir are read as commands
// ({} standing for the first starting point), the starting points of
// -delete and the files of -fprint/-fprintf/-fls are paths it writes.
void rule_find(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd, int depth) {
  const auto& v = u.argv;
  std::size_t i = 1;
  while (i < v.size() && one_of(v[i].text, {"-H", "-L", "-P"})) ++i;
  std::vector<Word> starts;
  for (; i < v.size(); ++i) {
    const std::string& a = v[i].text;
    if (!a.empty() && (a[0] == '-' || a == "(" || a == "!")) break;
    starts.push_back(v[i]);
  }
  Word first;
  first.text = ".";
  if (!starts.empty()) first = starts.front();
  for (; i < v.size() && !an.done(); ++i) {
    const std::string& a = v[i].text;
    if (a == "-delete") {
      for (const Word& st : starts.empty() ? std::vector<Word>{first} : starts) {
        if (auto t = protected_target(an, st, cwd)) {
          hit_protected(an, "find -delete", *t);
          return;
        }
      }
    } else if (one_of(a, {"-fprint", "-fprint0", "-fprintf", "-fls"}) && i + 1 < v.size()) {
      if (auto t = protected_target(an, v[i + 1], cwd)) {
        hit_protected(an, "find " + a, *t);
        return;
      }
    } else if (one_of(a, {"-exec", "-execdir", "-ok", "-okdir"})) {
      Simple inner;
      for (++i; i < v.size() && v[i].text != ";" && v[i].text != "+"; ++i) {
        Word w = v[i];
        for (std::size_t k = w.text.find("{}"); k != std::string::npos; k = w.text.find("{}", k)) {
          w.text.replace(k, 2, first.text);
          w.expansion = w.expansion || first.expansion;
          k += first.text.size();
        }
        if (w.text == first.text) w.tilde = first.tilde;
        inner.words.push_back(std::move(w));
      }
      if (inner.words.empty()) continue;
      if (depth + 1 > kMaxDepth) {
        an.unanalysable = "commands nested too deeply";
        return;
      }
      std::optional<std::string> inner_cwd =
          a.find("dir") != std::string::npos ? std::nullopt : cwd;
      analyse_simple(an, inner, inner_cwd, depth + 1);
    }
  }
}

}  // namespace comet::capability::floor_rules
