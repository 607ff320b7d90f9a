// fs events (fswatch.hpp): the container's ring buffer, read by the
// reporter (reporter_serve.hpp).
#include <bpf/libbpf.h>
#include <poll.h>
#include <sys/syscall.h>

#include <cstring>

#include "reporter_serve.hpp"

namespace comet::runtime {

// The ring is mapped only once it holds something: the ring of an agent
// that failed no path call stays empty (the program drops what comes
// before the agent's arm marker), and poll(2) on the map itself says so.
bool Reporter::map_ring() {
  if (rb_ || !fs_ || ring_broken_) return rb_ != nullptr;
  struct pollfd p = {r_.fs_ring, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN)) return false;
  rb_ = ring_buffer__new(r_.fs_ring, &Reporter::on_ring_sample, this, nullptr);
  ring_broken_ = rb_ == nullptr;
  return rb_ != nullptr;
}

int Reporter::on_ring_sample(void* ctx, void* data, std::size_t n) {
  FsRecord rec;
  if (fs_record_of(data, n, rec)) static_cast<Reporter*>(ctx)->on_record(rec);
  return 0;
}

void Reporter::drain_fs() {
  if (!map_ring()) return;
  while (ring_buffer__consume(rb_) > 0) {
  }
}

// Every ring record, classified (fswatch.hpp classify_fs()). One that
// cannot be handled (bad_alloc) counts as lost: fail closed.
void Reporter::on_record(const FsRecord& rec) {
  if (rec.cgroup != r_.fs_cgroup) return;  // a slot's earlier container
  // The init's calls for the git rule: the agent's own call has its record.
  if (r_.init_pid > 0 && static_cast<int>(rec.tgid) == r_.init_pid) return;
  try {
    if (rec.nr == SYS_execve || rec.nr == SYS_execveat) {
      on_exec_record(rec);
      return;
    }
    std::string p(rec.path, strnlen(rec.path, sizeof rec.path));
    std::string p2(rec.path2, strnlen(rec.path2, sizeof rec.path2));
    const int tid = static_cast<int>(rec.tid);
    last_fs_tid_ = tid;
    const FsCwd at_call{(rec.info & kFsCwdMoved) != 0, rec.cwd_dev, rec.cwd_ino};
    FsPath a = p.empty() && !(rec.info & kFsPathFault) && fs_on_fd_itself(rec.nr, rec.flags)
                   ? fd_in_task(tid, rec.dfd)
                   : absolute_in_task(tid, rec.dfd, p, at_call, r_.fs_view.cwd);
    FsPath b = absolute_in_task(tid, rec.dfd2, p2, at_call, r_.fs_view.cwd);
    a.cut = rec.info & kFsPathCut;
    if (rec.info & kFsPathFault) {
      a.path = "(a path the agent's memory no longer held)";
      a.known = false;
    }
    b.cut = rec.info & kFsPath2Cut;
    if (root_) {
      a = resolve_in_root(root_.get(), a, fs_follows_last(rec.nr, rec.flags, false));
      b = resolve_in_root(root_.get(), b, fs_follows_last(rec.nr, rec.flags, true));
    }
    auto v = classify_fs(rec.nr, rec.flags, -rec.ret, a, b, r_.fs_view);
    if (!v) return;
    violations::Event e = event(v->surface, v->requested, v->syscall, tid, v->err);
    e.matched_entry = v->matched_entry;
    emit(e);
  } catch (...) {
    unhandled_++;
  }
}

// A failed exec (EACCES, Landlock's): reported at the notification
// already, unless what the kernel read was not what the reporter read
// (another thread rewrote the path between the two): then here, named by
// the path as the program at sys_exit read it.
void Reporter::on_exec_record(const FsRecord& rec) {
  // No exec lock (a sandbox profile): a failed exec is only a failed exec
  // (a PATH search's ENOENT), never a refusal of the policy's.
  if (!r_.lockdown.exec_lock) return;
  const int t = static_cast<int>(rec.tid);
  std::string requested;
  auto it = exec_pending_.find(t);
  if (it != exec_pending_.end()) {  // what the notification read and refused
    requested = it->second;
    exec_pending_.erase(it);
  } else {
    std::string p(rec.path, strnlen(rec.path, sizeof rec.path));
    requested = (p.empty() ? std::string("fd ") + std::to_string(rec.dfd) : p) +
                " (refused; not the file the check saw)";
  }
  emit(event("exec", requested, rec.nr == SYS_execve ? "execve" : "execveat", t, -rec.ret));
}

// Records the full ring could not take: what they were is unknown, so one
// of them may have been a violation. Fail closed: that is one (once, with
// the count so far).
void Reporter::report_lost() {
  if (!fs_ || lost_reported_) return;
  const std::uint64_t lost = fswatch_lost(r_.fs_cgroup);
  std::string what;
  if (lost)
    what = std::to_string(lost) + " fs records lost (the ring was full)";
  else if (ring_broken_)
    what = "fs records unread (the ring could not be mapped)";
  else if (unhandled_)
    what = std::to_string(unhandled_) + " fs records not handled";
  else
    return;
  lost_reported_ = true;
  violations::Event e = event("fs.read", what, "", last_fs_tid_ > 0 ? last_fs_tid_ : 1, ENOBUFS);
  const std::string l = violations::to_json_line(e);  // always: it stands for what is lost
  out_->raw(l);
  out_->deliver(l);
}

}  // namespace comet::runtime
