// Waiting for a foreground process while forwarding signals to it
// (lifecycle_internal.hpp): `run` and `exec` without --detach.
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "lifecycle_internal.hpp"

namespace comet::runtime {

SignalForwarding::SignalForwarding() noexcept {
  sigset_t fwd;
  sigemptyset(&fwd);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCHLD})
    sigaddset(&fwd, s);
  ::sigprocmask(SIG_BLOCK, &fwd, &old_);
  sfd_.reset(::signalfd(-1, &fwd, SFD_CLOEXEC));
}

SignalForwarding::~SignalForwarding() {
  ::sigprocmask(SIG_SETMASK, &old_, nullptr);
}

int SignalForwarding::wait(int pid) noexcept {
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG | __WALL);
    if (w == pid) return status;
    if (w < 0 && errno != EINTR) return 0;
    // SIGCHLD (blocked, so queued on the fd) wakes the read when PID exits.
    struct signalfd_siginfo si;
    if (::read(sfd_.get(), &si, sizeof si) != sizeof si) continue;
    if (si.ssi_signo != SIGCHLD) ::kill(pid, static_cast<int>(si.ssi_signo));
  }
}

int exit_code(int wait_status) noexcept {
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return WEXITSTATUS(wait_status);
}

}  // namespace comet::runtime
