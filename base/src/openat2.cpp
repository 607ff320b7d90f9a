#include "comet/base/openat2.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace comet {

int sys_openat2(int dirfd, const char* path, const struct open_how& how, int attempts) noexcept {
  int fd = -1;
  if (attempts < 1) attempts = 1;
  for (int i = 0; i < attempts; i++) {
    fd = static_cast<int>(::syscall(SYS_openat2, dirfd, path, &how, sizeof how));
    if (fd >= 0 || errno != EAGAIN) break;
  }
  return fd;
}

}  // namespace comet
