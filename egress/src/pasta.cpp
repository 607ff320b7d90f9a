#include "comet/egress/pasta.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "comet/base/switches.hpp"
#include "comet/egress/proc.hpp"

namespace comet::egress {

std::string pasta_binary() {
  if (std::string p = switches::pasta(); !p.empty()) return p;
  for (const char* c : {"/usr/bin/pasta", "/usr/local/bin/pasta"})
    if (::access(c, X_OK) == 0) return c;
  return "";
}

std::vector<std::string> pasta_args(const std::string& binary, const std::string& pid_file) {
  std::vector<std::string> a = {binary,
                                "--config-net",  // addresses and routes inside
                                "--no-map-gw",   // gateway != host loopback
                                "-t", "none", "-u", "none", "-T", "none", "-U", "none", "--quiet",
                                // pasta drops to nobody by default, and
                                // nobody cannot setns into a root-owned
                                // namespace; it still drops every
                                // capability but what it needs.
                                "--runas", "0:0", "--pid", pid_file, "--netns",
                                "/proc/self/fd/" + std::to_string(kPastaNetnsFd)};
  return a;
}

Result<Helper> start_pasta(int netns_fd, const std::string& pid_file, const std::string& log_file) {
  std::string bin = pasta_binary();
  if (bin.empty())
    return Error::msg(
        "egress: pasta not found (install Debian's passt package, or set COMET_PASTA)");
  std::vector<std::string> args = pasta_args(bin, pid_file);
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  ::unlink(pid_file.c_str());
  UniqueFd log(::open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  // A plain fork and exec, not spawn_detached() (spawn.hpp): pasta
  // daemonizes itself (its own second fork, and --pid), and the exit status
  // of its first process is what says whether it started.
  pid_t pid = ::fork();
  if (pid < 0) return Error::sys(errno, "fork for pasta");
  if (pid == 0) {
    child_stdio(log.get());
    // Not CLOEXEC: pasta gets it (dup2 onto itself would keep the flag).
    if (netns_fd == kPastaNetnsFd)
      ::fcntl(netns_fd, F_SETFD, 0);
    else if (::dup2(netns_fd, kPastaNetnsFd) < 0)
      ::_exit(126);
    int keep[] = {kPastaNetnsFd};
    close_fds_except(keep, 1);
    ::setsid();
    char* envp[] = {nullptr};
    ::execve(argv[0], argv.data(), envp);
    ::_exit(127);
  }
  TRY(int status, wait_child(pid, 5000));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    // The last line that is not syslog noise.
    std::string why = last_log_line(log_file, 2047, [](std::string_view l) {
      return l.find("syslog") != std::string_view::npos;
    });
    return Error::msg("egress: pasta failed (" +
                      (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                         : "signal " + std::to_string(WTERMSIG(status))) +
                      (why.empty() ? "" : ": " + why) + ")");
  }
  // The daemon wrote its pid before the parent exited.
  int fd = ::open(pid_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::sys(errno, "egress: read " + pid_file);
  char buf[32] = {};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  int dpid = n > 0 ? std::atoi(buf) : 0;
  if (dpid <= 0) return Error::msg("egress: pasta wrote no pid to " + pid_file);
  Helper h{dpid, start_time(dpid)};
  if (h.start == 0) return Error::msg("egress: pasta exited right after it started");
  return h;
}

}  // namespace comet::egress
