#include "comet/host/user_ns.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "comet/base/fd.hpp"
#include "comet/base/sys.hpp"
#include "comet/host/id_maps.hpp"
#include "comet/host/user_dirs.hpp"

namespace comet::runtime {

std::optional<SubIdRange> find_subid_range(const std::string& text, const std::string& name,
                                           uint32_t uid) {
  for (const std::string& line : split(text, '\n')) {
    auto f = split(line, ':');
    if (f.size() != 3 || (f[0] != name && f[0] != std::to_string(uid))) continue;
    char* end = nullptr;
    unsigned long start = std::strtoul(f[1].c_str(), &end, 10);
    if (f[1].empty() || *end) continue;
    unsigned long count = std::strtoul(f[2].c_str(), &end, 10);
    if (f[2].empty() || *end || count == 0 || start > 0xffffffffUL || count > 0xffffffffUL)
      continue;
    return SubIdRange{static_cast<uint32_t>(start), static_cast<uint32_t>(count)};
  }
  return std::nullopt;
}

std::vector<oci::IdMapping> own_namespace_maps(uint32_t own,
                                               const std::optional<SubIdRange>& range) {
  std::vector<oci::IdMapping> maps{{0, own, 1}};
  if (range) maps.push_back({1, range->start, range->count});
  return maps;
}

namespace {

std::optional<SubIdRange> range_of(const char* file, uint32_t id) {
  auto text = read_file(file);
  if (!text) return std::nullopt;
  std::string name;
  if (const passwd* pw = ::getpwuid(::geteuid())) name = pw->pw_name;
  return find_subid_range(*text, name, id);
}

// The helper child: once the parent has unshared, newuidmap/newgidmap on
// it (write_id_maps picks the helper for maps beyond the own id). Its
// error text goes back on OUT. Never returns.
[[noreturn]] void map_parent(int go, int out, pid_t parent, const std::vector<oci::IdMapping>& uids,
                             const std::vector<oci::IdMapping>& gids) {
  char b = 0;
  if (::read(go, &b, 1) != 1) ::_exit(1);  // the parent failed to unshare
  UniqueFd proc(::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC));
  Status st = proc ? write_id_maps(proc.get(), parent, uids, gids)
                   : Status(Error::sys(errno, "open /proc"));
  if (st.ok()) ::_exit(0);
  std::string msg = st.error().what();
  (void)!::write(out, msg.data(), msg.size());
  ::_exit(1);
}

Status write_own(const char* file, const std::string& text) {
  UniqueFd fd(::open(file, O_WRONLY | O_CLOEXEC));
  if (!fd) return Error::sys(errno, std::string("open ") + file);
  if (::write(fd.get(), text.data(), text.size()) < 0)
    return Error::sys(errno, std::string("write ") + file);
  return ok();
}

}  // namespace

Result<EnteredUserNs> enter_user_namespace() {
  const uint32_t uid = ::geteuid(), gid = ::getegid();
  EnteredUserNs r;
  auto ur = range_of("/etc/subuid", uid);
  auto gr = range_of("/etc/subgid", uid);
  pid_t helper = -1;
  UniqueFd go_w, err_r;
  if (ur && gr) {
    int go[2], err[2];
    if (::pipe2(go, O_CLOEXEC) < 0) return Error::sys(errno, "pipe");
    UniqueFd go_r(go[0]);
    go_w = UniqueFd(go[1]);
    if (::pipe2(err, O_CLOEXEC) < 0) return Error::sys(errno, "pipe");
    err_r = UniqueFd(err[0]);
    UniqueFd err_w(err[1]);
    const pid_t parent = ::getpid();
    helper = ::fork();
    if (helper < 0) return Error::sys(errno, "fork");
    if (helper == 0) {
      // Only the parent may hold the write end: its close (a failed
      // unshare) must reach this child as EOF.
      go_w.reset();
      err_r.reset();
      map_parent(go_r.get(), err_w.get(), parent, own_namespace_maps(uid, ur),
                 own_namespace_maps(gid, gr));
    }
  } else {
    r.why_not = "no range for uid " + std::to_string(uid) + " in /etc/subuid and /etc/subgid";
  }
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
    const int e = errno;
    go_w.reset();  // the helper reads EOF and exits
    if (helper > 0) ::waitpid(helper, nullptr, 0);
    if (e == EINVAL) return Error::sys(e, "unshare(CLONE_NEWUSER|CLONE_NEWNS)");
    return Error(e, userns_refusal(e));
  }
  if (helper > 0) {
    char b = 1;
    (void)!::write(go_w.get(), &b, 1);
    go_w.reset();
    int status = 0;
    while (::waitpid(helper, &status, 0) < 0 && errno == EINTR) {
    }
    std::string msg;
    char buf[512];
    for (ssize_t n; (n = ::read(err_r.get(), buf, sizeof buf)) > 0;)
      msg.append(buf, static_cast<size_t>(n));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      r.subordinate = true;
    else
      r.why_not = msg.empty() ? "the id map helper failed" : msg;
  }
  if (!r.subordinate) {
    // Only the own ids: what an unprivileged process may write itself. A
    // helper that wrote the uid map but failed on the gid map leaves the
    // namespace half-mapped: that is an error, not a fallback.
    auto cur = read_file("/proc/self/uid_map");
    if (cur && !cur->empty())
      return Error::msg("the user namespace's uid map is written but its gid map is not: " +
                        r.why_not);
    TRYV(write_own("/proc/self/setgroups", "deny"));
    TRYV(write_own("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1\n"));
    TRYV(write_own("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1\n"));
  }
  // Nothing mounted here propagates anywhere (the copies are slaves already;
  // private also stops the host's later mounts from arriving mid-run).
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0)
    return Error::sys(errno, "make / private in the new mount namespace");
  return r;
}

bool own_ids_only() {
  auto map = read_file("/proc/self/uid_map");
  if (!map) return true;
  std::vector<std::string> f;
  for (auto& w : split(*map, ' '))
    if (!w.empty()) f.push_back(w);
  return f.size() == 3 && (f[2] == "1" || f[2] == "1\n");
}

Status reexec_in_user_namespace() {
  const UserDirs& d = user_dirs();
  for (const std::string* p : {&d.runtime, &d.data, &d.cache})
    if (p->find('\n') != std::string::npos)
      return Error::msg("a per-user directory holds a newline: " + *p);
  if (::setenv("COMET_USER_DIRS", (d.runtime + "\n" + d.data + "\n" + d.cache).c_str(), 1) < 0)
    return Error::sys(errno, "setenv COMET_USER_DIRS");
  TRY(std::string cmdline, read_file("/proc/self/cmdline"));
  std::vector<std::string> args = split(cmdline, '\0');
  if (!args.empty() && args.back().empty()) args.pop_back();
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv("/proc/self/exe", argv.data());
  return Error::sys(errno, "re-exec /proc/self/exe in the user namespace");
}

}  // namespace comet::runtime
