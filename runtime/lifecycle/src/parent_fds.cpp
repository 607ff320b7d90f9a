// The parent's fds for a child, as create and exec both open them
// (lifecycle_internal.hpp): always above the caller's preserved fds.
#include <fcntl.h>
#include <sys/socket.h>

#include <cerrno>

#include "comet/base/fault.hpp"
#include "comet/base/sys.hpp"
#include "comet/lifecycle/trampoline.hpp"
#include "lifecycle_internal.hpp"

namespace comet::runtime {

Result<UniqueFd> high(UniqueFd fd, int min_fd, const std::string& what) {
  if (!fd.valid() || fd.get() >= min_fd) return fd;
  int n = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, min_fd);
  if (n < 0) return Error::sys(errno, "dup " + what);
  return UniqueFd(n);
}

Result<SyncPair> sync_pair(int min_fd) {
  int sp[2];
  if (fault_fail("socketpair-emfile", EMFILE) ||
      ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
    return Error::sys(errno, "socketpair");
  UniqueFd parent(sp[0]), child(sp[1]);
  SyncPair p;
  TRY(p.parent, high(std::move(parent), min_fd, "sync socket"));
  TRY(p.child, high(std::move(child), min_fd, "sync socket"));
  return p;
}

Result<UniqueFd> trampoline_above(int min_fd) {
  TRY(UniqueFd fd, sealed_trampoline());
  return high(std::move(fd), min_fd, "exec trampoline");
}

Result<UniqueFd> console_above(const std::string& path, int min_fd) {
  TRY(UniqueFd s, connect_unix(path, "console socket"));
  return high(std::move(s), min_fd, "console socket");
}

}  // namespace comet::runtime
