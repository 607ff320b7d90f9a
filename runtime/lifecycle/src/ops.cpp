// start, kill, delete, state, list, pause/resume.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include <cstring>
#include <nlohmann/json.hpp>

#include "comet/base/fault.hpp"
#include "comet/base/sys.hpp"
#include "comet/capability/compile.hpp"
#include "comet/egress/egress.hpp"
#include "comet/host/cgroups.hpp"
#include "comet/host/log.hpp"
#include "comet/host/net_devices.hpp"
#include "comet/host/state_store.hpp"
#include "comet/host/user_dirs.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/lifecycle/hooks.hpp"
#include "comet/lifecycle/rootless.hpp"
#include "comet/oci/spec.hpp"
#include "comet/reporting/fswatch.hpp"
#include "comet/reporting/violations.hpp"

namespace comet::runtime {
namespace {

using Loaded = LockedContainer;

Result<Loaded> load(const Globals& g, const std::string& id) {
  return open_locked(g.root, id);
}

// A signal to the init only if it is still the process we started.
int signal_init(const ContainerRecord& rec, int sig) {
  PidFd p;
  if (int e = PidFd::open(rec.pid, &p)) return e;
  if (rec.start_time && process_start_time(rec.pid) != rec.start_time) return ESRCH;
  return p.send_signal(sig);
}

std::optional<oci::Spec> saved_spec(const ContainerDir& dir) {
  auto text = read_file(dir.file("config.json"));
  if (!text.ok()) return std::nullopt;
  auto spec = oci::parse_spec(*text);
  if (!spec.ok()) return std::nullopt;
  return std::move(*spec);
}

// The cgroup directories a create of this config and id makes: derived,
// not recorded, for a create killed before its first record (issue 27:
// one in 20 creates SIGKILLed in their first milliseconds left its cgroup2
// directory). The same planner as create.cpp's plan_cgroup.
std::vector<std::string> derived_cgroup_dirs(const Globals& g, const ContainerDir& dir,
                                             const std::string& id) {
  if (g.cgroup_manager == "disabled") return {};
  auto spec = saved_spec(dir);
  if (!spec) return {};
  const oci::Linux empty;
  const oci::Linux& lx = spec->linux_ ? *spec->linux_ : empty;
  if (rootless()) return plan_rootless_cgroups(lx.cgroups_path, id).plan.dirs();
  // Both plans create may have made (an OCI config's, EVERY_V1; a pack's,
  // v1 only for a limit, cpu included): a superset, of which only the
  // empty directories are removed.
  const oci::Resources* res = lx.resources ? &*lx.resources : nullptr;
  std::vector<std::string> dirs;
  for (bool every_v1 : {true, false}) {
    auto plan = plan_cgroups(lx.cgroups_path, id, res, every_v1);
    if (!plan.ok()) continue;
    for (std::string& d : plan->dirs())
      if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(std::move(d));
  }
  return dirs;
}

std::string state_doc(const Loaded& l, oci::ContainerStatus st) {
  oci::State s;
  s.oci_version = oci_version();
  s.id = l.rec.id;
  s.status = st;
  s.pid = st == oci::ContainerStatus::kStopped ? 0 : l.rec.pid;
  s.bundle = l.rec.bundle;
  s.annotations = l.rec.annotations;
  return oci::to_json(s, -1);
}

void kill_everything(const ContainerRecord& rec) {
  // The init first (a pid namespace's init takes the rest with it), then
  // whatever is left in the cgroup (no pid namespace, or joined ones).
  PidFd p;
  if (rec.pid > 0 && PidFd::open(rec.pid, &p) == 0 &&
      (rec.start_time == 0 || process_start_time(rec.pid) == rec.start_time)) {
    p.send_signal(SIGKILL);
    if (!rec.freezer_dir.empty() && cgroup_frozen(rec.freezer_dir, rec.freezer_v2))
      (void)freeze(rec.freezer_dir, rec.freezer_v2, false);
    p.wait_exit(5000);
  }
  for (int round = 0; round < 50; round++) {
    auto pids = container_pids(rec);
    if (pids.empty()) break;
    for (int pid : pids) ::kill(pid, SIGKILL);
    if (!rec.freezer_dir.empty() && cgroup_frozen(rec.freezer_dir, rec.freezer_v2))
      (void)freeze(rec.freezer_dir, rec.freezer_v2, false);
    ::usleep(round < 5 ? 1000 : 10000);
  }
  for (size_t i = 0; i < rec.helper_pids.size(); i++) {
    int hp = rec.helper_pids[i];
    unsigned long long st = i < rec.helper_starts.size() ? rec.helper_starts[i] : 0;
    if (hp > 0 && (st == 0 || process_start_time(hp) == st)) ::kill(hp, SIGKILL);
  }
  // The violation reporter (reporter.hpp); by now it has usually exited.
  if (rec.reporter_pid > 0 && process_start_time(rec.reporter_pid) == rec.reporter_start)
    ::kill(rec.reporter_pid, SIGKILL);
}

}  // namespace

std::string oci_version() {
  return "1.3.0";
}

Status start_container(const Globals& g, const std::string& id) {
  TRY(Loaded l, load(g, id));
  switch (l.status) {
    case oci::ContainerStatus::kCreated:
      break;
    case oci::ContainerStatus::kStopped:
      return Error::msg("cannot start a container that has stopped");
    case oci::ContainerStatus::kCreating:
      return Error::msg("cannot start a container that is still being created");
    default:
      return Error::msg("cannot start an already running container");
  }
  // The pidfd first: once the fifo is open the init may exec, exit and be
  // reaped (by conmon, a shim) before we look, and its pid would be gone.
  PidFd p;
  if (int e = PidFd::open(l.rec.pid, &p)) {
    if (e == ESRCH) return Error::msg("cannot start a container that has stopped");
    return Error::sys(e, "container init " + std::to_string(l.rec.pid));
  }
  std::string fifo = l.dir.file("exec.fifo");
  int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Error::sys(errno, "open " + fifo);
  UniqueFd f(fd);
  fault_point("start-waiting-fifo");
  struct pollfd pfds[2] = {{fd, POLLIN, 0}, {p.fd(), POLLIN, 0}};
  for (;;) {
    int r = ::poll(pfds, 2, 10000);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Error::sys(errno, "poll exec fifo");
    if (r == 0) return Error::msg("timed out waiting for the container init to start");
    if (pfds[0].revents & POLLIN) break;
    if (pfds[1].revents) return Error::msg("container init exited before start");
    if (pfds[0].revents & POLLHUP) {
      // Hung up with nothing written: the init is gone, or going (its files
      // close before its pidfd becomes readable).
      struct pollfd pp = {p.fd(), POLLIN, 0};
      int w;
      do {
        w = ::poll(&pp, 1, 1000);
      } while (w < 0 && errno == EINTR);
      if (w > 0) return Error::msg("container init exited before start");
      return Error::msg("container init closed the exec fifo");
    }
  }
  // Everything the init writes until it closes: "0", or why it failed.
  ::fcntl(fd, F_SETFL, 0);
  std::string data;
  char buf[512];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::unlink(fifo.c_str());
  if (data.empty()) return Error::msg("container init exited before start");
  if (data != "0") return Error::msg(data);
  if (auto spec = saved_spec(l.dir); spec && spec->hooks && !spec->hooks->poststart.empty()) {
    std::string hs = state_doc(l, oci::ContainerStatus::kRunning);
    // runtime-spec 1.3: a failing poststart hook fails `start`, and the
    // container is stopped (runc: terminate the init, return the error).
    Status st = run_hooks(spec->hooks->poststart, "poststart", hs);
    if (!st.ok()) {
      (void)p.send_signal(SIGKILL);
      return st;
    }
  }
  return ok();
}

Status kill_container(const Globals& g, const std::string& id, int sig, bool all) {
  TRY(Loaded l, load(g, id));
  if (l.status == oci::ContainerStatus::kStopped) {
    if (all) return ok();  // containerd: kill --all after exit is not an error
    return Error::msg("container not running");
  }
  if (all) {
    for (int pid : container_pids(l.rec)) ::kill(pid, sig);
    if (sig == SIGKILL && l.status == oci::ContainerStatus::kPaused)
      (void)freeze(l.rec.freezer_dir, l.rec.freezer_v2, false);
    return ok();
  }
  int e = signal_init(l.rec, sig);
  if (e == ESRCH) return Error::msg("container not running");
  if (e) return Error::sys(e, "kill container " + id);
  return ok();
}

void remove_pack_run_dir(const Globals& g, const std::string& id) {
  if (!validate_id(id).ok()) return;
  const std::string run = join_path(join_path(g.root, "packs"), id);
  if (!path_exists(run)) return;
  unmount_under(run);
  if (Status st = remove_tree(run); !st.ok()) log::warn("delete " + id + ": " + st.error().what());
}

Status delete_container(const Globals& g, const std::string& id, bool force) {
  TRYV(validate_id(id));
  ContainerDir dir(g.root, id);
  if (!dir.exists()) {
    if (force) return ok();  // containerd runs delete, then delete --force
    return Error::msg("container does not exist");
  }
  auto lock_r = dir.lock();
  if (!lock_r.ok()) {
    // A concurrent delete removed it while we waited for the lock.
    if (force && !dir.exists()) return ok();
    return std::move(lock_r).error();
  }
  UniqueFd lock = std::move(*lock_r);
  auto rec_r = dir.load();
  if (!rec_r.ok()) {
    // A create killed before its first record, or a corrupt record: its
    // cgroups are where its config and id put them, its mounts under the
    // directory (ContainerDir::remove detaches them). The init is cloned
    // after the first record, so nothing of ours runs in those cgroups: an
    // empty one is removed, a populated one is someone else's and is left.
    if (!force) return std::move(rec_r).error();
    std::vector<std::string> empty_dirs;
    for (auto& d : derived_cgroup_dirs(g, dir, id)) {
      if (!path_exists(d) || !cgroup_pids({d}).empty()) continue;
      if (is_cgroup2_dir(d))
        if (std::uint64_t cg = cgroup_id_of(d)) fswatch_unwatch(cg);
      empty_dirs.push_back(d);
    }
    Status cg = destroy_cgroups(empty_dirs);
    Status rm = dir.remove();
    if (!cg.ok()) return cg;
    return rm;
  }
  ContainerRecord rec = std::move(*rec_r);
  oci::ContainerStatus st = derive_status(dir, rec);
  if (!force && (st == oci::ContainerStatus::kRunning || st == oci::ContainerStatus::kPaused))
    return Error::msg("cannot delete container " + id +
                      " that is not stopped: " + oci::status_name(st));
  kill_everything(rec);
  // Egress (egress/egress.hpp): the resolver, the network helper, our table in an
  // engine's netns. Idempotent; a failure is reported, never blocks delete.
  egress::Handles eh{rec.egress_resolver_pid, rec.egress_resolver_start, rec.egress_net_pid,
                     rec.egress_net_start,    rec.egress_netns,          rec.egress_table};
  if (Status es = egress::teardown(eh); !es.ok()) log::warn(es.error().what());
  // fs events (fswatch.hpp): the entry of a reporter that did not end cleanly.
  for (auto& d : rec.cgroup_dirs)
    if (is_cgroup2_dir(d))
      if (std::uint64_t cg = cgroup_id_of(d)) fswatch_unwatch(cg);
  Status result = destroy_cgroups(rec.cgroup_dirs);
  // linux.netDevices: back to the host under their own names (the netns is
  // pinned until the cleanup paths below are unmounted).
  for (const auto& [inside, host] : rec.net_devices)
    if (Status ns = move_link_back(rec.net_devices_netns, inside, host); !ns.ok())
      log::warn("delete " + id + ": " + ns.error().what());
  for (auto& p : rec.cleanup_paths) {
    ::umount2(p.c_str(), MNT_DETACH);
    ::unlink(p.c_str());
  }
  if (auto spec = saved_spec(dir); spec && spec->hooks && !spec->hooks->poststop.empty()) {
    oci::State s;
    s.oci_version = oci_version();
    s.id = id;
    s.status = oci::ContainerStatus::kStopped;
    s.bundle = rec.bundle;
    s.annotations = rec.annotations;
    (void)run_hooks_warning(spec->hooks->poststop, "poststop", oci::to_json(s, -1));
  }
  // A pack an engine ran: its violations flag the version here (violations.hpp).
  violations::flag_at_delete(dir.path(), rec.annotations);
  // A pack's events outlive it, in a bounded store (violations.hpp
  // keep_events); a sandbox's go to its caller (docs/sandbox.md).
  if (rec.annotations.count(std::string(capability::kAnnotationCapabilities)))
    (void)violations::keep_events(g.root, id, dir.path());
  Status rm = dir.remove();
  if (!result.ok()) return result;
  return rm;
}

Result<oci::State> container_state(const Globals& g, const std::string& id) {
  TRY(Loaded l, load(g, id));
  oci::State s;
  s.oci_version = oci_version();
  s.id = l.rec.id;
  s.status = l.status;
  s.pid = l.status == oci::ContainerStatus::kStopped ? 0 : l.rec.pid;
  s.bundle = l.rec.bundle;
  s.annotations = l.rec.annotations;
  return s;
}

Status pause_container(const Globals& g, const std::string& id, bool pause) {
  TRY(Loaded l, load(g, id));
  if (pause && l.status != oci::ContainerStatus::kRunning &&
      l.status != oci::ContainerStatus::kCreated)
    return Error::msg("container not running");
  if (!pause && l.status != oci::ContainerStatus::kPaused)
    return Error::msg("container not paused");
  if (l.rec.freezer_dir.empty())
    return Error::msg(
        std::string(pause ? "pause" : "resume") + " " + id +
        ": the container has no cgroup to freeze (cgroup: " +
        (l.rec.rootless.count(kNoteCgroup) ? l.rec.rootless.at(kNoteCgroup) : std::string("none")) +
        "; docs/rootless.md)");
  return freeze(l.rec.freezer_dir, l.rec.freezer_v2, pause);
}

std::vector<ListEntry> list_containers(const Globals& g) {
  std::vector<ListEntry> out;
  for (auto& id : list_ids(g.root)) {
    ContainerDir dir(g.root, id);
    auto rec = dir.load();
    if (!rec.ok()) continue;
    ListEntry e;
    oci::ContainerStatus st = derive_status(dir, *rec);
    e.state.oci_version = oci_version();
    e.state.id = id;
    e.state.status = st;
    e.state.pid = st == oci::ContainerStatus::kStopped ? 0 : rec->pid;
    e.state.bundle = rec->bundle;
    e.state.annotations = rec->annotations;
    e.created = rec->created;
    e.owner = rec->owner;
    out.push_back(std::move(e));
  }
  return out;
}

Result<int> parse_signal(const std::string& s) {
  if (s.empty()) return Error::msg("invalid signal \"\"");
  if (std::all_of(s.begin(), s.end(), ::isdigit)) {
    int n = std::atoi(s.c_str());
    // 0 checks that the init exists, as kill(2) does.
    if (s.size() > 3 || n > SIGRTMAX)
      return Error::msg("invalid signal \"" + s + "\": invalid argument");
    return n;
  }
  std::string name = s;
  for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  for (int n = 1; n < 32; n++) {
    const char* abbrev = sigabbrev_np(n);
    if (abbrev && name == abbrev) return n;
  }
  if (name.rfind("RTMIN", 0) == 0 || name.rfind("RTMAX", 0) == 0) {
    int base = name[2] == 'M' && name[3] == 'I' ? SIGRTMIN : SIGRTMAX;
    std::string rest = name.substr(5);
    int off = rest.empty() ? 0 : std::atoi(rest.c_str());
    int n = base + off;
    if (n >= SIGRTMIN && n <= SIGRTMAX) return n;
  }
  return Error::msg("unknown signal \"" + s + "\"");
}

}  // namespace comet::runtime
