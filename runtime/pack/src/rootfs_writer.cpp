// The writer of `rootfs --from-host` (hostroot.hpp): a plan made on disk
// in a temp dir beside DIR, renamed into place; and the verb itself.
#include "comet/pack/hostroot.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "comet/base/fd.hpp"
#include "comet/base/sys.hpp"

#include "hostroot_paths.hpp"

namespace comet::runtime {

using namespace hostroot_detail;

namespace {

// What an output DIR is now.
struct OutDir {
  std::string path;  // absolute, clean
  bool exists = false;
  bool empty = true;
};

Result<OutDir> inspect_out_dir(const std::string& dir, bool force) {
  if (dir.empty()) return Error::msg("an output directory (-o DIR) is required");
  OutDir o;
  o.path = absolute(dir);
  if (o.path == "/") return Error::msg("refusing to write a rootfs over /");
  std::string parent = dirname_of(o.path);
  struct stat st;
  if (::stat(parent.c_str(), &st) < 0) return Error::sys(errno, "parent directory " + parent);
  if (!S_ISDIR(st.st_mode)) return Error::sys(ENOTDIR, "parent directory " + parent);
  if (::lstat(o.path.c_str(), &st) < 0) {
    if (errno != ENOENT) return Error::sys(errno, "stat " + o.path);
    return o;
  }
  o.exists = true;
  if (S_ISLNK(st.st_mode)) return Error::msg(o.path + " is a symlink");
  if (!S_ISDIR(st.st_mode)) return Error::msg(o.path + " exists and is not a directory");
  UniqueFd fd(::open(o.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return Error::sys(errno, "open " + o.path);
  DIR* d = ::fdopendir(fd.get());
  if (!d) return Error::sys(errno, "opendir " + o.path);
  fd.release();
  while (struct dirent* e = ::readdir(d)) {
    std::string_view nm = e->d_name;
    if (nm != "." && nm != "..") {
      o.empty = false;
      break;
    }
  }
  ::closedir(d);
  if (!o.empty && !force)
    return Error::msg(o.path + " exists and is not empty (--force replaces it)");
  return o;
}

// The key describes the files the plan saw: a file replaced or changed since
// (a package upgrade during the build) must not be cached under it.
Status unchanged(const RootfsEntry& e, const struct stat& st) {
  int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (st.st_ino != e.ino || st.st_size != e.size || mtime != e.mtime_ns)
    return Error::msg(e.source + " changed while the rootfs was being built; try again");
  return ok();
}

Status write_content(const RootfsEntry& e, int root, const std::string& rel) {
  UniqueFd f(
      ::openat(root, rel.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!f) return Error::sys(errno, "create /" + rel);
  for (size_t off = 0; off < e.content.size();) {
    ssize_t n = ::write(f.get(), e.content.data() + off, e.content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::sys(errno, "write /" + rel);
    off += static_cast<size_t>(n);
  }
  if (::fchmod(f.get(), e.mode) < 0) return Error::sys(errno, "chmod /" + rel);
  return ok();
}

Status copy_file(const RootfsEntry& e, int root, const std::string& rel) {
  UniqueFd src(::open(e.source.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!src) return Error::sys(errno, "open " + e.source);
  struct stat st;
  if (::fstat(src.get(), &st) < 0) return Error::sys(errno, "stat " + e.source);
  if (!S_ISREG(st.st_mode)) return Error::msg(e.source + ": not a regular file");
  TRYV(unchanged(e, st));
  UniqueFd dst(
      ::openat(root, rel.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!dst) return Error::sys(errno, "create /" + rel);
  bool kernel_copy = true;  // copy_file_range, then read/write where it cannot
  for (;;) {
    if (kernel_copy) {
      ssize_t n = ::copy_file_range(src.get(), nullptr, dst.get(), nullptr, 1 << 30, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
        kernel_copy = false;  // both offsets are where the last call left them
        continue;
      }
      if (n < 0) return Error::sys(errno, "copy " + e.source + " to /" + rel);
      if (n == 0) break;
      continue;
    }
    char buf[1 << 16];
    ssize_t n = ::read(src.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::sys(errno, "read " + e.source);
    if (n == 0) break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::write(dst.get(), buf + off, static_cast<size_t>(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Error::sys(errno, "write /" + rel);
      off += w;
    }
  }
  // chown before chmod: chown clears the set-id bits.
  if (::geteuid() == 0 && ::fchown(dst.get(), st.st_uid, st.st_gid) < 0)
    return Error::sys(errno, "chown /" + rel);
  if (::fchmod(dst.get(), st.st_mode & 07777) < 0) return Error::sys(errno, "chmod /" + rel);
  // Python compares a .pyc's recorded source mtime with the .py's.
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  if (::futimens(dst.get(), times) < 0) return Error::sys(errno, "utimens /" + rel);
  return ok();
}

Status materialize(const RootfsPlan& plan, const std::string& dir, bool copy) {
  TRY(UniqueFd root, open_fd(dir, O_PATH | O_DIRECTORY));
  struct stat rst;
  if (::fstat(root.get(), &rst) < 0) return Error::sys(errno, "stat " + dir);
  const int r = root.get();
  // Directories stay 0700 (writable by us) until everything is in them.
  std::vector<std::pair<std::string, mode_t>> dir_modes;
  for (const auto& [path, e] : plan) {
    std::string rel = path.substr(1);
    switch (e.kind) {
      case RootfsEntry::Kind::dir:
        if (::mkdirat(r, rel.c_str(), 0700) < 0) return Error::sys(errno, "mkdir " + path);
        dir_modes.emplace_back(rel, e.mode);
        break;
      case RootfsEntry::Kind::symlink:
        if (::symlinkat(e.target.c_str(), r, rel.c_str()) < 0)
          return Error::sys(errno, "symlink " + path + " -> " + e.target);
        break;
      case RootfsEntry::Kind::file: {
        if (e.source.empty()) {
          TRYV(write_content(e, r, rel));
          break;
        }
        if (!copy && e.dev == rst.st_dev) {
          if (::linkat(AT_FDCWD, e.source.c_str(), r, rel.c_str(), 0) == 0) {
            struct stat st;
            if (::fstatat(r, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0)
              return Error::sys(errno, "stat " + path);
            TRYV(unchanged(e, st));
            break;
          }
          // EPERM: fs.protected_hardlinks for a file we do not own.
          if (errno != EXDEV && errno != EPERM && errno != EMLINK)
            return Error::sys(errno, "link " + e.source + " to " + path);
        }
        TRYV(copy_file(e, r, rel));
        break;
      }
    }
  }
  for (auto it = dir_modes.rbegin(); it != dir_modes.rend(); ++it)
    if (::fchmodat(r, it->first.c_str(), it->second, 0) < 0)
      return Error::sys(errno, "chmod /" + it->first);
  return ok();
}

// Removes a temp dir unless released.
class TempDir {
 public:
  explicit TempDir(std::string p) : path_(std::move(p)) {}
  ~TempDir() {
    if (!path_.empty()) (void)remove_tree(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  void release() { path_.clear(); }

 private:
  std::string path_;
};

}  // namespace

Status write_rootfs(const RootfsPlan& plan, const std::string& dir, bool copy, bool force) {
  TRYV(check_plan(plan));
  TRY(OutDir out, inspect_out_dir(dir, force));
  if (out.exists && !out.empty) {
    // --force: never replace a directory the rootfs is made from.
    char real[PATH_MAX];
    std::string rdir = ::realpath(out.path.c_str(), real) ? std::string(real) : out.path;
    for (const auto& [path, e] : plan)
      if (!e.source.empty() && (is_within(e.source, rdir) || is_within(e.source, out.path)))
        return Error::msg("refusing to replace " + out.path + ": it holds " + e.source +
                          ", which the rootfs is made from");
  }
  std::string tmpl = join_path(dirname_of(out.path), "." + basename_of(out.path) + ".tmp-XXXXXX");
  if (!::mkdtemp(tmpl.data())) return Error::sys(errno, "mkdtemp " + tmpl);
  TempDir tmp(tmpl);
  TRYV(materialize(plan, tmp.path(), copy));
  if (::chmod(tmp.path().c_str(), 0755) < 0) return Error::sys(errno, "chmod " + tmp.path());
  if (!out.exists || out.empty) {
    // rename(2) replaces an empty directory; a non-empty one (filled since
    // we looked) fails with ENOTEMPTY/EEXIST and we leave it alone.
    if (::rename(tmp.path().c_str(), out.path.c_str()) < 0)
      return Error::sys(errno, "rename " + tmp.path() + " to " + out.path);
    tmp.release();
    return ok();
  }
  if (::renameat2(AT_FDCWD, tmp.path().c_str(), AT_FDCWD, out.path.c_str(), RENAME_EXCHANGE) < 0)
    return Error::sys(errno, "exchange " + tmp.path() + " with " + out.path);
  // tmp now holds the old tree.
  std::string old = tmp.path();
  tmp.release();
  Status st = remove_tree(old);
  if (!st.ok())
    return std::move(st).error().wrap("replaced " + out.path + ", but the old tree stays at " +
                                      old);
  return ok();
}

Result<std::vector<std::string>> rootfs_from_host(const HostRootfsOptions& o) {
  {
    // Refuse a bad DIR before the (longer) planning.
    auto out = inspect_out_dir(o.output, o.force);
    if (!out.ok()) return std::move(out).error().wrap("rootfs");
  }
  TRY(RootfsPlan plan, plan_host_rootfs(o));
  Status st = write_rootfs(plan, o.output, o.copy, o.force);
  if (!st.ok()) return std::move(st).error().wrap("rootfs");
  std::vector<std::string> lines;
  for (const auto& [path, e] : plan) {
    std::string line = std::string(kind_name(e.kind)) + " " + path;
    if (e.kind == RootfsEntry::Kind::symlink) line += " -> " + e.target;
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace comet::runtime
