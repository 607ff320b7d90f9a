// What the fs watch reports, classified (fswatch.hpp): which syscalls read
// or write, which failures are a violation of the pack's or the sandbox's
// rules, and which calls follow a last symlink. Pure: no syscalls.

#include "comet/reporting/fswatch.hpp"

#include <fcntl.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <algorithm>
#include <cstring>

#include "comet/base/sys.hpp"
#include "comet/capability/match.hpp"
#include "comet/capability/profile.hpp"
#include "comet/reporting/violations.hpp"

namespace comet::runtime {

namespace {

// Newer than Debian 12's headers.
constexpr int kSysFchmodat2 = 452, kSysSetxattrat = 463, kSysGetxattrat = 464,
              kSysListxattrat = 465, kSysRemovexattrat = 466, kSysFileGetattr = 468,
              kSysFileSetattr = 469;

enum class Kind { read, write, skip };

Kind kind_of(int nr, std::uint64_t flags) {
  switch (nr) {
    case SYS_open:
    case SYS_openat:
    case SYS_openat2: {
      const std::uint64_t acc = flags & O_ACCMODE;
      return acc != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) ? Kind::write : Kind::read;
    }
    case SYS_stat:
    case SYS_lstat:
    case SYS_newfstatat:
    case SYS_statx:
    case SYS_access:
    case SYS_faccessat:
    case SYS_faccessat2:
    case SYS_readlink:
    case SYS_readlinkat:
    case SYS_chdir:
    case SYS_statfs:
    case SYS_getxattr:
    case SYS_lgetxattr:
    case SYS_listxattr:
    case SYS_llistxattr:
    case kSysGetxattrat:
    case kSysListxattrat:
    case kSysFileGetattr:
    case SYS_inotify_add_watch:
    case SYS_name_to_handle_at:
    case SYS_fanotify_mark:
    case SYS_connect:
    case SYS_sendto:
    case SYS_sendmsg:
      return Kind::read;
    case SYS_mknod:
    case SYS_mknodat: {
      const mode_t fmt = static_cast<mode_t>(flags) & S_IFMT;
      // Devices are the lock-down's (surface device, seccomp).
      return fmt == S_IFCHR || fmt == S_IFBLK ? Kind::skip : Kind::write;
    }
    case SYS_creat:
    case SYS_mkdir:
    case SYS_mkdirat:
    case SYS_rmdir:
    case SYS_unlink:
    case SYS_unlinkat:
    case SYS_rename:
    case SYS_renameat:
    case SYS_renameat2:
    case SYS_link:
    case SYS_linkat:
    case SYS_symlink:
    case SYS_symlinkat:
    case SYS_truncate:
    case SYS_chmod:
    case SYS_fchmodat:
    case kSysFchmodat2:
    case SYS_chown:
    case SYS_lchown:
    case SYS_fchownat:
    case SYS_utimensat:
    case SYS_utime:
    case SYS_utimes:
    case SYS_futimesat:
    case SYS_setxattr:
    case SYS_lsetxattr:
    case SYS_removexattr:
    case SYS_lremovexattr:
    case kSysSetxattrat:
    case kSysRemovexattrat:
    case kSysFileSetattr:
    case SYS_bind:
    case SYS_fchmod:
    case SYS_fchown:
    case SYS_fsetxattr:
    case SYS_fremovexattr:
      return Kind::write;
    default:
      return Kind::skip;
  }
}

std::string first_component(const std::string& p) {
  std::size_t b = p.find_first_not_of('/');
  if (b == std::string::npos) return "";
  std::size_t e = p.find('/', b);
  return p.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

// Top-level directories an image may have but a pack never reads from it:
// a failed lookup there is a violation even when the rootfs has them.
bool never_image(const std::string& top) {
  static const char* const kNever[] = {"home", "root", "srv", "var", "mnt", "media"};
  for (const char* n : kNever)
    if (top == n) return true;
  return false;
}

// glibc asks nscd first for names, users and groups (getaddrinfo,
// getpwnam): a connect to its socket that fails is no one's violation.
bool is_nscd_socket(const std::string& p) {
  return p == "/var/run/nscd/socket" || p == "/run/nscd/socket";
}

}  // namespace

namespace {

// The longest of `list` that is `p` or a parent of it, or nullptr.
const std::string* under_any(const std::vector<std::string>& list, const std::string& p) {
  const std::string* best = nullptr;
  for (const std::string& e : list) {
    const bool in = p == e || e == "/" ||
                    (p.size() > e.size() && p.compare(0, e.size(), e) == 0 && p[e.size()] == '/');
    if (in && (!best || e.size() > best->size())) best = &e;
  }
  return best;
}

std::optional<FsViolation> classify_sandbox(int nr, int err, Kind k, const FsPath& path,
                                            const FsPath& path2, const FsView& view) {
  // The unix-socket rule reports its own calls (unix_rule.hpp).
  if (nr == SYS_connect || nr == SYS_sendto || nr == SYS_sendmsg) return std::nullopt;
  std::uint64_t noargs[6] = {};
  auto make = [&](const std::string& p, const std::string* entry, bool write) {
    FsViolation v;
    v.surface = write ? "fs.write" : "fs.read";
    v.requested = p;
    if (entry) v.matched_entry = *entry;
    v.syscall = violations::classify(nr, noargs).syscall;
    v.err = err;
    return v;
  };
  // EBUSY: a rename onto, or an unlink of, a mount point (a protected path
  // or a pinned parent of one).
  const bool refused_write = k == Kind::write && (err == EROFS || err == EACCES || err == EPERM ||
                                                  err == EXDEV || err == EBUSY);
  // A protected path named by either path first (a rename's target is the
  // second), then a denied one, then a write outside the writable places.
  if (refused_write)
    for (const FsPath* p : {&path, &path2}) {
      if (p->path.empty() || !p->known || p->cut || p->opaque) continue;
      const std::string judged = p->resolved.empty() ? clean_path(p->path) : p->resolved;
      if (const std::string* pr = under_any(view.protect, judged)) return make(judged, pr, true);
      if (err == EROFS)  // on the way to a missing protected name
        for (const std::string& r : view.refused)
          if (r.size() > judged.size() && r.compare(0, judged.size(), judged) == 0 &&
              (judged == "/" || r[judged.size()] == '/'))
            return make(judged, &r, true);
    }
  for (const FsPath* p : {&path, &path2}) {
    if (p->path.empty()) continue;
    if (!p->known || p->cut || p->opaque) {
      if (refused_write) return make(clean_path(p->path), nullptr, true);  // fail closed
      continue;
    }
    const std::string judged = p->resolved.empty() ? clean_path(p->path) : p->resolved;
    if (err == EACCES)
      if (const std::string* d = under_any(view.deny, judged)) return make(judged, d, false);
    // EBUSY in a writable place: only the sandbox's mounts make one there
    // (a pinned parent of a protected path, `mv .git x`).
    if (refused_write && (err == EBUSY || !under_any(view.writable, judged)))
      return make(judged, nullptr, true);
  }
  return std::nullopt;
}

}  // namespace

std::optional<FsViolation> classify_fs(int nr, std::uint64_t flags, int err, const FsPath& path,
                                       const FsPath& path2, const FsView& view) {
  // EXDEV: a rename or link across mounts (the kernel says so before it
  // looks at a read-only target); judged like any other write of the two.
  const bool two_paths = nr == SYS_rename || nr == SYS_renameat || nr == SYS_renameat2 ||
                         nr == SYS_link || nr == SYS_linkat;
  if (view.sandbox) {
    const Kind sk = kind_of(nr, flags);
    if (sk == Kind::skip) return std::nullopt;
    return classify_sandbox(nr, err, sk, path, path2, view);
  }
  if (err != EPERM && err != ENOENT && err != EACCES && err != ENOTDIR && err != EROFS &&
      !(err == EXDEV && two_paths))
    return std::nullopt;
  const Kind k = kind_of(nr, flags);
  if (k == Kind::skip) return std::nullopt;
  std::uint64_t noargs[6] = {};
  auto make = [&](const std::string& p, const capability::FsDecision* d, Kind as) {
    FsViolation v;
    v.surface = as == Kind::write ? "fs.write" : "fs.read";
    v.requested = p;
    if (d && (d->index || d->implicit)) v.matched_entry = d->entry;
    v.syscall = violations::classify(nr, noargs).syscall;
    v.err = err;
    return v;
  };
  // A look at an absolute path: a violation unless an entry makes it
  // readable or it is in the image. Inside the image (and the runtime's own
  // mounts: /proc, /dev) a missing file is only missing and a refused one is
  // the image's own mode bits: the image is all there is to read there.
  auto judge_read = [&](const std::string& abs, Kind as) -> std::optional<FsViolation> {
    capability::FsDecision d = capability::fs_decision(view.fs, abs);
    if (d.access != capability::Access::denied) return std::nullopt;
    static const char* const kSystem[] = {"usr", "lib",  "lib64", "bin", "sbin",
                                          "etc", "proc", "dev",   "sys"};
    const std::string top = first_component(abs);
    bool in_image = top.empty();
    for (const char* t : kSystem) in_image = in_image || top == t;
    if (!never_image(top))
      for (const std::string& t : view.image_top) in_image = in_image || t == top;
    if (in_image) return std::nullopt;
    return make(abs, &d, as);
  };
  auto judge = [&](const std::string& abs) -> std::optional<FsViolation> {
    if (k == Kind::read) return judge_read(abs, k);
    capability::FsDecision d = capability::fs_decision(view.fs, abs);
    if (d.access != capability::Access::write) return make(abs, &d, k);
    // A symlink where writing is allowed: packs may not make one
    // (Landlock, EACCES), or it could point a later lookup anywhere.
    if ((nr == SYS_symlink || nr == SYS_symlinkat) && (err == EACCES || err == EPERM))
      return make(abs, &d, k);
    return std::nullopt;
  };
  for (const FsPath* p : {&path, &path2}) {
    if (p->path.empty()) continue;  // an fd-relative call (AT_EMPTY_PATH, utimensat(fd, NULL))
    const std::string& where = p->resolved.empty() ? p->path : p->resolved;
    if ((nr == SYS_connect || nr == SYS_sendto || nr == SYS_sendmsg) &&
        (capability::is_runtime_socket(where) || is_nscd_socket(where)))
      continue;  // the runtime-socket surface's; glibc's look for nscd
    if (!p->known) return make(p->path, nullptr, k);  // relative to what? fail closed
    // Where it leads, when the reporter could look; else as written. The
    // directories it went through and left by ".." were looked into.
    const std::string judged = p->resolved.empty() ? clean_path(p->path) : p->resolved;
    for (const std::string& d : p->passed)
      if (auto v = judge_read(d, Kind::read)) return v;
    if (auto v = judge(judged)) return v;
    // Where it leads cannot be told: fail closed.
    if (p->cut) return make(clean_path(p->path) + "...", nullptr, k);
    if (p->opaque) return make(clean_path(p->path), nullptr, k);
  }
  return std::nullopt;
}

bool fs_on_fd_itself(int nr, std::uint64_t flags) {
  constexpr std::uint64_t kAtEmptyPath = 0x1000;
  switch (nr) {
    case SYS_fchmod:
    case SYS_fchown:
    case SYS_fsetxattr:
    case SYS_fremovexattr:
    case SYS_utimensat:  // utimensat(fd, NULL): futimens
      return true;
    case kSysFchmodat2:
    case SYS_fchownat:
    case kSysSetxattrat:
    case kSysRemovexattrat:
    case kSysFileSetattr:
    case SYS_linkat:
      return (flags & kAtEmptyPath) != 0;
    default:
      return false;
  }
}

bool fs_follows_last(int nr, std::uint64_t flags, bool second) {
  if (second) return false;  // rename, link, symlink: the new name is never followed
  switch (nr) {
    case SYS_open:
    case SYS_openat:
    case SYS_openat2:
      return !(flags & O_NOFOLLOW) && (flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL);
    case SYS_newfstatat:
    case SYS_statx:
    case SYS_faccessat2:
    case SYS_fchownat:
    case SYS_utimensat:
    case kSysFchmodat2:
    case kSysSetxattrat:
    case kSysGetxattrat:
    case kSysListxattrat:
    case kSysRemovexattrat:
    case kSysFileGetattr:
    case kSysFileSetattr:
      return !(flags & AT_SYMLINK_NOFOLLOW);
    case SYS_inotify_add_watch:
      return !(flags & IN_DONT_FOLLOW);
    case SYS_fanotify_mark:
      return !(flags & FAN_MARK_DONT_FOLLOW);
    case SYS_linkat:
    case SYS_name_to_handle_at:
      return (flags & AT_SYMLINK_FOLLOW) != 0;
    case SYS_lstat:
    case SYS_lchown:
    case SYS_lgetxattr:
    case SYS_llistxattr:
    case SYS_lsetxattr:
    case SYS_lremovexattr:
    case SYS_unlink:
    case SYS_unlinkat:
    case SYS_rmdir:
    case SYS_rename:
    case SYS_renameat:
    case SYS_renameat2:
    case SYS_link:
    case SYS_symlink:
    case SYS_symlinkat:
    case SYS_mkdir:
    case SYS_mkdirat:
    case SYS_readlink:
    case SYS_readlinkat:
    case SYS_mknod:
    case SYS_mknodat:
    case SYS_bind:
      return false;
    default:
      return true;
  }
}

}  // namespace comet::runtime
