// The violation reporter (reporter.hpp): parent-side start, as a forked
// copy of create or a thread of the runtime. What it does once started is
// the Reporter (reporter_serve.hpp).
#include "comet/reporting/reporter.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>

#include "comet/base/fault.hpp"
#include "comet/base/spawn.hpp"
#include "comet/base/switches.hpp"
#include "comet/base/sys.hpp"
#include "reporter_serve.hpp"

namespace comet::runtime {
namespace {

constexpr int kReporterSockFd = 3;
constexpr int kReporterRingFd = 4;

Result<UniqueFd> dup_high(UniqueFd fd, int min_fd) {
  if (fd.get() >= min_fd) return fd;
  int n = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, min_fd);
  if (n < 0) return Error::sys(errno, "dup the reporter socket");
  return UniqueFd(n);
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
      if (fault_is("sandbox-join-eio-slow-reporter")) ::usleep(1000000);
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
  Reporter reporter(r, sock);
  return reporter.run();
}

}  // namespace comet::runtime
