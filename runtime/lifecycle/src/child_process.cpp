// The container process's own set-up and exec (child_internal.hpp): its
// identity and capabilities, the read-deny verification, sysctls, the
// confinement layers and seccomp (loaded last), a pack's own init, and the
// exec through the sealed trampoline. Runs after clone(2): single-threaded,
// noexcept; errors die() to the parent.
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "child_internal.hpp"
#include "comet/base/fault.hpp"
#include "comet/base/fd.hpp"
#include "comet/base/sanitizer.hpp"
#include "comet/base/sys.hpp"
#include "comet/lifecycle/confine.hpp"
#include "comet/lifecycle/trampoline.hpp"
#include "comet/reporting/fswatch.hpp"

namespace comet::runtime::child {
namespace {

struct linux_dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[256];  // NUL-terminated within d_reclen
};

std::vector<std::string> g_env;  // process.env plus HOME when missing

// The user's home from the container's /etc/passwd, "/" when unknown.
std::string home_of(uint32_t uid) {
  auto text = read_file("/etc/passwd");
  if (!text.ok()) return "/";
  for (auto& line : split(*text, '\n')) {
    auto f = split(line, ':');
    if (f.size() >= 6 && f[2] == std::to_string(uid)) return f[5].empty() ? "/" : f[5];
  }
  return "/";
}

}  // namespace

// Read-deny verification (confine.hpp): from inside, with the final mounts,
// before anything of the workload runs. A denied path must be missing, empty
// or refuse to open; a read-only path must be on a read-only mount. Else the
// create fails naming the path: the plan and the kernel disagree.
void verify_confinement() {
  const ChildContext& c = *g_ctx;
  for (const auto& p : c.confine.verify_readonly) {
    struct statvfs sv;
    if (::statvfs(p.c_str(), &sv) < 0) {
      if (errno == ENOENT) continue;
      die(errno, "read-deny verification: statvfs %s", p.c_str());
    }
    if (!(sv.f_flag & ST_RDONLY))
      die(EPERM, "read-deny verification: %s is writable, but the policy makes it read-only",
          p.c_str());
  }
  for (const auto& p : c.confine.verify_unreadable) {
    UniqueFd owner(::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!owner) continue;  // missing or refused: what the policy wants
    const int fd = owner.get();
    struct stat st;
    bool readable = false;
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      char buf[1024];
      long n;
      while (!readable && (n = ::syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n;) {
          auto* d = reinterpret_cast<struct linux_dirent64*>(buf + off);
          if (std::strcmp(d->d_name, ".") != 0 && std::strcmp(d->d_name, "..") != 0)
            readable = true;
          off += d->d_reclen;
        }
      }
    } else {
      char b;
      readable = ::read(fd, &b, 1) == 1;
    }
    owner.reset();
    if (readable)
      die(EPERM, "read-deny verification: %s is readable, but the policy denies it", p.c_str());
  }
}

void write_sysctls() {
  const ChildContext& c = *g_ctx;
  for (auto& [key, value] : c.proc.sysctl) {
    std::string rel = "sys/" + key;
    if (key.find('/') == std::string::npos)
      for (auto& ch : rel)
        if (ch == '.') ch = '/';
    // Through the host's verified procfs, no symlinks, no mount crossings:
    // the kernel picks the namespace from the writer, which is us.
    UniqueFd fd(openat2_in_root(
        c.fds.proc_fd, rel, O_WRONLY,
        RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV | RESOLVE_BENEATH));
    if (!fd) die(errno, "sysctl %s: open /proc/%s", key.c_str(), rel.c_str());
    if (::write(fd.get(), value.data(), value.size()) < 0)
      die(errno, "sysctl %s=%s", key.c_str(), value.c_str());
  }
}

namespace {

// The last step: execveat the sealed trampoline, which execs EXE. Nothing in
// the container ever execs the runtime's own binary (CVE-2019-5736). A
// seccomp profile that refuses execveat fails here, closed.
[[noreturn]] void exec_final(const std::string& exe, std::vector<char*>& argv,
                             std::vector<char*>& envp) {
  int e = exec_via_trampoline(g_ctx->fds.trampoline_fd, exe.c_str(), argv.data(), envp.data());
  die(e, "exec %s through the sealed trampoline (the seccomp profile must allow execveat)",
      exe.c_str());
}

std::string lower_strerror(int e) {
  std::string s = std::strerror(e);
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

std::string find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    struct stat st;
    if (::stat(name.c_str(), &st) < 0)
      die(0, "exec: \"%s\": %s", name.c_str(), lower_strerror(errno).c_str());
    if (S_ISDIR(st.st_mode)) die(0, "exec: \"%s\": is a directory", name.c_str());
    if (::access(name.c_str(), X_OK) < 0)
      die(0, "exec: \"%s\": %s", name.c_str(), lower_strerror(errno).c_str());
    return name;
  }
  std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (auto& e : g_env)
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  for (auto& dir : split(path, ':')) {
    std::string cand = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st;
    if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(cand.c_str(), X_OK) == 0)
      return cand;
  }
  die(0, "exec: \"%s\": executable file not found in $PATH", name.c_str());
}

int capset_raw(uint64_t eff, uint64_t prm, uint64_t inh) {
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2] = {};
  d[0].effective = static_cast<uint32_t>(eff);
  d[1].effective = static_cast<uint32_t>(eff >> 32);
  d[0].permitted = static_cast<uint32_t>(prm);
  d[1].permitted = static_cast<uint32_t>(prm >> 32);
  d[0].inheritable = static_cast<uint32_t>(inh);
  d[1].inheritable = static_cast<uint32_t>(inh >> 32);
  return static_cast<int>(::syscall(SYS_capset, &hdr, d));
}

int last_cap() {
  static int v = -1;
  if (v < 0) {
    UniqueFd fd(::open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC));
    char buf[16] = {};
    if (fd && ::read(fd.get(), buf, sizeof buf - 1) > 0) v = std::atoi(buf);
    if (v <= 0) v = 40;
  }
  return v;
}

// Identity and capabilities. Returns whether CAP_SYS_ADMIN was kept in the
// effective set only so that seccomp can be loaded without no_new_privs.
bool set_identity(bool keep_sys_admin) {
  const ChildContext& c = *g_ctx;
  int lc = last_cap();
  if (c.proc.has_caps) {
    for (int cap = 0; cap <= lc; cap++) {
      if (!(c.proc.caps.bounding & (1ULL << cap)) && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
          errno != EINVAL)
        die(errno, "drop capability %d from the bounding set", cap);
    }
  }
  if (::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0) die(errno, "prctl(PR_SET_KEEPCAPS)");
  if (::setgroups(c.proc.additional_gids.size(), c.proc.additional_gids.data()) < 0 &&
      !(errno == EPERM && c.ns.userns && c.proc.additional_gids.empty()))
    die(errno, "setgroups");
  if (::setresgid(c.proc.gid, c.proc.gid, c.proc.gid) < 0) die(errno, "setresgid %u", c.proc.gid);
  if (::setresuid(c.proc.uid, c.proc.uid, c.proc.uid) < 0) die(errno, "setresuid %u", c.proc.uid);
  if (::prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0) die(errno, "prctl(PR_SET_KEEPCAPS, 0)");
  uint64_t eff, prm, inh;
  if (c.proc.has_caps) {
    eff = c.proc.caps.effective;
    prm = c.proc.caps.permitted;
    inh = c.proc.caps.inheritable;
  } else {
    // No capabilities block: keep what we hold (as runc), never inheritable.
    eff = prm = (lc >= 63 ? ~0ULL : ((1ULL << (lc + 1)) - 1));
    if (c.proc.uid != 0) eff = prm = 0;
    inh = 0;
  }
  constexpr uint64_t kSysAdmin = 1ULL << CAP_SYS_ADMIN;
  bool kept = keep_sys_admin && !(eff & kSysAdmin);
  if (capset_raw(eff | (kept ? kSysAdmin : 0), prm | (kept ? kSysAdmin : 0), inh) < 0)
    die(errno, "capset");
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    die(errno, "clear ambient capabilities");
  for (int cap = 0; cap <= lc; cap++) {
    // The kernel allows an ambient cap only if it is permitted and
    // inheritable; runc skips the others, and so do we.
    if ((c.proc.caps.ambient & (1ULL << cap)) && (prm & inh & (1ULL << cap)) &&
        ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0)
      die(errno, "raise ambient capability %d", cap);
  }
  return kept;
}

// The lock-down listener (and the root for fs events) to the reporter, as
// fd numbers: it takes them with pidfd_getfd, knowing this process by the
// SCM_CREDENTIALS the kernel adds (its end has SO_PASSCRED), and answers
// one byte once it has them. Not SCM_RIGHTS: sendmsg may be a call the
// lock-down just loaded notifies (the unix-socket rule, unix_rule.hpp), and
// no one could answer it before the reporter has the listener. send() is
// sendto with no address, which never notifies. Dies on error.
void hand_over_fds(int sock, int fd, int fd2) {
  char data[32];
  const int n = std::snprintf(data, sizeof data, "%d %d", fd, fd2);
  if (::send(sock, data, static_cast<size_t>(n), MSG_NOSIGNAL) < 0)
    die(errno, "send the lock-down listener fd");
  char ack = 0;
  ssize_t got;
  do {
    got = ::recv(sock, &ack, 1, 0);
  } while (got < 0 && errno == EINTR);
  if (got != 1 || ack != 'a')
    die(got < 0 ? errno : EPIPE, "the reporter took no lock-down listener");
  ::close(fd);
  if (fd2 >= 0) ::close(fd2);
  ::close(sock);
}

// hand_over_fds, and for a rootless sandbox (ns.self_map_uid) dumpable
// for the hand-over only: the reporter is the caller's own process, in the
// parent user namespace, and pidfd_getfd needs a dumpable target there
// (this process was made before its user namespace, so CAP_SYS_PTRACE
// over it would be the initial namespace's). As runc's nsexec does for
// the id maps. Nothing else runs in the sandbox yet (the init waits on
// this vfork child), and the caller's own processes could trace the
// runtime anyway.
void hand_over_fds_to_parent(int sock, int fd, int fd2) {
  const bool rootless = g_ctx->ns.self_map_uid >= 0;
  if (rootless && ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0) die(errno, "prctl(PR_SET_DUMPABLE)");
  hand_over_fds(sock, fd, fd2);
  if (rootless) ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

void send_listener_fd(int listener) {
  const ChildContext& c = *g_ctx;
  // runtime-spec: the state with "fds":["seccompFd"], the fd as SCM_RIGHTS.
  std::string payload = g_state;
  if (!payload.empty() && payload.back() == '}')
    payload.insert(payload.size() - 1, ",\"fds\":[\"seccompFd\"],\"metadata\":\"\"");
  std::string what = "the seccomp listener fd to " + c.confine.seccomp.listener_path;
  send_fd(c.fds.seccomp_listener_sock, listener, payload, what.c_str());
}

}  // namespace

void load_seccomp() {
  const ChildContext& c = *g_ctx;
  int listener = -1;
  int r = fault_fail("seccomp-load-einval", EINVAL) ? EINVAL
                                                    : seccomp::load(c.confine.seccomp, &listener);
  if (r) die(r, "load seccomp filter");
  if (c.confine.seccomp.needs_listener) send_listener_fd(listener);
}

namespace {

// The confinement layers (confine.hpp), just before the base filter: Landlock
// (its syscalls are still allowed), then the lock-down filter, which is
// default-allow and only takes away (so the base filter can still be loaded
// after it, and wins ties as the most recent). Fail closed: any error is fatal.
void apply_confinement() {
  const ChildContext& c = *g_ctx;
  const char* failed = nullptr;
  if (int r = apply_landlock(c, &failed))
    die(r, "landlock exec lock%s%s", failed ? ": " : "", failed ? failed : "");
  if (c.confine.has_lockdown) {
    int listener = -1;
    if (int r = seccomp::load(c.confine.lockdown, &listener))
      die(r, "load the lock-down seccomp filter");
    // A reporting lock-down (rules that notify): its listener goes to the
    // runtime's reporter, with the container state, as an OCI seccomp agent
    // would get it; then it is closed here, so the agent never holds it.
    // With fs events it also gets the container's root (O_PATH), to see
    // where a failed path led in the agent's own mount tree.
    if (c.confine.lockdown.needs_listener) {
      int root = -1;
      if (c.init.fs_arm_marker) {
        root = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0) die(errno, "open / for the reporter");
        (void)::access(kFsArmMarker, F_OK);  // fswatch.hpp
      }
      hand_over_fds_to_parent(c.fds.lockdown_listener_sock, listener, root);
    }
  }
}

// The last steps of a container process: confinement, filters, exec. In the
// init itself, in the agent it starts (own_init), and in an `exec`'d process.
struct AgentTail {
  const std::string& exe;
  bool early_seccomp, kept_admin;
  pid_t init;  // own_init: the init that must be the agent's parent
};

// process.apparmorProfile / selinuxLabel: the label the kernel gives the
// process at its execve (runc: "exec PROFILE" to the AppArmor attribute).
// Through the host's procfs when we have it, else the container's /proc.
void set_exec_labels() {
  const ProcessAttrs& a = g_ctx->proc.attrs;
  if (a.apparmor_exec.empty() && a.selinux_exec.empty()) return;
  UniqueFd own;
  int proc = g_ctx->fds.proc_fd;
  if (proc < 0) {
    own.reset(::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC));
    proc = own.get();
  }
  if (!a.apparmor_exec.empty())
    if (int e = write_exec_attr(proc, "apparmor", a.apparmor_exec))
      die(e, "apply the AppArmor profile (%s)", a.apparmor_exec.c_str());
  if (!a.selinux_exec.empty())
    if (int e = write_exec_attr(proc, nullptr, a.selinux_exec))
      die(e, "apply the SELinux label %s", a.selinux_exec.c_str());
}

[[noreturn]] void agent_tail(const AgentTail& t) noexcept {
  const ChildContext& ctx = *g_ctx;
  const std::string& exe = t.exe;
  const bool early_seccomp = t.early_seccomp, kept_admin = t.kept_admin;
  // Nothing of ours crosses execve: every fd above the preserved ones closes.
  for (int fd = 3; fd < 3 + ctx.proc.preserve_fds; fd++) {
    int fl = ::fcntl(fd, F_GETFD);
    if (fl >= 0) ::fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC);
  }
  if (::syscall(SYS_close_range, 3 + ctx.proc.preserve_fds, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
    die(errno, "close_range");
  set_exec_labels();
  apply_confinement();
  if (ctx.confine.has_seccomp && !early_seccomp) load_seccomp();
  if (kept_admin) {
    // Drop the CAP_SYS_ADMIN kept only to load the filter; fail closed.
    if (capset_raw(ctx.proc.caps.effective, ctx.proc.caps.permitted, ctx.proc.caps.inheritable) < 0)
      die(errno, "capset after seccomp");
  }
  std::vector<char*> argv, envp;
  std::vector<std::string> args = ctx.proc.args, env = g_env;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  exec_final(exe, argv, envp);
}

// The agent under its init: the init's death (delete, the engine) takes it
// too, also where the pid namespace is shared and that kills no one.
int agent_entry(void* arg) noexcept {
  const AgentTail& t = *static_cast<const AgentTail*>(arg);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (::getppid() != t.init) ::_exit(1);
  ::close(g_ctx->fds.events_fd);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  agent_tail(t);
}

// A pack's own PID 1 (ChildContext::own_init). The agent is started the way
// posix_spawn does it: clone(CLONE_VM | CLONE_VFORK) on a stack of its own,
// so it shares this process's memory until its exec (no page table to copy,
// no copy-on-write fault on its way to the agent: ~1 ms on a VM where a
// fault costs 11-14 us), while this process waits. It then goes on as the
// init: it execs the trampoline as "comet-init" (trampoline.c), which
// reaps, forwards signals and exits with the agent's status or 3. The
// agent is started before its filters are loaded (the exec lock refuses
// fork); the init never gets them, so it runs nothing but the trampoline's
// few syscalls, not dumpable, from the sealed memfd. Every signal is
// blocked from here: the init takes them from a signalfd, the agent gets
// an empty mask. Sanitizer builds fork instead (ASan cannot follow a
// CLONE_VM child on a stack it did not make).
[[noreturn]] void start_agent_under_init(AgentTail& t) noexcept {
  const ChildContext& c = *g_ctx;
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  ::signal(SIGCHLD, SIG_DFL);  // ignored (inherited), the agent would be reaped unseen
  t.init = ::getpid();
  // The git rule: the init makes the agent's naming calls (create_rule.hpp)
  // under the same Landlock rules, in a domain the agent's nests in (so
  // that it may open the agent's /proc/PID/fd/N for it).
  if (c.fds.create_sock >= 0) {
    const char* failed = nullptr;
    if (int r = apply_landlock(c, &failed))
      die(r, "landlock for the init%s%s", failed ? ": " : "", failed ? failed : "");
  }
#if defined(COMET_ASAN)
  const pid_t agent = ::fork();
  if (agent == 0) {
    (void)agent_entry(&t);
    ::_exit(127);
  }
#else
  constexpr size_t kStack = 1 << 20;  // untouched pages cost nothing
  void* stack = ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) die(errno, "map a stack for the agent");
  const pid_t agent = ::clone(agent_entry, static_cast<char*>(stack) + kStack,
                              CLONE_VM | CLONE_VFORK | SIGCHLD, &t);
#endif
  if (agent < 0) die(errno, "start the agent under the container's init");
  // The capability kept only to load the agent's filter is not the init's.
  if (t.kept_admin)
    (void)capset_raw(c.proc.caps.effective, c.proc.caps.permitted, c.proc.caps.inheritable);
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // Nothing of the runtime's crosses the exec but the events file, and of
  // the container's only stderr (the init says there why it exits 3 when
  // the reporter does not answer).
  ::syscall(SYS_close_range, 0, ~0U, CLOSE_RANGE_CLOEXEC);
  if (int fl = ::fcntl(2, F_GETFD); fl >= 0) ::fcntl(2, F_SETFD, fl & ~FD_CLOEXEC);
  int ev = c.fds.events_fd >= 0 ? ::fcntl(c.fds.events_fd, F_DUPFD, 3) : -1;
  // The reporter's socket, for the fs events barrier (trampoline.c).
  int rep = c.init.init_reporter_barrier && c.fds.lockdown_listener_sock >= 0
                ? ::fcntl(c.fds.lockdown_listener_sock, F_DUPFD, 3)
                : -1;
  char agent_s[16], ev_s[16], rep_s[16], create_s[16];
  std::snprintf(agent_s, sizeof agent_s, "%d", agent);
  std::snprintf(ev_s, sizeof ev_s, "%d", ev);
  std::snprintf(rep_s, sizeof rep_s, "%d", rep);
  char init_argv0[] = "comet-init", dns[] = "dns", none[] = "-";
  std::vector<char*> argv = {init_argv0, agent_s, ev_s, c.init.init_dns_barrier ? dns : none,
                             rep >= 0 ? rep_s : none};
  // The git rule: CREATE_FD, the sandbox's own tmpfs mounts (st_dev, where
  // a ".git" dies with it) and the workspace's git dirs (trampoline.c).
  std::string devs;
  std::vector<std::string> own = c.init.git_own;
  std::vector<std::string> prot = c.init.protect;
  char plus[] = "+";
  if (c.fds.create_sock >= 0) {
    int cs = ::fcntl(c.fds.create_sock, F_DUPFD, 3);
    if (cs < 0) die(errno, "keep the git rule's socket");
    std::snprintf(create_s, sizeof create_s, "%d", cs);
    for (const MountOp& m : c.fs.mounts) {
      struct stat st;
      if (m.type == "tmpfs" && ::stat(m.dest.c_str(), &st) == 0)
        devs += (devs.empty() ? "" : ",") + std::to_string(static_cast<unsigned long>(st.st_dev));
    }
    if (devs.empty()) devs = "0";
    argv.push_back(create_s);
    argv.push_back(devs.data());
    for (auto& o : own) argv.push_back(o.data());
    if (!prot.empty()) {
      argv.push_back(plus);
      for (auto& o : prot) argv.push_back(o.data());
    }
  }
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  ::syscall(SYS_execveat, c.fds.trampoline_fd, "", argv.data(), envp, AT_EMPTY_PATH);
  // No init: the agent must not run unsupervised (its exit status would be lost).
  ::kill(agent, SIGKILL);
  ::_exit(127);
}

// The cwd (inside the root: CVE-2024-21626), the environment (HOME when
// missing), the executable, the umask, the identity and no_new_privs.
// Returns the executable and whether CAP_SYS_ADMIN was kept only to load
// the filter (set_identity()).
Prologue process_prologue(const char* cwd_origin) {
  const ChildContext& ctx = *g_ctx;
  if (::chdir(ctx.proc.cwd.c_str()) < 0)
    die(errno, "chdir to cwd (\"%s\")%s", ctx.proc.cwd.c_str(), cwd_origin);
  char cwdbuf[4096];
  if (!::getcwd(cwdbuf, sizeof cwdbuf) || cwdbuf[0] != '/')
    die(ENOENT, "cwd \"%s\" is outside the container", ctx.proc.cwd.c_str());
  g_env = ctx.proc.env;
  if (std::none_of(g_env.begin(), g_env.end(), [](auto& e) { return e.rfind("HOME=", 0) == 0; }))
    g_env.push_back("HOME=" + home_of(ctx.proc.uid));
  std::string exe = find_executable(ctx.proc.args.empty() ? std::string() : ctx.proc.args[0]);
  ::umask(ctx.proc.umask >= 0 ? static_cast<mode_t>(ctx.proc.umask) : 022);
  const bool nnp = ctx.proc.no_new_privileges;
  const bool kept_admin = set_identity(ctx.confine.has_seccomp && !nnp);
  if (nnp && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die(errno, "prctl(PR_SET_NO_NEW_PRIVS)");
  return {std::move(exe), kept_admin};
}

}  // namespace

Prologue become_process(int slave, const char* cwd_origin) {
  if (::setsid() < 0) die(errno, "setsid");
  if (slave >= 0) {
    if (::ioctl(slave, TIOCSCTTY, 0) < 0) die(errno, "set the controlling terminal");
    for (int fd = 0; fd < 3; fd++)
      if (::dup2(slave, fd) < 0) die(errno, "dup2 the pty");
    ::close(slave);
  }
  return process_prologue(cwd_origin);
}

[[noreturn]] void exec_process(const Prologue& p, bool early_seccomp) noexcept {
  AgentTail t{p.exe, early_seccomp, p.kept_admin, 0};
  if (g_ctx->init.own_init) start_agent_under_init(t);  // never returns: this process is the init
  agent_tail(t);
}

}  // namespace comet::runtime::child
