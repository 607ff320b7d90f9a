// What the host's git runs because its config says so: see git_config.hpp.
#include "comet/capability/git_config.hpp"

#include <algorithm>
#include <cctype>

namespace comet::capability {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool glob_key(const std::string& key, std::string_view section, std::string_view name) {
  // section.*.name or section.name
  if (key.rfind(std::string(section) + ".", 0) != 0) return false;
  const auto dot = key.rfind('.');
  return dot != std::string::npos && key.substr(dot + 1) == name;
}

GitConfigRef::Kind* kind_of(const std::string& key, const std::string& value,
                            GitConfigRef::Kind* out) {
  using K = GitConfigRef::Kind;
  if (key == "core.hookspath") return *out = K::hooks_dir, out;
  if (key == "include.path" ||
      (key.rfind("includeif.", 0) == 0 && glob_key(key, "includeif", "path")))
    return *out = K::config_file, out;
  if (key == "core.fsmonitor") {
    const std::string v = lower(value);
    if (v == "true" || v == "false" || v == "yes" || v == "no" || v == "on" || v == "off" ||
        v == "1" || v == "0" || v.empty())
      return nullptr;
    return *out = K::program, out;
  }
  static const char* const exact[] = {"core.sshcommand",
                                      "core.editor",
                                      "core.pager",
                                      "core.askpass",
                                      "sequence.editor",
                                      "diff.external",
                                      "credential.helper",
                                      "gpg.program",
                                      "core.gitproxy",
                                      "gpg.ssh.defaultkeycommand",
                                      "interactive.difffilter"};
  for (const char* e : exact)
    if (key == e) return *out = K::program, out;
  if (glob_key(key, "diff", "textconv") || glob_key(key, "diff", "command") ||
      glob_key(key, "merge", "driver") || glob_key(key, "filter", "clean") ||
      glob_key(key, "filter", "smudge") || glob_key(key, "filter", "process") ||
      glob_key(key, "credential", "helper") || glob_key(key, "gpg", "program") ||
      glob_key(key, "remote", "uploadpack") || glob_key(key, "remote", "receivepack") ||
      glob_key(key, "difftool", "cmd") || glob_key(key, "mergetool", "cmd") ||
      glob_key(key, "guitool", "cmd") || glob_key(key, "browser", "cmd") ||
      (glob_key(key, "submodule", "update") && !value.empty() && value[0] == '!') ||
      key.rfind("pager.", 0) == 0)
    return *out = K::program, out;
  if (key.rfind("alias.", 0) == 0 && !value.empty() && value[0] == '!')
    return *out = K::program, out;
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

// The shell words of a command line (quotes removed; no expansion);
// ; | & < > ( ) end a word too. An option's value (--opt=VALUE) and an
// assignment's (X=path) are words.
std::vector<std::string> words(const std::string& cmd) {
  std::vector<std::string> out;
  std::string w;
  char q = 0;
  auto end = [&] {
    if (w.empty()) return;
    const auto eq = w.find('=');
    if (eq != std::string::npos && (w[0] == '-' || w.find('/') > eq)) w = w.substr(eq + 1);
    if (!w.empty()) out.push_back(w);
    w.clear();
  };
  for (char c : cmd) {
    if (q) {
      if (c == q)
        q = 0;
      else
        w += c;
    } else if (c == '\'' || c == '"') {
      q = c;
    } else if (c == ' ' || c == '\t' || c == ';' || c == '|' || c == '&' || c == '<' || c == '>' ||
               c == '(' || c == ')' || c == '\n') {
      end();
    } else {
      w += c;
    }
  }
  end();
  return out;
}

}  // namespace

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
                                          const std::string& config_dir, const std::string& home) {
  std::vector<std::string> out;
  auto add = [&](const std::string& p) {
    if (!p.empty() && p != "/" && std::find(out.begin(), out.end(), p) == out.end())
      out.push_back(p);
  };
  for (const GitConfigRef& r : refs) {
    switch (r.kind) {
      case GitConfigRef::Kind::hooks_dir: {
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
        for (const std::string& w : words(cmd))
          if (w.find('/') != std::string::npos && w.find("://") == std::string::npos)
            add(absolute(w, worktree, home));
        break;
      }
      case GitConfigRef::Kind::config_file:
        add(absolute(r.value, config_dir, home));
        break;
    }
  }
  return out;
}

}  // namespace comet::capability
