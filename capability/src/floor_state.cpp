// What bash evaluates that is not written as a command (floor_rules.hpp):
// arithmetic, the shell's own state, the fds a shell reads its script from,
// and symlinks the script makes (red team round 12). The reader sees
// commands; these make text into code behind its back, so each asks unless
// it is plainly inert (fail closed):
//
//   - arithmetic ($(( )), $[ ], let, [[ A -eq B ]], an array subscript, a
//     ${x:offset}, ${!x}, declare -i): bash expands a subscript, running
//     the $( ) in it even when the text was quoted (`[[ 'a[$(cmd)]' -eq 0
//     ]]`), and evaluates a variable's value as an expression, recursively
//     (`x='a[$(cmd)]'; echo $((x))`). A $( ) or ` in arithmetic, a
//     positional parameter there, or a variable the script gives a value
//     that is not a plain number (read, $( ), text) asks;
//   - the names builtins take (declare, local, export, readonly, unset,
//     read, printf -v, mapfile, getopts, [[ -v ]]) may be subscripted:
//     the subscript is arithmetic;
//   - state that makes later text run: BASH_ALIASES, BASH_CMDS, PS0-PS4,
//     CDPATH, SHELLOPTS, BASHOPTS, an alias definition, shopt -s of an
//     option not known to be inert, enable, hash -p, declare -n, exec of
//     the shell's input;
//   - a shell or source reading its script from /dev/ or /proc/ (a
//     here-string on another fd), or a shell reading stdin duplicated from
//     another fd;
//   - a symlink the script makes, in a script that removes recursively:
//     the path may lead outside (`ln -s /x r; rm -rf r/`).
#include "floor_rules.hpp"

namespace comet::capability::floor_rules {

namespace {

bool starts(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

// A short option in a cluster (-sf, -rs).
bool has_short_option(const std::string& a, char c) {
  return a.size() >= 2 && a[0] == '-' && a[1] != '-' && a.find(c) != std::string::npos;
}

bool name_start(char c) {
  return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

bool name_char(char c) {
  return name_start(c) || (c >= '0' && c <= '9');
}

// Variables whose value changes what later text runs or where cd goes.
bool state_variable(const std::string& name) {
  return one_of(name, {"BASH_ALIASES", "BASH_CMDS", "PS0", "PS1", "PS2", "PS3", "PS4", "CDPATH",
                       "SHELLOPTS", "BASHOPTS", "BASH_LOADABLES_PATH"});
}

// shopt options that change nothing about what runs or where.
bool inert_shopt(const std::string& o) {
  return one_of(o, {"globstar", "nullglob", "failglob", "extglob", "nocaseglob", "nocasematch",
                    "lastpipe", "inherit_errexit", "globasciiranges", "checkwinsize", "histappend",
                    "cmdhist", "lithist", "xpg_echo", "huponexit"});
}

// A device or a /proc file a shell would read its script from (a
// here-string or a here-doc fed on some fd): not a file the reader can see.
bool fd_path(const std::string& p) {
  return (starts(p, "/dev/") && p != "/dev/null") || starts(p, "/proc/");
}

// The NAME of a builtin's NAME or NAME=VALUE argument: a subscript in it is
// arithmetic, a name given by an expansion may hold one; a compound value
// `([SUBSCRIPT]=V ...)` too (declare -a a='([$(cmd)]=1)').
void names_of(Analysis& an, const Word& w) {
  const std::size_t eq = w.text.find('=');
  const std::string name = w.text.substr(0, eq);
  if (name.find_first_of("$`") != std::string::npos)
    check_arith(an, name, "a name given by an expansion (" + w.text + ")");
  const std::size_t open = name.find('[');
  if (open != std::string::npos)
    check_arith(an, name.substr(open), "an array subscript (" + w.text + ")");
  if (eq != std::string::npos && eq + 1 < w.text.size() && w.text[eq + 1] == '(')
    check_arith(an, w.text.substr(eq + 1), "a compound array value (" + w.text + ")");
}

}  // namespace

void check_arith(Analysis& an, const std::string& expr, const std::string& what) {
  if (an.done()) return;
  if (expr.find("$(") != std::string::npos || expr.find('`') != std::string::npos ||
      expr.find("<(") != std::string::npos || expr.find(">(") != std::string::npos) {
    an.unanalysable = what + " is arithmetic, and bash runs the command substitution in it";
    return;
  }
  for (std::size_t i = 0; i < expr.size(); ++i) {
    if (expr[i] == '$') {
      std::size_t k = i + 1;
      if (k < expr.size() && expr[k] == '{') ++k;
      if (k < expr.size() &&
          ((expr[k] >= '0' && expr[k] <= '9') || expr[k] == '@' || expr[k] == '*')) {
        an.unanalysable = what + " is arithmetic on a positional parameter (its value is code " +
                          "to bash, and the command gives it)";
        return;
      }
      continue;
    }
    if (!name_start(expr[i]) || (i > 0 && name_char(expr[i - 1]))) continue;
    std::size_t k = i;
    while (k < expr.size() && name_char(expr[k])) ++k;
    std::string name = expr.substr(i, k - i);
    if (std::find(an.arith_names.begin(), an.arith_names.end(), name) == an.arith_names.end())
      an.arith_names.push_back(std::move(name));
    i = k;
  }
}

void note_value(Analysis& an, const std::string& name, const Word* value) {
  if (an.done()) return;
  if (state_variable(name)) {
    an.unanalysable =
        "sets " + name + ", which makes bash run or find commands the reader cannot see";
    return;
  }
  bool code = value == nullptr || value->expansion;
  // n=$((n + 1)): an arithmetic expansion's value is a number.
  if (value != nullptr && value->subs.empty()) {
    const std::string& t = value->text;
    const std::size_t eq = t.find('=');
    if (eq != std::string::npos && t.compare(eq + 1, 3, "$((") == 0 && t.size() >= eq + 6 &&
        t.compare(t.size() - 2, 2, "))") == 0 && t.find("$((", eq + 2) == std::string::npos)
      return;
  }
  if (!code) {
    const std::string& t = value->text;
    const std::size_t eq = t.find('=');
    const std::string v = eq == std::string::npos ? std::string() : t.substr(eq + 1);
    code = std::any_of(v.begin(), v.end(),
                       [](char c) { return name_start(c) || c == '[' || c == '$' || c == '`'; });
  }
  if (code && std::find(an.code_vars.begin(), an.code_vars.end(), name) == an.code_vars.end())
    an.code_vars.push_back(name);
}

void rule_words_arith(Analysis& an, const Simple& s, const Unwrapped& u) {
  for (const Word& w : s.words)
    for (const std::string& e : w.arith) check_arith(an, e, "$((" + e + ")) or a ${..} of it");
  for (const Redirect& r : s.redirects)
    for (const std::string& e : r.target.arith) check_arith(an, e, "$((" + e + "))");
  for (const Word& w : u.env) {
    const std::size_t open = w.text.find('[');
    if (open != std::string::npos && open < w.text.find('='))
      check_arith(an, w.text.substr(open, w.text.find('=') - open),
                  "the subscript of " + assigned_name(w.text));
  }
  // exec 3<<<"..." / exec <<<"...": the shell's own input or a new fd,
  // which a later shell may read as its script (red team round 12).
  if (u.argv.empty() && !s.words.empty() && !s.words[0].quoted && s.words[0].text == "exec")
    for (const Redirect& r : s.redirects)
      if (r.op.find('<') != std::string::npos && !an.done())
        an.unanalysable = "exec " + r.op + " opens an input a later command may run as a script";
}

void rule_bash_state(Analysis& an, const Simple& s, const Unwrapped& u, const std::string& n) {
  const auto& v = u.argv;
  if (n == "let") {
    for (std::size_t k = 1; k < v.size(); ++k) check_arith(an, v[k].text, "let " + v[k].text);
  }
  if (n == "[[" || n == "test" || n == "[") {
    for (std::size_t k = 1; k < v.size(); ++k) {
      const std::string& a = v[k].text;
      // [ and test take -eq's operands as integers; [[ evaluates them.
      if (n == "[[" && one_of(a, {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})) {
        check_arith(an, v[k - 1].text, n + " " + v[k - 1].text + " " + a);
        if (k + 1 < v.size()) check_arith(an, v[k + 1].text, n + " " + a + " " + v[k + 1].text);
      }
      if ((a == "-v" || a == "-R") && k + 1 < v.size()) names_of(an, v[k + 1]);
    }
  }
  if (one_of(n, {"declare", "typeset", "local", "readonly", "export", "unset", "read", "mapfile",
                 "readarray", "getopts", "printf", "wait"})) {
    bool integer = false;
    for (std::size_t k = 1; k < v.size() && !an.done(); ++k) {
      const std::string& a = v[k].text;
      if (a.size() > 1 && (a[0] == '-' || a[0] == '+') && !v[k].expansion) {
        if (one_of(n, {"declare", "typeset", "local"}) && a.find('n') != std::string::npos) {
          an.unanalysable = n + " " + a + " makes a name stand for another (a nameref)";
          return;
        }
        if (a.find('i') != std::string::npos && n != "read") integer = true;
        // Option values that are not names: read -p PROMPT, -d, -t, ...
        const bool value = (n == "read" && one_of(a, {"-d", "-i", "-n", "-N", "-p", "-t", "-u"})) ||
                           ((n == "mapfile" || n == "readarray") &&
                            one_of(a, {"-d", "-n", "-O", "-s", "-u", "-C", "-c"}));
        if (value) ++k;
        continue;
      }
      if (n == "printf" && v[k - 1].text != "-v") continue;  // printf's data
      if (n == "wait" && v[k - 1].text != "-p") continue;
      names_of(an, v[k]);
      // declare -i x: x's value, and every later one, is arithmetic.
      if (integer) check_arith(an, a, n + " -i " + a);
      if (one_of(n, {"read", "mapfile", "readarray", "getopts", "printf", "wait"}))
        note_value(an, assigned_name(a), nullptr);  // a value the reader cannot know
    }
  }
  if (n == "for" || n == "select") {
    if (v.size() > 1 && !v[1].expansion) note_value(an, v[1].text, nullptr);
  }
  if (an.done()) return;
  if (n == "alias") {
    for (std::size_t k = 1; k < v.size(); ++k)
      if (v[k].text.find('=') != std::string::npos || v[k].expansion) {
        an.unanalysable =
            "alias " + v[k].text + " defines a word that later runs as another " + "command";
        return;
      }
  }
  if (n == "shopt") {
    bool set = false, o = false;
    for (std::size_t k = 1; k < v.size(); ++k) {
      const std::string& a = v[k].text;
      if (v[k].expansion) {
        an.unanalysable = "shopt of an expansion (" + a + ")";
        return;
      }
      if (a.size() > 1 && a[0] == '-') {
        if (a.find('s') != std::string::npos) set = true;
        if (a.find('o') != std::string::npos) o = true;
        continue;
      }
      if (set && (o || !inert_shopt(a))) {
        an.unanalysable = "shopt -s " + a + " changes how bash reads or runs what follows";
        return;
      }
    }
  }
  if (n == "enable") {
    for (std::size_t k = 1; k < v.size(); ++k)
      if (!one_of(v[k].text, {"-a", "-p", "-s"})) {
        an.unanalysable = "enable " + v[k].text + " loads or turns off a builtin";
        return;
      }
  }
  if (n == "hash") {
    for (std::size_t k = 1; k < v.size(); ++k)
      if (has_short_option(v[k].text, 'p')) {
        an.unanalysable = "hash -p makes a command name run another program";
        return;
      }
  }
  // A shell reading stdin that is another fd (`exec 3<<<...; bash <&3`) or
  // a device or /proc file (`bash 0</dev/fd/3`).
  if (runs_stdin(u) && is_shell(n)) {
    for (const Redirect& r : s.redirects) {
      if (r.op == "<&" || (r.op == "<" && fd_path(r.target.text)) ||
          (r.op == "<" && r.target.expansion)) {
        an.unanalysable = n + " reads its commands from " + r.op + r.target.text;
        return;
      }
    }
  }
  // source /dev/stdin <<<..., . /proc/self/fd/3, bash /dev/fd/3 3<<<...
  if ((n == "source" || n == ".") && v.size() > 1 && fd_path(v[1].text)) {
    an.unanalysable = n + " " + v[1].text + " runs what an fd holds (a here-string, a pipe)";
    return;
  }
  // Symlinks the script makes (ln -s, cp -s): a later path through one
  // leads where the link points.
  if ((n == "ln" || n == "cp") && an.made_link.empty()) {
    for (std::size_t k = 1; k < v.size(); ++k) {
      const std::string& a = v[k].text;
      if (a == "--") break;
      if (has_short_option(a, 's') || a == "--symbolic" || a == "--symbolic-link" ||
          (v[k].expansion && !a.empty() && a[0] == '-'))
        an.made_link = n + " " + a;
    }
  }
}

void rule_script_file(Analysis& an, const std::string& n, const Word& file) {
  if (fd_path(file.text))
    an.unanalysable = n + " " + file.text + " runs what an fd holds (a here-string, a pipe)";
}

void finish_state(Analysis& an) {
  if (an.done()) return;
  for (const std::string& name : an.arith_names) {
    if (std::find(an.code_vars.begin(), an.code_vars.end(), name) != an.code_vars.end()) {
      an.unanalysable = "$" + name +
                        " is evaluated as arithmetic, and the script gives it a value that is " +
                        "not a plain number (bash evaluates a subscript in it as code)";
      return;
    }
  }
  if (!an.made_link.empty() && an.pushed) {
    an.unanalysable = "git push in a script that makes a symlink (" + an.made_link +
                      "): the repository it pushes from may not be the workspace's";
    return;
  }
  if (!an.made_link.empty() && !an.recursive_rm.empty()) {
    an.hit("rm-rf-outside-workspace", an.recursive_rm + " in a script that makes a symlink (" +
                                          an.made_link +
                                          "): a path through it leads where it points");
  }
}

}  // namespace comet::capability::floor_rules
