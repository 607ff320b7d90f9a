// Work in the container's network namespace, then back. As root (or in an
// engine's user namespace that owns our network namespace too) this thread
// enters the namespace and comes back with setns: no thread, no fresh
// stack or malloc arena (docs/egress.md, "Figures": the loader's pages).
// Coming back into the runtime's own namespace needs CAP_SYS_ADMIN over the
// user namespace that owns it, which an ordinary user's runtime (in a user
// namespace of its own, on the host's network: docs/rootless.md "pack run")
// does not have: there the work runs on a thread of its own that enters the
// namespace and ends there. Sockets the work opens stay in the container's
// namespace and are usable from any thread.
#pragma once

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <cerrno>
#include <string>
#include <thread>
#include <utility>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"

namespace comet::egress {

// Whether this process's user namespace owns the network namespace SELF
// (so that setns back into it is allowed to its uid 0).
inline bool owns_netns(int self) {
  UniqueFd owner(::ioctl(self, NS_GET_USERNS));
  struct stat a, b;
  return owner.valid() && ::fstat(owner.get(), &a) == 0 && ::stat("/proc/self/ns/user", &b) == 0 &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

template <class F>
Status in_netns(int netns_fd, F&& work) {
  UniqueFd self(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!self.valid()) return Error::sys(errno, "open this thread's network namespace");
  if (!owns_netns(self.get())) {
    Status result;
    std::thread t([&] {
      if (::setns(netns_fd, CLONE_NEWNET) < 0) {
        result = Error::sys(errno, "setns into the container's network namespace");
        return;
      }
      result = std::forward<F>(work)();
    });
    t.join();
    return result;
  }
  if (::setns(netns_fd, CLONE_NEWNET) < 0)
    return Error::sys(errno, "setns into the container's network namespace");
  Status result = std::forward<F>(work)();
  if (::setns(self.get(), CLONE_NEWNET) < 0) {
    const int e = errno;
    return Error::sys(e, "setns back into the runtime's own network namespace" +
                             (result.ok() ? std::string() : " (" + result.error().what() + ")"));
  }
  return result;
}

}  // namespace comet::egress
