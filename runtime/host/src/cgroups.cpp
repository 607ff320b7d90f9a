#include "comet/host/cgroups.hpp"
#include "comet/base/fault.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "comet/base/fd.hpp"
#include "comet/base/sys.hpp"
#include "comet/host/devices_bpf.hpp"
#include "comet/host/log.hpp"

namespace comet::runtime {
namespace {

constexpr long kCgroup2Magic = 0x63677270;

struct MountEntry {
  std::string mountpoint, fstype, super_opts, root;
};

std::vector<MountEntry> cgroup_mounts() {
  std::vector<MountEntry> out;
  auto text = read_file("/proc/self/mountinfo");
  if (!text.ok()) return out;
  for (auto& line : split(*text, '\n')) {
    // id parent maj:min root mountpoint opts [optional...] - fstype source superopts
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    auto pre = split(line.substr(0, dash), ' ');
    auto post = split(line.substr(dash + 3), ' ');
    if (pre.size() < 5 || post.size() < 3) continue;
    if (post[0] != "cgroup" && post[0] != "cgroup2") continue;
    out.push_back({pre[4], post[0], post[2], pre[3]});
  }
  return out;
}

// "4:memory:/a/b" -> controllers -> path; "0::/x" for v2.
std::vector<std::pair<std::string, std::string>> self_cgroups() {
  std::vector<std::pair<std::string, std::string>> out;
  auto text = read_file("/proc/self/cgroup");
  if (!text.ok()) return out;
  for (auto& line : split(*text, '\n')) {
    size_t a = line.find(':');
    if (a == std::string::npos) continue;
    size_t b = line.find(':', a + 1);
    if (b == std::string::npos) continue;
    out.emplace_back(line.substr(a + 1, b - a - 1), line.substr(b + 1));
  }
  return out;
}

Status write_cg(const std::string& dir, const std::string& file, const std::string& value) {
  std::string p = dir + "/" + file;
  Status st = write_file(p, value);
  if (!st.ok()) return Error::sys(st.error().err(), "write " + value + " to " + p);
  return ok();
}

}  // namespace

std::vector<std::string> CgroupPlan::dirs() const {
  std::vector<std::string> d;
  for (auto& h : hierarchies) d.push_back(h.dir);
  return d;
}

const CgroupHierarchy* CgroupPlan::find(const std::string& c) const {
  for (auto& h : hierarchies)
    if (std::find(h.controllers.begin(), h.controllers.end(), c) != h.controllers.end()) return &h;
  return nullptr;
}

bool is_cgroup2_dir(const std::string& dir) {
  struct statfs s;
  return ::statfs(dir.c_str(), &s) == 0 && s.f_type == kCgroup2Magic;
}

std::vector<std::string> needed_v1_controllers(const oci::Resources* r) {
  std::vector<std::string> n;
  if (!r) return n;
  if (r->memory) n.push_back("memory");
  if (r->cpu) {
    const auto& c = *r->cpu;
    if (c.shares || c.quota || c.period || c.realtime_runtime || c.realtime_period || c.burst ||
        c.idle)
      n.push_back("cpu");
    if (!c.cpus.empty() || !c.mems.empty()) n.push_back("cpuset");
  }
  if (r->pids) n.push_back("pids");
  if (r->block_io) n.push_back("blkio");
  if (!r->hugepage_limits.empty()) n.push_back("hugetlb");
  return n;
}

void keep_needed_v1(CgroupPlan& plan, const oci::Resources& res) {
  const std::vector<std::string> need = needed_v1_controllers(&res);
  std::erase_if(plan.hierarchies, [&](const CgroupHierarchy& h) {
    return !h.v2 && std::none_of(h.controllers.begin(), h.controllers.end(), [&](const auto& c) {
      return std::find(need.begin(), need.end(), c) != need.end();
    });
  });
  if (!plan.freezer_v2 && !plan.find("freezer")) plan.freezer_dir.clear();
}

Result<CgroupPlan> plan_cgroups(const std::string& cgroups_path, const std::string& id,
                                const oci::Resources* res, bool every_v1) {
  CgroupPlan plan;
  std::string rel = cgroups_path.empty() ? id : cgroups_path;
  if (rel.find("..") != std::string::npos || (!rel.empty() && rel.find(':') != std::string::npos))
    return Error::msg("linux.cgroupsPath \"" + rel +
                      "\": must be a cgroupfs path (systemd slice:prefix:name needs "
                      "--systemd-cgroup)");
  auto own = self_cgroups();
  std::vector<std::string> seen;
  for (auto& m : cgroup_mounts()) {
    // A hierarchy mounted twice (a bind of /sys/fs/cgroup elsewhere, a
    // container's view in this mount namespace) is one hierarchy: the first
    // mount in mountinfo, the host's own, is the one used.
    const std::string key_opts = m.fstype + ":" + m.super_opts;
    if (std::find(seen.begin(), seen.end(), key_opts) != seen.end()) continue;
    seen.push_back(key_opts);
    CgroupHierarchy h;
    h.mountpoint = m.mountpoint;
    h.v2 = m.fstype == "cgroup2";
    std::string key;
    if (h.v2) {
      auto c = read_file(m.mountpoint + "/cgroup.controllers");
      if (c.ok())
        for (auto& s : split(*c, ' ')) {
          std::string t = s;
          while (!t.empty() && (t.back() == '\n')) t.pop_back();
          if (!t.empty()) h.controllers.push_back(t);
        }
    } else {
      for (auto& o : split(m.super_opts, ',')) {
        if (o == "rw" || o == "ro" || o == "relatime" || o == "noprefix" || o == "xattr" ||
            o == "clone_children" || o.rfind("release_agent=", 0) == 0)
          continue;
        h.controllers.push_back(o);
      }
      for (auto& c : h.controllers) key += (key.empty() ? "" : ",") + c;
    }
    // Where the runtime itself sits in this hierarchy.
    std::string base = "/";
    for (auto& [ctrls, path] : own) {
      if ((h.v2 && ctrls.empty()) || (!h.v2 && ctrls == key)) base = path;
    }
    // A hierarchy mounted from a sub-root (nested) maps paths relative to it.
    if (m.root != "/" && base.rfind(m.root, 0) == 0) base = base.substr(m.root.size());
    std::string cg = rel.front() == '/' ? rel : join_path(base, rel);
    h.dir = join_path(m.mountpoint, clean_path(cg));
    plan.hierarchies.push_back(std::move(h));
  }
  if (plan.hierarchies.empty()) return Error::msg("no cgroup hierarchy is mounted");
  bool has_v2 = std::any_of(plan.hierarchies.begin(), plan.hierarchies.end(),
                            [](const CgroupHierarchy& h) { return h.v2; });
  // v1 is all or nothing: the cost is one RCU grace period per create,
  // however many hierarchies are joined, so once a limit needs one, join
  // them all (stats and tools that read v1 then see the container
  // everywhere, as with runc). With no v1 limit and no EVERY_V1, join none.
  if (has_v2 && !every_v1 && needed_v1_controllers(res).empty())
    std::erase_if(plan.hierarchies, [](const CgroupHierarchy& h) { return !h.v2; });
  // EVERY_V1 (an OCI config) joins the v1 cpu hierarchy only for a cpu
  // limit: a new v1 cpu cgroup has no real-time budget (with RT group
  // scheduling its cpu.rt_runtime_us is 0), so a SCHED_FIFO/SCHED_RR
  // process.scheduler, of the init or of an exec, would fail EPERM there
  // (runc's containers do). Create, update and delete --force plan alike.
  if (every_v1 && !(res && res->cpu))
    std::erase_if(plan.hierarchies, [](const CgroupHierarchy& h) {
      return !h.v2 &&
             std::find(h.controllers.begin(), h.controllers.end(), "cpu") != h.controllers.end();
    });
  plan.v2_only = plan.hierarchies.size() == 1 && plan.hierarchies[0].v2;
  for (auto& h : plan.hierarchies)
    if (h.v2) {
      plan.freezer_dir = h.dir;
      plan.freezer_v2 = true;
    }
  if (plan.freezer_dir.empty())
    if (auto* f = plan.find("freezer")) plan.freezer_dir = f->dir;
  return plan;
}

namespace {

// The caller's cgroup2 path ("0::/a/b"), "/" when unknown.
std::string own_cgroup2() {
  for (auto& [ctrls, path] : self_cgroups())
    if (ctrls.empty() && !path.empty()) return path;
  return "/";
}

std::string parent_of(const std::string& p) {
  size_t s = p.rfind('/');
  return s == 0 || s == std::string::npos ? "/" : p.substr(0, s);
}

// Can this user make REL (a cgroup2 path) and clone a process into it from
// OWN? Its nearest existing ancestor must be a writable cgroup2 directory,
// and cgroup.procs of the common ancestor of OWN and REL writable.
bool delegated(const std::string& root, const std::string& own, const std::string& rel) {
  std::string anc = parent_of(rel);
  while (anc != "/" && !path_exists(join_path(root, anc))) anc = parent_of(anc);
  const std::string dir = join_path(root, anc);
  if (!is_cgroup2_dir(dir) || ::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0)
    return false;
  std::string common = own;
  while (common != "/" && !(rel == common || rel.rfind(common + "/", 0) == 0))
    common = parent_of(common);
  const std::string procs = join_path(join_path(root, common), "cgroup.procs");
  return ::faccessat(AT_FDCWD, procs.c_str(), W_OK, AT_EACCESS) == 0;
}

}  // namespace

RootlessCgroup plan_rootless_cgroups(const std::string& cgroups_path, const std::string& id) {
  RootlessCgroup out;
  const std::string root = cgroup2_mountpoint();
  if (root.empty()) {
    out.note = "none (no cgroup2 hierarchy)";
    return out;
  }
  const std::string own = own_cgroup2();
  std::vector<std::string> candidates;
  if (!cgroups_path.empty() && cgroups_path.find("..") == std::string::npos &&
      cgroups_path.find(':') == std::string::npos)
    candidates.push_back(
        clean_path(cgroups_path[0] == '/' ? cgroups_path : join_path(own, cgroups_path)));
  candidates.push_back(clean_path(join_path(own, id)));
  for (const std::string& rel : candidates) {
    if (rel == "/" || !delegated(root, own, rel)) continue;
    CgroupHierarchy h;
    h.mountpoint = root;
    h.v2 = true;
    h.dir = join_path(root, rel);
    // What the new directory will have: its parent's subtree_control (the
    // delegating manager enables controllers there).
    h.controllers = cgroup2_controllers(join_path(root, parent_of(rel)), "cgroup.subtree_control");
    out.plan.hierarchies.push_back(std::move(h));
    out.plan.v2_only = true;
    out.plan.freezer_dir = out.plan.hierarchies[0].dir;
    out.plan.freezer_v2 = true;
    out.note = out.plan.freezer_dir + " (delegated)";
    return out;
  }
  out.note = "none (not delegated)";
  return out;
}

std::vector<std::string> cgroup2_controllers(const std::string& dir, const char* file) {
  std::vector<std::string> out;
  auto c = read_file(dir + "/" + file);
  if (!c.ok()) return out;
  for (auto& s : split(*c, ' ')) {
    std::string t = s;
    while (!t.empty() && (t.back() == '\n')) t.pop_back();
    if (!t.empty()) out.push_back(t);
  }
  return out;
}

std::vector<std::string> limit_controllers(const oci::Resources& r) {
  std::vector<std::string> n;
  for (auto& c : needed_v1_controllers(&r)) n.push_back(c == "blkio" ? "io" : c);
  for (auto& [k, v] : r.unified) n.push_back("unified:" + k);
  if (r.has_network) n.push_back("network");
  if (r.has_rdma) n.push_back("rdma");
  return n;
}

static Status copy_cpuset_parent(const std::string& dir) {
  // v1 cpuset: a new group starts with empty cpus/mems and refuses tasks.
  std::string parent = dir.substr(0, dir.rfind('/'));
  for (const char* f : {"cpuset.cpus", "cpuset.mems"}) {
    auto cur = read_file(dir + "/" + f);
    if (cur.ok() && cur->find_first_not_of(" \n") != std::string::npos) continue;
    auto pv = read_file(parent + "/" + f);
    if (!pv.ok()) return std::move(pv).error();
    if (pv->find_first_not_of(" \n") == std::string::npos) TRYV(copy_cpuset_parent(parent));
    pv = read_file(parent + "/" + f);
    if (!pv.ok()) return std::move(pv).error();
    TRYV(write_cg(dir, f, *pv));
  }
  return ok();
}

Status create_cgroups(const CgroupPlan& plan) {
  for (auto& h : plan.hierarchies) {
    if (::mkdir(h.dir.c_str(), 0755) < 0 && errno != EEXIST) {
      if (errno != ENOENT) return Error::sys(errno, "mkdir " + h.dir);
      TRYV(mkdir_p(h.dir));
    }
    if (!h.v2 &&
        std::find(h.controllers.begin(), h.controllers.end(), "cpuset") != h.controllers.end()) {
      // Parents created by mkdir_p need their cpus/mems too.
      TRYV(copy_cpuset_parent(h.dir));
    }
    // Test-only: killed with one hierarchy's directory made (docs/reliability.md).
    if (&h == &plan.hierarchies.front()) fault_point("create-mid-cgroups");
  }
  return ok();
}

namespace {

std::string i64(int64_t v) {
  return std::to_string(v);
}

Status apply_v1(const CgroupPlan& plan, const oci::Resources& r) {
  if (r.memory) {
    auto* h = plan.find("memory");
    if (!h) return Error::msg("linux.resources.memory: no memory cgroup controller");
    const auto& m = *r.memory;
    // With swap, memsw >= limit must hold at every step: order the writes.
    if (m.limit && m.swap) {
      auto cur = read_file(h->dir + "/memory.limit_in_bytes");
      bool growing = !cur.ok() || *m.limit == -1 || std::stoll(*cur) < *m.limit;
      if (growing) {
        TRYV(write_cg(h->dir, "memory.memsw.limit_in_bytes", i64(*m.swap)));
        TRYV(write_cg(h->dir, "memory.limit_in_bytes", i64(*m.limit)));
      } else {
        TRYV(write_cg(h->dir, "memory.limit_in_bytes", i64(*m.limit)));
        TRYV(write_cg(h->dir, "memory.memsw.limit_in_bytes", i64(*m.swap)));
      }
    } else if (m.limit) {
      TRYV(write_cg(h->dir, "memory.limit_in_bytes", i64(*m.limit)));
    } else if (m.swap) {
      TRYV(write_cg(h->dir, "memory.memsw.limit_in_bytes", i64(*m.swap)));
    }
    if (m.reservation) TRYV(write_cg(h->dir, "memory.soft_limit_in_bytes", i64(*m.reservation)));
    if (m.kernel_tcp) TRYV(write_cg(h->dir, "memory.kmem.tcp.limit_in_bytes", i64(*m.kernel_tcp)));
    if (m.kernel) log::warn("linux.resources.memory.kernel is deprecated and ignored");
    if (m.swappiness && *m.swappiness <= 100)
      TRYV(write_cg(h->dir, "memory.swappiness", std::to_string(*m.swappiness)));
    if (m.disable_oom_killer && *m.disable_oom_killer)
      TRYV(write_cg(h->dir, "memory.oom_control", "1"));
  }
  if (r.cpu) {
    const auto& c = *r.cpu;
    if (c.shares || c.quota || c.period || c.realtime_runtime || c.realtime_period || c.burst ||
        c.idle) {
      auto* h = plan.find("cpu");
      if (!h) return Error::msg("linux.resources.cpu: no cpu cgroup controller");
      if (c.shares && *c.shares) TRYV(write_cg(h->dir, "cpu.shares", std::to_string(*c.shares)));
      if (c.period && *c.period)
        TRYV(write_cg(h->dir, "cpu.cfs_period_us", std::to_string(*c.period)));
      if (c.quota && *c.quota) TRYV(write_cg(h->dir, "cpu.cfs_quota_us", i64(*c.quota)));
      if (c.burst) TRYV(write_cg(h->dir, "cpu.cfs_burst_us", i64(*c.burst)));
      if (c.realtime_period)
        TRYV(write_cg(h->dir, "cpu.rt_period_us", std::to_string(*c.realtime_period)));
      if (c.realtime_runtime) TRYV(write_cg(h->dir, "cpu.rt_runtime_us", i64(*c.realtime_runtime)));
      if (c.idle) TRYV(write_cg(h->dir, "cpu.idle", i64(*c.idle)));
    }
    if (!c.cpus.empty() || !c.mems.empty()) {
      auto* h = plan.find("cpuset");
      if (!h) return Error::msg("linux.resources.cpu: no cpuset cgroup controller");
      if (!c.cpus.empty()) TRYV(write_cg(h->dir, "cpuset.cpus", c.cpus));
      if (!c.mems.empty()) TRYV(write_cg(h->dir, "cpuset.mems", c.mems));
    }
  }
  if (r.pids) {
    auto* h = plan.find("pids");
    if (!h) return Error::msg("linux.resources.pids: no pids cgroup controller");
    TRYV(write_cg(h->dir, "pids.max", r.pids->limit > 0 ? i64(r.pids->limit) : "max"));
  }
  if (r.block_io) {
    auto* h = plan.find("blkio");
    if (!h) return Error::msg("linux.resources.blockIO: no blkio cgroup controller");
    const auto& b = *r.block_io;
    // Without BFQ the proportional files are blkio.bfq.*; prefer the plain ones.
    std::string wfile = path_exists(h->dir + "/blkio.weight") ? "blkio.weight" : "blkio.bfq.weight";
    if (b.weight) TRYV(write_cg(h->dir, wfile, std::to_string(*b.weight)));
    if (b.leaf_weight) TRYV(write_cg(h->dir, "blkio.leaf_weight", std::to_string(*b.leaf_weight)));
    for (auto& wd : b.weight_device) {
      std::string dev = i64(wd.major) + ":" + i64(wd.minor);
      if (wd.weight)
        TRYV(write_cg(h->dir, wfile + "_device", dev + " " + std::to_string(*wd.weight)));
    }
    auto thr = [&](const std::vector<oci::ThrottleDevice>& v, const char* f) -> Status {
      for (auto& t : v)
        TRYV(write_cg(h->dir, f, i64(t.major) + ":" + i64(t.minor) + " " + std::to_string(t.rate)));
      return ok();
    };
    TRYV(thr(b.throttle_read_bps, "blkio.throttle.read_bps_device"));
    TRYV(thr(b.throttle_write_bps, "blkio.throttle.write_bps_device"));
    TRYV(thr(b.throttle_read_iops, "blkio.throttle.read_iops_device"));
    TRYV(thr(b.throttle_write_iops, "blkio.throttle.write_iops_device"));
  }
  return ok();
}

std::string v2_hugetlb_file(const std::string& size) {
  return "hugetlb." + size + ".max";
}

}  // namespace

static std::string device_rule(const oci::DeviceCgroup& d) {
  std::string t = d.type.empty() ? "a" : d.type;
  if (t == "a") return "a";
  // A negative number is a wildcard, as in runc's rules (devices.allow
  // refuses "-1").
  std::string maj = d.major && *d.major >= 0 ? std::to_string(*d.major) : "*";
  std::string min = d.minor && *d.minor >= 0 ? std::to_string(*d.minor) : "*";
  return t + " " + maj + ":" + min + " " + (d.access.empty() ? "rwm" : d.access);
}

// runc's default allow list, appended after the config's own rules.
static const char* const kDefaultDeviceRules[] = {
    "c *:* m",   "b *:* m",   "c 1:3 rwm", "c 1:8 rwm",   "c 1:7 rwm", "c 5:0 rwm",
    "c 1:5 rwm", "c 1:9 rwm", "c 5:1 rwm", "c 136:* rwm", "c 5:2 rwm", "c 10:200 rwm"};

// Device rules on cgroup2 (v2 and hybrid hosts): an eBPF program on the
// container's directory, same rules and order as the v1 file interface.
static Status apply_devices_v2(const CgroupHierarchy& h, const oci::Resources& r) {
  std::vector<oci::DeviceCgroup> rules = r.devices;
  for (const char* rule : kDefaultDeviceRules) {
    oci::DeviceCgroup d;
    d.allow = true;
    auto parts = split(rule, ' ');
    d.type = parts[0];
    auto mm = split(parts[1], ':');
    if (mm[0] != "*") d.major = std::stoll(mm[0]);
    if (mm[1] != "*") d.minor = std::stoll(mm[1]);
    d.access = parts[2];
    rules.push_back(d);
  }
  TRY(UniqueFd prog, load_device_filter(device_filter_program(rules)));
  UniqueFd dir(::open(h.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return Error::sys(errno, "open " + h.dir);
  return attach_device_filter(dir.get(), prog.get());
}

static Status apply_devices_v1(const CgroupPlan& plan, const oci::Resources& r) {
  auto* h = plan.find("devices");
  if (!h) return ok();
  // Start from deny-all, then replay the rules in order.
  TRYV(write_cg(h->dir, "devices.deny", "a"));
  for (auto& d : r.devices) {
    std::string rule = device_rule(d);
    TRYV(write_cg(h->dir, d.allow ? "devices.allow" : "devices.deny",
                  rule == "a" ? "a *:* rwm" : rule));
  }
  for (const char* rule : kDefaultDeviceRules) TRYV(write_cg(h->dir, "devices.allow", rule));
  return ok();
}

Status apply_resources(const CgroupPlan& plan, const oci::Resources& r, bool device_filter) {
  if (r.has_network) return Error::msg("linux.resources.network: not supported by this runtime");
  if (r.has_rdma) return Error::msg("linux.resources.rdma: not supported by this runtime");
  const CgroupHierarchy* v2 = nullptr;
  for (auto& h : plan.hierarchies)
    if (h.v2) v2 = &h;
  if (plan.v2_only) {
    const std::string& d = v2->dir;
    if (r.memory) {
      if (r.memory->limit)
        TRYV(write_cg(d, "memory.max", *r.memory->limit < 0 ? "max" : i64(*r.memory->limit)));
      if (r.memory->reservation) TRYV(write_cg(d, "memory.low", i64(*r.memory->reservation)));
      if (r.memory->swap && r.memory->limit && *r.memory->swap >= 0)
        TRYV(write_cg(d, "memory.swap.max", i64(*r.memory->swap - *r.memory->limit)));
    }
    if (r.cpu) {
      if (r.cpu->shares && *r.cpu->shares)
        TRYV(write_cg(d, "cpu.weight", std::to_string(1 + ((*r.cpu->shares - 2) * 9999) / 262142)));
      if (r.cpu->quota || r.cpu->period) {
        std::string q = r.cpu->quota && *r.cpu->quota > 0 ? i64(*r.cpu->quota) : "max";
        TRYV(write_cg(d, "cpu.max", q + " " + std::to_string(r.cpu->period.value_or(100000))));
      }
      if (!r.cpu->cpus.empty()) TRYV(write_cg(d, "cpuset.cpus", r.cpu->cpus));
      if (!r.cpu->mems.empty()) TRYV(write_cg(d, "cpuset.mems", r.cpu->mems));
    }
    if (r.pids) TRYV(write_cg(d, "pids.max", r.pids->limit > 0 ? i64(r.pids->limit) : "max"));
    if (r.block_io && r.block_io->weight)
      TRYV(write_cg(d, "io.weight", std::to_string(*r.block_io->weight)));
  } else {
    TRYV(apply_v1(plan, r));
  }
  // Hybrid: the eBPF program on cgroup2 and, when the container is in the
  // v1 devices hierarchy, the same rules in its devices.list, as runc does.
  if (device_filter && v2) TRYV(apply_devices_v2(*v2, r));
  if (device_filter) TRYV(apply_devices_v1(plan, r));
  for (auto& hp : r.hugepage_limits) {
    if (auto* h = plan.find("hugetlb")) {
      std::string f =
          h->v2 ? v2_hugetlb_file(hp.page_size) : "hugetlb." + hp.page_size + ".limit_in_bytes";
      TRYV(write_cg(h->dir, f, std::to_string(hp.limit)));
    } else {
      return Error::msg("linux.resources.hugepageLimits: no hugetlb cgroup controller");
    }
  }
  for (auto& [k, v] : r.unified) {
    if (!v2) return Error::msg("linux.resources.unified: no cgroup v2 hierarchy");
    if (k.find('/') != std::string::npos || k.empty())
      return Error::msg("linux.resources.unified: invalid key \"" + k + "\"");
    TRYV(write_cg(v2->dir, k, v));
  }
  return ok();
}

Status join_cgroups(const CgroupPlan& plan, int pid, bool skip_v2) {
  std::string p = std::to_string(pid);
  for (auto& h : plan.hierarchies)
    if (!(skip_v2 && h.v2)) TRYV(write_cg(h.dir, "cgroup.procs", p));
  return ok();
}

int move_self_to_root_cgroups() {
  // Already at every hierarchy's root (a shell's usual place): nothing to
  // do, and a v1 cgroup.procs write costs ~10 ms here even to stay put.
  if (auto self = read_file("/proc/self/cgroup"); self.ok()) {
    bool all_root = true;
    for (auto& line : split(*self, '\n')) {
      if (line.empty()) continue;
      size_t c = line.find(':', line.find(':') + 1);
      all_root = all_root && c != std::string::npos && line.substr(c + 1) == "/";
    }
    if (all_root) return 0;
  }
  int moved = 0;
  std::vector<std::string> seen;
  for (auto& m : cgroup_mounts()) {
    if (m.root != "/" || std::find(seen.begin(), seen.end(), m.super_opts) != seen.end()) continue;
    seen.push_back(m.super_opts);  // a hierarchy mounted twice is one hierarchy
    if (write_file(m.mountpoint + "/cgroup.procs", "0").ok()) moved++;
  }
  return moved;
}

Status destroy_cgroups(const std::vector<std::string>& dirs) {
  Status result;
  for (auto& d : dirs) {
    for (int attempt = 0;; attempt++) {
      if (::rmdir(d.c_str()) == 0 || errno == ENOENT) break;
      if (errno == EBUSY && attempt < 100) {
        std::this_thread::sleep_for(std::chrono::milliseconds(attempt < 10 ? 1 : 10));
        continue;
      }
      if (result.ok()) result = Error::sys(errno, "rmdir " + d);
      break;
    }
  }
  return result;
}

std::string cgroup2_mountpoint() {
  for (auto& m : cgroup_mounts())
    if (m.fstype == "cgroup2" && m.root == "/") return m.mountpoint;
  return "";
}

std::vector<int> cgroup_pids(const std::vector<std::string>& dirs) {
  std::vector<int> pids;
  for (auto& d : dirs) {
    auto t = read_file(d + "/cgroup.procs");
    if (!t.ok()) continue;
    for (auto& l : split(*t, '\n'))
      if (!l.empty()) pids.push_back(std::atoi(l.c_str()));
    if (!pids.empty()) break;
  }
  return pids;
}

Status freeze(const std::string& dir, bool v2, bool frozen) {
  if (dir.empty()) return Error::msg("no freezer cgroup");
  // Test-only (fault.hpp): the freezer never reports the state settled, as
  // with a task stuck in D state.
  const bool stuck = fault_is("freezer-stuck");
  if (v2) {
    TRYV(write_cg(dir, "cgroup.freeze", frozen ? "1" : "0"));
    // Wait for cgroup.events "frozen 1" (bounded).
    for (int i = 0; i < 1000; i++) {
      auto ev = read_file(dir + "/cgroup.events");
      if (!stuck && ev.ok() && ev->find(frozen ? "frozen 1" : "frozen 0") != std::string::npos)
        return ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return Error::msg("timed out waiting for " + dir + " to " + (frozen ? "freeze" : "thaw"));
  }
  TRYV(write_cg(dir, "freezer.state", frozen ? "FROZEN" : "THAWED"));
  for (int i = 0; i < 1000; i++) {
    auto st = read_file(dir + "/freezer.state");
    if (!stuck && st.ok() && st->rfind(frozen ? "FROZEN" : "THAWED", 0) == 0) return ok();
    if (frozen) TRYV(write_cg(dir, "freezer.state", "FROZEN"));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Error::msg("timed out waiting for " + dir + " to " + (frozen ? "freeze" : "thaw"));
}

bool cgroup_frozen(const std::string& dir, bool v2) {
  if (v2) {
    auto ev = read_file(dir + "/cgroup.freeze");
    return ev.ok() && !ev->empty() && (*ev)[0] == '1';
  }
  auto st = read_file(dir + "/freezer.state");
  return st.ok() && st->rfind("FROZEN", 0) == 0;
}

}  // namespace comet::runtime
