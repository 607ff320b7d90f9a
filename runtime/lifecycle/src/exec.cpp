// `exec`: run a new process in a running container. It joins every
// namespace of the init (setns on a pidfd), the container's cgroups, and
// gets the container's seccomp filter, capabilities and no_new_privs (or
// what --process / the flags ask, never the runtime's own).
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <optional>

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
#include "lifecycle_internal.hpp"

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

// Everything one exec holds between its phases. Members are destroyed in
// reverse order, as the locals of one function were: the stage-1 guard
// first, the container's lock last.
struct Execution {
  const ExecOptions& o;
  LockedContainer opened;
  oci::Spec spec;  // the container's config
  std::optional<capability::Policy> policy;
  ChildContext ctx;
  PidFd init;
  UniqueFd pidfd_high, console, tramp, sync_parent, sync_child;
  ReporterHandle reporter;
  UniqueFd v2dir;
  std::vector<std::string> v1dirs;
  ChildGuard stage1;
  int pid = 0;  // the exec'd process

  Execution(const ExecOptions& o_, LockedContainer l) : o(o_), opened(std::move(l)) {}
  const ContainerRecord& rec() const { return opened.rec; }
  int min_fd() const { return 3 + o.preserve_fds; }
};

// The container, which must be running, and its config.
Status load_container(Execution& x) {
  oci::ContainerStatus st = x.opened.status;
  if (st == oci::ContainerStatus::kStopped) return Error::msg("cannot exec in a stopped container");
  if (st == oci::ContainerStatus::kPaused) return Error::msg("cannot exec in a paused state");
  TRY(std::string config_text, read_file(x.opened.dir.file("config.json")));
  TRY(x.spec, oci::parse_spec(config_text));
  return {};
}

// The flags over the container's own process.
Status apply_flags(const ExecOptions& o, oci::Process& proc) {
  if (o.args.empty()) return Error::msg("exec: a command is required (or --process)");
  proc.args = o.args;
  proc.terminal = o.tty;
  for (auto& e : o.env) {
    if (e.find('=') == std::string::npos || e[0] == '=')
      return Error::msg("exec --env \"" + e + "\": invalid environment variable (want KEY=VALUE)");
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
  return {};
}

// The process: --process wins; else the container's own, overridden by flags.
Result<oci::Process> exec_process(const Execution& x) {
  const ExecOptions& o = x.o;
  const oci::Spec& spec = x.spec;
  oci::Process proc = spec.process ? *spec.process : oci::Process{};
  if (!o.process_file.empty()) {
    TRY(proc, read_process(o.process_file));
  } else {
    TRYV(apply_flags(o, proc));
  }
  if (proc.cwd.empty()) proc.cwd = "/";
  // Never looser than the container: no_new_privs stays on if the init has it.
  if (spec.process && spec.process->no_new_privileges) proc.no_new_privileges = true;
  if (proc.terminal && o.console_socket.empty())
    return Error::msg("cannot allocate tty if runc will detach without setting console socket");
  if (!proc.terminal && !o.console_socket.empty())
    return Error::msg("cannot use console socket if runc will not detach or allocate tty");
  return proc;
}

// The ChildContext of the process, under the container's confinement.
Status plan(Execution& x, oci::Process proc) {
  const oci::Spec& spec = x.spec;
  const std::string& rootfs = x.rec().rootfs;
  oci::Spec pspec = spec;
  pspec.process = std::move(proc);
  pspec.mounts.clear();
  if (pspec.hooks) pspec.hooks.reset();
  // The container's confinement holds for every process exec'd into it.
  TRY(x.policy, capability::policy_from_annotations(spec.annotations));
  if (x.policy) TRYV(capability::tighten(pspec, *x.policy));
  if (x.policy && x.policy->git_own)
    return Error::msg(
        "annotation org.soyaos.comet.policy: git: only `comet-runtime sandbox` "
        "enforces the git rule (its init makes the calls)");
  PlanInputs pin{x.o.id,           x.rec().bundle,          rootfs, false, true,
                 x.o.preserve_fds, detect_host_facilities()};
  TRY(x.ctx, plan_child(pspec, pin));
  ChildContext& ctx = x.ctx;
  for (const std::string& n : ctx.proc.attrs.notes) log::debug(n);
  const oci::Linux empty_linux;
  const oci::Linux& lx = spec.linux_ ? *spec.linux_ : empty_linux;
  TRYV(compile_config_seccomp(
      lx, ctx, "exec: a seccomp notify listener cannot be attached to an exec'd process"));
  if (x.policy) TRYV(lock_exec_to_command(*x.policy, spec, rootfs));
  if (x.policy) TRYV(plan_confinement(*x.policy, rootfs, lx, ctx));
  // As the pack's own processes (create.cpp): no symlinks (docs/events.md).
  if (x.policy && ctx.confine.landlock_abi >= 1 &&
      spec.annotations.count("org.soyaos.comet.capabilities")) {
    ctx.confine.landlock_no_symlinks = true;
    ctx.confine.layers.push_back("landlock:no-symlinks");
  }
  return {};
}

// The init's pidfd (the namespaces to join), the console socket, the
// trampoline and the sync pair, all above the preserved fds.
Status open_child_fds(Execution& x) {
  ChildContext& ctx = x.ctx;
  const int pid = x.rec().pid;
  if (int e = PidFd::open(pid, &x.init))
    return Error::sys(e, "container init " + std::to_string(pid));
  if (x.rec().start_time && process_start_time(pid) != x.rec().start_time)
    return Error::msg("cannot exec in a stopped container");
  ctx.fds.exec_pidfd = x.init.fd();
  if (ctx.fds.exec_pidfd < x.min_fd()) {
    x.pidfd_high.reset(::fcntl(x.init.fd(), F_DUPFD_CLOEXEC, x.min_fd()));
    if (!x.pidfd_high) return Error::sys(errno, "dup pidfd");
    ctx.fds.exec_pidfd = x.pidfd_high.get();
  }
  ctx.ns.exec_ns_flags = differing_namespaces(pid);
  // The same mount namespace as ours (an inherited one): no setns sets the
  // root, the child chroots into the init's.
  if (!(ctx.ns.exec_ns_flags & CLONE_NEWNS))
    ctx.fs.exec_root = "/proc/" + std::to_string(pid) + "/root";
  ctx.fds.lock_fd = x.opened.lock.get();
  if (!x.o.console_socket.empty()) {
    TRY(x.console, console_above(x.o.console_socket, x.min_fd()));
  }
  TRY(x.tramp, trampoline_above(x.min_fd()));
  TRY(SyncPair sp, sync_pair(x.min_fd()));
  x.sync_parent = std::move(sp.parent);
  x.sync_child = std::move(sp.child);
  ctx.fds.sync_fd = x.sync_child.get();
  ctx.fds.console_sock_fd = x.console.get();
  ctx.fds.trampoline_fd = x.tramp.get();
  return {};
}

// An exec'd process under a reporting lock-down gets its own reporter
// (reporter.hpp), writing to the container's events file; it exits when
// this process and its descendants are gone.
Status start_exec_reporter(Execution& x) {
  ChildContext& ctx = x.ctx;
  if (!(ctx.confine.has_lockdown && ctx.confine.lockdown.needs_listener)) return {};
  const ContainerDir& dir = x.opened.dir;
  ReporterRequest rr = lockdown_reporter_request(x.o.id, x.spec.annotations, dir.path(), *x.policy,
                                                 ctx, x.tramp.get());
  if (auto t = read_file(dir.file("events.deliver")); t.ok()) rr.deliver = *t;
  TRY(x.reporter, start_reporter(rr, x.min_fd()));
  ctx.fds.lockdown_listener_sock = x.reporter.child_sock.get();
  return {};
}

// Into the container's cgroup2 directory at birth; v1 dirs by write.
Status clone_child(Execution& x) {
  if (!x.o.detach) ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  for (auto& d : x.rec().cgroup_dirs) {
    if (is_cgroup2_dir(d))
      x.v2dir.reset(::open(d.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    else
      x.v1dirs.push_back(d);
  }
  TRY(long pid1, clone_into(0, x.v2dir.valid() ? x.v2dir.get() : -1));
  const auto stage1 = static_cast<pid_t>(pid1);
  if (stage1 == 0) {
    x.sync_parent.reset();
    exec_child_main(x.ctx);
  }
  x.sync_child.reset();
  x.console.reset();
  x.stage1 = ChildGuard(stage1);
  return {};
}

// The v1 cgroups, kGo, the pid of the process stage 1 forked, and its
// execve: EOF when it succeeded (the socket was CLOEXEC), a kError if not.
Status sync_with_child(Execution& x) {
  const int sfd = x.sync_parent.get();
  for (auto& d : x.v1dirs) {
    Status js = write_file(d + "/cgroup.procs", std::to_string(x.stage1.pid()));
    if (!js.ok()) return std::move(js).error().wrap("join cgroup " + d);
  }
  if (int r = send_msg(sfd, MsgType::kGo)) return Error::sys(r, "sync with exec child");
  TRY(Msg m, expect_msg(sfd, MsgType::kInitPid));
  x.pid = m.value;
  x.stage1.wait();
  Msg fail;
  int r = recv_msg(sfd, &fail);
  if (r == 0 && fail.type == MsgType::kError) {
    ::waitpid(x.pid, nullptr, __WALL);
    return Error(fail.err, fail.text);
  }
  return {};
}

}  // namespace

Result<int> exec_container(const Globals& g, const ExecOptions& o) {
  TRY(LockedContainer opened, open_locked(g.root, o.id));
  Execution x(o, std::move(opened));
  TRYV(load_container(x));
  TRY(oci::Process proc, exec_process(x));
  TRYV(plan(x, std::move(proc)));
  TRYV(open_child_fds(x));
  TRYV(start_exec_reporter(x));
  TRYV(clone_child(x));
  TRYV(sync_with_child(x));
  if (!o.pid_file.empty())
    TRYV(write_file_atomic(o.pid_file, std::to_string(x.pid), 0644, Sync::none));
  x.opened.lock.reset();
  if (o.detach) return 0;
  // Signals that arrive go to the process; its exit status (128+signal
  // when killed), as runc returns it.
  SignalForwarding signals;
  return exit_code(signals.wait(x.pid));
}

}  // namespace comet::runtime
