// The violation reporter: one process per confined container (and per
// exec'd process), a forked copy of create (no exec: a fresh exec cost
// ~5 ms on the agent's path), made before clone. It is an OBSERVER of the lock-down filter's
// notifications:
//
//   create   socketpair; one end (high-numbered) -> ctx.lockdown_listener_sock,
//            the other -> the reporter's fd 3; pid + start time -> state.json
//   child    loads the notifying lock-down, sends its listener fd (SCM_RIGHTS,
//            the state JSON as payload) over lockdown_listener_sock
//   reporter recv the fd; loop: NOTIF_RECV -> answer with the errno the
//            ERRNO form of the same lock-down gives (bpf_eval) -> then write
//            the event (rate-limited) -> exit when the listener hangs up
//   delete   SIGKILL (guarded by the start time)
//
// Enforcement never depends on it: the answer is always an error (never
// SECCOMP_USER_NOTIF_FLAG_CONTINUE for a denied call), and a dead reporter
// makes the kernel fail every notifying call with ENOSYS.
#pragma once

#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/capability/policy.hpp"
#include "comet/runtime/fd.hpp"
#include "comet/seccomp/seccomp.hpp"

namespace comet::runtime {

struct ReporterRequest {
  std::string container;
  std::string pack;       // org.soyaos.comet.pack ("name@version" or "")
  std::string state_dir;  // events.jsonl goes here
  std::string deliver;    // --events FILE|unix:PATH, or ""
  seccomp::LockdownOptions lockdown;
  std::vector<std::string> exec_allow;  // the Landlock exec lock's files (in the rootfs)
};

struct ReporterHandle {
  UniqueFd child_sock;  // for ctx.lockdown_listener_sock (close-on-exec)
  int pid = 0;
  unsigned long long start_time = 0;
};

// The lock-down a policy asks for. notify is set unless reporting is off
// (COMET_VIOLATION_REPORTING=off, for benchmarks) or the base filter
// already has a listener (the kernel allows one per filter chain: EBUSY).
seccomp::LockdownOptions lockdown_options(const capability::Policy& p, bool base_has_listener);

// min_fd: the child's end is placed at or above it (create's preserved fds).
Result<ReporterHandle> start_reporter(const ReporterRequest& r, int min_fd);

// The reporter's body, run in the forked copy; argv is the key=value list
// start_reporter() builds (argv[0], argv[1] are names only).
int reporter_main(int argc, char** argv);

}  // namespace comet::runtime
