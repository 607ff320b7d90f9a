#include "comet/host/user_dirs.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "comet/base/switches.hpp"
#include "comet/base/sys.hpp"

namespace comet::runtime {

bool in_user_namespace() noexcept {
  static const bool in = [] {
    auto map = read_file("/proc/self/uid_map");
    if (!map) return false;
    std::vector<std::string> f;
    for (auto& w : split(*map, ' '))
      if (!w.empty() && w != "\n") f.push_back(w);
    while (!f.empty() && !f.back().empty() && f.back().back() == '\n') f.back().pop_back();
    return !(f.size() == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295");
  }();
  return in;
}

bool rootless() noexcept {
  return ::geteuid() != 0 || in_user_namespace();
}

unsigned long outer_uid() noexcept {
  unsigned long uid = ::geteuid();
  if (!in_user_namespace()) return uid;
  auto map = read_file("/proc/self/uid_map");
  if (!map) return uid;
  // "INSIDE OUTSIDE COUNT" lines
  for (const std::string& line : split(*map, '\n')) {
    unsigned long in = 0, out = 0, count = 0;
    if (std::sscanf(line.c_str(), "%lu %lu %lu", &in, &out, &count) == 3 && uid >= in &&
        uid - in < count)
      return out + (uid - in);
  }
  return uid;
}

namespace {

// $NAME when it is set to an absolute path, else "".
std::string abs_env(const char* name) {
  const char* v = std::getenv(name);
  return (v && v[0] == '/') ? std::string(v) : std::string();
}

std::string home_dir() {
  std::string home = abs_env("HOME");
  if (!home.empty()) return home;
  const auto uid = static_cast<uid_t>(outer_uid());
  if (const passwd* pw = ::getpwuid(uid); pw && pw->pw_dir && pw->pw_dir[0] == '/')
    return pw->pw_dir;
  return "/tmp";
}

UserDirs compute() {
  // runc's shouldHonorXDGRuntimeDir(): uid 0 of a user namespace keeps the
  // root dirs only when USER says root.
  const char* user = std::getenv("USER");
  if (rootless() && in_user_namespace()) {
    auto handed = split(switches::user_dirs_handed(), '\n');
    if (handed.size() == 3 && handed[0][0] == '/' && handed[1][0] == '/' && handed[2][0] == '/')
      return {handed[0], handed[1], handed[2]};
  }
  if (!rootless() || (::geteuid() == 0 && user && std::string(user) == "root"))
    return {"/run/comet-runtime", "/var/lib/comet-runtime", "/var/cache/comet-runtime"};
  const std::string uid = std::to_string(::geteuid());
  UserDirs d;
  std::string xdg_run = abs_env("XDG_RUNTIME_DIR");
  d.runtime = xdg_run.empty() ? "/tmp/comet-runtime-" + uid : xdg_run + "/comet-runtime";
  std::string data = abs_env("XDG_DATA_HOME");
  d.data = (data.empty() ? home_dir() + "/.local/share" : data) + "/comet-runtime";
  std::string cache = abs_env("XDG_CACHE_HOME");
  d.cache = (cache.empty() ? home_dir() + "/.cache" : cache) + "/comet-runtime";
  return d;
}

// "0\n" -> true; a missing file is not set.
bool sysctl_is(const char* path, const char* value) {
  auto text = read_file(path);
  if (!text) return false;
  std::string v = *text;
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
  return v == value;
}

}  // namespace

const UserDirs& user_dirs() {
  static const UserDirs dirs = compute();
  return dirs;
}

Status ensure_private_dir(const std::string& path) {
  if (path.empty() || path[0] != '/') return Error::msg("not an absolute path: " + path);
  std::string prefix;
  size_t pos = 1;
  while (pos <= path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    prefix = path.substr(0, next);
    pos = next + 1;
    if (prefix.size() > 1 && ::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST)
      return Error::sys(errno, "mkdir " + prefix);
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Error::sys(errno, "stat " + path);
  if (!S_ISDIR(st.st_mode)) return Error::msg(path + ": not a directory");
  if (rootless() && st.st_uid != ::geteuid())
    return Error::msg(path + ": owned by uid " + std::to_string(st.st_uid) +
                      ", not by this user; remove it or set XDG_RUNTIME_DIR");
  return ok();
}

std::string userns_refusal(int err) {
  std::string base = std::string("cannot create a user namespace (") + std::strerror(err) + ")";
  if (sysctl_is("/proc/sys/kernel/unprivileged_userns_clone", "0"))
    return base +
           ": kernel.unprivileged_userns_clone=0 forbids it for ordinary users; "
           "run `sysctl -w kernel.unprivileged_userns_clone=1` as root";
  if (sysctl_is("/proc/sys/user/max_user_namespaces", "0"))
    return base +
           ": user.max_user_namespaces=0; run `sysctl -w user.max_user_namespaces=15000` "
           "as root";
  if (sysctl_is("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"))
    return base +
           ": AppArmor restricts unprivileged user namespaces "
           "(kernel.apparmor_restrict_unprivileged_userns=1); give comet-runtime an "
           "AppArmor profile with `userns,` or set the sysctl to 0 as root";
  return base + ": unprivileged user namespaces are not available to this user";
}

}  // namespace comet::runtime
