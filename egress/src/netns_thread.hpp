// Work in the container's network namespace on a thread of its own, which
// then ends: nothing has to setns back. Coming back into the runtime's own
// namespace needs CAP_SYS_ADMIN over the user namespace that owns it, which
// an ordinary user's runtime (in a user namespace of its own, on the host's
// network: docs/rootless.md "pack run") does not have; a thread that never
// comes back needs only the rights over the container's namespace. Sockets
// the work opens stay in that namespace and are usable from any thread.
#pragma once

#include <sched.h>

#include <cerrno>
#include <string>
#include <thread>
#include <utility>

#include "comet/base/result.hpp"

namespace comet::egress {

template <class F>
Status in_netns_thread(int netns_fd, F&& work) {
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

}  // namespace comet::egress
