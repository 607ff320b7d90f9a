// The end of a sandbox run (sandbox_parts.hpp): the events' store and
// summary, and the git rule's last look at the indexes.
#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <stdio.h>
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

#include "comet/base/fdpass.hpp"
#include "comet/base/random.hpp"
#include "comet/base/sys.hpp"
#include "comet/host/log.hpp"
#include "comet/host/user_dirs.hpp"
#include "comet/reporting/create_rule.hpp"
#include "comet/reporting/violations.hpp"
#include "sandbox_parts.hpp"

namespace comet::runtime::sandbox_parts {
// ---- events -------------------------------------------------------------

// Where the reporter writes events.jsonl: a tmpfs attached nowhere
// (fsmount), reached as /proc/self/fd/N by the reporter thread. It goes
// with the runtime: nothing on disk, even after a SIGKILL.
static Result<UniqueFd> make_detached_tmpfs() {
  UniqueFd fs(static_cast<int>(::syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC)));
  if (!fs) return Error::sys(errno, "fsopen tmpfs");
  if (::syscall(SYS_fsconfig, fs.get(), FSCONFIG_SET_STRING, "mode", "0700", 0) < 0 ||
      ::syscall(SYS_fsconfig, fs.get(), FSCONFIG_SET_STRING, "size", "4m", 0) < 0 ||
      ::syscall(SYS_fsconfig, fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0)
    return Error::sys(errno, "fsconfig tmpfs");
  UniqueFd m(static_cast<int>(::syscall(SYS_fsmount, fs.get(), FSMOUNT_CLOEXEC, 0)));
  if (!m) return Error::sys(errno, "fsmount tmpfs");
  return m;
}

// Rootless: an ordinary caller cannot mount, so a child in a user and
// mount namespace of its own (its uid and gid mapped onto themselves, so
// the caller may create files there) makes the tmpfs and hands its fd
// over; the user namespace lives on with the mount, the child exits.
static Result<UniqueFd> detached_tmpfs_rootless() {
  int sp[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
    return Error::sys(errno, "socketpair");
  UniqueFd ours(sp[0]), theirs(sp[1]);
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  const pid_t pid = ::fork();
  if (pid < 0) return Error::sys(errno, "fork");
  if (pid == 0) {
    int err = 0;
    char line[64];
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) ::_exit(128 | (errno & 0x7f));
    for (const char* f : {"/proc/self/setgroups", "/proc/self/uid_map", "/proc/self/gid_map"}) {
      if (std::strcmp(f, "/proc/self/setgroups") == 0)
        std::snprintf(line, sizeof line, "deny");
      else
        std::snprintf(line, sizeof line, "%u %u 1\n", f[11] == 'u' ? uid : gid,
                      f[11] == 'u' ? uid : gid);
      int fd = ::open(f, O_WRONLY | O_CLOEXEC);
      if (fd < 0 || ::write(fd, line, std::strlen(line)) < 0) ::_exit(errno & 0xff);
      ::close(fd);
    }
    auto m = make_detached_tmpfs();
    if (!m.ok()) ::_exit(m.error().err() & 0xff);
    const int fd = m->get();
    if (send_fds(theirs.get(), "m", 1, &fd, 1) < 0) err = errno;
    ::_exit(err & 0xff);
  }
  theirs.reset();
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  char b = 0;
  UniqueFd got;
  std::size_t n = 0;
  if (recv_fds(ours.get(), &b, 1, &got, 1, &n, MSG_DONTWAIT) == 1 && n == 1) return got;
  const int err = WIFEXITED(st) && WEXITSTATUS(st) ? WEXITSTATUS(st) : EIO;
  if (err & 128) return Error(err & 0x7f, "sandbox: " + userns_refusal(err & 0x7f));
  return Error::sys(err, "a tmpfs for the events (rootless)");
}

Result<UniqueFd> detached_tmpfs() {
  if (::geteuid() != 0) return detached_tmpfs_rootless();
  return make_detached_tmpfs();
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
  if (::lstat(index.c_str(), &st) < 0) return t;
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
                     const std::string& deliver) {
  const bool sha256 = !own.empty() && objectformat_sha256(own.front());
  for (const std::string& g : own_git_dirs(own)) {
    const std::string idx = g + "/index";
    if (auto b = before.find(idx); b != before.end() && index_stamp(idx) == b->second) continue;
    bool bad = false;
    const std::string entry = git_index_dot_git_entry(idx, sha256 || objectformat_sha256(g), &bad);
    if (entry.empty() && !bad) continue;
    // Moved aside; where that name is taken (a directory the command made
    // there, red team round 9), beside it under a fresh name; else removed.
    std::string to = idx + ".comet-refused";
    bool moved = ::renameat2(AT_FDCWD, idx.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0;
    if (!moved) {
      to = idx + ".comet-refused-" + random_hex(4);
      moved = ::renameat2(AT_FDCWD, idx.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0;
    }
    const bool removed = !moved && ::unlink(idx.c_str()) == 0;
    const std::string what =
        entry.empty() ? "an index git cannot read safely" : "an entry " + entry;
    log::warn("sandbox: " + idx + " holds " + what + ", which the host's git would write into " +
              "the git directory or outside the work tree; " +
              (moved     ? "moved to " + to
               : removed ? "removed it"
                         : "could not move or remove it: do not run "
                           "`git restore`/`checkout` there"));
    if (events_dir.empty()) continue;
    violations::Event e;
    e.container = id;
    e.surface = "fs.write";
    e.requested = idx + (entry.empty() ? "" : ": " + entry);
    e.matched_entry = "git repository";
    e.syscall = "";
    e.pid = 1;
    e.err = EACCES;
    (void)violations::append_event(events_dir, e);
    if (!deliver.empty()) violations::deliver_line(deliver, violations::to_json_line(e));
  }
}

void summarize_events(const std::string& dir, const std::string& deliver) {
  auto text = read_file(join_path(dir, violations::kEventsFile));
  if (!text.ok() || text->empty()) return;
  struct Surface {
    long n = 0;
    std::string first;
  };
  std::map<std::string, Surface> by;
  for (const auto& line : split(*text, '\n')) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("type", "") != "capability_violation") continue;
    Surface& s = by[j.value("surface", "?")];
    s.n += 1 + j.value("repeated", 0L);
    if (s.first.empty()) {
      const std::string sc = j.value("syscall", "");
      s.first = j.value("requested", "") + (sc.empty() ? "" : " (" + sc + ")");
    }
  }
  for (const auto& [surface, s] : by)
    log::warn("sandbox: refused " + std::to_string(s.n) + " " + surface + " action" +
              (s.n == 1 ? "" : "s") + ", first: " + s.first +
              (deliver.empty() ? "" : " (events: " + deliver + ")"));
}

}  // namespace comet::runtime::sandbox_parts
