// The container child, from clone(2) to execve(2). Single-threaded and
// noexcept: every failure is sent to the parent as kError and ends in
// _exit(1). Order follows sync.hpp's diagram; seccomp is loaded last.
#include "comet/lifecycle/child.hpp"
#include "comet/base/fault.hpp"
#include "comet/base/openat2.hpp"
#include "comet/lifecycle/confine.hpp"
#include "comet/reporting/fswatch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/keyctl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "comet/base/sys.hpp"
#include "comet/lifecycle/hooks.hpp"
#include "comet/lifecycle/sync.hpp"
#include "comet/lifecycle/trampoline.hpp"

namespace comet::runtime {
namespace {
struct linux_dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[256];  // NUL-terminated within d_reclen
};
}  // namespace
namespace {

const ChildContext* g_ctx = nullptr;
std::string g_state;  // hookstate.json, read after kHooksDone
int g_dev_null = -1;
std::vector<std::string> g_env;  // process.env plus HOME when missing

// The user's home from the container's /etc/passwd, "/" when unknown.
std::string home_of(uint32_t uid) {
  auto text = read_file("/etc/passwd");
  if (!text.ok()) return "/";
  for (auto& line : split(*text, '\n')) {
    auto f = split(line, ':');
    if (f.size() >= 6 && f[2] == std::to_string(uid)) return f[5].empty() ? "/" : f[5];
  }
  return "/";
}  // /dev/null of our (new) mount namespace, verified

[[noreturn]] void die(int err, const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));
[[noreturn]] void die(int err, const char* fmt, ...) noexcept {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (g_ctx && g_ctx->sync_fd >= 0 && send_msg(g_ctx->sync_fd, MsgType::kError, err, 0, buf) == 0) {
    ::_exit(1);
  }
  // No parent to tell (after `create` exited): the container's stderr.
  char line[2200];
  int n = std::snprintf(line, sizeof line, "comet-runtime: %s%s%s\n", buf, err ? ": " : "",
                        err ? std::strerror(err) : "");
  ssize_t w = ::write(2, line, static_cast<size_t>(n));
  (void)w;
  ::_exit(1);
}

void expect(MsgType t) noexcept {
  Msg m;
  int r = recv_msg(g_ctx->sync_fd, &m);
  if (r || m.type != t) ::_exit(1);  // parent gone or confused: nothing to report to
}

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

constexpr unsigned long long kInRoot = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;

// Open (creating if missing) a mount target inside the rootfs. Each missing
// component is made with mkdirat/openat relative to a parent resolved in the
// root, so no symlink can move the target outside it.
// A dangling symlink on the way is followed inside the root and its target
// created, as runc does (the image's /evil -> /tmp/x makes rootfs/tmp/x).
int ensure_target(int rootfd, const std::string& dest, bool dir, int depth = 0) {
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

// Bind-remount with flags; in a user namespace the source's locked flags
// must be kept or the kernel answers EPERM.
int remount_bind(const std::string& path, unsigned long flags) {
  if (::mount(nullptr, path.c_str(), nullptr, MS_REMOUNT | MS_BIND | flags, nullptr) == 0) return 0;
  if (errno != EPERM) return -1;
  unsigned long locked =
      locked_flags(path.c_str()) & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY);
  return ::mount(nullptr, path.c_str(), nullptr, MS_REMOUNT | MS_BIND | flags | locked, nullptr);
}

void apply_propagation_and_attrs(int rootfd, const MountOp& op) {
  if (!op.opt.propagation && !op.opt.rec_attr_set && !op.opt.rec_attr_clr) return;
  int fd = openat2_in_root(rootfd, op.dest, O_PATH, kInRoot);
  if (fd < 0) die(errno, "open mount %s", op.dest.c_str());
  if (op.opt.propagation &&
      ::mount(nullptr, fdpath(fd).c_str(), nullptr, op.opt.propagation, nullptr) < 0)
    die(errno, "set propagation of %s", op.dest.c_str());
  if (op.opt.rec_attr_set || op.opt.rec_attr_clr) {
    struct mount_attr attr = {};
    attr.attr_set = op.opt.rec_attr_set;
    attr.attr_clr = op.opt.rec_attr_clr;
    if (op.opt.rec_attr_set & MOUNT_ATTR__ATIME) attr.attr_clr |= MOUNT_ATTR__ATIME;
    if (::syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
      die(errno, "mount_setattr %s", op.dest.c_str());
  }
  ::close(fd);
}

void mount_bind(int rootfd, const MountOp& op) {
  struct stat st;
  if (::stat(op.source.c_str(), &st) < 0) die(errno, "bind mount source %s", op.source.c_str());
  int fd = ensure_target(rootfd, op.dest, S_ISDIR(st.st_mode));
  if (fd < 0) die(errno, "mount target %s", op.dest.c_str());
  unsigned long f = MS_BIND | (op.opt.recursive_bind ? MS_REC : 0);
  if (::mount(op.source.c_str(), fdpath(fd).c_str(), nullptr, f, nullptr) < 0)
    die(errno, "bind mount %s on %s", op.source.c_str(), op.dest.c_str());
  ::close(fd);
  unsigned long extra = op.opt.flags & ~(MS_REMOUNT);
  if (extra) {
    fd = openat2_in_root(rootfd, op.dest, O_PATH, kInRoot);
    if (fd < 0 || remount_bind(fdpath(fd), extra) < 0)
      die(errno, "remount %s with flags", op.dest.c_str());
    ::close(fd);
  }
  apply_propagation_and_attrs(rootfd, op);
}

void mount_cgroups(int rootfd, const MountOp& op) {
  const ChildContext& c = *g_ctx;
  int fd = ensure_target(rootfd, op.dest, true);
  if (fd < 0) die(errno, "mount target %s", op.dest.c_str());
  unsigned long flags = op.opt.flags;
  if (c.cgroups.v2_only) {
    int r = c.cgroupns ? ::mount("cgroup2", fdpath(fd).c_str(), "cgroup2", flags, nullptr)
                       : ::mount(c.cgroups.hierarchies[0].dir.c_str(), fdpath(fd).c_str(), nullptr,
                                 MS_BIND | MS_REC, nullptr);
    if (r < 0) die(errno, "mount cgroup2 on %s", op.dest.c_str());
    ::close(fd);
    if (!c.cgroupns && flags) {
      fd = openat2_in_root(rootfd, op.dest, O_PATH, kInRoot);
      if (fd < 0 || remount_bind(fdpath(fd), flags) < 0) die(errno, "remount %s", op.dest.c_str());
      ::close(fd);
    }
    return;
  }
  // v1 and hybrid: a tmpfs with one directory per hierarchy.
  if (::mount("tmpfs", fdpath(fd).c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755") <
      0)
    die(errno, "mount tmpfs on %s", op.dest.c_str());
  ::close(fd);
  for (const auto& h : c.cgroups.hierarchies) {
    std::string name = h.mountpoint.substr(h.mountpoint.rfind('/') + 1);
    std::string sub = op.dest + "/" + name;
    int sfd = ensure_target(rootfd, sub, true);
    if (sfd < 0) die(errno, "mkdir %s", sub.c_str());
    int r;
    if (c.cgroupns) {
      std::string data;
      for (auto& ctl : h.controllers) data += (data.empty() ? "" : ",") + ctl;
      if (h.v2)
        r = ::mount("cgroup2", fdpath(sfd).c_str(), "cgroup2", flags, nullptr);
      else
        r = ::mount("cgroup", fdpath(sfd).c_str(), "cgroup", flags, data.c_str());
    } else {
      r = ::mount(h.dir.c_str(), fdpath(sfd).c_str(), nullptr, MS_BIND, nullptr);
      if (r == 0 && flags) {
        ::close(sfd);
        sfd = openat2_in_root(rootfd, sub, O_PATH, kInRoot);
        r = sfd < 0 ? -1 : remount_bind(fdpath(sfd), flags);
      }
    }
    if (r < 0) die(errno, "mount cgroup %s on %s", name.c_str(), sub.c_str());
    ::close(sfd);
  }
  if (flags & MS_RDONLY) {
    fd = openat2_in_root(rootfd, op.dest, O_PATH, kInRoot);
    if (fd < 0 ||
        ::mount(nullptr, fdpath(fd).c_str(), nullptr,
                MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755") < 0)
      die(errno, "remount %s read-only", op.dest.c_str());
    ::close(fd);
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

void do_mount(int rootfd, const MountOp& op) {
  if (op.opt.bind) return mount_bind(rootfd, op);
  if (op.cgroup) return mount_cgroups(rootfd, op);
  int fd = ensure_target(rootfd, op.dest, true);
  if (fd < 0) die(errno, "mount target %s", op.dest.c_str());
  // tmpcopyup: the directory's current contents are copied onto the new
  // tmpfs (podman puts it on every --tmpfs). Keep a handle on what the
  // mount will cover.
  int under = -1;
  if (op.opt.tmpcopyup) {
    if (op.type != "tmpfs") die(0, "mount %s: tmpcopyup needs a tmpfs", op.dest.c_str());
    under = openat2_in_root(rootfd, op.dest, O_RDONLY | O_DIRECTORY, kInRoot);
    if (under < 0) die(errno, "open %s for tmpcopyup", op.dest.c_str());
  }
  const char* data = op.opt.data.empty() ? nullptr : op.opt.data.c_str();
  int r = ::mount(op.source.c_str(), fdpath(fd).c_str(), op.type.c_str(), op.opt.flags, data);
  if (r < 0 && errno == EPERM && op.type == "sysfs") {
    // sysfs of a network namespace we do not own: bind the host's, read-only.
    r = ::mount("/sys", fdpath(fd).c_str(), nullptr, MS_BIND | MS_REC, nullptr);
    if (r == 0) r = remount_bind(fdpath(fd), op.opt.flags | MS_RDONLY);
  }
  if (r < 0) die(errno, "mount %s (%s) on %s", op.source.c_str(), op.type.c_str(), op.dest.c_str());
  ::close(fd);
  if (under >= 0) {
    int top = openat2_in_root(rootfd, op.dest, O_RDONLY | O_DIRECTORY, kInRoot);
    if (top < 0) die(errno, "open the new tmpfs on %s", op.dest.c_str());
    struct stat st;
    if (::fstat(under, &st) == 0) {
      (void)::fchmod(top, st.st_mode & 07777);
      (void)::fchown(top, st.st_uid, st.st_gid);
    }
    if (int e = copy_tree(under, top)) die(e, "tmpcopyup %s", op.dest.c_str());
    ::close(top);
    ::close(under);
  }
  apply_propagation_and_attrs(rootfd, op);
}

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
  int pfd = ensure_target(rootfd, parent.empty() ? "/" : parent, true);
  if (pfd < 0) die(errno, "device directory %s", parent.c_str());
  int dfd = ::openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // O_PATH cannot mknodat
  ::close(pfd);
  if (dfd < 0) die(errno, "open %s", parent.c_str());
  if (g_ctx->userns) {
    // mknod is not allowed in a user namespace: bind the host's node.
    int t = ::openat(dfd, name.c_str(), O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (t < 0 && errno != EEXIST) die(errno, "create %s", path.c_str());
    if (t >= 0) ::close(t);
    int target = openat2_in_root(rootfd, path, O_PATH, kInRoot | RESOLVE_NO_SYMLINKS);
    if (target < 0) die(errno, "open %s", path.c_str());
    if (::mount(path.c_str(), fdpath(target).c_str(), nullptr, MS_BIND, nullptr) < 0)
      die(errno, "bind device %s", path.c_str());
    ::close(target);
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
  ::close(dfd);
}

void setup_dev(int rootfd) {
  const ChildContext& c = *g_ctx;
  if (c.dev_is_tmpfs) {
    for (auto& d : kDefaultDevs)
      make_device(rootfd, std::string("/dev/") + d.name, 'c', d.maj, d.min, 0666, 0, 0);
    int devfd = openat2_in_root(rootfd, "/dev", O_RDONLY | O_DIRECTORY, kInRoot);
    if (devfd < 0) die(errno, "open /dev");
    struct {
      const char* target;
      const char* name;
    } links[] = {{"/proc/self/fd", "fd"},       {"/proc/self/fd/0", "stdin"},
                 {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"},
                 {"pts/ptmx", "ptmx"},          {"/proc/kcore", "core"}};
    for (auto& l : links) {
      if (std::strcmp(l.name, "core") == 0 && ::access("/proc/kcore", F_OK) != 0) continue;
      if (::symlinkat(l.target, devfd, l.name) < 0 && errno != EEXIST)
        die(errno, "symlink /dev/%s", l.name);
    }
    ::close(devfd);
  }
  for (auto& d : c.devices) {
    make_device(rootfd, d.path, d.type[0] == 'u' ? 'c' : d.type[0], static_cast<unsigned>(d.major),
                static_cast<unsigned>(d.minor), d.file_mode.value_or(0666), d.uid.value_or(0),
                d.gid.value_or(0));
  }
}

// One fd (and fd2 unless -1) over a unix socket (SCM_RIGHTS) with PAYLOAD
// as the data; dies on error. Closes the fds and the socket.
void send_fd(int sock, int fd, std::string_view payload, const char* what, int fd2 = -1) {
  std::string data(payload);
  struct iovec iov = {data.data(), data.size()};
  const int fds[2] = {fd, fd2};
  const std::size_t n = fd2 >= 0 ? 2 : 1;
  char cbuf[CMSG_SPACE(sizeof fds)] = {};
  struct msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cbuf;
  mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
  struct cmsghdr* cm = CMSG_FIRSTHDR(&mh);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(n * sizeof(int));
  std::memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
  if (::sendmsg(sock, &mh, MSG_NOSIGNAL) < 0) die(errno, "send %s", what);
  ::close(fd);
  if (fd2 >= 0) ::close(fd2);
  ::close(sock);
}

// The lock-down listener (and the root for fs events) to the reporter, as
// fd numbers: it takes them with pidfd_getfd, knowing this process by the
// SCM_CREDENTIALS the kernel adds (its end has SO_PASSCRED), and answers
// one byte once it has them. Not SCM_RIGHTS: sendmsg may be a call the
// lock-down just loaded notifies (the unix-socket rule, unix_rule.hpp), and
// no one could answer it before the reporter has the listener. send() is
// sendto with no address, which never notifies. Dies on error.
void hand_over_fds(int sock, int fd, int fd2) {
  char data[32];
  const int n = std::snprintf(data, sizeof data, "%d %d", fd, fd2);
  if (::send(sock, data, static_cast<size_t>(n), MSG_NOSIGNAL) < 0)
    die(errno, "send the lock-down listener fd");
  char ack = 0;
  ssize_t got;
  do {
    got = ::recv(sock, &ack, 1, 0);
  } while (got < 0 && errno == EINTR);
  if (got != 1 || ack != 'a')
    die(got < 0 ? errno : EPIPE, "the reporter took no lock-down listener");
  ::close(fd);
  if (fd2 >= 0) ::close(fd2);
  ::close(sock);
}

// Hand the pty master to --console-socket, named as runc names it.
void send_pty_master(int master) {
  send_fd(g_ctx->console_sock_fd, master, "/dev/ptmx", "the pty master to the console socket");
}

// The pty: opened from the container's own devpts, its peer bound on
// /dev/console (verified to be a plain file we made, never a symlink), the
// master sent to --console-socket.
int setup_console(int rootfd) {
  const ChildContext& c = *g_ctx;
  int master = openat2_in_root(rootfd, "/dev/pts/ptmx", O_RDWR | O_NOCTTY, kInRoot);
  if (master < 0) master = openat2_in_root(rootfd, "/dev/ptmx", O_RDWR | O_NOCTTY, kInRoot);
  if (master < 0) die(errno, "open the container's /dev/ptmx");
  int unlock = 0;
  if (::ioctl(master, TIOCSPTLCK, &unlock) < 0) die(errno, "unlockpt");
  int slave = ::ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) die(errno, "open the pty peer");
  if (c.has_console_size) {
    struct winsize ws = {};
    ws.ws_row = static_cast<unsigned short>(c.console_size.height);
    ws.ws_col = static_cast<unsigned short>(c.console_size.width);
    if (::ioctl(slave, TIOCSWINSZ, &ws) < 0) die(errno, "set console size");
  }
  int devfd = openat2_in_root(rootfd, "/dev", O_RDONLY | O_DIRECTORY, kInRoot);
  if (devfd >= 0) {
    int t = ::openat(devfd, "console", O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (t >= 0) ::close(t);
    ::close(devfd);
  }
  int target = openat2_in_root(rootfd, "/dev/console", O_PATH, kInRoot | RESOLVE_NO_SYMLINKS);
  if (target < 0) die(errno, "open /dev/console");
  struct stat st;
  if (::fstat(target, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)))
    die(EINVAL, "/dev/console in the rootfs is not a file or char device");
  if (::mount(fdpath(slave).c_str(), fdpath(target).c_str(), nullptr, MS_BIND, nullptr) < 0)
    die(errno, "bind the pty on /dev/console");
  ::close(target);

  send_pty_master(master);
  return slave;
}

void mask_paths(int rootfd) {
  const ChildContext& c = *g_ctx;
  for (auto& p : c.masked_paths) {
    int fd = openat2_in_root(rootfd, p, O_PATH, kInRoot);
    if (fd < 0) {
      if (errno == ENOENT) continue;
      die(errno, "masked path %s", p.c_str());
    }
    struct stat st;
    if (::fstat(fd, &st) < 0) die(errno, "stat masked path %s", p.c_str());
    int r;
    if (S_ISDIR(st.st_mode))
      r = ::mount("tmpfs", fdpath(fd).c_str(), "tmpfs", MS_RDONLY, nullptr);
    else  // the host's /dev/null, verified 1:3: never the image's
      r = ::mount(fdpath(g_dev_null).c_str(), fdpath(fd).c_str(), nullptr, MS_BIND, nullptr);
    if (r < 0) die(errno, "mask %s", p.c_str());
    ::close(fd);
  }
  for (auto& p : c.readonly_paths) {
    int fd = openat2_in_root(rootfd, p, O_PATH, kInRoot);
    if (fd < 0) {
      if (errno == ENOENT) continue;
      die(errno, "readonly path %s", p.c_str());
    }
    if (::mount(fdpath(fd).c_str(), fdpath(fd).c_str(), nullptr, MS_BIND | MS_REC, nullptr) < 0)
      die(errno, "bind readonly path %s", p.c_str());
    ::close(fd);
    fd = openat2_in_root(rootfd, p, O_PATH, kInRoot);
    if (fd < 0 || remount_bind(fdpath(fd), MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC) < 0)
      die(errno, "remount %s read-only", p.c_str());
    ::close(fd);
  }
}

void enter_root(int rootfd) {
  const ChildContext& c = *g_ctx;
  if (::fchdir(rootfd) < 0) die(errno, "chdir %s", c.rootfs.c_str());
  if (c.no_pivot) {
    if (::mount(".", "/", nullptr, MS_MOVE, nullptr) < 0)
      die(errno, "move %s to /", c.rootfs.c_str());
    if (::chroot(".") < 0) die(errno, "chroot %s", c.rootfs.c_str());
  } else {
    int oldroot = ::open("/", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    if (oldroot < 0) die(errno, "open the old root");
    // Test-only (docs/reliability.md): pivot_root fails as it does on a
    // ramfs root (EINVAL), which cannot be set up on a test machine.
    if (fault_is("pivot-root-einval")) die(EINVAL, "pivot_root %s", c.rootfs.c_str());
    if (::syscall(SYS_pivot_root, ".", ".") < 0) die(errno, "pivot_root %s", c.rootfs.c_str());
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
  if (c.rootfs_propagation & MS_SHARED) {
    if (::mount(nullptr, "/", nullptr, MS_SHARED | MS_REC, nullptr) < 0)
      die(errno, "make / rshared");
  }
  if (c.rootfs_readonly && remount_bind("/", MS_RDONLY) < 0) die(errno, "remount / read-only");
}

// Read-deny verification (confine.hpp): from inside, with the final mounts,
// before anything of the workload runs. A denied path must be missing, empty
// or refuse to open; a read-only path must be on a read-only mount. Else the
// create fails naming the path: the plan and the kernel disagree.
void verify_confinement() {
  const ChildContext& c = *g_ctx;
  for (const auto& p : c.verify_readonly) {
    struct statvfs sv;
    if (::statvfs(p.c_str(), &sv) < 0) {
      if (errno == ENOENT) continue;
      die(errno, "read-deny verification: statvfs %s", p.c_str());
    }
    if (!(sv.f_flag & ST_RDONLY))
      die(EPERM, "read-deny verification: %s is writable, but the policy makes it read-only",
          p.c_str());
  }
  for (const auto& p : c.verify_unreadable) {
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) continue;  // missing or refused: what the policy wants
    struct stat st;
    bool readable = false;
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      char buf[1024];
      long n;
      while (!readable && (n = ::syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n;) {
          auto* d = reinterpret_cast<struct linux_dirent64*>(buf + off);
          if (std::strcmp(d->d_name, ".") != 0 && std::strcmp(d->d_name, "..") != 0)
            readable = true;
          off += d->d_reclen;
        }
      }
    } else {
      char b;
      readable = ::read(fd, &b, 1) == 1;
    }
    ::close(fd);
    if (readable)
      die(EPERM, "read-deny verification: %s is readable, but the policy denies it", p.c_str());
  }
}

void write_sysctls() {
  const ChildContext& c = *g_ctx;
  for (auto& [key, value] : c.sysctl) {
    std::string rel = "sys/" + key;
    if (key.find('/') == std::string::npos)
      for (auto& ch : rel)
        if (ch == '.') ch = '/';
    // Through the host's verified procfs, no symlinks, no mount crossings:
    // the kernel picks the namespace from the writer, which is us.
    int fd = openat2_in_root(
        c.proc_fd, rel, O_WRONLY,
        RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV | RESOLVE_BENEATH);
    if (fd < 0) die(errno, "sysctl %s: open /proc/%s", key.c_str(), rel.c_str());
    if (::write(fd, value.data(), value.size()) < 0)
      die(errno, "sysctl %s=%s", key.c_str(), value.c_str());
    ::close(fd);
  }
}

// The last step: execveat the sealed trampoline, which execs EXE. Nothing in
// the container ever execs the runtime's own binary (CVE-2019-5736). A
// seccomp profile that refuses execveat fails here, closed.
[[noreturn]] void exec_final(const std::string& exe, std::vector<char*>& argv,
                             std::vector<char*>& envp) {
  int e = exec_via_trampoline(g_ctx->trampoline_fd, exe.c_str(), argv.data(), envp.data());
  die(e, "exec %s through the sealed trampoline (the seccomp profile must allow execveat)",
      exe.c_str());
}

std::string lower_strerror(int e) {
  std::string s = std::strerror(e);
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

std::string find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    struct stat st;
    if (::stat(name.c_str(), &st) < 0)
      die(0, "exec: \"%s\": %s", name.c_str(), lower_strerror(errno).c_str());
    if (S_ISDIR(st.st_mode)) die(0, "exec: \"%s\": is a directory", name.c_str());
    if (::access(name.c_str(), X_OK) < 0)
      die(0, "exec: \"%s\": %s", name.c_str(), lower_strerror(errno).c_str());
    return name;
  }
  std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (auto& e : g_env)
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  for (auto& dir : split(path, ':')) {
    std::string cand = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st;
    if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(cand.c_str(), X_OK) == 0)
      return cand;
  }
  die(0, "exec: \"%s\": executable file not found in $PATH", name.c_str());
}

int capset_raw(uint64_t eff, uint64_t prm, uint64_t inh) {
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2] = {};
  d[0].effective = static_cast<uint32_t>(eff);
  d[1].effective = static_cast<uint32_t>(eff >> 32);
  d[0].permitted = static_cast<uint32_t>(prm);
  d[1].permitted = static_cast<uint32_t>(prm >> 32);
  d[0].inheritable = static_cast<uint32_t>(inh);
  d[1].inheritable = static_cast<uint32_t>(inh >> 32);
  return static_cast<int>(::syscall(SYS_capset, &hdr, d));
}

int last_cap() {
  static int v = -1;
  if (v < 0) {
    int fd = ::open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
    char buf[16] = {};
    if (fd >= 0 && ::read(fd, buf, sizeof buf - 1) > 0) v = std::atoi(buf);
    if (fd >= 0) ::close(fd);
    if (v <= 0) v = 40;
  }
  return v;
}

// Identity and capabilities. Returns whether CAP_SYS_ADMIN was kept in the
// effective set only so that seccomp can be loaded without no_new_privs.
bool set_identity(bool keep_sys_admin) {
  const ChildContext& c = *g_ctx;
  int lc = last_cap();
  if (c.has_caps) {
    for (int cap = 0; cap <= lc; cap++) {
      if (!(c.caps.bounding & (1ULL << cap)) && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
          errno != EINVAL)
        die(errno, "drop capability %d from the bounding set", cap);
    }
  }
  if (::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0) die(errno, "prctl(PR_SET_KEEPCAPS)");
  if (::setgroups(c.additional_gids.size(), c.additional_gids.data()) < 0 &&
      !(errno == EPERM && c.userns && c.additional_gids.empty()))
    die(errno, "setgroups");
  if (::setresgid(c.gid, c.gid, c.gid) < 0) die(errno, "setresgid %u", c.gid);
  if (::setresuid(c.uid, c.uid, c.uid) < 0) die(errno, "setresuid %u", c.uid);
  if (::prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0) die(errno, "prctl(PR_SET_KEEPCAPS, 0)");
  uint64_t eff, prm, inh;
  if (c.has_caps) {
    eff = c.caps.effective;
    prm = c.caps.permitted;
    inh = c.caps.inheritable;
  } else {
    // No capabilities block: keep what we hold (as runc), never inheritable.
    eff = prm = (lc >= 63 ? ~0ULL : ((1ULL << (lc + 1)) - 1));
    if (c.uid != 0) eff = prm = 0;
    inh = 0;
  }
  constexpr uint64_t kSysAdmin = 1ULL << CAP_SYS_ADMIN;
  bool kept = keep_sys_admin && !(eff & kSysAdmin);
  if (capset_raw(eff | (kept ? kSysAdmin : 0), prm | (kept ? kSysAdmin : 0), inh) < 0)
    die(errno, "capset");
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    die(errno, "clear ambient capabilities");
  for (int cap = 0; cap <= lc; cap++) {
    // The kernel allows an ambient cap only if it is permitted and
    // inheritable; runc skips the others, and so do we.
    if ((c.caps.ambient & (1ULL << cap)) && (prm & inh & (1ULL << cap)) &&
        ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0)
      die(errno, "raise ambient capability %d", cap);
  }
  return kept;
}

void send_listener_fd(int listener) {
  const ChildContext& c = *g_ctx;
  // runtime-spec: the state with "fds":["seccompFd"], the fd as SCM_RIGHTS.
  std::string payload = g_state;
  if (!payload.empty() && payload.back() == '}')
    payload.insert(payload.size() - 1, ",\"fds\":[\"seccompFd\"],\"metadata\":\"\"");
  std::string what = "the seccomp listener fd to " + c.seccomp.listener_path;
  send_fd(c.seccomp_listener_sock, listener, payload, what.c_str());
}

void load_seccomp() {
  const ChildContext& c = *g_ctx;
  int listener = -1;
  int r = fault_fail("seccomp-load-einval", EINVAL) ? EINVAL : seccomp::load(c.seccomp, &listener);
  if (r) die(r, "load seccomp filter");
  if (c.seccomp.needs_listener) send_listener_fd(listener);
}

// The confinement layers (confine.hpp), just before the base filter: Landlock
// (its syscalls are still allowed), then the lock-down filter, which is
// default-allow and only takes away (so the base filter can still be loaded
// after it, and wins ties as the most recent). Fail closed: any error is fatal.
void apply_confinement() {
  const ChildContext& c = *g_ctx;
  const char* failed = nullptr;
  if (int r = apply_landlock(c, &failed))
    die(r, "landlock exec lock%s%s", failed ? ": " : "", failed ? failed : "");
  if (c.has_lockdown) {
    int listener = -1;
    if (int r = seccomp::load(c.lockdown, &listener)) die(r, "load the lock-down seccomp filter");
    // A reporting lock-down (rules that notify): its listener goes to the
    // runtime's reporter, with the container state, as an OCI seccomp agent
    // would get it; then it is closed here, so the agent never holds it.
    // With fs events it also gets the container's root (O_PATH), to see
    // where a failed path led in the agent's own mount tree.
    if (c.lockdown.needs_listener) {
      int root = -1;
      if (c.fs_arm_marker) {
        root = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0) die(errno, "open / for the reporter");
        (void)::access(kFsArmMarker, F_OK);  // fswatch.hpp
      }
      hand_over_fds(c.lockdown_listener_sock, listener, root);
    }
  }
}

// The last steps of a container process: confinement, filters, exec. In the
// init itself, in the agent it starts (own_init), and in an `exec`'d process.
struct AgentTail {
  const std::string& exe;
  bool early_seccomp, kept_admin;
  pid_t init;  // own_init: the init that must be the agent's parent
};

[[noreturn]] void agent_tail(const AgentTail& t) noexcept {
  const ChildContext& ctx = *g_ctx;
  const std::string& exe = t.exe;
  const bool early_seccomp = t.early_seccomp, kept_admin = t.kept_admin;
  // Nothing of ours crosses execve: every fd above the preserved ones closes.
  for (int fd = 3; fd < 3 + ctx.preserve_fds; fd++) {
    int fl = ::fcntl(fd, F_GETFD);
    if (fl >= 0) ::fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC);
  }
  if (::syscall(SYS_close_range, 3 + ctx.preserve_fds, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
    die(errno, "close_range");
  apply_confinement();
  if (ctx.has_seccomp && !early_seccomp) load_seccomp();
  if (kept_admin) {
    // Drop the CAP_SYS_ADMIN kept only to load the filter; fail closed.
    if (capset_raw(ctx.caps.effective, ctx.caps.permitted, ctx.caps.inheritable) < 0)
      die(errno, "capset after seccomp");
  }
  std::vector<char*> argv, envp;
  std::vector<std::string> args = ctx.args, env = g_env;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  exec_final(exe, argv, envp);
}

// The agent under its init: the init's death (delete, the engine) takes it
// too, also where the pid namespace is shared and that kills no one.
int agent_entry(void* arg) noexcept {
  const AgentTail& t = *static_cast<const AgentTail*>(arg);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (::getppid() != t.init) ::_exit(1);
  ::close(g_ctx->events_fd);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  agent_tail(t);
}

// A pack's own PID 1 (ChildContext::own_init). The agent is started the way
// posix_spawn does it: clone(CLONE_VM | CLONE_VFORK) on a stack of its own,
// so it shares this process's memory until its exec (no page table to copy,
// no copy-on-write fault on its way to the agent: ~1 ms on a VM where a
// fault costs 11-14 us), while this process waits. It then goes on as the
// init: it execs the trampoline as "comet-init" (trampoline.c), which
// reaps, forwards signals and exits with the agent's status or 3. The
// agent is started before its filters are loaded (the exec lock refuses
// fork); the init never gets them, so it runs nothing but the trampoline's
// few syscalls, not dumpable, from the sealed memfd. Every signal is
// blocked from here: the init takes them from a signalfd, the agent gets
// an empty mask. Sanitizer builds fork instead (ASan cannot follow a
// CLONE_VM child on a stack it did not make).
// g++ says __SANITIZE_ADDRESS__, clang only __has_feature(address_sanitizer)
#if defined(__SANITIZE_ADDRESS__)
#define COMET_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COMET_ASAN 1
#endif
#endif
[[noreturn]] void start_agent_under_init(AgentTail& t) noexcept {
  const ChildContext& c = *g_ctx;
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  ::signal(SIGCHLD, SIG_DFL);  // ignored (inherited), the agent would be reaped unseen
  t.init = ::getpid();
  // The git rule: the init makes the agent's naming calls (create_rule.hpp)
  // under the same Landlock rules, in a domain the agent's nests in (so
  // that it may open the agent's /proc/PID/fd/N for it).
  if (c.create_sock >= 0) {
    const char* failed = nullptr;
    if (int r = apply_landlock(c, &failed))
      die(r, "landlock for the init%s%s", failed ? ": " : "", failed ? failed : "");
  }
#if defined(COMET_ASAN)
  const pid_t agent = ::fork();
  if (agent == 0) {
    (void)agent_entry(&t);
    ::_exit(127);
  }
#else
  constexpr size_t kStack = 1 << 20;  // untouched pages cost nothing
  void* stack = ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) die(errno, "map a stack for the agent");
  const pid_t agent = ::clone(agent_entry, static_cast<char*>(stack) + kStack,
                              CLONE_VM | CLONE_VFORK | SIGCHLD, &t);
#endif
  if (agent < 0) die(errno, "start the agent under the container's init");
  // The capability kept only to load the agent's filter is not the init's.
  if (t.kept_admin) (void)capset_raw(c.caps.effective, c.caps.permitted, c.caps.inheritable);
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // Nothing of the runtime's crosses the exec but the events file, and of
  // the container's only stderr (the init says there why it exits 3 when
  // the reporter does not answer).
  ::syscall(SYS_close_range, 0, ~0U, CLOSE_RANGE_CLOEXEC);
  if (int fl = ::fcntl(2, F_GETFD); fl >= 0) ::fcntl(2, F_SETFD, fl & ~FD_CLOEXEC);
  int ev = c.events_fd >= 0 ? ::fcntl(c.events_fd, F_DUPFD, 3) : -1;
  // The reporter's socket, for the fs events barrier (trampoline.c).
  int rep = c.init_reporter_barrier && c.lockdown_listener_sock >= 0
                ? ::fcntl(c.lockdown_listener_sock, F_DUPFD, 3)
                : -1;
  char agent_s[16], ev_s[16], rep_s[16], create_s[16];
  std::snprintf(agent_s, sizeof agent_s, "%d", agent);
  std::snprintf(ev_s, sizeof ev_s, "%d", ev);
  std::snprintf(rep_s, sizeof rep_s, "%d", rep);
  char init_argv0[] = "comet-init", dns[] = "dns", none[] = "-";
  std::vector<char*> argv = {init_argv0, agent_s, ev_s, c.init_dns_barrier ? dns : none,
                             rep >= 0 ? rep_s : none};
  // The git rule: CREATE_FD, the sandbox's own tmpfs mounts (st_dev, where
  // a ".git" dies with it) and the workspace's git dirs (trampoline.c).
  std::string devs;
  std::vector<std::string> own = c.git_own;
  if (c.create_sock >= 0) {
    int cs = ::fcntl(c.create_sock, F_DUPFD, 3);
    if (cs < 0) die(errno, "keep the git rule's socket");
    std::snprintf(create_s, sizeof create_s, "%d", cs);
    for (const MountOp& m : c.mounts) {
      struct stat st;
      if (m.type == "tmpfs" && ::stat(m.dest.c_str(), &st) == 0)
        devs += (devs.empty() ? "" : ",") + std::to_string(static_cast<unsigned long>(st.st_dev));
    }
    if (devs.empty()) devs = "0";
    argv.push_back(create_s);
    argv.push_back(devs.data());
    for (auto& o : own) argv.push_back(o.data());
  }
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  ::syscall(SYS_execveat, c.trampoline_fd, "", argv.data(), envp, AT_EMPTY_PATH);
  // No init: the agent must not run unsupervised (its exit status would be lost).
  ::kill(agent, SIGKILL);
  ::_exit(127);
}

// The process's own set-up, the same in a container's init, a sandbox's
// init and an exec'd process: the cwd (inside the root: CVE-2024-21626),
// the environment (HOME when missing), the executable, the umask, the
// identity and no_new_privs. Returns the executable and whether
// CAP_SYS_ADMIN was kept only to load the filter (set_identity()).
struct Prologue {
  std::string exe;
  bool kept_admin;
};
Prologue process_prologue(const char* cwd_origin) {
  const ChildContext& ctx = *g_ctx;
  if (::chdir(ctx.cwd.c_str()) < 0)
    die(errno, "chdir to cwd (\"%s\")%s", ctx.cwd.c_str(), cwd_origin);
  char cwdbuf[4096];
  if (!::getcwd(cwdbuf, sizeof cwdbuf) || cwdbuf[0] != '/')
    die(ENOENT, "cwd \"%s\" is outside the container", ctx.cwd.c_str());
  g_env = ctx.env;
  if (std::none_of(g_env.begin(), g_env.end(), [](auto& e) { return e.rfind("HOME=", 0) == 0; }))
    g_env.push_back("HOME=" + home_of(ctx.uid));
  std::string exe = find_executable(ctx.args.empty() ? std::string() : ctx.args[0]);
  ::umask(ctx.umask >= 0 ? static_cast<mode_t>(ctx.umask) : 022);
  const bool nnp = ctx.no_new_privileges;
  const bool kept_admin = set_identity(ctx.has_seccomp && !nnp);
  if (nnp && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die(errno, "prctl(PR_SET_NO_NEW_PRIVS)");
  return {std::move(exe), kept_admin};
}

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

const char* ns_name(int flag) {
  switch (flag) {
    case CLONE_NEWUSER:
      return "user";
    case CLONE_NEWPID:
      return "pid";
    case CLONE_NEWNET:
      return "network";
    case CLONE_NEWNS:
      return "mount";
    case CLONE_NEWIPC:
      return "ipc";
    case CLONE_NEWUTS:
      return "uts";
    case CLONE_NEWCGROUP:
      return "cgroup";
    case CLONE_NEWTIME:
      return "time";
  }
  return "?";
}

// Stage 1 forks the process that lives in the container's pid namespace
// and tells the parent its pid. Both share the sync socket, so the child
// waits at a gate until that message is out: the parent must read kInitPid
// before anything the child sends. Returns 0 in the child; stage 1 exits.
pid_t fork_after_pid_message() {
  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) < 0) die(errno, "pipe");
  pid_t pid = ::fork();
  if (pid < 0) die(errno, "fork into the container's pid namespace");
  if (pid > 0) {
    send_msg(g_ctx->sync_fd, MsgType::kInitPid, 0, pid);
    ::_exit(0);  // closes gate[1]: the child goes on
  }
  ::close(gate[1]);
  char b;
  while (::read(gate[0], &b, 1) < 0 && errno == EINTR) {
  }
  ::close(gate[0]);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  return 0;
}

void join_namespaces() {
  for (auto& j : g_ctx->joins) {
    if (::setns(j.fd, j.clone_flag) < 0)
      die(errno, "join %s namespace %s", ns_name(j.clone_flag), j.path.c_str());
    ::close(j.fd);
  }
}

void write_time_offsets() {
  const ChildContext& c = *g_ctx;
  if (c.time_offsets.empty()) return;
  std::string text;
  for (auto& [clock, off] : c.time_offsets)
    text += clock + " " + std::to_string(off.secs) + " " + std::to_string(off.nanosecs) + "\n";
  std::string rel = std::to_string(::getpid()) + "/timens_offsets";
  int fd = openat2_in_root(c.proc_fd, rel, O_WRONLY, RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH);
  if (fd < 0 || ::write(fd, text.data(), text.size()) < 0) die(errno, "write timens_offsets");
  ::close(fd);
}

}  // namespace

[[noreturn]] void child_main(const ChildContext& ctx) noexcept {
  g_ctx = &ctx;
  // flock() belongs to the open file description we share with the parent.
  ::close(ctx.lock_fd);
  // Nobody in the container may open our /proc/PID/{exe,fd,mem} while we
  // still run the runtime's code (CVE-2019-5736 class).
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);

  if (ctx.slow_path) {
    /* sync 1: joins and new namespaces from stage 1 */
    join_namespaces();
    int unshare_flags = ctx.new_ns_flags & ~(CLONE_NEWPID | CLONE_NEWTIME | CLONE_NEWCGROUP);
    if (unshare_flags && ::unshare(unshare_flags) < 0) die(errno, "unshare namespaces");
    if (ctx.new_ns_flags & CLONE_NEWUSER) {
      send_msg(ctx.sync_fd, MsgType::kNeedMaps);
      expect(MsgType::kMapsDone);
      if (::setresuid(0, 0, 0) < 0 || ::setresgid(0, 0, 0) < 0)
        die(errno, "become root in the user namespace");
    }
  }
  /* sync 2: the parent has written the id maps and placed us in the cgroups */
  expect(MsgType::kGo);
  if (!ctx.slow_path && (ctx.new_ns_flags & CLONE_NEWUSER)) {
    if (::setresuid(0, 0, 0) < 0 || ::setresgid(0, 0, 0) < 0)
      die(errno, "become root in the user namespace");
  }
  if (ctx.slow_path) {
    int late = ctx.new_ns_flags & (CLONE_NEWPID | CLONE_NEWTIME);
    bool joined_pid = false;
    for (auto& j : ctx.joins) joined_pid |= j.clone_flag == CLONE_NEWPID;
    if (late && ::unshare(late) < 0) die(errno, "unshare pid/time namespace");
    if (late & CLONE_NEWTIME) write_time_offsets();
    if (late || joined_pid) {
      fork_after_pid_message();
    }
  }
  if (ctx.cgroupns && ::unshare(CLONE_NEWCGROUP) < 0) die(errno, "unshare cgroup namespace");

  int slave = -1;
  if (ctx.new_ns_flags & CLONE_NEWNS) {
    /* mounts, all resolved inside the rootfs */
    // rshared: start as rslave (pivot_root refuses a shared new root) and
    // add "shared" after the pivot, so the root is shared and still
    // receives the host's mounts.
    unsigned long prop = ctx.rootfs_propagation ? ctx.rootfs_propagation : (MS_SLAVE | MS_REC);
    if (prop & MS_SHARED) prop = MS_SLAVE | MS_REC;
    if (::mount(nullptr, "/", nullptr, prop, nullptr) < 0) die(errno, "set / propagation");
    // Non-recursive settings leave the rootfs's own mount as it was on the
    // host, maybe shared: make it private or pivot_root refuses it.
    if (!(prop & MS_REC)) {
      std::string parent = parent_mountpoint(ctx.rootfs);
      if (::mount(nullptr, parent.c_str(), nullptr, MS_PRIVATE, nullptr) < 0)
        die(errno, "make %s private", parent.c_str());
    }
    if (::mount(ctx.rootfs.c_str(), ctx.rootfs.c_str(), nullptr, MS_BIND | MS_REC, nullptr) < 0)
      die(errno, "bind rootfs %s", ctx.rootfs.c_str());
  }
  // Bind sources must live in our own mount namespace, so the masking
  // /dev/null is opened here (the host's, copied) and checked to be 1:3.
  g_dev_null = ::open("/dev/null", O_PATH | O_CLOEXEC);
  if (g_dev_null < 0) die(errno, "open /dev/null");
  struct stat nst;
  if (::fstat(g_dev_null, &nst) < 0) die(errno, "fstat /dev/null");
  if (!S_ISCHR(nst.st_mode) || nst.st_rdev != makedev(1, 3))
    die(0, "/dev/null is not the null device");
  int rootfd = ::open(ctx.rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) die(errno, "open rootfs %s", ctx.rootfs.c_str());
  if (ctx.new_ns_flags & CLONE_NEWNS) {
    for (auto& op : ctx.mounts) do_mount(rootfd, op);
    setup_dev(rootfd);
  }
  if (ctx.terminal) slave = setup_console(rootfd);

  /* sync 3: prestart and createRuntime hooks run in the parent */
  send_msg(ctx.sync_fd, fault_is("sync-out-of-order") ? MsgType::kReady : MsgType::kMountsDone);
  expect(MsgType::kHooksDone);
  if (auto st = read_file_at(ctx.state_dir_fd, "hookstate.json"); st.ok()) g_state = *st;
  if (!ctx.create_container_hooks.empty()) {
    Status st = run_hooks(ctx.create_container_hooks, "createContainer", g_state);
    if (!st.ok()) die(st.error().err(), "%s", st.error().message().c_str());
  }
  if (ctx.new_ns_flags & CLONE_NEWNS) {
    // runc creates a missing cwd; made here, inside the root, before masks.
    int cwdfd = ensure_target(rootfd, ctx.cwd, true);
    if (cwdfd >= 0) ::close(cwdfd);
    mask_paths(rootfd);
    enter_root(rootfd);
  } else if (::chroot(ctx.rootfs.c_str()) < 0 || ::chdir("/") < 0) {
    die(errno, "chroot %s", ctx.rootfs.c_str());
  }
  ::close(rootfd);
  verify_confinement();

  if (ctx.set_hostname && (fault_fail("sethostname-eperm", EPERM) ||
                           ::sethostname(ctx.hostname.data(), ctx.hostname.size()) < 0))
    die(errno, "sethostname %s", ctx.hostname.c_str());
  if (ctx.set_domainname && ::setdomainname(ctx.domainname.data(), ctx.domainname.size()) < 0)
    die(errno, "setdomainname %s", ctx.domainname.c_str());
  write_sysctls();
  for (auto& rl : ctx.rlimits)
    if (::setrlimit(rl.resource, &rl.value) < 0)
      die(errno, "error setting rlimit type %d", rl.resource);
  if (ctx.personality != 0xffffffff && ::personality(ctx.personality) < 0)
    die(errno, "personality");
  if (ctx.new_keyring &&
      ::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, ctx.keyring_name.c_str()) < 0 &&
      errno != ENOSYS && errno != EDQUOT && errno != EACCES)
    die(errno, "join session keyring");
  // A session of its own, with or without a terminal (as runc's init): the
  // caller's terminal is then not the container's controlling terminal, so
  // TIOCSTI into an inherited stdin needs CAP_SYS_ADMIN (tty_ioctl(4)).
  if (::setsid() < 0) die(errno, "setsid");
  if (slave >= 0) {
    if (::ioctl(slave, TIOCSCTTY, 0) < 0) die(errno, "set the controlling terminal");
    for (int fd = 0; fd < 3; fd++)
      if (::dup2(slave, fd) < 0) die(errno, "dup2 the pty");
    ::close(slave);
  }
  const auto [exe, kept_admin] = process_prologue(" set in config.json");
  // A notify listener must reach the caller before we block: load now.
  bool early_seccomp = ctx.has_seccomp && ctx.seccomp.needs_listener;
  if (early_seccomp) load_seccomp();

  /* sync 4: ready; wait for `start` to open the exec fifo */
  // From here we outlive `create`: no parent-death signal. Killed before
  // this point, the parent takes us with it; after it, delete --force
  // finds us through the cgroup.
  ::prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
  send_msg(ctx.sync_fd, MsgType::kReady);
  ::close(ctx.sync_fd);
  int fifo = ::openat(ctx.state_dir_fd, "exec.fifo", O_WRONLY | O_CLOEXEC);
  if (fifo < 0) die(errno, "open exec fifo");
  // Test-only (fault.hpp): the init dies as `start` opens the fifo, or
  // closes the fifo without a word and stays.
  if (fault_is("init-exit-at-start")) ::_exit(1);
  if (fault_is("init-close-fifo")) {
    ::close(fifo);
    ::sleep(30);
    ::_exit(1);
  }
  ::close(ctx.state_dir_fd);
  // `start` reads the fifo to EOF: "0" is success, anything else the error.
  if (!ctx.start_container_hooks.empty()) {
    std::string created = g_state;
    size_t pos = created.find("\"status\":\"creating\"");
    if (pos != std::string::npos) created.replace(pos, 19, "\"status\":\"created\"");
    Status st = run_hooks(ctx.start_container_hooks, "startContainer", created);
    if (!st.ok()) {
      std::string m = st.error().what();
      ssize_t w = ::write(fifo, m.data(), m.size());
      (void)w;
      ::_exit(1);
    }
  }
  if (::write(fifo, "0", 1) != 1) die(errno, "write exec fifo");
  ::close(fifo);
  AgentTail t{exe, early_seccomp, kept_admin, 0};
  if (ctx.own_init) start_agent_under_init(t);  // never returns: this process is the init
  agent_tail(t);
}

namespace {

// The root skeleton, in our own mount namespace only (as bwrap makes its
// root): a tmpfs over skeleton_dir, nothing on the host's disk.
void make_skeleton() {
  const ChildContext& c = *g_ctx;
  if (::mount("tmpfs", c.skeleton_dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=755") < 0)
    die(errno, "mount the root skeleton (tmpfs) on %s", c.skeleton_dir.c_str());
  if (::mkdir(c.rootfs.c_str(), 0755) < 0 || ::chmod(c.rootfs.c_str(), 0755) < 0)
    die(errno, "create %s", c.rootfs.c_str());
  for (const auto& [path, mode] : c.skeleton_files) {
    int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || ::fchmod(fd, mode) < 0) die(errno, "create %s", path.c_str());
    ::close(fd);
  }
  for (const auto& [name, target] : c.skeleton_links) {
    std::string at = c.rootfs + "/" + name;
    if (::symlink(target.c_str(), at.c_str()) < 0) die(errno, "symlink %s", at.c_str());
  }
}

// The parent is gone (the sync socket hung up): nothing may run unwatched.
void exit_if_orphaned() {
  struct pollfd p = {g_ctx->sync_fd, POLLRDHUP, 0};
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR))) ::_exit(1);
}

}  // namespace

[[noreturn]] void sandbox_child_main(const ChildContext& ctx) noexcept {
  g_ctx = &ctx;
  g_state = ctx.state_json;
  // As child_main: not dumpable while the runtime's code runs; dies with
  // the runtime. A parent that died before the prctl: kGo never comes.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  /* sync 2: the parent has placed us in the cgroups (if any) */
  expect(MsgType::kGo);
  if (ctx.cgroupns && ::unshare(CLONE_NEWCGROUP) < 0) die(errno, "unshare cgroup namespace");
  if (::mount(nullptr, "/", nullptr, MS_SLAVE | MS_REC, nullptr) < 0)
    die(errno, "set / propagation");
  make_skeleton();
  if (::mount(ctx.rootfs.c_str(), ctx.rootfs.c_str(), nullptr, MS_BIND | MS_REC, nullptr) < 0)
    die(errno, "bind rootfs %s", ctx.rootfs.c_str());
  g_dev_null = ::open("/dev/null", O_PATH | O_CLOEXEC);
  struct stat nst;
  if (g_dev_null < 0 || ::fstat(g_dev_null, &nst) < 0) die(errno, "open /dev/null");
  if (!S_ISCHR(nst.st_mode) || nst.st_rdev != makedev(1, 3))
    die(0, "/dev/null is not the null device");
  int rootfd = ::open(ctx.rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) die(errno, "open rootfs %s", ctx.rootfs.c_str());
  for (auto& op : ctx.mounts) do_mount(rootfd, op);
  setup_dev(rootfd);
  int cwdfd = ensure_target(rootfd, ctx.cwd, true);
  if (cwdfd >= 0) ::close(cwdfd);
  mask_paths(rootfd);
  enter_root(rootfd);
  ::close(rootfd);
  verify_confinement();
  if (ctx.set_hostname && ::sethostname(ctx.hostname.data(), ctx.hostname.size()) < 0)
    die(errno, "sethostname %s", ctx.hostname.c_str());
  write_sysctls();
  for (auto& rl : ctx.rlimits)
    if (::setrlimit(rl.resource, &rl.value) < 0)
      die(errno, "error setting rlimit type %d", rl.resource);
  if (ctx.new_keyring &&
      ::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, ctx.keyring_name.c_str()) < 0 &&
      errno != ENOSYS && errno != EDQUOT && errno != EACCES)
    die(errno, "join session keyring");
  // No controlling terminal (TIOCSTI into the caller's terminal needs one,
  // or CAP_SYS_ADMIN); stdio stays the caller's.
  if (::setsid() < 0) die(errno, "setsid");
  const auto [exe, kept_admin] = process_prologue("");
  // The new credentials cleared the parent-death signal (commit_creds):
  // set it again, then make sure the parent did not die in between.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) die(errno, "prctl(PR_SET_PDEATHSIG)");
  exit_if_orphaned();
  bool early_seccomp = ctx.has_seccomp && ctx.seccomp.needs_listener;
  if (early_seccomp) load_seccomp();
  AgentTail t{exe, early_seccomp, kept_admin, 0};
  if (ctx.own_init) start_agent_under_init(t);  // never returns: this process is the init
  agent_tail(t);
}

[[noreturn]] void exec_child_main(const ChildContext& ctx) noexcept {
  g_ctx = &ctx;
  ::close(ctx.lock_fd);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  expect(MsgType::kGo);  // the parent has placed us in the container's cgroups
  if (ctx.exec_ns_flags && ::setns(ctx.exec_pidfd, ctx.exec_ns_flags) < 0)
    die(errno, "join the container's namespaces");
  ::close(ctx.exec_pidfd);
  // The pid (and time) namespace applies to children: fork the process.
  fork_after_pid_message();
  int slave = -1;
  if (ctx.terminal) {
    int master = ::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) die(errno, "open the container's /dev/ptmx");
    int unlock = 0;
    if (::ioctl(master, TIOCSPTLCK, &unlock) < 0) die(errno, "unlockpt");
    slave = ::ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0) die(errno, "open the pty peer");
    if (ctx.has_console_size) {
      struct winsize ws = {};
      ws.ws_row = static_cast<unsigned short>(ctx.console_size.height);
      ws.ws_col = static_cast<unsigned short>(ctx.console_size.width);
      ::ioctl(slave, TIOCSWINSZ, &ws);
    }
    send_pty_master(master);
  }
  // A session of its own, as the init's (above).
  if (::setsid() < 0) die(errno, "setsid");
  if (slave >= 0) {
    if (::ioctl(slave, TIOCSCTTY, 0) < 0) die(errno, "set the controlling terminal");
    for (int fd = 0; fd < 3; fd++)
      if (::dup2(slave, fd) < 0) die(errno, "dup2 the pty");
    ::close(slave);
  }
  for (auto& rl : ctx.rlimits)
    if (::setrlimit(rl.resource, &rl.value) < 0)
      die(errno, "error setting rlimit type %d", rl.resource);
  if (ctx.oom_score_adj) {
    std::string v = std::to_string(*ctx.oom_score_adj);
    int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, v.data(), v.size()) < 0)
      die(errno, "set oom_score_adj to %s", v.c_str());
    ::close(fd);
  }
  const auto [exe, kept_admin] = process_prologue("");
  // The sync socket stays open (CLOEXEC): execve closing it is the success signal.
  agent_tail(AgentTail{exe, /*early_seccomp=*/false, kept_admin, 0});
}

}  // namespace comet::runtime
