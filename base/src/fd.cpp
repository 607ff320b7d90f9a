#include "comet/base/fd.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cerrno>

namespace comet {

int open_task_pidfd(pid_t tid) noexcept {
  constexpr unsigned kPidfdThread = 0x80;  // PIDFD_THREAD (= O_EXCL), Linux 6.9
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, tid, kPidfdThread));
  if (fd < 0 && errno == EINVAL) fd = static_cast<int>(::syscall(SYS_pidfd_open, tid, 0));
  return fd;
}

int PidFd::open(pid_t pid, PidFd* out) noexcept {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno;
  *out = PidFd(pid, UniqueFd(fd));
  return 0;
}

int PidFd::send_signal(int sig) const noexcept {
  if (::syscall(SYS_pidfd_send_signal, fd_.get(), sig, nullptr, 0) < 0) return errno;
  return 0;
}

bool PidFd::wait_exit(int timeout_ms) const noexcept {
  struct pollfd p = {fd_.get(), POLLIN, 0};
  for (;;) {
    int r = ::poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
}

int ChildGuard::wait() noexcept {
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid_, &status, __WALL);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    pid_ = -1;
    return status;
  }
}

void ChildGuard::kill_and_reap() noexcept {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status;
  while (::waitpid(pid_, &status, __WALL) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace comet
