// The container child's file system (child_internal.hpp): the mounts of the
// plan, resolved inside the rootfs, the devices, the console, masked and
// read-only paths, the move into the root, the sandbox's skeleton. Runs
// after clone(2): single-threaded, noexcept; errors die() to the parent.
#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include <cstring>

#include "child_internal.hpp"
#include "comet/base/fault.hpp"
#include "comet/base/fd.hpp"
#include "comet/base/openat2.hpp"
#include "comet/base/sys.hpp"

namespace comet::runtime::child {
namespace {
constexpr unsigned long long kInRoot = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
}  // namespace

std::string fdpath(int fd) {
  return "/proc/self/fd/" + std::to_string(fd);
}

int openat2_in_root(int rootfd, const std::string& path, int flags, unsigned long long resolve) {
  struct open_how how = {};
  how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC);
  how.resolve = resolve;
  std::string rel = path;
  while (!rel.empty() && rel[0] == '/') rel.erase(0, 1);
  if (rel.empty()) rel = ".";
  // Again on EAGAIN (openat2.hpp): a rename or mount on the host raced the walk.
  return sys_openat2(rootfd, rel.c_str(), how, /*attempts=*/128);
}

// Open (creating if missing) a mount target inside the rootfs. Each missing
// component is made with mkdirat/openat relative to a parent resolved in the
// root, so no symlink can move the target outside it.
// A dangling symlink on the way is followed inside the root and its target
// created, as runc does (the image's /evil -> /tmp/x makes rootfs/tmp/x).
int ensure_target(int rootfd, const std::string& dest, bool dir, int depth) {
  if (depth > 40) {
    errno = ELOOP;
    return -1;
  }
  int fd = openat2_in_root(rootfd, dest, O_PATH, kInRoot);
  if (fd >= 0 || errno != ENOENT) return fd;
  std::vector<std::string> parts;
  for (auto& p : split(dest, '/'))
    if (!p.empty()) parts.push_back(p);
  std::string cur;
  for (size_t i = 0; i < parts.size(); i++) {
    std::string next = cur + "/" + parts[i];
    int f = openat2_in_root(rootfd, next, O_PATH, kInRoot);
    if (f >= 0) {
      ::close(f);
      cur = next;
      continue;
    }
    if (errno != ENOENT) return -1;
    int pfd = openat2_in_root(rootfd, cur.empty() ? "/" : cur, O_PATH | O_DIRECTORY, kInRoot);
    if (pfd < 0) return -1;
    char link[4096];
    ssize_t n = ::readlinkat(pfd, parts[i].c_str(), link, sizeof link - 1);
    if (n >= 0) {
      ::close(pfd);
      link[n] = 0;
      std::string target = link[0] == '/' ? std::string(link) : cur + "/" + link;
      for (size_t j = i + 1; j < parts.size(); j++) target += "/" + parts[j];
      return ensure_target(rootfd, clean_path(target), dir, depth + 1);
    }
    bool last = i + 1 == parts.size();
    int r;
    if (!last || dir) {
      r = ::mkdirat(pfd, parts[i].c_str(), 0755);
    } else {
      r = ::openat(pfd, parts[i].c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC,
                   0644);
      if (r >= 0) ::close(r), r = 0;
    }
    int saved = errno;
    ::close(pfd);
    if (r < 0 && saved != EEXIST) {
      errno = saved;
      return -1;
    }
    cur = next;
  }
  return openat2_in_root(rootfd, dest, O_PATH, kInRoot);
}

namespace {

unsigned long locked_flags(const char* path) {
  struct statvfs s;
  if (::statvfs(path, &s) < 0) return 0;
  unsigned long f = 0;
  if (s.f_flag & ST_NOSUID) f |= MS_NOSUID;
  if (s.f_flag & ST_NODEV) f |= MS_NODEV;
  if (s.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
  if (s.f_flag & ST_RDONLY) f |= MS_RDONLY;
  if (s.f_flag & ST_NOATIME) f |= MS_NOATIME;
  if (s.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
  if (s.f_flag & ST_RELATIME) f |= MS_RELATIME;
  return f;
}

}  // namespace

// Bind-remount with flags; in a user namespace the source's locked flags
// must be kept or the kernel answers EPERM.
int remount_bind(const std::string& path, unsigned long flags) {
  if (::mount(nullptr, path.c_str(), nullptr, MS_REMOUNT | MS_BIND | flags, nullptr) == 0) return 0;
  if (errno != EPERM) return -1;
  unsigned long locked =
      locked_flags(path.c_str()) & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY);
  return ::mount(nullptr, path.c_str(), nullptr, MS_REMOUNT | MS_BIND | flags | locked, nullptr);
}

namespace {

void apply_propagation_and_attrs(int rootfd, const MountOp& op) {
  if (!op.opt.propagation && !op.opt.rec_attr_set && !op.opt.rec_attr_clr) return;
  UniqueFd fd(openat2_in_root(rootfd, op.dest, O_PATH, kInRoot));
  if (!fd) die(errno, "open mount %s", op.dest.c_str());
  if (op.opt.propagation &&
      ::mount(nullptr, fdpath(fd.get()).c_str(), nullptr, op.opt.propagation, nullptr) < 0)
    die(errno, "set propagation of %s", op.dest.c_str());
  if (op.opt.rec_attr_set || op.opt.rec_attr_clr) {
    struct mount_attr attr = {};
    attr.attr_set = op.opt.rec_attr_set;
    attr.attr_clr = op.opt.rec_attr_clr;
    if (op.opt.rec_attr_set & MOUNT_ATTR__ATIME) attr.attr_clr |= MOUNT_ATTR__ATIME;
    if (::syscall(SYS_mount_setattr, fd.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
                  sizeof attr) < 0)
      die(errno, "mount_setattr %s", op.dest.c_str());
  }
}

// A symlink bound onto itself, so that it cannot be unlinked or replaced
// (a mount point is EBUSY to both): open_tree and move_mount without
// following the last component, on each side. Both must be the same
// symlink: a link that changed since the plan fails the run.
void mount_link(int rootfd, const MountOp& op) {
  UniqueFd tree(
      static_cast<int>(::syscall(SYS_open_tree, AT_FDCWD, op.source.c_str(),
                                 OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW)));
  if (!tree) die(errno, "pin the symlink %s", op.source.c_str());
  UniqueFd target(openat2_in_root(rootfd, op.dest, O_PATH | O_NOFOLLOW, kInRoot));
  struct stat a, b;
  if (!target || ::fstat(target.get(), &b) < 0) die(errno, "pin the symlink %s", op.dest.c_str());
  if (::fstatat(tree.get(), "", &a, AT_EMPTY_PATH) < 0 || !S_ISLNK(a.st_mode) ||
      !S_ISLNK(b.st_mode) || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
    die(ESTALE, "pin the symlink %s: it changed since the plan", op.dest.c_str());
  if (::syscall(SYS_move_mount, tree.get(), "", target.get(), "",
                MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    die(errno, "pin the symlink %s", op.dest.c_str());
}

// The source of an "x-comet.nofollow" bind (the sandbox's writable trees),
// opened in this mount namespace without following any symlink: the bind
// then goes through this fd (its /proc/self/fd path), so what was opened is
// what is mounted; a component swapped for a symlink since the plan (by a
// concurrent sandbox, red team round 12) answers ELOOP and fails the run.
int open_source_nofollow(const std::string& source) {
  struct open_how how = {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return sys_openat2(AT_FDCWD, source.c_str(), how, /*attempts=*/128);
}

void mount_bind(int rootfd, const MountOp& op) {
  if (op.opt.link) return mount_link(rootfd, op);
  UniqueFd src;
  if (op.opt.nofollow) {
    src.reset(open_source_nofollow(op.source));
    if (!src) die(errno, "bind mount source %s (opened following no symlink)", op.source.c_str());
  }
  const std::string from = src ? fdpath(src.get()) : op.source;
  struct stat st;
  // An idmapped tree was opened by the parent: the source path itself may be
  // out of reach of the container's user namespace.
  if ((op.tree_fd >= 0 ? ::fstatat(op.tree_fd, "", &st, AT_EMPTY_PATH)
                       : ::stat(from.c_str(), &st)) < 0)
    die(errno, "bind mount source %s", op.source.c_str());
  UniqueFd fd(ensure_target(rootfd, op.dest, S_ISDIR(st.st_mode)));
  if (!fd) die(errno, "mount target %s", op.dest.c_str());
  unsigned long f = MS_BIND | (op.opt.recursive_bind ? MS_REC : 0);
  if (op.tree_fd >= 0) {
    // Idmapped: the parent made the tree (mounts.hpp); attach it here.
    if (::syscall(SYS_move_mount, op.tree_fd, "", fd.get(), "",
                  MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
      die(errno, "idmapped mount %s on %s", op.source.c_str(), op.dest.c_str());
  } else if (::mount(from.c_str(), fdpath(fd.get()).c_str(), nullptr, f, nullptr) < 0) {
    die(errno, "bind mount %s on %s", op.source.c_str(), op.dest.c_str());
  }
  src.reset();
  fd.reset();
  unsigned long extra = op.opt.flags & ~(MS_REMOUNT);
  if (extra) {
    fd.reset(openat2_in_root(rootfd, op.dest, O_PATH, kInRoot));
    if (!fd || remount_bind(fdpath(fd.get()), extra) < 0)
      die(errno, "remount %s with flags", op.dest.c_str());
    fd.reset();
  }
  apply_propagation_and_attrs(rootfd, op);
}

void mount_cgroups(int rootfd, const MountOp& op) {
  const ChildContext& c = *g_ctx;
  UniqueFd fd(ensure_target(rootfd, op.dest, true));
  if (!fd) die(errno, "mount target %s", op.dest.c_str());
  unsigned long flags = op.opt.flags;
  if (c.fs.cgroups.v2_only) {
    const std::string at = fdpath(fd.get());
    int r = c.ns.cgroupns ? ::mount("cgroup2", at.c_str(), "cgroup2", flags, nullptr)
                          : ::mount(c.fs.cgroups.hierarchies[0].dir.c_str(), at.c_str(), nullptr,
                                    MS_BIND | MS_REC, nullptr);
    if (r < 0) die(errno, "mount cgroup2 on %s", op.dest.c_str());
    fd.reset();
    if (!c.ns.cgroupns && flags) {
      fd.reset(openat2_in_root(rootfd, op.dest, O_PATH, kInRoot));
      if (!fd || remount_bind(fdpath(fd.get()), flags) < 0)
        die(errno, "remount %s", op.dest.c_str());
      fd.reset();
    }
    return;
  }
  // v1 and hybrid: a tmpfs with one directory per hierarchy.
  if (::mount("tmpfs", fdpath(fd.get()).c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=755") < 0)
    die(errno, "mount tmpfs on %s", op.dest.c_str());
  fd.reset();
  for (const auto& h : c.fs.cgroups.hierarchies) {
    std::string name = h.mountpoint.substr(h.mountpoint.rfind('/') + 1);
    std::string sub = op.dest + "/" + name;
    UniqueFd sfd(ensure_target(rootfd, sub, true));
    if (!sfd) die(errno, "mkdir %s", sub.c_str());
    int r;
    if (c.ns.cgroupns) {
      std::string data;
      for (auto& ctl : h.controllers) data += (data.empty() ? "" : ",") + ctl;
      if (h.v2)
        r = ::mount("cgroup2", fdpath(sfd.get()).c_str(), "cgroup2", flags, nullptr);
      else
        r = ::mount("cgroup", fdpath(sfd.get()).c_str(), "cgroup", flags, data.c_str());
    } else {
      r = ::mount(h.dir.c_str(), fdpath(sfd.get()).c_str(), nullptr, MS_BIND, nullptr);
      if (r == 0 && flags) {
        sfd.reset();
        sfd.reset(openat2_in_root(rootfd, sub, O_PATH, kInRoot));
        r = !sfd ? -1 : remount_bind(fdpath(sfd.get()), flags);
      }
    }
    if (r < 0) die(errno, "mount cgroup %s on %s", name.c_str(), sub.c_str());
  }
  if (flags & MS_RDONLY) {
    fd.reset(openat2_in_root(rootfd, op.dest, O_PATH, kInRoot));
    if (!fd || ::mount(nullptr, fdpath(fd.get()).c_str(), nullptr,
                       MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755") < 0)
      die(errno, "remount %s read-only", op.dest.c_str());
  }
}

// Copy the tree under SRC into DST (both directory fds), never following a
// symlink: files, directories, symlinks and special nodes, with modes and
// owners. Returns 0 or an errno.
int copy_tree(int src, int dst) {
  int dup = ::dup(src);
  if (dup < 0) return errno;
  DIR* d = ::fdopendir(dup);
  if (!d) {
    ::close(dup);
    return errno;
  }
  int err = 0;
  while (struct dirent* e = ::readdir(d)) {
    const char* n = e->d_name;
    if (n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]))) continue;
    struct stat st;
    if (::fstatat(src, n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      err = errno;
      break;
    }
    mode_t perm = st.st_mode & 07777;
    if (S_ISDIR(st.st_mode)) {
      if (::mkdirat(dst, n, perm) < 0 && errno != EEXIST) err = errno;
      int s2 = err ? -1 : ::openat(src, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      int d2 = err ? -1 : ::openat(dst, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (!err && (s2 < 0 || d2 < 0)) err = errno;
      if (!err) err = copy_tree(s2, d2);
      if (!err) (void)::fchmod(d2, perm);
      if (s2 >= 0) ::close(s2);
      if (d2 >= 0) ::close(d2);
    } else if (S_ISREG(st.st_mode)) {
      int in = ::openat(src, n, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      int out = in < 0
                    ? -1
                    : ::openat(dst, n, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, perm);
      if (in < 0 || out < 0) err = errno;
      char buf[65536];
      ssize_t k;
      while (!err && (k = ::read(in, buf, sizeof buf)) > 0)
        if (::write(out, buf, static_cast<size_t>(k)) != k) err = errno ? errno : EIO;
      if (out >= 0) (void)::fchmod(out, perm);
      if (in >= 0) ::close(in);
      if (out >= 0) ::close(out);
    } else if (S_ISLNK(st.st_mode)) {
      char target[4096];
      ssize_t k = ::readlinkat(src, n, target, sizeof target - 1);
      if (k < 0) {
        err = errno;
      } else {
        target[k] = 0;
        if (::symlinkat(target, dst, n) < 0) err = errno;
      }
    } else if (::mknodat(dst, n, st.st_mode, st.st_rdev) < 0) {
      err = errno;
    }
    if (!err) (void)::fchownat(dst, n, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW);
    if (err) break;
  }
  ::closedir(d);
  return err;
}

}  // namespace

// A sandbox overlay view's top layer (x-comet.or-rbind: profile_compile.cpp
// overlay_view), its first lowerdir, made here in the sandbox's own tmpfs
// skeleton with the host directory's owner and mode (an overlay shows its
// root, and each merged directory, with its top layer's), and a whiteout
// (a 0:0 character device) per MountOptions::whiteouts name. A user
// namespace may not make one (the overlay is then refused too, and
// x-comet.or-rbind binds instead).
namespace {
void make_overlay_top(const MountOp& op) {
  const std::string& d = op.opt.data;
  const size_t at = d.find("lowerdir=");
  if (at == std::string::npos) die(0, "overlay %s: no lowerdir", op.dest.c_str());
  const size_t from = at + 9, to = d.find_first_of(":,", from);
  const std::string top = d.substr(from, to == std::string::npos ? std::string::npos : to - from);
  struct stat ds;
  if (::lstat(op.dest.c_str(), &ds) < 0 || !S_ISDIR(ds.st_mode)) return;  // the mount says why
  if (::mkdir(top.c_str(), 0700) < 0 && errno != EEXIST) die(errno, "create %s", top.c_str());
  // Best effort: in a user namespace the host's ids may be unmapped (and
  // the overlay is then refused anyway).
  (void)!::chown(top.c_str(), ds.st_uid, ds.st_gid);
  (void)!::chmod(top.c_str(), ds.st_mode & 07777);
  for (const std::string& name : op.opt.whiteouts) {
    // A whiteout below a subdirectory: the top layer's copy of each one on
    // the way, with the host's owner and mode (an overlay shows a merged
    // directory with its top layer's).
    for (size_t k = name.find('/'); k != std::string::npos; k = name.find('/', k + 1)) {
      const std::string sub = top + "/" + name.substr(0, k);
      struct stat hs;
      if (::lstat((op.dest + "/" + name.substr(0, k)).c_str(), &hs) < 0 || !S_ISDIR(hs.st_mode))
        break;  // gone on the host: nothing there to hide
      if (::mkdir(sub.c_str(), hs.st_mode & 07777) < 0) {
        if (errno != EEXIST) die(errno, "create %s", sub.c_str());
        continue;
      }
      (void)!::chown(sub.c_str(), hs.st_uid, hs.st_gid);
      (void)!::chmod(sub.c_str(), hs.st_mode & 07777);
    }
    const std::string w = top + "/" + name;
    if (::mknod(w.c_str(), S_IFCHR | 0000, makedev(0, 0)) < 0 && errno != EEXIST) {
      if (errno == ENOENT) continue;  // its directory is gone on the host
      if (op.opt.or_rbind && (errno == EPERM || errno == EACCES)) return;  // the bind instead
      die(errno, "whiteout %s", w.c_str());
    }
  }
}
}  // namespace

void do_mount(int rootfd, const MountOp& op) {
  if (op.opt.if_exists) {
    UniqueFd there(openat2_in_root(rootfd, op.dest, O_PATH, kInRoot));
    if (!there && errno == ENOENT) return;
  }
  if (op.opt.bind) return mount_bind(rootfd, op);
  if (op.cgroup) return mount_cgroups(rootfd, op);
  UniqueFd fd(ensure_target(rootfd, op.dest, true));
  if (!fd) die(errno, "mount target %s", op.dest.c_str());
  // tmpcopyup: the directory's current contents are copied onto the new
  // tmpfs (podman puts it on every --tmpfs). Keep a handle on what the
  // mount will cover.
  UniqueFd under;
  if (op.opt.tmpcopyup) {
    if (op.type != "tmpfs") die(0, "mount %s: tmpcopyup needs a tmpfs", op.dest.c_str());
    under.reset(openat2_in_root(rootfd, op.dest, O_RDONLY | O_DIRECTORY, kInRoot));
    if (!under) die(errno, "open %s for tmpcopyup", op.dest.c_str());
  }
  if (op.opt.or_rbind && op.type == "overlay") make_overlay_top(op);
  const char* data = op.opt.data.empty() ? nullptr : op.opt.data.c_str();
  const std::string at = fdpath(fd.get());
  int r = ::mount(op.source.c_str(), at.c_str(), op.type.c_str(), op.opt.flags, data);
  if (r < 0 && op.opt.or_rbind) {
    fd.reset();
    MountOp b;
    b.source = op.dest;  // the host path the overlay shows
    b.dest = op.dest;
    b.type = "bind";
    b.opt.bind = b.opt.recursive_bind = true;
    b.opt.rec_attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    return mount_bind(rootfd, b);
  }
  if (r < 0 && errno == EPERM && op.type == "sysfs") {
    // sysfs of a network namespace we do not own: bind the host's, read-only.
    r = ::mount("/sys", at.c_str(), nullptr, MS_BIND | MS_REC, nullptr);
    if (r == 0) r = remount_bind(at, op.opt.flags | MS_RDONLY);
  }
  if (r < 0) die(errno, "mount %s (%s) on %s", op.source.c_str(), op.type.c_str(), op.dest.c_str());
  fd.reset();
  if (under) {
    UniqueFd top(openat2_in_root(rootfd, op.dest, O_RDONLY | O_DIRECTORY, kInRoot));
    if (!top) die(errno, "open the new tmpfs on %s", op.dest.c_str());
    struct stat st;
    if (::fstat(under.get(), &st) == 0) {
      (void)::fchmod(top.get(), st.st_mode & 07777);
      (void)::fchown(top.get(), st.st_uid, st.st_gid);
    }
    if (int e = copy_tree(under.get(), top.get())) die(e, "tmpcopyup %s", op.dest.c_str());
    top.reset();
    under.reset();
  }
  apply_propagation_and_attrs(rootfd, op);
}

namespace {

struct DefaultDev {
  const char* name;
  unsigned maj, min;
};
constexpr DefaultDev kDefaultDevs[] = {{"null", 1, 3},   {"zero", 1, 5},    {"full", 1, 7},
                                       {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};

void make_device(int rootfd, const std::string& path, char type, unsigned maj, unsigned min,
                 mode_t mode, uid_t uid, gid_t gid) {
  std::string parent = path.substr(0, path.rfind('/'));
  std::string name = path.substr(path.rfind('/') + 1);
  UniqueFd pfd(ensure_target(rootfd, parent.empty() ? "/" : parent, true));
  if (!pfd) die(errno, "device directory %s", parent.c_str());
  // O_PATH cannot mknodat
  UniqueFd dfd_owner(::openat(pfd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const int dfd = dfd_owner.get();
  pfd.reset();
  if (dfd < 0) die(errno, "open %s", parent.c_str());
  if (g_ctx->ns.userns) {
    // mknod is not allowed in a user namespace: bind the host's node.
    UniqueFd t(::openat(dfd, name.c_str(), O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!t && errno != EEXIST) die(errno, "create %s", path.c_str());
    t.reset();
    UniqueFd target(openat2_in_root(rootfd, path, O_PATH, kInRoot | RESOLVE_NO_SYMLINKS));
    if (!target) die(errno, "open %s", path.c_str());
    if (::mount(path.c_str(), fdpath(target.get()).c_str(), nullptr, MS_BIND, nullptr) < 0)
      die(errno, "bind device %s", path.c_str());
  } else {
    mode_t kind = type == 'b' ? S_IFBLK : type == 'p' ? S_IFIFO : S_IFCHR;
    ::unlinkat(dfd, name.c_str(), 0);
    if (::mknodat(dfd, name.c_str(), kind | (mode & 07777), makedev(maj, min)) < 0)
      die(errno, "mknod %s", path.c_str());
    // mknod obeys the umask: set the mode exactly.
    if (::fchmodat(dfd, name.c_str(), mode & 07777, 0) < 0) die(errno, "chmod %s", path.c_str());
    if (::fchownat(dfd, name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
      die(errno, "chown %s", path.c_str());
  }
}

}  // namespace

void setup_dev(int rootfd) {
  const ChildContext& c = *g_ctx;
  if (c.fs.dev_is_tmpfs) {
    for (auto& d : kDefaultDevs)
      make_device(rootfd, std::string("/dev/") + d.name, 'c', d.maj, d.min, 0666, 0, 0);
    UniqueFd dev(openat2_in_root(rootfd, "/dev", O_RDONLY | O_DIRECTORY, kInRoot));
    if (!dev) die(errno, "open /dev");
    struct {
      const char* target;
      const char* name;
    } links[] = {{"/proc/self/fd", "fd"},       {"/proc/self/fd/0", "stdin"},
                 {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"},
                 {"pts/ptmx", "ptmx"},          {"/proc/kcore", "core"}};
    for (auto& l : links) {
      if (std::strcmp(l.name, "core") == 0 && ::access("/proc/kcore", F_OK) != 0) continue;
      if (::symlinkat(l.target, dev.get(), l.name) < 0 && errno != EEXIST)
        die(errno, "symlink /dev/%s", l.name);
    }
  }
  for (auto& d : c.fs.devices) {
    make_device(rootfd, d.path, d.type[0] == 'u' ? 'c' : d.type[0], static_cast<unsigned>(d.major),
                static_cast<unsigned>(d.minor), d.file_mode.value_or(0666), d.uid.value_or(0),
                d.gid.value_or(0));
  }
}

namespace {

// The mount point holding PATH (longest prefix match, PATH included).
std::string parent_mountpoint(const std::string& path) {
  auto text = read_file("/proc/self/mountinfo");
  std::string best = "/";
  const std::string& dir = path;  // the rootfs itself may be the mount (runc's getParentMount)
  if (!text.ok()) return best;
  for (auto& line : split(*text, '\n')) {
    auto f = split(line, ' ');
    if (f.size() < 5) continue;
    const std::string& mp = f[4];
    if ((dir == mp || dir.rfind(mp + "/", 0) == 0 || mp == "/") && mp.size() > best.size())
      best = mp;
  }
  return best;
}

// Hand the pty master to --console-socket, named as runc names it.
void send_pty_master(int master) {
  send_fd(g_ctx->fds.console_sock_fd, master, "/dev/ptmx", "the pty master to the console socket");
}

// The peer of the pty MASTER (just opened, or -1 with errno), unlocked and
// sized as the config asks (a size the kernel refuses fails the create
// when SIZE_MUST_SET, and is let be for exec, as before).
int pty_peer(int master, bool size_must_set) {
  const ChildContext& c = *g_ctx;
  if (master < 0) die(errno, "open the container's /dev/ptmx");
  int unlock = 0;
  if (::ioctl(master, TIOCSPTLCK, &unlock) < 0) die(errno, "unlockpt");
  int slave = ::ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) die(errno, "open the pty peer");
  if (c.proc.has_console_size) {
    struct winsize ws = {};
    ws.ws_row = static_cast<unsigned short>(c.proc.console_size.height);
    ws.ws_col = static_cast<unsigned short>(c.proc.console_size.width);
    if (::ioctl(slave, TIOCSWINSZ, &ws) < 0 && size_must_set) die(errno, "set console size");
  }
  return slave;
}

}  // namespace

void prepare_rootfs_mount() {
  const ChildContext& ctx = *g_ctx;
  // rshared: start as rslave (pivot_root refuses a shared new root) and
  // add "shared" after the pivot, so the root is shared and still
  // receives the host's mounts.
  unsigned long prop = ctx.fs.rootfs_propagation ? ctx.fs.rootfs_propagation : (MS_SLAVE | MS_REC);
  if (prop & MS_SHARED) prop = MS_SLAVE | MS_REC;
  // unbindable: private until after the pivot (enter_root), or the rootfs
  // itself could not be bound.
  if (prop & MS_UNBINDABLE) prop = MS_PRIVATE | (prop & MS_REC);
  if (::mount(nullptr, "/", nullptr, prop, nullptr) < 0) die(errno, "set / propagation");
  // Non-recursive settings leave the rootfs's own mount as it was on the
  // host, maybe shared: make it private or pivot_root refuses it.
  if (!(prop & MS_REC)) {
    std::string parent = parent_mountpoint(ctx.fs.rootfs);
    if (::mount(nullptr, parent.c_str(), nullptr, MS_PRIVATE, nullptr) < 0)
      die(errno, "make %s private", parent.c_str());
  }
  if (::mount(ctx.fs.rootfs.c_str(), ctx.fs.rootfs.c_str(), nullptr, MS_BIND | MS_REC, nullptr) < 0)
    die(errno, "bind rootfs %s", ctx.fs.rootfs.c_str());
}

// No mount namespace: we are in the runtime's, so nothing of the host's may
// change (runc makes the host's / rslave here; we do not). A private anchor
// of our own in the state dir, then the rootfs bound on it and made private
// recursively: what is mounted below never propagates to the host's peers.
void prepare_host_root() {
  const ChildContext& ctx = *g_ctx;
  const char* r = ctx.fs.host_root.c_str();
  if (::mkdir(r, 0700) < 0 && errno != EEXIST) die(errno, "mkdir %s", r);
  if (::mount(r, r, nullptr, MS_BIND, nullptr) < 0) die(errno, "bind %s on itself", r);
  if (::mount(nullptr, r, nullptr, MS_PRIVATE, nullptr) < 0) die(errno, "make %s private", r);
  if (::mount(ctx.fs.rootfs.c_str(), r, nullptr, MS_BIND | MS_REC, nullptr) < 0)
    die(errno, "bind rootfs %s on %s", ctx.fs.rootfs.c_str(), r);
  if (::mount(nullptr, r, nullptr, MS_PRIVATE | MS_REC, nullptr) < 0)
    die(errno, "make %s rprivate", r);
}

// Bind sources must live in our own mount namespace, so the masking
// /dev/null is opened here (the host's, copied) and checked to be 1:3.
void open_dev_null(const char* fstat_what) {
  g_dev_null = ::open("/dev/null", O_PATH | O_CLOEXEC);
  if (g_dev_null < 0) die(errno, "open /dev/null");
  struct stat nst;
  if (::fstat(g_dev_null, &nst) < 0) die(errno, "%s", fstat_what);
  if (!S_ISCHR(nst.st_mode) || nst.st_rdev != makedev(1, 3))
    die(0, "/dev/null is not the null device");
}

// The pty: opened from the container's own devpts, its peer bound on
// /dev/console (verified to be a plain file we made, never a symlink), the
// master sent to --console-socket.
int setup_console(int rootfd) {
  int master = openat2_in_root(rootfd, "/dev/pts/ptmx", O_RDWR | O_NOCTTY, kInRoot);
  if (master < 0) master = openat2_in_root(rootfd, "/dev/ptmx", O_RDWR | O_NOCTTY, kInRoot);
  const int slave = pty_peer(master, /*size_must_set=*/true);
  if (UniqueFd dev(openat2_in_root(rootfd, "/dev", O_RDONLY | O_DIRECTORY, kInRoot)); dev) {
    UniqueFd(::openat(dev.get(), "console", O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600));
  }
  UniqueFd target(openat2_in_root(rootfd, "/dev/console", O_PATH, kInRoot | RESOLVE_NO_SYMLINKS));
  if (!target) die(errno, "open /dev/console");
  struct stat st;
  if (::fstat(target.get(), &st) < 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)))
    die(EINVAL, "/dev/console in the rootfs is not a file or char device");
  if (::mount(fdpath(slave).c_str(), fdpath(target.get()).c_str(), nullptr, MS_BIND, nullptr) < 0)
    die(errno, "bind the pty on /dev/console");
  target.reset();

  send_pty_master(master);
  return slave;
}

// exec: a pty of the container's devpts (we are in its mount namespace),
// the master sent to --console-socket; returns the peer.
int exec_console() {
  const int master = ::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
  const int slave = pty_peer(master, /*size_must_set=*/false);
  send_pty_master(master);
  return slave;
}

void mask_paths(int rootfd) {
  const ChildContext& c = *g_ctx;
  for (auto& p : c.fs.masked_paths) {
    UniqueFd fd(openat2_in_root(rootfd, p, O_PATH, kInRoot));
    if (!fd) {
      if (errno == ENOENT) continue;
      die(errno, "masked path %s", p.c_str());
    }
    struct stat st;
    if (::fstat(fd.get(), &st) < 0) die(errno, "stat masked path %s", p.c_str());
    const std::string at = fdpath(fd.get());
    int r;
    if (S_ISDIR(st.st_mode))
      r = ::mount("tmpfs", at.c_str(), "tmpfs", MS_RDONLY, nullptr);
    else  // the host's /dev/null, verified 1:3: never the image's
      r = ::mount(fdpath(g_dev_null).c_str(), at.c_str(), nullptr, MS_BIND, nullptr);
    if (r < 0) die(errno, "mask %s", p.c_str());
  }
  for (auto& p : c.fs.readonly_paths) {
    UniqueFd fd(openat2_in_root(rootfd, p, O_PATH, kInRoot));
    if (!fd) {
      if (errno == ENOENT) continue;
      die(errno, "readonly path %s", p.c_str());
    }
    const std::string at = fdpath(fd.get());
    if (::mount(at.c_str(), at.c_str(), nullptr, MS_BIND | MS_REC, nullptr) < 0)
      die(errno, "bind readonly path %s", p.c_str());
    fd.reset();
    fd.reset(openat2_in_root(rootfd, p, O_PATH, kInRoot));
    if (!fd || remount_bind(fdpath(fd.get()), MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC) < 0)
      die(errno, "remount %s read-only", p.c_str());
  }
}

void enter_root(int rootfd) {
  const ChildContext& c = *g_ctx;
  if (::fchdir(rootfd) < 0) die(errno, "chdir %s", c.fs.rootfs.c_str());
  if (c.fs.host_mounts) {
    // The runtime's mount namespace: pivot_root or a move onto / would
    // change the host's own root. A chroot, as runc without a mount ns.
    if (::chroot(".") < 0) die(errno, "chroot %s", c.fs.host_root.c_str());
  } else if (c.fs.no_pivot) {
    if (::mount(".", "/", nullptr, MS_MOVE, nullptr) < 0)
      die(errno, "move %s to /", c.fs.rootfs.c_str());
    if (::chroot(".") < 0) die(errno, "chroot %s", c.fs.rootfs.c_str());
  } else {
    int oldroot = ::open("/", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    if (oldroot < 0) die(errno, "open the old root");
    // Test-only (docs/reliability.md): pivot_root fails as it does on a
    // ramfs root (EINVAL), which cannot be set up on a test machine.
    if (fault_is("pivot-root-einval")) die(EINVAL, "pivot_root %s", c.fs.rootfs.c_str());
    if (::syscall(SYS_pivot_root, ".", ".") < 0) die(errno, "pivot_root %s", c.fs.rootfs.c_str());
    // The old root is now stacked on top of the new one. Step onto it
    // explicitly (mount(2) on "." would otherwise hit the new root), make
    // it rslave so the detach cannot propagate to the host, and detach it.
    if (::fchdir(oldroot) < 0) die(errno, "fchdir to the old root");
    ::close(oldroot);
    if (::mount(nullptr, ".", nullptr, MS_SLAVE | MS_REC, nullptr) < 0)
      die(errno, "make old root rslave");
    if (::umount2(".", MNT_DETACH) < 0) die(errno, "detach the old root");
  }
  if (::chdir("/") < 0) die(errno, "chdir /");
  // The configured propagation, on the container's root itself (runc does
  // it here too): before the pivot it was set on the host root's copy, and
  // the rootfs bind does not inherit "unbindable" from it.
  if (c.fs.rootfs_propagation & MS_SHARED) {
    if (::mount(nullptr, "/", nullptr, MS_SHARED | MS_REC, nullptr) < 0)
      die(errno, "make / rshared");
  } else if (c.fs.rootfs_propagation &&
             ::mount(nullptr, "/", nullptr, c.fs.rootfs_propagation, nullptr) < 0) {
    die(errno, "set the propagation of /");
  }
  if (c.fs.rootfs_readonly && remount_bind("/", MS_RDONLY) < 0) die(errno, "remount / read-only");
}

// The root skeleton, in our own mount namespace only (as bwrap makes its
// root): a tmpfs over skeleton_dir, nothing on the host's disk.
void make_skeleton() {
  const ChildContext& c = *g_ctx;
  if (::mount("tmpfs", c.fs.skeleton_dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=755") < 0)
    die(errno, "mount the root skeleton (tmpfs) on %s", c.fs.skeleton_dir.c_str());
  if (::mkdir(c.fs.rootfs.c_str(), 0755) < 0 || ::chmod(c.fs.rootfs.c_str(), 0755) < 0)
    die(errno, "create %s", c.fs.rootfs.c_str());
  for (const auto& [path, mode] : c.fs.skeleton_files) {
    if (S_ISDIR(mode)) {
      if (::mkdir(path.c_str(), 0700) < 0 || ::chmod(path.c_str(), mode & 07777) < 0)
        die(errno, "create %s", path.c_str());
      continue;
    }
    UniqueFd fd(::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd || ::fchmod(fd.get(), mode) < 0) die(errno, "create %s", path.c_str());
  }
  for (const auto& [name, target] : c.fs.skeleton_links) {
    std::string at = c.fs.rootfs + "/" + name;
    if (::symlink(target.c_str(), at.c_str()) < 0) die(errno, "symlink %s", at.c_str());
  }
}

}  // namespace comet::runtime::child
