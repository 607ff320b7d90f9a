// Who runs `sandbox`, its config files, and the host facts for the planner.
#include "comet/sandbox/sandbox_config.hpp"

#include <dirent.h>
#include <glob.h>
#include <limits.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "comet/base/sys.hpp"

extern char** environ;

namespace comet::runtime {

namespace cap = comet::capability;

Environ current_environ() {
  Environ e;
  for (char** p = environ; p && *p; ++p) {
    std::string kv = *p;
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    e[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return e;
}

namespace {

std::string get(const Environ& env, const char* key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

Result<unsigned> parse_id(const std::string& s, const char* what) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos)
    return Error::msg(std::string(what) + ": expected a number, got \"" + s + "\"");
  unsigned long v = std::strtoul(s.c_str(), nullptr, 10);
  if (v > 0xfffffffeUL) return Error::msg(std::string(what) + ": out of range: " + s);
  return static_cast<unsigned>(v);
}

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

Result<Invoker> invoking_user(const Environ& env) {
  Invoker w;
  w.uid = ::getuid();
  w.gid = ::getgid();
  std::string sudo_uid = get(env, "SUDO_UID");
  if (w.uid == 0 && !sudo_uid.empty()) {
    TRY(unsigned u, parse_id(sudo_uid, "SUDO_UID"));
    w.uid = u;
    std::string sg = get(env, "SUDO_GID");
    if (!sg.empty()) {
      TRY(unsigned gg, parse_id(sg, "SUDO_GID"));
      w.gid = gg;
    }
    w.via_sudo = true;
  }
  struct passwd pw, *res = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(w.uid, &pw, buf.data(), buf.size(), &res) == 0 && res) {
    w.name = pw.pw_name;
    w.home = pw.pw_dir;
    if (w.via_sudo && get(env, "SUDO_GID").empty()) w.gid = pw.pw_gid;
  }
  if (!w.via_sudo) {
    std::string h = get(env, "HOME");
    if (!h.empty() && h[0] == '/') w.home = h;
  }
  if (w.name.empty()) w.name = w.via_sudo ? get(env, "SUDO_USER") : get(env, "USER");
  if (!w.home.empty() && w.home[0] != '/') w.home.clear();
  if (!w.home.empty()) w.home = clean_path(w.home);
  return w;
}

cap::ResolveContext resolve_context(const Invoker& who, const std::string& workspace,
                                    const Environ& env) {
  cap::ResolveContext c;
  c.workspace = workspace;
  c.home = who.home;
  c.tmp = "/tmp";
  c.uid = who.uid;
  // Every local account's home (ResolveContext::homes) that exists at or
  // beneath the workspace, the only ones the check looks at (no stat of
  // the others): read from /etc/passwd itself, not getpwent(), which would
  // enumerate a whole LDAP directory at every start.
  const std::string ws = clean_path(workspace);
  if (auto pw = read_file("/etc/passwd"); pw.ok()) {
    for (const std::string& line : split(*pw, '\n')) {
      std::vector<std::string> f = split(line, ':');
      if (f.size() < 7 || f[5].empty() || f[5][0] != '/') continue;
      const std::string h = clean_path(f[5]);
      if (h == "/" || h == who.home || !path_under(h, ws) || !is_dir(h)) continue;
      c.homes.push_back(h);
    }
  }
  std::string xdg = who.via_sudo ? std::string() : get(env, "XDG_CONFIG_HOME");
  if (!xdg.empty() && xdg[0] == '/')
    c.config_home = clean_path(xdg);
  else if (!who.home.empty())
    c.config_home = who.home + "/.config";
  if (!xdg.empty() && xdg[0] != '/') c.config_home_relative = xdg;
  if (!who.via_sudo) c.zdotdir = get(env, "ZDOTDIR");
  if (who.via_sudo) {
    std::string run = "/run/user/" + std::to_string(who.uid);
    if (is_dir(run)) c.runtime_dir = run;
  } else {
    std::string r = get(env, "XDG_RUNTIME_DIR");
    if (!r.empty() && r[0] == '/') c.runtime_dir = clean_path(r);
  }
  return c;
}

ConfigPaths config_paths(const cap::ResolveContext& ctx, const Environ& env) {
  ConfigPaths p;
  std::string over = get(env, "COMET_SANDBOX_GLOBAL_CONFIG");
  p.global = over.empty() ? "/etc/comet/sandbox.yaml" : over;
  if (!ctx.config_home.empty()) p.user = ctx.config_home + "/comet/sandbox.yaml";
  p.workspace = ctx.workspace + "/.comet/sandbox.yaml";
  return p;
}

Result<LoadedConfig> load_sandbox_config(const ConfigPaths& paths) {
  LoadedConfig out;
  std::vector<cap::ConfigDoc> globals;
  std::optional<cap::ConfigDoc> workspace;
  struct Want {
    const std::string* path;
    const char* role;
  };
  for (const Want& w : {Want{&paths.global, "global"}, Want{&paths.user, "user"},
                        Want{&paths.workspace, "workspace"}}) {
    if (w.path->empty()) continue;
    ConfigFileState st{*w.path, w.role, false};
    struct stat sb;
    if (::stat(w.path->c_str(), &sb) < 0) {
      if (errno != ENOENT && errno != ENOTDIR)
        return Error::sys(errno, "sandbox config " + *w.path);
      out.files.push_back(st);
      continue;
    }
    if (!S_ISREG(sb.st_mode))
      return Error::msg("sandbox config " + *w.path + ": not a regular file");
    TRY(std::string text, read_file(*w.path));
    st.loaded = true;
    out.files.push_back(st);
    cap::ConfigDoc doc{std::move(text), *w.path};
    if (std::string(w.role) == "workspace")
      workspace = std::move(doc);
    else
      globals.push_back(std::move(doc));
  }
  TRY(out.set, cap::merge(globals, workspace));
  return out;
}

namespace {

std::optional<std::string> real_path(const std::string& p) {
  char buf[PATH_MAX];
  if (!::realpath(p.c_str(), buf)) return std::nullopt;
  return std::string(buf);
}

}  // namespace

cap::HostPath HostPaths::get(const std::string& path) {
  cap::HostPath h;
  h.real = path;
  auto kind_of = [](const struct stat& st) {
    return S_ISDIR(st.st_mode)    ? cap::HostKind::dir
           : S_ISREG(st.st_mode)  ? cap::HostKind::file
           : S_ISSOCK(st.st_mode) ? cap::HostKind::socket
                                  : cap::HostKind::other;
  };
  if (!path.empty() && path[0] == '/') {
    // Every fact from one walk (one lstat per name): whether the last name
    // is a link, the links on the way, what it resolves to and its kind.
    // It was an lstat, the walk, a stat and a stat of the walk's end: ~300
    // of a plan's ~700 syscalls.
    PathWalk w = walk_path(path);
    h.links = w.links;
    h.symlink = w.last_is_link;
    if (w.found) {
      h.kind = kind_of(w.st);
      h.real = w.real;
      return h;
    }
    // Missing: where the walk, links followed, found nothing more. Through
    // a dangling link that is where its target would be (`tools ->
    // gone`, tools/fsmon.sh protected: gone/fsmon.sh, whose first missing
    // directory is then the placeholder; realpath(3) of the prefix failed
    // there, and the run tried to make `tools` itself: red team round 14).
    if (!w.first_missing.empty()) {
      h.real = w.real;
      return h;
    }
  } else {
    struct stat lst, st;
    if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) h.symlink = true;
    if (::stat(path.c_str(), &st) == 0) {
      h.kind = kind_of(st);
      if (std::optional<std::string> r = real_path(path)) h.real = *r;
      return h;
    }
  }
  // Missing (a relative path, or a walk that ended on a link loop): resolve
  // the longest existing prefix, keep the rest as written,
  // so that /var/run/x and /run/x name one path. The prefixes repeat (the
  // workspace, home): each is resolved once per plan.
  std::string head = path, tail;
  while (head.size() > 1) {
    auto k = head.rfind('/');
    tail = head.substr(k) + tail;
    head = k == 0 ? "/" : head.substr(0, k);
    auto it = heads_.find(head);
    if (it == heads_.end()) it = heads_.emplace(head, real_path(head)).first;
    if (it->second) {
      const std::string& r = *it->second;
      h.real = clean_path(r == "/" ? tail : r + tail);
      break;
    }
  }
  return h;
}

cap::HostPath host_path(const std::string& path) {
  return HostPaths().get(path);
}

std::vector<cap::TopEntry> host_top_level() {
  std::vector<cap::TopEntry> out;
  DIR* d = ::opendir("/");
  if (!d) return out;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    cap::TopEntry t;
    t.name = n;
    struct stat st;
    std::string p = "/" + n;
    if (::lstat(p.c_str(), &st) < 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char buf[PATH_MAX];
      ssize_t k = ::readlink(p.c_str(), buf, sizeof buf - 1);
      if (k <= 0) continue;
      t.link.assign(buf, static_cast<size_t>(k));
      t.kind = cap::HostKind::other;
    } else {
      t.kind = S_ISDIR(st.st_mode)   ? cap::HostKind::dir
               : S_ISREG(st.st_mode) ? cap::HostKind::file
                                     : cap::HostKind::other;
    }
    out.push_back(std::move(t));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(),
            [](const cap::TopEntry& a, const cap::TopEntry& b) { return a.name < b.name; });
  return out;
}

std::vector<std::string> host_mount_points() {
  std::vector<std::string> out;
  FILE* f = std::fopen("/proc/self/mountinfo", "re");
  if (!f) return out;
  char* line = nullptr;
  size_t cap = 0;
  while (::getline(&line, &cap, f) > 0) {
    // id parent major:minor root mount-point ...; \ooo escapes a space,
    // tab, newline or backslash in the mount point.
    const char* p = line;
    for (int field = 0; field < 4 && p; field++) {
      p = std::strchr(p, ' ');
      if (p) p++;
    }
    if (!p || *p != '/') continue;
    std::string mp;
    for (; *p && *p != ' ' && *p != '\n'; p++) {
      if (*p == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
          p[3] <= '7') {
        mp += static_cast<char>((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
        p += 3;
      } else {
        mp += *p;
      }
    }
    out.push_back(std::move(mp));
  }
  std::free(line);
  std::fclose(f);
  return out;
}

std::vector<std::string> host_glob(const std::string& pattern) {
  std::vector<std::string> out;
  const std::size_t star = pattern.rfind('*');
  if (star == std::string::npos || pattern.empty() || pattern[0] != '/') return out;
  const std::size_t end = pattern.find('/', star);
  const std::string head = pattern.substr(0, end);
  const std::string tail = end == std::string::npos ? std::string() : pattern.substr(end);
  glob_t g{};
  // GLOB_PERIOD: a leading dot is matched by `*` too (a module named .x);
  // "." and ".." are dropped below.
  const int flags = GLOB_NOSORT | GLOB_PERIOD | GLOB_NOESCAPE | (tail.empty() ? 0 : GLOB_ONLYDIR);
  if (::glob(head.c_str(), flags, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) {
      std::string m = g.gl_pathv[i];
      if (clean_path(m) != m) continue;  // a "." or ".." component
      std::string base = m.substr(m.rfind('/') + 1);
      if (base == "." || base == "..") continue;
      // With a rest to append, only a directory can hold it (GLOB_ONLYDIR
      // is a hint).
      if (!tail.empty() && !is_dir(m)) continue;
      out.push_back(m + tail);
    }
  }
  ::globfree(&g);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> workload_env(const Environ& env, const Invoker& who) {
  Environ e = env;
  if (who.via_sudo) {
    if (!who.home.empty()) e["HOME"] = who.home;
    if (!who.name.empty()) {
      e["USER"] = who.name;
      e["LOGNAME"] = who.name;
    }
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : e) out.push_back(k + "=" + v);
  return out;
}

}  // namespace comet::runtime
