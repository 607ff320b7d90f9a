// Owning handles for kernel resources. Every fd, pidfd and child the runtime
// and its libraries hold lives in one of these, so every error path closes or
// reaps. The only fd owner of the project: seccomp/, egress/ and runtime/ all
// use this one.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <utility>

namespace comet {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// A process handle: signal and wait through the pidfd, never a bare pid, so
// a recycled pid can never be hit.
// A pidfd of one task, a thread or a process: what a seccomp notification
// names is a thread id (a multi-threaded program's worker, Node's fs pool),
// and pidfd_open() of a thread that leads no group fails without
// PIDFD_THREAD (Linux 6.9). -1 with errno set.
int open_task_pidfd(pid_t tid) noexcept;

class PidFd {
 public:
  PidFd() = default;
  PidFd(pid_t pid, UniqueFd fd) : pid_(pid), fd_(std::move(fd)) {}

  // pidfd_open(pid). Fails with ESRCH when the process is gone.
  static int open(pid_t pid, PidFd* out) noexcept;

  pid_t pid() const { return pid_; }
  int fd() const { return fd_.get(); }
  bool valid() const { return fd_.valid(); }

  int send_signal(int sig) const noexcept;  // 0 or errno
  // True when the process has exited (pidfd readable), waiting up to
  // timeout_ms (-1 forever, 0 poll).
  bool wait_exit(int timeout_ms) const noexcept;

 private:
  pid_t pid_ = -1;
  UniqueFd fd_;
};

// A child this process forked: killed (SIGKILL) and reaped on destruction
// unless released. Used for the container init until create hands it over.
class ChildGuard {
 public:
  ChildGuard() = default;
  explicit ChildGuard(pid_t pid) : pid_(pid) {}
  ~ChildGuard() { kill_and_reap(); }
  ChildGuard(ChildGuard&& o) noexcept : pid_(std::exchange(o.pid_, -1)) {}
  ChildGuard& operator=(ChildGuard&& o) noexcept {
    if (this != &o) {
      kill_and_reap();
      pid_ = std::exchange(o.pid_, -1);
    }
    return *this;
  }
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;

  pid_t pid() const { return pid_; }
  pid_t release() { return std::exchange(pid_, -1); }
  // waitpid; returns the raw status, or -1 with errno.
  int wait() noexcept;
  void kill_and_reap() noexcept;

 private:
  pid_t pid_ = -1;
};

}  // namespace comet
