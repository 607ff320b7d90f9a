// The lock-down's own notifications (reporter_serve.hpp): answered with
// the errno the ERRNO form of the same lock-down gives (bpf_eval); exec
// and connect are let through (Landlock and the mounts decide) and only
// reported.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "comet/base/openat2.hpp"
#include "comet/capability/profile.hpp"
#include "comet/reporting/notified_task.hpp"
#include "comet/seccomp/bpf_eval.hpp"
#include "reporter_serve.hpp"

namespace comet::runtime {
namespace {

// A NUL-terminated string of the stopped task (the execve path), up to
// 4096 bytes: what could be read. Read before the answer: after CONTINUE
// the memory is gone. Only ever used for the report; Landlock resolves the
// path itself.
std::string read_remote_string(int pid, std::uint64_t addr) {
  char buf[4096];
  std::size_t len = 0;
  (void)task::read_string(pid, addr, buf, sizeof buf, &len);
  return std::string(buf, len);
}

// The pathname a connect(2) asks for (sockaddr_un of a pathname socket),
// or "" for any other family, an abstract or unnamed address, or memory
// that cannot be read.
std::string read_remote_unix_path(int pid, std::uint64_t addr, std::uint64_t len) {
  struct sockaddr_un sa = {};
  const size_t want = std::min<std::uint64_t>(len, sizeof sa);
  if (want <= offsetof(sockaddr_un, sun_path)) return {};
  const ssize_t n = task::read_some(pid, addr, &sa, want);
  if (n <= static_cast<ssize_t>(offsetof(sockaddr_un, sun_path)) || sa.sun_family != AF_UNIX ||
      sa.sun_path[0] == '\0')
    return {};
  const size_t max = static_cast<size_t>(n) - offsetof(sockaddr_un, sun_path);
  return std::string(sa.sun_path, strnlen(sa.sun_path, max));
}

// The file an execve of `path` names, seen from the task: (dev, ino), or
// the errno of resolving it. Relative paths from its cwd (or dirfd).
struct Target {
  int err = 0;
  dev_t dev = 0;
  ino_t ino = 0;
  mode_t mode = 0;
  std::string name;  // exec_fd_target: what /proc/PID/fd/N names
};

// What the task's fd N is open on (execveat(N, "", AT_EMPTY_PATH)).
Target exec_fd_target(int pid, int fd) {
  Target t;
  std::string link = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  struct stat st;
  if (fd < 0 || ::stat(link.c_str(), &st) < 0) {
    t.err = fd < 0 ? EBADF : errno;
    return t;
  }
  t.dev = st.st_dev;
  t.ino = st.st_ino;
  t.mode = st.st_mode;
  char buf[512];
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n > 0) t.name.assign(buf, static_cast<size_t>(n));
  return t;
}

Target resolve_in_task(int pid, const std::string& path, int dirfd_arg, bool at) {
  Target t;
  std::string proc = "/proc/" + std::to_string(pid);
  std::string base = path.size() && path[0] == '/'
                         ? proc + "/root"
                         : (at && dirfd_arg != AT_FDCWD ? proc + "/fd/" + std::to_string(dirfd_arg)
                                                        : proc + "/cwd");
  UniqueFd bfd(::open(base.c_str(), O_PATH | O_CLOEXEC));
  if (!bfd) {
    t.err = errno;
    return t;
  }
  struct open_how how = {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = path.size() && path[0] == '/' ? RESOLVE_IN_ROOT : 0;
  UniqueFd f(sys_openat2(bfd.get(), path.c_str(), how));
  if (!f) {
    t.err = errno;
    return t;
  }
  struct stat st;
  if (::fstat(f.get(), &st) < 0) {
    t.err = errno;
    return t;
  }
  t.dev = st.st_dev;
  t.ino = st.st_ino;
  t.mode = st.st_mode;
  return t;
}

// The argument that holds the path of a mount-family or mknod call, for
// `requested` (report only), or -1.
int path_argument(int nr) {
  if (nr == SYS_mount || nr == SYS_mknodat) return 1;
  if (nr == SYS_umount2 || nr == SYS_chroot || nr == SYS_pivot_root || nr == SYS_mknod) return 0;
  return -1;
}

// connect: reporting only (CONTINUE), and only of a runtime's socket that
// the sandbox keeps from the agent: resolved in the task's root while it
// waits, ENOENT when it is not there, ECONNREFUSED when what is there is
// not a socket (a hidden one). A real socket (devbox shows the host's) is
// what the profile allows: err 0, no event.
struct ConnectLook {
  std::string path;
  int err = 0;
};
ConnectLook look_connect(const struct seccomp_notif& req) {
  ConnectLook c;
  const int pid = static_cast<int>(req.pid);
  c.path = read_remote_unix_path(pid, req.data.args[1], req.data.args[2]);
  if (!c.path.empty() && capability::is_runtime_socket(c.path)) {
    Target t = resolve_in_task(pid, c.path, AT_FDCWD, false);
    c.err = t.err ? t.err : (S_ISSOCK(t.mode) ? 0 : ECONNREFUSED);
  }
  return c;
}

}  // namespace

// An exec, looked at while the task is still stopped in the call: after
// CONTINUE a short-lived program can exit (and take its /proc/PID/root
// with it) before the lookup, which would report an allowed exec as ENOENT.
struct Reporter::ExecLook {
  std::string path;  // as the report names it
  Target target;
  bool allowed = false;  // one of r_.exec_allow (the interpreter, its loader)
  bool skip = false;     // not the agent's (the trampoline), or the task is gone
};

Reporter::ExecLook Reporter::look_exec(const struct seccomp_notif& req) {
  ExecLook x;
  const int pid = static_cast<int>(req.pid);
  const bool at = req.data.nr == SYS_execveat;
  x.path = read_remote_string(pid, req.data.args[at ? 1 : 0]);
  // execveat(fd, "", AT_EMPTY_PATH): the file the fd is open on. The
  // runtime's own trampoline is the one such exec that is not the agent's;
  // any other is checked like an exec by path, and named by what the fd
  // points at.
  const bool by_fd = at && x.path.empty() && (req.data.args[4] & AT_EMPTY_PATH);
  if (by_fd) {
    const int fd = static_cast<int>(req.data.args[0]);
    x.target = exec_fd_target(pid, fd);
    x.skip = x.target.err == 0 && r_.trampoline_ino != 0 && x.target.dev == r_.trampoline_dev &&
             x.target.ino == r_.trampoline_ino;
    x.path = "fd " + std::to_string(fd) + (x.target.name.empty() ? "" : " (" + x.target.name + ")");
  } else {
    x.target = resolve_in_task(pid, x.path, static_cast<int>(req.data.args[0]), at);
  }
  if (x.skip) return x;
  if (x.target.err == 0) {
    if (allowed_ids_.empty())
      for (const std::string& a : r_.exec_allow) {
        Target t = resolve_in_task(pid, a, AT_FDCWD, false);
        if (t.err == 0) allowed_ids_.emplace_back(t.dev, t.ino);
      }
    for (auto& [d, i] : allowed_ids_)
      x.allowed = x.allowed || (d == x.target.dev && i == x.target.ino);
  }
  // The task died under us (SIGKILL from another thread): its /proc
  // entries are gone, and it did not exec anything.
  if (x.target.err != 0 && !task::notif_valid(listener_.get(), req.id)) x.skip = true;
  return x;
}

void Reporter::on_lockdown_call(const struct seccomp_notif& req, NotifAnswer& ans) {
  const int nr = req.data.nr;
  const int pid = static_cast<int>(req.pid);
  // The answer: the same errno as without reporting; a call the ERRNO
  // program would not refuse cannot notify (same conditions), but is
  // refused with EPERM all the same.
  uint32_t ret = prog_.ok() ? seccomp::evaluate(prog_->filter, req.data) : 0;
  uint32_t action = ret & SECCOMP_RET_ACTION_FULL;
  int err = action == SECCOMP_RET_ERRNO ? static_cast<int>(ret & SECCOMP_RET_DATA) : EPERM;
  if (err == 0) err = EPERM;
  // execve/execveat: the only calls the ERRNO program allows (exec lock,
  // reporting only); connect (reporting only). Their paths are read before
  // the answer.
  const bool is_exec = action == SECCOMP_RET_ALLOW && (nr == SYS_execve || nr == SYS_execveat);
  const bool is_connect = action == SECCOMP_RET_ALLOW && nr == SYS_connect;
  const int path_arg = path_argument(nr);
  const ConnectLook conn = is_connect ? look_connect(req) : ConnectLook{};
  std::string call_path;
  if (path_arg >= 0 && !is_exec) call_path = read_remote_string(pid, req.data.args[path_arg]);
  const ExecLook exec = is_exec ? look_exec(req) : ExecLook{};
  // CONTINUE is safe here only because Landlock (exec) and the mounts
  // (connect), not this answer, decide.
  if (is_exec || is_connect)
    ans.let_through();
  else
    ans.refuse(err);
  std::uint64_t args[6];
  for (int i = 0; i < 6; i++) args[i] = req.data.args[i];
  auto c = violations::classify(nr, args);
  if (is_exec) {
    if (exec.skip || exec.allowed) {  // the interpreter (or its loader)
      exec_pending_.erase(pid);
      return;
    }
    c.surface = "exec";
    c.requested = exec.path;
    err = exec.target.err ? exec.target.err : EACCES;  // what Landlock (or the lookup) gives
    // With the fs program, Landlock's EACCES is reported when the exec has
    // failed (at sys_exit, on_exec_record): the path can change between
    // this look and the kernel's, either way, so only the outcome says
    // whether anything was refused. Here, only what this look read.
    if ((err == EACCES || err == ENOENT) && fs_) {
      exec_pending_[pid] = exec.path;
      return;
    }
  }
  if (is_connect) {
    if (conn.err == 0) return;  // not a runtime socket, or one the profile shows
    c.requested = conn.path;
    err = conn.err;
  }
  if (path_arg >= 0 && !is_exec && !call_path.empty())
    c.requested = c.surface == "device" ? c.syscall + "(" + call_path + ", " + c.requested + ")"
                                        : c.syscall + "(" + call_path + ")";
  emit(event(c.surface, c.requested, c.syscall, pid, err), &ans);
}

}  // namespace comet::runtime
