// The unix-socket rule: see unix_rule.hpp.
#include "comet/reporting/unix_rule.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "comet/base/fd.hpp"
#include "comet/base/openat2.hpp"
#include "comet/reporting/notified_task.hpp"

namespace comet::runtime {

namespace {

constexpr size_t kMaxDatagram = 256 * 1024;  // what one emulated send copies at most
constexpr size_t kMaxIov = 1024;

using task::read_all;

// A copy of the task's fd (pidfd_getfd), checked against pid reuse.
UniqueFd task_fd(int pid, int fd, int listener, std::uint64_t id, int* err) {
  UniqueFd pidfd = task::open_pidfd(pid);
  if (!pidfd || !task::notif_valid(listener, id)) {
    *err = ESRCH;
    return UniqueFd();
  }
  UniqueFd f = task::take_fd(pidfd.get(), fd);
  if (!f) *err = errno == EBADF ? EBADF : errno;
  return f;
}

// PATH as the task's root names it: a relative path is taken from the
// task's cwd as its root sees it: /proc/PID/cwd names it from the
// runtime's root, which is the same path for a sandbox (its view binds
// host paths where they are). nullopt when that name is not usable.
std::optional<std::string> in_task_root(int pid, const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  const std::string proc = "/proc/" + std::to_string(pid);
  char buf[4096];
  ssize_t n = ::readlink((proc + "/cwd").c_str(), buf, sizeof buf - 1);
  std::string cwd = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  struct stat a, b;
  // Usable: absolute, and the same directory seen through the task's root.
  if (!cwd.empty() && cwd[0] == '/' && cwd.find(" (deleted)") == std::string::npos &&
      ::stat((proc + "/cwd").c_str(), &a) == 0 && ::stat((proc + "/root" + cwd).c_str(), &b) == 0 &&
      a.st_dev == b.st_dev && a.st_ino == b.st_ino)
    return cwd + "/" + path;
  return std::nullopt;
}

// The file a path names, seen from the task: O_PATH, resolved in its root
// (openat2 RESOLVE_IN_ROOT: ".." and absolute symlinks stay in it, no
// magic links). When the task's cwd has no usable name (in_task_root), the
// cwd itself acts as the root (".." and absolute symlinks cannot leave it:
// a wrong answer, never a host path).
// RESOLVE: the openat2 flags (magic links are refused either way: ELOOP
// with RESOLVE_NO_MAGICLINKS, EXDEV without it, as the walk is scoped).
UniqueFd open_in_task(int pid, const std::string& path, int* err,
                      unsigned long long resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) {
  const std::string proc = "/proc/" + std::to_string(pid);
  const std::optional<std::string> rooted = in_task_root(pid, path);
  UniqueFd base(
      ::open((proc + (rooted ? "/root" : "/cwd")).c_str(), O_PATH | O_CLOEXEC | O_DIRECTORY));
  if (!base) {
    *err = errno;
    return UniqueFd();
  }
  struct open_how how = {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = resolve;
  UniqueFd f(sys_openat2(base.get(), (rooted ? *rooted : path).c_str(), how, /*attempts=*/8));
  if (f) return f;
  *err = errno;
  return UniqueFd();
}

// Does PATH, walked in the task's root as the kernel walks it for the
// task, pass procfs's `self` or `thread-self`? Those name the looker: the
// reporter, outside the task's pid namespace, finds nothing there, where
// the task itself would reach its own /proc/PID/fd/N (a magic link). 40
// links at most, as the kernel.
bool passes_proc_self(int pid, const std::string& path) {
  const std::optional<std::string> rooted = in_task_root(pid, path);
  if (!rooted) return false;
  UniqueFd root(
      ::open(("/proc/" + std::to_string(pid) + "/root").c_str(), O_PATH | O_CLOEXEC | O_DIRECTORY));
  if (!root) return false;
  std::vector<std::string> cur, todo;  // todo: the components left, last first
  auto push_path = [&todo](const std::string& p) {
    std::vector<std::string> parts;
    std::istringstream in(p);
    for (std::string c; std::getline(in, c, '/');)
      if (!c.empty() && c != ".") parts.push_back(c);
    todo.insert(todo.end(), parts.rbegin(), parts.rend());
  };
  push_path(*rooted);
  for (int links = 0; !todo.empty();) {
    const std::string c = todo.back();
    todo.pop_back();
    if (c == "..") {
      if (!cur.empty()) cur.pop_back();
      continue;
    }
    std::string at;
    for (const std::string& d : cur) at += "/" + d;
    if (cur.size() == 1 && (c == "self" || c == "thread-self")) {
      UniqueFd dir(sys_openat2(
          root.get(), at.c_str(),
          open_how{O_PATH | O_CLOEXEC | O_DIRECTORY, 0, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS}, 8));
      struct statfs fs;
      if (dir && ::fstatfs(dir.get(), &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC) return true;
    }
    at += "/" + c;
    UniqueFd f(sys_openat2(
        root.get(), at.c_str(),
        open_how{O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS}, 8));
    struct stat st;
    if (!f || ::fstat(f.get(), &st) < 0) return false;
    if (!S_ISLNK(st.st_mode)) {
      cur.push_back(c);
      continue;
    }
    if (++links > 40) return false;
    char buf[4096];
    const ssize_t n = ::readlinkat(f.get(), "", buf, sizeof buf - 1);
    if (n <= 0) return false;
    const std::string target(buf, static_cast<size_t>(n));
    if (target[0] == '/') cur.clear();
    push_path(target);
  }
  return false;
}

// PATH spelt through one of the task's own fds (`/proc/self/fd/N[/REST]`,
// `/proc/thread-self/fd/N[/REST]`, `/dev/fd/N[/REST]`): the path fd N
// names, with REST. nullopt for any other path, or an fd that names no
// path (deleted, a pipe, a socket without a name).
std::optional<std::string> through_own_fd(int pid, const std::string& path) {
  std::string rest;
  for (const char* prefix : {"/proc/self/fd/", "/proc/thread-self/fd/", "/dev/fd/"}) {
    if (path.rfind(prefix, 0) == 0) {
      rest = path.substr(std::strlen(prefix));
      break;
    }
  }
  if (rest.empty() || rest[0] < '0' || rest[0] > '9') return std::nullopt;
  size_t digits = 0;
  while (digits < rest.size() && digits < 9 && rest[digits] >= '0' && rest[digits] <= '9') digits++;
  if (digits < rest.size() && rest[digits] != '/') return std::nullopt;
  const std::string fd = rest.substr(0, digits);
  char buf[4096];
  const ssize_t n =
      ::readlink(("/proc/" + std::to_string(pid) + "/fd/" + fd).c_str(), buf, sizeof buf - 1);
  if (n <= 0 || buf[0] != '/') return std::nullopt;
  std::string target(buf, static_cast<size_t>(n));
  if (target.size() >= 10 && target.compare(target.size() - 10, 10, " (deleted)") == 0)
    return std::nullopt;
  return target + rest.substr(digits);
}

struct TaskCreds {
  uid_t euid = 0;
  gid_t egid = 0;
  std::vector<gid_t> groups;
  bool ok = false;
};

TaskCreds task_creds(int pid) {
  TaskCreds c;
  task::TaskStatus status;
  if (!status.read(pid)) return c;
  // The effective ids: the second of each line (real, effective, saved, fs).
  auto uid = status.numbers("Uid"), gid = status.numbers("Gid");
  const bool have_uid = uid && uid->size() >= 2, have_gid = gid && gid->size() >= 2;
  if (have_uid) c.euid = static_cast<uid_t>((*uid)[1]);
  if (have_gid) c.egid = static_cast<gid_t>((*gid)[1]);
  if (auto groups = status.numbers("Groups"))
    for (long g : *groups) c.groups.push_back(static_cast<gid_t>(g));
  c.ok = have_uid && have_gid;
  return c;
}

// This thread takes the task's identity for one call: its euid, egid and
// groups, and no effective capabilities (raw syscalls: glibc's wrappers
// would change every thread of the process). Undone by the destructor. As
// an ordinary user (the runtime runs as the task's own user) nothing
// changes.
class AsTask {
 public:
  explicit AsTask(const TaskCreds& c) {
    if (::geteuid() != 0) return;
    int n = ::getgroups(0, nullptr);
    saved_groups_.resize(n > 0 ? static_cast<size_t>(n) : 0);
    if (n > 0) ::getgroups(n, saved_groups_.data());
    hdr_.version = _LINUX_CAPABILITY_VERSION_3;
    hdr_.pid = 0;
    if (::syscall(SYS_capget, &hdr_, saved_caps_) < 0) return;
    if (::syscall(SYS_setgroups, c.groups.size(), c.groups.data()) < 0) return;
    active_ = true;
    if (::syscall(SYS_setresgid, -1, c.egid, -1) < 0) return;
    struct __user_cap_data_struct none[2] = {};
    none[0].permitted = saved_caps_[0].permitted;
    none[1].permitted = saved_caps_[1].permitted;
    if (::syscall(SYS_capset, &hdr_, none) < 0) return;
    if (c.euid != 0 && ::syscall(SYS_setresuid, -1, c.euid, -1) < 0) return;
    switched_ = true;
  }
  ~AsTask() {
    if (!active_) return;
    (void)::syscall(SYS_setresuid, -1, 0, -1);
    (void)::syscall(SYS_capset, &hdr_, saved_caps_);
    (void)::syscall(SYS_setresgid, -1, 0, -1);
    (void)::syscall(SYS_setgroups, saved_groups_.size(), saved_groups_.data());
  }
  bool ok() const { return switched_ || ::geteuid() != 0 || !active_; }
  AsTask(const AsTask&) = delete;
  AsTask& operator=(const AsTask&) = delete;

 private:
  bool active_ = false, switched_ = false;
  std::vector<gid_t> saved_groups_;
  struct __user_cap_header_struct hdr_ = {};
  struct __user_cap_data_struct saved_caps_[2] = {};
};

// This thread in the task's network namespace for one call (an abstract
// name lives in a network namespace), then back.
class InTaskNet {
 public:
  explicit InTaskNet(int pid) {
    struct stat mine, theirs;
    const std::string p = "/proc/" + std::to_string(pid) + "/ns/net";
    if (::stat("/proc/thread-self/ns/net", &mine) < 0 || ::stat(p.c_str(), &theirs) < 0) {
      failed_ = true;
      return;
    }
    if (mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev) return;
    own_ = true;
    back_ = UniqueFd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    UniqueFd to(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
    failed_ = !back_ || !to || ::setns(to.get(), CLONE_NEWNET) < 0;
    entered_ = !failed_;
  }
  ~InTaskNet() {
    if (entered_) (void)::setns(back_.get(), CLONE_NEWNET);
  }
  bool failed() const { return failed_; }
  bool own_netns() const { return own_; }  // the task's netns is not ours
  InTaskNet(const InTaskNet&) = delete;
  InTaskNet& operator=(const InTaskNet&) = delete;

 private:
  bool failed_ = false, own_ = false, entered_ = false;
  UniqueFd back_;
};

// Is a socket with this abstract name bound by a process of the task's pid
// namespace? /proc/PID/net/unix names the inodes; the container's own
// procfs (PID's root /proc) lists only its processes.
bool abstract_is_containers(int pid, const std::string& name) {
  std::string shown = "@";
  for (char ch : name) shown.push_back(ch == '\0' ? '@' : ch);
  std::ifstream f("/proc/" + std::to_string(pid) + "/net/unix");
  std::string line;
  std::vector<std::string> inodes;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string num, ref, proto, flags, type, st, ino, path;
    if (!(in >> num >> ref >> proto >> flags >> type >> st >> ino)) continue;
    std::getline(in, path);
    auto b = path.find_first_not_of(' ');
    path = b == std::string::npos ? "" : path.substr(b);
    if (path == shown) inodes.push_back("socket:[" + ino + "]");
  }
  if (inodes.empty()) return false;
  const std::string procs = "/proc/" + std::to_string(pid) + "/root/proc";
  DIR* d = ::opendir(procs.c_str());
  if (!d) return false;
  bool found = false;
  while (!found) {
    struct dirent* e = ::readdir(d);
    if (!e) break;
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    const std::string fds = procs + "/" + e->d_name + "/fd";
    DIR* fd = ::opendir(fds.c_str());
    if (!fd) continue;
    while (struct dirent* x = ::readdir(fd)) {
      char buf[64];
      ssize_t n = ::readlinkat(::dirfd(fd), x->d_name, buf, sizeof buf - 1);
      if (n <= 0) continue;
      const std::string link(buf, static_cast<size_t>(n));
      for (const auto& i : inodes) found = found || link == i;
      if (found) break;
    }
    ::closedir(fd);
  }
  ::closedir(d);
  return found;
}

// The address a call names, copied once; what it asks for, judged.
struct Judged {
  bool ok = false;          // the call may be made (to `addr`)
  int err = 0;              // else its errno
  bool report = false;      // a refusal of the rule (an event)
  std::string requested;    // the path ("@name" for an abstract one)
  struct sockaddr_un addr;  // what the emulated call uses
  socklen_t addrlen = 0;
  UniqueFd target;  // pathname: the socket inode (O_PATH)
  bool abstract_netns = false;
};

Judged judge_address(UnixRuleState& st, int pid, const struct sockaddr_un& sa, socklen_t len) {
  Judged j;
  std::memset(&j.addr, 0, sizeof j.addr);
  if (len <= offsetof(sockaddr_un, sun_path) || sa.sun_family != AF_UNIX) {
    j.ok = true;  // the kernel's own error (EINVAL, EAFNOSUPPORT) from the copy
    std::memcpy(&j.addr, &sa, std::min<size_t>(len, sizeof sa));
    j.addrlen = len;
    return j;
  }
  const size_t max = len - offsetof(sockaddr_un, sun_path);
  if (sa.sun_path[0] == '\0') {
    // As /proc/net/unix shows one: every NUL of the name as '@'.
    j.requested = "@";
    for (size_t i = 1; i < max; i++) j.requested.push_back(sa.sun_path[i] ? sa.sun_path[i] : '@');
    std::memcpy(&j.addr, &sa, len);
    j.addrlen = len;
    j.abstract_netns = true;
    j.ok = true;  // decided by the caller, which knows the network namespace
    return j;
  }
  std::string path(sa.sun_path, strnlen(sa.sun_path, max));
  j.requested = path;
  // `/proc/self/fd/N/NAME` (the way past sun_path's 108 bytes) and
  // `/dev/fd/N/NAME`: judged where the task's fd N leads, as its kernel
  // would resolve it (the call is then made to the inode judged).
  if (auto via = through_own_fd(pid, path)) path = *via;
  int err = 0;
  UniqueFd t = open_in_task(pid, path, &err);
  if (!t) {
    j.err = err == ENOTDIR ? ENOENT : err;
    // A magic link on the way (`/proc/self/fd/N` of an O_PATH fd,
    // `/proc/1/root/run/x.sock`, a symlink to one): a socket reached that
    // way could be anywhere, so the rule refuses it, and says so (red team
    // round 14: refused as ELOOP, unreported). A real symlink loop stays
    // ELOOP, unreported: scoped without RESOLVE_NO_MAGICLINKS, the kernel
    // answers EXDEV for a magic link and ELOOP for a loop.
    // procfs's `self` on the way (a symlink to /proc/self/fd/N) names the
    // reporter, which finds nothing there (ENOENT): walked as the task's
    // kernel would, it is the same magic link.
    int again = 0;
    if ((err == ELOOP && !open_in_task(pid, path, &again, RESOLVE_IN_ROOT) && again == EXDEV) ||
        ((err == ENOENT || err == ELOOP) && passes_proc_self(pid, path))) {
      j.err = EACCES;
      j.report = true;
    }
    return j;
  }
  struct stat sb;
  if (::fstat(t.get(), &sb) < 0) {
    j.err = errno;
    return j;
  }
  if (!S_ISSOCK(sb.st_mode)) {
    j.err = ECONNREFUSED;  // what connect(2) says of a file that is not a socket
    j.report = true;       // a hidden socket (an empty file bound over it) is one
    return j;
  }
  if (!st.allow_resolved) {
    st.allow_resolved = true;
    for (const auto& a : st.allow) {
      int e = 0;
      UniqueFd f = open_in_task(pid, a, &e);
      struct stat ab;
      if (f && ::fstat(f.get(), &ab) == 0 && S_ISSOCK(ab.st_mode))
        st.allow_ids.emplace_back(ab.st_dev, ab.st_ino);
    }
  }
  bool allowed = false;
  for (auto& [d, i] : st.allow_ids) allowed = allowed || (d == sb.st_dev && i == sb.st_ino);
  struct statvfs vfs;
  if (!allowed && ::fstatvfs(t.get(), &vfs) == 0 && !(vfs.f_flag & ST_RDONLY)) allowed = true;
  if (!allowed) {
    j.err = EACCES;
    j.report = true;
    return j;
  }
  j.addr.sun_family = AF_UNIX;
  std::snprintf(j.addr.sun_path, sizeof j.addr.sun_path, "/proc/self/fd/%d", t.get());
  j.addrlen = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + strlen(j.addr.sun_path) + 1);
  j.target = std::move(t);
  j.ok = true;
  return j;
}

UnixOutcome refused(const Judged& j) {
  UnixOutcome o;
  o.ret = -j.err;
  o.refused = j.report;
  o.requested = j.requested;
  return o;
}

int sock_opt(int fd, int opt) {
  int v = -1;
  socklen_t l = sizeof v;
  return ::getsockopt(fd, SOL_SOCKET, opt, &v, &l) == 0 ? v : -1;
}

// Makes `call` (connect or a send) with the task's identity, in its network
// namespace for an abstract name; an abstract name in the host's network
// namespace must be the container's own.
template <typename F>
UnixOutcome perform(const Judged& j, int pid, F&& call) {
  UnixOutcome o;
  std::optional<InTaskNet> net;
  if (j.abstract_netns) {
    net.emplace(pid);
    if (net->failed()) {
      o.ret = -EACCES;
      return o;
    }
    if (!net->own_netns()) {
      std::string name(j.addr.sun_path + 1, j.addrlen - offsetof(sockaddr_un, sun_path) - 1);
      if (!abstract_is_containers(pid, name)) {
        o.ret = -ECONNREFUSED;
        o.refused = true;
        o.requested = j.requested;
        return o;
      }
    }
  }
  TaskCreds c = task_creds(pid);
  if (!c.ok) {
    o.ret = -ESRCH;
    return o;
  }
  AsTask as(c);
  if (!as.ok()) {
    o.ret = -EACCES;
    return o;
  }
  long long r = call();
  o.ret = r < 0 ? -errno : r;
  return o;
}

bool read_addr(int pid, std::uint64_t ptr, std::uint64_t len, struct sockaddr_un& sa,
               socklen_t& out_len) {
  std::memset(&sa, 0, sizeof sa);
  out_len = static_cast<socklen_t>(std::min<std::uint64_t>(len, sizeof sa));
  return read_all(pid, ptr, &sa, out_len);
}

// One thread in the task's thread group, and no other process shares its
// fd table (the lock-down refuses clone with CLONE_FILES but not
// CLONE_THREAD, clone3 and io_uring): while the task waits for this answer
// nothing can put another file at the fd number it named, so CONTINUE
// reaches the socket that was judged.
bool fd_table_is_its_own(int pid) {
  task::TaskStatus status;
  if (!status.read(pid)) return false;
  auto threads = status.numbers("Threads");
  return threads && !threads->empty() && (*threads)[0] == 1;
}

// The task's call made on the reporter's copy of its socket, with what the
// call names copied once: used where CONTINUE would let another thread
// swap the fd (dup2 of a unix socket onto the number after the look).
struct CopiedCall {
  UniqueFd sock;
  int nr = 0;
  std::vector<char> name;     // the address (connect, or a send's msg_name)
  std::vector<char> data;     // a send's bytes
  std::vector<char> control;  // a send's ancillary data, fds translated
  std::vector<UniqueFd> passed;
  int flags = 0;
};

constexpr size_t kMaxControl = 64 * 1024;

// SCM_RIGHTS fds are the task's numbers: each becomes a copy of the file
// (pidfd_getfd), as the kernel would pass it. false: an fd the task does
// not have (EBADF).
bool translate_rights(int pid, CopiedCall& c) {
  if (c.control.empty()) return true;
  struct msghdr mh = {};
  mh.msg_control = c.control.data();
  mh.msg_controllen = c.control.size();
  UniqueFd pidfd = task::open_pidfd(pid);
  for (struct cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    const size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    int* fds = reinterpret_cast<int*>(CMSG_DATA(cm));
    for (size_t i = 0; i < n; i++) {
      UniqueFd f = pidfd ? task::take_fd(pidfd.get(), fds[i]) : UniqueFd();
      if (!f) return false;
      fds[i] = f.get();
      c.passed.push_back(std::move(f));
    }
  }
  return true;
}

// Copies what connect, sendto, sendmsg or sendmmsg (its first message)
// names. 0, or the -errno the kernel would give for a bad argument.
int copy_call(int pid, const struct seccomp_notif& req, CopiedCall& c, bool stream) {
  auto copy = [&](std::uint64_t ptr, std::uint64_t len, std::vector<char>& out, size_t cap,
                  int too_big) {
    if (len > cap) return -too_big;
    out.resize(len);
    return len == 0 || read_all(pid, ptr, out.data(), len) ? 0 : -EFAULT;
  };
  const auto& a = req.data.args;
  c.nr = req.data.nr;
  if (c.nr == SYS_connect) return copy(a[1], a[2], c.name, sizeof(sockaddr_storage), EINVAL);
  // A stream takes a short send (the task's loop sends the rest); a
  // datagram longer than the copy is refused as too long.
  const size_t data_cap = kMaxDatagram;
  if (c.nr == SYS_sendto) {
    c.flags = static_cast<int>(a[3]);
    if (int e = copy(a[4], a[5], c.name, sizeof(sockaddr_storage), EINVAL)) return e;
    std::uint64_t n = a[2];
    if (n > data_cap && !stream) return -EMSGSIZE;
    return copy(a[1], std::min<std::uint64_t>(n, data_cap), c.data, data_cap, EMSGSIZE);
  }
  struct msghdr mh = {};
  if (c.nr == SYS_sendmmsg && a[2] == 0) return 0;
  if (!read_all(pid, a[1], &mh, sizeof mh)) return -EFAULT;
  c.flags = static_cast<int>(c.nr == SYS_sendmmsg ? a[3] : a[2]);
  if (mh.msg_name && mh.msg_namelen)
    if (int e = copy(reinterpret_cast<std::uint64_t>(mh.msg_name), mh.msg_namelen, c.name,
                     sizeof(sockaddr_storage), EINVAL))
      return e;
  if (int e = copy(reinterpret_cast<std::uint64_t>(mh.msg_control), mh.msg_controllen, c.control,
                   kMaxControl, ENOBUFS))
    return e;
  if (mh.msg_iovlen > kMaxIov) return -EMSGSIZE;
  std::vector<struct iovec> iov(mh.msg_iovlen);
  if (!iov.empty() && !read_all(pid, reinterpret_cast<std::uint64_t>(mh.msg_iov), iov.data(),
                                iov.size() * sizeof(struct iovec)))
    return -EFAULT;
  for (const auto& v : iov) {
    size_t at = c.data.size(), take = v.iov_len;
    if (at + take > data_cap) {
      if (!stream) return -EMSGSIZE;
      take = data_cap - at;
    }
    c.data.resize(at + take);
    if (take &&
        !read_all(pid, reinterpret_cast<std::uint64_t>(v.iov_base), c.data.data() + at, take))
      return -EFAULT;
    if (take < v.iov_len) break;
  }
  return translate_rights(pid, c) ? 0 : -EBADF;
}

long long make_copied_call(CopiedCall& c) {
  if (c.nr == SYS_connect)
    return ::connect(c.sock.get(), reinterpret_cast<const sockaddr*>(c.name.data()),
                     static_cast<socklen_t>(c.name.size())) < 0
               ? -errno
               : 0;
  struct iovec v = {c.data.data(), c.data.size()};
  struct msghdr mh = {};
  mh.msg_name = c.name.empty() ? nullptr : c.name.data();
  mh.msg_namelen = static_cast<socklen_t>(c.name.size());
  mh.msg_iov = &v;
  mh.msg_iovlen = 1;
  mh.msg_control = c.control.empty() ? nullptr : c.control.data();
  mh.msg_controllen = c.control.size();
  ssize_t r = ::sendmsg(c.sock.get(), &mh, c.flags | MSG_NOSIGNAL);
  return r < 0 ? -errno : r;
}

// A call on a socket the rule does not judge (not AF_UNIX, or a send on a
// unix stream), without the CONTINUE race: CONTINUE when no other thread
// can swap the fd, else the reporter makes the call on its copy (a
// blocking stream socket's on a thread of its own: UnixOutcome::may_block).
UnixOutcome pass_on(const struct seccomp_notif& req, int listener, UniqueFd sock, int type) {
  UnixOutcome o;
  const int pid = static_cast<int>(req.pid);
  if (fd_table_is_its_own(pid) && task::notif_valid(listener, req.id)) {
    o.continue_call = true;
    return o;
  }
  const bool stream = type == SOCK_STREAM || type == SOCK_SEQPACKET;
  auto c = std::make_shared<CopiedCall>();
  c->sock = std::move(sock);
  if (int e = copy_call(pid, req, *c, stream)) {
    o.ret = e;
    return o;
  }
  if (req.data.nr == SYS_sendmmsg && req.data.args[2] == 0) return o;  // 0 messages: 0
  const int fl = ::fcntl(c->sock.get(), F_GETFL);
  o.may_block = stream && fl >= 0 && !(fl & O_NONBLOCK) && !(c->flags & MSG_DONTWAIT);
  const std::uint64_t mmsg_len_at =
      req.data.nr == SYS_sendmmsg ? req.data.args[1] + offsetof(struct mmsghdr, msg_len) : 0;
  o.emulate = [c, pid, mmsg_len_at]() -> long long {
    long long r = make_copied_call(*c);
    if (mmsg_len_at && r >= 0) {
      unsigned int sent = static_cast<unsigned int>(r);
      struct iovec local = {&sent, sizeof sent};
      struct iovec remote = {reinterpret_cast<void*>(mmsg_len_at), sizeof sent};
      (void)::process_vm_writev(pid, &local, 1, &remote, 1, 0);
      r = 1;
    }
    return r;
  };
  return o;
}

}  // namespace

bool unix_rule_call(int nr) {
  return nr == SYS_connect || nr == SYS_sendto || nr == SYS_sendmsg || nr == SYS_sendmmsg;
}

UnixOutcome unix_rule_judge(UnixRuleState& st, const struct seccomp_notif& req, int listener) {
  UnixOutcome o;
  const int pid = static_cast<int>(req.pid);
  const int nr = req.data.nr;
  int err = 0;
  UniqueFd sock = task_fd(pid, static_cast<int>(req.data.args[0]), listener, req.id, &err);
  if (!sock) {
    o.ret = -(err ? err : EBADF);
    return o;
  }
  const int domain = sock_opt(sock.get(), SO_DOMAIN);
  if (domain < 0) {  // not a socket: what the kernel says, never CONTINUE
    o.ret = -ENOTSOCK;
    return o;
  }
  const int type = sock_opt(sock.get(), SO_TYPE);
  // Not unix, or a stream that ignores or refuses msg_name: no path is
  // reached by this call on this socket.
  if (domain != AF_UNIX || ((nr == SYS_sendmsg || nr == SYS_sendmmsg) && type != SOCK_DGRAM))
    return pass_on(req, listener, std::move(sock), type);
  if (nr == SYS_connect) {
    struct sockaddr_un sa;
    socklen_t len = 0;
    if (!read_addr(pid, req.data.args[1], req.data.args[2], sa, len)) {
      o.ret = -EFAULT;
      return o;
    }
    Judged j = judge_address(st, pid, sa, len);
    if (!j.ok) return refused(j);
    return perform(j, pid, [&] {
      return static_cast<long long>(
          ::connect(sock.get(), reinterpret_cast<const sockaddr*>(&j.addr), j.addrlen));
    });
  }
  // Sends: the data is copied once too.
  struct msghdr mh = {};
  std::uint64_t name_ptr = 0, name_len = 0, iov_ptr = 0, iov_len = 0, flags = 0;
  std::uint64_t mmsg_len_at = 0;
  if (nr == SYS_sendto) {
    name_ptr = req.data.args[4];
    name_len = req.data.args[5];
    flags = req.data.args[3];
  } else {
    if (!read_all(pid, req.data.args[1], &mh, sizeof mh)) {
      o.ret = -EFAULT;
      return o;
    }
    if (nr == SYS_sendmmsg) {
      if (req.data.args[2] == 0) {
        o.ret = 0;
        return o;
      }
      mmsg_len_at = req.data.args[1] + offsetof(struct mmsghdr, msg_len);
      flags = req.data.args[3];
    } else {
      flags = req.data.args[2];
    }
    if (mh.msg_controllen > 0) {
      // Ancillary data (fds, credentials) cannot be passed on faithfully.
      o.ret = -EPERM;
      o.refused = true;
      o.requested = "a unix datagram with ancillary data";
      return o;
    }
    name_ptr = reinterpret_cast<std::uint64_t>(mh.msg_name);
    name_len = mh.msg_namelen;
    iov_ptr = reinterpret_cast<std::uint64_t>(mh.msg_iov);
    iov_len = mh.msg_iovlen;
  }
  std::vector<char> data;
  if (nr == SYS_sendto) {
    size_t n = std::min<std::uint64_t>(req.data.args[2], kMaxDatagram + 1);
    data.resize(n);
    if (n && !read_all(pid, req.data.args[1], data.data(), n)) {
      o.ret = -EFAULT;
      return o;
    }
  } else {
    if (iov_len > kMaxIov) {
      o.ret = -EMSGSIZE;
      return o;
    }
    std::vector<struct iovec> iov(iov_len);
    if (iov_len && !read_all(pid, iov_ptr, iov.data(), iov_len * sizeof(struct iovec))) {
      o.ret = -EFAULT;
      return o;
    }
    for (const auto& v : iov) {
      size_t at = data.size();
      if (at + v.iov_len > kMaxDatagram + 1) {
        o.ret = -EMSGSIZE;
        return o;
      }
      data.resize(at + v.iov_len);
      if (v.iov_len && !read_all(pid, reinterpret_cast<std::uint64_t>(v.iov_base), data.data() + at,
                                 v.iov_len)) {
        o.ret = -EFAULT;
        return o;
      }
    }
  }
  if (data.size() > kMaxDatagram) {
    o.ret = -EMSGSIZE;
    return o;
  }
  // The process, not this thread, gets SIGPIPE: never this thread.
  const int send_flags = static_cast<int>(flags) | MSG_NOSIGNAL;
  Judged j;
  if (name_ptr != 0 && name_len != 0) {
    struct sockaddr_un sa;
    socklen_t len = 0;
    if (!read_addr(pid, name_ptr, name_len, sa, len)) {
      o.ret = -EFAULT;
      return o;
    }
    j = judge_address(st, pid, sa, len);
    if (!j.ok) return refused(j);
  } else {
    j.ok = true;  // the connected peer, judged at connect
  }
  o = perform(j, pid, [&] {
    return static_cast<long long>(
        ::sendto(sock.get(), data.data(), data.size(), send_flags,
                 j.addrlen ? reinterpret_cast<const sockaddr*>(&j.addr) : nullptr, j.addrlen));
  });
  if (nr == SYS_sendmmsg && o.ret >= 0) {
    unsigned int sent = static_cast<unsigned int>(o.ret);
    struct iovec local = {&sent, sizeof sent};
    struct iovec remote = {reinterpret_cast<void*>(mmsg_len_at), sizeof sent};
    (void)::process_vm_writev(pid, &local, 1, &remote, 1, 0);
    o.ret = 1;  // one message sent (a partial sendmmsg, as the kernel may answer)
  }
  return o;
}

}  // namespace comet::runtime
