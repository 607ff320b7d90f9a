// The container child, from clone(2) to execve(2). Single-threaded and
// noexcept: every failure is sent to the parent as kError and ends in
// _exit(1). Order follows sync.hpp's diagram; seccomp is loaded last.
// The three entry points and the namespaces are here; the file system is
// child_mounts.cpp, the process (identity, confinement, exec)
// child_process.cpp (child_internal.hpp).
#include "comet/lifecycle/child.hpp"

#include <fcntl.h>
#include <limits.h>
#include <linux/keyctl.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "child_internal.hpp"
#include "comet/base/fault.hpp"
#include "comet/base/fd.hpp"
#include "comet/base/sys.hpp"
#include "comet/lifecycle/hooks.hpp"
#include "comet/lifecycle/sync.hpp"

namespace comet::runtime::child {

const ChildContext* g_ctx = nullptr;
std::string g_state;
int g_dev_null = -1;

[[noreturn]] void die(int err, const char* fmt, ...) noexcept {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (g_ctx && g_ctx->fds.sync_fd >= 0 &&
      send_msg(g_ctx->fds.sync_fd, MsgType::kError, err, 0, buf) == 0) {
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

void send_fd(int sock, int fd, std::string_view payload, const char* what, int fd2) {
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

namespace {

void expect(MsgType t) noexcept {
  Msg m;
  int r = recv_msg(g_ctx->fds.sync_fd, &m);
  if (r || m.type != t) ::_exit(1);  // parent gone or confused: nothing to report to
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
    send_msg(g_ctx->fds.sync_fd, MsgType::kInitPid, 0, pid);
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
  for (auto& j : g_ctx->ns.joins) {
    if (::setns(j.fd, j.clone_flag) < 0)
      die(errno, "join %s namespace %s", ns_name(j.clone_flag), j.path.c_str());
    ::close(j.fd);
  }
}

void write_time_offsets() {
  const ChildContext& c = *g_ctx;
  if (c.ns.time_offsets.empty()) return;
  std::string text;
  for (auto& [clock, off] : c.ns.time_offsets)
    text += clock + " " + std::to_string(off.secs) + " " + std::to_string(off.nanosecs) + "\n";
  std::string rel = std::to_string(::getpid()) + "/timens_offsets";
  UniqueFd fd(openat2_in_root(c.fds.proc_fd, rel, O_WRONLY, RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH));
  if (!fd || ::write(fd.get(), text.data(), text.size()) < 0) die(errno, "write timens_offsets");
}

// The parent is gone (the sync socket hung up): nothing may run unwatched.
// A rootless sandbox (ns.self_map_uid): the user namespace clone(2) made
// gets one line per map, the caller's own uid and gid onto themselves,
// written by the child itself as `unshare -r` does (no newuidmap; an
// unprivileged writer may map its own ids once setgroups is denied).
// Before the child is made undumpable: its /proc files are root's then.
void map_own_ids() {
  const ChildContext& ctx = *g_ctx;
  char uid_line[64], gid_line[64];
  std::snprintf(uid_line, sizeof uid_line, "%ld %ld 1\n", ctx.ns.self_map_uid, ctx.ns.self_map_uid);
  std::snprintf(gid_line, sizeof gid_line, "%ld %ld 1\n", ctx.ns.self_map_gid, ctx.ns.self_map_gid);
  const std::pair<const char*, const char*> files[] = {
      {"self/setgroups", "deny"}, {"self/uid_map", uid_line}, {"self/gid_map", gid_line}};
  for (const auto& [file, text] : files) {
    int fd = ::openat(ctx.fds.proc_fd, file, O_WRONLY | O_CLOEXEC);
    if (fd < 0) die(errno, "open /proc/%s", file);
    const size_t len = std::strlen(text);
    const ssize_t n = ::write(fd, text, len);
    const int err = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(len)) die(n < 0 ? err : EIO, "write /proc/%s", file);
  }
}

void exit_if_orphaned() {
  struct pollfd p = {g_ctx->fds.sync_fd, POLLRDHUP, 0};
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR))) ::_exit(1);
}

// sync 1 and 2: the namespaces clone(2) did not make. Two-stage (joins, a
// time namespace) stage 1 joins and unshares them here, the parent writes
// the id maps of a new user namespace, and the init is forked into a new
// (or joined) pid or time namespace. Returns in the init.
void enter_namespaces() {
  const ChildContext& ctx = *g_ctx;
  if (ctx.ns.slow_path) {
    /* sync 1: joins and new namespaces from stage 1 */
    join_namespaces();
    int unshare_flags = ctx.ns.new_ns_flags & ~(CLONE_NEWPID | CLONE_NEWTIME | CLONE_NEWCGROUP);
    if (unshare_flags && ::unshare(unshare_flags) < 0) die(errno, "unshare namespaces");
    if (ctx.ns.new_ns_flags & CLONE_NEWUSER) {
      send_msg(ctx.fds.sync_fd, MsgType::kNeedMaps);
      expect(MsgType::kMapsDone);
      if (::setresuid(0, 0, 0) < 0 || ::setresgid(0, 0, 0) < 0)
        die(errno, "become root in the user namespace");
    }
  }
  /* sync 2: the parent has written the id maps and placed us in the cgroups */
  expect(MsgType::kGo);
  if (!ctx.ns.slow_path && (ctx.ns.new_ns_flags & CLONE_NEWUSER)) {
    if (::setresuid(0, 0, 0) < 0 || ::setresgid(0, 0, 0) < 0)
      die(errno, "become root in the user namespace");
  }
  if (ctx.ns.slow_path) {
    int late = ctx.ns.new_ns_flags & (CLONE_NEWPID | CLONE_NEWTIME);
    bool joined_pid = false;
    for (auto& j : ctx.ns.joins) joined_pid |= j.clone_flag == CLONE_NEWPID;
    if (late && ::unshare(late) < 0) die(errno, "unshare pid/time namespace");
    if (late & CLONE_NEWTIME) write_time_offsets();
    if (late || joined_pid) {
      fork_after_pid_message();
    }
  }
  if (ctx.ns.cgroupns && ::unshare(CLONE_NEWCGROUP) < 0) die(errno, "unshare cgroup namespace");
}

int open_rootfs() {
  const std::string& at = g_ctx->fs.host_mounts ? g_ctx->fs.host_root : g_ctx->fs.rootfs;
  int rootfd = ::open(at.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) die(errno, "open rootfs %s", at.c_str());
  return rootfd;
}

// runc creates a missing cwd; made here, inside the root, before masks.
// Then the masks, and the move into the root.
void finish_root(int rootfd) {
  UniqueFd cwdfd(ensure_target(rootfd, g_ctx->proc.cwd, true));
  cwdfd.reset();
  mask_paths(rootfd);
  enter_root(rootfd);
}

void set_rlimits() {
  for (auto& rl : g_ctx->proc.rlimits)
    if (::setrlimit(rl.resource, &rl.value) < 0)
      die(errno, "error setting rlimit type %d", rl.resource);
}

// process.scheduler, ioPriority, execCPUAffinity.final, linux.memoryPolicy:
// in the cgroup already, before the credentials change (SCHED_FIFO needs
// CAP_SYS_NICE), all inherited by the process's children and across execve.
void set_process_attrs() {
  const ProcessAttrs& a = g_ctx->proc.attrs;
  const char* what = "";
  if (int e = apply_sched_attrs(a, &what)) die(e, "%s", what);
  if (int e = apply_affinity(a.cpus_final))
    die(e, "sched_setaffinity (process.execCPUAffinity.final)");
}

// execCPUAffinity.initial: first thing, before the cgroup (runc: the
// runtime's own process, before it joins).
void set_initial_affinity() {
  if (int e = apply_affinity(g_ctx->proc.attrs.cpus_initial))
    die(e, "sched_setaffinity (process.execCPUAffinity.initial)");
}

void join_session_keyring() {
  const ChildContext& ctx = *g_ctx;
  if (ctx.proc.new_keyring &&
      ::syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, ctx.proc.keyring_name.c_str()) < 0 &&
      errno != ENOSYS && errno != EDQUOT && errno != EACCES)
    die(errno, "join session keyring");
}

// sync 3: the prestart and createRuntime hooks run in the parent; then the
// createContainer hooks here, with the state it wrote.
void sync_hooks() {
  const ChildContext& ctx = *g_ctx;
  send_msg(ctx.fds.sync_fd, fault_is("sync-out-of-order") ? MsgType::kReady : MsgType::kMountsDone);
  expect(MsgType::kHooksDone);
  if (auto st = read_file_at(ctx.fds.state_dir_fd, "hookstate.json"); st.ok()) g_state = *st;
  if (!ctx.proc.create_container_hooks.empty()) {
    Status st = run_hooks(ctx.proc.create_container_hooks, "createContainer", g_state);
    if (!st.ok()) die(st.error().err(), "%s", st.error().message().c_str());
  }
}

// The container's own names and limits, in its namespaces.
void set_system() {
  const ChildContext& ctx = *g_ctx;
  if (ctx.proc.set_hostname &&
      (fault_fail("sethostname-eperm", EPERM) ||
       ::sethostname(ctx.proc.hostname.data(), ctx.proc.hostname.size()) < 0))
    die(errno, "sethostname %s", ctx.proc.hostname.c_str());
  if (ctx.proc.set_domainname &&
      ::setdomainname(ctx.proc.domainname.data(), ctx.proc.domainname.size()) < 0)
    die(errno, "setdomainname %s", ctx.proc.domainname.c_str());
  write_sysctls();
  set_rlimits();
  set_process_attrs();
  if (ctx.proc.personality != 0xffffffff && ::personality(ctx.proc.personality) < 0)
    die(errno, "personality");
  join_session_keyring();
}

// sync 4: ready; wait for `start` to open the exec fifo, then run the
// startContainer hooks and answer through it.
void wait_for_start() {
  const ChildContext& ctx = *g_ctx;
  // From here we outlive `create`: no parent-death signal. Killed before
  // this point, the parent takes us with it; after it, delete --force
  // finds us through the cgroup.
  ::prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
  send_msg(ctx.fds.sync_fd, MsgType::kReady);
  ::close(ctx.fds.sync_fd);
  int fifo = ::openat(ctx.fds.state_dir_fd, "exec.fifo", O_WRONLY | O_CLOEXEC);
  if (fifo < 0) die(errno, "open exec fifo");
  // Test-only (fault.hpp): the init dies as `start` opens the fifo, or
  // closes the fifo without a word and stays.
  if (fault_is("init-exit-at-start")) ::_exit(1);
  if (fault_is("init-close-fifo")) {
    ::close(fifo);
    ::sleep(30);
    ::_exit(1);
  }
  ::close(ctx.fds.state_dir_fd);
  // `start` reads the fifo to EOF: "0" is success, anything else the error.
  if (!ctx.proc.start_container_hooks.empty()) {
    std::string created = g_state;
    size_t pos = created.find("\"status\":\"creating\"");
    if (pos != std::string::npos) created.replace(pos, 19, "\"status\":\"created\"");
    Status st = run_hooks(ctx.proc.start_container_hooks, "startContainer", created);
    if (!st.ok()) {
      std::string m = st.error().what();
      ssize_t w = ::write(fifo, m.data(), m.size());
      (void)w;
      ::_exit(1);
    }
  }
  if (::write(fifo, "0", 1) != 1) die(errno, "write exec fifo");
  ::close(fifo);
}

}  // namespace
}  // namespace comet::runtime::child

namespace comet::runtime {

using namespace child;

[[noreturn]] void child_main(const ChildContext& ctx) noexcept {
  g_ctx = &ctx;
  // flock() belongs to the open file description we share with the parent.
  ::close(ctx.fds.lock_fd);
  // Nobody in the container may open our /proc/PID/{exe,fd,mem} while we
  // still run the runtime's code (CVE-2019-5736 class). Rootless, an
  // ordinary user writes our id maps: dumpable until then (runc does the
  // same); no process of the container exists before sync 2.
  if (!ctx.ns.maps_need_dumpable) ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  set_initial_affinity();
  enter_namespaces();  // sync 1, sync 2
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // Mounts in a mount namespace of our own, or (host_mounts) in the
  // runtime's, under the state dir (prepare_host_root).
  const bool mntns = (ctx.ns.new_ns_flags & CLONE_NEWNS) || ctx.fs.host_mounts;
  if (ctx.fs.host_mounts)
    prepare_host_root();
  else if (mntns)
    prepare_rootfs_mount();
  open_dev_null("fstat /dev/null");
  UniqueFd rootfd(open_rootfs());
  if (mntns) {
    /* mounts, all resolved inside the rootfs */
    for (auto& op : ctx.fs.mounts) do_mount(rootfd.get(), op);
    setup_dev(rootfd.get());
  }
  int slave = ctx.proc.terminal ? setup_console(rootfd.get()) : -1;
  sync_hooks();  // sync 3
  if (mntns) {
    finish_root(rootfd.get());
  } else if (::chroot(ctx.fs.rootfs.c_str()) < 0 || ::chdir("/") < 0) {
    die(errno, "chroot %s", ctx.fs.rootfs.c_str());
  }
  rootfd.reset();
  verify_confinement();
  set_system();
  // A session of its own, with or without a terminal (as runc's init): the
  // caller's terminal is then not the container's controlling terminal, so
  // TIOCSTI into an inherited stdin needs CAP_SYS_ADMIN (tty_ioctl(4)).
  const Prologue p = become_process(slave, " set in config.json");
  // A notify listener must reach the caller before we block: load now.
  bool early_seccomp = ctx.confine.has_seccomp && ctx.confine.seccomp.needs_listener;
  if (early_seccomp) load_seccomp();
  wait_for_start();  // sync 4
  exec_process(p, early_seccomp);
}

namespace {

/* sync 2: the parent has placed us in the cgroups (if any) */
void go_and_unshare_cgroupns() noexcept {
  expect(MsgType::kGo);
  if (g_ctx->ns.cgroupns && ::unshare(CLONE_NEWCGROUP) < 0) die(errno, "unshare cgroup namespace");
}

}  // namespace

// The caller's stdio is fds on the caller's mounts, where the sandbox's
// read-only binds do not apply: through them (or /proc/self/fd/N) the
// command could chmod, chown or set the times or xattrs of what they name
// (red team round 15: `< .git/HEAD`; round 17: the host's /dev/null made
// 0644 by `sandbox -- CMD < /dev/null`, the caller's terminal made 0666, a
// host file the view hides made world-readable). So each fd 0-2 that is a
// terminal (a pty, a console, /dev/tty), /dev/null, /dev/zero, /dev/full,
// /dev/random, /dev/urandom, or a regular file open only for reading, is
// reopened here, before the pivot while the caller's tree is still in
// view, by the name the kernel gives it, through a detached read-only
// clone of that one mount (open_tree, mount_setattr): the same file (dev,
// inode, rdev), at its offset, with its flags, on a mount where every
// metadata call answers EROFS; a terminal still reads and writes. Other
// devices are left alone (a second open of a pty master, tun or fuse is a
// new instance; of a serial line or a tape, a side effect). A file open
// for writing stays the caller's: it shares its offset with the caller
// (`{ sandbox -- a; b; } > out`), and the caller gave it to be written.
// Returns the fds done (bit N: fd N). Raw calls and stack buffers only: we
// share the runtime's memory.
static bool pinnable_device(dev_t rdev) noexcept {
  const unsigned ma = major(rdev), mi = minor(rdev);
  if (ma == 1) return mi == 3 || mi == 5 || mi == 7 || mi == 8 || mi == 9;
  // vt (not ttyS: a serial line's open has side effects), pts, /dev/tty, /dev/console
  return (ma == 4 && mi < 64) || (ma >= 136 && ma <= 143) || (ma == 5 && (mi == 0 || mi == 1));
}

static int pin_stdio_read_only() noexcept {
  int done = 0;
  for (int fd = 0; fd <= 2; fd++) {
    struct stat st;
    const int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || ::fstat(fd, &st) < 0) continue;
    if (!(S_ISCHR(st.st_mode) && pinnable_device(st.st_rdev)) &&
        !(S_ISREG(st.st_mode) && (fl & O_ACCMODE) == O_RDONLY))
      continue;
    struct statfs fs;
    if (::fstatfs(fd, &fs) == 0 && (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC))
      continue;
    char self[] = "/proc/self/fd/0";
    self[sizeof self - 2] = static_cast<char>('0' + fd);
    char path[PATH_MAX];
    const ssize_t n = ::readlink(self, path, sizeof path - 1);
    if (n <= 0 || n >= static_cast<ssize_t>(sizeof path - 1) || path[0] != '/')
      continue;  // "(unreachable)...", a name too long to be sure of
    path[n] = '\0';
    const int tree = static_cast<int>(
        ::syscall(SYS_open_tree, AT_FDCWD, path,
                  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT));
    if (tree < 0) continue;
    struct mount_attr ro = {};
    ro.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;
    int nfd = -1;
    if (::syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &ro, sizeof ro) == 0) {
      char via[32] = "/proc/self/fd/";  // + the tree's fd, in decimal
      char digits[12];
      int k = 0;
      for (unsigned v = static_cast<unsigned>(tree); k == 0 || v > 0; v /= 10)
        digits[k++] = static_cast<char>('0' + v % 10);
      for (int i = 0; i < k; i++) via[14 + i] = digits[k - 1 - i];
      via[14 + k] = '\0';
      nfd = ::open(via, (fl & (O_ACCMODE | O_APPEND | O_NONBLOCK)) | O_NOCTTY | O_CLOEXEC);
    }
    ::close(tree);
    if (nfd < 0) continue;
    struct stat nst;
    const off_t off = S_ISREG(st.st_mode) ? ::lseek(fd, 0, SEEK_CUR) : 0;
    if (::fstat(nfd, &nst) == 0 && nst.st_dev == st.st_dev && nst.st_ino == st.st_ino &&
        nst.st_rdev == st.st_rdev && (off <= 0 || ::lseek(nfd, off, SEEK_SET) == off) &&
        ::dup3(nfd, fd, 0) == fd)
      done |= 1 << fd;
    ::close(nfd);
  }
  return done;
}

// Where no clone could be made (open_tree or mount_setattr refused: an
// older kernel, a container's seccomp profile), a read-only regular file is
// reopened after the pivot, in the sandbox's view, by the same name and at
// its offset: read-only where the view is (red team round 15). One the
// view does not show keeps the caller's fd.
static void reopen_stdin_files_in_view(int done) noexcept {
  for (int fd = 0; fd <= 2; fd++) {
    struct stat st;
    const int fl = ::fcntl(fd, F_GETFL);
    if ((done & (1 << fd)) || fl < 0 || (fl & O_ACCMODE) != O_RDONLY || ::fstat(fd, &st) < 0 ||
        !S_ISREG(st.st_mode))
      continue;
    char self[] = "/proc/self/fd/0";
    self[sizeof self - 2] = static_cast<char>('0' + fd);
    char path[PATH_MAX];
    const ssize_t n = ::readlink(self, path, sizeof path - 1);
    if (n <= 0 || n >= static_cast<ssize_t>(sizeof path - 1) || path[0] != '/') continue;
    struct statfs fs;
    if (::fstatfs(fd, &fs) == 0 && (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC))
      continue;
    path[n] = '\0';
    const int nfd = ::open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    if (nfd < 0) continue;
    struct stat nst;
    const off_t off = ::lseek(fd, 0, SEEK_CUR);
    if (::fstat(nfd, &nst) == 0 && S_ISREG(nst.st_mode) && nst.st_size == st.st_size &&
        (off < 0 || ::lseek(nfd, off, SEEK_SET) == off))
      (void)::dup3(nfd, fd, 0);
    ::close(nfd);
  }
}

[[noreturn]] void sandbox_child_main(const ChildContext& ctx) noexcept {
  g_ctx = &ctx;
  g_state = ctx.confine.state_json;
  if (ctx.ns.self_map_uid >= 0) map_own_ids();
  // As child_main: not dumpable while the runtime's code runs; dies with
  // the runtime. A parent that died before the prctl: kGo never comes.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  // The parent's v1 cgroup.procs writes wait for an RCU grace period
  // (~1.3 ms idle, 4 ms loaded): the mounts are made meanwhile, in our own
  // mount namespace, and kGo is awaited before anything that needs the
  // cgroups: the cgroup namespace's root, a cgroup mount, the command. A
  // parent that died before the prctl: kGo never comes (EOF), we exit.
  const bool cgroup_mount = std::any_of(ctx.fs.mounts.begin(), ctx.fs.mounts.end(),
                                        [](const MountOp& op) { return op.cgroup; });
  if (cgroup_mount) go_and_unshare_cgroupns();
  if (::mount(nullptr, "/", nullptr, MS_SLAVE | MS_REC, nullptr) < 0)
    die(errno, "set / propagation");
  const int stdio_pinned = pin_stdio_read_only();
  make_skeleton();
  if (::mount(ctx.fs.rootfs.c_str(), ctx.fs.rootfs.c_str(), nullptr, MS_BIND | MS_REC, nullptr) < 0)
    die(errno, "bind rootfs %s", ctx.fs.rootfs.c_str());
  // The root is made under the skeleton dir (the runtime's dir in /run): a
  // recursive bind of a host tree above it (/run) would copy it and every
  // mount made in it so far (~20 more mounts to make and tear down, hidden
  // under the /run/comet-runtime mask). Unbindable, it is left out.
  if (::mount(nullptr, ctx.fs.rootfs.c_str(), nullptr, MS_UNBINDABLE, nullptr) < 0)
    die(errno, "make %s unbindable", ctx.fs.rootfs.c_str());
  open_dev_null("open /dev/null");
  UniqueFd rootfd(open_rootfs());
  for (auto& op : ctx.fs.mounts) do_mount(rootfd.get(), op);
  setup_dev(rootfd.get());
  finish_root(rootfd.get());
  rootfd.reset();
  reopen_stdin_files_in_view(stdio_pinned);
  if (!cgroup_mount) go_and_unshare_cgroupns();
  verify_confinement();
  if (ctx.proc.set_hostname &&
      ::sethostname(ctx.proc.hostname.data(), ctx.proc.hostname.size()) < 0)
    die(errno, "sethostname %s", ctx.proc.hostname.c_str());
  write_sysctls();
  set_rlimits();
  join_session_keyring();
  // No controlling terminal (TIOCSTI into the caller's terminal needs one,
  // or CAP_SYS_ADMIN); stdio stays the caller's.
  const Prologue p = become_process(-1, "");
  // The new credentials cleared the parent-death signal (commit_creds):
  // set it again, then make sure the parent did not die in between.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) die(errno, "prctl(PR_SET_PDEATHSIG)");
  exit_if_orphaned();
  bool early_seccomp = ctx.confine.has_seccomp && ctx.confine.seccomp.needs_listener;
  if (early_seccomp) load_seccomp();
  exec_process(p, early_seccomp);
}

[[noreturn]] void exec_child_main(const ChildContext& ctx) noexcept {
  g_ctx = &ctx;
  ::close(ctx.fds.lock_fd);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  set_initial_affinity();
  expect(MsgType::kGo);  // the parent has placed us in the container's cgroups
  if (ctx.ns.exec_ns_flags && ::setns(ctx.fds.exec_pidfd, ctx.ns.exec_ns_flags) < 0)
    die(errno, "join the container's namespaces");
  ::close(ctx.fds.exec_pidfd);
  // The container shares our mount namespace: setns changed no root, so
  // enter the init's (runc's setns init chroots the same way).
  if (!ctx.fs.exec_root.empty() && (::chroot(ctx.fs.exec_root.c_str()) < 0 || ::chdir("/") < 0))
    die(errno, "chroot %s", ctx.fs.exec_root.c_str());
  // The pid (and time) namespace applies to children: fork the process.
  fork_after_pid_message();
  int slave = ctx.proc.terminal ? exec_console() : -1;
  set_rlimits();
  set_process_attrs();
  if (ctx.proc.oom_score_adj) {
    std::string v = std::to_string(*ctx.proc.oom_score_adj);
    UniqueFd fd(::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC));
    if (!fd || ::write(fd.get(), v.data(), v.size()) < 0)
      die(errno, "set oom_score_adj to %s", v.c_str());
  }
  // A session of its own, as the init's (child_main).
  // The sync socket stays open (CLOEXEC): execve closing it is the success signal.
  exec_process(become_process(slave, ""), /*early_seccomp=*/false);
}

}  // namespace comet::runtime
