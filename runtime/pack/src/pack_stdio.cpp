// The agent's stdio during a pack run (pack_parts.hpp): the tee that
// copies its output to the caller and to the cache's capture files, and
// the terminal guard.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "comet/base/sys.hpp"
#include "comet/host/log.hpp"
#include "comet/pack/pack_cache.hpp"
#include "pack_parts.hpp"

namespace comet::runtime::pack_detail {
namespace {

// The tee: one child forked before run_container (the runtime process
// itself stays single-threaded; create forks later). It copies what the
// agent writes on the two pipes to the original stdout/stderr and to the
// capture files, and exits once the parent says the run is over (a byte on
// CTL) after draining what is left, even if some process still holds a
// write end. Exit status 0: both streams captured whole; 1: a stream went
// over kMaxStreamBytes or a capture write failed (the run is not stored).
struct TeeStream {
  int in, orig, cap;
  std::uint64_t n;
  bool orig_ok, cap_ok;
  bool tty;                // orig is a terminal: control characters are shown, not sent
  std::string carry = {};  // an incomplete UTF-8 sequence from the last read
};

void tee_pass(TeeStream& s, const char* buf, size_t n) noexcept {
  if (s.orig_ok) {
    // a closed reader: keep recording
    if (s.tty) {
      try {
        std::string in = s.carry + std::string(buf, n);
        s.orig_ok = write_fully(s.orig, shown(in.data(), in.size(), &s.carry));
      } catch (...) {
        s.orig_ok = false;
      }
    } else {
      s.orig_ok = write_fully(s.orig, std::string_view(buf, n));
    }
  }
  if (!s.cap_ok) return;
  if (s.n + n > cache::kMaxStreamBytes || !write_fully(s.cap, std::string_view(buf, n))) {
    s.cap_ok = false;
    return;
  }
  s.n += n;
}

[[noreturn]] void tee_main(TeeStream* s, int ctl) noexcept {
  struct sigaction sa = {};
  sa.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2})
    ::sigaction(sig, &sa, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  static char buf[1 << 16];
  bool drain = false;
  while (!drain || s[0].in >= 0 || s[1].in >= 0) {
    if (s[0].in < 0 && s[1].in < 0) {
      // Both streams ended: wait for the word (so the parent's write to
      // CTL always has a reader).
      struct pollfd c = {ctl, POLLIN, 0};
      if (::poll(&c, 1, -1) < 0 && errno == EINTR) continue;
      break;
    }
    struct pollfd p[3] = {{s[0].in, POLLIN, 0}, {s[1].in, POLLIN, 0}, {ctl, POLLIN, 0}};
    if (!drain && ::poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (!drain && p[2].revents) {
      // The run is over: every agent process is gone and what it wrote is
      // in the pipes. Read them empty without blocking.
      drain = true;
      for (int i = 0; i < 2; i++)
        if (s[i].in >= 0) ::fcntl(s[i].in, F_SETFL, O_NONBLOCK);
    }
    for (int i = 0; i < 2; i++) {
      if (s[i].in < 0 || (!drain && !p[i].revents)) continue;
      ssize_t n = ::read(s[i].in, buf, sizeof buf);
      if (n > 0) {
        tee_pass(s[i], buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        if (s[i].tty && !s[i].carry.empty() && s[i].orig_ok) {  // a sequence the stream never ended
          try {
            s[i].orig_ok = write_fully(s[i].orig, shown(s[i].carry.data(), s[i].carry.size()));
          } catch (...) {
          }
        }
        ::close(s[i].in);
        s[i].in = -1;
      }
    }
  }
  _exit(s[0].cap_ok && s[1].cap_ok ? 0 : 1);
}

}  // namespace

void say(const std::string& line) {
  (void)write_fully(STDERR_FILENO, line + "\n");
}

std::string shown(const char* buf, size_t n, std::string* carry) {
  return visible_controls(std::string_view(buf, n), true, carry);
}

Status StdioCapture::start(const std::string& dir, const Globals& g) {
  UniqueFd cap_out, cap_err;
  if (!dir.empty()) {
    cap_out.reset(
        ::open(join_path(dir, "stdout").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!cap_out) return Error::sys(errno, "create " + join_path(dir, "stdout"));
    cap_err.reset(
        ::open(join_path(dir, "stderr").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!cap_err) return Error::sys(errno, "create " + join_path(dir, "stderr"));
  }
  int out[2], err[2], ctl[2];
  if (::pipe2(out, O_CLOEXEC) < 0) return Error::sys(errno, "pipe2");
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (::pipe2(err, O_CLOEXEC) < 0) return Error::sys(errno, "pipe2");
  UniqueFd err_r(err[0]), err_w(err[1]);
  if (::pipe2(ctl, O_CLOEXEC) < 0) return Error::sys(errno, "pipe2");
  UniqueFd ctl_r(ctl[0]), ctl_w(ctl[1]);
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null) return Error::sys(errno, "open /dev/null");
  for (int i = 0; i < 3; i++) {
    saved_[i].reset(::fcntl(i, F_DUPFD_CLOEXEC, 3));
    if (!saved_[i]) return Error::sys(errno, "dup fd " + std::to_string(i));
  }
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return Error::sys(errno, "fork the output tee");
  if (pid == 0) {
    TeeStream s[2] = {{out_r.get(), saved_[1].get(), cap_out.get(), 0, true, cap_out.valid(),
                       ::isatty(saved_[1].get()) == 1},
                      {err_r.get(), saved_[2].get(), cap_err.get(), 0, true, cap_err.valid(),
                       ::isatty(saved_[2].get()) == 1}};
    ::close(out_w.get());
    ::close(err_w.get());
    ::close(ctl_w.get());
    tee_main(s, ctl_r.get());
  }
  tee_ = ChildGuard(pid);
  ctl_ = std::move(ctl_w);
  if (g.log.empty()) move_log();
  active_ = true;
  if (::dup2(null.get(), STDIN_FILENO) < 0 || ::dup2(out_w.get(), STDOUT_FILENO) < 0 ||
      ::dup2(err_w.get(), STDERR_FILENO) < 0)
    return Error::sys(errno, "dup2 the output pipes onto stdio");
  return {};
}

bool StdioCapture::finish() {
  if (!active_) return false;
  active_ = false;
  if (log_moved_) log::set_fd(STDERR_FILENO, true);
  log_moved_ = false;
  for (int i = 0; i < 3; i++) (void)::dup2(saved_[i].get(), i);
  for (auto& s : saved_) s.reset();
  // SIGPIPE ignored for this one write: a tee that died (killed from
  // outside) must not take the runtime with it.
  struct sigaction ign = {}, old = {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, &old);
  (void)!::write(ctl_.get(), "x", 1);
  ::sigaction(SIGPIPE, &old, nullptr);
  ctl_.reset();
  int st = tee_.wait();
  tee_.release();
  return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

void StdioCapture::move_log() {
  log::set_fd(saved_[2].get(), true);
  log_moved_ = true;
}

}  // namespace comet::runtime::pack_detail
