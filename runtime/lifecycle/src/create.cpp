// `create`: the parent side of the sync protocol in sync.hpp, as a checklist
// of phases (create_container, at the end). `run` is in run.cpp.
#include <dirent.h>
#include <fcntl.h>

#include <linux/capability.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>

#include <climits>
#include <cstdlib>
#include <cstring>

#include "comet/base/fault.hpp"
#include "comet/base/switches.hpp"
#include "comet/base/sys.hpp"
#include "comet/capability/compile.hpp"
#include "comet/capability/policy.hpp"
#include "comet/egress/egress.hpp"
#include "comet/host/cgroups.hpp"
#include "comet/host/id_maps.hpp"
#include "comet/host/log.hpp"
#include "comet/host/net_devices.hpp"
#include "comet/host/state_store.hpp"
#include "comet/host/user_dirs.hpp"
#include "comet/lifecycle/confine.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/lifecycle/helper_confine.hpp"
#include "comet/lifecycle/hooks.hpp"
#include "comet/lifecycle/plan.hpp"
#include "comet/lifecycle/rootless.hpp"
#include "comet/lifecycle/sync.hpp"
#include "comet/lifecycle/trampoline.hpp"
#include "comet/oci/spec.hpp"
#include "comet/reporting/fswatch.hpp"
#include "comet/reporting/reporter.hpp"
#include "comet/reporting/violations.hpp"
#include "comet/seccomp/seccomp.hpp"
#include "lifecycle_internal.hpp"

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

// Undoes a failed create: the child, the cgroups, the state dir. Armed once
// the state dir is ours (a dir that already existed is another container's).
struct CreateCleanup {
  ContainerDir* dir = nullptr;
  std::vector<std::string> cgroup_dirs;
  ChildGuard stage1;
  PidFd init;
  egress::Handles* egress = nullptr;  // the resolver, the network helper, our nft table
  std::uint64_t fs_cgroup = 0;        // fs events: the cgroup filed with the program
  // linux.netDevices moved in (inside name -> host name), their netns, and
  // paths to unmount and unlink (the netns pin): copies, as the record is
  // gone by the time this runs.
  std::map<std::string, std::string> net_devices;
  std::string netns;
  std::vector<std::string> paths;
  bool armed = false;
  ~CreateCleanup() {
    if (!armed) return;
    if (egress) (void)egress::teardown(*egress);
    for (const auto& [inside, host] : net_devices) (void)move_link_back(netns, inside, host);
    for (const std::string& p : paths) {
      ::umount2(p.c_str(), MNT_DETACH);
      ::unlink(p.c_str());
    }
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

// Where the container's events go besides its state dir: the --events
// target (violations::delivery()), else the events annotation; "" for none.
std::string events_target(const std::map<std::string, std::string>& annotations) {
  std::string t = violations::delivery();
  if (auto a = annotations.find(violations::kEventsAnnotation); t.empty() && a != annotations.end())
    t = a->second;
  return t;
}

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

const oci::Linux kNoLinux;

// Everything one create holds between its phases, each made by the phase
// that needs it. Members are destroyed in reverse order, as the locals of
// one function were: the fds close before `cleanup` kills the child and
// removes the state dir; `dir` and `egress_handles` outlive `cleanup`,
// whose destructor reads them.
struct Creation {
  const Globals& g;
  const CreateOptions& o;
  bool keep_child;
  // load_config
  std::string bundle, config_text, rootfs;
  oci::Spec spec;
  std::optional<capability::Policy> policy;
  std::vector<UniqueFd> idmap_trees;  // detached idmapped mounts (mounts.hpp)
  PlanInputs pin;
  // prepare_egress
  std::optional<capability::Capabilities> egress_caps;
  std::string egress_netns;
  std::vector<std::string> egress_upstreams;
  // plan
  ChildContext ctx;
  std::map<std::string, std::string> rootless_notes;  // rootless.hpp: for state
  // make_state_dir
  ContainerDir dir;
  egress::Handles egress_handles;  // before cleanup: its destructor reads it
  CreateCleanup cleanup;
  UniqueFd lock;
  // open_child_fds: all above 2 + preserve_fds
  int min_fd = 3;
  UniqueFd state_fd, proc_fd, console, listener;
  std::vector<UniqueFd> join_fds;
  UniqueFd tramp, sync_parent, sync_child;
  // the pack extensions
  UniqueFd events_fd;
  std::string events_to;
  FsWatch fsw;
  FsView fs_view;
  ReporterHandle reporter;
  // save_record, clone_child
  ContainerRecord rec;
  UniqueFd v2dir;
  long pid = 0;
  int init_pid = 0;

  Creation(const Globals& g_, const CreateOptions& o_, bool keep)
      : g(g_), o(o_), keep_child(keep), dir(g_.root, o_.id) {}
  const oci::Linux& lx() const { return spec.linux_ ? *spec.linux_ : kNoLinux; }
  int sfd() const { return sync_parent.get(); }
  Error failed(const Error& e) const { return child_failure(sfd(), e, lx()); }
};

// Load and tighten: the bundle's config, checked, with the policy's
// tightening applied before anything is planned from it.
Status load_config(Creation& c) {
  const CreateOptions& o = c.o;
  TRYV(validate_id(o.id));
  if (c.g.systemd_cgroup || c.g.cgroup_manager == "systemd")
    return Error::msg(
        "systemd cgroup driver requested (--systemd-cgroup), but systemd is not "
        "running on this host; use the cgroupfs driver");
  TRY(c.bundle, resolve_dir(o.bundle, "bundle"));
  TRY(c.config_text, read_file(c.bundle + "/config.json"));
  TRY(c.spec, oci::parse_spec(c.config_text));
  oci::Spec& spec = c.spec;
  TRYV(oci::validate_spec(spec));
  // org.soyaos.comet.policy / .capabilities: tighten the config (never
  // loosen it) before anything is planned from it.
  // A pack's name alone confines nothing, and the runtime has no registry
  // to resolve it from: refused, so that a container never runs unconfined
  // while its config looks confined (docs/engines.md, issue 26).
  if (spec.annotations.count(std::string(capability::kAnnotationPack)) &&
      !spec.annotations.count(std::string(capability::kAnnotationCapabilities)))
    return Error::msg("annotation org.soyaos.comet.pack=" +
                      spec.annotations.at(std::string(capability::kAnnotationPack)) +
                      " without org.soyaos.comet.capabilities: the pack name alone confines "
                      "nothing; add the capabilities annotation (comet-runtime pack annotation "
                      "PACK)");
  TRY(c.policy, capability::policy_from_annotations(spec.annotations));
  if (c.policy) TRYV(capability::tighten(spec, *c.policy));
  if (c.policy && c.policy->git_own)
    return Error::msg(
        "annotation org.soyaos.comet.policy: git: only `comet-runtime sandbox` "
        "enforces the git rule (its init makes the calls)");
  // A pack version with recorded violations: one warning line (violations.hpp).
  if (std::string w = violations::flag_warning(c.g.root, spec.annotations); !w.empty())
    log::warn(w);
  if (!spec.process) return Error::msg("config.json: process: required");
  if (!spec.root || spec.root->path.empty()) return Error::msg("config.json: root.path: required");
  std::string rootfs_path =
      spec.root->path[0] == '/' ? spec.root->path : join_path(c.bundle, spec.root->path);
  TRY(c.rootfs, resolve_dir(rootfs_path, "rootfs"));
  if (spec.process->terminal && o.console_socket.empty())
    return Error::msg("cannot allocate tty if runc will detach without setting console socket");
  if (!spec.process->terminal && !o.console_socket.empty())
    return Error::msg("cannot use console socket if runc will not detach or allocate tty");

  c.pin = PlanInputs{o.id,
                     c.bundle,
                     c.rootfs,
                     o.no_pivot,
                     o.no_new_keyring,
                     o.preserve_fds,
                     detect_host_facilities()};
  // LISTEN_FDS (socket activation) passes through, as runc does.
  if (const char* lf = std::getenv("LISTEN_FDS")) {
    int n = std::atoi(lf);
    if (n > 0) {
      c.pin.preserve_fds += n;
      spec.process->env.push_back("LISTEN_FDS=" + std::to_string(n));
      spec.process->env.push_back("LISTEN_PID=1");
    }
  }
  log::debug("create " + o.id + ": bundle " + c.bundle + ", rootfs " + c.rootfs);
  return {};
}

// Egress (egress/egress.hpp, docs/egress.md): a pack's capabilities get
// the resolver's resolv.conf, from the state dir, bound over
// /etc/resolv.conf; the rest is set up once the init's mounts are made.
Status prepare_egress(Creation& c) {
  TRY(c.egress_caps, egress::capabilities_of(c.spec));
  if (!c.egress_caps) return {};
  TRY(c.egress_netns, egress::engine_netns(c.spec));
  TRYV(egress::refuse_host_literals(*c.egress_caps));
  TRY(c.egress_upstreams, egress::dns_upstreams());
  egress::prepare_spec(c.spec, *c.egress_caps, join_path(c.g.root, c.o.id));
  if (c.egress_caps->egress.any)
    log::warn("create " + c.o.id + ": egress \"*\": unrestricted network (never cached)");
  return {};
}

// Where the container's cgroup is (docs/rootless.md, "The cgroup rule"):
// root's plan; an ordinary user's delegated cgroup2 directory or none; none
// with --cgroup-manager disabled. Without a cgroup a limit is refused (exit
// 125), never dropped; state records why there is none.
Status plan_cgroup(Creation& c) {
  const oci::Linux& lx = c.lx();
  const oci::Resources* res = lx.resources ? &*lx.resources : nullptr;
  if (c.g.cgroup_manager == "disabled") {
    c.rootless_notes[kNoteCgroup] = "none (--cgroup-manager disabled)";
    return check_rootless_limits(c.ctx.fs.cgroups, c.rootless_notes[kNoteCgroup], res);
  }
  if (!rootless()) {
    // An OCI config joins every v1 hierarchy of a hybrid host, as runc does
    // (its device rules then show in v1 devices.list too); a pack or policy
    // run keeps the cheaper rule: v1 only for a v1 limit (docs/architecture.md).
    TRY(c.ctx.fs.cgroups, plan_cgroups(lx.cgroups_path, c.o.id, res, /*every_v1=*/!c.policy));
    return {};
  }
  RootlessCgroup rc = plan_rootless_cgroups(lx.cgroups_path, c.o.id);
  c.ctx.fs.cgroups = std::move(rc.plan);
  c.rootless_notes[kNoteCgroup] = rc.note;
  return check_rootless_limits(c.ctx.fs.cgroups, rc.note, res);
}

// The ChildContext: the spec's plan, its seccomp filter, the confinement
// and the cgroups.
Status plan(Creation& c) {
  TRY(c.ctx, plan_child(c.spec, c.pin));
  if (c.ctx.fs.host_mounts) c.ctx.fs.host_root = c.dir.file("rootfs");
  for (const std::string& n : c.ctx.proc.attrs.notes) log::debug(n);
  ChildContext& ctx = c.ctx;
  const oci::Linux& lx = c.lx();
  TRYV(compile_config_seccomp(lx, ctx));
  if (c.policy) TRYV(lock_exec_to_command(*c.policy, c.spec, c.rootfs));
  if (c.policy) TRYV(plan_confinement(*c.policy, c.rootfs, lx, ctx));
  if (!c.lx().net_devices.empty()) {
    TRYV(check_net_device_names(c.lx().net_devices));
    if (!oci::has_namespace(c.spec, "network"))
      return Error::msg("linux.netDevices: needs a network namespace of the container's own");
    if (rootless())
      return Error::msg(
          "linux.netDevices: moving a host interface needs root (CAP_NET_ADMIN on the host)");
    TRYV(check_net_devices_exist(c.lx().net_devices));
  }
  if (c.policy && c.egress_caps && ctx.confine.landlock_abi >= 1) {
    ctx.confine.landlock_no_symlinks = true;  // fs events (docs/events.md)
    ctx.confine.layers.push_back("landlock:no-symlinks");
  }
  if (rootless()) {
    // The child stays dumpable until an ordinary user wrote its maps
    // (id_maps.hpp). In a user namespace already (rootless podman runs us
    // in its own) there is no mknod: device nodes are bound from the host.
    ctx.ns.maps_need_dumpable = true;
    if (in_user_namespace()) ctx.ns.userns = true;
  }
  return plan_cgroup(c);
}

// The state dir, locked, with the config, the resolver's resolv.conf and
// the exec fifo. From here a failed create removes it (CreateCleanup).
Status make_state_dir(Creation& c) {
  ContainerDir& dir = c.dir;
  TRYV(dir.create());
  c.cleanup.dir = &dir;
  c.cleanup.armed = true;
  TRY(c.lock, dir.lock());
  TRYV(write_file_atomic(dir.file("config.json"), c.config_text, 0600, Sync::none));
  if (c.egress_caps) TRYV(egress::write_resolv_conf(*c.egress_caps, dir.path()));
  // The init opens the fifo after it dropped to the container's user (and
  // maybe into a user namespace): world-writable, owned by container root,
  // as runc makes it. Only writers unblock `start`; nothing else is in it.
  if (::mkfifo(dir.file("exec.fifo").c_str(), 0622) < 0)
    return Error::sys(errno, "mkfifo " + dir.file("exec.fifo"));
  ::chmod(dir.file("exec.fifo").c_str(), 0622);
  uid_t ru = 0;
  gid_t rg = 0;
  for (auto& m : c.lx().uid_mappings)
    if (m.container_id == 0) ru = m.host_id;
  for (auto& m : c.lx().gid_mappings)
    if (m.container_id == 0) rg = m.host_id;
  if ((ru || rg) && ::chown(dir.file("exec.fifo").c_str(), ru, rg) < 0)
    return Error::sys(errno, "chown " + dir.file("exec.fifo"));
  return {};
}

// The namespaces the config names by path, opened for the child's setns.
Status open_joins(Creation& c) {
  // A network policy (capabilities, or a restricted profile) is never
  // enforced in the host's namespace, however the config names it: checked
  // on the very fd the child joins.
  const bool netns_enforced = c.policy && c.policy->network != capability::NetworkPolicy::open;
  for (auto& j : c.ctx.ns.joins) {
    int fd = ::open(j.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error::sys(errno, "open namespace " + j.path);
    TRY(UniqueFd h, high(UniqueFd(fd), c.min_fd, j.path));
    if (netns_enforced && j.clone_flag == CLONE_NEWNET)
      TRYV(egress::refuse_host_netns(h.get(), j.path));
    // Nor does a confined container join the host's pid, mount, ipc, uts
    // or cgroup namespace (red team, issue 21: a pid namespace path of a
    // host process showed every host process's command line).
    if (c.policy && c.policy->lockdown) TRYV(refuse_host_namespace(h.get(), j.clone_flag, j.path));
    j.fd = h.get();
    c.join_fds.push_back(std::move(h));
  }
  return {};
}

// Fds the child inherits. All above 2 + preserve_fds.
Status open_child_fds(Creation& c) {
  c.min_fd = 3 + c.pin.preserve_fds;
  const int min_fd = c.min_fd;
  TRY(c.state_fd, high(UniqueFd(::open(c.dir.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)),
                       min_fd, "state dir"));
  TRY(c.proc_fd,
      high(UniqueFd(::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC)), min_fd, "/proc"));
  struct statfs sfs;
  if (!c.proc_fd || ::fstatfs(c.proc_fd.get(), &sfs) < 0 || sfs.f_type != kProcSuperMagic)
    return Error::msg("/proc is not a procfs mount");
  if (!c.o.console_socket.empty()) {
    TRY(c.console, console_above(c.o.console_socket, min_fd));
  }
  ChildContext& ctx = c.ctx;
  if (ctx.confine.has_seccomp && ctx.confine.seccomp.needs_listener) {
    TRY(UniqueFd l, connect_unix(ctx.confine.seccomp.listener_path, "seccomp listener"));
    TRY(c.listener, high(std::move(l), min_fd, "seccomp listener"));
  }
  TRYV(open_joins(c));
  for (MountOp& op : ctx.fs.mounts) {
    if (!op.idmapped) continue;
    TRY(UniqueFd t, open_idmapped_tree(op));
    TRY(t, high(std::move(t), min_fd, "idmapped mount"));
    op.tree_fd = t.get();
    c.idmap_trees.push_back(std::move(t));
  }
  TRY(c.tramp, trampoline_above(min_fd));
  ctx.fds.trampoline_fd = c.tramp.get();
  TRY(SyncPair sp, sync_pair(min_fd));
  c.sync_parent = std::move(sp.parent);
  c.sync_child = std::move(sp.child);
  ctx.fds.sync_fd = c.sync_child.get();
  ctx.fds.state_dir_fd = c.state_fd.get();
  ctx.fds.proc_fd = c.proc_fd.get();
  ctx.fds.lock_fd = c.lock.get();
  ctx.fds.console_sock_fd = c.console.get();
  ctx.fds.seccomp_listener_sock = c.listener.get();
  return {};
}

// A pack's own PID 1 (child.hpp, docs/events.md "Exit code 3 under an
// engine"), so that the container's own exit status is 3 on a violation.
// Only as the init of a pid namespace of its own (the kernel then keeps
// signals without a handler from it, and orphans come to it); not with a
// terminal (the init would lead the tty's session) or a config filter
// that loads before the fifo (it may refuse the fork).
Status plan_own_init(Creation& c) {
  ChildContext& ctx = c.ctx;
  if (!c.spec.annotations.count(std::string(capability::kAnnotationCapabilities)) ||
      !(ctx.ns.new_ns_flags & CLONE_NEWPID) || c.spec.process->terminal ||
      (ctx.confine.has_seccomp && ctx.confine.seccomp.needs_listener) || switches::own_init_off())
    return {};
  std::string ev = c.dir.file(violations::kEventsFile);
  TRY(c.events_fd,
      high(UniqueFd(::open(ev.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0600)), c.min_fd, ev));
  ctx.init.own_init = true;
  ctx.init.init_dns_barrier = c.egress_caps && egress::wants_resolver(*c.egress_caps);
  ctx.fds.events_fd = c.events_fd.get();
  return {};
}

Status make_cgroups(Creation& c) {
  if (c.ctx.fs.cgroups.hierarchies.empty()) return {};  // rootless, none delegated
  TRYV(create_cgroups(c.ctx.fs.cgroups));
  c.cleanup.cgroup_dirs = c.ctx.fs.cgroups.dirs();
  // Rootless: the device rules are not attached (docs/rootless.md).
  if (c.lx().resources)
    TRYV(apply_resources(c.ctx.fs.cgroups, *c.lx().resources, /*device_filter=*/!rootless()));
  return {};
}

// fs.read / fs.write events (fswatch.hpp) for a pack's reporter: filed
// under the container's cgroup2 id before anything runs in it.
Status watch_fs_events(Creation& c) {
  ChildContext& ctx = c.ctx;
  if (!(ctx.confine.has_lockdown && ctx.confine.lockdown.needs_listener && c.egress_caps &&
        !switches::fs_events_off()))
    return {};
  std::string v2;
  for (auto& h : ctx.fs.cgroups.hierarchies)
    if (h.v2) v2 = h.dir;
  auto w = v2.empty() ? Result<FsWatch>(Error::msg("no cgroup2 directory")) : fswatch_watch(v2);
  if (w.ok()) {
    c.fsw = std::move(*w);
    c.cleanup.fs_cgroup = c.fsw.cgroup;
    TRY(c.fsw.ring, high(std::move(c.fsw.ring), c.min_fd, "fs watch ring"));
    c.fs_view = fs_view_of(*c.egress_caps, c.rootfs, c.spec);
    ctx.confine.layers.push_back("fs-events");
    ctx.init.fs_arm_marker = true;
    ctx.init.init_reporter_barrier = ctx.init.own_init;
  } else if (v2.empty() || fswatch_unsupported(w.error())) {
    // What this kernel or caller cannot do (no CAP_BPF, BTF, bpffs or
    // cgroup2): the mounts still enforce, only these events are missing.
    // As a user the reason is always CAP_BPF (over the initial user
    // namespace), whatever failed first (no cgroup2 directory, bpf(2)).
    log::warn("fs.read/fs.write violation events are off for " + c.o.id + ": " +
              (rootless() ? std::string("no CAP_BPF (the BPF program needs it; an ordinary user "
                                        "has none); enforcement is unchanged (docs/rootless.md)")
                          : w.error().what()));
    if (rootless()) c.rootless_notes[kNoteFsEvents] = "off (no CAP_BPF)";
  } else {
    return Error(w.error().err(), "fs.read/fs.write violation events: " + w.error().message());
  }
  return {};
}

// Violation reporter (reporter.hpp): started before clone; the child sends
// it the notifying lock-down's listener fd over lockdown_listener_sock.
// A foreground run serves it on a thread of its own (started in finish(),
// once create has cloned everything); COMET_REPORTER=process keeps the
// process (the test that kills the reporter alone).
Status start_pack_reporter(Creation& c) {
  ChildContext& ctx = c.ctx;
  if (!(ctx.confine.has_lockdown && ctx.confine.lockdown.needs_listener)) return {};
  ReporterRequest rr = lockdown_reporter_request(c.o.id, c.spec.annotations, c.dir.path(),
                                                 *c.policy, ctx, c.tramp.get());
  rr.deliver = c.events_to;
  rr.fs_ring = c.fsw.ring.get();
  rr.fs_cgroup = c.fsw.cgroup;
  rr.fs_view = std::move(c.fs_view);
  bool in_process = c.keep_child && !switches::reporter_process();
  TRY(c.reporter, start_reporter(rr, c.min_fd, in_process));
  ctx.fds.lockdown_listener_sock = c.reporter.child_sock.get();
  if (!rr.deliver.empty()) {
    TRYV(write_file_atomic(c.dir.file("events.deliver"), rr.deliver, 0600, Sync::none));
  }
  return {};
}

// The first state record, before clone: a killed create can be cleaned.
Status save_record(Creation& c) {
  ContainerRecord& rec = c.rec;
  rec.id = c.o.id;
  rec.bundle = c.bundle;
  rec.rootfs = c.rootfs;
  rec.created = rfc3339_now();
  rec.owner = container_owner();
  rec.annotations = c.spec.annotations;
  rec.cgroup_dirs = c.ctx.fs.cgroups.dirs();
  rec.freezer_dir = c.ctx.fs.cgroups.freezer_dir;
  rec.freezer_v2 = c.ctx.fs.cgroups.freezer_v2;
  rec.terminal = c.spec.process->terminal;
  rec.layers = c.ctx.confine.layers;
  rec.rootless = c.rootless_notes;
  rec.reporter_pid = c.reporter.pid;  // stopped at delete (ops.cpp)
  rec.reporter_start = c.reporter.start_time;
  TRYV(c.dir.save(rec));
  fault_point("create-after-record");
  return {};
}

Status clone_child(Creation& c) {
  const ChildContext& ctx = c.ctx;
  if (c.keep_child && ctx.ns.slow_path) ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  int clone_flags = ctx.ns.slow_path ? 0 : (ctx.ns.new_ns_flags & ~CLONE_NEWCGROUP);
  // Born in its cgroup2 directory (CLONE_INTO_CGROUP): no migration, so no
  // RCU grace period. v1 hierarchies still need a cgroup.procs write.
  for (auto& h : ctx.fs.cgroups.hierarchies)
    if (h.v2) c.v2dir.reset(::open(h.dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  auto pid = clone_into(clone_flags, c.v2dir.get());
  // EACCES into a cgroup is the cgroup's; the rest is the user namespace's.
  if (!pid.ok() && rootless() && (clone_flags & CLONE_NEWUSER) &&
      !(pid.error().err() == EACCES && c.v2dir.valid()))
    return refusal(userns_refusal(pid.error().err()));
  TRY(c.pid, std::move(pid));
  if (c.pid == 0) {
    c.sync_parent.reset();
    child_main(ctx);
  }
  c.sync_child.reset();
  c.cleanup.stage1 = ChildGuard(static_cast<pid_t>(c.pid));
  log::debug("create " + c.o.id + ": cloned " + std::to_string(c.pid) +
             (ctx.ns.slow_path ? " (two-stage)" : ""));
  fault_point("create-after-clone");
  return {};
}

// sync 1: the id maps of a new user namespace.
Status write_maps(Creation& c) {
  const ChildContext& ctx = c.ctx;
  if (!(ctx.ns.new_ns_flags & CLONE_NEWUSER)) return {};
  if (ctx.ns.slow_path) {
    auto m = expect_msg(c.sfd(), MsgType::kNeedMaps);
    if (!m.ok()) {
      // Two-stage, the child unshares the user namespace itself
      // (child.cpp enter_namespaces): the host's refusal, said as at clone.
      const Error e = c.failed(m.error());
      const int err = e.err();
      if (rootless() && e.message() == "unshare namespaces" &&
          (err == EPERM || err == EACCES || err == ENOSPC))
        return refusal(userns_refusal(err));
      return e;
    }
  }
  const int pid = static_cast<int>(c.pid);
  TRYV(write_id_maps(c.proc_fd.get(), pid, c.lx().uid_mappings, c.lx().gid_mappings));
  if (ctx.ns.slow_path && send_msg(c.sfd(), MsgType::kMapsDone))
    return c.failed(Error::msg("container init died"));
  return {};
}

// The v1 cgroups (cgroup2 was joined at birth) and oom_score_adj, then
// sync 2: kGo.
Status place_and_go(Creation& c) {
  TRYV(join_cgroups(c.ctx.fs.cgroups, static_cast<int>(c.pid), /*skip_v2=*/c.v2dir.valid()));
  if (c.spec.process->oom_score_adj) {
    std::string rel = std::to_string(c.pid) + "/oom_score_adj";
    UniqueFd fd(::openat(c.proc_fd.get(), rel.c_str(), O_WRONLY | O_CLOEXEC));
    std::string v = std::to_string(*c.spec.process->oom_score_adj);
    if (!fd || ::write(fd.get(), v.data(), v.size()) < 0)
      return Error::sys(errno, "set oom_score_adj to " + v);
  }
  /* sync 2 */
  if (int r =
          fault_fail("sync-econnreset", ECONNRESET) ? ECONNRESET : send_msg(c.sfd(), MsgType::kGo))
    return c.failed(Error::sys(r, "sync with container init"));
  return {};
}

// linux.netDevices (net_devices.hpp): into the init's netns, which is
// pinned in the state dir (a bind of its ns/net, unless the config joins
// one by path) so that it outlives the init until delete moves them back:
// a virtual interface (veth, dummy) would die with its namespace.
Status move_net_devices(Creation& c) {
  const auto& devs = c.lx().net_devices;
  if (devs.empty()) return {};
  std::string path;
  for (const oci::Namespace& n : c.lx().namespaces)
    if (n.type == "network") path = n.path;
  if (path.empty()) {
    path = c.dir.file("netns");
    UniqueFd f(::open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400));
    if (!f) return Error::sys(errno, "create " + path);
    const std::string src = "/proc/" + std::to_string(c.init_pid) + "/ns/net";
    c.rec.cleanup_paths.push_back(path);
    c.cleanup.paths.push_back(path);
    if (::mount(src.c_str(), path.c_str(), nullptr, MS_BIND, nullptr) < 0)
      return Error::sys(errno, "pin the container's netns: bind " + src + " on " + path);
  }
  c.rec.net_devices_netns = path;
  c.cleanup.netns = path;
  UniqueFd ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) return Error::sys(errno, "open " + path);
  for (const auto& [host, d] : devs) {
    const std::string inside = d.name.empty() ? host : d.name;
    // Recorded once moved: a failed move must not make delete move out an
    // interface of the same name that the namespace had of its own.
    TRYV(move_link(host, ns.get(), inside));
    c.rec.net_devices[inside] = host;
    c.cleanup.net_devices[inside] = host;
    TRYV(c.dir.save(c.rec));
  }
  return {};
}

// The init: stage 1 itself, or (two-stage, pid or time namespace) the
// process it forked, named by kInitPid. Recorded, with its start time.
Status learn_init(Creation& c) {
  const ChildContext& ctx = c.ctx;
  c.init_pid = static_cast<int>(c.pid);
  if (ctx.ns.slow_path && (ctx.ns.new_ns_flags & (CLONE_NEWPID | CLONE_NEWTIME) ||
                           std::any_of(ctx.ns.joins.begin(), ctx.ns.joins.end(),
                                       [](auto& j) { return j.clone_flag == CLONE_NEWPID; }))) {
    auto m = expect_msg(c.sfd(), MsgType::kInitPid);
    if (!m.ok()) return c.failed(m.error());
    c.init_pid = m->value;
    PidFd::open(c.init_pid, &c.cleanup.init);
    c.cleanup.stage1.wait();
  } else {
    PidFd::open(c.init_pid, &c.cleanup.init);
  }
  c.rec.pid = c.init_pid;
  c.rec.start_time = process_start_time(c.init_pid);
  TRYV(c.dir.save(c.rec));
  return {};
}

// Egress: the ruleset into the container's netns, then the network helper
// (a netns we made), then the resolver; each recorded before the next starts, so
// delete --force finds them. Any failure fails the create (fail closed).
Status setup_egress(Creation& c) {
  if (!c.egress_caps) return {};
  // As an ordinary user the network helper opens /dev/net/tun with the
  // user's own rights (its owner, root, is not mapped in our namespace).
  // udev makes it 0666; a host without udev may leave the kernel's 0600.
  const auto& eg = c.egress_caps->egress;
  if (rootless() && c.o.net_helper && c.egress_netns.empty() && (eg.any || !eg.entries.empty()) &&
      ::access("/dev/net/tun", R_OK | W_OK) != 0)
    return refusal("egress: the network helper cannot open /dev/net/tun as this user (" +
                   errno_name(errno) +
                   "); udev's default mode is 0666: as root, chmod 0666 /dev/net/tun "
                   "(docs/rootless.md)");
  c.cleanup.egress = &c.egress_handles;
  egress::SetupRequest er;
  er.id = c.o.id;
  er.state_dir = c.dir.path();
  er.caps = *c.egress_caps;
  er.engine_netns = c.egress_netns;
  er.net_helper = c.o.net_helper;
  er.init_pid = c.init_pid;
  er.upstreams = c.egress_upstreams;
  report_egress_violations(er, c.dir.path(), c.spec.annotations, c.o.id, c.init_pid);
  // The resolver parses the agent's queries: once set up it keeps only
  // CAP_NET_ADMIN, a read-only tree but its state dir, and a seccomp deny
  // list (helper_confine.hpp; docs/egress.md).
  er.confine_resolver = [state_dir = c.dir.path(), deliver = c.events_to](int companion) -> Status {
    TRYV(violations::pin_delivery_target(deliver));
    HelperConfinement hc;
    hc.writable = {state_dir};
    hc.keep_caps = 1ULL << CAP_NET_ADMIN;
    hc.signal_pid = companion;
    hc.allow_unix = deliver.rfind("unix:", 0) == 0;
    return confine_helper(hc);
  };
  auto record = [&c](const egress::Handles& h) {
    ContainerRecord& rec = c.rec;
    rec.egress_resolver_pid = h.resolver_pid;
    rec.egress_resolver_start = h.resolver_start;
    rec.egress_net_pid = h.net_pid;
    rec.egress_net_start = h.net_start;
    rec.egress_netns = h.netns_path;
    rec.egress_table = h.table;
    return c.dir.save(rec);
  };
  TRYV(egress::setup(er, c.egress_handles, record));
  fault_point("create-after-nft");
  return {};
}

// The prestart and createRuntime hooks, in the runtime's namespaces, with
// the state the createContainer hooks will read too; then kHooksDone.
Status run_runtime_hooks(Creation& c) {
  std::string hs =
      hook_state(c.o.id, c.init_pid, c.bundle, c.spec.annotations, oci::ContainerStatus::kCreating);
  TRYV(write_file_atomic(c.dir.file("hookstate.json"), hs, 0600, Sync::none));
  if (c.spec.hooks) {
    TRYV(run_hooks(c.spec.hooks->prestart, "prestart", hs));
    TRYV(run_hooks(c.spec.hooks->create_runtime, "createRuntime", hs));
  }
  if (int r = send_msg(c.sfd(), MsgType::kHooksDone))
    return c.failed(Error::sys(r, "sync with container init"));
  return {};
}

// The init is ready: recorded as created, the pid file written, the
// reporter thread started; the cleanup disarmed.
Status finish(Creation& c) {
  log::debug("create " + c.o.id + ": init " + std::to_string(c.init_pid) + " ready");
  fault_point("create-before-ready");
  c.rec.create_done = true;
  TRYV(c.dir.save(c.rec));
  if (!c.o.pid_file.empty()) {
    std::string pf = c.o.pid_file;
    TRYV(write_file_atomic(pf, std::to_string(c.init_pid), 0644, Sync::none));
  }
  // Nothing more is cloned from here (reporter.hpp).
  TRYV(start_reporter_thread(c.reporter));
  c.cleanup.armed = false;
  c.cleanup.stage1.release();
  return {};
}

}  // namespace

ReporterRequest lockdown_reporter_request(const std::string& id,
                                          const std::map<std::string, std::string>& annotations,
                                          const std::string& state_dir, const capability::Policy& p,
                                          const ChildContext& ctx, int trampoline_fd) {
  ReporterRequest rr;
  rr.container = id;
  if (auto a = annotations.find("org.soyaos.comet.pack"); a != annotations.end())
    rr.pack = a->second;
  rr.state_dir = state_dir;
  rr.lockdown = lockdown_options(p, false);
  rr.unix_allow = p.unix_allow;
  rr.exec_allow = ctx.confine.exec_allow;
  if (struct stat ts; ::fstat(trampoline_fd, &ts) == 0) {
    rr.trampoline_dev = ts.st_dev;
    rr.trampoline_ino = ts.st_ino;
  }
  return rr;
}

Result<std::string> resolve_dir(const std::string& p, const std::string& what) {
  char buf[PATH_MAX];
  if (!::realpath(p.c_str(), buf)) return Error::sys(errno, what + " " + p);
  struct stat st;
  if (::stat(buf, &st) < 0 || !S_ISDIR(st.st_mode)) return Error::sys(ENOTDIR, what + " " + p);
  return std::string(buf);
}

// The parent's side of sync.hpp, as a checklist. Every phase fails the
// create with nothing left behind: Creation's members undo what is made.
Result<int> create_container(const Globals& g, const CreateOptions& o, bool keep_child) {
  Creation c(g, o, keep_child);
  TRYV(load_config(c));
  TRYV(prepare_egress(c));
  TRYV(plan(c));
  TRYV(make_state_dir(c));
  fault_point("create-after-state-dir");
  TRYV(open_child_fds(c));
  // The pack's extensions: its own init, (the cgroups,) fs events, the
  // violation reporter.
  TRYV(plan_own_init(c));
  c.events_to = events_target(c.spec.annotations);
  TRYV(make_cgroups(c));
  fault_point("create-after-cgroups");
  TRYV(watch_fs_events(c));
  fault_point("create-after-fswatch");
  TRYV(start_pack_reporter(c));
  fault_point("create-after-reporter");
  TRYV(save_record(c));
  TRYV(clone_child(c));
  /* sync 1 */
  TRYV(write_maps(c));
  TRYV(place_and_go(c));  // sync 2
  TRYV(learn_init(c));
  TRYV(move_net_devices(c));
  /* sync 3: hooks in the runtime namespace */
  if (auto m = expect_msg(c.sfd(), MsgType::kMountsDone); !m.ok()) return c.failed(m.error());
  fault_point("create-after-mounts");
  TRYV(setup_egress(c));
  TRYV(run_runtime_hooks(c));
  /* sync 4 */
  if (auto m = expect_msg(c.sfd(), MsgType::kReady); !m.ok()) return c.failed(m.error());
  TRYV(finish(c));
  return c.init_pid;
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

// clone3(2) with a function run on a stack of its own, as posix_spawn's
// clone does (glibc 2.36 has no clone3 wrapper that takes one): the child
// calls FN(ARG) on the stack ARGS->stack and exits with its value. x86-64:
// the child starts with the parent's registers but rax, on the new stack
// (16-byte aligned at its top).
extern "C" long comet_clone3_fn(struct clone_args* args, size_t size, int (*fn)(void*), void* arg);
__asm__(R"(
  .text
  .globl comet_clone3_fn
  .type comet_clone3_fn,@function
comet_clone3_fn:
  mov %rcx, %r8
  mov $435, %eax
  syscall
  test %rax, %rax
  jnz 1f
  xor %ebp, %ebp
  mov %r8, %rdi
  call *%rdx
  mov %eax, %edi
  mov $60, %eax
  syscall
  hlt
1:
  ret
  .size comet_clone3_fn, .-comet_clone3_fn
)");

Result<long> clone_fn_into(std::uint64_t flags, int cgroup_fd, void* stack, size_t stack_size,
                           int (*fn)(void*), void* arg, pid_t* parent_tid) {
  struct clone_args args = {};
  args.flags =
      flags | (cgroup_fd >= 0 ? CLONE_INTO_CGROUP : 0) | (parent_tid ? CLONE_PARENT_SETTID : 0);
  args.exit_signal = SIGCHLD;
  args.stack = reinterpret_cast<std::uint64_t>(stack);
  args.stack_size = stack_size;
  if (parent_tid) args.parent_tid = reinterpret_cast<std::uint64_t>(parent_tid);
  if (cgroup_fd >= 0) args.cgroup = static_cast<uint64_t>(cgroup_fd);
  long pid =
      fault_fail("clone3-eagain", EAGAIN) ? -EAGAIN : comet_clone3_fn(&args, sizeof args, fn, arg);
  if (pid < 0) return Error::sys(static_cast<int>(-pid), "clone3");
  return pid;
}

}  // namespace comet::runtime
