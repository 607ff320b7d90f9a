// The placeholders and their registry (sandbox_placeholders.hpp).
#include "sandbox_placeholders.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "comet/base/sys.hpp"
#include "comet/host/log.hpp"
#include "comet/host/sha256.hpp"

namespace comet::runtime::sandbox_parts {

std::string parent_of(const std::string& p) {
  auto k = p.rfind('/');
  return k == 0 || k == std::string::npos ? "/" : p.substr(0, k);
}

std::vector<Step> placeholder_steps(const std::vector<capability::Placeholder>& ps) {
  std::vector<Step> steps;
  for (const auto& ph : ps) {
    std::vector<Step> missing;
    bool leaf = true;
    for (std::string p = ph.path; p != "/" && !path_exists(p); p = parent_of(p)) {
      missing.push_back({p, leaf ? ph.dir : true, leaf && !ph.dir ? ph.content : ""});
      leaf = false;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      bool dup = false;
      for (auto& s : steps) dup |= s.path == it->path;
      if (!dup) steps.push_back(*it);
    }
  }
  return steps;
}

Result<struct stat> make_placeholder(const Step& step, uid_t uid, gid_t gid) {
  const std::string& path = step.path;
  if (step.dir) {
    if (::mkdir(path.c_str(), 0755) < 0)
      return Error::sys(errno, "sandbox: create the protected directory " + path);
  } else {
    int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return Error::sys(errno, "sandbox: create the protected file " + path);
    // .git/commondir holds "." (git dies on an empty one).
    for (std::size_t off = 0; off < step.content.size();) {
      ssize_t n = ::write(fd, step.content.data() + off, step.content.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int err = n < 0 ? errno : EIO;
        ::close(fd);
        ::unlink(path.c_str());
        return Error::sys(err, "sandbox: write the protected file " + path);
      }
      off += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }
  // Made by the owner already (rootless; root for root): no chown, which
  // would only dirty the new inode once more.
  struct stat st;
  if (::lstat(path.c_str(), &st) < 0) return Error::sys(errno, "sandbox: stat " + path);
  if (st.st_uid != uid || st.st_gid != gid) {
    if (::lchown(path.c_str(), uid, gid) < 0) return Error::sys(errno, "sandbox: chown " + path);
    st.st_uid = uid;
    st.st_gid = gid;
  }
  return st;
}

Status PlaceholderRegistry::flush() {
  if (pending_.empty()) return ok();
  std::string lines = std::move(pending_);
  pending_.clear();
  ::lseek(mutex_.get(), 0, SEEK_END);
  if (::write(mutex_.get(), lines.data(), lines.size()) != static_cast<ssize_t>(lines.size()))
    return Error::sys(errno, "sandbox: write the placeholder registry");
  return ok();
}

// An ordinary user's runtime: a directory of its own on the way to PATH,
// at or under one of ROOTS (the trees the command could write), that the
// command made unsearchable or read-only (`chmod 000 .` of the workspace
// left every placeholder behind: red team round 15) gets its owner's
// rights back, and no more: group and others lose write. Opened without
// following a link, changed through that fd. True when one was changed.
bool regain_own_dir(const std::string& d) {
  UniqueFd fd(::open(d.c_str(), O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) < 0 || st.st_uid != ::geteuid() ||
      (st.st_mode & S_IRWXU) == S_IRWXU)
    return false;
  const std::string self = "/proc/self/fd/" + std::to_string(fd.get());
  if (::chmod(self.c_str(), (st.st_mode & 0755) | S_IRWXU) < 0) return false;
  log::warn("sandbox: gave " + d + " its owner's rights back (the command had taken them)");
  return true;
}

bool regain_own_dirs(const std::string& path, const std::vector<std::string>& roots) {
  if (::geteuid() == 0) return false;
  bool changed = false;
  for (std::size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
    const std::string d = path.substr(0, at);
    if (std::none_of(roots.begin(), roots.end(),
                     [&](const std::string& r) { return path_under(d, r); }))
      continue;
    changed = regain_own_dir(d) || changed;
  }
  return changed;
}

UniqueFd remove_placeholder(const Made& m, const std::vector<std::string>& roots) {
  struct stat st;
  if (::lstat(m.path.c_str(), &st) < 0 &&
      (errno != EACCES || !regain_own_dirs(m.path, roots) || ::lstat(m.path.c_str(), &st) < 0))
    return {};
  if (st.st_dev != m.dev || st.st_ino != m.ino) return {};
  if (!m.dir) {
    if (!S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) != m.content.size()) return {};
    if (!m.content.empty()) {  // still exactly what we wrote
      auto text = read_file(m.path);
      if (!text.ok() || *text != m.content) return {};
    }
    if (::unlink(m.path.c_str()) < 0 && errno == EACCES && regain_own_dirs(m.path, roots))
      ::unlink(m.path.c_str());
    return {};
  }
  UniqueFd held(::open(m.path.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (::rmdir(m.path.c_str()) < 0 &&
      (errno != EACCES || !regain_own_dirs(m.path, roots) || ::rmdir(m.path.c_str()) < 0))
    return {};  // ENOTEMPTY: not ours to remove
  return held;
}

Status PlaceholderRegistry::open(const std::string& state_root, const std::string& workspace) {
  dir_ = join_path(state_root, ".placeholders");
  // Keyed by the workspace's inode, not its path: the same directory
  // reached by two paths (a bind mount) is one workspace (red team round 9).
  struct stat ws;
  if (::stat(workspace.c_str(), &ws) < 0) return Error::sys(errno, "sandbox: stat " + workspace);
  const std::string key = std::to_string(ws.st_dev) + ":" + std::to_string(ws.st_ino);
  const std::string base = join_path(dir_, sha256_hex(key).substr(0, 32));
  registry_path_ = base + ".registry";
  users_path_ = base + ".users";
  // The last one out removes the files (and the directory when empty):
  // a mutex is only ours once the path still names what we locked.
  for (int tries = 0; tries < 20; tries++) {
    if (::mkdir(dir_.c_str(), 0700) < 0 && errno != EEXIST)
      return Error::sys(errno, "sandbox: create " + dir_);
    mutex_.reset(::open(registry_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!mutex_) {
      if (errno == ENOENT) continue;  // the directory went between the two
      return Error::sys(errno, "sandbox: open the placeholder registry " + registry_path_);
    }
    if (::flock(mutex_.get(), LOCK_EX) < 0) return Error::sys(errno, "sandbox: lock " + base);
    struct stat held, named;
    if (::fstat(mutex_.get(), &held) == 0 && ::stat(registry_path_.c_str(), &named) == 0 &&
        held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
      locked_ = true;
      users_.reset(::open(users_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
      if (!users_) return Error::sys(errno, "sandbox: open the placeholder users " + base);
      return ok();
    }
    mutex_.reset();  // removed by the last sandbox out meanwhile: again
  }
  return Error::msg("sandbox: the placeholder registry " + registry_path_ + " keeps changing");
}

std::vector<Made> PlaceholderRegistry::entries() const {
  std::vector<Made> out;
  std::string text;
  char buf[4096];
  ssize_t n;
  ::lseek(mutex_.get(), 0, SEEK_SET);
  while ((n = ::read(mutex_.get(), buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  for (const auto& line : split(text, '\n')) {
    unsigned long long dev = 0, ino = 0;
    char kind = 0;
    char hex[129] = {};
    int used = 0;
    if (std::sscanf(line.c_str(), "%llu %llu %c %128s %n", &dev, &ino, &kind, hex, &used) != 4)
      continue;
    std::string content;
    for (size_t i = 0; hex[0] != '-' && hex[i] && hex[i + 1]; i += 2)
      content.push_back(static_cast<char>(std::stoi(std::string(hex + i, 2), nullptr, 16)));
    Made m{line.substr(static_cast<size_t>(used)), kind == 'd', static_cast<dev_t>(dev),
           static_cast<ino_t>(ino), content};
    struct stat st;
    if (::lstat(m.path.c_str(), &st) == 0 && st.st_dev == m.dev && st.st_ino == m.ino)
      out.push_back(std::move(m));
  }
  return out;
}

}  // namespace comet::runtime::sandbox_parts
