// Detached helpers (the DNS resolver, the violation reporter): the classic
// double fork, written once.
//
//   caller ── fork ──► middle: setsid(), fork ──► helper: fn(), _exit
//     │                  │ writes the helper's pid to a pipe, _exit(0)
//     └ waitpid(middle), reads the pid
//
// The helper is not the caller's child: it is reparented to init (or to a
// child subreaper above the caller), so it leaves no zombie under the
// caller and outlives it. It is in a session of its own, which it does not lead, so
// a ^C on the caller's terminal is not its and it can never take a
// controlling terminal.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "comet/base/result.hpp"

namespace comet {

// True when this process has a single thread (/proc/self/status "Threads:").
Result<bool> single_threaded();

// Runs fn in a detached helper and returns the helper's pid; fn's return
// value is its exit status (_exit: no atexit handlers, no flush of the
// caller's stdio buffers). `what` names the helper in errors ("fork the
// resolver", "pipe for the resolver").
//
// The helper is a fork, not an exec: a copy of the caller holding only the
// calling thread. So the caller must be single-threaded (another thread's
// locks, malloc's among them, would stay held for ever in the copy): it is
// checked, and a caller with threads gets EDEADLK.
//
// The helper starts with the caller's fds (close-on-exec means nothing
// without an exec) but the pid pipe's, and with the caller's signal mask and
// dispositions: fn keeps the fds it needs, sets up stdio, signals and its
// name itself.
Result<pid_t> spawn_detached(const std::string& what, const std::function<int()>& fn);

}  // namespace comet
