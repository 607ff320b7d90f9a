// The fs watch's detacher (fswatch_internal.hpp): when the last watched
// cgroup is gone, a process of its own waits for kLingerSeconds of
// idleness, then unpins the link that attaches the program.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <ctime>

#include <bpf/bpf.h>

#include "comet/base/sys.hpp"
#include "comet/host/cgroups.hpp"
#include "comet/reporting/fswatch.hpp"
#include "fswatch_internal.hpp"

namespace comet::runtime {
using namespace fsw;

namespace {

// When this program's last container ended, and its detacher's pid.
std::string idle_file() {
  return "/run/comet-runtime/fswatch-" + program_hash() + ".idle";
}
std::string linger_file() {
  return "/run/comet-runtime/fswatch-" + program_hash() + ".linger";
}
constexpr int kLingerSeconds = 10;

// The detacher (fswatch_linger_main), unless one is waiting already.
void spawn_linger() {
  if (auto t = read_file(linger_file()); t.ok()) {
    auto sp = t->find(' ');
    int pid = std::atoi(t->c_str());
    unsigned long long start = sp == std::string::npos ? 0 : std::strtoull(t->c_str() + sp, 0, 10);
    if (pid > 0 && start != 0 && process_start_time(pid) == start) return;
  }
  char argv0[] = "comet-fswatch-linger";
  char* argv[] = {argv0, nullptr};
  char* envp[] = {nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  for (int fd = 0; fd < 3; fd++) posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", O_RDWR, 0);
  pid_t pid = 0;
  if (::posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv, envp) == 0) {
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
  posix_spawn_file_actions_destroy(&fa);
}

}  // namespace

namespace fsw {

void detach_when_idle() {
  // Nothing watched: detach, but not at once. Attaching again right after
  // a detach waits for its RCU grace period (8-16 ms measured), on the path
  // of the next pack: the detacher waits kLingerSeconds of idleness first.
  UniqueFd idle(::open(idle_file().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  spawn_linger();
}

}  // namespace fsw

int fswatch_linger_main() noexcept {
  // Not spawn_detached() (spawn.hpp), though it is a double fork too: its
  // first fork must be a posix_spawn of the binary, for the callers of
  // fswatch_unwatch() may have threads (the reporter's), and this exec'd
  // process, single-threaded, is the middle one; a spawn_detached() here
  // would add a third process on the path of delete.
  // Spawned by spawn_linger(), whose caller holds the lock and waits for
  // this first process. Everything a caller or a test may look for is done
  // before it exits: the cwd and cgroups are left before the fork (a shim's
  // or a pod's call must not stay busy for the seconds the detacher waits),
  // and the pid file names the detacher before the caller returns.
  if (::chdir("/") != 0) return 1;
  (void)move_self_to_root_cgroups();
  pid_t child = ::fork();
  if (child < 0) return 1;
  if (child != 0) {
    try {
      std::string me =
          std::to_string(child) + " " + std::to_string(process_start_time(child)) + "\n";
      if (write_file_atomic(linger_file(), me, 0600, Sync::none).ok()) return 0;
    } catch (...) {
    }
    ::kill(child, SIGKILL);
    return 1;
  }
  ::setsid();
  ::syscall(SYS_close_range, 3, ~0U, 0);
  try {
    for (;;) {
      struct stat st;
      long idle_for = kLingerSeconds;
      if (::stat(idle_file().c_str(), &st) == 0)
        idle_for = static_cast<long>(::time(nullptr) - st.st_mtime);
      if (idle_for < kLingerSeconds) {
        ::sleep(static_cast<unsigned>(kLingerSeconds - idle_for + 1));
        continue;
      }
      auto l = lock();
      if (!l.ok()) return 1;
      if (::stat(idle_file().c_str(), &st) == 0 && ::time(nullptr) - st.st_mtime < kLingerSeconds)
        continue;
      const std::string dir = pin_dir();
      UniqueFd m(bpf_obj_get((dir + "/slot_of").c_str()));
      if (!m || live_entries(m.get()).empty()) (void)::unlink((dir + "/link").c_str());
      (void)::unlink(idle_file().c_str());
      (void)::unlink(linger_file().c_str());
      return 0;
    }
  } catch (...) {
    return 1;
  }
}

}  // namespace comet::runtime
