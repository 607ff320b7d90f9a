// The reporter's body (reporter.hpp serve_reporter()): one Reporter per
// container (or exec'd process), the same in a forked process and in a
// thread of the runtime. Modelled on sandbox2's UnotifyMonitor: run()
// takes the listener from the container's child, then serves until the
// last process under the filter is gone; each wake-up handles the one
// thing that woke it: a notification (handle_notification()), the fs ring
// (drain_fs(), records by on_record()), the init's one-byte barrier
// (on_barrier()), or the once-a-second summaries (flush()). finish()
// drains and writes what is left, then reporter.done.
//
//   reporter_serve.cpp     set-up, the loop, the git and unix rules' calls,
//                          events (emit, flush) and the end
//   reporter_lockdown.cpp  the lock-down's own notifications: the ERRNO
//                          answer, and the exec and connect reports
//   reporter_fs.cpp        the fs ring (fswatch.hpp): records to events
#pragma once

#include <linux/seccomp.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"
#include "comet/reporting/create_rule.hpp"
#include "comet/reporting/fswatch.hpp"
#include "comet/reporting/reporter.hpp"
#include "comet/reporting/unix_rule.hpp"
#include "comet/reporting/violations.hpp"
#include "comet/seccomp/seccomp.hpp"

struct ring_buffer;

namespace comet::runtime {

// The events file of the state dir, and the --events target.
class EventWriter {
 public:
  EventWriter(const std::string& dir, std::string deliver);
  // Bounded (violations::EventBudget): past kMaxEventsBytes only the first
  // events of each surface and first events of a key are written; the
  // rest is counted per surface. deliver=false: the caller delivers it
  // later (deliver()), so that a slow delivery target never holds up the
  // answer to the agent.
  // `entry`: the event's matched entry (EventBudget keeps the first of each).
  bool line(const std::string& l, const std::string& surface, bool first_of_key,
            bool deliver = true, const std::string& entry = "");
  // Always written (the events_truncated line).
  void raw(const std::string& l);
  void deliver(const std::string& l) { violations::deliver_line(deliver_, l); }
  const violations::EventBudget& budget() const { return budget_; }

 private:
  UniqueFd fd_;
  std::string deliver_;
  std::uint64_t bytes_ = 0;
  violations::EventBudget budget_;
};

// The answer to one notification, sent exactly once (send()): -EPERM (the
// call refused) unless set otherwise, so that a handler that throws
// (bad_alloc) still refuses the call.
class NotifAnswer {
 public:
  NotifAnswer(int listener, std::uint64_t id);
  void refuse(int err);        // -err, never SECCOMP_USER_NOTIF_FLAG_CONTINUE
  void let_through();          // SECCOMP_USER_NOTIF_FLAG_CONTINUE
  void result(long long ret);  // the call's result (>= 0) or -errno, made by us
  // Installs fd in the task as the call's result (SECCOMP_ADDFD_FLAG_SEND,
  // which answers); -EMFILE when it cannot.
  void send_fd(int fd, bool cloexec);
  void answered_elsewhere();  // another thread answers (Reporter::answer_later)
  void send();

 private:
  int listener_;
  struct seccomp_notif_resp resp_;
  bool sent_ = false;
};

class Reporter {
 public:
  Reporter(const ReporterRequest& r, int sock);
  ~Reporter();
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  int run();

 private:
  // reporter_serve.cpp
  bool take_listener();
  void serve();
  void on_barrier();
  bool handle_notification();
  void on_git_call(const struct seccomp_notif& req, NotifAnswer& ans);
  void on_unix_call(const struct seccomp_notif& req, NotifAnswer& ans);
  bool answer_later(std::uint64_t id, std::function<long long()> call);
  void finish();
  void mark_done();
  violations::Event event(std::string surface, std::string requested, std::string syscall, int pid,
                          int err) const;
  void emit(const violations::Event& e, NotifAnswer* ans = nullptr);
  void flush();

  // reporter_lockdown.cpp
  void on_lockdown_call(const struct seccomp_notif& req, NotifAnswer& ans);
  struct ExecLook;
  ExecLook look_exec(const struct seccomp_notif& req);

  // reporter_fs.cpp
  bool map_ring();
  void drain_fs();
  static int on_ring_sample(void* ctx, void* data, std::size_t n);
  void on_record(const FsRecord& rec);
  void on_exec_record(const FsRecord& rec);
  void report_lost();

  const ReporterRequest& r_;
  const int sock_;
  const bool fs_;  // fs events: r_.fs_ring is this container's ring
  Result<seccomp::Program> prog_;
  std::optional<violations::PackId> pack_;

  UniqueFd listener_;
  UniqueFd root_;  // fs events: the container's root (O_PATH), for resolve_in_root()
  std::optional<EventWriter> out_;  // once there is a listener to serve
  std::optional<UnixRuleState> unix_state_;
  CreateRuleState create_state_;
  std::vector<std::pair<dev_t, ino_t>> allowed_ids_;  // r_.exec_allow, resolved at the first exec

  // Rate limits: the first event of a (surface, requested, syscall) is
  // written at once, repeats are counted and summarised by flush().
  struct Pending {
    violations::Event last;
    long count = 0;  // repeats not yet written
  };
  std::map<std::string, Pending> seen_;

  // The fs ring: mapped (ring_buffer__new: two mmaps of it, ~0.3 ms with the
  // unmap) only once it holds something.
  ring_buffer* rb_ = nullptr;
  bool ring_broken_ = false;                 // it could not be mapped: what it holds is unknown
  std::map<int, std::string> exec_pending_;  // tid: the exec the notification saw refused
  std::uint64_t unhandled_ = 0;              // records that could not be handled
  bool lost_reported_ = false;
  int last_fs_tid_ = 0;
  bool sock_open_ = false;  // the init's barrier (reporter.hpp fs_ring)
};

}  // namespace comet::runtime
