// Private to comet_lifecycle: what create.cpp shares with run.cpp, exec.cpp
// and egress_events.cpp.
#pragma once

#include <signal.h>

#include <map>
#include <string>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"
#include "comet/capability/policy.hpp"
#include "comet/egress/egress.hpp"
#include "comet/lifecycle/child.hpp"
#include "comet/reporting/reporter.hpp"

namespace comet::runtime {

// ---- the parent's fds for a child (parent_fds.cpp) ----
// create and exec both hand the child fds of their own; these must sit
// above the caller's preserved ones (3 .. MIN_FD-1), or they would leak
// into the container as "preserved".

// FD itself when it is already at or above MIN_FD, else a CLOEXEC dup
// there; errors name WHAT.
Result<UniqueFd> high(UniqueFd fd, int min_fd, const std::string& what);

// The parent/child sync socket pair (sync.hpp), both ends above MIN_FD.
struct SyncPair {
  UniqueFd parent;
  UniqueFd child;
};
Result<SyncPair> sync_pair(int min_fd);

// The sealed exec trampoline (trampoline.hpp), above MIN_FD.
Result<UniqueFd> trampoline_above(int min_fd);

// A connection to the --console-socket at PATH, above MIN_FD.
Result<UniqueFd> console_above(const std::string& path, int min_fd);

// ---- waiting for a foreground process (signals.cpp) ----
// `run` and `exec` without --detach: the signals a terminal or a
// supervisor sends (INT, TERM, HUP, QUIT, USR1, USR2, WINCH) go to the
// container's process, as runc forwards them. The set (and SIGCHLD) is
// blocked and read from a signalfd while the object lives; the old mask
// comes back when it dies.
class SignalForwarding {
 public:
  SignalForwarding() noexcept;
  ~SignalForwarding();
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

  // The signalfd, for a loop that also polls other fds (run's pty pump).
  int fd() const noexcept { return sfd_.get(); }
  // Forwards every signal but SIGCHLD to PID until it exits; its wait
  // status (0 when waitpid fails).
  int wait(int pid) noexcept;

 private:
  sigset_t old_{};
  UniqueFd sfd_;
};

// A wait status as a shell reports it: the exit code, 128+N when killed.
int exit_code(int wait_status) noexcept;

// realpath(P), which must be a directory; errors name WHAT and P.
Result<std::string> resolve_dir(const std::string& p, const std::string& what);

// The resolver's DNS and egress violations (docs/events.md): the callbacks
// of `er` that report them to the state dir's events, for the container
// CID (of pack annotations) whose init is INIT_PID.
void report_egress_violations(egress::SetupRequest& er, const std::string& state_dir,
                              const std::map<std::string, std::string>& annotations,
                              const std::string& cid, int init_pid);

// The violation reporter's request for the lock-down of container ID
// (reporter.hpp), as create and exec both fill it: the pack, the state dir,
// the rules it judges by and the trampoline (TRAMPOLINE_FD) it lets run.
// The caller sets where events are delivered and, for create, fs events.
ReporterRequest lockdown_reporter_request(const std::string& id,
                                          const std::map<std::string, std::string>& annotations,
                                          const std::string& state_dir, const capability::Policy& p,
                                          const ChildContext& ctx, int trampoline_fd);

}  // namespace comet::runtime
