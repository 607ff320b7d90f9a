// `exec`: run a new process in a running container. It joins every
// namespace of the init (setns on a pidfd), the container's cgroups, and
// gets the container's seccomp filter, capabilities and no_new_privs (or
// what --process / the flags ask, never the runtime's own).
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "comet/base/sys.hpp"
#include "comet/capability/compile.hpp"
#include "comet/capability/policy.hpp"
#include "comet/host/cgroups.hpp"
#include "comet/host/log.hpp"
#include "comet/host/state_store.hpp"
#include "comet/lifecycle/confine.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/lifecycle/plan.hpp"
#include "comet/lifecycle/sync.hpp"
#include "comet/lifecycle/trampoline.hpp"
#include "comet/oci/spec.hpp"
#include "comet/reporting/reporter.hpp"
#include "comet/seccomp/seccomp.hpp"

namespace comet::runtime {
namespace {

struct NsFile {
  const char* name;
  int flag;
};
constexpr NsFile kNsFiles[] = {{"user", CLONE_NEWUSER},     {"mnt", CLONE_NEWNS},
                               {"pid", CLONE_NEWPID},       {"net", CLONE_NEWNET},
                               {"ipc", CLONE_NEWIPC},       {"uts", CLONE_NEWUTS},
                               {"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME}};

// The namespaces where the init differs from us: those are the ones to join.
int differing_namespaces(int pid) {
  int flags = 0;
  for (auto& n : kNsFiles) {
    struct stat a, b;
    std::string theirs = "/proc/" + std::to_string(pid) + "/ns/" + n.name;
    std::string ours = std::string("/proc/self/ns/") + n.name;
    if (::stat(theirs.c_str(), &a) < 0 || ::stat(ours.c_str(), &b) < 0) continue;
    if (a.st_ino != b.st_ino || a.st_dev != b.st_dev) flags |= n.flag;
  }
  return flags;
}

Result<oci::Process> read_process(const std::string& path) {
  TRY(std::string text, path == "-" ? read_file("/dev/stdin") : read_file(path));
  // Reuse the config parser: a process is a config's "process" member.
  std::string doc = "{\"ociVersion\":\"1.0.0\",\"process\":" + text + "}";
  auto spec = oci::parse_spec(doc);
  if (!spec.ok()) return Error::msg("--process " + path + ": " + spec.error().message());
  if (!spec->process) return Error::msg("--process " + path + ": no process");
  return std::move(*spec->process);
}

Result<uint32_t> parse_id(const std::string& s, const char* what) {
  char* end = nullptr;
  errno = 0;
  unsigned long v = s.empty() ? 0 : std::strtoul(s.c_str(), &end, 10);
  if (s.empty() || errno || *end || v > 0xfffffffeUL)
    return Error::msg(std::string("parsing ") + s + " as int for " + what + " failed");
  return static_cast<uint32_t>(v);
}

}  // namespace

Result<int> exec_container(const Globals& g, const ExecOptions& o) {
  TRY(LockedContainer opened, open_locked(g.root, o.id));
  ContainerDir& dir = opened.dir;
  UniqueFd& lock = opened.lock;
  ContainerRecord& rec = opened.rec;
  oci::ContainerStatus st = opened.status;
  if (st == oci::ContainerStatus::kStopped) return Error::msg("cannot exec in a stopped container");
  if (st == oci::ContainerStatus::kPaused) return Error::msg("cannot exec in a paused state");
  TRY(std::string config_text, read_file(dir.file("config.json")));
  TRY(oci::Spec spec, oci::parse_spec(config_text));

  // The process: --process wins; else the container's own, overridden by flags.
  oci::Process proc = spec.process ? *spec.process : oci::Process{};
  if (!o.process_file.empty()) {
    TRY(proc, read_process(o.process_file));
  } else {
    if (o.args.empty()) return Error::msg("exec: a command is required (or --process)");
    proc.args = o.args;
    proc.terminal = o.tty;
    for (auto& e : o.env) {
      if (e.find('=') == std::string::npos || e[0] == '=')
        return Error::msg("exec --env \"" + e +
                          "\": invalid environment variable (want KEY=VALUE)");
      proc.env.push_back(e);
    }
    if (!o.cwd.empty()) proc.cwd = o.cwd;
    if (!o.user.empty()) {
      auto parts = split(o.user, ':');
      if (parts.size() > 2) return Error::msg("exec --user \"" + o.user + "\": expected UID[:GID]");
      TRY(proc.user.uid, parse_id(parts[0], "uid"));
      if (parts.size() > 1) {
        TRY(proc.user.gid, parse_id(parts[1], "gid"));
      }
      proc.user.additional_gids.clear();
    }
    for (auto gid : o.additional_gids) proc.user.additional_gids.push_back(gid);
    if (!o.caps.empty()) {
      if (!proc.capabilities) proc.capabilities = oci::Capabilities{};
      for (auto& c : o.caps) {
        proc.capabilities->bounding.push_back(c);
        proc.capabilities->effective.push_back(c);
        proc.capabilities->permitted.push_back(c);
      }
    }
    if (o.no_new_privs) proc.no_new_privileges = true;
  }
  if (proc.cwd.empty()) proc.cwd = "/";
  // Never looser than the container: no_new_privs stays on if the init has it.
  if (spec.process && spec.process->no_new_privileges) proc.no_new_privileges = true;
  if (proc.terminal && o.console_socket.empty())
    return Error::msg("cannot allocate tty if runc will detach without setting console socket");
  if (!proc.terminal && !o.console_socket.empty())
    return Error::msg("cannot use console socket if runc will not detach or allocate tty");

  oci::Spec pspec = spec;
  pspec.process = proc;
  pspec.mounts.clear();
  if (pspec.hooks) pspec.hooks.reset();
  // The container's confinement holds for every process exec'd into it.
  TRY(std::optional<capability::Policy> policy,
      capability::policy_from_annotations(spec.annotations));
  if (policy) TRYV(capability::tighten(pspec, *policy));
  if (policy && policy->git_own)
    return Error::msg(
        "annotation org.soyaos.comet.policy: git: only `comet-runtime sandbox` "
        "enforces the git rule (its init makes the calls)");
  PlanInputs pin{o.id, rec.bundle, rec.rootfs, false, true, o.preserve_fds};
  TRY(ChildContext ctx, plan_child(pspec, pin));
  const oci::Linux empty_linux;
  const oci::Linux& lx = spec.linux_ ? *spec.linux_ : empty_linux;
  TRYV(compile_config_seccomp(
      lx, ctx, "exec: a seccomp notify listener cannot be attached to an exec'd process"));
  // Capabilities enforced (an engine's annotation) with no exec list of a
  // policy's: only the config's own command may be executed (docs/policy.md).
  // With both annotations the stricter holds (docs/policy.md): a policy
  // list may narrow the lock to the command, never widen it past it.
  if (policy && spec.process &&
      spec.annotations.count(std::string(capability::kAnnotationCapabilities))) {
    TRY(std::string cmd, command_in_rootfs(*spec.process, rec.rootfs));
    if (policy->exec && !exec_list_names(*policy->exec, cmd, rec.rootfs))
      return Error::msg("annotation org.soyaos.comet.policy: exec " + quote_list(*policy->exec) +
                        " does not name the config's command " + cmd +
                        " (with the capabilities annotation only the command may be executed)");
    policy->exec = std::vector<std::string>{cmd};
  }
  if (policy) TRYV(plan_confinement(*policy, rec.rootfs, lx, ctx));
  // As the pack's own processes (create.cpp): no symlinks (docs/events.md).
  if (policy && ctx.landlock_abi >= 1 && spec.annotations.count("org.soyaos.comet.capabilities")) {
    ctx.landlock_no_symlinks = true;
    ctx.layers.push_back("landlock:no-symlinks");
  }

  PidFd init;
  if (int e = PidFd::open(rec.pid, &init))
    return Error::sys(e, "container init " + std::to_string(rec.pid));
  if (rec.start_time && process_start_time(rec.pid) != rec.start_time)
    return Error::msg("cannot exec in a stopped container");
  UniqueFd pidfd_high;
  ctx.exec_pidfd = init.fd();
  if (ctx.exec_pidfd < 3 + o.preserve_fds) {
    pidfd_high.reset(::fcntl(init.fd(), F_DUPFD_CLOEXEC, 3 + o.preserve_fds));
    if (!pidfd_high) return Error::sys(errno, "dup pidfd");
    ctx.exec_pidfd = pidfd_high.get();
  }
  ctx.exec_ns_flags = differing_namespaces(rec.pid);
  ctx.lock_fd = lock.get();
  UniqueFd console;
  if (!o.console_socket.empty()) {
    TRY(console, connect_unix(o.console_socket, "console socket"));
    ctx.console_sock_fd = console.get();
  }
  TRY(UniqueFd tramp, sealed_trampoline());
  int sp[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
    return Error::sys(errno, "socketpair");
  UniqueFd sync_parent(sp[0]), sync_child(sp[1]);
  ctx.sync_fd = sync_child.get();
  // Preserved fds are the caller's 3..3+N-1; ours must not sit among them.
  for (UniqueFd* f : {&sync_parent, &sync_child, &console, &tramp}) {
    if (f->valid() && f->get() < 3 + o.preserve_fds) {
      int n = ::fcntl(f->get(), F_DUPFD_CLOEXEC, 3 + o.preserve_fds);
      if (n < 0) return Error::sys(errno, "dup");
      f->reset(n);
    }
  }
  ctx.sync_fd = sync_child.get();
  ctx.console_sock_fd = console.get();
  ctx.trampoline_fd = tramp.get();
  // An exec'd process under a reporting lock-down gets its own reporter
  // (reporter.hpp), writing to the container's events file; it exits when
  // this process and its descendants are gone.
  ReporterHandle reporter;
  if (ctx.has_lockdown && ctx.lockdown.needs_listener) {
    ReporterRequest rr;
    rr.container = o.id;
    if (auto a = spec.annotations.find("org.soyaos.comet.pack"); a != spec.annotations.end())
      rr.pack = a->second;
    rr.state_dir = dir.path();
    if (auto t = read_file(dir.file("events.deliver")); t.ok()) rr.deliver = *t;
    rr.lockdown = lockdown_options(*policy, false);
    rr.unix_allow = policy->unix_allow;
    rr.exec_allow = ctx.exec_allow;
    if (struct stat ts; ::fstat(tramp.get(), &ts) == 0) {
      rr.trampoline_dev = ts.st_dev;
      rr.trampoline_ino = ts.st_ino;
    }
    TRY(reporter, start_reporter(rr, 3 + o.preserve_fds));
    ctx.lockdown_listener_sock = reporter.child_sock.get();
  }

  if (!o.detach) ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  // Into the container's cgroup2 directory at birth; v1 dirs by write.
  UniqueFd v2dir;
  std::vector<std::string> v1dirs;
  for (auto& d : rec.cgroup_dirs) {
    if (is_cgroup2_dir(d))
      v2dir.reset(::open(d.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    else
      v1dirs.push_back(d);
  }
  struct clone_args ca = {};
  ca.flags = v2dir.valid() ? CLONE_INTO_CGROUP : 0;
  ca.exit_signal = SIGCHLD;
  ca.cgroup = static_cast<uint64_t>(v2dir.valid() ? v2dir.get() : 0);
  pid_t stage1 = static_cast<pid_t>(::syscall(SYS_clone3, &ca, sizeof ca));
  if (stage1 < 0) return Error::sys(errno, "clone3");
  if (stage1 == 0) {
    sync_parent.reset();
    exec_child_main(ctx);
  }
  sync_child.reset();
  console.reset();
  ChildGuard guard(stage1);
  for (auto& d : v1dirs) {
    Status js = write_file(d + "/cgroup.procs", std::to_string(stage1));
    if (!js.ok()) return std::move(js).error().wrap("join cgroup " + d);
  }
  if (int r = send_msg(sync_parent.get(), MsgType::kGo))
    return Error::sys(r, "sync with exec child");
  TRY(Msg m, expect_msg(sync_parent.get(), MsgType::kInitPid));
  int pid = m.value;
  guard.wait();
  // EOF: execve succeeded (the socket was CLOEXEC). A message: it failed.
  Msg fail;
  int r = recv_msg(sync_parent.get(), &fail);
  if (r == 0 && fail.type == MsgType::kError) {
    ::waitpid(pid, nullptr, __WALL);
    return Error(fail.err, fail.text);
  }
  if (!o.pid_file.empty())
    TRYV(write_file_atomic(o.pid_file, std::to_string(pid), 0644, Sync::none));
  lock.reset();
  if (o.detach) return 0;

  sigset_t fwd, old;
  sigemptyset(&fwd);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCHLD})
    sigaddset(&fwd, s);
  ::sigprocmask(SIG_BLOCK, &fwd, &old);
  UniqueFd sfd(::signalfd(-1, &fwd, SFD_CLOEXEC));
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG | __WALL);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    struct signalfd_siginfo si;
    if (::read(sfd.get(), &si, sizeof si) != sizeof si) continue;
    if (si.ssi_signo != SIGCHLD) ::kill(pid, static_cast<int>(si.ssi_signo));
  }
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace comet::runtime
