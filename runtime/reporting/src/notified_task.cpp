// The notified task's memory, fds and status (notified_task.hpp).
#include "comet/reporting/notified_task.hpp"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace comet::runtime::task {

bool notif_valid(int listener, std::uint64_t id) noexcept {
  return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

ssize_t read_some(int pid, std::uint64_t addr, void* out, std::size_t n) noexcept {
  struct iovec local = {out, n};
  struct iovec remote = {reinterpret_cast<void*>(addr), n};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
}

bool read_all(int pid, std::uint64_t addr, void* out, std::size_t n) noexcept {
  return n == 0 || read_some(pid, addr, out, n) == static_cast<ssize_t>(n);
}

int read_string(int pid, std::uint64_t addr, char* out, std::size_t cap,
                std::size_t* len) noexcept {
  *len = 0;
  if (addr == 0) return EFAULT;
  std::size_t have = 0;
  while (have < cap) {
    const std::uint64_t at = addr + have;
    std::size_t chunk = 4096 - (at & 4095);
    if (chunk > cap - have) chunk = cap - have;
    const ssize_t n = read_some(pid, at, out + have, chunk);
    if (n <= 0) {
      *len = have;
      return EFAULT;
    }
    const void* nul = std::memchr(out + have, 0, static_cast<std::size_t>(n));
    if (nul) {
      *len = static_cast<std::size_t>(static_cast<const char*>(nul) - out);
      return 0;
    }
    have += static_cast<std::size_t>(n);
  }
  *len = cap;
  return ENAMETOOLONG;
}

UniqueFd open_pidfd(int pid) noexcept {
  return UniqueFd(open_task_pidfd(pid));  // a thread's too (PIDFD_THREAD)
}

UniqueFd take_fd(int pidfd, int fd) noexcept {
  return UniqueFd(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0)));
}

bool TaskStatus::read(int pid, std::size_t max) {
  text_.clear();
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", pid);
  UniqueFd f(::open(path, O_RDONLY | O_CLOEXEC));
  if (!f) return false;
  char buf[4096];
  while (text_.size() < max) {
    const std::size_t want = std::min(sizeof buf, max - text_.size());
    const ssize_t n = ::read(f.get(), buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text_.append(buf, static_cast<std::size_t>(n));
  }
  return !text_.empty();
}

std::optional<std::vector<long>> TaskStatus::numbers(std::string_view key, int base) const {
  std::size_t at = 0;
  for (;;) {
    if (text_.compare(at, key.size(), key) == 0 && at + key.size() < text_.size() &&
        text_[at + key.size()] == ':')
      break;
    at = text_.find('\n', at);
    if (at == std::string::npos) return std::nullopt;
    at++;
  }
  std::size_t end = text_.find('\n', at);
  if (end == std::string::npos) end = text_.size();
  // strtol stops at the newline: the line, copied, ends there.
  const std::string line = text_.substr(at + key.size() + 1, end - at - key.size() - 1);
  std::vector<long> out;
  const char* p = line.c_str();
  for (;;) {
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) break;
    char* e = nullptr;
    const long v = std::strtol(p, &e, base);
    if (e == p) break;
    out.push_back(v);
    p = e;
  }
  return out;
}

}  // namespace comet::runtime::task
