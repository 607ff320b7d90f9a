// How a shell is started (floor_rules.hpp): the option grammar of sh, bash,
// dash, zsh, ksh, csh and fish, to find the script of -c (red team round
// 11: `bash -O extglob -c 'git push -f'` and `sh +e -c ...` lost it), and
// the files a script downloads or writes and then runs (`curl -o f URL &&
// sh f` is a download run as code).
#include "floor_rules.hpp"

namespace comet::capability::floor_rules {

namespace {

bool starts(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

// A single-letter option this shell takes without a value (bash(1),
// dash(1), mksh(1), zsh(1), tcsh(1), fish(1)); o and O take one.
bool shell_letter(const std::string& n, char c) {
  if (one_of(n, {"zsh", "ksh", "mksh", "csh", "tcsh"}))
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  if (n == "fish") return std::string_view("ilnPNv").find(c) != std::string_view::npos;
  // sh is bash or dash: the letters of both.
  return std::string_view("abefhkmnptuvxBCEHPTilrsDIqV").find(c) != std::string_view::npos;
}

// Long options that take no value, by shell.
bool shell_long_flag(const std::string& n, const std::string& a) {
  if (n == "fish")
    return one_of(a, {"--interactive", "--login", "--no-config", "--no-execute", "--private",
                      "--print-rusage-self", "--profile-startup", "--version", "--help"});
  if (n == "zsh") return a != "--emulate";  // zsh's --OPTION-NAME set options
  return one_of(a, {"--norc", "--noprofile", "--login", "--posix", "--restricted", "--verbose",
                    "--version", "--help", "--noediting", "--debugger", "--dump-strings",
                    "--dump-po-strings", "--pretty-print"});
}

// Long options that take a value, and what it is: "" data, "script" a
// command the shell runs, "file" a startup file the shell runs.
std::optional<std::string> shell_long_value(const std::string& n, const std::string& name) {
  if (n == "fish") {
    if (one_of(name, {"--command", "--init-command"})) return std::string("script");
    if (one_of(name, {"--debug", "--debug-output", "--features", "--profile"})) return "";
    return std::nullopt;
  }
  if (n == "zsh" && name == "--emulate") return "";
  if (one_of(n, {"bash", "rbash", "sh"}) && one_of(name, {"--rcfile", "--init-file"}))
    return std::string("file");
  return std::nullopt;
}

void read_script(Analysis& an, const std::string& n, const std::vector<Word>& argv, std::size_t k,
                 const std::optional<std::string>& cwd, int depth) {
  const Word& script = argv[k];
  if (script.expansion && !script.quoted && script.subs.empty()) {
    an.unanalysable = n + " -c of an expansion (" + script.text + ")";
    return;
  }
  if (words_download(argv, k)) {
    an.hit("pipe-to-shell", n + " -c runs what a download printed");
    return;
  }
  if (script.expansion) {
    an.unanalysable = n + " -c of a script with expansions (" + script.text + ")";
    return;
  }
  analyse_script(an, script.text, cwd, depth + 1);
}

// The name a download with no -o takes: the URL's last component.
std::string url_name(const std::string& url) {
  std::string p = url.substr(0, url.find_first_of("?#"));
  const std::size_t scheme = p.find("://");
  if (scheme == std::string::npos) return "";
  p = p.substr(scheme + 3);
  const std::size_t slash = p.rfind('/');
  if (slash == std::string::npos || slash + 1 == p.size()) return "index.html";
  return p.substr(slash + 1);
}

void note_made(Analysis& an, const Word& w) {
  if (w.text.empty() || w.text == "-") return;
  const std::string b = w.expansion ? std::string("*") : base_name(w.text);
  if (!b.empty()) an.made_files.push_back(b);
}

}  // namespace

void analyse_shell_argv(Analysis& an, const Unwrapped& u, const std::string& n,
                        const std::optional<std::string>& cwd, int depth) {
  const auto& v = u.argv;
  bool command = false;
  std::size_t i = 1;
  std::vector<std::size_t> scripts;  // fish -C / --init-command values
  while (i < v.size()) {
    const std::string& a = v[i].text;
    if (v[i].expansion && (a.empty() || a[0] == '-' || a[0] == '+')) {
      an.unanalysable = n + " with an option given by an expansion (" + a + ")";
      return;
    }
    if (a == "--" || a == "-") {
      ++i;
      break;
    }
    if (a.size() < 2 || (a[0] != '-' && a[0] != '+')) break;
    if (starts(a, "--")) {
      const std::size_t eq = a.find('=');
      const std::string name = a.substr(0, eq);
      if (eq == std::string::npos && shell_long_flag(n, a)) {
        ++i;
        continue;
      }
      auto kind = shell_long_value(n, name);
      if (!kind) {
        an.unanalysable = n + " " + a + ": an option the floor does not know";
        return;
      }
      if (*kind == "file") {
        an.unanalysable = n + " " + name + " runs a startup file the command names";
        return;
      }
      const std::size_t at = eq == std::string::npos ? i + 1 : i;
      if (*kind == "script") {
        if (name == "--command") command = true;
        if (eq != std::string::npos) {
          Word w = v[i];
          w.text = a.substr(eq + 1);
          if (!an.done()) analyse_script(an, w.text, cwd, depth + 1);
          if (name == "--command") return;
        } else if (at < v.size()) {
          scripts.push_back(at);
          if (name == "--command") {
            for (std::size_t s : scripts) read_script(an, n, v, s, cwd, depth);
            return;
          }
        }
      }
      i = at + 1;
      continue;
    }
    // A cluster of letters (-ec, +e, -xO extglob): o and O (fish: C, d, o,
    // p, f) take the next word each, in order.
    const bool plus = a[0] == '+';
    std::size_t take = 0;
    for (std::size_t c = 1; c < a.size(); ++c) {
      const char l = a[c];
      if (l == 'c' && !plus) {
        command = true;
        continue;
      }
      const bool value = n == "fish" ? std::string_view("Cdopf").find(l) != std::string_view::npos
                                     : l == 'o' || l == 'O';
      if (value) {
        if (n == "fish" && l == 'C' && i + 1 + take < v.size()) scripts.push_back(i + 1 + take);
        ++take;
        continue;
      }
      if (!shell_letter(n, l) || (plus && l == 'c')) {
        an.unanalysable = n + " " + a + ": an option the floor does not know";
        return;
      }
    }
    i += 1 + take;
  }
  for (std::size_t s : scripts)
    if (s < v.size()) read_script(an, n, v, s, cwd, depth);
  if (an.done() || i >= v.size()) return;
  if (command) {
    read_script(an, n, v, i, cwd, depth);
    return;
  }
  // sh FILE: a script file (noted: run after a download, it is one).
  rule_script_file(an, n, v[i]);
  an.ran_files.push_back(v[i].expansion ? "*" : base_name(v[i].text));
}

void note_download_outputs(Analysis& an, const Unwrapped& u) {
  const auto& v = u.argv;
  const std::string n = base_name(v[0].text);
  for (std::size_t i = 1; i < v.size(); ++i) {
    const std::string& a = v[i].text;
    if (a.find("://") != std::string::npos) {
      const std::string name = url_name(a);
      if (!name.empty()) an.made_files.push_back(name);
      continue;
    }
    if (a.size() < 2 || a[0] != '-') continue;
    if (starts(a, "--")) {
      const std::size_t eq = a.find('=');
      const std::string name = a.substr(0, eq);
      if (one_of(name, {"--output", "--output-document", "--out", "--download"})) {
        Word w = eq == std::string::npos ? (i + 1 < v.size() ? v[i + 1] : Word{}) : v[i];
        if (eq != std::string::npos) w.text = a.substr(eq + 1);
        note_made(an, w);
        if (eq == std::string::npos) ++i;
      }
      continue;
    }
    // curl -o F / -sSLo F / -oF; wget -O F / -qO F / -OF (-O- is stdout).
    const char out = n == "wget" ? 'O' : 'o';
    const std::size_t at = a.find(out, 1);
    if (at == std::string::npos) continue;
    Word w = at + 1 < a.size() ? v[i] : (i + 1 < v.size() ? v[i + 1] : Word{});
    if (at + 1 < a.size()) w.text = a.substr(at + 1);
    note_made(an, w);
    if (at + 1 == a.size()) ++i;
  }
}

void note_ran_file(Analysis& an, const Unwrapped& u, const std::string& n) {
  const auto& v = u.argv;
  if (v[0].text.find('/') != std::string::npos) {
    an.ran_files.push_back(base_name(v[0].text));
    return;
  }
  if (n == "source" || n == ".") {
    if (v.size() > 1) an.ran_files.push_back(v[1].expansion ? "*" : base_name(v[1].text));
    return;
  }
  if (!is_interpreter(n) || is_shell(n)) return;  // shells: analyse_shell_argv
  for (std::size_t i = 1; i < v.size(); ++i) {
    const std::string& a = v[i].text;
    if (a == "--") {
      if (i + 1 < v.size()) an.ran_files.push_back(base_name(v[i + 1].text));
      return;
    }
    if (a.size() > 1 && a[0] == '-') {
      // Inline code: python3 -c, perl -e, node -e; stops the search.
      if (a[1] != '-' && a.find_first_of("cmeEp", 1) != std::string::npos) return;
      if (one_of(a, {"--eval", "--command", "--print"})) return;
      continue;
    }
    an.ran_files.push_back(v[i].expansion ? "*" : base_name(a));
    return;
  }
}

void finish_script(Analysis& an) {
  if (an.done()) return;
  for (const std::string& r : an.ran_files) {
    for (const std::string& m : an.made_files) {
      if (r == m || r == "*" || m == "*") {
        an.hit("pipe-to-shell", "runs " + r +
                                    ", a file the same command downloaded or wrote (as a "
                                    "download piped into a shell)");
        return;
      }
    }
  }
  if (!an.git_env_changed.empty() && !an.git_ran.empty()) {
    an.unanalysable = an.git_ran + " runs in a script that changes where git finds its config (" +
                      an.git_env_changed + ")";
  }
}

}  // namespace comet::capability::floor_rules
