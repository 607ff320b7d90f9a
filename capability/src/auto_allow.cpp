// The permission layer: a small POSIX-shell reader (enough to see the
// commands a script runs) and the floor of dangerous commands.
#include "comet/capability/auto_allow.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "util.hpp"

namespace comet::capability {

using detail::path_under;
using detail::quote;

namespace {

// --- the shell reader ---------------------------------------------------------

constexpr int kMaxDepth = 8;  // nested sh -c / $( ) levels before we give up (ask)

struct Word {
  std::string text;               // quotes removed; expansions kept verbatim
  bool expansion = false;         // contains $VAR, ${..}, $(..), `..`, <(..) or $((..))
  bool tilde = false;             // starts with an unquoted ~
  bool quoted = false;            // some part was quoted
  std::vector<std::string> subs;  // inner scripts of $(..), `..`, <(..), >(..)
  bool process_sub = false;       // the word is a <(..) / >(..)
  bool glob = false;              // holds an unquoted * ? or [ (a pathname pattern)
  bool brace = false;             // holds an unquoted { (brace expansion, maybe)
};

struct Redirect {
  std::string op;
  Word target;
};

struct Script;

struct Simple {
  std::vector<Word> words;
  std::vector<Redirect> redirects;
};

struct Stage {
  std::vector<Simple> simples;  // one simple command, or a group's
  std::vector<Script> groups;   // ( ... ) and { ...; } bodies
};

struct Pipeline {
  std::vector<Stage> stages;
};

struct Script {
  std::vector<Pipeline> pipelines;
};

struct ParseError {
  std::string why;
};

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  // A list of pipelines up to `end` (0: the end of input).
  Script list(char end) {
    Script sc;
    Pipeline pl;
    Stage st;
    Simple cmd;
    bool expect_target = false;
    std::string redir_op;
    auto end_simple = [&] {
      if (expect_target) throw ParseError{"a redirection without a target"};
      if (!cmd.words.empty() || !cmd.redirects.empty()) st.simples.push_back(std::move(cmd));
      cmd = Simple{};
    };
    auto end_stage = [&] {
      end_simple();
      if (!st.simples.empty() || !st.groups.empty()) pl.stages.push_back(std::move(st));
      st = Stage{};
    };
    auto end_pipeline = [&] {
      end_stage();
      if (!pl.stages.empty()) sc.pipelines.push_back(std::move(pl));
      pl = Pipeline{};
    };
    while (true) {
      skip_blanks();
      if (at_end()) {
        if (end) throw ParseError{std::string("missing \"") + end + "\""};
        break;
      }
      char c = s_[i_];
      if (end && c == end) {
        ++i_;
        break;
      }
      if (c == '#') {  // a comment (only where a word could start)
        while (!at_end() && s_[i_] != '\n') ++i_;
        continue;
      }
      if (c == '\n' || c == ';') {
        ++i_;
        if (c == ';' && peek(0) == ';') throw ParseError{"case statements are not analysed"};
        end_pipeline();
        continue;
      }
      if (c == '&') {
        if (peek(1) == '&') {
          i_ += 2;
          end_pipeline();
          continue;
        }
        if (peek(1) == '>') {  // &> and &>>
          i_ += peek(2) == '>' ? 3 : 2;
          redir_op = "&>";
          expect_target = true;
          continue;
        }
        ++i_;
        end_pipeline();
        continue;
      }
      if (c == '|') {
        if (peek(1) == '|') {
          i_ += 2;
          end_pipeline();
          continue;
        }
        i_ += peek(1) == '&' ? 2 : 1;
        if (cmd.words.empty() && cmd.redirects.empty() && st.simples.empty() && st.groups.empty())
          throw ParseError{"a pipe without a command"};
        end_stage();
        continue;
      }
      if (c == '(' && cmd.words.empty() && !expect_target) {
        ++i_;
        if (peek(0) == '(') throw ParseError{"(( arithmetic commands are not analysed"};
        st.groups.push_back(nested_list(')'));
        continue;
      }
      if (c == ')' || c == '(') throw ParseError{std::string("unexpected \"") + c + "\""};
      if (c == '<' || c == '>') {
        if (c == '<' && peek(1) == '(') {  // process substitution: a word
          Word w = word();
          push_word(cmd, std::move(w), expect_target, redir_op);
          continue;
        }
        redir_op = read_redirect_op();
        expect_target = true;
        continue;
      }
      Word w = word();
      // N> and N< : the digits were a file descriptor.
      if (!w.quoted && !w.expansion && !w.text.empty() && !at_end() &&
          (s_[i_] == '<' || s_[i_] == '>') &&
          std::all_of(w.text.begin(), w.text.end(), [](char d) { return d >= '0' && d <= '9'; })) {
        redir_op = read_redirect_op();
        expect_target = true;
        continue;
      }
      // `{ list; }` groups: `{` is a reserved word at the start of a command.
      if (!w.quoted && w.text == "{" && cmd.words.empty() && !expect_target) {
        st.groups.push_back(nested_list('}'));
        continue;
      }
      if (!w.quoted && w.text == "}" && cmd.words.empty()) throw ParseError{"unexpected \"}\""};
      push_word(cmd, std::move(w), expect_target, redir_op);
    }
    end_pipeline();
    return sc;
  }

 private:
  bool at_end() const { return i_ >= s_.size(); }
  char peek(std::size_t k) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }

  void skip_blanks() {
    while (!at_end()) {
      if (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r') {
        ++i_;
      } else if (s_[i_] == '\\' && peek(1) == '\n') {
        i_ += 2;
      } else {
        break;
      }
    }
  }

  Script nested_list(char end) {
    if (++depth_ > kMaxDepth) throw ParseError{"nested too deeply"};
    Script sc = list(end);
    --depth_;
    return sc;
  }

  static void push_word(Simple& cmd, Word w, bool& expect_target, std::string& op) {
    if (expect_target) {
      cmd.redirects.push_back({op, std::move(w)});
      expect_target = false;
    } else {
      cmd.words.push_back(std::move(w));
    }
  }

  std::string read_redirect_op() {
    std::string op;
    op += s_[i_++];
    if (op == "<" && peek(0) == '<') {
      if (peek(1) == '<') {  // here-string: <<< word
        i_ += 2;
        return "<<<";
      }
      throw ParseError{"heredocs are not analysed"};
    }
    if (!at_end() && (s_[i_] == '>' || s_[i_] == '&' || s_[i_] == '|')) op += s_[i_++];
    return op;
  }

  // The text up to the ) that closes a $( or <( opened just before i_.
  std::string balanced(char open, char close) {
    std::size_t start = i_;
    int level = 1;
    while (!at_end()) {
      char c = s_[i_];
      if (c == '\\') {
        i_ += 2;
        continue;
      }
      if (c == '\'') {
        std::size_t q = s_.find('\'', i_ + 1);
        if (q == std::string_view::npos) throw ParseError{"an unterminated ' quote"};
        i_ = q + 1;
        continue;
      }
      if (c == '"') {
        ++i_;
        while (!at_end() && s_[i_] != '"') i_ += s_[i_] == '\\' ? 2 : 1;
        if (at_end()) throw ParseError{"an unterminated \" quote"};
        ++i_;
        continue;
      }
      if (c == open) ++level;
      if (c == close && --level == 0) {
        std::string inner(s_.substr(start, i_ - start));
        ++i_;
        return inner;
      }
      ++i_;
    }
    throw ParseError{std::string("missing \"") + close + "\""};
  }

  std::string backquoted() {
    std::string inner;
    while (!at_end() && s_[i_] != '`') {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) ++i_;
      inner += s_[i_++];
    }
    if (at_end()) throw ParseError{"an unterminated ` quote"};
    ++i_;
    return inner;
  }

  // $..., after the '$'.
  void dollar(Word& w) {
    w.expansion = true;
    if (peek(0) == '(' && peek(1) == '(') {
      i_ += 2;
      std::string inner = balanced('(', ')');
      if (peek(0) != ')') throw ParseError{"an unterminated $(("};
      ++i_;
      w.text += "$((" + inner + "))";
      return;
    }
    if (peek(0) == '(') {
      ++i_;
      std::string inner = balanced('(', ')');
      w.subs.push_back(inner);
      w.text += "$(" + inner + ")";
      return;
    }
    if (peek(0) == '{') {
      ++i_;
      std::string inner = balanced('{', '}');
      w.text += "${" + inner + "}";
      return;
    }
    w.text += '$';
  }

  Word word() {
    Word w;
    if (peek(0) == '~') w.tilde = true;
    if ((peek(0) == '<' || peek(0) == '>') && peek(1) == '(') {
      i_ += 2;
      std::string inner = balanced('(', ')');
      w.subs.push_back(inner);
      w.expansion = w.process_sub = true;
      w.text = "<(" + inner + ")";
      return w;
    }
    while (!at_end()) {
      char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';' || c == '&' || c == '|' ||
          c == '<' || c == '>' || c == '(' || c == ')') {
        break;
      }
      if (c == '\\') {
        if (peek(1) == '\n') {
          i_ += 2;
          continue;
        }
        if (i_ + 1 < s_.size()) w.text += s_[i_ + 1];
        w.quoted = true;
        i_ += 2;
        continue;
      }
      if (c == '\'') {
        std::size_t q = s_.find('\'', i_ + 1);
        if (q == std::string_view::npos) throw ParseError{"an unterminated ' quote"};
        w.text += s_.substr(i_ + 1, q - i_ - 1);
        w.quoted = true;
        i_ = q + 1;
        continue;
      }
      if (c == '"') {
        w.quoted = true;
        ++i_;
        while (true) {
          if (at_end()) throw ParseError{"an unterminated \" quote"};
          char d = s_[i_];
          if (d == '"') {
            ++i_;
            break;
          }
          if (d == '\\' && i_ + 1 < s_.size() &&
              (s_[i_ + 1] == '"' || s_[i_ + 1] == '\\' || s_[i_ + 1] == '$' || s_[i_ + 1] == '`' ||
               s_[i_ + 1] == '\n')) {
            if (s_[i_ + 1] != '\n') w.text += s_[i_ + 1];
            i_ += 2;
            continue;
          }
          if (d == '$') {
            ++i_;
            dollar(w);
            continue;
          }
          if (d == '`') {
            ++i_;
            std::string inner = backquoted();
            w.subs.push_back(inner);
            w.expansion = true;
            w.text += "`" + inner + "`";
            continue;
          }
          w.text += d;
          ++i_;
        }
        continue;
      }
      if (c == '$') {
        ++i_;
        dollar(w);
        continue;
      }
      if (c == '`') {
        ++i_;
        std::string inner = backquoted();
        w.subs.push_back(inner);
        w.expansion = true;
        w.text += "`" + inner + "`";
        continue;
      }
      if (c == '*' || c == '?' || c == '[') w.glob = true;
      if (c == '{') w.brace = true;
      w.text += c;
      ++i_;
    }
    return w;
  }

  std::string_view s_;
  std::size_t i_ = 0;
  int depth_ = 0;
};

Script parse_script(std::string_view text, int depth) {
  if (depth > kMaxDepth) throw ParseError{"nested too deeply"};
  Reader r(text);
  return r.list(0);
}

// --- command names ------------------------------------------------------------

std::string base_name(const std::string& p) {
  auto k = p.rfind('/');
  return k == std::string::npos ? p : p.substr(k + 1);
}

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return s == n; });
}

bool is_shell(const std::string& n) {
  return one_of(n, {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh",
                    "busybox-sh", "rbash"});
}

bool is_interpreter(const std::string& n) {
  if (is_shell(n)) return true;
  if (one_of(n, {"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua",
                 "deno", "bun", "pwsh", "tclsh"}))
    return true;
  return n.rfind("python3.", 0) == 0 || n.rfind("python2.", 0) == 0;
}

bool is_downloader(const std::string& n) {
  return one_of(n,
                {"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "lwp-request", "GET"});
}

// --- the analysis -------------------------------------------------------------

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
  bool args_unknown = false;  // xargs: more arguments come from stdin
  bool cwd_unknown = false;   // env -C
  bool via_sudo = false;
};

bool is_assignment(const Word& w) {
  if (w.text.empty() || w.tilde) return false;
  auto eq = w.text.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  for (std::size_t i = 0; i < eq; ++i) {
    char c = w.text[i];
    bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// Options of a prefix command that take a value (as a separate word).
bool takes_value(const std::string& prog, const std::string& opt) {
  if (prog == "env") return one_of(opt, {"-u", "-C", "--unset", "--chdir"});
  if (prog == "nice") return one_of(opt, {"-n", "--adjustment"});
  if (prog == "timeout") return one_of(opt, {"-s", "-k", "--signal", "--kill-after"});
  if (prog == "stdbuf") return one_of(opt, {"-i", "-o", "-e"});
  if (prog == "ionice") return one_of(opt, {"-c", "-n", "-p", "-P", "-u"});
  if (prog == "xargs")
    return one_of(opt, {"-I", "-n", "-P", "-d", "-E", "-L", "-s", "-a", "--arg-file", "--delimiter",
                        "--max-args", "--max-procs", "--max-lines", "--replace"});
  if (prog == "sudo" || prog == "doas")
    return one_of(opt, {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "--user", "--group",
                        "--chdir", "--host", "--prompt"});
  if (prog == "exec") return opt == "-a";
  if (prog == "setsid" || prog == "nohup" || prog == "time" || prog == "command") return false;
  return false;
}

Unwrapped unwrap(std::vector<Word> argv) {
  Unwrapped u;
  for (int guard = 0; guard < 32; ++guard) {
    std::size_t i = 0;
    while (i < argv.size() && is_assignment(argv[i])) ++i;
    argv.erase(argv.begin(), argv.begin() + static_cast<long>(i));
    if (argv.empty()) break;
    const std::string prog = base_name(argv[0].text);
    if (prog == "busybox" && argv.size() > 1 && argv[1].text[0] != '-') {
      argv.erase(argv.begin());
      continue;
    }
    const bool prefix = one_of(prog, {"env", "nice", "nohup", "time", "timeout", "stdbuf", "ionice",
                                      "command", "exec", "builtin", "nocache", "chronic",
                                      "unbuffer", "setsid", "xargs", "sudo", "doas", "caffeinate"});
    if (!prefix) break;
    if (prog == "command" && argv.size() > 1 && one_of(argv[1].text, {"-v", "-V"})) break;
    if (prog == "sudo" || prog == "doas") u.via_sudo = true;
    if (prog == "xargs") u.args_unknown = true;
    std::size_t k = 1;
    while (k < argv.size()) {
      const std::string& a = argv[k].text;
      if (a == "--") {
        ++k;
        break;
      }
      if (a.size() < 2 || a[0] != '-') break;
      if (prog == "env" && (a == "-S" || a.rfind("--split-string", 0) == 0 ||
                            (a.rfind("-S", 0) == 0 && a.size() > 2))) {
        // env -S "cmd args": the string is split into words.
        std::string str;
        std::size_t next = k + 1;
        if (a == "-S" || a == "--split-string") {
          if (k + 1 < argv.size()) str = argv[k + 1].text;
          next = k + 2;
        } else {
          str = a.substr(a.find('=') != std::string::npos ? a.find('=') + 1 : 2);
        }
        std::vector<Word> split;
        std::string cur;
        for (char c : str + " ") {
          if (c == ' ' || c == '\t') {
            if (!cur.empty()) {
              Word nw;
              nw.text = cur;
              split.push_back(std::move(nw));
            }
            cur.clear();
          } else {
            cur += c;
          }
        }
        split.insert(split.end(), argv.begin() + static_cast<long>(std::min(next, argv.size())),
                     argv.end());
        argv = std::move(split);
        k = 0;
        break;
      }
      if (prog == "env" && (a == "-C" || a.rfind("--chdir", 0) == 0)) u.cwd_unknown = true;
      bool value = takes_value(prog, a) && a.find('=') == std::string::npos;
      k += value ? 2 : 1;
    }
    if (prog == "timeout" && k < argv.size()) ++k;  // the duration
    if (prog == "env") {
      while (k < argv.size() && is_assignment(argv[k])) ++k;
    }
    if (k == 0) continue;  // env -S rewrote argv
    argv.erase(argv.begin(), argv.begin() + static_cast<long>(std::min(k, argv.size())));
  }
  u.argv = std::move(argv);
  return u;
}

// Where a path argument points, lexically, from `cwd`; nullopt when unknown.
std::optional<std::string> where(const Word& w, const std::optional<std::string>& cwd,
                                 const AutoAllowContext& ctx) {
  if (w.expansion) return std::nullopt;
  std::string t = w.text;
  if (w.tilde) {
    if (ctx.home.empty()) return std::nullopt;
    if (t == "~" || t.rfind("~/", 0) == 0) {
      t = ctx.home + t.substr(1);
    } else {
      return std::nullopt;  // ~user
    }
  }
  if (!t.empty() && t[0] == '/') return detail::normalize_path(t);
  if (!cwd) return std::nullopt;
  return detail::normalize_path(t, *cwd);
}

bool inside_workspace(const Word& w, const std::optional<std::string>& cwd,
                      const AutoAllowContext& ctx, std::string* shown) {
  auto p = where(w, cwd, ctx);
  *shown = p ? *p : w.text;
  return p && !ctx.workspace.empty() && path_under(*p, ctx.workspace);
}

// Short options of a cluster like -rf, or a long option.
bool has_short(const std::string& a, char c) {
  return a.size() >= 2 && a[0] == '-' && a[1] != '-' && a.find(c) != std::string::npos;
}

void rule_rm(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd) {
  const auto& v = u.argv;
  bool recursive = false, no_preserve = false, opts = true;
  std::vector<const Word*> targets;
  for (std::size_t i = 1; i < v.size(); ++i) {
    const std::string& a = v[i].text;
    if (opts && a == "--") {
      opts = false;
      continue;
    }
    if (opts && a.size() > 1 && a[0] == '-' && !v[i].expansion) {
      if (a == "--recursive" || has_short(a, 'r') || has_short(a, 'R')) recursive = true;
      if (a == "--no-preserve-root") no_preserve = true;
      continue;
    }
    targets.push_back(&v[i]);
  }
  if (!recursive) return;
  if (no_preserve) {
    an.hit("rm-rf-outside-workspace", "rm --no-preserve-root");
    return;
  }
  if (u.args_unknown) {
    an.hit("rm-rf-outside-workspace", "rm -r of paths read from stdin (xargs)");
    return;
  }
  for (const Word* t : targets) {
    std::string shown;
    if (!inside_workspace(*t, cwd, an.ctx, &shown)) {
      an.hit(
          "rm-rf-outside-workspace",
          "rm -r of " + quote(shown) + ", which is not inside the workspace " + an.ctx.workspace);
      return;
    }
  }
}

void rule_git(Analysis& an, const Unwrapped& u) {
  const auto& v = u.argv;
  std::size_t i = 1;
  while (i < v.size() && v[i].text.size() > 1 && v[i].text[0] == '-') {
    i += one_of(v[i].text, {"-C", "-c"}) ? 2 : 1;
  }
  if (i >= v.size() || v[i].text != "push") return;
  for (std::size_t k = i + 1; k < v.size(); ++k) {
    const std::string& a = v[k].text;
    if (a == "-o" || a == "--push-option" || a == "--repo" || a == "--receive-pack" ||
        a == "--exec") {
      ++k;
      continue;
    }
    bool force = a == "--force" || a.rfind("--force-with-lease", 0) == 0 ||
                 a == "--force-if-includes" || a == "--mirror" ||
                 (a.size() >= 2 && a[0] == '-' && a[1] != '-' && a.find('f') != std::string::npos);
    if (force) {
      an.hit("git-push-force", "git push " + a + " rewrites remote history");
      return;
    }
    if (a.size() > 1 && a[0] == '+') {
      an.hit("git-push-force", "git push " + a + " (a +refspec force-updates the remote ref)");
      return;
    }
  }
}

void rule_chmod(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd) {
  const auto& v = u.argv;
  const std::string prog = base_name(v[0].text);
  bool recursive = false, opts = true, reference = false;
  std::vector<const Word*> pos;
  for (std::size_t i = 1; i < v.size(); ++i) {
    const std::string& a = v[i].text;
    if (opts && a == "--") {
      opts = false;
      continue;
    }
    if (opts && a.rfind("--", 0) == 0) {
      if (a == "--recursive") recursive = true;
      if (a.rfind("--reference", 0) == 0) reference = true;
      continue;
    }
    // chmod's modes may start with '-' (chmod -w f): only clusters of its
    // option letters are options.
    if (opts && a.size() > 1 && a[0] == '-' &&
        a.find_first_not_of("RcfvhHLP", 1) == std::string::npos) {
      if (a.find('R') != std::string::npos) recursive = true;
      continue;
    }
    pos.push_back(&v[i]);
  }
  if (!recursive) return;
  std::size_t first = reference ? 0 : 1;  // the mode / owner
  if (u.args_unknown) {
    an.hit("chmod-recursive-outside-workspace", prog + " -R of paths read from stdin (xargs)");
    return;
  }
  for (std::size_t i = first; i < pos.size(); ++i) {
    std::string shown;
    if (!inside_workspace(*pos[i], cwd, an.ctx, &shown)) {
      an.hit("chmod-recursive-outside-workspace", prog + " -R on " + quote(shown) +
                                                      ", which is not inside the workspace " +
                                                      an.ctx.workspace);
      return;
    }
  }
}

bool harmless_dev(const std::string& p) {
  return one_of(p, {"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/full",
                    "/dev/random", "/dev/urandom"}) ||
         p.rfind("/dev/fd/", 0) == 0 || p.rfind("/dev/pts/", 0) == 0 ||
         p.rfind("/dev/shm/", 0) == 0;
}

bool block_dev(const std::string& p) {
  if (p.rfind("/dev/", 0) != 0) return false;
  std::string n = p.substr(5);
  for (const char* pre : {"sd", "hd", "vd", "xvd", "nvme", "mmcblk", "loop", "dm-", "md", "mapper/",
                          "disk/", "sr", "nbd", "zd", "rbd", "mtd", "mem", "kmem", "port"}) {
    if (n.rfind(pre, 0) == 0) return true;
  }
  return false;
}

void rule_dd(Analysis& an, const Unwrapped& u) {
  for (std::size_t i = 1; i < u.argv.size(); ++i) {
    const Word& w = u.argv[i];
    if (w.text.rfind("of=", 0) != 0) continue;
    std::string target = w.text.substr(3);
    if (w.expansion) {
      an.hit("dd-to-device", "dd " + w.text + " writes to a path that is not known");
      return;
    }
    std::string norm = detail::normalize_path(target, "/");
    if (!target.empty() && target[0] == '/' && norm.rfind("/dev/", 0) == 0 && !harmless_dev(norm)) {
      an.hit("dd-to-device", "dd of=" + norm + " writes to a device");
      return;
    }
  }
}

void rule_redirects(Analysis& an, const Simple& s) {
  for (const Redirect& r : s.redirects) {
    if (r.op.find('>') == std::string::npos) continue;
    if (r.target.expansion) continue;
    std::string norm = detail::normalize_path(r.target.text, "/");
    if (!r.target.text.empty() && r.target.text[0] == '/' && block_dev(norm)) {
      an.hit("dd-to-device", "a redirection (" + r.op + ") writes to the device " + norm);
      return;
    }
  }
}

bool is_mkfs(const std::string& n) {
  return n == "mkfs" || n.rfind("mkfs.", 0) == 0 ||
         one_of(n, {"mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "cfdisk", "parted", "sgdisk",
                    "gdisk", "blkdiscard", "mkntfs", "mkdosfs", "mkexfatfs", "mkfatfs"});
}

bool is_shutdown(const Unwrapped& u) {
  const std::string n = base_name(u.argv[0].text);
  if (one_of(n, {"shutdown", "reboot", "halt", "poweroff", "telinit"})) return true;
  if (n == "init" && u.argv.size() > 1 && one_of(u.argv[1].text, {"0", "6", "1", "s", "S"}))
    return true;
  if (n == "systemctl") {
    for (std::size_t i = 1; i < u.argv.size(); ++i) {
      if (one_of(u.argv[i].text, {"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate",
                                  "hybrid-sleep", "soft-reboot", "rescue", "emergency"}))
        return true;
    }
  }
  return false;
}

// Does this command run its stdin as code? (sh, bash -s, python3 -, ...)
bool runs_stdin(const Unwrapped& u) {
  if (u.argv.empty()) return false;
  const std::string n = base_name(u.argv[0].text);
  if (!is_interpreter(n)) return false;
  for (std::size_t i = 1; i < u.argv.size(); ++i) {
    const std::string& a = u.argv[i].text;
    if (a == "-" || a == "-s") return true;
    if (a == "--") return i + 1 >= u.argv.size() || u.argv[i + 1].text == "-";
    if (a.size() > 1 && a[0] == '-') {
      // Inline code: sh -c, python3 -c / -m, perl -e / -E, node -e / -p.
      if (a[1] != '-' && a.find_first_of("cmeEp", 1) != std::string::npos) return false;
      if (a == "--eval" || a == "--command" || a == "--print") return false;
      continue;
    }
    return false;  // a script file: stdin is its data
  }
  return true;
}

bool mentions_downloader(const Script& sc);

bool simple_downloads(const Simple& s) {
  Unwrapped u = unwrap(s.words);
  if (!u.argv.empty() && is_downloader(base_name(u.argv[0].text))) return true;
  for (const Word& w : s.words) {
    for (const std::string& sub : w.subs) {
      try {
        if (mentions_downloader(parse_script(sub, 1))) return true;
      } catch (const ParseError&) {
        return true;  // unreadable: assume the worst
      }
    }
  }
  return false;
}

bool stage_downloads(const Stage& st) {
  for (const Simple& s : st.simples) {
    if (simple_downloads(s)) return true;
  }
  for (const Script& g : st.groups) {
    if (mentions_downloader(g)) return true;
  }
  return false;
}

bool mentions_downloader(const Script& sc) {
  for (const Pipeline& p : sc.pipelines) {
    for (const Stage& st : p.stages) {
      if (stage_downloads(st)) return true;
    }
  }
  return false;
}

bool words_download(const std::vector<Word>& words, std::size_t from) {
  for (std::size_t i = from; i < words.size(); ++i) {
    for (const std::string& sub : words[i].subs) {
      try {
        if (mentions_downloader(parse_script(sub, 1))) return true;
      } catch (const ParseError&) {
        return true;
      }
    }
  }
  return false;
}

bool fnmatch_word(const std::string& pattern, const std::string& s) {
  return ::fnmatch(pattern.c_str(), s.c_str(), 0) == 0;
}

void rule_custom(Analysis& an, const Unwrapped& u) {
  for (const FloorRule& r : an.floor.custom) {
    if (r.command.size() > u.argv.size()) continue;
    const std::string& a0 = u.argv[0].text;
    if (!fnmatch_word(r.command[0], a0) && !fnmatch_word(r.command[0], base_name(a0))) continue;
    bool all = true;
    for (std::size_t i = 1; i < r.command.size() && all; ++i) {
      all = fnmatch_word(r.command[i], u.argv[i].text);
    }
    if (all && !an.match) {
      std::string shown = detail::join(r.command, " ");
      an.match =
          Match{r.id, r.reason.empty() ? "matches the floor rule \"" + shown + "\" (" + r.file + ")"
                                       : r.reason};
      return;
    }
  }
}

// --- protected-path-write -----------------------------------------------------

std::vector<std::string> components(const std::string& p) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < p.size()) {
    std::size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    if (j > i) out.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  return out;
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

// Bash's brace expansion of one word ("a{b,c}d" -> "abd" "acd"), lexically,
// appended to `out`; a `{` without a top-level comma stays as it is. False
// when it would make more than kMaxBraceWords words: `{a,b,c,d}` ten times
// is a million (fuzz_auto_allow_shell: a timeout), so such a word counts as
// one whose paths are not known.
constexpr std::size_t kMaxBraceWords = 1024;

bool brace_expand(const std::string& t, std::vector<std::string>& out, int depth = 0) {
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

// Commands that write the files their arguments name. Every non-option word
// is taken as a path (a mode, a sed script or an owner never names a
// protected file); for sed only with -i.
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

void rule_protected_args(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd) {
  const auto& v = u.argv;
  const std::string n = base_name(v[0].text);
  // Editors, downloaders and the like write the files they name too (red
  // team round 3); `git mv|checkout|restore` write their path operands.
  const bool git_writer =
      n == "git" && v.size() > 1 && one_of(v[1].text, {"mv", "checkout", "restore"});
  const bool writer =
      git_writer ||
      one_of(n, {"cp",  "mv",    "ln",    "install",  "tee",   "touch",  "chmod",  "chown", "chgrp",
                 "rm",  "rmdir", "mkdir", "truncate", "patch", "unlink", "shred",  "rsync", "unzip",
                 "tar", "dd",    "sed",   "perl",     "curl",  "wget",   "sponge", "cpio",  "ed",
                 "ex",  "vi",    "vim",   "nvim",     "nano",  "emacs"});
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

void analyse_simple(Analysis& an, const Simple& s, std::optional<std::string>& cwd, int depth);
void analyse_script(Analysis& an, std::string_view text, std::optional<std::string> cwd, int depth);

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

// git subcommands that write .git/config (or install hooks).
void rule_git_config(Analysis& an, const Unwrapped& u) {
  const auto& v = u.argv;
  std::size_t i = 1;
  while (i < v.size() && v[i].text.size() > 1 && v[i].text[0] == '-') {
    i += one_of(v[i].text, {"-C", "-c", "--git-dir", "--work-tree", "--namespace"}) ? 2 : 1;
  }
  if (i >= v.size()) return;
  const std::string sub = v[i].text;
  std::vector<std::string> rest;
  for (std::size_t k = i + 1; k < v.size(); ++k) rest.push_back(v[k].text);
  auto any = [&](std::initializer_list<const char*> names) {
    return std::any_of(rest.begin(), rest.end(), [&](const std::string& a) {
      return std::any_of(names.begin(), names.end(), [&](const char* n) {
        const std::string s = n;
        return a == s || (s.rfind("--", 0) == 0 && a.rfind(s + "=", 0) == 0);
      });
    });
  };
  auto first_arg = [&]() -> std::string {
    for (const auto& a : rest)
      if (a.empty() || a[0] != '-') return a;
    return "";
  };
  std::string why;
  if (sub == "config") {
    const std::string verb = first_arg();
    const bool get = any({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list",
                          "--get-color", "--get-colorbool"}) ||
                     one_of(verb, {"get", "list"});
    const bool write = any({"--add", "--replace-all", "--unset", "--unset-all", "--rename-section",
                            "--remove-section", "-e", "--edit"}) ||
                       one_of(verb, {"set", "unset", "rename-section", "remove-section", "edit"});
    // NAME alone reads; NAME VALUE [REGEX] sets. Options with a value.
    std::size_t plain = 0;
    for (std::size_t k = 0; k < rest.size(); ++k) {
      const std::string& a = rest[k];
      if (one_of(a, {"-f", "--file", "--blob", "--type", "--default", "--comment"})) {
        ++k;
        continue;
      }
      if (!a.empty() && a[0] != '-') ++plain;
    }
    if (write || (!get && plain >= 2)) why = "git config sets or edits configuration";
  } else if (sub == "submodule") {
    const std::string verb = first_arg();
    if (one_of(verb, {"add", "init", "update", "set-url", "set-branch", "sync", "deinit",
                      "absorbgitdirs"}))
      why = "git submodule " + verb + " writes .gitmodules and .git/config";
  } else if (sub == "remote") {
    const std::string verb = first_arg();
    if (one_of(verb, {"add", "set-url", "rename", "remove", "rm", "set-branches"}))
      why = "git remote " + verb + " writes .git/config";
  } else if (sub == "branch") {
    if (any({"-u", "--set-upstream-to", "--unset-upstream", "-m", "-M", "--move", "-c", "-C",
             "--copy", "-t", "--track"}))
      why = "git branch with an upstream, a rename or a copy writes .git/config";
  } else if (sub == "checkout" || sub == "switch") {
    if (any({"-t", "--track"})) why = "git " + sub + " --track writes .git/config";
  } else if (sub == "worktree") {
    if (first_arg() == "add") why = "git worktree add writes .git/worktrees";
  } else if (sub == "clone" || sub == "init") {
    // A new repository inside the workspace is a nested one: its config
    // and hooks are the workload's to write, and the host's git obeys them
    // (a gitlink in the outer repository makes `git status` at the root
    // run them). The sandbox cannot protect a repository it did not see.
    why = "git " + sub + " makes a repository whose config and hooks the host's git obeys";
  }
  if (!why.empty()) an.hit("protected-path-write", why);
}

// name(){ name|name& };name  (any function name, any spacing): the regex
//   ([^\s(){};|&]+)\s*\(\)\s*\{\s*\1\s*\|\s*\1\s*&\s*;?\s*\}\s*;\s*\1
// matched by hand. libstdc++'s std::regex recurses once per character
// matched, so a long word (fuzz_auto_allow_shell: 200 KB) overflowed the
// stack, and its back-references made the search quadratic.
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool is_name_char(char c) {
  return !is_space(c) && std::string_view("(){};|&").find(c) == std::string_view::npos;
}

bool has_fork_bomb(std::string_view t) {
  for (std::size_t open = t.find("()"); open != std::string_view::npos;
       open = t.find("()", open + 1)) {
    std::size_t run_end = open;  // the name, then spaces, then ()
    while (run_end > 0 && is_space(t[run_end - 1])) --run_end;
    std::size_t i = open + 2;
    auto spaces = [&] {
      while (i < t.size() && is_space(t[i])) ++i;
    };
    auto take = [&](std::string_view lit) {
      if (t.substr(i, lit.size()) != lit) return false;
      i += lit.size();
      return true;
    };
    spaces();
    if (!take("{")) continue;
    spaces();
    // The body's first word is the name (a name is followed by spaces or
    // a |, neither of which a name holds); the definition must end with it.
    std::size_t name_end = i;
    while (name_end < t.size() && is_name_char(t[name_end])) ++name_end;
    const std::string_view name = t.substr(i, name_end - i);
    if (name.empty() || name.size() > run_end ||
        t.substr(run_end - name.size(), name.size()) != name)
      continue;
    i = name_end;
    spaces();
    if (!take("|")) continue;
    spaces();
    if (!take(name)) continue;
    spaces();
    if (!take("&")) continue;
    spaces();
    take(";");
    spaces();
    if (!take("}")) continue;
    spaces();
    if (!take(";")) continue;
    spaces();
    if (take(name)) return true;
  }
  return false;
}

void analyse_script(Analysis& an, std::string_view text, std::optional<std::string> cwd, int depth);

void analyse_list(Analysis& an, const Script& sc, std::optional<std::string>& cwd, int depth);

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
  Unwrapped u = unwrap(s.words);
  if (u.argv.empty()) return;
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
  if (n == "rm") rule_rm(an, u, cwd);
  if (n == "git") {
    rule_git(an, u);
    rule_git_config(an, u);
  }
  if (n == "chmod" || n == "chown" || n == "chgrp") rule_chmod(an, u, cwd);
  if (n == "dd") rule_dd(an, u);
  if (is_mkfs(n)) an.hit("mkfs", n + " formats or repartitions a disk");
  if (one_of(n, {"sudo", "su", "doas", "pkexec", "run0"}))
    an.hit("sudo", n + " runs a command as another user");
  if (is_shutdown(u)) an.hit("shutdown", n + " stops or restarts the machine");
  rule_protected_args(an, u, cwd);
  if (!an.done()) rule_git_dir_words(an, u);
  if (one_of(n, {"awk", "gawk", "mawk", "nawk", "busybox-awk"})) rule_awk(an, u, cwd, depth);
  if (n == "find") rule_find(an, u, cwd, depth);
  rule_custom(an, u);
  if (an.done()) return;

  // Code run by a shell or eval: read it too.
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
    if (words_download(u.argv, 1)) an.hit("pipe-to-shell", n + " runs what a download printed");
    return;
  }
  if (!is_interpreter(n)) return;
  // bash <(curl ...), python3 <(wget -O- ...)
  for (std::size_t i = 1; i < u.argv.size(); ++i) {
    if (u.argv[i].process_sub && words_download(u.argv, i)) {
      an.hit("pipe-to-shell", n + " runs a script straight from a download");
      return;
    }
  }
  if (!is_shell(n)) return;
  // sh [-opts] -c SCRIPT [arg0 args...]; the c may sit in a cluster (-ec).
  for (std::size_t i = 1; i < u.argv.size(); ++i) {
    const std::string& a = u.argv[i].text;
    if (a.size() < 2 || a[0] != '-' || a == "--") break;
    if (a[1] == '-') continue;  // --norc, --login, ...
    if (a.find('c') == std::string::npos) {
      if (a == "-o" || a == "+o") ++i;
      continue;
    }
    std::size_t k = i + 1;
    while (k < u.argv.size() && u.argv[k].text.size() > 1 && u.argv[k].text[0] == '-' &&
           u.argv[k].text != "--") {
      ++k;
    }
    if (k < u.argv.size() && u.argv[k].text == "--") ++k;
    if (k >= u.argv.size()) return;
    const Word& script = u.argv[k];
    if (script.expansion && !script.quoted && script.subs.empty()) {
      an.unanalysable = n + " -c of an expansion (" + script.text + ")";
      return;
    }
    if (words_download(u.argv, k)) {
      an.hit("pipe-to-shell", n + " -c runs what a download printed");
      return;
    }
    if (script.expansion) {
      an.unanalysable = n + " -c of a script with expansions (" + script.text + ")";
      return;
    }
    analyse_script(an, script.text, cwd, depth + 1);
    return;
  }
}

void analyse_list(Analysis& an, const Script& sc, std::optional<std::string>& cwd, int depth) {
  for (const Pipeline& p : sc.pipelines) {
    if (an.done()) return;
    // A download piped into something that runs its stdin.
    bool downloaded = false;
    for (const Stage& st : p.stages) {
      if (downloaded) {
        for (const Simple& s : st.simples) {
          if (runs_stdin(unwrap(s.words))) {
            an.hit("pipe-to-shell", "a download is piped into " +
                                        base_name(unwrap(s.words).argv[0].text) +
                                        ", which runs it");
          }
        }
      }
      if (stage_downloads(st)) downloaded = true;
    }
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

const std::vector<std::string> kBuiltinFloor = {"rm-rf-outside-workspace",
                                                "git-push-force",
                                                "pipe-to-shell",
                                                "chmod-recursive-outside-workspace",
                                                "dd-to-device",
                                                "mkfs",
                                                "sudo",
                                                "shutdown",
                                                "fork-bomb",
                                                "protected-path-write"};

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
  Analysis an{floor, ctx, std::nullopt, "", {}, {}};
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
