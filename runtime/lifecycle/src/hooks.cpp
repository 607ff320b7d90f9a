#include "comet/lifecycle/hooks.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "comet/base/fd.hpp"
#include "comet/host/log.hpp"

namespace comet::runtime {

Status run_hook(const oci::Hook& hook, const std::string& state_json) noexcept {
  int in[2], err_pipe[2];
  if (::pipe2(in, O_CLOEXEC) < 0) return Error::sys(errno, "hook " + hook.path + ": pipe");
  UniqueFd in_r(in[0]), in_w(in[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) < 0) return Error::sys(errno, "hook " + hook.path + ": pipe");
  UniqueFd e_r(err_pipe[0]), e_w(err_pipe[1]);

  std::vector<char*> argv, envp;
  std::vector<std::string> args = hook.args;
  if (args.empty()) args.push_back(hook.path);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = hook.env;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) return Error::sys(errno, "hook " + hook.path + ": fork");
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::execve(hook.path.c_str(), argv.data(), envp.data());
    int e = errno;
    ssize_t w = ::write(err_pipe[1], &e, sizeof e);
    (void)w;
    ::_exit(127);
  }
  ChildGuard child(pid);
  in_r.reset();
  e_w.reset();
  // A hook that does not read its stdin must not block us: ignore EPIPE.
  struct sigaction ign = {}, old = {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, &old);
  size_t off = 0;
  while (off < state_json.size()) {
    ssize_t n = ::write(in_w.get(), state_json.data() + off, state_json.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  in_w.reset();
  ::sigaction(SIGPIPE, &old, nullptr);

  int exec_errno = 0;
  ssize_t n = ::read(e_r.get(), &exec_errno, sizeof exec_errno);
  if (n == sizeof exec_errno) {
    child.wait();
    return Error::sys(exec_errno, "hook " + hook.path + ": exec");
  }
  PidFd pfd;
  int timeout_ms = hook.timeout ? *hook.timeout * 1000 : -1;
  if (PidFd::open(pid, &pfd) == 0 && !pfd.wait_exit(timeout_ms)) {
    child.kill_and_reap();
    return Error::msg("hook " + hook.path + ": timeout after " + std::to_string(*hook.timeout) +
                      "s");
  }
  int status = child.wait();
  if (status < 0) return Error::sys(errno, "hook " + hook.path + ": wait");
  if (WIFSIGNALED(status))
    return Error::msg("hook " + hook.path + ": killed by signal " +
                      std::to_string(WTERMSIG(status)));
  if (WEXITSTATUS(status) != 0)
    return Error::msg("hook " + hook.path + ": exit status " + std::to_string(WEXITSTATUS(status)));
  return ok();
}

Status run_hooks(const std::vector<oci::Hook>& hooks, const std::string& kind,
                 const std::string& state_json) noexcept {
  for (auto& h : hooks) {
    Status st = run_hook(h, state_json);
    if (!st.ok()) return std::move(st).error().wrap("error running " + kind + " hook");
  }
  return ok();
}

int run_hooks_warning(const std::vector<oci::Hook>& hooks, const std::string& kind,
                      const std::string& state_json) noexcept {
  int failed = 0;
  for (auto& h : hooks) {
    Status st = run_hook(h, state_json);
    if (st.ok()) continue;
    ++failed;
    log::warn(std::move(st).error().wrap("error running " + kind + " hook").what());
  }
  return failed;
}

}  // namespace comet::runtime
