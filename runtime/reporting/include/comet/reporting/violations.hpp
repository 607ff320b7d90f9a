// capability_violation events (docs/events.md, issue 6): the envelope, the
// per-container events file, delivery, the exit code 3 and the flags
// registry of pack versions that violated.
//
//   <state dir>/events.jsonl   one JSON object per line, appended by the
//                              reporter (reporter.hpp) and by append_event()
//   --events FILE|unix:PATH    a copy of every line, written as it happens
//   org.soyaos.comet.events    the same, for engines (annotation)
//   <root>/.events@/<id>.jsonl the events of the last kKeptRuns runs
//   <flags dir>/<name>@<version>.json  {"pack","first","last","count"}
//                              (flags_dir(): per state root and per user)
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "comet/base/result.hpp"

namespace comet::runtime::violations {

inline constexpr const char* kEventsFile = "events.jsonl";
inline constexpr const char* kEventsAnnotation = "org.soyaos.comet.events";
inline constexpr int kViolationExit = 3;
// An events file is written freely up to kMaxEventsBytes. Past it, a flood
// of cheap violations must not push a later, real one out of the record
// (EventBudget): the first kKeepPerSurface events of every surface, and of
// every (surface, matched entry) of a surface (a protected path's, red team
// round 12: 9,000 refused mkdirs hid a write to .git/hooks/pre-commit),
// are always written, and so is the first event of a new (surface,
// requested, syscall) while the file is under kMaxEventsBytesHard. The
// rest is counted per surface, and the writer that dropped them ends with
// one "events_truncated" line. At most kMaxEntryClasses entries are kept
// apart (the policy bounds them).
inline constexpr std::uint64_t kMaxEventsBytes = 1 << 20;
inline constexpr std::uint64_t kMaxEventsBytesHard = 2 << 20;
inline constexpr long kKeepPerSurface = 16;
inline constexpr std::size_t kMaxEntryClasses = 4096;

// Pure: which lines a writer keeps (above). One per writer (the reporter,
// the resolver): each keeps the first events of the surfaces it writes.
class EventBudget {
 public:
  // Whether a line of `bytes` for `surface` is written to a file now
  // `file_bytes` long; `first_of_key`: the first of its (surface,
  // requested, syscall) (not a repeat summary). Counts either way.
  // `entry`: the event's matched entry ("" when none).
  bool admit(const std::string& surface, bool first_of_key, std::uint64_t file_bytes,
             std::size_t bytes, const std::string& entry = "");
  long dropped() const { return dropped_total_; }
  const std::map<std::string, long>& dropped_by_surface() const { return dropped_; }
  // {"type":"events_truncated",...,"dropped":N,"dropped_by_surface":{...}}
  std::string truncated_line(const std::string& time, const std::string& container) const;

 private:
  std::map<std::string, long> written_, dropped_;
  std::map<std::string, long> written_entry_;  // surface NUL entry
  long dropped_total_ = 0;
};

struct PackId {
  std::string name, version;
};
// "name@version" of the org.soyaos.comet.pack annotation.
std::optional<PackId> pack_of(const std::map<std::string, std::string>& annotations);

struct Event {
  std::string container;
  std::optional<PackId> pack;
  std::string
      surface;  // egress | dns | fs.read | fs.write | exec | process | namespace | clock ...
  std::string requested;                     // host:port/proto, name, path or program
  std::optional<std::string> matched_entry;  // the manifest entry, or null
  std::string syscall;
  int pid = 0;
  int err = 0;           // the errno the agent got
  std::string err_name;  // instead of err's name when set ("REFUSED": a DNS answer)
  long repeated = 0;     // > 0: a summary of that many more identical events
};
// One line (no trailing newline) with a fresh time and id.
std::string to_json_line(const Event& e);

// What a lock-down syscall is, for the envelope: surface and requested,
// from the syscall number and its (raw) arguments.
struct Classified {
  std::string surface, requested, syscall;
};
Classified classify(int nr, const std::uint64_t args[6]);

// Appends one event line to the container's events file (and to the
// delivery target recorded next to it). For other reporting sources (the
// egress helper, the DNS resolver): state_dir is <root>/<id>.
Status append_event(const std::string& state_dir, const Event& e);
// The same, through a writer's budget (EventBudget): false when dropped.
bool append_event(const std::string& state_dir, const Event& e, EventBudget& budget,
                  bool first_of_key);
// Rate-limited appends for a long-lived source other than the reporter
// (the DNS resolver), with the reporter's rule: the first event of a
// (surface, requested, syscall) is written at once; identical ones are
// counted and written as one line with "repeated": N at most once a second
// (when the next one comes) and at flush(). At most 1024 keys are tracked;
// append_event() caps the file.
class RateLimited {
 public:
  explicit RateLimited(std::string state_dir);
  void report(const Event& e);
  void flush();
  // flush(), then the events_truncated line when anything was dropped
  // (once, at the writer's end).
  void finish();

 private:
  struct Pending {
    Event last;
    long count = 0;
  };
  void write(const Event& e, bool first_of_key);
  std::string dir_;
  std::map<std::string, Pending> seen_;
  long long last_flush_ns_ = 0;
  EventBudget budget_;
  std::string container_;
};

// The pid of a process of the network namespace of NETNS_PID that holds
// the socket whose local address is ADDR (IPv4 or IPv6, UDP or TCP), or 0:
// who sent a DNS query, from /proc/NETNS_PID/net/{udp,tcp}[6] and the fds
// of the processes in that namespace. For reports only (racy by nature).
int socket_owner(int netns_pid, const struct sockaddr_storage& addr, bool tcp);

// One line to a delivery target (a file appended to, or unix:PATH, one
// connection per line, 200 ms send timeout); errors are dropped.
void deliver_line(const std::string& target, const std::string& line);
// Opens a file delivery target now (O_APPEND, created 0600) and keeps the
// fd, so that deliver_line() still reaches it from a process whose tree is
// read-only (the confined resolver, helper_confine.hpp). unix: targets and
// "" are left alone.
Status pin_delivery_target(const std::string& target);
// The same with a file the caller opened (and checked: sandbox's --events
// FILE, never a symlink nor a FIFO); takes the fd.
Status pin_delivery_fd(const std::string& target, int fd);

// Where --events asked the events to go ("" = nowhere); set by the CLI for
// run/create/pack run, read by create (the annotation is the fallback).
void set_delivery(const std::string& target);
const std::string& delivery();

// The violations in an events file's text, per surface in the order first
// seen. The one reading of the file's lines that every count and summary
// uses: a line with "repeated": N stands for N more refusals (the first of
// its key was written on its own line), one without for one; an
// events_truncated line's dropped_by_surface adds refusals counted but not
// recorded (docs/events.md "Rate limiting").
struct SurfaceTally {
  std::string surface;
  long recorded = 0;  // in the file, repeats included
  long dropped = 0;   // past the events cap
  std::string first_requested, first_syscall;
  long all() const { return recorded + dropped; }
};
struct ViolationTally {
  std::vector<SurfaceTally> surfaces;
  std::string first_time, last_time;
  long total() const;
};
ViolationTally tally_violations(const std::string& text);

// Number of violations (repeats and those past the events cap included) in
// an events file's text, with the first and last event times.
long count_violations(const std::string& text, std::string* first = nullptr,
                      std::string* last = nullptr);

// After the agent's wait, before delete: waits (bounded) for the reporter to
// drain and exit, counts the events, flags the pack version. Returns the
// count.
long finish_run(const std::string& root, const std::string& id);

// At delete, for a container that no run waited for (an engine drove it):
// flags the pack version from the events file, unless finish_run already
// counted it (it leaves kFlaggedFile in the state dir).
inline constexpr const char kFlaggedFile[] = "flagged";
void flag_at_delete(const std::string& state_dir,
                    const std::map<std::string, std::string>& annotations);

// The events of the last runs (docs/events.md "After the run"): at delete,
// a non-empty events file is kept as <root>/.events@/<id>.jsonl, where
// `events --violations ID` finds it once the container is gone; only the
// newest kKeptRuns of a state root are kept, the oldest pruned. ('@' is
// never in an id, so the directory is never a container's.)
inline constexpr const char kKeptEventsDir[] = ".events@";
inline constexpr int kKeptRuns = 32;
std::string kept_events_file(const std::string& root, const std::string& id);
// Keeps STATE_DIR's events file under ROOT (above); the kept path, or "".
std::string keep_events(const std::string& root, const std::string& id,
                        const std::string& state_dir);
// One line for the end of a run that had violations:
//   comet: 2 capability violations: exec ×1 (/bin/ls), fs.write ×1 (/etc/x); events: FILE
// (per surface: the count and the first thing asked for). "" without any.
std::string violation_summary(const std::string& events_text, const std::string& where);

// Flags registry, per state root and per user: the default root's flags are
// in the user's data dir (root: /var/lib/comet-runtime/flags), another
// --root's in <root>/.flags@; $COMET_FLAGS_DIR overrides both.
std::string flags_dir(const std::string& root);
struct Flag {
  std::string pack, first, last;
  long count = 0;
};
std::vector<Flag> list_flags(const std::string& root);
Status record_flag(const std::string& root, const PackId& p, long count, const std::string& first,
                   const std::string& last);
Status clear_flag(const std::string& root, const std::string& name_at_version);
// The warning line for a flagged version, or "".
std::string flag_warning(const std::string& root,
                         const std::map<std::string, std::string>& annotations);

// `comet-runtime pack flags [list|clear NAME@VERSION]`; `events --violations`.
int flags_cli(const std::string& root, const std::string& action, const std::string& arg);
int events_cli(const std::string& root, const std::string& id, bool follow);

}  // namespace comet::runtime::violations
