// `run`: create + start, wait, delete. With process.terminal and no
// --console-socket it takes the pty itself and copies between it and its
// stdio, as runc does.
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>

#include "comet/base/sys.hpp"
#include "comet/capability/compile.hpp"
#include "comet/host/log.hpp"
#include "comet/host/state_store.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/oci/spec.hpp"
#include "comet/reporting/reporter.hpp"
#include "comet/reporting/violations.hpp"
#include "lifecycle_internal.hpp"

namespace comet::runtime {
namespace {

// `run` of a config with process.terminal and no --console-socket: like
// runc, we take the pty ourselves and copy between it and our stdio.
struct ConsoleProxy {
  std::string path;
  UniqueFd listener;
  UniqueFd master;
  bool raw = false;
  struct termios saved = {};
  ~ConsoleProxy() {
    if (raw) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    if (!path.empty()) ::unlink(path.c_str());
  }
};

Result<bool> wants_terminal(const CreateOptions& o) {
  TRY(std::string bundle, resolve_dir(o.bundle, "bundle"));
  TRY(std::string text, read_file(bundle + "/config.json"));
  TRY(oci::Spec spec, oci::parse_spec(text));
  return spec.process && spec.process->terminal;
}

Status listen_console(const Globals& g, const std::string& id, ConsoleProxy& cp) {
  TRYV(mkdir_p(g.root, 0711));
  cp.path = join_path(g.root, "." + id + ".console." + std::to_string(::getpid()));
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::sys(errno, "socket");
  cp.listener.reset(fd);
  struct sockaddr_un a = {};
  a.sun_family = AF_UNIX;
  if (cp.path.size() >= sizeof a.sun_path)
    return Error::msg("console socket path too long: " + cp.path);
  std::memcpy(a.sun_path, cp.path.data(), cp.path.size());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || ::listen(fd, 1) < 0)
    return Error::sys(errno, "listen on " + cp.path);
  return ok();
}

Status receive_master(ConsoleProxy& cp) {
  int c = ::accept4(cp.listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) return Error::sys(errno, "accept the console");
  UniqueFd conn(c);
  char buf[256];
  struct iovec iov = {buf, sizeof buf};
  char cbuf[CMSG_SPACE(sizeof(int))];
  struct msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cbuf;
  mh.msg_controllen = sizeof cbuf;
  if (::recvmsg(c, &mh, MSG_CMSG_CLOEXEC) < 0) return Error::sys(errno, "receive the pty master");
  struct cmsghdr* cm = CMSG_FIRSTHDR(&mh);
  if (!cm || cm->cmsg_type != SCM_RIGHTS) return Error::msg("no pty master on the console socket");
  int m;
  std::memcpy(&m, CMSG_DATA(cm), sizeof m);
  cp.master.reset(m);
  if (::isatty(STDIN_FILENO) && ::tcgetattr(STDIN_FILENO, &cp.saved) == 0) {
    struct termios t = cp.saved;
    ::cfmakeraw(&t);
    cp.raw = ::tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
    struct winsize ws;
    if (::ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) ::ioctl(cp.master.get(), TIOCSWINSZ, &ws);
  }
  return ok();
}

// Copy stdin -> pty and pty -> stdout until the pty hangs up.
void pump(int master, int sigfd, int pid) {
  struct pollfd p[3] = {{master, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}, {sigfd, POLLIN, 0}};
  char buf[8192];
  bool stdin_open = true;
  for (;;) {
    p[1].fd = stdin_open ? STDIN_FILENO : -1;
    if (::poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = ::read(master, buf, sizeof buf);
      if (n <= 0) return;  // EIO: the last slave closed
      if (::write(STDOUT_FILENO, buf, static_cast<size_t>(n)) < 0) return;
    }
    if (stdin_open && (p[1].revents & (POLLIN | POLLHUP))) {
      ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
      if (n <= 0)
        stdin_open = false;
      else if (::write(master, buf, static_cast<size_t>(n)) < 0)
        return;
    }
    if (p[2].revents & POLLIN) {
      struct signalfd_siginfo si;
      if (::read(sigfd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGWINCH) {
          struct winsize ws;
          if (::ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) ::ioctl(master, TIOCSWINSZ, &ws);
        } else if (si.ssi_signo != SIGCHLD) {
          ::kill(pid, static_cast<int>(si.ssi_signo));
        }
      }
    }
  }
}

}  // namespace

Result<int> run_container(const Globals& g, const CreateOptions& o_in, bool detach) {
  CreateOptions o = o_in;
  ConsoleProxy cp;
  bool proxy = false;
  if (o.console_socket.empty() && !detach) {
    TRY(proxy, wants_terminal(o));
    if (proxy) {
      TRYV(listen_console(g, o.id, cp));
      o.console_socket = cp.path;
    }
  }
  TRY(int pid, create_container(g, o, !detach));
  if (detach) {
    TRYV(start_container(g, o.id));
    return 0;
  }
  if (proxy) {
    Status st = receive_master(cp);
    if (!st.ok()) {
      (void)delete_container(g, o.id, true);
      // Its init gone, a reporter thread ends: not under exit()'s
      // destructors (the sandbox's failed start, CI run 26).
      (void)wait_reporter_threads(3000);
      return std::move(st).error();
    }
  }
  int status = 0;
  {
    // Signals that arrive while the container runs go to its init; the
    // mask is back before the reporter wait and the delete.
    SignalForwarding signals;
    Status st = start_container(g, o.id);
    if (!st.ok()) {
      (void)delete_container(g, o.id, true);
      // Its init gone, a reporter thread ends: not under exit()'s
      // destructors (the sandbox's failed start, CI run 26).
      (void)wait_reporter_threads(3000);
      return std::move(st).error();
    }
    if (proxy) pump(cp.master.get(), signals.fd(), pid);
    status = signals.wait(pid);
  }
  // Any capability_violation recorded: exit 3, whatever the agent's status
  // (violations.hpp); counted (and the pack flagged) before delete.
  // Only a pack (capabilities) turns them into exit 3: a sandbox profile's
  // command keeps its own status (docs/sandbox.md), its events are kept.
  bool is_pack = false;
  std::map<std::string, std::string> annotations;
  if (auto rec = ContainerDir(g.root, o.id).load(); rec.ok()) {
    is_pack = rec->annotations.count(std::string(capability::kAnnotationCapabilities)) > 0;
    annotations = rec->annotations;
  }
  // A reporter thread ends once the last confined process is gone (its
  // listener hangs up); give it the bounded time a process gets.
  (void)wait_reporter_threads(3000);
  long violations_seen = violations::finish_run(g.root, o.id);
  (void)delete_container(g, o.id, true);
  if (violations_seen > 0 && is_pack) {
    // Never silent (issue 26): one line naming what was refused and where
    // the events are kept, then the flag this run set or raised.
    const std::string kept = violations::kept_events_file(g.root, o.id);
    if (auto text = read_file(kept); text.ok()) {
      const std::string where =
          violations::delivery().empty() ? kept : violations::delivery() + " and " + kept;
      if (std::string line = violations::violation_summary(*text, where); !line.empty())
        std::fprintf(stderr, "%s\n", line.c_str());
    }
    if (std::string w = violations::flag_warning(g.root, annotations); !w.empty()) log::warn(w);
    return violations::kViolationExit;
  }
  // A pack's own init exits 3 for a violation it read or for a reporter
  // that did not answer (it says so on stderr); the agent may exit 3 itself.
  if (is_pack && WIFEXITED(status) && WEXITSTATUS(status) == violations::kViolationExit)
    log::warn("container " + o.id +
              ": exit status 3 with no capability_violation event recorded (the agent's own "
              "3, or its init's: see its stderr)");
  return exit_code(status);
}

}  // namespace comet::runtime
