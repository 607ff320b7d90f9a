// Test-only fault injection (docs/reliability.md "Fault points"). The
// reliability suite and the error-table test set COMET_FAULT=<name> to
// reach failures that cannot be caused from outside on a sane host: a
// syscall that does not fail, a sync message out of order, a freezer that
// never settles. Unset (the normal case), a site costs one getenv.
//
// Header-only, with no dependency of its own, so every library can carry
// its sites; runtime/include/comet/runtime/fault.hpp lists the names.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace comet {

// True if COMET_FAULT names this site. Async-signal-safe enough for the
// fork-style child: getenv reads the copied environment, no allocation.
inline bool fault_is(const char* name) noexcept {
  const char* want = std::getenv("COMET_FAULT");
  return want && std::strcmp(want, name) == 0;
}

// For `if (fault_fail("x", EMFILE) || ::call(...) < 0) return Error::sys(errno, ...)`:
// when the site is named, errno is set to err and the call is skipped.
inline bool fault_fail(const char* name, int err) noexcept {
  if (!fault_is(name)) return false;
  errno = err;
  return true;
}

}  // namespace comet
