// Loading a compiled program in the container child: one raw seccomp(2)
// call. No allocation, no libseccomp, async-signal-safe.
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "comet/seccomp/seccomp.hpp"

namespace comet::seccomp {

int load(const Program& prog, int* listener_fd) noexcept {
  if (listener_fd != nullptr) *listener_fd = -1;
  if (prog.filter.empty() || prog.filter.size() > BPF_MAXINSNS) return EINVAL;
  if (prog.needs_listener && listener_fd == nullptr) return EINVAL;

  sock_fprog fprog{};
  fprog.len = static_cast<unsigned short>(prog.filter.size());
  // seccomp(2) only reads the program; the cast is for the UAPI struct.
  fprog.filter = const_cast<sock_filter*>(prog.filter.data());

  unsigned long flags = prog.flags;
  if (prog.needs_listener) flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;

  const long rc = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog);
  if (rc < 0) return errno != 0 ? errno : EINVAL;
  if (prog.needs_listener) {
    *listener_fd = static_cast<int>(rc);
  } else if (rc > 0) {
    // TSYNC without TSYNC_ESRCH: rc is the id of a thread that could not be
    // synchronised, and no filter was installed.
    return ESRCH;
  }
  return 0;
}

}  // namespace comet::seccomp
