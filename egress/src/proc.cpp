#include "comet/egress/proc.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace comet::egress {

unsigned long long start_time(int pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  // comm may hold spaces and ')': fields start after the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (!p) return 0;
  p++;
  // Skip fields 3 (state) .. 21; field 22 is starttime.
  for (int field = 3; field < 22; ++field) {
    while (*p == ' ') p++;
    while (*p && *p != ' ') p++;
  }
  while (*p == ' ') p++;
  return std::strtoull(p, nullptr, 10);
}

namespace {
int pidfd_open(int pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}
}  // namespace

bool kill_verified(int pid, unsigned long long start, int timeout_ms) {
  if (pid <= 0) return true;
  UniqueFd pfd(pidfd_open(pid));
  if (!pfd.valid()) return errno == ESRCH;
  if (start != 0 && start_time(pid) != start) return true;  // not ours any more
  // The resolver's seccomp filter refuses pidfd_send_signal (a /proc/PID
  // dir fd is a pidfd too) and lets kill() reach only its companion.
  if (::syscall(SYS_pidfd_send_signal, pfd.get(), SIGKILL, nullptr, 0) < 0 && errno == EPERM)
    ::kill(pid, SIGKILL);
  struct pollfd p = {pfd.get(), POLLIN, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  // Our own child (run in the foreground): reap it.
  ::waitpid(pid, nullptr, WNOHANG);
  return r > 0;
}

std::vector<int> children_of(int pid) {
  std::vector<int> out;
  std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return out;
  buf[n] = 0;
  for (char* p = buf; *p;) {
    char* end = nullptr;
    long v = std::strtol(p, &end, 10);
    if (end == p) break;
    if (v > 0) out.push_back(static_cast<int>(v));
    p = end;
  }
  return out;
}

Result<int> wait_child(pid_t pid, int timeout_ms) {
  UniqueFd pfd(pidfd_open(pid));
  if (pfd.valid()) {
    struct pollfd p = {pfd.get(), POLLIN, 0};
    int r;
    do {
      r = ::poll(&p, 1, timeout_ms);
    } while (r < 0 && errno == EINTR);
    if (r == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      return Error::sys(ETIMEDOUT, "wait for helper " + std::to_string(pid));
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Error::sys(errno, "waitpid " + std::to_string(pid));
  }
  return status;
}

void child_stdio(int stderr_fd) noexcept {
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(stderr_fd >= 0 ? stderr_fd : null, 2);
    if (null > 2) ::close(null);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s = 1; s < NSIG; ++s) ::signal(s, SIG_DFL);
}

void close_fds_except(const int* keep, int n) noexcept {
  unsigned from = 3;
  for (int i = 0; i < n; ++i) {
    if (keep[i] < 3) continue;
    unsigned k = static_cast<unsigned>(keep[i]);
    if (k > from) ::syscall(SYS_close_range, from, k - 1, 0);
    from = k + 1;
  }
  ::syscall(SYS_close_range, from, ~0U, 0);
}

std::string last_log_line(const std::string& log_file, std::size_t max_bytes,
                          bool (*is_noise)(std::string_view line)) {
  int fd = ::open(log_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text(max_bytes, '\0');
  ssize_t n = ::read(fd, text.data(), max_bytes);
  ::close(fd);
  if (n <= 0) return "";
  text.resize(static_cast<std::size_t>(n));
  std::string last;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t e = text.find('\n', pos);
    std::string line = text.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
    if (!line.empty() && !is_noise(line)) last = line;
    pos = e == std::string::npos ? text.size() : e + 1;
  }
  return last;
}

}  // namespace comet::egress
