// openat2(2), the one call site of the raw syscall (glibc has no wrapper).
#pragma once

#include <linux/openat2.h>

namespace comet {

// openat2(dirfd, path, how): the new fd, or -1 with errno. With attempts > 1
// the call is made again on EAGAIN, up to that many times in all: a rename
// or mount anywhere on the host raced a ".." walk under RESOLVE_IN_ROOT or
// RESOLVE_BENEATH and the kernel could not prove it safe; the documented
// answer is to retry (openat2(2)). Async-signal-safe: no allocation, usable
// in the fork-style child.
int sys_openat2(int dirfd, const char* path, const struct open_how& how, int attempts = 1) noexcept;

}  // namespace comet
