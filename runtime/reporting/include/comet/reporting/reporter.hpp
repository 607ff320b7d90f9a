// The violation reporter: one per confined container (and per exec'd
// process), made before clone. It is an OBSERVER of the lock-down filter's
// notifications. Two forms, the same code (serve_reporter()):
//   - a process: a forked copy of create (no exec: a fresh exec cost ~5 ms
//     on the agent's path), for `create` and `run --detach`, whose caller
//     exits before the container does;
//   - a thread of the runtime (in_process), for a foreground `run` or
//     `pack run`, which waits for the container anyway: no fork, so none of
//     the copy-on-write faults a fork costs both processes (~10 ms on the
//     agent's path, docs/events.md). It starts once create has made every
//     process it makes (start_reporter_thread()), so no clone() copies a
//     lock it holds.
//
//   create   socketpair; one end (high-numbered) -> ctx.lockdown_listener_sock,
//            the other -> the reporter (fd 3 of the process, or the thread's);
//            a process's pid + start time -> state.json
//   child    loads the notifying lock-down, sends its listener fd (SCM_RIGHTS,
//            the state JSON as payload) over lockdown_listener_sock
//   reporter recv the fd; loop: NOTIF_RECV -> answer with the errno the
//            ERRNO form of the same lock-down gives (bpf_eval) -> then write
//            the event (rate-limited) -> exit when the listener hangs up
//   delete   SIGKILL a process (guarded by the start time)
//
// Enforcement never depends on it: the answer is always an error (never
// SECCOMP_USER_NOTIF_FLAG_CONTINUE for a denied call), and a dead reporter
// (or a killed `run`, for the thread) makes the kernel fail every notifying
// call with ENOSYS.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"
#include "comet/capability/policy.hpp"
#include "comet/reporting/fswatch.hpp"
#include "comet/seccomp/seccomp.hpp"

namespace comet::runtime {

struct ReporterRequest {
  std::string container;
  std::string pack;       // org.soyaos.comet.pack ("name@version" or "")
  std::string state_dir;  // events.jsonl goes here
  std::string deliver;    // --events FILE|unix:PATH, or ""
  seccomp::LockdownOptions lockdown;
  std::vector<std::string> exec_allow;  // the Landlock exec lock's files (in the rootfs)
  // The runtime's own exec trampoline (a sealed memfd): its
  // execveat(fd, "", AT_EMPTY_PATH) is the one exec by fd that is not the
  // agent's. Any other exec by fd is checked like one by path.
  std::uint64_t trampoline_dev = 0, trampoline_ino = 0;
  // fs events (fswatch.hpp): the container's ring buffer (the reporter
  // takes a dup; -1 without), the cgroup it is filed under, and what the
  // container may touch. Records from before the listener arrives are the
  // runtime's own set-up, dropped. A one-byte message on the socket after
  // that (the container's own init, once the agent has exited) is answered
  // with one byte once the ring is drained: every fs event is then on disk.
  int fs_ring = -1;
  std::uint64_t fs_cgroup = 0;
  FsView fs_view;
  // The unix-socket rule (unix_rule.hpp), when the policy has one.
  std::optional<std::vector<std::string>> unix_allow;
  // The git rule (create_rule.hpp): the socket to the sandbox's init, which
  // makes the calls (not owned; -1 without), and the init's pid, whose own
  // failed calls are not the agent's (fs events skip them).
  int create_sock = -1;
  int init_pid = 0;
  unsigned first_umask = 022;  // the command's umask at start
};

struct ReporterHandle {
  UniqueFd child_sock;  // for ctx.lockdown_listener_sock (close-on-exec)
  int pid = 0;          // a process; 0 for a thread
  unsigned long long start_time = 0;
  UniqueFd serve_sock;      // in_process: the thread's end, until it starts
  ReporterRequest request;  // in_process: what the thread serves
};

// The lock-down a policy asks for. notify is set unless reporting is off
// (COMET_VIOLATION_REPORTING=off, for benchmarks) or the base filter
// already has a listener (the kernel allows one per filter chain: EBUSY).
seccomp::LockdownOptions lockdown_options(const capability::Policy& p, bool base_has_listener);

// min_fd: the child's end is placed at or above it (create's preserved fds).
// in_process: nothing is started yet; start_reporter_thread() starts it.
Result<ReporterHandle> start_reporter(const ReporterRequest& r, int min_fd,
                                      bool in_process = false);

// Starts an in_process handle's reporter on a detached thread that blocks
// every signal (a no-op for a process handle). Call it once nothing more is
// cloned: glibc's fork() guards malloc against a thread, a raw clone3() does not.
Status start_reporter_thread(ReporterHandle& h);

// Waits up to ms for every reporter thread to finish (its listener hung up
// and its summaries written); false when one is still serving.
bool wait_reporter_threads(int ms);

// The reporter's body: receives the listener over sock and serves it until
// it hangs up; writes reporter.done in the state dir at a clean end. A
// Reporter (src/reporter_serve.hpp) constructed and run.
int serve_reporter(const ReporterRequest& r, int sock);

}  // namespace comet::runtime
