// The end of a sandbox run (sandbox_parts.hpp): the events' store and
// summary, and the git rule's last look at the indexes.
#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "comet/base/random.hpp"
#include "comet/base/sys.hpp"
#include "comet/host/log.hpp"
#include "comet/host/user_dirs.hpp"
#include "comet/reporting/create_rule.hpp"
#include "comet/reporting/violations.hpp"
#include "sandbox_parts.hpp"
#include "sandbox_placeholders.hpp"

namespace comet::runtime::sandbox_parts {
// ---- events -------------------------------------------------------------

// Where the reporter writes events.jsonl: a tmpfs attached nowhere
// (fsmount), reached as /proc/self/fd/N by the reporter thread. It goes
// with the runtime: nothing on disk, even after a SIGKILL. Raw syscalls
// only, errors as an errno: the rootless child below runs it on our memory.
static int make_detached_tmpfs(int* err) noexcept {
  int fs = static_cast<int>(::syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC));
  if (fs < 0) return *err = errno, -1;
  int m = -1;
  if (::syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0700", 0) < 0 ||
      ::syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", "4m", 0) < 0 ||
      ::syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0 ||
      (m = static_cast<int>(::syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0))) < 0)
    *err = errno;
  ::close(fs);
  return m;
}

// Rootless: an ordinary caller cannot mount, so a child in a user and
// mount namespace of its own (its uid and gid mapped onto themselves, so
// the caller may create files there) makes the tmpfs; the user namespace
// lives on with the mount, the child exits. A clone(CLONE_VM | CLONE_VFORK
// | CLONE_FILES) on a stack of its own, as the sandbox's init starts the
// command (child_process.cpp): the mount's fd lands in our table, and no
// copy of the runtime's address space is made and torn down (a fork here
// was ~1-2 ms of every rootless run). Every signal blocked while it runs.
struct TmpfsChild {
  uid_t uid;
  gid_t gid;
  int fd = -1;
  int err = 0;
  bool userns = false;  // the unshare failed
};

static int tmpfs_child(void* arg) noexcept {
  auto* c = static_cast<TmpfsChild*>(arg);
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
    c->err = errno;
    c->userns = true;
    return 0;
  }
  char line[64];
  for (const char* f : {"/proc/self/setgroups", "/proc/self/uid_map", "/proc/self/gid_map"}) {
    if (f[11] == 's')
      std::snprintf(line, sizeof line, "deny");
    else
      std::snprintf(line, sizeof line, "%u %u 1\n", f[11] == 'u' ? c->uid : c->gid,
                    f[11] == 'u' ? c->uid : c->gid);
    int fd = ::open(f, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, line, std::strlen(line)) < 0) {
      c->err = errno;
      if (fd >= 0) ::close(fd);
      return 0;
    }
    ::close(fd);
  }
  c->fd = make_detached_tmpfs(&c->err);
  return 0;
}

static Result<UniqueFd> detached_tmpfs_rootless() {
  TmpfsChild c{::getuid(), ::getgid(), -1, 0, false};
  constexpr size_t kStack = 64 * 1024;
  void* stack = ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return Error::sys(errno, "a stack for the events' tmpfs");
  sigset_t all, old;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &old);
  const pid_t pid = ::clone(tmpfs_child, static_cast<char*>(stack) + kStack,
                            CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD, &c);
  const int clone_err = errno;
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  if (pid > 0) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  ::munmap(stack, kStack);
  if (pid < 0) return Error::sys(clone_err, "clone for the events' tmpfs");
  if (c.fd >= 0) return UniqueFd(c.fd);
  if (c.userns) return Error(c.err, "sandbox: " + userns_refusal(c.err));
  return Error::sys(c.err ? c.err : EIO, "a tmpfs for the events (rootless)");
}

Result<UniqueFd> detached_tmpfs() {
  if (::geteuid() != 0) return detached_tmpfs_rootless();
  int err = 0;
  UniqueFd m(make_detached_tmpfs(&err));
  if (!m) return Error::sys(err, "fsmount tmpfs");
  return m;
}

// The git rule's last look, once nothing of the sandbox runs: an index of
// the workspace's own repository with an entry naming a ".git" path (which
// git's own path check refuses) would have the host's `git restore .`
// write .git/config or a hook (red team round 7). Such an index, or one
// that cannot be read, is moved aside (index.comet-refused), said on
// stderr and reported (fs.write).
// An index as it was: it is read at the end only when it changed (a large
// repository's index is megabytes).

static IndexStamp index_stamp(const std::string& index) {
  IndexStamp t;
  struct stat st;
  if (::lstat(index.c_str(), &st) < 0) {
    t.unknown = errno != ENOENT;  // EACCES: `chmod 000 .git` (red team round 15)
    return t;
  }
  t.there = true;
  t.dev = st.st_dev;
  t.ino = st.st_ino;
  t.size = st.st_size;
  t.mtime = st.st_mtim;
  t.ctime = st.st_ctim;
  return t;
}

void git_dirs_below(const std::string& dir, int depth, std::size_t limit,
                    std::vector<std::string>& out) {
  if (depth > 8 || out.size() >= limit) return;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> subs;
  while (struct dirent* e = ::readdir(d))
    if (e->d_type == DT_DIR && e->d_name[0] != '.') subs.push_back(dir + "/" + e->d_name);
  ::closedir(d);
  for (const std::string& sub : subs) {
    struct stat st;
    if (::lstat((sub + "/HEAD").c_str(), &st) == 0) {
      out.push_back(sub);
      git_dirs_below(sub + "/modules", depth + 1, limit, out);
    } else {
      git_dirs_below(sub, depth + 1, limit, out);  // modules/vendor/lib
    }
  }
}

// The git directories whose index the host's git later reads and writes
// from: the own one, its linked worktrees' (worktrees/W), and its modules'
// at any depth (red team round 8: only the own index was read); 512 at most.
static std::vector<std::string> own_git_dirs(const std::vector<std::string>& own) {
  std::vector<std::string> out;
  for (const std::string& g : own) {
    out.push_back(g);
    git_dirs_below(g + "/worktrees", 8, 512, out);
    git_dirs_below(g + "/modules", 1, 512, out);
  }
  return out;
}

IndexStamps index_stamps(const std::vector<std::string>& own) {
  IndexStamps m;
  for (const std::string& g : own_git_dirs(own)) m[g + "/index"] = index_stamp(g + "/index");
  return m;
}

std::string move_aside(const std::string& path) {
  std::string to = path + ".comet-refused";
  if (::renameat2(AT_FDCWD, path.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return to;
  to = path + ".comet-refused-" + random_hex(4);
  if (::renameat2(AT_FDCWD, path.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return to;
  return {};
}

void report_git_refusal(const std::string& id, const std::string& events_dir,
                        const std::string& deliver, const std::string& requested) {
  if (events_dir.empty()) return;
  violations::Event e;
  e.container = id;
  e.surface = "fs.write";
  e.requested = requested;
  e.matched_entry = "git repository";
  e.syscall = "";
  e.pid = 1;
  e.err = EACCES;
  (void)violations::append_event(events_dir, e);
  if (!deliver.empty()) violations::deliver_line(deliver, violations::to_json_line(e));
}

static bool objectformat_sha256(const std::string& git_dir) {
  auto c = read_file(git_dir + "/config");
  if (!c.ok()) return false;
  std::string t = *c;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char ch) { return std::tolower(ch); });
  t.erase(std::remove_if(t.begin(), t.end(), [](char ch) { return ch == ' ' || ch == '\t'; }),
          t.end());
  return t.find("objectformat=sha256") != std::string::npos;
}

void check_git_index(const std::vector<std::string>& own, const IndexStamps& before,
                     const std::string& id, const std::string& events_dir,
                     const std::string& deliver, const std::vector<std::string>& roots) {
  const bool sha256 = !own.empty() && objectformat_sha256(own.front());
  for (const std::string& g : own_git_dirs(own)) {
    const std::string idx = g + "/index";
    IndexStamp now = index_stamp(idx);
    // A git directory of ours the command made unsearchable, or one on the
    // way to it (an ordinary user's runtime, `chmod 000 .git` or `chmod 000
    // .` as its last act: red team round 15) gets its owner's rights back,
    // and is then looked at.
    bool mode_restored = false;
    if (now.unknown) {
      const bool above = regain_own_dirs(g, roots);  // both: one may not be enough
      mode_restored = regain_own_dir(g) || above;
      if (mode_restored) now = index_stamp(idx);
    }
    if (auto b = before.find(idx); b != before.end() && now == b->second) continue;
    if (mode_restored && !now.there) continue;
    bool bad = false;
    const std::string entry = git_index_dot_git_entry(idx, sha256 || objectformat_sha256(g), &bad);
    if (entry.empty() && !bad) continue;
    // Moved aside; where that name is taken (a directory the command made
    // there, red team round 9), beside it under a fresh name; else removed.
    const std::string to = move_aside(idx);
    const bool moved = !to.empty();
    const bool removed = !moved && ::unlink(idx.c_str()) == 0;
    const std::string what =
        entry.empty() ? "an index git cannot read safely" : "an entry " + entry;
    log::warn("sandbox: " + idx + " holds " + what + ", which the host's git would write into " +
              "the git directory or outside the work tree; " +
              (moved     ? "moved to " + to
               : removed ? "removed it"
                         : "could not move or remove it: do not run "
                           "`git restore`/`checkout` there"));
    report_git_refusal(id, events_dir, deliver, idx + (entry.empty() ? "" : ": " + entry));
  }
}

void summarize_events(const std::string& dir, const std::string& deliver) {
  auto text = read_file(join_path(dir, violations::kEventsFile));
  if (!text.ok() || text->empty()) return;
  violations::ViolationTally t = violations::tally_violations(*text);
  std::sort(t.surfaces.begin(), t.surfaces.end(),
            [](const auto& a, const auto& b) { return a.surface < b.surface; });
  // Every refusal is counted, recorded or not (red team round 12: the
  // summary said "refused 7493" of 9001).
  for (const violations::SurfaceTally& s : t.surfaces) {
    const long all = s.all();
    const std::string first =
        s.first_requested + (s.first_syscall.empty() ? "" : " (" + s.first_syscall + ")");
    log::warn("sandbox: refused " + std::to_string(all) + " " + s.surface + " action" +
              (all == 1 ? "" : "s") + (first.empty() ? "" : ", first: " + first) +
              (s.dropped ? " (" + std::to_string(s.dropped) +
                               " past the events cap: counted, not recorded)"
                         : "") +
              (deliver.empty() ? "" : " (events: " + deliver + ")"));
  }
}

}  // namespace comet::runtime::sandbox_parts
