// `sandbox`'s direct launch path: the diagram is in sandbox_launch.hpp.
#include "comet/sandbox/sandbox_launch.hpp"

#include "sandbox_parts.hpp"
#include "sandbox_placeholders.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <system_error>
#include <thread>
#include <utility>

#include "comet/base/fault.hpp"
#include "comet/base/random.hpp"
#include "comet/base/sanitizer.hpp"
#include "comet/base/switches.hpp"
#include "comet/base/sys.hpp"
#include "comet/capability/policy.hpp"
#include "comet/host/cgroups.hpp"
#include "comet/host/log.hpp"
#include "comet/lifecycle/child.hpp"
#include "comet/lifecycle/confine.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/lifecycle/plan.hpp"
#include "comet/lifecycle/sync.hpp"
#include "comet/lifecycle/trampoline.hpp"
#include "comet/reporting/create_rule.hpp"
#include "comet/reporting/reporter.hpp"
#include "comet/reporting/violations.hpp"

namespace comet::runtime {
namespace {

using namespace sandbox_parts;

// ---- the guardian -------------------------------------------------------
// Outlives a SIGKILLed runtime to remove what it made on the host. A
// clone(CLONE_VM) of ours (no page tables copied, no copy-on-write faults
// for either side, ~0.1 ms) on a stack of its own, out of the caller's
// session, with every signal blocked and no fd but its pipe. It makes raw
// syscalls only (no libc: it shares our TLS, so not even errno), on paths
// written before the clone; the runtime fills in each placeholder's
// identity as it makes it. "d" on its socket: the runtime cleaned up
// itself. The "d" carries fds of the placeholder directories just removed:
// on this host's ext4 (-o discard) the last close of a removed directory
// frees its block with a synchronous discard, ~3.6 ms each; held by the
// guardian, that happens at its exit, after the runtime's. The names are
// gone before the runtime exits: only the inodes' release is deferred.

// (sandbox_guardian.cpp: the guardian itself; sandbox_parts.hpp: its block)

class Guardian {
 public:
  Guardian() = default;
  Guardian(const Guardian&) = delete;
  Guardian& operator=(const Guardian&) = delete;
  ~Guardian() { done(); }

  // Paths first (cgroups, then placeholders parents first), then start().
  void add(GuardEntry::Kind k, const std::string& path, std::uint64_t size = 0) {
    pending_.push_back({k, path, size});
  }
  void add_made(GuardEntry::Kind k, const std::string& path, std::uint64_t size, dev_t dev,
                ino_t ino) {
    preset_.push_back({pending_.size(), dev, ino});
    pending_.push_back({k, path, size});
  }
  void locks(const PlaceholderRegistry& r);
  bool empty() const { return pending_.empty(); }

  Status start() {
    size_t n = pending_.size();
    // The guardian appends to a path in a PATH_MAX+32 buffer of its stack
    // ("/cgroup.kill"): none longer than PATH_MAX - 1.
    size_t names = 0;
    for (const std::string& l : lock_paths_) names += l.size() + 1;
    for (const Pending& p : pending_) {
      if (p.path.size() >= PATH_MAX) return Error::msg("sandbox: path too long: " + p.path);
      names += p.path.size() + 1;
    }
    const size_t entries = sizeof(GuardBlock) + n * sizeof(GuardEntry);
    size_ = (entries + names + 15) / 16 * 16 + kStack;
    void* mem = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return Error::sys(errno, "sandbox: map the guardian");
    block_ = static_cast<GuardBlock*>(mem);
    block_->n = static_cast<int>(n);
    block_->mutex_fd = mutex_fd_;
    block_->users_fd = users_fd_;
    char* next = static_cast<char*>(mem) + entries;
    auto name = [&next](const std::string& s) {
      const char* at = next;
      std::memcpy(next, s.c_str(), s.size() + 1);
      next += s.size() + 1;
      return at;
    };
    block_->registry_path = name(lock_paths_[0]);
    block_->users_path = name(lock_paths_[1]);
    block_->registry_dir = name(lock_paths_[2]);
    for (size_t i = 0; i < n; i++) {
      GuardEntry& e = block_->e[i];
      e.kind = pending_[i].kind;
      e.size = pending_[i].size;
      e.path = name(pending_[i].path);
    }
    for (const auto& pr : preset_) {
      block_->e[pr.index].dev = pr.dev;
      block_->e[pr.index].ino = pr.ino;
    }
    int p[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) < 0)
      return Error::sys(errno, "sandbox: socketpair");
    UniqueFd rd(p[0]);
    wr_.reset(p[1]);
    block_->rd = rd.get();
    char* stack_top = static_cast<char*>(mem) + size_;
    pid_ = ::clone(guardian_main, stack_top, CLONE_VM | SIGCHLD, block_);
    if (pid_ < 0) return Error::sys(errno, "sandbox: start the guardian");
    return ok();
  }

  // The placeholder at index i (in add() order) is about to be made, or
  // was not after all.
  void making(size_t i, bool yes = true) {
    if (block_) __atomic_store_n(&block_->e[i].pending, yes ? 1u : 0u, __ATOMIC_RELEASE);
  }

  // The placeholder at index i (in add() order) was made: its identity.
  void made(size_t i, const struct stat& st) {
    if (!block_) return;
    block_->e[i].dev = st.st_dev;
    __atomic_store_n(&block_->e[i].ino, static_cast<std::uint64_t>(st.st_ino), __ATOMIC_RELEASE);
  }

  // We cleaned up ourselves: the guardian exits at once, closing KEEP
  // (removed directories) as it goes. Not waited for when we are about to
  // exit too (WAIT false): the "d" is queued before the EOF our exit
  // makes, and whoever inherits the guardian reaps it (~1 ms of a loaded
  // host's scheduling saved, and the address space it shares is torn down
  // on its exit, not ours).
  void done(bool wait = true, const std::vector<UniqueFd>& keep = {}) {
    if (pid_ <= 0) return;
    char d = 'd';
    struct iovec iov = {&d, 1};
    alignas(struct cmsghdr) char buf[CMSG_SPACE(sizeof(int) * kGuardFds)] = {};
    struct msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    const size_t nfd = std::min(keep.size(), static_cast<size_t>(kGuardFds));
    if (nfd) {
      msg.msg_control = buf;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfd);
      struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * nfd);
      for (size_t i = 0; i < nfd; i++) {
        const int fd = keep[i].get();
        std::memcpy(CMSG_DATA(c) + i * sizeof(int), &fd, sizeof fd);
      }
    }
    if (::sendmsg(wr_.get(), &msg, MSG_NOSIGNAL) < 0 && nfd)
      (void)!::send(wr_.get(), &d, 1, MSG_NOSIGNAL);  // without the fds: we close them
    wr_.reset();
    if (!wait) {
      pid_ = -1;
      block_ = nullptr;  // its stack: it may still be on it
      return;
    }
    while (::waitpid(pid_, nullptr, __WALL) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    ::munmap(block_, size_);  // its stack too: it has exited
    block_ = nullptr;
  }

  int write_fd() const { return wr_.get(); }

 private:
  static constexpr size_t kStack = 64 * 1024;
  struct Pending {
    GuardEntry::Kind kind;
    std::string path;
    std::uint64_t size;
  };
  std::vector<Pending> pending_;
  struct Preset {
    size_t index;
    dev_t dev;
    ino_t ino;
  };
  std::vector<Preset> preset_;
  int mutex_fd_ = -1, users_fd_ = -1;
  std::string lock_paths_[3];
  GuardBlock* block_ = nullptr;
  size_t size_ = 0;
  UniqueFd wr_;
  pid_t pid_ = -1;
};

void Guardian::locks(const PlaceholderRegistry& r) {
  mutex_fd_ = r.mutex_fd();
  users_fd_ = r.users_fd();
  lock_paths_[0] = r.registry_path();
  lock_paths_[1] = r.users_path();
  lock_paths_[2] = r.dir();
}

struct LaunchCleanup {
  std::vector<Made> made;             // placeholders, parents first (ours and adopted)
  std::vector<std::string> writable;  // the command's writable trees (remove_placeholder)
  PlaceholderRegistry* registry = nullptr;
  std::vector<std::string> cgroups;  // created
  pid_t init = -1;                   // our child, killed and reaped on failure
  Guardian* guardian = nullptr;
  std::uint64_t fs_cgroup = 0;         // watched (fswatch.hpp): unwatched again (idempotent)
  std::vector<UniqueFd> removed_dirs;  // for the guardian (remove_placeholder; the events tmpfs)
  bool exiting = false;                // run() is the last thing before _exit
  ~LaunchCleanup() { run(); }
  // Undoes it all, once.
  void run() {
    if (init > 0) {
      ::kill(init, SIGKILL);
      while (::waitpid(init, nullptr, __WALL) < 0 && errno == EINTR) {
      }
      init = -1;
    }
    if (fs_cgroup) fswatch_unwatch(std::exchange(fs_cgroup, 0));
    if (!cgroups.empty()) {
      if (Status st = destroy_cgroups(cgroups); !st.ok()) log::warn(st.error().what());
      cgroups.clear();
    }
    if (!registry || registry->last()) {
      // Children first (deepest paths first: adopted ones are in any order).
      std::stable_sort(made.begin(), made.end(), [](const Made& a, const Made& b) {
        return std::count(a.path.begin(), a.path.end(), '/') >
               std::count(b.path.begin(), b.path.end(), '/');
      });
      for (const Made& m : made)
        if (UniqueFd fd = remove_placeholder(m, writable)) removed_dirs.push_back(std::move(fd));
      if (registry) registry->finish();
    }
    if (registry) registry->unlock();
    registry = nullptr;
    made.clear();
    if (guardian) guardian->done(!exiting, removed_dirs);
    removed_dirs.clear();
    guardian = nullptr;
  }
};

// ---- the pieces of the launch -------------------------------------------

// The child inherits our netns anyway: a join of our own namespace (the
// open profiles') is dropped, which keeps the one-stage clone. Anything
// else to join is not a sandbox plan.
Status drop_own_netns_join(ChildContext& ctx, bool netns_enforced) {
  struct stat own;
  if (::stat("/proc/self/ns/net", &own) < 0) return Error::sys(errno, "stat /proc/self/ns/net");
  for (auto it = ctx.ns.joins.begin(); it != ctx.ns.joins.end();) {
    struct stat st;
    if (it->clone_flag != CLONE_NEWNET || ::stat(it->path.c_str(), &st) < 0 ||
        st.st_dev != own.st_dev || st.st_ino != own.st_ino)
      return Error::msg("sandbox: cannot join namespace " + it->path);
    if (netns_enforced)
      return Error::msg("sandbox: network namespace " + it->path +
                        " is the host's: a restricted network may not join it");
    it = ctx.ns.joins.erase(it);
  }
  ctx.ns.slow_path = ctx.ns.new_ns_flags & CLONE_NEWTIME;
  if (ctx.ns.slow_path) return Error::msg("sandbox: a time namespace is not supported");
  if (!(ctx.ns.new_ns_flags & CLONE_NEWNS))
    return Error::msg("sandbox: a mount namespace is required");
  return ok();
}

// The plan's resources need a cgroup only for a limit (pids, memory).
bool wants_cgroup(const oci::Linux& lx) {
  if (!lx.resources) return false;
  const auto& r = *lx.resources;
  return (r.pids && r.pids->limit > 0) || (r.memory && r.memory->limit);
}

// Fds 0-2 open, so no fd of ours lands there and crosses into the sandbox
// as its stdio.
void hold_stdio() {
  for (int fd = 0; fd < 3; fd++)
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      int n = ::open("/dev/null", O_RDWR);
      if (n >= 0 && n != fd) ::close(n);
    }
}

// SIGTSTP/SIGTTIN/SIGTTOU: the command's process group is an orphan in a
// session of its own (no controlling terminal), where the kernel discards
// them; so the runtime stops every process of the sandbox (SIGSTOP, the
// init first so it forwards nothing) and then itself; SIGCONT resumes them.
std::vector<pid_t> sandbox_tree(pid_t init) {
  std::vector<pid_t> out{init};
  for (size_t i = 0; i < out.size() && out.size() < 100000; i++) {
    std::string task = "/proc/" + std::to_string(out[i]) + "/task";
    DIR* d = ::opendir(task.c_str());
    if (!d) continue;
    while (struct dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      auto kids = read_file(task + "/" + e->d_name + "/children");
      if (!kids.ok()) continue;
      for (const auto& k : split(*kids, ' '))
        if (!k.empty() && k[0] != '\n') out.push_back(std::atoi(k.c_str()));
    }
    ::closedir(d);
  }
  return out;
}

// Waits for the init, forwarding signals; returns its wait status.
int supervise(pid_t init, int sigfd) {
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(init, &status, WNOHANG | __WALL);
    if (r == init) return status;
    if (r < 0 && errno != EINTR) return 0;
    struct signalfd_siginfo si;
    if (::read(sigfd, &si, sizeof si) != sizeof si) continue;
    const int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGCHLD) continue;
    if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
      for (pid_t p : sandbox_tree(init)) ::kill(p, SIGSTOP);
      ::kill(::getpid(), SIGSTOP);
      continue;  // SIGCONT comes next (from the shell's fg/bg)
    }
    if (sig == SIGCONT) {
      std::vector<pid_t> t = sandbox_tree(init);
      for (auto it = t.rbegin(); it != t.rend(); ++it) ::kill(*it, SIGCONT);
      continue;
    }
    ::kill(init, sig);  // the init forwards it to the command
  }
}

// One launch's state, in the order it is made (and undone in reverse on an
// error: the members are destroyed as the locals of one function were).
struct Launch {
  SandboxLaunch& l;
  PlaceholderRegistry registry;
  oci::Spec spec;
  std::optional<capability::Policy> policy;
  ChildContext ctx;
  const oci::Linux* lx = nullptr;
  Guardian guardian;
  LaunchCleanup cleanup;
  std::optional<CgroupPlan> cg;
  UniqueFd v2dir;
  std::string v2path;
  FsWatch fsw;
  UniqueFd tramp, proc_fd, sync_parent, sync_child;
  UniqueFd events_dir;
  std::string events_path;
  UniqueFd create_reporter, create_init;  // the git rule's pair (before the thread's user)
  ReporterHandle reporter;
  struct MaskRestore {
    bool armed = false;
    sigset_t old;
    ~MaskRestore() {
      if (armed) ::sigprocmask(SIG_SETMASK, &old, nullptr);
    }
  } restore;
  UniqueFd sigfd;
  IndexStamps index_before;              // the git rule's last look (check_git_index)
  std::vector<GitDirBefore> git_before;  // and at the history (check_git_history)
  struct timespec started = {};
  long pid = -1;
  bool thread_started = false;  // the reporter's (start_reporter_thread)

  explicit Launch(SandboxLaunch& launch) : l(launch) {}
  // Only a failed launch gets here (a run ends in _exit). A reporter thread
  // started for it is detached: it must end before we return, or the exit
  // that follows destroys what it is still using (CI run 26: ASan, a read
  // after free in the thread while main's exit ran). The child killed and
  // our ends of its sockets closed, it sees EOF and ends at once.
  ~Launch() {
    if (!thread_started) return;
    cleanup.run();
    reporter.child_sock.reset();
    create_reporter.reset();
    create_init.reset();
    sync_parent.reset();
    if (!wait_reporter_threads(3000))
      log::warn("sandbox: the violation reporter did not end after the failed start");
  }
};

// The workspace's placeholder lock first, then the plan under it: a
// placeholder another sandbox made is then known as one (adopted), and
// none is removed between this plan and these mounts.
Status lock_and_plan(Launch& x) {
  // The host's registry, not the state root's: two sandboxes of one
  // workspace share its placeholders whatever their --root (red team round
  // 8: with two roots, the first to end removed the other's placeholders
  // and with them its read-only mounts).
  // Only a profile without the git rule makes placeholders (its init
  // refuses a missing protected name otherwise): planned again under the
  // registry's mutex, so that another sandbox's are known as shared.
  if (x.l.plan) TRYV(x.l.plan(x.l));
  if (x.l.placeholders_shared) {
    (void)::mkdir(x.l.placeholder_root.c_str(), 0700);
    TRYV(x.registry.open(x.l.placeholder_root, x.l.workspace));
    if (x.l.plan) TRYV(x.l.plan(x.l));
  }
  hold_stdio();
  return {};
}

// The same derivation as create: the policy annotation tightens the
// config, the planner makes the child's context, the confinement layers
// (base filter, lock-down, Landlock) are planned from the policy.
Status plan_context(Launch& x) {
  static const oci::Linux empty_linux;
  x.spec = x.l.spec;
  TRY(x.policy, capability::policy_from_annotations(x.spec.annotations));
  if (!x.policy) return Error::msg("sandbox: the plan has no policy annotation");
  TRYV(capability::tighten(x.spec, *x.policy));
  if (!x.spec.process) return Error::msg("sandbox: the plan has no process");
  if (x.spec.process->terminal) return Error::msg("sandbox: process.terminal is not supported");
  PlanInputs pin{x.l.id, x.l.skeleton_dir, x.l.rootfs, false, false, 0};
  TRY(x.ctx, plan_child(x.spec, pin));
  x.lx = x.spec.linux_ ? &*x.spec.linux_ : &empty_linux;
  ChildContext& ctx = x.ctx;
  TRYV(compile_config_seccomp(*x.lx, ctx,
                              "sandbox: a seccomp listener in the plan is not supported"));
  TRYV(plan_confinement(*x.policy, x.l.rootfs, *x.lx, ctx));
  ctx.confine.landlock_stdio = true;  // `> /dev/stdout` to the caller's terminal or file
  TRYV(drop_own_netns_join(ctx, x.policy->network != capability::NetworkPolicy::open));
  ctx.fs.skeleton_dir = x.l.skeleton_dir;
  ctx.fs.skeleton_files = x.l.files;
  for (const auto& s : x.l.symlinks) ctx.fs.skeleton_links.emplace_back(s.name, s.target);
  ctx.confine.state_json = nlohmann::json({{"ociVersion", oci_version()},
                                           {"id", x.l.id},
                                           {"status", "creating"},
                                           {"annotations", x.spec.annotations}})
                               .dump();
  // Our own PID 1 (the trampoline's init): it forwards signals to the
  // command and exits with its status; the command is never PID 1.
  ctx.init.own_init = true;
  if (!(ctx.ns.new_ns_flags & CLONE_NEWPID))
    return Error::msg("sandbox: a pid namespace is required");
  if (x.l.rootless && x.spec.linux_) TRYV(plan_rootless(x.l, ctx, *x.spec.linux_));
  return {};
}

// The limits' cgroups and the placeholders, each known to the guardian
// before it is made (it removes them if we are killed).
Status make_host_state(Launch& x) {
  const oci::Linux& lx = *x.lx;
  if (wants_cgroup(lx)) {
    TRY(CgroupPlan p, plan_cgroups(lx.cgroups_path, x.l.id, &*lx.resources));
    keep_needed_v1(p, *lx.resources);
    x.cg = std::move(p);
    for (const auto& d : x.cg->dirs()) x.guardian.add(GuardEntry::kCgroup, d);
  }
  // Placeholders: shared with the workspace's other sandboxes (the
  // registry, declared before the cleanup that uses it), made under its
  // mutex. Every sandbox of the workspace is a user, placeholders of its
  // own or not: the last one out removes them all.
  const bool shared = x.registry.opened();
  if (shared) x.cleanup.registry = &x.registry;
  std::vector<Made> adopted = shared ? x.registry.entries() : std::vector<Made>{};
  for (const Made& m : adopted)
    x.guardian.add_made(m.dir ? GuardEntry::kDir : GuardEntry::kFile, m.path, m.content.size(),
                        m.dev, m.ino);
  if (shared) x.guardian.locks(x.registry);
  const auto steps = placeholder_steps(x.l.placeholders);
  const size_t first_step = (x.cg ? x.cg->dirs().size() : 0) + adopted.size();
  for (const Step& st : steps)
    x.guardian.add(st.dir ? GuardEntry::kDir : GuardEntry::kFile, st.path, st.content.size());
  if (!x.guardian.empty()) {
    TRYV(x.guardian.start());
    x.cleanup.guardian = &x.guardian;
  }
  x.cleanup.made = adopted;
  x.cleanup.writable = x.l.fs_view.writable;
  for (size_t i = 0; i < steps.size(); i++) {
    // The guardian knows it is being made, then what it is, before anything
    // slower (the registry) can leave a window for a SIGKILL.
    x.guardian.making(first_step + i);
    auto made = make_placeholder(steps[i], x.l.owner_uid, x.l.owner_gid);
    if (!made.ok()) {
      x.guardian.making(first_step + i, false);
      return made.error();
    }
    x.guardian.made(first_step + i, *made);
    Made m{steps[i].path, steps[i].dir, made->st_dev, made->st_ino, steps[i].content};
    if (shared) x.registry.add(m);
    x.cleanup.made.push_back(std::move(m));
  }
  if (shared) TRYV(x.registry.join());
  if (x.cg) {
    x.cleanup.cgroups = x.cg->dirs();
    TRYV(create_cgroups(*x.cg));
    TRYV(apply_resources(*x.cg, *lx.resources));
    x.ctx.fs.cgroups = *x.cg;
    for (auto& h : x.cg->hierarchies)
      if (h.v2) {
        x.v2path = h.dir;
        x.v2dir.reset(::open(h.dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      }
  }
  return {};
}

// fs.read / fs.write events: the refused writes to protected paths, the
// refused reads of denied ones (fswatch.hpp, sandbox mode).
Status watch_fs_events(Launch& x) {
  ChildContext& ctx = x.ctx;
  if (x.v2path.empty() || !ctx.confine.has_lockdown || !ctx.confine.lockdown.needs_listener ||
      switches::fs_events_off())
    return {};
  auto w = fswatch_watch(x.v2path);
  if (w.ok()) {
    x.fsw = std::move(*w);
    x.cleanup.fs_cgroup = x.fsw.cgroup;
    ctx.confine.layers.push_back("fs-events");
    ctx.init.fs_arm_marker = true;
    ctx.init.init_reporter_barrier = ctx.init.own_init;
  } else if (fswatch_unsupported(w.error())) {
    log::warn("sandbox: fs.read/fs.write violation events are off: " + w.error().what());
  } else {
    return Error(w.error().err(), "fs.read/fs.write violation events: " + w.error().message());
  }
  return {};
}

Status open_child_fds(Launch& x) {
  TRY(x.tramp, sealed_trampoline());
  x.ctx.fds.trampoline_fd = x.tramp.get();
  x.proc_fd.reset(::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC));
  x.ctx.fds.proc_fd = x.proc_fd.get();
  int sp[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
    return Error::sys(errno, "socketpair");
  x.sync_parent.reset(sp[0]);
  x.sync_child.reset(sp[1]);
  x.ctx.fds.sync_fd = x.sync_child.get();
  return {};
}

// The violation reporter, as create starts it (reporter.hpp), on a thread
// of ours; its events go to a detached tmpfs and --events.
Status prepare_reporter(Launch& x) {
  ChildContext& ctx = x.ctx;
  const capability::Policy& policy = *x.policy;
  if (ctx.confine.has_lockdown && ctx.confine.lockdown.needs_listener) {
    TRY(x.events_dir, detached_tmpfs());
    x.events_path = "/proc/self/fd/" + std::to_string(x.events_dir.get());
    ReporterRequest rr;
    rr.container = x.l.id;
    rr.state_dir = x.events_path;
    rr.deliver = x.l.events;
    rr.lockdown = lockdown_options(policy, false);
    rr.unix_allow = policy.unix_allow;
    rr.exec_allow = ctx.confine.exec_allow;
    rr.fs_ring = x.fsw.ring.get();
    rr.fs_cgroup = x.fsw.cgroup;
    rr.fs_view = x.l.fs_view;
    rr.fs_view.sandbox = true;
    rr.fs_view.refused = x.l.refused_names;
    if (struct stat ts; ::fstat(x.tramp.get(), &ts) == 0) {
      rr.trampoline_dev = ts.st_dev;
      rr.trampoline_ino = ts.st_ino;
    }
    if (policy.git_own) {
      // The git rule (create_rule.hpp): the init makes the calls the
      // reporter hands it over this pair.
      int cp[2];
      if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cp) < 0)
        return Error::sys(errno, "socketpair for the git rule");
      x.create_reporter.reset(cp[0]);
      x.create_init.reset(cp[1]);
      rr.create_sock = x.create_reporter.get();
      rr.first_umask = ctx.proc.umask >= 0 ? static_cast<unsigned>(ctx.proc.umask) : 022;
      ctx.fds.create_sock = x.create_init.get();
      ctx.init.git_own = *policy.git_own;
      // Not one above a writable tree (the global config's directory
      // while the file is missing can hold the workspace): the init
      // would refuse what the tree's own mount lets through.
      for (const auto& pr : x.l.fs_view.protect) {
        if (pr.empty() || pr[0] != '/' || pr == "/") continue;
        const bool above = std::any_of(x.l.fs_view.writable.begin(), x.l.fs_view.writable.end(),
                                       [&](const std::string& w) { return path_under(w, pr); });
        if (above || path_under(x.l.workspace, pr)) continue;
        // A HEAD's lock: only made new (trampoline.c PROT "=").
        const bool head_lock = pr.size() > 10 && pr.compare(pr.size() - 10, 10, "/HEAD.lock") == 0;
        ctx.init.protect.push_back(head_lock ? "=" + pr : pr);
      }
      // A missing one: nothing but a new directory on the way to it either
      // (trampoline.c PROT "^"); never one that exists. A glob only in its
      // last component (`tools/p.s*`, a git program spelled with `?`) too:
      // its directories must not be replaced (review of 3d3a05b); a glob
      // above (`packages/*/.envrc`) would refuse every sibling.
      for (const auto& r : x.l.refused_names)
        if (!r.empty() && r[0] == '/' && r != "/") ctx.init.protect.push_back("^" + r);
      for (const auto& pr : x.l.fs_view.protect) {
        const auto star = pr.find('*');
        if (!pr.empty() && pr[0] == '/' && star != std::string::npos &&
            pr.find('/', star) == std::string::npos)
          ctx.init.protect.push_back("^" + pr);
      }
    }
    TRY(x.reporter, start_reporter(rr, 3, /*in_process=*/true));
    ctx.fds.lockdown_listener_sock = x.reporter.child_sock.get();
  }
  if (policy.git_own && ctx.fds.create_sock < 0)
    return Error::msg("sandbox: the git rule needs the violation reporter");
  return {};
}

// Signals wait in a signalfd from here: none is lost between the clone and
// the wait, and the child unblocks its own.
Status block_signals(Launch& x) {
  sigset_t fwd;
  sigemptyset(&fwd);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCHLD, SIGTSTP,
                SIGTTIN, SIGTTOU, SIGCONT})
    sigaddset(&fwd, s);
  ::sigprocmask(SIG_BLOCK, &fwd, &x.restore.old);
  x.restore.armed = true;
  x.sigfd.reset(::signalfd(-1, &fwd, SFD_CLOEXEC));
  if (!x.sigfd) return Error::sys(errno, "signalfd");
  return {};
}

// The reporter's start, the cgroup joins and the go: what the parent does
// for a child that runs (its mounts meanwhile, sandbox_child_main) up to
// kGo. A join that failed because the child died of an error says less
// than its kError.
Status start_and_go(Launch& x) {
  x.reporter.request.init_pid = static_cast<int>(x.pid);
  // Nothing more is cloned: the reporter may run (the command's exec may
  // already be a notification it answers).
  TRYV(start_reporter_thread(x.reporter));
  x.thread_started = true;
  if (x.cg) {
    Status st =
        fault_fail("sandbox-join-eio", EIO) || fault_fail("sandbox-join-eio-slow-reporter", EIO)
            ? Status(Error::sys(EIO, "sandbox: join the cgroups"))
            : join_cgroups(*x.cg, static_cast<int>(x.pid), /*skip_v2=*/x.v2dir.valid());
    if (!st.ok()) {
      Msg m;
      if (recv_msg(x.sync_parent.get(), &m, MSG_DONTWAIT) == 0 && m.type == MsgType::kError)
        return Error(m.err, m.text);
      return st;
    }
  }
  /* sync 2 */
  if (int r = send_msg(x.sync_parent.get(), MsgType::kGo)) {
    Msg m;
    if (recv_msg(x.sync_parent.get(), &m, MSG_DONTWAIT) == 0 && m.type == MsgType::kError)
      return Error(m.err, m.text);
    return Error::sys(r, "sandbox: sync with the sandbox's init");
  }
  return {};
}

// The sandbox's child, either clone: our end of the sync socket closed in
// its fd table, its signals unblocked, then sandbox_child_main.
[[noreturn]] void child_go(const ChildContext& ctx, int parent_end) noexcept {
  ::close(parent_end);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  sandbox_child_main(ctx);
}

#if !defined(COMET_ASAN)
// The child of a CLONE_VM | CLONE_VFORK clone: it runs on a stack of its
// own in our memory while our thread waits for its exec, so it touches
// nothing of ours but through the const context (its fd table is its own).
struct VmChild {
  Launch* x;
  int parent_end;   // our end of the sync socket, closed in its fd table
  int started = 0;  // 1 once it runs (a futex), -1: no child
  pid_t tid = 0;    // CLONE_PARENT_SETTID
};

void futex_wake(int* word) {
  ::syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

int vm_child_main(void* p) noexcept {
  auto* c = static_cast<VmChild*>(p);
  __atomic_store_n(&c->started, 1, __ATOMIC_RELEASE);
  futex_wake(&c->started);
  child_go(c->x->ctx, c->parent_end);
}
#endif

// The fork-style clone (sanitizer builds, kernels without clone3).
Status fork_and_start(Launch& x, int ns_flags) {
  TRY(x.pid, clone_sandbox_child(ns_flags, x.v2dir.get()));
  if (x.pid == 0) child_go(x.ctx, x.sync_parent.get());
  x.cleanup.init = static_cast<pid_t>(x.pid);
  x.sync_child.reset();
  x.create_init.reset();
  return start_and_go(x);
}

#if !defined(COMET_ASAN)
// Returns ENOSYS untouched (no clone3: the caller forks instead). Nothing
// may SIGKILL the child before its exec: killed inside malloc, it would
// leave our heap's lock taken (the guardian makes raw syscalls only for
// the same reason).
Status vm_clone_and_start(Launch& x, int ns_flags) {
  constexpr size_t kStack = 8 << 20;  // untouched pages cost nothing
  void* stack = ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  if (stack == MAP_FAILED) return Error::sys(errno, "sandbox: map a stack for the child");
  struct Unmap {
    void* p;
    ~Unmap() { ::munmap(p, kStack); }
  } unmap{stack};
  VmChild child{&x, x.sync_parent.get()};
  Status go;
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);  // the thread takes no signal
  std::thread helper;
  try {
    helper = std::thread([&] {
      while (__atomic_load_n(&child.started, __ATOMIC_ACQUIRE) == 0)
        ::syscall(SYS_futex, &child.started, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
      if (__atomic_load_n(&child.started, __ATOMIC_ACQUIRE) < 0) return;
      x.pid = child.tid;
      go = start_and_go(x);
      // Not a kill: the child may be inside malloc, on our heap's locks.
      // EOF where it waits for kGo ends it at a point of its own.
      if (!go.ok()) ::shutdown(x.sync_parent.get(), SHUT_WR);
    });
  } catch (const std::system_error& e) {
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return Error::sys(e.code().value(), "sandbox: start a thread");
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  const std::uint64_t flags =
      static_cast<std::uint64_t>(static_cast<unsigned>(ns_flags)) | CLONE_VM | CLONE_VFORK;
  auto pid = clone_fn_into(flags, x.v2dir.get(), stack, kStack, vm_child_main, &child, &child.tid);
  // No child, or one killed before its first instruction (the vfork ended
  // with its exit): the helper must not wait for it.
  int none = 0;
  if (__atomic_compare_exchange_n(&child.started, &none, -1, false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    futex_wake(&child.started);
    if (pid.ok()) go = Error::msg("sandbox: the sandbox's child died before it started");
  }
  helper.join();
  if (!pid.ok()) {
    if (pid.error().err() == ENOSYS) return pid.error();
    return clone_sandbox_error(pid.error(), ns_flags);
  }
  x.pid = *pid;
  x.cleanup.init = static_cast<pid_t>(x.pid);
  x.sync_child.reset();
  x.create_init.reset();
  if (!go.ok()) {
    Msg m;
    if (recv_msg(x.sync_parent.get(), &m, MSG_DONTWAIT) == 0 && m.type == MsgType::kError)
      return Error(m.err, m.text);
    return go;
  }
  return {};
}
#endif

// The clone and the go. The child shares our memory up to its exec
// (CLONE_VM | CLONE_VFORK, as the command's own start does): no page
// tables copied, none of our pages faulted in again or copied on write by
// either side, and nothing to tear down at the init's exec of the
// trampoline (~5 ms of a run on this class of VM). Our thread waits for
// that exec, so a thread of ours starts the reporter, joins the cgroups and
// sends kGo meanwhile. Sanitizer builds fork (ASan cannot follow a CLONE_VM
// child on a stack it did not make).
Status clone_and_start(Launch& x) {
  if (x.policy->git_own) {
    x.index_before = index_stamps(*x.policy->git_own);
    x.git_before = history_snapshot(*x.policy->git_own);
    if (!x.git_before.empty()) ::clock_gettime(CLOCK_REALTIME, &x.started);
  }
  const int ns_flags = x.ctx.ns.new_ns_flags & ~CLONE_NEWCGROUP;
#if defined(COMET_ASAN)
  TRYV(fork_and_start(x, ns_flags));
#else
  if (Status st = vm_clone_and_start(x, ns_flags); !st.ok()) {
    if (st.error().err() != ENOSYS) return st;
    TRYV(fork_and_start(x, ns_flags));
  }
#endif
  // A kError, or EOF once the init and the command have exec'd.
  Msg m;
  if (recv_msg(x.sync_parent.get(), &m) == 0) {
    if (m.type == MsgType::kError) return Error(m.err, m.text);
    return Error::msg(std::string("sandbox: unexpected ") + msg_name(m.type) + " from the init");
  }
  x.sync_parent.reset();
  return {};
}

// Waits for the command, then the reporter; the git rule's last look and
// the events' summary. The command's status as an exit code.
int wait_and_report(Launch& x) {
  int status = supervise(static_cast<pid_t>(x.pid), x.sigfd.get());
  x.cleanup.init = -1;  // reaped
  if (!x.events_path.empty()) {
    // The reporter ends once the last confined process is gone.
    if (!wait_reporter_threads(3000))
      log::warn("sandbox: the violation reporter did not finish; events may be missing");
    if (x.policy->git_own) {
      check_git_index(*x.policy->git_own, x.index_before, x.l.id, x.events_path, x.l.events,
                      x.l.fs_view.writable);
      check_git_history({x.git_before, x.index_before, x.l.fs_view.protect, x.l.owner_uid,
                         x.l.owner_gid, x.l.id, x.events_path, x.l.events, x.started});
    }
    summarize_events(x.events_path, x.l.events);
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace

Result<int> launch_sandbox(SandboxLaunch& l) {
  Launch x(l);
  TRYV(lock_and_plan(x));
  TRYV(plan_context(x));
  TRYV(make_host_state(x));
  TRYV(watch_fs_events(x));
  TRYV(open_child_fds(x));
  TRYV(prepare_reporter(x));
  TRYV(block_signals(x));
  TRYV(clone_and_start(x));
  const int code = wait_and_report(x);
  // The sandbox has ended and the reporter has finished. What we made on
  // the host is undone now; what is left is memory. Freeing it object by
  // object (the spec, the child's context, the plan, the parse trees, up to
  // main) cost ~1.5 ms: after the clone every heap page written is a
  // copy-on-write fault, ~12 us on this class of VM. The exit returns it
  // all at once.
  x.cleanup.exiting = true;
  // The events' detached tmpfs goes with the removed directories: its last
  // close unmounts it (umount_tree, then an expedited RCU grace period:
  // 0.1-0.3 ms, tens of ms on a loaded host), at the guardian's exit, not
  // ours. Its events are read (summarize_events) and it was never attached
  // anywhere: nothing on the host changes with it.
  if (x.events_dir && x.cleanup.guardian) x.cleanup.removed_dirs.push_back(std::move(x.events_dir));
  x.cleanup.run();
  std::fflush(nullptr);
  ::_exit(code);
}

}  // namespace comet::runtime
