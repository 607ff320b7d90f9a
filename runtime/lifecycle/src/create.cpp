// `create` and `run`: the parent side of the sync protocol in sync.hpp.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "comet/base/fault.hpp"
#include "comet/base/switches.hpp"
#include "comet/base/sys.hpp"
#include "comet/capability/compile.hpp"
#include "comet/capability/policy.hpp"
#include "comet/egress/egress.hpp"
#include "comet/host/cgroups.hpp"
#include "comet/host/log.hpp"
#include "comet/host/state_store.hpp"
#include "comet/lifecycle/confine.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/lifecycle/helper_confine.hpp"
#include "comet/lifecycle/hooks.hpp"
#include "comet/lifecycle/plan.hpp"
#include "comet/lifecycle/sync.hpp"
#include "comet/lifecycle/trampoline.hpp"
#include "comet/oci/spec.hpp"
#include "comet/reporting/fswatch.hpp"
#include "comet/reporting/reporter.hpp"
#include "comet/reporting/violations.hpp"
#include "comet/seccomp/seccomp.hpp"

namespace comet::runtime {
namespace {

constexpr long kProcSuperMagic = 0x9fa0;

// What a pack may touch, for its fs events: the declared entries, the
// rootfs's own top-level entries and the config's mount points.
FsView fs_view_of(const capability::Capabilities& caps, const std::string& rootfs,
                  const oci::Spec& spec) {
  FsView v;
  v.fs = caps.fs;
  if (spec.process && !spec.process->cwd.empty()) v.cwd = spec.process->cwd;
  if (DIR* d = ::opendir(rootfs.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") v.image_top.push_back(n);
    }
    ::closedir(d);
  }
  for (const auto& m : spec.mounts) {
    std::string dst = m.destination;
    std::size_t b = dst.find_first_not_of('/');
    if (b == std::string::npos) continue;
    std::size_t e = dst.find('/', b);
    v.image_top.push_back(dst.substr(b, e == std::string::npos ? std::string::npos : e - b));
  }
  return v;
}

// Our own fds must sit above the caller's preserved ones, or they would
// leak into the container as "preserved".
Result<UniqueFd> high(UniqueFd fd, int min_fd, const std::string& what) {
  if (!fd.valid() || fd.get() >= min_fd) return fd;
  int n = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, min_fd);
  if (n < 0) return Error::sys(errno, "dup " + what);
  return UniqueFd(n);
}

Status write_id_map(int procfd, int pid, const char* file, const std::vector<oci::IdMapping>& m) {
  std::string text;
  for (auto& e : m)
    text += std::to_string(e.container_id) + " " + std::to_string(e.host_id) + " " +
            std::to_string(e.size) + "\n";
  std::string rel = std::to_string(pid) + "/" + file;
  int fd = ::openat(procfd, rel.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Error::sys(errno, "open /proc/" + rel);
  UniqueFd owner(fd);
  if (::write(fd, text.data(), text.size()) < 0) return Error::sys(errno, "write /proc/" + rel);
  return ok();
}

std::string hook_state(const std::string& id, int pid, const std::string& bundle,
                       const std::map<std::string, std::string>& ann, oci::ContainerStatus status) {
  oci::State st;
  st.oci_version = oci_version();
  st.id = id;
  st.status = status;
  st.pid = pid;
  st.bundle = bundle;
  st.annotations = ann;
  return oci::to_json(st, -1);
}

// Undoes a failed create: the child, the cgroups, the state dir.
struct CreateCleanup {
  ContainerDir* dir = nullptr;
  std::vector<std::string> cgroup_dirs;
  ChildGuard stage1;
  PidFd init;
  egress::Handles* egress = nullptr;  // the resolver, the network helper, our nft table
  std::uint64_t fs_cgroup = 0;        // fs events: the cgroup filed with the program
  bool armed = true;
  ~CreateCleanup() {
    if (!armed) return;
    if (egress) (void)egress::teardown(*egress);
    if (init.valid()) {
      init.send_signal(SIGKILL);
      init.wait_exit(2000);
    }
    stage1.kill_and_reap();
    // The init (a grandchild on the slow path) may be our child: reap it.
    while (::waitpid(-1, nullptr, WNOHANG | __WALL) > 0) {
    }
    if (!cgroup_dirs.empty()) (void)destroy_cgroups(cgroup_dirs);
    if (fs_cgroup) fswatch_unwatch(fs_cgroup);  // and the detacher, if it was the last
    if (dir) (void)dir->remove();
  }
};

// The child died or closed the socket while we were sending: it may have
// queued its reason first. Also name the likely cause of a silent death.
Error child_failure(int sfd, const Error& fallback, const oci::Linux& lx) {
  Msg m;
  if (recv_msg(sfd, &m, MSG_DONTWAIT) == 0 && m.type == MsgType::kError)
    return Error(m.err, m.text);
  bool silent =
      fallback.err() == EPIPE || fallback.message().rfind("container init exited", 0) == 0;
  if (silent && lx.resources && lx.resources->memory && lx.resources->memory->limit)
    return Error::msg(fallback.message() + " (linux.resources.memory.limit " +
                      std::to_string(*lx.resources->memory->limit) +
                      " may be too low: the init was killed)");
  return fallback;
}

// clone3(2) fork-style (no new stack), optionally straight into a cgroup2
// directory.
Result<long> clone_into(int ns_flags, int cgroup_fd) {
  struct clone_args args = {};
  args.flags = static_cast<uint64_t>(static_cast<unsigned>(ns_flags)) |
               (cgroup_fd >= 0 ? CLONE_INTO_CGROUP : 0);
  args.exit_signal = SIGCHLD;
  if (cgroup_fd >= 0) args.cgroup = static_cast<uint64_t>(cgroup_fd);
  long pid = fault_fail("clone3-eagain", EAGAIN) ? -1 : ::syscall(SYS_clone3, &args, sizeof args);
  if (pid < 0) return Error::sys(errno, "clone3");
  return pid;
}

Result<std::string> resolve_dir(const std::string& p, const std::string& what) {
  char buf[PATH_MAX];
  if (!::realpath(p.c_str(), buf)) return Error::sys(errno, what + " " + p);
  struct stat st;
  if (::stat(buf, &st) < 0 || !S_ISDIR(st.st_mode)) return Error::sys(ENOTDIR, what + " " + p);
  return std::string(buf);
}

// Where the container's events go besides its state dir: the --events
// target (violations::delivery()), else the events annotation; "" for none.
std::string events_target(const std::map<std::string, std::string>& annotations) {
  std::string t = violations::delivery();
  if (auto a = annotations.find(violations::kEventsAnnotation); t.empty() && a != annotations.end())
    t = a->second;
  return t;
}

}  // namespace

namespace {

// The host's namespace of that kind, by identity (device and inode) against
// the runtime's own and PID 1's (where PID 1's can be seen), as
// egress::refuse_host_netns does for the network namespace.
Status refuse_host_namespace(int fd, int clone_flag, const std::string& what) {
  const char* name = clone_flag == CLONE_NEWPID      ? "pid"
                     : clone_flag == CLONE_NEWNS     ? "mnt"
                     : clone_flag == CLONE_NEWIPC    ? "ipc"
                     : clone_flag == CLONE_NEWUTS    ? "uts"
                     : clone_flag == CLONE_NEWCGROUP ? "cgroup"
                                                     : nullptr;
  if (!name) return {};
  struct stat ns;
  if (::fstat(fd, &ns) < 0) return Error::sys(errno, std::string("stat namespace ") + what);
  for (const std::string& host :
       {std::string("/proc/self/ns/") + name, std::string("/proc/1/ns/") + name}) {
    struct stat h;
    if (::stat(host.c_str(), &h) < 0) {
      if (host.rfind("/proc/1/", 0) == 0 && (errno == EACCES || errno == EPERM || errno == ENOENT))
        continue;
      return Error::sys(errno, "stat " + host);
    }
    if (h.st_dev == ns.st_dev && h.st_ino == ns.st_ino)
      return Error::msg(std::string(name) + " namespace " + what +
                        " is the host's (the runtime's own or PID 1's): a confined container "
                        "may not join it");
  }
  return {};
}

}  // namespace

Result<int> create_container(const Globals& g, const CreateOptions& o, bool keep_child) {
  TRYV(validate_id(o.id));
  if (g.systemd_cgroup)
    return Error::msg(
        "systemd cgroup driver requested (--systemd-cgroup), but systemd is not "
        "running on this host; use the cgroupfs driver");
  TRY(std::string bundle, resolve_dir(o.bundle, "bundle"));
  TRY(std::string config_text, read_file(bundle + "/config.json"));
  TRY(oci::Spec spec, oci::parse_spec(config_text));
  TRYV(oci::validate_spec(spec));
  // org.soyaos.comet.policy / .capabilities: tighten the config (never
  // loosen it) before anything is planned from it.
  TRY(std::optional<capability::Policy> policy,
      capability::policy_from_annotations(spec.annotations));
  if (policy) TRYV(capability::tighten(spec, *policy));
  if (policy && policy->git_own)
    return Error::msg(
        "annotation org.soyaos.comet.policy: git: only `comet-runtime sandbox` "
        "enforces the git rule (its init makes the calls)");
  // A pack version with recorded violations: one warning line (violations.hpp).
  if (std::string w = violations::flag_warning(spec.annotations); !w.empty()) log::warn(w);
  if (!spec.process) return Error::msg("config.json: process: required");
  if (!spec.root || spec.root->path.empty()) return Error::msg("config.json: root.path: required");
  std::string rootfs_path =
      spec.root->path[0] == '/' ? spec.root->path : join_path(bundle, spec.root->path);
  TRY(std::string rootfs, resolve_dir(rootfs_path, "rootfs"));
  if (spec.process->terminal && o.console_socket.empty())
    return Error::msg("cannot allocate tty if runc will detach without setting console socket");
  if (!spec.process->terminal && !o.console_socket.empty())
    return Error::msg("cannot use console socket if runc will not detach or allocate tty");

  PlanInputs pin{o.id, bundle, rootfs, o.no_pivot, o.no_new_keyring, o.preserve_fds};
  // LISTEN_FDS (socket activation) passes through, as runc does.
  if (const char* lf = std::getenv("LISTEN_FDS")) {
    int n = std::atoi(lf);
    if (n > 0) {
      pin.preserve_fds += n;
      spec.process->env.push_back("LISTEN_FDS=" + std::to_string(n));
      spec.process->env.push_back("LISTEN_PID=1");
    }
  }
  log::debug("create " + o.id + ": bundle " + bundle + ", rootfs " + rootfs);
  // Egress (egress/egress.hpp, docs/egress.md): a pack's capabilities get
  // the resolver's resolv.conf, from the state dir, bound over
  // /etc/resolv.conf; the rest is set up once the init's mounts are made.
  TRY(std::optional<capability::Capabilities> egress_caps, egress::capabilities_of(spec));
  std::string egress_netns;
  std::vector<std::string> egress_upstreams;
  if (egress_caps) {
    TRY(egress_netns, egress::engine_netns(spec));
    TRYV(egress::refuse_host_literals(*egress_caps));
    TRY(egress_upstreams, egress::dns_upstreams());
    egress::prepare_spec(spec, *egress_caps, join_path(g.root, o.id));
    if (egress_caps->egress.any)
      log::warn("create " + o.id + ": egress \"*\": unrestricted network (never cached)");
  }
  TRY(ChildContext ctx, plan_child(spec, pin));
  const oci::Linux empty_linux;
  const oci::Linux& lx = spec.linux_ ? *spec.linux_ : empty_linux;
  TRYV(compile_config_seccomp(lx, ctx));
  // Capabilities enforced (an engine's annotation) with no exec list of a
  // policy's: only the config's own command may be executed (docs/policy.md).
  // With both annotations the stricter holds (docs/policy.md): a policy
  // list may narrow the lock to the command, never widen it past it.
  if (policy && spec.process &&
      spec.annotations.count(std::string(capability::kAnnotationCapabilities))) {
    TRY(std::string cmd, command_in_rootfs(*spec.process, rootfs));
    if (policy->exec && !exec_list_names(*policy->exec, cmd, rootfs))
      return Error::msg("annotation org.soyaos.comet.policy: exec " + quote_list(*policy->exec) +
                        " does not name the config's command " + cmd +
                        " (with the capabilities annotation only the command may be executed)");
    policy->exec = std::vector<std::string>{cmd};
  }
  if (policy) TRYV(plan_confinement(*policy, rootfs, lx, ctx));
  if (policy && egress_caps && ctx.landlock_abi >= 1) {
    ctx.landlock_no_symlinks = true;  // fs events (docs/events.md)
    ctx.layers.push_back("landlock:no-symlinks");
  }
  TRY(ctx.cgroups, plan_cgroups(lx.cgroups_path, o.id, lx.resources ? &*lx.resources : nullptr));

  ContainerDir dir(g.root, o.id);
  TRYV(dir.create());
  egress::Handles egress_handles;  // before cleanup: its destructor reads it
  CreateCleanup cleanup;
  cleanup.dir = &dir;
  TRY(UniqueFd lock, dir.lock());
  TRYV(write_file_atomic(dir.file("config.json"), config_text, 0600, Sync::none));
  if (egress_caps) TRYV(egress::write_resolv_conf(*egress_caps, dir.path()));
  // The init opens the fifo after it dropped to the container's user (and
  // maybe into a user namespace): world-writable, owned by container root,
  // as runc makes it. Only writers unblock `start`; nothing else is in it.
  if (::mkfifo(dir.file("exec.fifo").c_str(), 0622) < 0)
    return Error::sys(errno, "mkfifo " + dir.file("exec.fifo"));
  ::chmod(dir.file("exec.fifo").c_str(), 0622);
  {
    uid_t ru = 0;
    gid_t rg = 0;
    for (auto& m : lx.uid_mappings)
      if (m.container_id == 0) ru = m.host_id;
    for (auto& m : lx.gid_mappings)
      if (m.container_id == 0) rg = m.host_id;
    if ((ru || rg) && ::chown(dir.file("exec.fifo").c_str(), ru, rg) < 0)
      return Error::sys(errno, "chown " + dir.file("exec.fifo"));
  }

  // Fds the child inherits. All above 2 + preserve_fds.
  int min_fd = 3 + pin.preserve_fds;
  TRY(UniqueFd state_fd,
      high(UniqueFd(::open(dir.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)), min_fd,
           "state dir"));
  TRY(UniqueFd proc_fd,
      high(UniqueFd(::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC)), min_fd, "/proc"));
  struct statfs sfs;
  if (!proc_fd || ::fstatfs(proc_fd.get(), &sfs) < 0 || sfs.f_type != kProcSuperMagic)
    return Error::msg("/proc is not a procfs mount");
  UniqueFd console;
  if (!o.console_socket.empty()) {
    TRY(UniqueFd c, connect_unix(o.console_socket, "console socket"));
    TRY(console, high(std::move(c), min_fd, "console socket"));
  }
  UniqueFd listener;
  if (ctx.has_seccomp && ctx.seccomp.needs_listener) {
    TRY(UniqueFd l, connect_unix(ctx.seccomp.listener_path, "seccomp listener"));
    TRY(listener, high(std::move(l), min_fd, "seccomp listener"));
  }
  std::vector<UniqueFd> join_fds;
  // A network policy (capabilities, or a restricted profile) is never
  // enforced in the host's namespace, however the config names it: checked
  // on the very fd the child joins.
  const bool netns_enforced = policy && policy->network != capability::NetworkPolicy::open;
  for (auto& j : ctx.joins) {
    int fd = ::open(j.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error::sys(errno, "open namespace " + j.path);
    TRY(UniqueFd h, high(UniqueFd(fd), min_fd, j.path));
    if (netns_enforced && j.clone_flag == CLONE_NEWNET)
      TRYV(egress::refuse_host_netns(h.get(), j.path));
    // Nor does a confined container join the host's pid, mount, ipc, uts
    // or cgroup namespace (red team, issue 21: a pid namespace path of a
    // host process showed every host process's command line).
    if (policy && policy->lockdown) TRYV(refuse_host_namespace(h.get(), j.clone_flag, j.path));
    j.fd = h.get();
    join_fds.push_back(std::move(h));
  }
  TRY(UniqueFd tramp0, sealed_trampoline());
  TRY(UniqueFd tramp, high(std::move(tramp0), min_fd, "exec trampoline"));
  ctx.trampoline_fd = tramp.get();
  int sp[2];
  if (fault_fail("socketpair-emfile", EMFILE) ||
      ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
    return Error::sys(errno, "socketpair");
  TRY(UniqueFd sync_parent, high(UniqueFd(sp[0]), min_fd, "sync socket"));
  TRY(UniqueFd sync_child, high(UniqueFd(sp[1]), min_fd, "sync socket"));
  ctx.sync_fd = sync_child.get();
  ctx.state_dir_fd = state_fd.get();
  ctx.proc_fd = proc_fd.get();
  ctx.lock_fd = lock.get();
  ctx.console_sock_fd = console.get();
  ctx.seccomp_listener_sock = listener.get();
  // A pack's own PID 1 (child.hpp, docs/events.md "Exit code 3 under an
  // engine"), so that the container's own exit status is 3 on a violation.
  // Only as the init of a pid namespace of its own (the kernel then keeps
  // signals without a handler from it, and orphans come to it); not with a
  // terminal (the init would lead the tty's session) or a config filter
  // that loads before the fifo (it may refuse the fork).
  UniqueFd events_fd;
  if (spec.annotations.count(std::string(capability::kAnnotationCapabilities)) &&
      (ctx.new_ns_flags & CLONE_NEWPID) && !spec.process->terminal &&
      !(ctx.has_seccomp && ctx.seccomp.needs_listener) && !switches::own_init_off()) {
    std::string ev = dir.file(violations::kEventsFile);
    TRY(events_fd,
        high(UniqueFd(::open(ev.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0600)), min_fd, ev));
    ctx.own_init = true;
    ctx.init_dns_barrier = egress_caps && egress::wants_resolver(*egress_caps);
    ctx.events_fd = events_fd.get();
  }
  // Violation reporter (reporter.hpp): started before clone; the child sends
  // it the notifying lock-down's listener fd over lockdown_listener_sock.
  // A foreground run serves it on a thread of its own (started below, once
  // create has cloned everything); COMET_REPORTER=process keeps the process
  // (the test that kills the reporter alone).
  const std::string events_to = events_target(spec.annotations);
  TRYV(create_cgroups(ctx.cgroups));
  cleanup.cgroup_dirs = ctx.cgroups.dirs();
  if (lx.resources) TRYV(apply_resources(ctx.cgroups, *lx.resources));
  // fs.read / fs.write events (fswatch.hpp) for a pack's reporter: filed
  // under the container's cgroup2 id before anything runs in it.
  FsWatch fsw;
  FsView fs_view;
  if (ctx.has_lockdown && ctx.lockdown.needs_listener && egress_caps &&
      !switches::fs_events_off()) {
    std::string v2;
    for (auto& h : ctx.cgroups.hierarchies)
      if (h.v2) v2 = h.dir;
    auto w = v2.empty() ? Result<FsWatch>(Error::msg("no cgroup2 directory")) : fswatch_watch(v2);
    if (w.ok()) {
      fsw = std::move(*w);
      cleanup.fs_cgroup = fsw.cgroup;
      TRY(fsw.ring, high(std::move(fsw.ring), min_fd, "fs watch ring"));
      fs_view = fs_view_of(*egress_caps, rootfs, spec);
      ctx.layers.push_back("fs-events");
      ctx.fs_arm_marker = true;
      ctx.init_reporter_barrier = ctx.own_init;
    } else if (v2.empty() || fswatch_unsupported(w.error())) {
      // What this kernel or caller cannot do (no CAP_BPF, BTF, bpffs or
      // cgroup2): the mounts still enforce, only these events are missing.
      log::warn("fs.read/fs.write violation events are off for " + o.id + ": " + w.error().what());
    } else {
      return Error(w.error().err(), "fs.read/fs.write violation events: " + w.error().message());
    }
  }
  ReporterHandle reporter;
  if (ctx.has_lockdown && ctx.lockdown.needs_listener) {
    ReporterRequest rr;
    rr.container = o.id;
    if (auto a = spec.annotations.find("org.soyaos.comet.pack"); a != spec.annotations.end())
      rr.pack = a->second;
    rr.state_dir = dir.path();
    rr.deliver = events_to;
    rr.lockdown = lockdown_options(*policy, false);
    rr.unix_allow = policy->unix_allow;
    rr.exec_allow = ctx.exec_allow;
    if (struct stat ts; ::fstat(tramp.get(), &ts) == 0) {
      rr.trampoline_dev = ts.st_dev;
      rr.trampoline_ino = ts.st_ino;
    }
    rr.fs_ring = fsw.ring.get();
    rr.fs_cgroup = fsw.cgroup;
    rr.fs_view = std::move(fs_view);
    bool in_process = keep_child && !switches::reporter_process();
    TRY(reporter, start_reporter(rr, min_fd, in_process));
    ctx.lockdown_listener_sock = reporter.child_sock.get();
    if (!rr.deliver.empty()) {
      TRYV(write_file_atomic(dir.file("events.deliver"), rr.deliver, 0600, Sync::none));
    }
  }

  ContainerRecord rec;
  rec.id = o.id;
  rec.bundle = bundle;
  rec.rootfs = rootfs;
  rec.created = rfc3339_now();
  rec.owner = "";
  rec.annotations = spec.annotations;
  rec.cgroup_dirs = ctx.cgroups.dirs();
  rec.freezer_dir = ctx.cgroups.freezer_dir;
  rec.freezer_v2 = ctx.cgroups.freezer_v2;
  rec.terminal = spec.process->terminal;
  rec.layers = ctx.layers;
  rec.reporter_pid = reporter.pid;  // stopped at delete (ops.cpp)
  rec.reporter_start = reporter.start_time;
  TRYV(dir.save(rec));
  fault_point("create-after-record");

  if (keep_child && ctx.slow_path) ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  int clone_flags = ctx.slow_path ? 0 : (ctx.new_ns_flags & ~CLONE_NEWCGROUP);
  // Born in its cgroup2 directory (CLONE_INTO_CGROUP): no migration, so no
  // RCU grace period. v1 hierarchies still need a cgroup.procs write.
  UniqueFd v2dir;
  for (auto& h : ctx.cgroups.hierarchies)
    if (h.v2) v2dir.reset(::open(h.dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  TRY(long pid, clone_into(clone_flags, v2dir.get()));
  if (pid == 0) {
    sync_parent.reset();
    child_main(ctx);
  }
  sync_child.reset();
  cleanup.stage1 = ChildGuard(static_cast<pid_t>(pid));
  log::debug("create " + o.id + ": cloned " + std::to_string(pid) +
             (ctx.slow_path ? " (two-stage)" : ""));
  int sfd = sync_parent.get();
  const auto& uidm = lx.uid_mappings;
  const auto& gidm = lx.gid_mappings;
  bool new_user = ctx.new_ns_flags & CLONE_NEWUSER;

  fault_point("create-after-clone");
  /* sync 1 */
  if (new_user) {
    if (ctx.slow_path) {
      auto m = expect_msg(sfd, MsgType::kNeedMaps);
      if (!m.ok()) return child_failure(sfd, m.error(), lx);
    }
    TRYV(write_id_map(proc_fd.get(), static_cast<int>(pid), "uid_map", uidm));
    TRYV(write_id_map(proc_fd.get(), static_cast<int>(pid), "gid_map", gidm));
    if (ctx.slow_path && send_msg(sfd, MsgType::kMapsDone))
      return child_failure(sfd, Error::msg("container init died"), lx);
  }
  TRYV(join_cgroups(ctx.cgroups, static_cast<int>(pid), /*skip_v2=*/v2dir.valid()));
  if (spec.process->oom_score_adj) {
    std::string rel = std::to_string(pid) + "/oom_score_adj";
    int fd = ::openat(proc_fd.get(), rel.c_str(), O_WRONLY | O_CLOEXEC);
    std::string v = std::to_string(*spec.process->oom_score_adj);
    if (fd < 0 || ::write(fd, v.data(), v.size()) < 0) {
      int e = errno;
      if (fd >= 0) ::close(fd);
      return Error::sys(e, "set oom_score_adj to " + v);
    }
    ::close(fd);
  }
  /* sync 2 */
  if (int r = fault_fail("sync-econnreset", ECONNRESET) ? ECONNRESET : send_msg(sfd, MsgType::kGo))
    return child_failure(sfd, Error::sys(r, "sync with container init"), lx);
  int init_pid = static_cast<int>(pid);
  if (ctx.slow_path && (ctx.new_ns_flags & (CLONE_NEWPID | CLONE_NEWTIME) ||
                        std::any_of(ctx.joins.begin(), ctx.joins.end(),
                                    [](auto& j) { return j.clone_flag == CLONE_NEWPID; }))) {
    auto m = expect_msg(sfd, MsgType::kInitPid);
    if (!m.ok()) return child_failure(sfd, m.error(), lx);
    init_pid = m->value;
    PidFd::open(init_pid, &cleanup.init);
    cleanup.stage1.wait();
  } else {
    PidFd::open(init_pid, &cleanup.init);
  }
  rec.pid = init_pid;
  rec.start_time = process_start_time(init_pid);
  TRYV(dir.save(rec));

  /* sync 3: hooks in the runtime namespace */
  if (auto m = expect_msg(sfd, MsgType::kMountsDone); !m.ok())
    return child_failure(sfd, m.error(), lx);
  fault_point("create-after-mounts");
  // Egress: the ruleset into the container's netns, then the network helper
  // (a netns we made), then the resolver; each recorded before the next starts, so
  // delete --force finds them. Any failure fails the create (fail closed).
  if (egress_caps) {
    cleanup.egress = &egress_handles;
    egress::SetupRequest er;
    er.id = o.id;
    er.state_dir = dir.path();
    er.caps = *egress_caps;
    er.engine_netns = egress_netns;
    er.net_helper = o.net_helper;
    er.init_pid = init_pid;
    er.upstreams = egress_upstreams;
    // DNS violations (docs/events.md): the resolver reports what it answers
    // REFUSED, rate-limited, before the answer goes out. It runs in a copy
    // of this process, so the writer lives there.
    {
      auto out = std::make_shared<violations::RateLimited>(dir.path());
      auto pack = violations::pack_of(spec.annotations);
      std::string cid = o.id;
      int ipid = init_pid;
      er.on_dns_refused = [out, pack, cid, ipid](const egress::DnsRefusal& r) {
        violations::Event e;
        e.container = cid;
        e.pack = pack;
        e.surface = "dns";
        const bool address = r.qtype == 1 || r.qtype == 28 || r.qtype == 5;  // A AAAA CNAME
        e.requested = address ? r.name : r.name + " (type " + std::to_string(r.qtype) + ")";
        e.syscall = r.tcp ? "tcp" : "udp";  // the transport: the resolver sees no syscall
        int owner = violations::socket_owner(ipid, r.client, r.tcp);
        e.pid = owner > 0 ? owner : ipid;
        e.err_name = "REFUSED";
        out->report(e);
      };
      // Egress violations: the packets the ruleset refused, from its NFLOG
      // group (egress/nflog.hpp), read by the resolver.
      er.on_egress_blocked = [out, pack, cid, ipid](const egress::Blocked& b) {
        violations::Event e;
        e.container = cid;
        e.pack = pack;
        const bool dns = b.prefix == egress::kNflogPrefixDns;
        // A peer's new connection to a socket of the agent's: the local
        // end is the destination.
        const bool inbound = b.prefix == egress::kNflogPrefixInbound;
        e.surface = dns ? "dns" : "egress";
        const char* proto = b.l4 == IPPROTO_TCP ? "tcp" : b.l4 == IPPROTO_UDP ? "udp" : nullptr;
        std::string host = b.v6 ? "[" + b.dst + "]" : b.dst;
        e.requested = proto ? host + ":" + std::to_string(b.dport) + "/" + proto
                            : host + "/proto " + std::to_string(b.l4);
        if (inbound)
          e.requested = "inbound from " + (b.v6 ? "[" + b.src + "]" : b.src) + ":" +
                        std::to_string(b.sport) + (proto ? std::string("/") + proto : "") +
                        " to port " + std::to_string(b.dport);
        e.syscall = proto ? proto : "ip";  // the transport, as for dns
        const bool loopback = b.dst.rfind("127.", 0) == 0 || b.dst == "::1";
        // What the rule that refused it makes the agent see (inbound: the
        // peer; the agent's listener sees nothing).
        e.err = dns || loopback ? ETIMEDOUT : proto ? ECONNREFUSED : EHOSTUNREACH;
        sockaddr_storage src = {};
        const std::string& local = inbound ? b.dst : b.src;
        const uint16_t local_port = inbound ? b.dport : b.sport;
        if (b.v6) {
          auto* a = reinterpret_cast<sockaddr_in6*>(&src);
          a->sin6_family = AF_INET6;
          a->sin6_port = htons(local_port);
          ::inet_pton(AF_INET6, local.c_str(), &a->sin6_addr);
        } else {
          auto* a = reinterpret_cast<sockaddr_in*>(&src);
          a->sin_family = AF_INET;
          a->sin_port = htons(local_port);
          ::inet_pton(AF_INET, local.c_str(), &a->sin_addr);
        }
        int owner = proto ? violations::socket_owner(ipid, src, b.l4 == IPPROTO_TCP) : 0;
        if (owner <= 0 && proto && inbound) {  // a listener on the any-address
          if (b.v6)
            reinterpret_cast<sockaddr_in6*>(&src)->sin6_addr = in6addr_any;
          else
            reinterpret_cast<sockaddr_in*>(&src)->sin_addr.s_addr = htonl(INADDR_ANY);
          owner = violations::socket_owner(ipid, src, b.l4 == IPPROTO_TCP);
        }
        e.pid = owner > 0 ? owner : ipid;
        out->report(e);
      };
      er.on_resolver_exit = [out] { out->finish(); };
    }
    // The resolver parses the agent's queries: once set up it keeps only
    // CAP_NET_ADMIN, a read-only tree but its state dir, and a seccomp deny
    // list (helper_confine.hpp; docs/egress.md).
    {
      std::string state_dir = dir.path();
      er.confine_resolver = [state_dir, deliver = events_to](int companion) -> Status {
        TRYV(violations::pin_delivery_target(deliver));
        HelperConfinement hc;
        hc.writable = {state_dir};
        hc.keep_caps = 1ULL << CAP_NET_ADMIN;
        hc.signal_pid = companion;
        hc.allow_unix = deliver.rfind("unix:", 0) == 0;
        return confine_helper(hc);
      };
    }
    auto record = [&](const egress::Handles& h) {
      rec.egress_resolver_pid = h.resolver_pid;
      rec.egress_resolver_start = h.resolver_start;
      rec.egress_net_pid = h.net_pid;
      rec.egress_net_start = h.net_start;
      rec.egress_netns = h.netns_path;
      rec.egress_table = h.table;
      return dir.save(rec);
    };
    TRYV(egress::setup(er, egress_handles, record));
    fault_point("create-after-nft");
  }
  std::string hs =
      hook_state(o.id, init_pid, bundle, spec.annotations, oci::ContainerStatus::kCreating);
  TRYV(write_file_atomic(dir.file("hookstate.json"), hs, 0600, Sync::none));
  if (spec.hooks) {
    TRYV(run_hooks(spec.hooks->prestart, "prestart", hs));
    TRYV(run_hooks(spec.hooks->create_runtime, "createRuntime", hs));
  }
  if (int r = send_msg(sfd, MsgType::kHooksDone))
    return child_failure(sfd, Error::sys(r, "sync with container init"), lx);
  /* sync 4 */
  if (auto m = expect_msg(sfd, MsgType::kReady); !m.ok()) return child_failure(sfd, m.error(), lx);

  log::debug("create " + o.id + ": init " + std::to_string(init_pid) + " ready");
  fault_point("create-before-ready");
  rec.create_done = true;
  TRYV(dir.save(rec));
  if (!o.pid_file.empty()) {
    std::string pf = o.pid_file;
    TRYV(write_file_atomic(pf, std::to_string(init_pid), 0644, Sync::none));
  }
  // Nothing more is cloned from here (reporter.hpp).
  TRYV(start_reporter_thread(reporter));
  cleanup.armed = false;
  cleanup.stage1.release();
  return init_pid;
}

namespace {

// `run` of a config with process.terminal and no --console-socket: like
// runc, we take the pty ourselves and copy between it and our stdio.
struct ConsoleProxy {
  std::string path;
  UniqueFd listener;
  UniqueFd master;
  bool raw = false;
  struct termios saved = {};
  ~ConsoleProxy() {
    if (raw) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    if (!path.empty()) ::unlink(path.c_str());
  }
};

Result<bool> wants_terminal(const CreateOptions& o) {
  TRY(std::string bundle, resolve_dir(o.bundle, "bundle"));
  TRY(std::string text, read_file(bundle + "/config.json"));
  TRY(oci::Spec spec, oci::parse_spec(text));
  return spec.process && spec.process->terminal;
}

Status listen_console(const Globals& g, const std::string& id, ConsoleProxy& cp) {
  TRYV(mkdir_p(g.root, 0711));
  cp.path = join_path(g.root, "." + id + ".console." + std::to_string(::getpid()));
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::sys(errno, "socket");
  cp.listener.reset(fd);
  struct sockaddr_un a = {};
  a.sun_family = AF_UNIX;
  if (cp.path.size() >= sizeof a.sun_path)
    return Error::msg("console socket path too long: " + cp.path);
  std::memcpy(a.sun_path, cp.path.data(), cp.path.size());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || ::listen(fd, 1) < 0)
    return Error::sys(errno, "listen on " + cp.path);
  return ok();
}

Status receive_master(ConsoleProxy& cp) {
  int c = ::accept4(cp.listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) return Error::sys(errno, "accept the console");
  UniqueFd conn(c);
  char buf[256];
  struct iovec iov = {buf, sizeof buf};
  char cbuf[CMSG_SPACE(sizeof(int))];
  struct msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cbuf;
  mh.msg_controllen = sizeof cbuf;
  if (::recvmsg(c, &mh, MSG_CMSG_CLOEXEC) < 0) return Error::sys(errno, "receive the pty master");
  struct cmsghdr* cm = CMSG_FIRSTHDR(&mh);
  if (!cm || cm->cmsg_type != SCM_RIGHTS) return Error::msg("no pty master on the console socket");
  int m;
  std::memcpy(&m, CMSG_DATA(cm), sizeof m);
  cp.master.reset(m);
  if (::isatty(STDIN_FILENO) && ::tcgetattr(STDIN_FILENO, &cp.saved) == 0) {
    struct termios t = cp.saved;
    ::cfmakeraw(&t);
    cp.raw = ::tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
    struct winsize ws;
    if (::ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) ::ioctl(cp.master.get(), TIOCSWINSZ, &ws);
  }
  return ok();
}

// Copy stdin -> pty and pty -> stdout until the pty hangs up.
void pump(int master, int sigfd, int pid) {
  struct pollfd p[3] = {{master, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}, {sigfd, POLLIN, 0}};
  char buf[8192];
  bool stdin_open = true;
  for (;;) {
    p[1].fd = stdin_open ? STDIN_FILENO : -1;
    if (::poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = ::read(master, buf, sizeof buf);
      if (n <= 0) return;  // EIO: the last slave closed
      if (::write(STDOUT_FILENO, buf, static_cast<size_t>(n)) < 0) return;
    }
    if (stdin_open && (p[1].revents & (POLLIN | POLLHUP))) {
      ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
      if (n <= 0)
        stdin_open = false;
      else if (::write(master, buf, static_cast<size_t>(n)) < 0)
        return;
    }
    if (p[2].revents & POLLIN) {
      struct signalfd_siginfo si;
      if (::read(sigfd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGWINCH) {
          struct winsize ws;
          if (::ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) ::ioctl(master, TIOCSWINSZ, &ws);
        } else if (si.ssi_signo != SIGCHLD) {
          ::kill(pid, static_cast<int>(si.ssi_signo));
        }
      }
    }
  }
}

}  // namespace

Result<int> run_container(const Globals& g, const CreateOptions& o_in, bool detach) {
  CreateOptions o = o_in;
  ConsoleProxy cp;
  bool proxy = false;
  if (o.console_socket.empty() && !detach) {
    TRY(proxy, wants_terminal(o));
    if (proxy) {
      TRYV(listen_console(g, o.id, cp));
      o.console_socket = cp.path;
    }
  }
  // Signals that arrive while the container runs go to its init.
  sigset_t fwd;
  sigemptyset(&fwd);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCHLD})
    sigaddset(&fwd, s);
  TRY(int pid, create_container(g, o, !detach));
  if (detach) {
    TRYV(start_container(g, o.id));
    return 0;
  }
  if (proxy) {
    Status st = receive_master(cp);
    if (!st.ok()) {
      (void)delete_container(g, o.id, true);
      return std::move(st).error();
    }
  }
  sigset_t old;
  ::sigprocmask(SIG_BLOCK, &fwd, &old);
  UniqueFd sfd(::signalfd(-1, &fwd, SFD_CLOEXEC));
  Status st = start_container(g, o.id);
  if (!st.ok()) {
    (void)delete_container(g, o.id, true);
    return std::move(st).error();
  }
  if (proxy) pump(cp.master.get(), sfd.get(), pid);
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG | __WALL);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      status = 0;
      break;
    }
    struct signalfd_siginfo si;
    if (::read(sfd.get(), &si, sizeof si) != sizeof si) continue;
    if (si.ssi_signo == SIGCHLD) continue;
    ::kill(pid, static_cast<int>(si.ssi_signo));
  }
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  // Any capability_violation recorded: exit 3, whatever the agent's status
  // (violations.hpp); counted (and the pack flagged) before delete.
  // Only a pack (capabilities) turns them into exit 3: a sandbox profile's
  // command keeps its own status (docs/sandbox.md), its events are kept.
  bool is_pack = false;
  if (auto rec = ContainerDir(g.root, o.id).load(); rec.ok())
    is_pack = rec->annotations.count(std::string(capability::kAnnotationCapabilities)) > 0;
  // A reporter thread ends once the last confined process is gone (its
  // listener hangs up); give it the bounded time a process gets.
  (void)wait_reporter_threads(3000);
  long violations_seen = violations::finish_run(g.root, o.id);
  (void)delete_container(g, o.id, true);
  if (violations_seen > 0 && is_pack) return violations::kViolationExit;
  // A pack's own init exits 3 for a violation it read or for a reporter
  // that did not answer (it says so on stderr); the agent may exit 3 itself.
  if (is_pack && WIFEXITED(status) && WEXITSTATUS(status) == violations::kViolationExit)
    log::warn("container " + o.id +
              ": exit status 3 with no capability_violation event recorded (the agent's own "
              "3, or its init's: see its stderr)");
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace comet::runtime
