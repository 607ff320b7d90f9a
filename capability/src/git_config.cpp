// What the host's git runs because its config says so: see git_config.hpp.
#include "comet/capability/git_config.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace comet::capability {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Every key whose value git runs or reads as code, checked against
// git-config(1) of git 2.39 (and git-interpret-trailers(1), git-archive(1),
// git-send-email(1), git-web--browse(1), githooks(5)); red team round 11
// found trailer.*.cmd, core.alternateRefsCommand, sendemail.*cmd and more
// missing from the list kept before. A pattern's "*" is a subsection, a
// trailing "+" any name (pager.<cmd>, alias.<name>).
const std::vector<GitKeyRule>& rules() {
  using K = GitConfigRef::Kind;
  using W = GitKeyRule::When;
  static const std::vector<GitKeyRule> r = {
      {"core.hookspath", K::hooks_dir, W::always},
      {"init.templatedir", K::hooks_dir, W::always},  // hooks/ copied by the host's init/clone
      {"include.path", K::config_file, W::always},
      {"core.worktree", K::work_tree, W::always},  // red team round 18
      {"includeif.*.path", K::config_file, W::always},
      {"core.fsmonitor", K::program, W::not_bool},
      {"core.sshcommand", K::program, W::always},
      {"core.editor", K::program, W::always},
      {"core.pager", K::program, W::always},
      {"core.askpass", K::program, W::always},
      {"core.gitproxy", K::program, W::always},
      {"core.alternaterefscommand", K::program, W::always},
      {"sequence.editor", K::program, W::always},
      {"interactive.difffilter", K::program, W::always},
      {"pager.+", K::program, W::always},
      {"alias.+", K::program, W::bang},
      {"diff.external", K::program, W::always},
      {"diff.*.textconv", K::program, W::always},
      {"diff.*.command", K::program, W::always},
      {"difftool.*.cmd", K::program, W::always},
      {"difftool.*.path", K::program, W::always},
      {"mergetool.*.cmd", K::program, W::always},
      {"mergetool.*.path", K::program, W::always},
      {"merge.*.driver", K::program, W::always},
      {"filter.*.clean", K::program, W::always},
      {"filter.*.smudge", K::program, W::always},
      {"filter.*.process", K::program, W::always},
      {"credential.helper", K::program, W::always},
      {"credential.*.helper", K::program, W::always},
      {"gpg.program", K::program, W::always},
      {"gpg.*.program", K::program, W::always},
      {"gpg.*.defaultkeycommand", K::program, W::always},  // [gpg "ssh"]
      {"guitool.*.cmd", K::program, W::always},
      {"browser.*.cmd", K::program, W::always},
      {"browser.*.path", K::program, W::always},
      {"web.browser", K::program, W::always},
      {"help.browser", K::program, W::always},
      {"instaweb.browser", K::program, W::always},
      {"instaweb.httpd", K::program, W::always},
      {"man.viewer", K::program, W::always},
      {"man.*.cmd", K::program, W::always},
      {"man.*.path", K::program, W::always},
      {"imap.tunnel", K::program, W::always},
      {"remote.*.uploadpack", K::program, W::always},
      {"remote.*.receivepack", K::program, W::always},
      {"remote.*.url", K::program, W::ext_url},  // ext::CMD (protocol.ext.allow)
      {"remote.*.pushurl", K::program, W::ext_url},
      {"submodule.*.update", K::program, W::bang},
      {"uploadpack.packobjectshook", K::program, W::always},
      {"trailer.*.command", K::program, W::always},
      {"trailer.*.cmd", K::program, W::always},
      {"tar.*.command", K::program, W::always},  // git archive --format=tar.gz
      {"sendemail.sendmailcmd", K::program, W::always},
      {"sendemail.*.sendmailcmd", K::program, W::always},
      {"sendemail.smtpserver", K::program, W::always},  // a path: a sendmail program
      {"sendemail.*.smtpserver", K::program, W::always},
      {"sendemail.tocmd", K::program, W::always},
      {"sendemail.*.tocmd", K::program, W::always},
      {"sendemail.cccmd", K::program, W::always},
      {"sendemail.*.cccmd", K::program, W::always},
      {"sendemail.headercmd", K::program, W::always},
      {"sendemail.*.headercmd", K::program, W::always},
      {"hook.*.command", K::program, W::always},  // config-based hooks (later gits)
  };
  return r;
}

// lk: "section.name" or "section.x.name" (any subsection as "x")
bool key_matches(std::string_view pattern, const std::string& lk) {
  const std::size_t d1 = lk.find('.'), d2 = lk.rfind('.');
  const bool three = d1 != d2;
  if (pattern.size() > 2 && pattern.substr(pattern.size() - 2) == ".+")
    return !three && lk.compare(0, d1 + 1, pattern.substr(0, pattern.size() - 1)) == 0;
  const std::size_t p1 = pattern.find('.'), p2 = pattern.rfind('.');
  if ((p1 != p2) != three) return false;
  if (!three) return lk == pattern;
  return pattern.substr(p1, p2 - p1 + 1) == ".*." &&
         lk.compare(0, d1, pattern.substr(0, p1)) == 0 && lk.substr(d2) == pattern.substr(p2);
}

GitConfigRef::Kind* kind_of(const std::string& key, const std::string& value,
                            GitConfigRef::Kind* out) {
  for (const GitKeyRule& r : rules()) {
    if (!key_matches(r.pattern, key)) continue;
    switch (r.when) {
      case GitKeyRule::When::always:
        break;
      case GitKeyRule::When::bang:
        if (value.empty() || value[0] != '!') return nullptr;
        break;
      case GitKeyRule::When::not_bool: {
        const std::string v = lower(value);
        if (v == "true" || v == "false" || v == "yes" || v == "no" || v == "on" || v == "off" ||
            v == "1" || v == "0" || v.empty())
          return nullptr;
        break;
      }
      case GitKeyRule::When::ext_url:
        if (lower(value).rfind("ext::", 0) != 0) return nullptr;
        break;
    }
    return *out = r.kind, out;
  }
  return nullptr;
}

// A value: leading and trailing blanks dropped, quotes joined, escapes
// (\n \t \b \\ \") read, a comment (# or ;) outside quotes ends it.
std::string parse_value(std::string_view v) {
  std::string out;
  bool quoted = false;
  std::size_t i = 0;
  while (i < v.size() && (v[i] == ' ' || v[i] == '\t')) i++;
  std::size_t keep = 0;  // out's length up to the last character that is not a trailing blank
  for (; i < v.size(); i++) {
    const char c = v[i];
    if (c == '"') {
      quoted = !quoted;
      keep = out.size();
      continue;
    }
    if (!quoted && (c == '#' || c == ';')) break;
    if (c == '\\' && i + 1 < v.size()) {
      const char n = v[++i];
      out += n == 'n' ? '\n' : n == 't' ? '\t' : n == 'b' ? '\b' : n;
      keep = out.size();
      continue;
    }
    out += c;
    if (quoted || (c != ' ' && c != '\t')) keep = out.size();
  }
  out.resize(keep);
  return out;
}

std::string clean(const std::string& p) {
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i <= p.size()) {
    std::size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    std::string c = p.substr(i, j - i);
    if (c == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!c.empty() && c != ".") {
      parts.push_back(c);
    }
    i = j + 1;
  }
  std::string out;
  for (const auto& c : parts) out += "/" + c;
  return out.empty() ? "/" : out;
}

std::string absolute(const std::string& v, const std::string& base, const std::string& home) {
  if (v.rfind("~/", 0) == 0) return clean(home + v.substr(1));
  if (!v.empty() && v[0] == '/') return clean(v);
  return clean(base + "/" + v);
}

// The shell words of a command line as sh reads them: quotes removed and
// backslash escapes applied (`tools/my\ tool.sh` is one word), no
// expansion; ; | & < > ( ) and blanks end a word. An option's value
// (--opt=VALUE) and an assignment's (X=path) are words. An unquoted glob
// (`?`, a `[...]` bracket, `*`) becomes `*`, which the protected paths take
// as a glob over one component (`tools/p.s?` protects `tools/p.s*`). A
// word that is a script itself (it holds a blank or an operator: `sh -c
// 'exec tools/x.sh'`) is read again as a command line, its words added
// (four levels; red team round 17 found both spellings unprotected).
}  // namespace

// (red team round 18: `core.fsmonitor = bin/../tools/fsm.sh`)
bool dotdot_after_name(const std::string& path) {
  bool named = false;
  for (std::size_t at = 0; at <= path.size();) {
    std::size_t next = path.find('/', at);
    if (next == std::string::npos) next = path.size();
    const std::string c = path.substr(at, next - at);
    if (c == "..") {
      if (named) return true;
    } else if (!c.empty() && c != ".") {
      named = true;
    }
    at = next + 1;
  }
  return false;
}

namespace {

// What sh makes of a word besides expansions and globs (review of
// 3d3a05b): `~user/` (another home), a brace expansion (`tools/{a,b}.sh`,
// where /bin/sh is bash), and a glob that can match `..` (`bin/.[.]/x`,
// `bin/.?/x`, taken here as `.*`).
bool shell_rewrites(const std::string& w) {
  if (w.size() > 1 && w[0] == '~' && w[1] != '/') return true;
  const std::size_t open = w.find('{');
  if (open != std::string::npos && w.find('}', open) != std::string::npos) return true;
  for (std::size_t at = 0; at < w.size();) {
    std::size_t next = w.find('/', at);
    if (next == std::string::npos) next = w.size();
    if (next > at && w[at] == '.' && w.find('*', at) < next) return true;
    at = next + 1;
  }
  return false;
}

// BUILT: set when a word that holds a '/' takes part of itself from an
// expansion sh makes at run time (`tools/fsmonitor-$(uname -s).sh`: red
// team round 18), or goes through `dir/..`: no path can be named for it.
std::vector<std::string> words(const std::string& cmd, int depth = 0, bool* built = nullptr) {
  std::vector<std::string> out;
  std::string w;
  bool any = false;       // a word is being read (quotes may make it empty)
  bool expanded = false;  // an unquoted or double-quoted $ or ` in it
  auto end = [&] {
    if (!any) return;
    any = false;
    // a word that may be a script itself: read again (a quoted `$` too:
    // `sh -c 'tools/fsm-$V.sh'` expands there, review of 3d3a05b)
    if (depth < 4 && w.find_first_of(" \t\n;|&<>()$`") != std::string::npos)
      for (std::string& inner : words(w, depth + 1, built)) out.push_back(std::move(inner));
    if (built && w.find('/') != std::string::npos &&
        (expanded || dotdot_after_name(w) || shell_rewrites(w)))
      *built = true;
    expanded = false;
    // a short option with its value attached (`-Ftools/sshcfg`, `-vFx/y`,
    // `-F/abs/cfg`: red team round 18): the value after the first option
    // letter, after an upper-case one, or from a '/' on
    const std::size_t slash = w.find('/');
    if (w.size() > 2 && w[0] == '-' && w[1] != '-' && slash != std::string::npos)
      for (std::size_t k = 2; k <= slash && k < 6; k++)
        if (k == 2 || w[k] == '/' || std::isupper(static_cast<unsigned char>(w[k - 1])))
          out.push_back(w.substr(k));
    const auto eq = w.find('=');
    if (eq != std::string::npos && (w[0] == '-' || w.find('/') > eq)) w = w.substr(eq + 1);
    if (!w.empty()) out.push_back(w);
    w.clear();
  };
  for (std::size_t i = 0; i < cmd.size(); i++) {
    const char c = cmd[i];
    if (c == '\\') {
      any = true;
      if (i + 1 < cmd.size() && cmd[i + 1] != '\n') w += cmd[i + 1];
      i++;
    } else if (c == '\'') {
      any = true;
      const std::size_t close = cmd.find('\'', i + 1);
      w += cmd.substr(i + 1, (close == std::string::npos ? cmd.size() : close) - i - 1);
      i = close == std::string::npos ? cmd.size() : close;
    } else if (c == '"') {
      any = true;
      for (i++; i < cmd.size() && cmd[i] != '"'; i++) {
        if (cmd[i] == '\\' && i + 1 < cmd.size() &&
            std::strchr("$`\"\\\n", cmd[i + 1]) != nullptr) {
          if (cmd[++i] != '\n') w += cmd[i];
        } else {
          if (cmd[i] == '$' || cmd[i] == '`') expanded = true;
          w += cmd[i];
        }
      }
    } else if (std::strchr(" \t\n;|&<>()", c) != nullptr) {
      end();
    } else if (c == '$' || c == '`') {
      any = expanded = true;
      w += c;
    } else if (c == '?' || c == '*') {
      any = true;
      if (w.empty() || w.back() != '*') w += '*';
    } else if (c == '[' && cmd.find(']', i + 1) != std::string::npos &&
               cmd.find(']', i + 1) < cmd.find_first_of(" \t\n/", i + 1)) {
      any = true;
      // `[]...]`: a ']' first is a member
      const std::size_t later = cmd.find(']', i + 2);
      i = later != std::string::npos && later < cmd.find_first_of(" \t\n/", i + 1)
              ? later
              : cmd.find(']', i + 1);
      if (w.empty() || w.back() != '*') w += '*';
    } else {
      any = true;
      w += c;
    }
  }
  end();
  return out;
}

// The expansions whose value is known where git runs a program: the work
// tree's top (git runs them there: $PWD, `git rev-parse
// --show-toplevel`) and the home directory.
std::string expand_known(std::string cmd, const std::string& worktree, const std::string& home) {
  const std::pair<const char*, const std::string*> known[] = {
      {"$(git rev-parse --show-toplevel)", &worktree},
      {"`git rev-parse --show-toplevel`", &worktree},
      {"${PWD}", &worktree},
      {"$PWD", &worktree},
      {"${HOME}", &home},
      {"$HOME", &home}};
  for (const auto& [from, to] : known) {
    const std::string f = from;
    for (std::size_t at = cmd.find(f); at != std::string::npos; at = cmd.find(f, at)) {
      // $PWD must not take the start of $PWDX
      const std::size_t end = at + f.size();
      if (f[1] != '(' && f[1] != '{' && f[0] == '$' && end < cmd.size() &&
          (std::isalnum(static_cast<unsigned char>(cmd[end])) || cmd[end] == '_')) {
        at = end;
        continue;
      }
      cmd.replace(at, f.size(), *to);
      at += to->size();
    }
  }
  return cmd;
}

// A command line that makes a path out of an expansion whose value is not
// known here ($X/..., $(cmd)/..., `cmd`/...): what it runs cannot be
// named, so it cannot be protected.
bool builds_a_path(const std::string& cmd) {
  std::size_t at = cmd.find_first_of("$`");
  return at != std::string::npos && cmd.find('/', at) != std::string::npos;
}

}  // namespace

const std::vector<GitKeyRule>& git_executed_keys() {
  return rules();
}

std::vector<GitConfigRef> git_config_refs(std::string_view text) {
  std::vector<GitConfigRef> out;
  std::string section;  // "core", "diff.x" (subsection as written)
  std::string line;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t e = text.find('\n', pos);
    if (e == std::string_view::npos) e = text.size();
    line.assign(text.substr(pos, e - pos));
    pos = e + 1;
    // a value continued on the next line
    while (!line.empty() && line.back() == '\\' && pos < text.size()) {
      line.pop_back();
      std::size_t e2 = text.find('\n', pos);
      if (e2 == std::string_view::npos) e2 = text.size();
      line.append(text.substr(pos, e2 - pos));
      pos = e2 + 1;
    }
    std::size_t i = 0;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) i++;
    if (i >= line.size() || line[i] == '#' || line[i] == ';') continue;
    if (line[i] == '[') {
      const std::size_t close = line.find(']', i);
      if (close == std::string::npos) continue;
      std::string head = line.substr(i + 1, close - i - 1);
      const std::size_t q = head.find('"');
      if (q != std::string::npos) {
        std::string name = head.substr(0, q);
        while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.pop_back();
        std::string sub;
        for (std::size_t k = q + 1; k < head.size() && head[k] != '"'; k++) {
          if (head[k] == '\\' && k + 1 < head.size()) k++;
          sub += head[k];
        }
        section = lower(name) + "." + sub;
      } else {
        section = lower(head);  // [section.sub] (the old form): lower-cased whole
      }
      // a key may follow on the same line: [core] hooksPath = x
      line = line.substr(close + 1);
      i = 0;
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) i++;
      if (i >= line.size() || line[i] == '#' || line[i] == ';') continue;
    }
    if (section.empty()) continue;
    std::size_t k = i;
    while (k < line.size() && (std::isalnum(static_cast<unsigned char>(line[k])) || line[k] == '-'))
      k++;
    if (k == i) continue;
    const std::string name = lower(line.substr(i, k - i));
    while (k < line.size() && (line[k] == ' ' || line[k] == '\t')) k++;
    std::string value;
    if (k < line.size() && line[k] == '=')
      value = parse_value(std::string_view(line).substr(k + 1));
    else if (k < line.size() && line[k] != '#' && line[k] != ';')
      continue;
    // key: as written (the subsection keeps its case); lk: what the rules
    // match, with any subsection as "x"
    const std::size_t dot = section.find('.');
    const std::string key = section + "." + name;
    const std::string lk = dot == std::string::npos ? key : section.substr(0, dot) + ".x." + name;
    GitConfigRef::Kind kind;
    if (kind_of(lk, value, &kind)) out.push_back(GitConfigRef{kind, key, value});
  }
  return out;
}

std::vector<std::string> git_config_paths(const std::vector<GitConfigRef>& refs,
                                          const std::string& worktree,
                                          const std::string& config_dir, const std::string& home,
                                          std::vector<std::string>* unresolved) {
  std::vector<std::string> out;
  auto add = [&](const std::string& p) {
    if (!p.empty() && p != "/" && std::find(out.begin(), out.end(), p) == out.end())
      out.push_back(p);
  };
  for (const GitConfigRef& r : refs) {
    switch (r.kind) {
      case GitConfigRef::Kind::hooks_dir: {
        if (dotdot_after_name(r.value)) {
          if (unresolved) unresolved->push_back(r.key);
          continue;
        }
        const std::string d = absolute(r.value, worktree, home);
        add(d);
        const std::string root = clean(worktree);
        if (d.size() > root.size() + 1 && d.compare(0, root.size() + 1, root + "/") == 0) {
          const std::size_t end = d.find('/', root.size() + 1);
          add(end == std::string::npos ? d : d.substr(0, end));
        }
        break;
      }
      case GitConfigRef::Kind::program: {
        // every word that is a path: `python3 tools/clean.py`, `env X=1
        // tools/c.sh` (red team round 6), not only the first
        std::string cmd = r.value;
        if (!cmd.empty() && cmd[0] == '!') cmd = cmd.substr(1);
        if (lower(cmd).rfind("ext::", 0) == 0) cmd = cmd.substr(5);
        // red team round 11: "$(git rev-parse --show-toplevel)/tools/x.sh"
        // was split on blanks and protected literally
        cmd = expand_known(cmd, worktree, home);
        bool built = builds_a_path(cmd);
        const std::vector<std::string> ws = words(cmd, 0, &built);
        if (built) {
          if (unresolved) unresolved->push_back(r.key);
          continue;
        }
        for (const std::string& w : ws)
          if (w.find('/') != std::string::npos && w.find("://") == std::string::npos)
            add(absolute(w, worktree, home));
        break;
      }
      case GitConfigRef::Kind::work_tree:
        break;
      case GitConfigRef::Kind::config_file:
        if (dotdot_after_name(r.value)) {
          if (unresolved) unresolved->push_back(r.key);
          continue;
        }
        add(absolute(r.value, config_dir, home));
        break;
    }
  }
  return out;
}

}  // namespace comet::capability
