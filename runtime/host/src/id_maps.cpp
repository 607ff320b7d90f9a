#include "comet/host/id_maps.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "comet/base/fault.hpp"
#include "comet/base/fd.hpp"
#include "comet/base/sys.hpp"

extern char** environ;

namespace comet::runtime {
namespace {

Status write_proc(int procfd, pid_t pid, const char* file, const std::string& text) {
  std::string rel = std::to_string(pid) + "/" + file;
  UniqueFd fd(::openat(procfd, rel.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return Error::sys(errno, "open /proc/" + rel);
  if (::write(fd.get(), text.data(), text.size()) < 0)
    return Error::sys(errno, "write /proc/" + rel);
  return ok();
}

// The helper by its usual paths (the runtime may run with a bare PATH).
std::string find_helper(const std::string& name) {
  if (fault_is("idmap-no-helper")) return "";  // as on a host without uidmap
  for (const char* dir : {"/usr/bin/", "/bin/", "/usr/sbin/", "/usr/local/bin/"}) {
    std::string p = dir + name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

// Does /etc/subuid (or subgid) give this user (by name or uid) a range?
bool has_subid_range(const std::string& file) {
  auto text = read_file(file);
  if (!text) return false;
  const std::string uid = std::to_string(::geteuid());
  std::string name;
  if (const passwd* pw = ::getpwuid(::geteuid())) name = pw->pw_name;
  for (auto& line : split(*text, '\n')) {
    std::string who = line.substr(0, line.find(':'));
    if (!who.empty() && (who == uid || who == name)) return true;
  }
  return false;
}

// Runs the helper, its stderr kept for the error; one line.
Status run_helper(const std::vector<std::string>& argv, const std::string& what) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) < 0) return Error::sys(errno, "pipe");
  UniqueFd rd(pipefd[0]), wr(pipefd[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, wr.get(), 2);
  posix_spawn_file_actions_adddup2(&fa, wr.get(), 1);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  wr.reset();
  if (rc != 0) return Error::sys(rc, what + ": run " + argv[0]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(rd.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ok();
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (size_t nl = out.rfind('\n'); nl != std::string::npos) out = out.substr(nl + 1);
  return Error::msg(what + ": " + argv[0] + " refused: " + (out.empty() ? "no reason given" : out));
}

Status write_one(int procfd, pid_t pid, bool gid, const std::vector<oci::IdMapping>& maps) {
  const char* file = gid ? "gid_map" : "uid_map";
  const uint32_t own = gid ? ::getegid() : ::geteuid();
  // uid 0 (of the host or of the user namespace we are in: rootless podman)
  // has CAP_SETUID over its namespace and writes any map itself.
  const bool privileged = ::geteuid() == 0;
  if (privileged || own_id_only(maps, own)) {
    // An unprivileged gid_map needs setgroups denied first (user_namespaces(7)).
    if (gid && !privileged) TRYV(write_proc(procfd, pid, "setgroups", "deny"));
    return write_proc(procfd, pid, file, id_map_text(maps));
  }
  const std::string name = gid ? "newgidmap" : "newuidmap";
  const std::string field = gid ? "linux.gidMappings" : "linux.uidMappings";
  const std::string subfile = gid ? "/etc/subgid" : "/etc/subuid";
  std::string helper = find_helper(name);
  if (helper.empty())
    return Error::msg(field + " maps more than this user's own id, which needs " + name +
                      ": not found (install the uidmap package)");
  if (!has_subid_range(subfile))
    return Error::msg(field + " maps more than this user's own id, but " + subfile +
                      " has no range for uid " + std::to_string(::geteuid()) +
                      " (add one, e.g. usermod --add-subuids/--add-subgids)");
  return run_helper(id_map_helper_argv(helper, pid, maps), field);
}

}  // namespace

bool own_id_only(const std::vector<oci::IdMapping>& maps, uint32_t own) {
  return maps.size() == 1 && maps[0].host_id == own && maps[0].size == 1;
}

std::string id_map_text(const std::vector<oci::IdMapping>& maps) {
  std::string text;
  for (auto& e : maps)
    text += std::to_string(e.container_id) + " " + std::to_string(e.host_id) + " " +
            std::to_string(e.size) + "\n";
  return text;
}

std::vector<std::string> id_map_helper_argv(const std::string& helper, pid_t pid,
                                            const std::vector<oci::IdMapping>& maps) {
  std::vector<std::string> argv = {helper, std::to_string(pid)};
  for (auto& e : maps) {
    argv.push_back(std::to_string(e.container_id));
    argv.push_back(std::to_string(e.host_id));
    argv.push_back(std::to_string(e.size));
  }
  return argv;
}

Status write_id_maps(int procfd, pid_t pid, const std::vector<oci::IdMapping>& uids,
                     const std::vector<oci::IdMapping>& gids) {
  TRYV(write_one(procfd, pid, false, uids));
  return write_one(procfd, pid, true, gids);
}

}  // namespace comet::runtime
