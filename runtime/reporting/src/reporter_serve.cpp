// The reporter's set-up, loop and events (reporter_serve.hpp).
#include "reporter_serve.hpp"

#include <bpf/libbpf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <system_error>
#include <thread>

#include "comet/base/sys.hpp"
#include "comet/capability/profile.hpp"
#include "comet/host/seccomp_cache.hpp"
#include "comet/reporting/notified_task.hpp"

namespace comet::runtime {
namespace {

// <linux/seccomp.h> of Linux 6.6, not in Debian 12's headers.
constexpr unsigned long kNotifSetFlags =
    _IOW('!', 4, std::uint64_t);               // SECCOMP_IOCTL_NOTIF_SET_FLAGS
constexpr unsigned long kNotifSyncWakeUp = 1;  // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
constexpr size_t kMaxKeys = 1024;  // distinct (surface, requested, syscall) kept for counting

// The program whose answers the reporter gives: the ERRNO form of the
// same lock-down.
Result<seccomp::Program> errno_program(const seccomp::LockdownOptions& lockdown) {
  seccomp::LockdownOptions lo = lockdown;
  lo.notify = false;
  seccomp::CompileOptions co;
  co.enosys_stub = false;
  return compile_cached(seccomp::lockdown_profile(lo), co);
}

std::optional<violations::PackId> pack_of(const std::string& pack) {
  std::map<std::string, std::string> ann;
  if (!pack.empty()) ann["org.soyaos.comet.pack"] = pack;
  return violations::pack_of(ann);
}

}  // namespace

EventWriter::EventWriter(const std::string& dir, std::string deliver)
    : deliver_(std::move(deliver)) {
  std::string path = join_path(dir, violations::kEventsFile);
  fd_.reset(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
  struct stat st;
  if (fd_ && ::fstat(fd_.get(), &st) == 0) bytes_ = static_cast<uint64_t>(st.st_size);
}

bool EventWriter::line(const std::string& l, const std::string& surface, bool first_of_key,
                       bool deliver, const std::string& entry) {
  if (!budget_.admit(surface, first_of_key, bytes_, l.size() + 1, entry)) return false;
  raw(l);
  if (deliver) violations::deliver_line(deliver_, l);
  return true;
}

void EventWriter::raw(const std::string& l) {
  std::string s = l + "\n";
  if (fd_ && ::write(fd_.get(), s.data(), s.size()) > 0) bytes_ += s.size();
}

NotifAnswer::NotifAnswer(int listener, std::uint64_t id) : listener_(listener) {
  std::memset(&resp_, 0, sizeof resp_);
  resp_.id = id;
  resp_.error = -EPERM;
}

void NotifAnswer::refuse(int err) {
  resp_.error = -err;
  resp_.val = 0;
  resp_.flags = 0;  // never SECCOMP_USER_NOTIF_FLAG_CONTINUE for a denied call
}

void NotifAnswer::let_through() {
  resp_.error = 0;
  resp_.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
}

void NotifAnswer::result(long long ret) {
  resp_.error = ret < 0 ? static_cast<int32_t>(ret) : 0;
  resp_.val = ret < 0 ? 0 : ret;
  resp_.flags = 0;
}

void NotifAnswer::send_fd(int fd, bool cloexec) {
  struct seccomp_notif_addfd add = {};
  add.id = resp_.id;
  add.flags = SECCOMP_ADDFD_FLAG_SEND;
  add.srcfd = static_cast<std::uint32_t>(fd);
  add.newfd_flags = cloexec ? O_CLOEXEC : 0;
  if (::ioctl(listener_, SECCOMP_IOCTL_NOTIF_ADDFD, &add) >= 0) sent_ = true;
  ::close(fd);
  resp_.error = -EMFILE;  // when the fd could not be installed
}

void NotifAnswer::answered_elsewhere() {
  sent_ = true;
}

void NotifAnswer::send() {
  if (sent_) return;
  sent_ = true;
  (void)::ioctl(listener_, SECCOMP_IOCTL_NOTIF_SEND, &resp_);
}

Reporter::Reporter(const ReporterRequest& r, int sock)
    : r_(r),
      sock_(sock),
      fs_(r.fs_ring >= 0),
      prog_(errno_program(r.lockdown)),
      pack_(pack_of(r.pack)) {}

Reporter::~Reporter() {
  if (rb_) ring_buffer__free(rb_);
  if (fs_ && r_.fs_cgroup) fswatch_unwatch(r_.fs_cgroup);
}

int Reporter::run() {
  if (!take_listener()) {
    // The child died first (or the container does not start: it dies on
    // the missing answer): a clean end all the same.
    mark_done();
    return 0;
  }
  (void)::send(sock_, "a", 1, MSG_NOSIGNAL);
  // Linux >= 6.6: wake this thread synchronously (on the notifying CPU)
  // and switch back on the answer, as a request-reply pair. Older kernels
  // say EINVAL/ENOTTY; the notifier works the same, only slower.
  (void)::ioctl(listener_.get(), kNotifSetFlags, kNotifSyncWakeUp);
  out_.emplace(r_.state_dir, r_.deliver);
  if (r_.unix_allow) unix_state_ = UnixRuleState{*r_.unix_allow, false, {}};
  create_state_.first_umask = r_.first_umask & 0777;
  sock_open_ = fs_;
  serve();
  finish();
  return 0;
}

// The listener's fd number from the container's child (or nothing: it
// died first), and the child itself by SCM_CREDENTIALS (SO_PASSCRED is
// set on this end at start_reporter); the fds taken with pidfd_getfd.
bool Reporter::take_listener() {
  char payload[64];
  struct iovec iov = {payload, sizeof payload - 1};
  char cbuf[CMSG_SPACE(sizeof(struct ucred))];
  struct msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cbuf;
  mh.msg_controllen = sizeof cbuf;
  ssize_t got;
  do {
    got = ::recvmsg(sock_, &mh, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  struct cmsghdr* cm = got >= 0 ? CMSG_FIRSTHDR(&mh) : nullptr;
  if (!cm || cm->cmsg_type != SCM_CREDENTIALS || got <= 0) return false;
  struct ucred cred;
  std::memcpy(&cred, CMSG_DATA(cm), sizeof cred);
  payload[got] = '\0';
  int fds[2] = {-1, -1};
  if (std::sscanf(payload, "%d %d", &fds[0], &fds[1]) < 1 || fds[0] < 0) return false;
  UniqueFd child_pidfd = task::open_pidfd(cred.pid);
  auto take = [&](int n) {
    return n < 0 || !child_pidfd ? UniqueFd() : task::take_fd(child_pidfd.get(), n);
  };
  listener_ = take(fds[0]);
  root_ = take(fds[1]);
  if (!listener_ || (fds[1] >= 0 && !root_)) return false;
  for (int fd : {listener_.get(), root_.get()})
    if (fd >= 0) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  return true;
}

void Reporter::serve() {
  auto last_flush = std::chrono::steady_clock::now();
  for (;;) {
    bool pending = false;
    for (auto& [k, p] : seen_) pending = pending || p.count > 0;
    struct pollfd pfd[3] = {{listener_.get(), POLLIN, 0},
                            {sock_open_ ? sock_ : -1, POLLIN, 0},
                            {fs_ && !ring_broken_ ? r_.fs_ring : -1, POLLIN, 0}};
    // The ring does not wake us per record (fswatch.bpf.c): every 200 ms.
    int pr = ::poll(pfd, 3, fs_ ? 200 : pending ? 1000 : -1);
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) break;
    if (std::chrono::steady_clock::now() - last_flush > std::chrono::seconds(1)) {
      flush();
      last_flush = std::chrono::steady_clock::now();
    }
    if (pr == 0 || (pfd[2].revents & POLLIN)) drain_fs();
    if (pr == 0) continue;
    if (pfd[1].revents) on_barrier();
    if (pfd[0].revents == 0) continue;
    if (!(pfd[0].revents & POLLIN)) break;  // POLLHUP: no process left under the filter
    if (!handle_notification()) break;
  }
}

// The init's barrier: one byte once the agent has exited, answered with
// 'w' now (alive, draining: the init waits longer) and 'k' once every fs
// event is on disk.
void Reporter::on_barrier() {
  char b = 0;
  ssize_t n = ::recv(sock_, &b, 1, MSG_DONTWAIT);
  if (n == 1) {
    (void)::send(sock_, "w", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    drain_fs();
    report_lost();
    (void)::send(sock_, "k", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  } else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    sock_open_ = false;
  }
}

// One notification, answered exactly once, also when what follows throws
// (bad_alloc): then EPERM, the call refused. false: the listener failed.
bool Reporter::handle_notification() {
  struct seccomp_notif req;
  std::memset(&req, 0, sizeof req);
  if (::ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
    return errno == EINTR || errno == ENOENT;
  NotifAnswer ans(listener_.get(), req.id);
  try {
    if (r_.create_sock >= 0 && req.data.nr == SYS_umask) {
      create_rule_umask(create_state_, req.data.args[0]);
      ans.let_through();
    } else if (r_.create_sock >= 0 && create_rule_call(req.data.nr)) {
      on_git_call(req, ans);
    } else if (unix_state_ && unix_rule_call(req.data.nr)) {
      on_unix_call(req, ans);
    } else {
      on_lockdown_call(req, ans);
    }
  } catch (...) {
  }
  ans.send();
  return true;
}

// The git rule: the sandbox's init judges and makes these calls
// (create_rule.hpp); an open's fd is installed with the answer.
void Reporter::on_git_call(const struct seccomp_notif& req, NotifAnswer& ans) {
  CreateOutcome c = create_rule_judge(create_state_, req, listener_.get(), r_.create_sock);
  if (c.refused) {
    std::uint64_t noargs[6] = {};
    violations::Event e =
        event("fs.write", c.where, violations::classify(req.data.nr, noargs).syscall,
              static_cast<int>(req.pid), static_cast<int>(-c.ret));
    e.matched_entry = "git repository";
    ans.refuse(static_cast<int>(-c.ret));
    emit(e, &ans);
  } else if (c.erofs && r_.fs_ring < 0) {
    // A protected path: the fs events report it where there are any; here
    // (rootless, no CAP_BPF) the answer is the only one who knows.
    std::uint64_t noargs[6] = {};
    violations::Event e =
        event("fs.write", c.where, violations::classify(req.data.nr, noargs).syscall,
              static_cast<int>(req.pid), static_cast<int>(-c.ret));
    e.matched_entry = c.where;
    ans.refuse(static_cast<int>(-c.ret));
    emit(e, &ans);
  } else if (c.fd >= 0) {
    ans.send_fd(c.fd, c.cloexec);
  } else {
    ans.result(c.ret);
  }
}

// The unix-socket rule decides these calls itself (unix_rule.hpp).
void Reporter::on_unix_call(const struct seccomp_notif& req, NotifAnswer& ans) {
  UnixOutcome u = unix_rule_judge(*unix_state_, req, listener_.get());
  if (u.emulate && u.may_block && answer_later(req.id, u.emulate)) {
    ans.answered_elsewhere();
    return;
  }
  if (u.emulate) u.ret = u.emulate();  // also a blocking one no thread could take
  if (u.continue_call)
    ans.let_through();
  else
    ans.result(u.ret);
  const bool runtime_sock = !u.requested.empty() && capability::is_runtime_socket(u.requested);
  if (u.continue_call || !(u.refused || (u.ret == -ENOENT && runtime_sock))) return;
  const int nr = req.data.nr;
  const char* syscall = nr == SYS_connect   ? "connect"
                        : nr == SYS_sendto  ? "sendto"
                        : nr == SYS_sendmsg ? "sendmsg"
                                            : "sendmmsg";
  emit(event(runtime_sock ? "runtime-socket" : "unix-socket", u.requested, syscall,
             static_cast<int>(req.pid), static_cast<int>(-u.ret)),
       &ans);
}

// A call that can wait on its peer (a blocking stream socket's connect or
// send, unix_rule.hpp) is made on a thread of its own, which answers it:
// the reporter goes on serving the other notifications meanwhile. At most
// kMaxWaitingCalls at once; false when no thread could take it.
namespace {
constexpr int kMaxWaitingCalls = 256;
std::atomic<int> waiting_calls{0};
}  // namespace

bool Reporter::answer_later(std::uint64_t id, std::function<long long()> call) {
  if (waiting_calls.fetch_add(1) >= kMaxWaitingCalls) {
    waiting_calls.fetch_sub(1);
    return false;
  }
  UniqueFd listener(::fcntl(listener_.get(), F_DUPFD_CLOEXEC, 3));
  if (!listener) {
    waiting_calls.fetch_sub(1);
    return false;
  }
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);  // the thread takes no signal
  bool started = true;
  try {
    std::thread([id, call = std::move(call), l = std::make_shared<UniqueFd>(std::move(listener))] {
      NotifAnswer ans(l->get(), id);
      ans.result(call());
      ans.send();
      waiting_calls.fetch_sub(1);
    }).detach();
  } catch (const std::system_error&) {
    waiting_calls.fetch_sub(1);
    started = false;
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return started;
}

void Reporter::finish() {
  drain_fs();
  report_lost();
  // No task is left under the filter, so every record of the agent's was in
  // the ring: the init's barrier can have its answer now, before the rest
  // of this teardown (asked or not yet: it reads it after it asks).
  if (sock_open_) (void)::send(sock_, "k", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  flush();
  mark_done();
  if (out_->budget().dropped() > 0) {
    const std::string l = out_->budget().truncated_line(rfc3339_now(true), r_.container);
    out_->raw(l);
    out_->deliver(l);
  }
}

// A clean end (the listener hung up, or the child died before sending
// it): finish_run() tells a reporter that was killed (whose events may be
// missing) from one that drained.
void Reporter::mark_done() {
  if (!r_.state_dir.empty())
    UniqueFd done(::open(join_path(r_.state_dir, "reporter.done").c_str(),
                         O_WRONLY | O_CREAT | O_CLOEXEC | O_TRUNC, 0600));
}

violations::Event Reporter::event(std::string surface, std::string requested, std::string syscall,
                                  int pid, int err) const {
  violations::Event e;
  e.container = r_.container;
  e.pack = pack_;
  e.surface = std::move(surface);
  e.requested = std::move(requested);
  e.syscall = std::move(syscall);
  e.pid = pid;
  e.err = err;
  return e;
}

// One event: the first of a (surface, requested, syscall) is written at
// once, then the notification's answer is sent, then it is delivered;
// repeats are counted and summarised by flush(). The event is on disk
// before the agent has its answer (an append, a few us, on refused calls
// only), so a container's own init that reads the events file once the
// agent has exited (child.hpp own_init) sees every violation; delivery to
// the caller's target comes after.
void Reporter::emit(const violations::Event& e, NotifAnswer* ans) {
  std::string key = e.surface + '\0' + e.requested + '\0' + e.syscall;
  auto it = seen_.find(key);
  if (it != seen_.end()) {
    it->second.count++;
    it->second.last = e;
    if (ans) ans->send();
    return;
  }
  if (seen_.size() < kMaxKeys) seen_[key].last = e;
  std::string l = violations::to_json_line(e);
  bool written = out_->line(l, e.surface, /*first_of_key=*/true, /*deliver=*/false,
                            e.matched_entry.value_or(""));
  if (ans) ans->send();
  if (written) out_->deliver(l);
}

void Reporter::flush() {
  for (auto& [k, p] : seen_) {
    if (p.count == 0) continue;
    p.last.repeated = p.count;
    p.count = 0;
    out_->line(violations::to_json_line(p.last), p.last.surface, /*first_of_key=*/false, true,
               p.last.matched_entry.value_or(""));
  }
}

}  // namespace comet::runtime
