#include "comet/base/spawn.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "comet/base/fd.hpp"

namespace comet {

Result<bool> single_threaded() {
  UniqueFd fd(::open("/proc/self/status", O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::sys(errno, "open /proc/self/status");
  char buf[4096];
  ssize_t n;
  do {
    n = ::read(fd.get(), buf, sizeof buf - 1);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Error::sys(errno, "read /proc/self/status");
  buf[n] = 0;
  const char* t = std::strstr(buf, "\nThreads:");
  if (!t) return Error::msg("/proc/self/status has no Threads: line");
  return std::strtol(t + 9, nullptr, 10) == 1;
}

Result<pid_t> spawn_detached(const std::string& what, const std::function<int()>& fn) {
  TRY(bool alone, single_threaded());
  if (!alone) return Error::sys(EDEADLK, "fork " + what + ": the caller has more than one thread");
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) return Error::sys(errno, "pipe for " + what);
  UniqueFd rd(p[0]), wr(p[1]);
  pid_t middle = ::fork();
  if (middle < 0) return Error::sys(errno, "fork " + what);
  if (middle == 0) {
    ::setsid();
    pid_t helper = ::fork();
    if (helper != 0) {
      pid_t v = helper > 0 ? helper : 0;
      (void)!::write(wr.get(), &v, sizeof v);
      ::_exit(helper > 0 ? 0 : 1);
    }
    ::close(rd.release());
    ::close(wr.release());
    ::_exit(fn());
  }
  wr.reset();
  int status = 0;
  while (::waitpid(middle, &status, 0) < 0 && errno == EINTR) {
  }
  pid_t helper = 0;
  ssize_t n;
  do {
    n = ::read(rd.get(), &helper, sizeof helper);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof helper) || helper <= 0)
    return Error::msg("fork " + what + ": no pid");
  return helper;
}

}  // namespace comet
