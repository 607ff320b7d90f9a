// The violation reporter (reporter.hpp): parent-side start, and the
// reporter process itself (a forked copy of create).
#include "comet/reporting/reporter.hpp"
#include "comet/base/openat2.hpp"
#include "comet/base/spawn.hpp"
#include "comet/base/switches.hpp"
#include "comet/host/seccomp_cache.hpp"
#include "comet/reporting/create_rule.hpp"
#include "comet/reporting/unix_rule.hpp"

#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <system_error>
#include <thread>
#include <vector>

#include "comet/base/sys.hpp"
#include "comet/capability/profile.hpp"
#include "comet/reporting/violations.hpp"
#include "comet/seccomp/bpf_eval.hpp"

namespace comet::runtime {
namespace {

constexpr int kReporterSockFd = 3;
constexpr int kReporterRingFd = 4;
// <linux/seccomp.h> of Linux 6.6, not in Debian 12's headers.
constexpr unsigned long kNotifSetFlags =
    _IOW('!', 4, std::uint64_t);               // SECCOMP_IOCTL_NOTIF_SET_FLAGS
constexpr unsigned long kNotifSyncWakeUp = 1;  // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
constexpr size_t kMaxKeys = 1024;  // distinct (surface, requested, syscall) kept for counting

Result<UniqueFd> dup_high(UniqueFd fd, int min_fd) {
  if (fd.get() >= min_fd) return fd;
  int n = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, min_fd);
  if (n < 0) return Error::sys(errno, "dup the reporter socket");
  return UniqueFd(n);
}

struct Pending {
  violations::Event last;
  long count = 0;  // repeats not yet written
};

class Writer {
 public:
  Writer(const std::string& dir, std::string deliver) : deliver_(std::move(deliver)) {
    std::string path = join_path(dir, violations::kEventsFile);
    fd_.reset(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
    struct stat st;
    if (fd_ && ::fstat(fd_.get(), &st) == 0) bytes_ = static_cast<uint64_t>(st.st_size);
  }
  // Bounded (violations::EventBudget): past kMaxEventsBytes only the first
  // events of each surface and first events of a key are written; the
  // rest is counted per surface. deliver=false: the caller delivers it
  // later (deliver()), so that a slow delivery target never holds up the
  // answer to the agent.
  bool line(const std::string& l, const std::string& surface, bool first_of_key,
            bool deliver = true) {
    if (!budget_.admit(surface, first_of_key, bytes_, l.size() + 1)) return false;
    raw(l);
    if (deliver) violations::deliver_line(deliver_, l);
    return true;
  }
  // Always written (the events_truncated line).
  void raw(const std::string& l) {
    std::string s = l + "\n";
    if (fd_ && ::write(fd_.get(), s.data(), s.size()) > 0) bytes_ += s.size();
  }
  void deliver(const std::string& l) { violations::deliver_line(deliver_, l); }
  const violations::EventBudget& budget() const { return budget_; }

 private:
  UniqueFd fd_;
  std::string deliver_;
  uint64_t bytes_ = 0;
  violations::EventBudget budget_;
};

// A NUL-terminated string of the stopped task (the execve path). Read
// before the answer: after CONTINUE the memory is gone. Only ever used for
// the report; Landlock resolves the path itself.
std::string read_remote_string(int pid, std::uint64_t addr) {
  std::string out;
  char buf[256];
  while (out.size() < 4096) {
    struct iovec local = {buf, sizeof buf};
    struct iovec remote = {reinterpret_cast<void*>(addr + out.size()), sizeof buf};
    ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) {
      // The page boundary: retry byte by byte up to it.
      char c;
      local = {&c, 1};
      remote = {reinterpret_cast<void*>(addr + out.size()), 1};
      if (::process_vm_readv(pid, &local, 1, &remote, 1, 0) != 1 || c == 0) return out;
      out.push_back(c);
      continue;
    }
    size_t len = strnlen(buf, static_cast<size_t>(n));
    out.append(buf, len);
    if (len < static_cast<size_t>(n)) return out;
  }
  return out;
}

// The pathname a connect(2) asks for (sockaddr_un of a pathname socket),
// or "" for any other family, an abstract or unnamed address, or memory
// that cannot be read.
std::string read_remote_unix_path(int pid, std::uint64_t addr, std::uint64_t len) {
  struct sockaddr_un sa = {};
  const size_t want = std::min<std::uint64_t>(len, sizeof sa);
  if (want <= offsetof(sockaddr_un, sun_path)) return {};
  struct iovec local = {&sa, want};
  struct iovec remote = {reinterpret_cast<void*>(addr), want};
  const ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (n <= static_cast<ssize_t>(offsetof(sockaddr_un, sun_path)) || sa.sun_family != AF_UNIX ||
      sa.sun_path[0] == '\0')
    return {};
  const size_t max = static_cast<size_t>(n) - offsetof(sockaddr_un, sun_path);
  return std::string(sa.sun_path, strnlen(sa.sun_path, max));
}

// The file an execve of `path` names, seen from the task: (dev, ino), or
// the errno of resolving it. Relative paths from its cwd (or dirfd).
struct Target {
  int err = 0;
  dev_t dev = 0;
  ino_t ino = 0;
  mode_t mode = 0;
  std::string name;  // exec_fd_target: what /proc/PID/fd/N names
};

// What the task's fd N is open on (execveat(N, "", AT_EMPTY_PATH)).
Target exec_fd_target(int pid, int fd) {
  Target t;
  std::string link = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  struct stat st;
  if (fd < 0 || ::stat(link.c_str(), &st) < 0) {
    t.err = fd < 0 ? EBADF : errno;
    return t;
  }
  t.dev = st.st_dev;
  t.ino = st.st_ino;
  t.mode = st.st_mode;
  char buf[512];
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n > 0) t.name.assign(buf, static_cast<size_t>(n));
  return t;
}

Target resolve_in_task(int pid, const std::string& path, int dirfd_arg, bool at) {
  Target t;
  std::string proc = "/proc/" + std::to_string(pid);
  std::string base = path.size() && path[0] == '/'
                         ? proc + "/root"
                         : (at && dirfd_arg != AT_FDCWD ? proc + "/fd/" + std::to_string(dirfd_arg)
                                                        : proc + "/cwd");
  UniqueFd bfd(::open(base.c_str(), O_PATH | O_CLOEXEC));
  if (!bfd) {
    t.err = errno;
    return t;
  }
  struct open_how how = {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = path.size() && path[0] == '/' ? RESOLVE_IN_ROOT : 0;
  UniqueFd f(sys_openat2(bfd.get(), path.c_str(), how));
  if (!f) {
    t.err = errno;
    return t;
  }
  struct stat st;
  if (::fstat(f.get(), &st) < 0) {
    t.err = errno;
    return t;
  }
  t.dev = st.st_dev;
  t.ino = st.st_ino;
  t.mode = st.st_mode;
  return t;
}

}  // namespace

seccomp::LockdownOptions lockdown_options(const capability::Policy& p, bool base_has_listener) {
  seccomp::LockdownOptions lo;
  lo.namespaces = p.lockdown;
  lo.exec_lock = p.exec.has_value();
  lo.network_none = p.network == capability::NetworkPolicy::none;
  // Under a network policy only the families netfilter sees (and unix).
  lo.socket_families = p.network != capability::NetworkPolicy::open;
  lo.notify = !base_has_listener && !switches::violation_reporting_off();
  // The unix-socket rule is enforced by the reporter: never without it
  // (create refuses a policy it cannot enforce: unix_rule && !notify).
  lo.unix_rule = p.unix_allow.has_value();
  if (lo.unix_rule && !base_has_listener) lo.notify = true;
  // The git rule likewise: its calls are made by the sandbox's init for
  // the reporter (create_rule.hpp).
  lo.create_rule = p.git_own.has_value();
  if (lo.create_rule && !base_has_listener) lo.notify = true;
  return lo;
}

Result<ReporterHandle> start_reporter(const ReporterRequest& r, int min_fd, bool in_process) {
  int sp[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
    return Error::sys(errno, "socketpair for the violation reporter");
  UniqueFd mine(sp[0]), theirs(sp[1]);
  // The child names itself by the credentials the kernel attaches (serve).
  int one = 1;
  if (::setsockopt(theirs.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof one) < 0)
    return Error::sys(errno, "SO_PASSCRED for the violation reporter");
  if (in_process) {
    ReporterHandle h;
    TRY(h.child_sock, dup_high(std::move(mine), min_fd));
    h.serve_sock = std::move(theirs);
    h.request = r;
    return h;
  }
  // Detached (spawn.hpp): the reporter is nobody's child (no zombie under
  // `run`), in its own session (a ^C on the terminal is the container's, not
  // its).
  auto spawned = spawn_detached("the violation reporter", [&]() -> int {
    int null = ::open("/dev/null", O_RDWR);
    if (theirs.get() == kReporterSockFd)
      ::fcntl(kReporterSockFd, F_SETFD, 0);
    else
      ::dup2(theirs.get(), kReporterSockFd);  // dup2 clears FD_CLOEXEC
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    ReporterRequest mine_r = r;
    if (r.fs_ring >= 0) {
      // fd 4 (above the socket): moved clear of 0-4 first.
      int ring = ::fcntl(r.fs_ring, F_DUPFD, 10);
      if (ring >= 0 && ::dup2(ring, kReporterRingFd) == kReporterRingFd) {
        mine_r.fs_ring = kReporterRingFd;
      } else {
        mine_r.fs_ring = -1;
      }
    }
    ::syscall(SYS_close_range, mine_r.fs_ring >= 0 ? kReporterRingFd + 1 : kReporterSockFd + 1, ~0U,
              0);
    // No exec: the reporter is this process's copy (create is single-
    // threaded here), which saves mapping and relocating the binary again
    // (~5 ms on the path to the agent's first exec, which waits for the
    // reporter's answer). Whatever handlers the caller installed (run's
    // signal forwarding) are not the reporter's.
    for (int sig = 1; sig < NSIG; sig++)
      if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
    ::prctl(PR_SET_NAME, "comet-reporter", 0, 0, 0);
    sigset_t none;  // whatever mask create or exec had
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
    ::signal(SIGINT, SIG_IGN);
    ::signal(SIGHUP, SIG_IGN);
    return serve_reporter(mine_r, kReporterSockFd);
  });
  theirs.reset();
  if (!spawned.ok()) return std::move(spawned).error();
  ReporterHandle h;
  h.pid = *spawned;
  h.start_time = process_start_time(h.pid);
  TRY(h.child_sock, dup_high(std::move(mine), min_fd));
  return h;
}

namespace {
struct ThreadState {
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;
};
ThreadState& thread_state() {
  static ThreadState* t = new ThreadState;  // never destroyed: a detached thread may outlive main
  return *t;
}
}  // namespace

Status start_reporter_thread(ReporterHandle& h) {
  if (!h.serve_sock) return {};
  // The thread takes no signal: run's signalfd forwarding stays on the
  // main thread.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  ThreadState& ts = thread_state();
  {
    std::lock_guard<std::mutex> l(ts.mu);
    ts.running++;
  }
  int sock = h.serve_sock.release();
  // The thread's own copy of the ring (create's closes with create).
  if (h.request.fs_ring >= 0) h.request.fs_ring = ::fcntl(h.request.fs_ring, F_DUPFD_CLOEXEC, 3);
  try {
    std::thread([req = h.request, sock] {
      UniqueFd owned(sock), ring(req.fs_ring);
      (void)serve_reporter(req, owned.get());
      ThreadState& t = thread_state();
      std::lock_guard<std::mutex> l(t.mu);
      t.running--;
      t.cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    ::close(sock);
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    std::lock_guard<std::mutex> l(ts.mu);
    ts.running--;
    return Error::sys(e.code().value(), "start the violation reporter thread");
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return {};
}

bool wait_reporter_threads(int ms) {
  ThreadState& ts = thread_state();
  std::unique_lock<std::mutex> l(ts.mu);
  return ts.cv.wait_for(l, std::chrono::milliseconds(ms), [&] { return ts.running == 0; });
}

int serve_reporter(const ReporterRequest& r, int sock) {
  seccomp::LockdownOptions lo = r.lockdown;
  lo.notify = false;  // the program whose answers we give
  seccomp::CompileOptions co;
  co.enosys_stub = false;
  auto prog = compile_cached(seccomp::lockdown_profile(lo), co);
  std::map<std::string, std::string> ann;
  if (!r.pack.empty()) ann["org.soyaos.comet.pack"] = r.pack;
  auto pack = violations::pack_of(ann);
  const std::string& container = r.container;
  const std::vector<std::string>& allow = r.exec_allow;
  std::vector<std::pair<dev_t, ino_t>> allowed_ids;  // resolved at the first exec

  // The listener's fd number from the container's child (or nothing: it
  // died first), and the child itself by SCM_CREDENTIALS (SO_PASSCRED is
  // set on this end at start_reporter); the fds taken with pidfd_getfd.
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
    got = ::recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  struct cmsghdr* cm = got >= 0 ? CMSG_FIRSTHDR(&mh) : nullptr;
  // A clean end (the listener hung up, or the child died before sending
  // it): finish_run() tells a reporter that was killed (whose events may be
  // missing) from one that drained.
  auto mark_done = [&] {
    if (!r.state_dir.empty())
      UniqueFd done(::open(join_path(r.state_dir, "reporter.done").c_str(),
                           O_WRONLY | O_CREAT | O_CLOEXEC | O_TRUNC, 0600));
  };
  // fs events (fswatch.hpp): this container's ring buffer.
  // It is mapped (ring_buffer__new: two mmaps of it, ~0.3 ms with the
  // unmap) only once it holds something: the ring of an agent that failed
  // no path call stays empty (the program drops what comes before the
  // agent's arm marker), and poll(2) on the map itself says so.
  const bool fs = r.fs_ring >= 0;
  std::function<void(const FsRecord&)> on_record;  // set below, once events can be written
  ring_buffer* rb = nullptr;
  bool ring_broken = false;  // it could not be mapped: what it holds is unknown
  auto map_ring = [&]() -> bool {
    if (rb || !fs || ring_broken) return rb != nullptr;
    struct pollfd p = {r.fs_ring, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN)) return false;
    rb = ring_buffer__new(
        r.fs_ring,
        [](void* ctx, void* data, size_t n) -> int {
          auto* f = static_cast<std::function<void(const FsRecord&)>*>(ctx);
          FsRecord rec;
          if (*f && fs_record_of(data, n, rec)) (*f)(rec);
          return 0;
        },
        &on_record, nullptr);
    ring_broken = rb == nullptr;
    return rb != nullptr;
  };
  struct RingOwner {
    ring_buffer*& rb;
    std::uint64_t cgroup;
    ~RingOwner() {
      if (rb) ring_buffer__free(rb);
      if (cgroup) fswatch_unwatch(cgroup);
    }
  } ring_owner{rb, fs ? r.fs_cgroup : 0};
  if (!cm || cm->cmsg_type != SCM_CREDENTIALS || got <= 0) {
    mark_done();
    return 0;
  }
  int last_fs_tid = 0;
  struct ucred cred;
  std::memcpy(&cred, CMSG_DATA(cm), sizeof cred);
  payload[got] = '\0';
  int fds[2] = {-1, -1};
  if (std::sscanf(payload, "%d %d", &fds[0], &fds[1]) < 1 || fds[0] < 0) {
    mark_done();
    return 0;
  }
  UniqueFd child_pidfd(static_cast<int>(::syscall(SYS_pidfd_open, cred.pid, 0)));
  auto take = [&](int n) {
    return n < 0 || !child_pidfd
               ? UniqueFd()
               : UniqueFd(static_cast<int>(::syscall(SYS_pidfd_getfd, child_pidfd.get(), n, 0)));
  };
  UniqueFd listener = take(fds[0]);
  UniqueFd root = take(fds[1]);  // fs events: the container's root (O_PATH), for resolve_in_root()
  child_pidfd.reset();
  if (!listener || (fds[1] >= 0 && !root)) {
    mark_done();
    return 0;  // the child dies on the missing answer: the container does not start
  }
  for (int fd : {listener.get(), root.get()})
    if (fd >= 0) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  (void)::send(sock, "a", 1, MSG_NOSIGNAL);
  // Linux >= 6.6: wake this thread synchronously (on the notifying CPU)
  // and switch back on the answer, as a request-reply pair. Older kernels
  // say EINVAL/ENOTTY; the notifier works the same, only slower.
  (void)::ioctl(listener.get(), kNotifSetFlags, kNotifSyncWakeUp);
  Writer out(r.state_dir, r.deliver);
  std::optional<UnixRuleState> unix_state;
  if (r.unix_allow) unix_state = UnixRuleState{*r.unix_allow, false, {}};
  CreateRuleState create_state;
  create_state.first_umask = r.first_umask & 0777;
  std::map<std::string, Pending> seen;
  auto flush = [&] {
    for (auto& [k, p] : seen) {
      if (p.count == 0) continue;
      p.last.repeated = p.count;
      p.count = 0;
      out.line(violations::to_json_line(p.last), p.last.surface, /*first_of_key=*/false);
    }
  };
  // One event: the first of a (surface, requested, syscall) is written at
  // once, then after_write() (the notification's answer), then delivered;
  // repeats are counted and summarised by flush().
  auto emit = [&](const violations::Event& e, auto&& after_write) {
    std::string key = e.surface + '\0' + e.requested + '\0' + e.syscall;
    auto it = seen.find(key);
    if (it != seen.end()) {
      it->second.count++;
      it->second.last = e;
      after_write();
      return;
    }
    if (seen.size() < kMaxKeys) seen[key].last = e;
    std::string l = violations::to_json_line(e);
    bool written = out.line(l, e.surface, /*first_of_key=*/true, /*deliver=*/false);
    after_write();
    if (written) out.deliver(l);
  };
  // Every ring record, classified (fswatch.hpp classify_fs()). One that
  // cannot be handled (bad_alloc) counts as lost: fail closed.
  std::map<int, std::string> exec_pending;  // tid: the exec the notification saw refused
  std::uint64_t unhandled = 0;
  on_record = [&](const FsRecord& rec) {
    if (rec.cgroup != r.fs_cgroup) return;  // a slot's earlier container
    // The init's calls for the git rule: the agent's own call has its record.
    if (r.init_pid > 0 && static_cast<int>(rec.tgid) == r.init_pid) return;
    try {
      // A failed exec (EACCES, Landlock's): reported at the notification
      // already, unless what the kernel read was not what the reporter
      // read (another thread rewrote the path between the two): then here,
      // named by the path as the program at sys_exit read it.
      if (rec.nr == SYS_execve || rec.nr == SYS_execveat) {
        // No exec lock (a sandbox profile): a failed exec is only a failed
        // exec (a PATH search's ENOENT), never a refusal of the policy's.
        if (!r.lockdown.exec_lock) return;
        const int t = static_cast<int>(rec.tid);
        violations::Event e;
        e.container = container;
        e.pack = pack;
        e.surface = "exec";
        auto it = exec_pending.find(t);
        if (it != exec_pending.end()) {  // what the notification read and refused
          e.requested = it->second;
          exec_pending.erase(it);
        } else {
          std::string p(rec.path, strnlen(rec.path, sizeof rec.path));
          e.requested = (p.empty() ? std::string("fd ") + std::to_string(rec.dfd) : p) +
                        " (refused; not the file the check saw)";
        }
        e.syscall = rec.nr == SYS_execve ? "execve" : "execveat";
        e.pid = t;
        e.err = -rec.ret;
        emit(e, [] {});
        return;
      }
      std::string p(rec.path, strnlen(rec.path, sizeof rec.path));
      std::string p2(rec.path2, strnlen(rec.path2, sizeof rec.path2));
      const int tid = static_cast<int>(rec.tid);
      last_fs_tid = tid;
      const FsCwd at_call{(rec.info & kFsCwdMoved) != 0, rec.cwd_dev, rec.cwd_ino};
      FsPath a = p.empty() && !(rec.info & kFsPathFault) && fs_on_fd_itself(rec.nr, rec.flags)
                     ? fd_in_task(tid, rec.dfd)
                     : absolute_in_task(tid, rec.dfd, p, at_call, r.fs_view.cwd);
      FsPath b = absolute_in_task(tid, rec.dfd2, p2, at_call, r.fs_view.cwd);
      a.cut = rec.info & kFsPathCut;
      if (rec.info & kFsPathFault) {
        a.path = "(a path the agent's memory no longer held)";
        a.known = false;
      }
      b.cut = rec.info & kFsPath2Cut;
      if (root) {
        a = resolve_in_root(root.get(), a, fs_follows_last(rec.nr, rec.flags, false));
        b = resolve_in_root(root.get(), b, fs_follows_last(rec.nr, rec.flags, true));
      }
      auto v = classify_fs(rec.nr, rec.flags, -rec.ret, a, b, r.fs_view);
      if (!v) return;
      violations::Event e;
      e.container = container;
      e.pack = pack;
      e.surface = v->surface;
      e.requested = v->requested;
      e.matched_entry = v->matched_entry;
      e.syscall = v->syscall;
      e.pid = tid;
      e.err = v->err;
      emit(e, [] {});
    } catch (...) {
      unhandled++;
    }
  };
  auto drain_fs = [&] {
    if (!map_ring()) return;
    while (ring_buffer__consume(rb) > 0) {
    }
  };
  // Records the full ring could not take: what they were is unknown, so
  // one of them may have been a violation. Fail closed: that is one (once,
  // with the count so far).
  bool lost_reported = false;
  auto report_lost = [&] {
    if (!fs || lost_reported) return;
    const std::uint64_t lost = fswatch_lost(r.fs_cgroup);
    std::string what;
    if (lost)
      what = std::to_string(lost) + " fs records lost (the ring was full)";
    else if (ring_broken)
      what = "fs records unread (the ring could not be mapped)";
    else if (unhandled)
      what = std::to_string(unhandled) + " fs records not handled";
    else
      return;
    lost_reported = true;
    violations::Event e;
    e.container = container;
    e.pack = pack;
    e.surface = "fs.read";
    e.requested = what;
    e.syscall = "";
    e.pid = last_fs_tid > 0 ? last_fs_tid : 1;
    e.err = ENOBUFS;
    const std::string l = violations::to_json_line(e);  // always: it stands for what is lost
    out.raw(l);
    out.deliver(l);
  };
  bool sock_open = fs;  // the init's barrier (reporter.hpp fs_ring)
  auto last_flush = std::chrono::steady_clock::now();
  for (;;) {
    bool pending = false;
    for (auto& [k, p] : seen) pending = pending || p.count > 0;
    struct pollfd pfd[3] = {{listener.get(), POLLIN, 0},
                            {sock_open ? sock : -1, POLLIN, 0},
                            {fs && !ring_broken ? r.fs_ring : -1, POLLIN, 0}};
    // The ring does not wake us per record (fswatch.bpf.c): every 200 ms.
    int pr = ::poll(pfd, 3, fs ? 200 : pending ? 1000 : -1);
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) break;
    if (std::chrono::steady_clock::now() - last_flush > std::chrono::seconds(1)) {
      flush();
      last_flush = std::chrono::steady_clock::now();
    }
    if (pr == 0 || (pfd[2].revents & POLLIN)) drain_fs();
    if (pr == 0) continue;
    if (pfd[1].revents) {
      char b = 0;
      ssize_t n = ::recv(sock, &b, 1, MSG_DONTWAIT);
      if (n == 1) {
        // 'w' now (alive, draining: the init waits longer), 'k' when done
        (void)::send(sock, "w", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        drain_fs();
        report_lost();
        (void)::send(sock, "k", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
      } else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        sock_open = false;
      }
    }
    if (pfd[0].revents == 0) continue;
    if (!(pfd[0].revents & POLLIN)) break;  // POLLHUP: no process left under the filter
    struct seccomp_notif req;
    std::memset(&req, 0, sizeof req);
    if (::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
      if (errno == EINTR || errno == ENOENT) continue;
      break;
    }
    // Every notification is answered exactly once (answer()), also when
    // what follows throws (bad_alloc): then EPERM, the call refused.
    struct seccomp_notif_resp resp;
    std::memset(&resp, 0, sizeof resp);
    resp.id = req.id;
    resp.error = -EPERM;
    bool answered = false;
    auto answer = [&] {
      if (answered) return;
      answered = true;
      (void)::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_SEND, &resp);
    };
    try {
      // The git rule: the sandbox's init judges and makes these calls
      // (create_rule.hpp); an open's fd is installed with the answer.
      if (r.create_sock >= 0 && req.data.nr == SYS_umask) {
        create_rule_umask(create_state, req.data.args[0]);
        resp.error = 0;
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        answer();
        continue;
      }
      if (r.create_sock >= 0 && create_rule_call(req.data.nr)) {
        CreateOutcome c = create_rule_judge(create_state, req, listener.get(), r.create_sock);
        if (c.refused) {
          violations::Event e;
          e.container = container;
          e.pack = pack;
          e.surface = "fs.write";
          e.requested = c.where;
          e.matched_entry = "git repository";
          std::uint64_t noargs[6] = {};
          e.syscall = violations::classify(req.data.nr, noargs).syscall;
          e.pid = static_cast<int>(req.pid);
          e.err = static_cast<int>(-c.ret);
          resp.error = static_cast<int32_t>(c.ret);
          emit(e, answer);
        } else if (c.fd >= 0) {
          struct seccomp_notif_addfd add = {};
          add.id = req.id;
          add.flags = SECCOMP_ADDFD_FLAG_SEND;
          add.srcfd = static_cast<std::uint32_t>(c.fd);
          add.newfd_flags = c.cloexec ? O_CLOEXEC : 0;
          if (::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_ADDFD, &add) >= 0) answered = true;
          ::close(c.fd);
          resp.error = -EMFILE;  // when the fd could not be installed
        } else {
          resp.error = c.ret < 0 ? static_cast<int32_t>(c.ret) : 0;
          resp.val = c.ret < 0 ? 0 : c.ret;
        }
        answer();
        continue;
      }
      // The unix-socket rule decides these calls itself (unix_rule.hpp).
      if (unix_state && unix_rule_call(req.data.nr)) {
        UnixOutcome u = unix_rule_judge(*unix_state, req, listener.get());
        if (u.continue_call) {
          resp.error = 0;
          resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        } else {
          resp.error = u.ret < 0 ? static_cast<int32_t>(u.ret) : 0;
          resp.val = u.ret < 0 ? 0 : u.ret;
          resp.flags = 0;
        }
        const bool runtime_sock =
            !u.requested.empty() && capability::is_runtime_socket(u.requested);
        if (!u.continue_call && (u.refused || (u.ret == -ENOENT && runtime_sock))) {
          violations::Event e;
          e.container = container;
          e.pack = pack;
          e.surface = runtime_sock ? "runtime-socket" : "unix-socket";
          e.requested = u.requested;
          e.syscall = req.data.nr == SYS_connect   ? "connect"
                      : req.data.nr == SYS_sendto  ? "sendto"
                      : req.data.nr == SYS_sendmsg ? "sendmsg"
                                                   : "sendmmsg";
          e.pid = static_cast<int>(req.pid);
          e.err = static_cast<int>(-u.ret);
          emit(e, answer);
        }
        answer();
        continue;
      }
      // The answer (sent by answer() below, once): the same errno as without
      // reporting; a call the ERRNO program would not refuse cannot notify
      // (same conditions), but is refused with EPERM all the same.
      uint32_t ret = prog.ok() ? seccomp::evaluate(prog->filter, req.data) : 0;
      uint32_t action = ret & SECCOMP_RET_ACTION_FULL;
      int err = action == SECCOMP_RET_ERRNO ? static_cast<int>(ret & SECCOMP_RET_DATA) : EPERM;
      if (err == 0) err = EPERM;
      // execve/execveat: the only calls the ERRNO program allows (exec lock,
      // reporting only). The path is read before the answer.
      bool is_exec =
          action == SECCOMP_RET_ALLOW && (req.data.nr == SYS_execve || req.data.nr == SYS_execveat);
      std::string exec_path;
      // The path of a mount-family or mknod call, for `requested` (report only).
      int path_arg = req.data.nr == SYS_mount || req.data.nr == SYS_mknodat ? 1
                     : (req.data.nr == SYS_umount2 || req.data.nr == SYS_chroot ||
                        req.data.nr == SYS_pivot_root || req.data.nr == SYS_mknod)
                         ? 0
                         : -1;
      // connect: reporting only (CONTINUE), and only of a runtime's socket
      // that the sandbox keeps from the agent: resolved in the task's root
      // while it waits, ENOENT when it is not there, ECONNREFUSED when what is
      // there is not a socket (a hidden one). A real socket (devbox shows the
      // host's) is what the profile allows: no event.
      const bool is_connect = action == SECCOMP_RET_ALLOW && req.data.nr == SYS_connect;
      std::string sock_path;
      int sock_err = 0;
      if (is_connect) {
        sock_path =
            read_remote_unix_path(static_cast<int>(req.pid), req.data.args[1], req.data.args[2]);
        if (!sock_path.empty() && capability::is_runtime_socket(sock_path)) {
          Target t = resolve_in_task(static_cast<int>(req.pid), sock_path, AT_FDCWD, false);
          sock_err = t.err ? t.err : (S_ISSOCK(t.mode) ? 0 : ECONNREFUSED);
        }
      }
      std::string call_path;
      if (path_arg >= 0 && !is_exec)
        call_path = read_remote_string(static_cast<int>(req.pid), req.data.args[path_arg]);
      // The file an exec names is resolved while the task is still stopped in
      // the call: after CONTINUE a short-lived program can exit (and take its
      // /proc/PID/root with it) before the lookup, which would report an
      // allowed exec as ENOENT.
      Target exec_target;
      bool exec_allowed = false;
      bool exec_skip = false;
      if (is_exec) {
        bool at = req.data.nr == SYS_execveat;
        exec_path = read_remote_string(static_cast<int>(req.pid), req.data.args[at ? 1 : 0]);
        // execveat(fd, "", AT_EMPTY_PATH): the file the fd is open on. The
        // runtime's own trampoline is the one such exec that is not the
        // agent's; any other is checked like an exec by path, and named by
        // what the fd points at.
        const bool by_fd = at && exec_path.empty() && (req.data.args[4] & AT_EMPTY_PATH);
        if (by_fd) {
          exec_target =
              exec_fd_target(static_cast<int>(req.pid), static_cast<int>(req.data.args[0]));
          exec_skip = exec_target.err == 0 && r.trampoline_ino != 0 &&
                      exec_target.dev == r.trampoline_dev && exec_target.ino == r.trampoline_ino;
          exec_path = "fd " + std::to_string(static_cast<int>(req.data.args[0])) +
                      (exec_target.name.empty() ? "" : " (" + exec_target.name + ")");
        } else {
          exec_target = resolve_in_task(static_cast<int>(req.pid), exec_path,
                                        static_cast<int>(req.data.args[0]), at);
        }
        if (!exec_skip) {
          if (exec_target.err == 0) {
            if (allowed_ids.empty())
              for (const std::string& a : allow) {
                Target at_ = resolve_in_task(static_cast<int>(req.pid), a, AT_FDCWD, false);
                if (at_.err == 0) allowed_ids.emplace_back(at_.dev, at_.ino);
              }
            for (auto& [d, i] : allowed_ids)
              exec_allowed = exec_allowed || (d == exec_target.dev && i == exec_target.ino);
          }
          // The task died under us (SIGKILL from another thread): its
          // /proc entries are gone, and it did not exec anything.
          std::uint64_t id = req.id;
          if (exec_target.err != 0 &&
              ::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0)
            exec_skip = true;
        }
      }
      if (is_exec || is_connect) {
        // CONTINUE is safe here only because Landlock (exec) and the mounts
        // (connect), not this answer, decide.
        resp.error = 0;
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
      } else {
        resp.error = -err;
        resp.flags = 0;  // never SECCOMP_USER_NOTIF_FLAG_CONTINUE for a denied call
      }
      // The event is on disk before the agent has its answer (an append, a
      // few us, on refused calls only), so a container's own init that reads
      // the events file once the agent has exited (child.hpp own_init) sees
      // every violation; delivery to the caller's target comes after.

      std::uint64_t args[6];
      for (int i = 0; i < 6; i++) args[i] = req.data.args[i];
      auto c = violations::classify(req.data.nr, args);
      if (is_exec) {
        if (exec_skip || exec_allowed) {  // the interpreter (or its loader)
          exec_pending.erase(static_cast<int>(req.pid));
          answer();
          continue;
        }
        c.surface = "exec";
        c.requested = exec_path;
        err = exec_target.err ? exec_target.err : EACCES;  // what Landlock (or the lookup) gives
        // With the fs program, Landlock's EACCES is reported when the exec
        // has failed (at sys_exit, on_record): the path can change between
        // this look and the kernel's, either way, so only the outcome says
        // whether anything was refused. Here, only what this look read.
        if ((err == EACCES || err == ENOENT) && fs) {
          exec_pending[static_cast<int>(req.pid)] = exec_path;
          answer();
          continue;
        }
      }
      if (is_connect) {
        if (sock_err == 0) {  // not a runtime socket, or one the profile shows
          answer();
          continue;
        }
        c.requested = sock_path;
        err = sock_err;
      }
      if (path_arg >= 0 && !is_exec && !call_path.empty())
        c.requested = c.surface == "device" ? c.syscall + "(" + call_path + ", " + c.requested + ")"
                                            : c.syscall + "(" + call_path + ")";
      violations::Event e;
      e.container = container;
      e.pack = pack;
      e.surface = c.surface;
      e.requested = c.requested;
      e.syscall = c.syscall;
      e.pid = static_cast<int>(req.pid);
      e.err = err;
      emit(e, answer);
    } catch (...) {
    }
    answer();
  }
  drain_fs();
  report_lost();
  // No task is left under the filter, so every record of the agent's was in
  // the ring: the init's barrier can have its answer now, before the rest
  // of this teardown (asked or not yet: it reads it after it asks).
  if (sock_open) (void)::send(sock, "k", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  flush();
  mark_done();
  if (out.budget().dropped() > 0) {
    const std::string l = out.budget().truncated_line(rfc3339_now(true), container);
    out.raw(l);
    out.deliver(l);
  }
  return 0;
}

}  // namespace comet::runtime
