// `comet-runtime sandbox`: prepare (who, config, profile), plan (pure,
// capability/profile_compile.cpp), launch it directly (sandbox_launch.hpp).
#include "comet/sandbox/sandbox_cli.hpp"

#include "sandbox_parts.hpp"
#include "sandbox_protect.hpp"
#include "sandbox_write_paths.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/fs.h>
#include <pwd.h>
#include <sched.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_set>

#include "comet/base/fd.hpp"
#include "comet/base/random.hpp"
#include "comet/base/switches.hpp"
#include "comet/base/sys.hpp"
#include "comet/capability/auto_allow.hpp"
#include "comet/capability/git_config.hpp"
#include "comet/capability/profile_compile.hpp"
#include "comet/host/log.hpp"
#include "comet/host/user_dirs.hpp"
#include "comet/oci/spec.hpp"
#include "comet/reporting/violations.hpp"
#include "comet/sandbox/sandbox_config.hpp"
#include "comet/sandbox/sandbox_launch.hpp"

namespace comet::runtime {

namespace cap = comet::capability;

namespace {

constexpr int kExitSandboxFailed = 125;
constexpr int kExitNotExecutable = 126;
constexpr int kExitNotFound = 127;
constexpr const char* kDefaultStateRoot = "/run/comet-runtime";
constexpr const char* kBundlePrefix = ".sandbox@";  // earlier versions' bundles

struct Prepared {
  Invoker who;
  std::string workspace;
  cap::ResolveContext ctx;
  ConfigPaths paths;
  LoadedConfig config;
  cap::ResolvedProfile profile;
  sandbox_parts::GitEnvConfigs git_env;  // the host git's configs from the environment
  sandbox_parts::GitDirs git_dirs;       // the git directories the searches found
};

Result<std::string> real_dir(const std::string& p, const char* what) {
  char buf[PATH_MAX];
  if (!::realpath(p.c_str(), buf)) return Error::sys(errno, std::string(what) + " " + p);
  struct stat st;
  if (::stat(buf, &st) < 0 || !S_ISDIR(st.st_mode))
    return Error::msg(std::string(what) + " " + p + ": not a directory");
  return std::string(buf);
}

// A workspace file's profile names read/write entries inside {workspace}
// only (profile_parse.cpp); a symlink there may lead anywhere: what it adds
// beyond its base must really lie inside the workspace (red team round 11).
Status workspace_profile_stays_inside(const Prepared& p) {
  auto it = p.config.set.custom.find(p.profile.name);
  if (it == p.config.set.custom.end() || !it->second.from_workspace) return {};
  TRY(auto base, cap::resolve(p.config.set, it->second.extends, p.ctx));
  auto real_of = [](std::string path) {
    std::string rest;
    char buf[PATH_MAX];
    while (!::realpath(path.c_str(), buf)) {
      const auto k = path.rfind('/');
      if (k == std::string::npos || k == 0) return std::string("/") + rest;
      rest = path.substr(k) + rest;
      path = path.substr(0, k);
    }
    return std::string(buf) + rest;
  };
  for (const auto* pair : {&p.profile.write, &p.profile.read}) {
    const auto& have = pair == &p.profile.write ? base.write : base.read;
    for (const std::string& e : *pair) {
      if (std::find(have.begin(), have.end(), e) != have.end()) continue;
      const std::string r = real_of(e);
      if (r != p.workspace && r.rfind(p.workspace + "/", 0) != 0)
        return Error::msg("sandbox: profile " + p.profile.name + " (" + it->second.file + ") " +
                          (pair == &p.profile.write ? "writes " : "reads ") + e +
                          ", which leads outside the workspace to " + r);
    }
  }
  return {};
}

// A workspace at or below a protected path would make it writable (red
// team round 17: ~/.config/systemd/user, python's user site under
// ~/.local/lib, ~/.config/fish/conf.d, a repository's .claude or .vscode
// as the workspace): what the host runs or obeys from there would be the
// command's. The protected paths of the profile (the home's names, what
// git's config names), and the workspace table's names at the top of the
// repository holding the workspace.
Status workspace_not_protected(const Prepared& p) {
  // The home's configuration and data trees where they really are (a
  // dotfiles manager's `~/.config -> ~/dotfiles/config`; review of 94a8743),
  // and $XDG_DATA_HOME: the same refusal as capability/profile.cpp's.
  std::vector<std::string> trees = {p.ctx.home + "/.config", p.ctx.home + "/.local",
                                    p.ctx.config_home};
  if (const char* d = ::getenv("XDG_DATA_HOME"); d && d[0] == '/') trees.push_back(d);
  for (const std::string& t : trees) {
    char buf[PATH_MAX];
    if (t.empty() || t[0] != '/' || !::realpath(t.c_str(), buf)) continue;
    const std::string real = buf;
    if (real != "/" && (path_under(p.workspace, real) || path_under(real, p.workspace)))
      return Error::msg("sandbox: the workspace " + p.workspace +
                        (p.workspace == real             ? " is "
                         : path_under(p.workspace, real) ? " is under "
                                                         : " holds ") +
                        real + " (" + t +
                        "), where the host's session and tools read their configuration and "
                        "services; use a project directory");
  }
  // A hidden directory of the home where it really is (profile.cpp's rule,
  // through links: `~/proj -> ~/.cache/x`).
  if (char buf[PATH_MAX]; !p.ctx.home.empty() && ::realpath(p.ctx.home.c_str(), buf)) {
    const std::string home = buf;
    if (home != "/" && p.workspace != home && path_under(p.workspace, home) &&
        p.workspace[home.size() + 1] == '.')
      return Error::msg(
          "sandbox: the workspace " + p.workspace +
          (p.workspace.find('/', home.size() + 1) == std::string::npos ? " is " : " is in ") +
          p.workspace.substr(0, p.workspace.find('/', home.size() + 1)) +
          ", a hidden directory of the home, where tools keep what they run and "
          "obey; use a project directory");
  }
  std::vector<std::string> prot = p.profile.protect;
  for (std::string r = p.workspace; r.size() > 1;) {
    r = r.substr(0, std::max<std::size_t>(r.rfind('/'), 1));
    if (sandbox_parts::git_dir_of((r == "/" ? "" : r) + "/.git").empty()) continue;
    for (const std::string& n : cap::protected_workspace_names())
      if (n.rfind(".git/", 0) != 0)
        prot.push_back((r == "/" ? "" : r) + "/" +
                       (n.back() == '/' ? n.substr(0, n.size() - 1) : n));
    break;
  }
  for (const std::string& pr : prot) {
    if (pr.empty() || pr[0] != '/' || pr == "/" || pr.find('*') != std::string::npos) continue;
    char buf[PATH_MAX];
    const std::string real = ::realpath(pr.c_str(), buf) ? std::string(buf) : pr;
    for (const std::string& at : {pr, real})
      if (path_under(p.workspace, at))
        return Error::msg("sandbox: the workspace " + p.workspace +
                          (p.workspace == at ? " is" : " is under") + " the protected " + at +
                          ": what the host runs from there would be the command's; use a "
                          "project directory");
  }
  return {};
}

// The search for nested repositories (sandbox_protect.cpp) cut short by its
// limits fails closed where the profile writes in the workspace (red team
// round 14: 112k directories, or 260 repositories, left the repositories
// beyond writable, and the host's git ran one's fsmonitor program the
// command rewrote), unless COMET_ALLOW_MISSING=nested-repos says to run
// without that protection (one warning then). A profile that writes
// nothing there (read-only, devbox) has nothing to protect.
bool writes_in_workspace(const Prepared& p) {
  if (!p.profile.sandboxed || p.profile.base == "devbox") return false;
  return std::any_of(p.profile.write.begin(), p.profile.write.end(), [&](const std::string& w) {
    // the private /tmp is no host path (a workspace under /tmp is bound)
    return w != p.ctx.tmp && (path_under(w, p.workspace) || path_under(p.workspace, w));
  });
}

// A protection the sandbox could not give in full (WHAT says which, FIX
// what the user can do): the run refuses, unless COMET_ALLOW_MISSING=LAYER
// says to run without it (one warning then).
Status unless_allowed_missing(const char* layer, const std::string& what, const std::string& fix) {
  if (!switches::allow_missing(layer))
    return Error::msg(what + ": refusing to run; " + fix + ", or COMET_ALLOW_MISSING=" + layer +
                      " runs without that protection (docs/sandbox.md, Protected paths)");
  log::warn(what + " (COMET_ALLOW_MISSING=" + layer + ")");
  return ok();
}

// CUT: where the search stopped ("": it saw everything); WRITTEN: the
// profile writes the tree searched.
Status nested_walk_checked(const std::string& cut, bool written,
                           const char* layer = "nested-repos") {
  if (cut.empty() || !written) return ok();
  const bool ws = std::string_view(layer) == "nested-repos";
  // a directory made unreadable (an ordinary user's): its mode is the fix
  const bool unreadable = cut.find(" it cannot read") != std::string::npos;
  return unless_allowed_missing(
      layer,
      std::string("sandbox: the search for ") +
          (ws ? "nested git repositories" : "git repositories in the profile's write paths") +
          " stopped at " + cut + "; a repository beyond it would not be protected",
      unreadable ? "give it back its owner's read and search rights"
      : ws       ? "narrow --workspace"
                 : "narrow the profile's write paths");
}

// A write path outside the workspace (a custom profile's, or ~/.comet) is
// searched for repositories as the workspace is (sandbox_protect.cpp; red
// team round 14 left it open), and what that finds is protected as the
// config's own `protect` entries are. A search cut short fails closed, as
// the workspace's does.
Status write_trees_protected(Prepared& p) {
  if (!p.profile.sandboxed || p.profile.base == "devbox") return ok();
  std::vector<std::string> trees;
  for (const std::string& w : p.profile.write)
    if (w != p.ctx.tmp && !path_under(w, p.workspace)) trees.push_back(w);
  if (trees.empty()) return ok();
  cap::ProfileSet found;
  std::string cut;
  TRYV(sandbox_parts::protect_write_trees(trees, p.workspace, p.ctx, p.git_env, found, &cut,
                                          &p.git_dirs));
  std::unordered_set<std::string> have(p.profile.protect.begin(), p.profile.protect.end());
  std::unordered_set<std::string> files(p.profile.protect_files.begin(),
                                        p.profile.protect_files.end());
  for (const cap::ConfigPath& c : found.protect) {
    if (have.insert(c.path).second) p.profile.protect.push_back(c.path);
    if (c.missing_is_file && files.insert(c.path).second) p.profile.protect_files.push_back(c.path);
  }
  return nested_walk_checked(cut, true, "write-path-repos");
}

// Every write path, whatever profile source named it, bound where it is
// and not where a symlink leads (red team round 12: `build -> /host/dir`
// and `~/.comet/sessions -> /etc`, left by an earlier run). The private
// /tmp is no host path; devbox writes everything anyway.
Status write_paths_checked(const Prepared& p) {
  if (!p.profile.sandboxed || p.profile.base == "devbox") return {};
  std::vector<std::string> writes;
  for (const std::string& w : p.profile.write)
    if (w != p.ctx.tmp) writes.push_back(w);
  std::vector<std::string> keep_out = writes;
  keep_out.push_back(p.workspace);
  if (!p.who.home.empty()) keep_out.push_back(p.who.home);
  return sandbox_parts::write_paths_follow_no_links(writes, keep_out);
}

// A directory given as stdin, stdout or stderr is an fd on the caller's
// mount, outside every bind of the sandbox: a command walking from it
// (`openat(0, ".git/hooks/x")`, `/proc/self/fd/0/../../etc/shadow`) writes
// past the read-only binds and reads what the profile denies (red team
// round 15). Refused, as no tool needs one there.
Status stdio_checked() {
  for (int fd = 0; fd <= 2; fd++) {
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
      return Error::msg(std::string("sandbox: ") +
                        (fd == 0   ? "stdin"
                         : fd == 1 ? "stdout"
                                   : "stderr") +
                        " is a directory, through which the command could reach the host's "
                        "files past the sandbox; give a file, a pipe or a terminal");
  }
  return ok();
}

Result<Prepared> prepare(const SandboxOptions& o, const Environ& env) {
  TRYV(stdio_checked());
  Prepared p;
  TRY(p.who, invoking_user(env));
  std::string ws = o.workspace;
  if (ws.empty()) {
    char buf[PATH_MAX];
    if (!::getcwd(buf, sizeof buf)) return Error::sys(errno, "getcwd");
    ws = buf;
  }
  TRY(p.workspace, real_dir(ws, "workspace"));
  p.ctx = resolve_context(p.who, p.workspace, env);
  p.paths = config_paths(p.ctx, env);
  TRY(p.config, load_sandbox_config(p.paths));
  std::string walk_cut;
  {
    char cwd[PATH_MAX];
    TRY(p.git_env, sandbox_parts::git_env_configs(env, ::getcwd(cwd, sizeof cwd) ? cwd : "/"));
  }
  if (Status st = sandbox_parts::protect_git_config_paths(p.workspace, p.ctx, p.git_env,
                                                          p.config.set, &walk_cut, &p.git_dirs);
      !st.ok())
    return st.error();
  TRY(p.profile, cap::resolve(p.config.set, o.profile, p.ctx));
  TRYV(workspace_profile_stays_inside(p));
  TRYV(write_paths_checked(p));
  // The home the account has (passwd), beside $HOME (the profile's "~"):
  // a workspace at or above either is refused where the profile writes the
  // workspace (capability/profile.cpp); devbox protects nothing by design.
  const bool writes_ws = p.profile.sandboxed && p.profile.base != "devbox" &&
                         std::find(p.profile.write.begin(), p.profile.write.end(), p.workspace) !=
                             p.profile.write.end();
  if (writes_ws) TRYV(workspace_not_protected(p));
  TRYV(nested_walk_checked(walk_cut, writes_in_workspace(p)));
  TRYV(write_trees_protected(p));
  if (writes_ws) {
    struct passwd pw, *res = nullptr;
    std::vector<char> buf(16384);
    if (::getpwuid_r(p.who.uid, &pw, buf.data(), buf.size(), &res) == 0 && res && pw.pw_dir &&
        pw.pw_dir[0] == '/') {
      char real[PATH_MAX];
      const std::string home = ::realpath(pw.pw_dir, real) ? std::string(real) : pw.pw_dir;
      if (home != "/" && (home == p.workspace || home.rfind(p.workspace + "/", 0) == 0))
        return Error::msg(
            "sandbox: the workspace " + p.workspace +
            (home == p.workspace ? " is the home directory" : " holds the home directory " + home) +
            ": too much of what your shell and tools run lives there; use a "
            "project directory");
    }
  }
  return p;
}

// The --events target must lie outside every tree the command can write
// (red team rounds 11 and 12): a socket there could be unlinked and bound
// again by the command, which then swallows the events; a file there could
// be replaced by a symlink to a shell start-up file that the runtime (root,
// or root for a sudo caller) then appends to, or by a FIFO that blocks the
// reporter. The private /tmp is no host tree; devbox protects nothing by
// design.
// PATH (absolute, its directory resolved) must not lie in a tree the
// command can write.
Status outside_writable(const Prepared& p, const std::string& path, const std::string& events,
                        bool sock) {
  for (const std::string& w : p.profile.write) {
    if (w == p.ctx.tmp && p.profile.limits.tmp != 0) continue;  // a private tmpfs inside
    if (path_under(path, w))
      return Error::msg("sandbox: --events " + events + " is in " + w +
                        ", which the command can write (it could " +
                        (sock ? "take the socket's name" : "replace the file") +
                        "); put it elsewhere");
  }
  return {};
}

bool events_checked(const Prepared& p) {
  return p.profile.sandboxed && p.profile.base != "devbox";
}

// Every directory the kernel walks through on the way to the --events
// target, each where it really is, outside every writable tree: a symlink
// or a `..` in the workspace on the way would be the command's to move
// before the next run (red team round 20: `--events /W/logs/ev` with
// `logs` a link out of the workspace, re-pointed by the command, had the
// next run make the file where the command chose). PATH is absolute.
Status walk_outside_writable(const Prepared& p, const std::string& path, const std::string& events,
                             bool sock) {
  std::string prefix;  // as given, up to the name walked
  std::size_t at = 1;
  for (;;) {
    const std::size_t slash = path.find('/', at);
    if (slash == std::string::npos) return {};  // the last name: checked where it is opened
    const std::string comp = path.substr(at, slash - at);
    at = slash + 1;
    if (comp.empty() || comp == ".") continue;
    // The directory that holds the name walked, where it really is: a
    // name in a writable tree is the command's to replace (a `..` is no
    // name there: it leads where the directory walked before really is).
    char buf[PATH_MAX];
    const std::string holder = ::realpath(prefix.empty() ? "/" : prefix.c_str(), buf)
                                   ? std::string(buf)
                                   : clean_path(prefix.empty() ? "/" : prefix);
    prefix += "/" + comp;
    if (comp == "..") continue;
    for (const std::string& w : p.profile.write) {
      if (w == p.ctx.tmp && p.profile.limits.tmp != 0) continue;  // a private tmpfs inside
      if (path_under(holder, w))
        return Error::msg("sandbox: --events " + events + " goes through " + holder + "/" + comp +
                          " in " + w + ", which the command can write (it could move " +
                          (sock ? "the socket's" : "the file's") + " directory); put it elsewhere");
    }
  }
}

// PATH made absolute against the cwd, not cleaned (each `..` is walked).
std::string absolute_of(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[PATH_MAX];
  return std::string(::getcwd(buf, sizeof buf) ? buf : "") + "/" + path;
}

// An absolute, clean PATH split at its last '/'.
std::pair<std::string, std::string> dir_and_name(std::string path) {
  char buf[PATH_MAX];
  if (path.empty() || path[0] != '/')
    path = std::string(::getcwd(buf, sizeof buf) ? buf : "") + "/" + path;
  path = clean_path(path);
  const std::string name = path.substr(path.rfind('/') + 1);
  const std::string dir = path.substr(0, path.rfind('/'));
  return {dir.empty() ? "/" : dir, name};
}

// --events unix:PATH: connected by path at each event, so checked by path.
Status events_target_outside(const Prepared& p, const std::string& events) {
  if (events.rfind("unix:", 0) != 0 || !events_checked(p)) return {};
  if (Status st = walk_outside_writable(p, absolute_of(events.substr(5)), events, true); !st.ok())
    return st;
  auto [dir, name] = dir_and_name(events.substr(5));
  char buf[PATH_MAX];
  std::string path = dir + "/" + name;
  if (::realpath(dir.c_str(), buf)) path = std::string(buf) + "/" + name;
  return outside_writable(p, clean_path(path), events, true);
}

// An --events FILE is opened once, before the command exists, and every
// event goes to that open file (violations::pin_delivery_fd): never a
// symlink (O_NOFOLLOW), only a regular file (a FIFO would block the
// reporter), and for a sudo caller with the caller's own file-system ids,
// so that root never writes where the caller could not. Its directory is
// opened first, checked where that fd is (outside every writable tree),
// and the file opened in it: what was checked is what is opened.
// DRY (--can-auto-allow): the same checks, nothing opened or made. A file
// with another name (a hard link) is refused: that name could lie in a
// tree the command can write (red team round 17).
Status open_events_file(const Prepared& p, const std::string& events, bool dry = false) {
  if (events.empty() || events.rfind("unix:", 0) == 0) return {};
  auto [dir, name] = dir_and_name(events);
  if (name.empty() || name == "." || name == "..")
    return Error::msg("sandbox: --events " + events + " is not a regular file");
  if (events_checked(p))
    if (Status st = walk_outside_writable(p, absolute_of(events), events, false); !st.ok())
      return st;
  const bool as_caller = p.who.via_sudo && ::geteuid() == 0;
  if (as_caller) {
    ::setfsgid(p.who.gid);
    ::setfsuid(p.who.uid);
  }
  UniqueFd dirfd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  int err = errno;
  int fd = -1;
  std::string real;
  if (dirfd) {
    char link[64], buf[PATH_MAX];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd.get());
    ssize_t n = ::readlink(link, buf, sizeof buf - 1);
    if (n > 0) real = std::string(buf, static_cast<size_t>(n));
    Status inside = events_checked(p)
                        ? outside_writable(p, clean_path(real + "/" + name), events, false)
                        : Status{};
    if (n <= 0 || real[0] != '/') {
      err = n <= 0 ? errno : ENOENT;
    } else if (!inside.ok()) {
      if (as_caller) {
        ::setfsuid(0);
        ::setfsgid(0);
      }
      return inside;
    } else if (dry) {
      struct stat st;
      if (::fstatat(dirfd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        fd = S_ISLNK(st.st_mode) ? -1 : 0;
        err = S_ISLNK(st.st_mode) ? ELOOP : 0;
        if (fd == 0 && (!S_ISREG(st.st_mode) || st.st_nlink > 1)) err = ENXIO, fd = -1;
      } else {
        err = errno;
        fd = err == ENOENT && ::access(real.c_str(), W_OK) == 0 ? 0 : -1;
        if (fd < 0 && err == ENOENT) err = errno;
      }
    } else {
      fd = ::openat(dirfd.get(), name.c_str(),
                    O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
                    0600);
      err = errno;
    }
  }
  if (as_caller) {
    ::setfsuid(0);
    ::setfsgid(0);
  }
  if (fd < 0 && err == ENXIO)  // a FIFO without a reader (O_NONBLOCK)
    return Error::msg("sandbox: --events " + events + " is not a regular file of one name");
  if (fd < 0)
    return Error::sys(
        err, "sandbox: --events " + events + (err == ELOOP ? " is a symlink (refused)" : ": open"));
  if (dry) return {};
  UniqueFd owner(fd);
  struct stat st;
  if (::fstat(fd, &st) < 0) return Error::sys(errno, "sandbox: --events " + events + ": fstat");
  if (!S_ISREG(st.st_mode) || st.st_nlink > 1)
    return Error::msg("sandbox: --events " + events + " is not a regular file of one name");
  return violations::pin_delivery_fd(events, owner.release());
}

std::string self_exe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::string parent_of(const std::string& p) {
  auto k = p.rfind('/');
  return k == 0 || k == std::string::npos ? "/" : p.substr(0, k);
}

// Everything the planner needs from the host. The root skeleton (the empty
// root and the files the plan binds) lives under `skeleton`, on a tmpfs the
// sandbox mounts there in its own mount namespace (sandbox_launch.hpp).
// Follows the links in the protected directory DIR (protect_link_targets):
// what they lead to outside it is protected, the further links of their
// chains pinned. One not followed in full (16 levels, 4096 directories and
// links, or one it cannot read) fails the run closed (red team round 15):
// where it leads could be written.
// A protected file with another name (a hard link) is written through
// that name, which may lie in a tree the command can write (red team round
// 17: `scripts/pre-commit.sh` and `.git/hooks/pre-commit` one file, and the
// host's git ran what the command appended): refused.
Error one_name(const std::string& file, const std::string& protected_as) {
  if (file.find(" -> ") != std::string::npos)  // a link through dir/.. (red team round 18)
    return Error::msg("sandbox: the link " + file + " (protected in " + protected_as +
                      ") leads through a directory's `..`: a directory replaced by a link "
                      "would move what it names; make it plain");
  return Error::msg("sandbox: " + file + " (protected" +
                    (file == protected_as ? std::string() : " in " + protected_as) +
                    ") has more than one name (a hard link): the command could change it "
                    "through another; make it a copy of its own");
}

Status follow_links_in(const std::string& dir, cap::SandboxInputs& in) {
  int budget = 4096;
  bool cut = false;
  std::vector<std::string> targets, linked;
  sandbox_parts::protect_link_targets(dir, 1, budget, targets, in.pin_links, &cut, &linked);
  if (!linked.empty()) return one_name(linked.front(), dir);
  if (cut)
    TRYV(unless_allowed_missing("link-targets",
                                "sandbox: the links in the protected directory " + dir +
                                    " could not all be followed (16 levels, 4096 directories "
                                    "and links, or one it cannot read): where they lead would "
                                    "not be protected",
                                "trim it"));
  for (std::string& t : targets)
    if (!path_under(t, dir)) in.protect.push_back(std::move(t));
  return ok();
}

// The symlinks in the git directories the searches found (red team round
// 16: only the workspace's own were followed). A control file or
// directory that is a link (`config -> ../repo-config`, `hooks ->
// ../githooks`), and every link in `hooks/` and `info/` (`pre-commit ->
// ../../scripts/pre-commit.sh`), lead to what the host's git reads or
// runs: protected, the chains pinned, a directory's own links followed in
// turn (follow_links_in). A `.git` that is
// a symlink has its chain pinned (`sub/.git -> ../gdlink -> ../real.git`:
// `gdlink` could be pointed at another repository), and the gitdir: file
// it may lead to is protected.
Status follow_git_dir_links(const Prepared& p, cap::SandboxInputs& in) {
  for (const std::string& g : p.git_dirs.dirs) {
    for (const char* n : {"config", "config.worktree", "commondir", "HEAD", "hooks", "info"}) {
      const std::string at = g + "/" + n;
      struct stat st;
      if (::lstat(at.c_str(), &st) < 0) continue;
      const bool dir_name = std::strcmp(n, "hooks") == 0 || std::strcmp(n, "info") == 0;
      if (S_ISLNK(st.st_mode)) {
        char text[PATH_MAX];
        const ssize_t tn = ::readlink(at.c_str(), text, sizeof text - 1);
        if (tn > 0 && cap::dotdot_after_name(std::string(text, static_cast<size_t>(tn))))
          return one_name(at + " -> " + std::string(text, static_cast<size_t>(tn)), g);
        PathWalk w = walk_path(at);
        for (std::size_t i = 1; i < w.links.size(); i++) in.pin_links.push_back(w.links[i]);
        in.protect.push_back(w.first_missing.empty() ? w.real : w.first_missing);
        if (dir_name && w.found && S_ISDIR(w.st.st_mode)) TRYV(follow_links_in(w.real, in));
      } else if (dir_name && S_ISDIR(st.st_mode) && g != p.workspace + "/.git") {
        TRYV(follow_links_in(at, in));  // the workspace's own: followed as protect entries
      }
    }
  }
  for (const std::string& l : p.git_dirs.dot_git_links) {
    PathWalk w = walk_path(l);
    for (const std::string& link : w.links) in.pin_links.push_back(link);
    if (w.found && S_ISREG(w.st.st_mode)) in.protect.push_back(w.real);
  }
  return ok();
}

Result<cap::SandboxInputs> plan_inputs(const Globals& g, const Prepared& p,
                                       const std::string& skeleton,
                                       const std::vector<std::string>& args, const Environ& env) {
  cap::SandboxInputs in;
  in.root_dir = skeleton + "/root";
  in.deny_file = skeleton + "/deny";
  in.socket_file = skeleton + "/socket";
  in.empty_dir = skeleton + "/empty";
  in.workspace = p.workspace;
  in.tmp = p.ctx.tmp;
  in.args = args;
  in.env = workload_env(env, p.who);
  in.uid = p.who.uid;
  in.gid = p.who.gid;
  in.host_netns = "/proc/self/ns/net";  // open network: ours (see profile_compile.hpp)
  // The global config file (its directory while it does not exist, so that
  // it cannot be created from inside), and the runtime binary.
  HostPaths facts;
  cap::HostPath gcfg = facts.get(p.paths.global);
  in.protect.push_back(gcfg.kind == cap::HostKind::missing ? parent_of(gcfg.real) : p.paths.global);
  if (std::string exe = self_exe(); !exe.empty()) in.protect.push_back(exe);
  // State roots: other containers' state (exec.fifo, config.json) is none
  // of the workload's business: hidden, not only read-only.
  in.hide.push_back(kDefaultStateRoot);
  if (clean_path(g.root) != kDefaultStateRoot) in.hide.push_back(clean_path(g.root));
  // An ordinary user's runtime dir (its placeholder registry, its seccomp
  // cache) whatever --root says.
  if (rootless() && clean_path(user_dirs().runtime) != clean_path(g.root))
    in.hide.push_back(clean_path(user_dirs().runtime));
  in.top_level = host_top_level();
  in.mount_points = host_mount_points();
  const cap::ResolvedProfile& r = p.profile;
  // Entries with a `*` are expanded here (the planner cannot list a
  // directory), and the matches get facts like any other path.
  for (const std::vector<std::string>* list : {&r.deny, &r.protect}) {
    for (const auto& path : *list) {
      if (path.find('*') != std::string::npos && !in.globbed.count(path))
        in.globbed[path] = host_glob(path);
    }
  }
  std::vector<std::string> matches;
  for (const auto& [pattern, list] : in.globbed)
    matches.insert(matches.end(), list.begin(), list.end());
  auto under = [](const std::string& a, const std::string& b) {
    return a == b || (a.size() > b.size() && a.compare(0, b.size(), b) == 0 && a[b.size()] == '/');
  };
  for (const std::vector<std::string>* list :
       std::initializer_list<const std::vector<std::string>*>{&r.protect, &matches}) {
    for (const std::string& path : *list) {
      struct stat st;
      // in a tree the command can write: the workspace, or a write path
      // outside it (a repository found there has protected directories too)
      const bool writable = std::any_of(r.write.begin(), r.write.end(), [&](const std::string& w) {
        return w != p.ctx.tmp && under(path, w);
      });
      if (path.find('*') != std::string::npos || !(under(path, p.workspace) || writable) ||
          ::lstat(path.c_str(), &st) < 0 || path == p.workspace + "/.git")
        continue;
      if (S_ISREG(st.st_mode) && st.st_nlink > 1) return one_name(path, path);
      if (S_ISDIR(st.st_mode)) TRYV(follow_links_in(path, in));
    }
  }
  TRYV(follow_git_dir_links(p, in));
  // What the links and git's config lead to, in a tree the command can
  // write: one name each. (Outside every writable tree a second name
  // would be in one only by the host's own layout: not looked for; Nix's
  // optimised store links every file.)
  for (const std::string& path : in.protect) {
    struct stat st;
    const bool writable = std::any_of(r.write.begin(), r.write.end(), [&](const std::string& w) {
      return w != p.ctx.tmp && under(path, w);
    });
    if (writable && ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink > 1)
      return one_name(path, path);
  }
  const std::vector<const std::vector<std::string>*> lists = {&r.read,
                                                              &r.write,
                                                              &r.deny,
                                                              &r.protect,
                                                              &r.runtime_sockets,
                                                              &r.runtime_socket_dirs,
                                                              &r.unix_sockets,
                                                              &in.protect,
                                                              &in.hide,
                                                              &r.pin,
                                                              &matches};
  for (const std::vector<std::string>* list : lists) {
    for (const auto& path : *list) {
      if (path.find('*') == std::string::npos && !in.host.count(path))
        in.host[path] = facts.get(path);
    }
  }
  in.host[p.workspace] = facts.get(p.workspace);
  return in;
}

// A bundle left by a sandbox of an earlier version (before the direct
// launch, sandbox_launch.hpp) that was killed (its pid is gone): remove it
// and its container.
void sweep_stale(const Globals& g) {
  DIR* d = ::opendir(g.root.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  const std::string pre = kBundlePrefix;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.compare(0, pre.size(), pre) != 0) continue;
    auto at = n.rfind('@');
    if (at <= pre.size()) continue;
    std::string pid = n.substr(at + 1);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (process_dead(std::atoi(pid.c_str()))) stale.push_back(n);
  }
  ::closedir(d);
  for (const auto& n : stale) {
    std::string id = n.substr(pre.size(), n.rfind('@') - pre.size());
    (void)delete_container(g, id, true);
    (void)remove_tree(join_path(g.root, n));
    log::debug("sandbox: removed the stale bundle " + n);
  }
}

int exit_for(const Error& e) {
  const std::string m = e.what();
  bool exec = m.find("exec: \"") != std::string::npos;
  log::error(m);
  if (exec && (m.find("executable file not found") != std::string::npos ||
               m.find("no such file or directory") != std::string::npos))
    return kExitNotFound;
  if (exec && (m.find("permission denied") != std::string::npos ||
               m.find("is a directory") != std::string::npos))
    return kExitNotExecutable;
  return kExitSandboxFailed;
}

std::string shown_command(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

// --profile off: no sandbox at all, said out loud.
int run_unconfined(const Prepared& p, const std::vector<std::string>& args) {
  log::warn("sandbox: profile " + p.profile.name + " is no sandbox: running \"" +
            shown_command(args) + "\" unconfined");
  if (p.who.via_sudo) {
    if (::initgroups(p.who.name.c_str(), p.who.gid) < 0 && ::setgroups(0, nullptr) < 0)
      return exit_for(Error::sys(errno, "sandbox: setgroups"));
    if (::setgid(p.who.gid) < 0) return exit_for(Error::sys(errno, "sandbox: setgid"));
    if (::setuid(p.who.uid) < 0) return exit_for(Error::sys(errno, "sandbox: setuid"));
    if (!p.who.home.empty()) ::setenv("HOME", p.who.home.c_str(), 1);
  }
  if (::chdir(p.workspace.c_str()) < 0)
    return exit_for(Error::sys(errno, "sandbox: chdir " + p.workspace));
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  int e = errno;
  log::error("sandbox: exec " + args[0] + ": " + std::strerror(e));
  return e == ENOENT ? kExitNotFound : kExitNotExecutable;
}

// The state root: --root, else /run/comet-runtime for root and the user's
// runtime dir (user_dirs.hpp) for an ordinary caller.
// (--root's default is the root's: an ordinary caller gets its own.)
std::string state_root(const Globals& g) {
  const bool defaulted = g.root.empty() || clean_path(g.root) == kDefaultStateRoot;
  if (!defaulted) return g.root;
  return rootless() ? user_dirs().runtime : std::string(kDefaultStateRoot);
}

// The state root exists (the skeleton's mount point); nothing is made in
// it. An ordinary caller's is private to it (ensure_private_dir).
Status make_state_root(const std::string& root) {
  return rootless() ? ensure_private_dir(root) : mkdir_p(root, 0711);
}

// Whether the profile's memory limit is its own (a custom profile's
// `limits.memory`), not a built-in's default: rootless, only the default
// may go unenforced (plan_rootless).
bool memory_explicit(const Prepared& p) {
  auto it = p.config.set.custom.find(p.profile.name);
  return it != p.config.set.custom.end() && it->second.memory && *it->second.memory > 0;
}

}  // namespace

CLI::App* add_sandbox_command(CLI::App& app, SandboxOptions& o) {
  auto* s = app.add_subcommand(
      "sandbox",
      "run a command confined by a sandbox profile against the host's own filesystem "
      "(docs/sandbox.md)");
  s->add_option("--profile", o.profile,
                "workspace (default), devbox, read-only, strict, off, or a custom profile");
  s->add_option("--workspace", o.workspace, "the workspace and cwd (default: the current dir)");
  s->add_flag("--explain", o.explain, "print the resolved policy instead of running");
  s->add_option("--format", o.format, "--explain output: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  s->add_option("--events", o.events,
                "a copy of every violation event to FILE (appended) or unix:PATH");
  s->add_flag("--can-auto-allow", o.can_auto_allow,
              "print a JSON verdict: may an agent harness run CMD without asking?");
  s->footer(
      "usage: comet-runtime sandbox [--profile P] [--workspace DIR] -- CMD ARGS...\n"
      "exit status: CMD's (128+N if killed by signal N); 125 the sandbox could not start,\n"
      "126 CMD is not executable, 127 CMD was not found");
  // Everything from CMD on is CMD's, even words that look like our flags.
  // CMD ARGS: everything after "--" (CLI11 gives it to this positional,
  // even words that look like our flags). Without "--", a word that looks
  // like an option lands in remaining(), and sandbox_main refuses it.
  s->add_option("command", o.args, "CMD ARGS... (after --)");
  s->allow_extras();
  return s;
}

int sandbox_main(const Globals& g, CLI::App& sub, SandboxOptions& o) {
  std::vector<std::string> extra = sub.remaining();
  extra.erase(std::remove(extra.begin(), extra.end(), "--"), extra.end());  // CLI11 keeps it there
  if (!extra.empty()) {
    log::error("sandbox: unexpected " + extra.front() +
               ": put the command after \"--\": comet-runtime sandbox [--profile P] -- CMD "
               "ARGS...");
    return o.can_auto_allow || o.explain ? 1 : kExitSandboxFailed;
  }
  if (o.explain && o.can_auto_allow) {
    log::error("sandbox: --explain and --can-auto-allow exclude each other");
    return 1;
  }
  if (o.explain) return sandbox_explain(g, o);
  if (o.can_auto_allow) return sandbox_can_auto_allow(g, o);
  return sandbox_run(g, o);
}

int sandbox_run(const Globals& gin, const SandboxOptions& o) {
  if (o.args.empty()) {
    log::error(
        "sandbox: a command is required: comet-runtime sandbox [--profile P] -- CMD ARGS...");
    return kExitSandboxFailed;
  }
  Globals g = gin;
  g.root = state_root(gin);
  const Environ env = current_environ();
  auto prep = prepare(o, env);
  if (!prep.ok()) return exit_for(prep.error());
  const Prepared& p = *prep;
  if (!p.profile.sandboxed) return run_unconfined(p, o.args);

  if (Status st = make_state_root(g.root); !st.ok()) return exit_for(st.error());
  sweep_stale(g);
  SandboxLaunch l;
  l.id = "sandbox-" + random_hex(6);
  l.skeleton_dir = g.root;
  l.workspace = p.workspace;
  // The placeholders' registry is the host's for root, whatever --root
  // says (sandbox_placeholders.hpp); an ordinary user's is its own.
  l.rootless = rootless();
  l.memory_explicit = memory_explicit(p);
  if (l.rootless) l.placeholder_root = user_dirs().runtime;
  // Planned under the workspace's placeholder lock (sandbox_launch.hpp): a
  // name another sandbox's placeholder holds is then one it shares.
  l.plan = [&g, &p, &o, &env](SandboxLaunch& out) -> Status {
    TRY(cap::SandboxInputs in, plan_inputs(g, p, out.skeleton_dir, o.args, env));
    TRY(cap::SandboxPlan plan, cap::compile_profile(p.profile, in));
    out.spec = std::move(plan.spec);
    out.rootfs = in.root_dir;
    out.files = {{in.deny_file, 0000}, {in.socket_file, 0666}, {in.empty_dir, S_IFDIR | 0555}};
    out.symlinks = std::move(plan.symlinks);
    out.placeholders = std::move(plan.placeholders);
    out.placeholders_shared = plan.placeholders_shared;
    out.refused_names = plan.refused_names;
    out.owner_uid = p.who.uid;
    out.owner_gid = p.who.gid;
    out.fs_view.writable = p.profile.write;
    out.fs_view.writable.push_back(in.tmp);  // the private /tmp (devbox: the host's, in write)
    // What is protected as planned: not a protect_unless_dir entry that is a
    // directory ({workspace}/.git: its entries are protected one by one).
    for (const auto& pr : p.profile.protect) {
      const bool dir_kept =
          std::find(p.profile.protect_unless_dir.begin(), p.profile.protect_unless_dir.end(), pr) !=
              p.profile.protect_unless_dir.end() &&
          in.host.count(pr) && in.host.at(pr).kind == cap::HostKind::dir;
      // The bare-repository names while .git exists: not protected.
      const auto cond = p.profile.protect_if_missing.find(pr);
      const bool unused = cond != p.profile.protect_if_missing.end() &&
                          in.host.count(cond->second) &&
                          in.host.at(cond->second).kind != cap::HostKind::missing;
      if (!dir_kept && !unused) out.fs_view.protect.push_back(pr);
    }
    out.fs_view.protect.insert(out.fs_view.protect.end(), in.protect.begin(), in.protect.end());
    // the missing ones where they really are (the init judges real names)
    for (const auto& r : plan.refused_names)
      if (std::find(out.fs_view.protect.begin(), out.fs_view.protect.end(), r) ==
          out.fs_view.protect.end())
        out.fs_view.protect.push_back(r);
    // git rewrites a file through PATH.lock, renamed over it: a command that
    // opened the host's lock file for writing (or linked it) while it was
    // there wrote what then became .git/config (red team round 13). The
    // init refuses PATH.lock like PATH, and the events name it. Never a
    // placeholder: the host's git must still be able to make it. HEAD.lock
    // too, but the init lets the command make it new (sandbox_launch.cpp):
    // its own `git commit` takes it to log HEAD's move and removes it;
    // writing into the host git's during a checkout set HEAD (round 14).
    for (std::size_t i = 0, n = out.fs_view.protect.size(); i < n; i++)
      out.fs_view.protect.push_back(out.fs_view.protect[i] + ".lock");
    out.fs_view.deny = p.profile.deny;
    out.fs_view.deny.insert(out.fs_view.deny.end(), in.hide.begin(), in.hide.end());
    out.fs_view.cwd = p.workspace;
    return ok();
  };
  l.events = o.events;
  if (!l.events.empty() && l.events.rfind("unix:", 0) != 0 && l.events[0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd)) l.events = join_path(cwd, l.events);
  }
  if (Status st = events_target_outside(p, l.events); !st.ok()) return exit_for(st.error());
  if (Status st = open_events_file(p, l.events); !st.ok()) return exit_for(st.error());
  // Dies with its parent (red team round 12: a SIGKILLed harness left the
  // runtime and the command running): the init already dies with the
  // runtime, and the guardian (a child, which PDEATHSIG does not follow)
  // cleans up after it. Checked against the parent's death in between.
  const pid_t parent = ::getppid();
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && parent != 1 && ::getppid() != parent)
    return exit_for(Error::msg("sandbox: the caller exited before the sandbox started"));
  log::debug("sandbox " + l.id + ": profile " + p.profile.name + ", workspace " + p.workspace);
  auto rc = launch_sandbox(l);
  if (!rc.ok()) return exit_for(rc.error());
  return *rc;
}

namespace {

nlohmann::ordered_json mounts_json(const oci::Spec& s) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& m : s.mounts) {
    nlohmann::ordered_json j;
    j["destination"] = m.destination;
    j["type"] = m.type;
    j["source"] = m.source;
    j["options"] = m.options;
    arr.push_back(j);
  }
  return arr;
}

std::string describe_mount(const oci::Mount& m, const cap::SandboxInputs& in) {
  auto has = [&](const char* o) {
    return std::find(m.options.begin(), m.options.end(), o) != m.options.end();
  };
  if (m.type == "tmpfs") {
    if (m.destination == "/dev" || m.destination == "/dev/shm" || m.destination == in.tmp)
      return "tmpfs (private)";
    return has("mode=000") ? "hidden: empty tmpfs, mode 000 (EACCES)"
                           : "hidden: empty tmpfs (what was there: ENOENT)";
  }
  if (m.type == "overlay")
    return "read-only, an overlay of its own (what hides under it holds when the host renames)";
  if (m.type != "bind") return m.type;
  if (m.source == in.deny_file) return "hidden: empty mode-0000 file (EACCES)";
  if (m.source == in.socket_file) return "hidden: empty regular file (connect: ECONNREFUSED)";
  if (has("rro")) return "read-only";
  if (has("rw")) return "writable";
  return "pinned (cannot be renamed)";
}

std::string join_list(const std::vector<std::string>& v) {
  if (v.empty()) return "(none)";
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

}  // namespace

int sandbox_explain(const Globals& gin, const SandboxOptions& o) {
  Globals g = gin;
  g.root = state_root(gin);
  const Environ env = current_environ();
  auto prep = prepare(o, env);
  if (!prep.ok()) {
    log::error(prep.error().what());
    return 1;
  }
  const Prepared& p = *prep;
  const cap::ResolvedProfile& r = p.profile;
  const cap::CustomProfile* custom = nullptr;
  if (auto it = p.config.set.custom.find(r.name); it != p.config.set.custom.end())
    custom = &it->second;
  std::string origin = custom ? "custom, extends " + custom->extends + ", defined at " +
                                    custom->file + ":" + std::to_string(custom->loc.line) + ":" +
                                    std::to_string(custom->loc.column)
                              : "built-in";
  std::string network = !r.sandboxed           ? "open (no sandbox)"
                        : r.network_restricted ? "restricted: a new network namespace, only lo"
                                               : "open: the host's network namespace";
  std::optional<cap::SandboxPlan> plan;
  cap::SandboxInputs in;
  if (r.sandboxed) {
    auto planned =
        plan_inputs(g, p, g.root, o.args.empty() ? std::vector<std::string>{"CMD"} : o.args, env);
    if (!planned.ok()) {
      log::error(planned.error().what());
      return 1;
    }
    in = std::move(*planned);
    auto pl = cap::compile_profile(r, in);
    if (!pl.ok()) {
      log::error(pl.error().what());
      return 1;
    }
    plan = std::move(*pl);
  }
  std::string policy =
      plan ? plan->spec.annotations.at("org.soyaos.comet.policy") : std::string("(none)");
  if (o.format == "json") {
    nlohmann::ordered_json j;
    j["profile"] = r.name;
    j["base"] = r.base;
    j["origin"] = origin;
    j["sandboxed"] = r.sandboxed;
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (const auto& f : p.config.files)
      files.push_back({{"path", f.path}, {"role", f.role}, {"loaded", f.loaded}});
    j["config_files"] = files;
    j["workspace"] = p.workspace;
    j["user"] = {
        {"uid", p.who.uid}, {"gid", p.who.gid}, {"name", p.who.name}, {"via_sudo", p.who.via_sudo}};
    j["network"] = r.sandboxed ? (r.network_restricted ? "restricted" : "open") : "open";
    j["read"] = r.read;
    j["write"] = r.write;
    j["deny"] = r.deny;
    j["protect"] = r.protect;
    j["pin"] = r.pin;
    j["protect_if_missing"] = r.protect_if_missing;
    j["block_runtime_sockets"] = r.block_runtime_sockets;
    j["runtime_sockets"] = r.runtime_sockets;
    j["runtime_socket_dirs"] = r.runtime_socket_dirs;
    j["unix_socket_rule"] = r.unix_socket_rule;
    j["unix_sockets"] = r.unix_sockets;
    j["limits"] = {{"pids", r.limits.pids}, {"memory", r.limits.memory}, {"tmp", r.limits.tmp}};
    if (rootless())
      j["limits_rootless"] = {{"pids", "RLIMIT_NPROC"},
                              {"memory", memory_explicit(p) ? "refused" : "not enforced"}};
    if (plan) {
      j["policy"] = nlohmann::ordered_json::parse(policy);
      j["root"] = "a per-run empty read-only directory holding the host's top-level binds";
      j["mounts"] = mounts_json(plan->spec);
      nlohmann::ordered_json ph = nlohmann::ordered_json::array();
      for (const auto& d : plan->placeholders)
        ph.push_back({{"path", d.path}, {"kind", d.dir ? "dir" : "file"}});
      j["create_before_run"] = ph;
      j["refused_if_made"] = plan->refused_names;
      j["notes"] = plan->notes;
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::ostringstream out;
  out << "profile    " << r.name << " (" << origin << ")\n";
  for (size_t i = 0; i < p.config.files.size(); i++) {
    const auto& f = p.config.files[i];
    out << (i == 0 ? "config     " : "           ") << f.path << " (" << f.role
        << "): " << (f.loaded ? "loaded" : "absent") << "\n";
  }
  out << "workspace  " << p.workspace << " (the cwd)\n";
  out << "user       uid " << p.who.uid << " gid " << p.who.gid
      << (p.who.name.empty() ? "" : " (" + p.who.name + ")") << (p.who.via_sudo ? ", via sudo" : "")
      << ", no capabilities, no_new_privs\n";
  out << "network    " << network << "\n";
  if (!r.sandboxed) {
    out << "sandbox    none: the command runs unconfined (and the runtime says so on stderr)\n";
    std::cout << out.str();
    return 0;
  }
  out << "read       " << join_list(r.read) << "\n";
  out << "write      " << join_list(r.write) << "\n";
  out << "deny       " << join_list(r.deny) << "\n";
  out << "protect    " << join_list(r.protect) << "\n";
  out << "sockets    "
      << (r.block_runtime_sockets
              ? "container-runtime sockets hidden: " + join_list(r.runtime_sockets)
              : std::string("not hidden (devbox)"))
      << "\n";
  out << "unix       "
      << (r.unix_socket_rule
              ? "connect() only to sockets in writable places, and to: " +
                    (r.unix_sockets.empty() ? std::string("(none)") : join_list(r.unix_sockets))
              : std::string("any socket (devbox)"))
      << "\n";
  out << "limits     pids " << r.limits.pids << ", memory " << r.limits.memory
      << " bytes (no swap), /tmp "
      << (r.limits.tmp ? std::to_string(r.limits.tmp) + " bytes" : std::string("the host's"))
      << "\n";
  if (rootless() && (r.limits.pids || r.limits.memory))
    out << "           rootless, no cgroup: pids as RLIMIT_NPROC in the user namespace; memory "
        << (memory_explicit(p) ? "cannot be enforced: the run is refused"
                               : "not enforced (the default; a profile's own limit is refused)")
        << "\n";
  out << "policy     org.soyaos.comet.policy=" << policy << "\n";
  out << "mounts     (a per-run empty read-only root, then, in order)\n";
  for (const auto& m : plan->spec.mounts) {
    out << "  " << m.destination;
    for (size_t k = m.destination.size(); k < 28; k++) out << ' ';
    out << " " << describe_mount(m, in) << "\n";
  }
  for (const auto& d : plan->placeholders)
    out << "create     " << d.path << (d.dir ? "/" : "")
        << " (empty, so it cannot be created inside)\n";
  for (const auto& n : plan->refused_names)
    out << "refuse     " << n << " (missing: making it, or a symlink or file on the way to it, "
        << "is refused)\n";
  for (const auto& n : plan->notes) out << "note       " << n << "\n";
  std::cout << out.str();
  return 0;
}

namespace {

// Can this sandbox start now, for this caller? The cheap part of a run:
// the view is planned (a protect path that cannot be protected fails
// here), the state root (the skeleton's mount point) can be made, the
// limits' cgroups can be written, and a child can make the namespaces the
// plan asks for (fork + unshare: about a millisecond).
Status sandbox_can_start(const Globals& g, const Prepared& p, const std::vector<std::string>& args,
                         const Environ& env) {
  if (!p.profile.sandboxed) return ok();
  TRYV(make_state_root(g.root));
  struct stat rs;
  if (::stat(g.root.c_str(), &rs) < 0) return Error::sys(errno, "the state root " + g.root);
  if (!S_ISDIR(rs.st_mode)) return Error::msg("the state root " + g.root + ": not a directory");
  if (::access(g.root.c_str(), W_OK) < 0) return Error::sys(errno, "the state root " + g.root);
  TRY(cap::SandboxInputs in, plan_inputs(g, p, g.root, args, env));
  TRY(cap::SandboxPlan plan, cap::compile_profile(p.profile, in));
  // Each missing protected name needs its placeholder: the nearest existing
  // directory must take a new entry (writable, not immutable or append-only).
  for (const auto& ph : plan.placeholders) {
    std::string dir = parent_of(ph.path);
    while (dir != "/" && !path_exists(dir)) dir = parent_of(dir);
    if (::access(dir.c_str(), W_OK) < 0)
      return Error::sys(errno, "create the placeholder " + ph.path + " in " + dir);
    UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    int flags = 0;
    if (d && ::ioctl(d.get(), FS_IOC_GETFLAGS, &flags) == 0 &&
        (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL)))
      return Error::sys(EPERM, "create the placeholder " + ph.path + " in " + dir +
                                   " (immutable or append-only)");
  }
  int flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
  if (p.profile.network_restricted) flags |= CLONE_NEWNET;
  const auto& res = plan.spec.linux_ ? plan.spec.linux_->resources : std::nullopt;
  const bool limits = res && ((res->pids && res->pids->limit > 0) ||
                              (res->memory && res->memory->limit && *res->memory->limit > 0));
  // Rootless: the user namespace first, as the run makes it (the others
  // are then owned by it).
  if (rootless()) flags |= CLONE_NEWUSER;
  pid_t pid = ::fork();
  if (pid < 0) return Error::sys(errno, "fork");
  if (pid == 0) {
    if (::unshare(flags) < 0) ::_exit(errno & 0xff);
    ::_exit(0);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    const int err = WIFEXITED(st) ? WEXITSTATUS(st) : EPERM;
    if (rootless()) return Error(err, userns_refusal(err));
    return Error::sys(err, "create the sandbox's namespaces as uid " + std::to_string(::geteuid()));
  }
  if (rootless()) {
    // No cgroup: a memory limit of the profile's own cannot be enforced
    // (the run refuses it), a default one goes unenforced (plan_rootless).
    if (limits && memory_explicit(p) && res->memory && res->memory->limit)
      return Error::msg("the profile's memory limit needs a cgroup this user cannot write");
    return ok();
  }
  if (limits) {
    for (const char* c :
         {"/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified"}) {
      struct stat sb;
      if (::stat(c, &sb) == 0 && ::access(c, W_OK) < 0)
        return Error::sys(errno, std::string("the limits' cgroups under ") + c);
    }
  }
  return ok();
}

}  // namespace

int sandbox_can_auto_allow(const Globals& gin, const SandboxOptions& o) {
  Globals g = gin;
  g.root = state_root(gin);
  const Environ env = current_environ();
  cap::Verdict v;
  v.command = o.args;
  v.profile = o.profile;
  auto fail = [&](const Error& e) {
    log::error(e.what());
    v.reason = "cannot decide: " + e.what() + "; ask";
    std::cout << cap::verdict_to_json(v) << "\n";
    return 1;
  };
  if (o.args.empty()) return fail(Error::msg("sandbox --can-auto-allow: a command is required"));
  auto prep = prepare(o, env);
  if (!prep.ok()) return fail(prep.error());
  auto floor = cap::make_floor(prep->config.set);
  if (!floor.ok()) return fail(floor.error());
  v = cap::can_auto_allow(o.args, prep->profile, *floor, {prep->workspace, prep->who.home});
  // Fail closed: a verdict is only as good as the sandbox that would run
  // the command. One that cannot start here confines nothing.
  if (v.confined) {
    // --events as the run checks it (red team round 17: a target in the
    // workspace, or in a missing directory, made every run exit 125)
    std::string events = o.events;
    if (!events.empty() && events.rfind("unix:", 0) != 0 && events[0] != '/') {
      char cwd[PATH_MAX];
      if (::getcwd(cwd, sizeof cwd)) events = join_path(cwd, events);
    }
    Status st = events_target_outside(*prep, events);
    if (st.ok()) st = open_events_file(*prep, events, /*dry=*/true);
    if (st.ok()) st = sandbox_can_start(g, *prep, o.args, env);
    if (!st.ok()) {
      v.confined = false;
      v.auto_allow = false;
      v.matched_rule.clear();
      v.reason = "the sandbox cannot start here: " + st.error().what() + "; ask";
    }
  }
  std::cout << cap::verdict_to_json(v) << "\n";
  return v.auto_allow ? 0 : 1;
}

}  // namespace comet::runtime
