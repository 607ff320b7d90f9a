// The sandbox's guardian (sandbox_launch.cpp "the guardian"): what it runs.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "sandbox_parts.hpp"

namespace comet::runtime::sandbox_parts {
namespace {

long raw(long n, long a = 0, long b = 0, long c = 0, long d = 0) noexcept {
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "rcx", "r11", "memory");
  return ret;
}

void raw_append(char* dst, const char* a, const char* b) noexcept {
  while (*a) *dst++ = *a++;
  while (*b) *dst++ = *b++;
  *dst = 0;
}

// Kill every task listed in DIR/cgroup.procs; true when none was listed.
bool raw_kill_cgroup(const char* dir) noexcept {
  char path[PATH_MAX + 32];
  raw_append(path, dir, "/cgroup.procs");
  long fd = raw(SYS_open, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  char buf[4096];
  long n, pid = 0;
  bool none = true;
  while ((n = raw(SYS_read, fd, reinterpret_cast<long>(buf), sizeof buf)) > 0) {
    for (long i = 0; i < n; i++) {
      if (buf[i] >= '0' && buf[i] <= '9') {
        pid = pid * 10 + (buf[i] - '0');
      } else if (pid > 0) {
        raw(SYS_kill, pid, SIGKILL);
        none = false;
        pid = 0;
      }
    }
  }
  raw(SYS_close, fd);
  return none;
}

}  // namespace

int guardian_main(void* arg) noexcept {
  auto* g = static_cast<GuardBlock*>(arg);
  unsigned long all = ~0UL;
  raw(SYS_rt_sigprocmask, SIG_BLOCK, reinterpret_cast<long>(&all), 0, sizeof all);
  raw(SYS_setsid);
  // Every fd but the pipe and the registry's two (closed in the gaps).
  int keep[3] = {g->rd, g->mutex_fd, g->users_fd};
  for (int i = 0; i < 3; i++)
    for (int j = i + 1; j < 3; j++)
      if (keep[j] < keep[i]) {
        int t = keep[i];
        keep[i] = keep[j];
        keep[j] = t;
      }
  int from = 0;
  for (int k : keep) {
    if (k < 0) continue;
    if (k > from) raw(SYS_close_range, from, k - 1, 0);
    from = k + 1;
  }
  raw(SYS_close_range, from, ~0U, 0);
  char b = 0;
  struct iovec iov = {&b, 1};
  alignas(struct cmsghdr) char fds[CMSG_SPACE(sizeof(int) * kGuardFds)];
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = fds;
  msg.msg_controllen = sizeof fds;
  long n;
  do {
    n = raw(SYS_recvmsg, g->rd, reinterpret_cast<long>(&msg), MSG_CMSG_CLOEXEC);
  } while (n == -EINTR);
  if (n == 1 && b == 'd') raw(SYS_exit_group, 0);  // closes the fds it got
  // The runtime died. Its init took the pid namespace with it; kill what
  // may still be in the cgroups (a process can be between clone and the
  // namespace), then remove them (2 s at most).
  for (int i = 0; i < g->n; i++) {
    if (g->e[i].kind != GuardEntry::kCgroup) continue;
    char kill_file[PATH_MAX + 32];
    raw_append(kill_file, g->e[i].path, "/cgroup.kill");
    long fd = raw(SYS_open, reinterpret_cast<long>(kill_file), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      raw(SYS_write, fd, reinterpret_cast<long>("1"), 1);
      raw(SYS_close, fd);
    }
  }
  for (int round = 0; round < 200; round++) {
    bool left = false;
    for (int i = g->n - 1; i >= 0; i--) {
      if (g->e[i].kind != GuardEntry::kCgroup) continue;
      raw_kill_cgroup(g->e[i].path);
      long r = raw(SYS_rmdir, reinterpret_cast<long>(g->e[i].path));
      if (r < 0 && r != -ENOENT) left = true;
    }
    if (!left) break;
    struct timespec ts = {0, 10 * 1000 * 1000};
    raw(SYS_nanosleep, reinterpret_cast<long>(&ts), 0);
  }
  // Placeholders: only by the last sandbox of the workspace out (another
  // one's mounts sit on them), children first, and only what is still the
  // empty one made.
  if (g->users_fd >= 0) {
    raw(SYS_flock, g->mutex_fd, LOCK_EX);
    if (raw(SYS_flock, g->users_fd, LOCK_EX | LOCK_NB) < 0) raw(SYS_exit_group, 0);
  }
  for (int i = g->n - 1; i >= 0; i--) {
    const GuardEntry& e = g->e[i];
    std::uint64_t ino = __atomic_load_n(&e.ino, __ATOMIC_ACQUIRE);
    const bool pending = __atomic_load_n(&e.pending, __ATOMIC_ACQUIRE) != 0;
    if (e.kind == GuardEntry::kCgroup || (ino == 0 && !pending)) continue;
    struct stat st;
    if (raw(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(e.path), reinterpret_cast<long>(&st),
            AT_SYMLINK_NOFOLLOW) < 0)
      continue;
    // Made, but killed before its identity was known: the name did not
    // exist when the plan was made and the create is exclusive, so what is
    // there, still empty, is ours.
    if (ino != 0 && (st.st_ino != ino || st.st_dev != e.dev)) continue;
    if (e.kind == GuardEntry::kDir)
      raw(SYS_rmdir, reinterpret_cast<long>(e.path));  // ENOTEMPTY: not ours to remove
    else if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) == e.size)
      raw(SYS_unlink, reinterpret_cast<long>(e.path));
  }
  // The registry last, still under its mutex (PlaceholderRegistry::finish).
  if (g->users_fd >= 0) {
    raw(SYS_unlink, reinterpret_cast<long>(g->users_path));
    raw(SYS_unlink, reinterpret_cast<long>(g->registry_path));
    raw(SYS_rmdir, reinterpret_cast<long>(g->registry_dir));
  }
  raw(SYS_exit_group, 0);
  return 0;
}

}  // namespace comet::runtime::sandbox_parts
