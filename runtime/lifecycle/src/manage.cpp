// ps, update and events: the verbs engines use on a running container.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "comet/base/sys.hpp"
#include "comet/host/cgroups.hpp"
#include "comet/host/state_store.hpp"
#include "comet/host/user_dirs.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/lifecycle/rootless.hpp"
#include "comet/oci/spec.hpp"

namespace comet::runtime {
namespace {

using Opened = LockedContainer;

Result<Opened> open_container(const Globals& g, const std::string& id) {
  return open_locked(g.root, id);
}

std::string cg_read(const std::string& dir, const char* file) {
  auto t = read_file(dir + "/" + file);
  if (!t.ok()) return "";
  std::string s = *t;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

uint64_t to_u64(const std::string& s) {
  return s.empty() || s == "max" ? 0 : std::stoull(s);
}

const std::string* dir_for(const ContainerRecord& rec, const char* ctrl) {
  for (auto& d : rec.cgroup_dirs)
    if (d.find(std::string("/sys/fs/cgroup/") + ctrl + "/") == 0) return &d;
  return nullptr;
}

nlohmann::ordered_json stats(const ContainerRecord& rec) {
  nlohmann::ordered_json data;
  // cpu: v1 cpuacct when joined, else cgroup2 cpu.stat (always present).
  nlohmann::ordered_json cpu;
  if (auto* d = dir_for(rec, "cpuacct")) {
    cpu["usage"]["total"] = to_u64(cg_read(*d, "cpuacct.usage"));
  } else if (auto* u = dir_for(rec, "unified")) {
    for (auto& line : split(cg_read(*u, "cpu.stat"), '\n')) {
      auto f = split(line, ' ');
      if (f.size() != 2) continue;
      if (f[0] == "usage_usec") cpu["usage"]["total"] = to_u64(f[1]) * 1000;
      if (f[0] == "user_usec") cpu["usage"]["user"] = to_u64(f[1]) * 1000;
      if (f[0] == "system_usec") cpu["usage"]["kernel"] = to_u64(f[1]) * 1000;
    }
  }
  data["cpu"] = cpu;
  nlohmann::ordered_json mem = nlohmann::ordered_json::object();
  if (auto* d = dir_for(rec, "memory")) {
    mem["usage"] = {{"limit", to_u64(cg_read(*d, "memory.limit_in_bytes"))},
                    {"usage", to_u64(cg_read(*d, "memory.usage_in_bytes"))},
                    {"max", to_u64(cg_read(*d, "memory.max_usage_in_bytes"))},
                    {"failcnt", to_u64(cg_read(*d, "memory.failcnt"))}};
  }
  data["memory"] = mem;
  nlohmann::ordered_json pids;
  if (auto* d = dir_for(rec, "pids")) {
    pids["current"] = to_u64(cg_read(*d, "pids.current"));
    pids["limit"] = to_u64(cg_read(*d, "pids.max"));
  } else {
    pids["current"] = cgroup_pids(rec.cgroup_dirs).size();
  }
  data["pids"] = pids;
  data["blkio"] = nlohmann::ordered_json::object();
  data["hugetlb"] = nlohmann::ordered_json::object();
  return data;
}

}  // namespace

Status ps_container(const Globals& g, const std::string& id, const std::string& format,
                    const std::vector<std::string>& ps_args) {
  TRY(Opened c, open_container(g, id));
  auto pids = container_pids(c.rec);
  if (c.status == oci::ContainerStatus::kStopped) pids.clear();
  std::sort(pids.begin(), pids.end());
  if (format == "json") {
    std::printf("%s\n", nlohmann::json(pids).dump().c_str());
    return ok();
  }
  // Table: the host's ps(1), filtered to the container's pids (as runc).
  std::vector<std::string> args = {"ps"};
  if (ps_args.empty())
    args.push_back("-ef");
  else
    args.insert(args.end(), ps_args.begin(), ps_args.end());
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) < 0) return Error::sys(errno, "pipe");
  UniqueFd rd(pipefd[0]), wr(pipefd[1]);
  pid_t pid = ::fork();
  if (pid < 0) return Error::sys(errno, "fork");
  if (pid == 0) {
    ::dup2(pipefd[1], 1);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp("ps", argv.data());
    ::_exit(127);
  }
  wr.reset();
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(rd.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error::msg("ps " + args[1] + " failed");
  auto lines = split(out, '\n');
  if (lines.empty()) return ok();
  auto header = split(lines[0], ' ');
  header.erase(std::remove(header.begin(), header.end(), ""), header.end());
  auto col = std::find(header.begin(), header.end(), "PID");
  if (col == header.end()) return Error::msg("ps output has no PID column");
  size_t idx = static_cast<size_t>(col - header.begin());
  std::printf("%s\n", lines[0].c_str());
  for (size_t i = 1; i < lines.size(); i++) {
    auto f = split(lines[i], ' ');
    f.erase(std::remove(f.begin(), f.end(), ""), f.end());
    if (f.size() <= idx) continue;
    int p = std::atoi(f[idx].c_str());
    if (std::find(pids.begin(), pids.end(), p) != pids.end()) std::printf("%s\n", lines[i].c_str());
  }
  return ok();
}

// Rootless (docs/rootless.md): the cgroup create chose, or none; nothing
// is joined later. A limit it cannot hold is refused, the device rules are
// not attached (no eBPF for an ordinary user).
static Status update_rootless(Opened& c, const oci::Resources& upd, const oci::Resources& merged,
                              oci::Spec spec) {
  CgroupPlan plan;
  for (const std::string& d : c.rec.cgroup_dirs) {
    CgroupHierarchy h;
    h.mountpoint = cgroup2_mountpoint();
    h.v2 = true;
    h.dir = d;
    h.controllers = cgroup2_controllers(d);
    plan.hierarchies.push_back(std::move(h));
  }
  plan.v2_only = !plan.hierarchies.empty();
  auto note = c.rec.rootless.find(kNoteCgroup);
  TRYV(check_rootless_limits(plan, note == c.rec.rootless.end() ? "none" : note->second, &upd));
  if (!plan.hierarchies.empty()) TRYV(apply_resources(plan, upd, /*device_filter=*/false));
  spec.linux_->resources = merged;
  return write_file_atomic(c.dir.file("config.json"), oci::to_json(spec, 2), 0600, Sync::none);
}

Status update_container(const Globals& g, const std::string& id,
                        const std::string& resources_json) {
  TRY(Opened c, open_container(g, id));
  if (c.status == oci::ContainerStatus::kStopped)
    return Error::msg("cannot update a stopped container");
  std::string doc = "{\"ociVersion\":\"1.0.0\",\"linux\":{\"resources\":" + resources_json + "}}";
  auto parsed = oci::parse_spec(doc);
  if (!parsed.ok()) return Error::msg("update --resources: " + parsed.error().message());
  const oci::Resources& upd = *parsed->linux_->resources;
  TRY(std::string config_text, read_file(c.dir.file("config.json")));
  TRY(oci::Spec spec, oci::parse_spec(config_text));
  if (!spec.linux_) spec.linux_ = oci::Linux{};
  oci::Resources merged = spec.linux_->resources.value_or(oci::Resources{});
  if (upd.memory) merged.memory = upd.memory;
  if (upd.cpu) merged.cpu = upd.cpu;
  if (upd.pids) merged.pids = upd.pids;
  if (upd.block_io) merged.block_io = upd.block_io;
  if (!upd.hugepage_limits.empty()) merged.hugepage_limits = upd.hugepage_limits;
  if (!upd.devices.empty()) merged.devices = upd.devices;
  for (auto& [k, v] : upd.unified) merged.unified[k] = v;
  if (rootless()) return update_rootless(c, upd, merged, std::move(spec));
  // A limit on a controller the container has not joined yet: join it now,
  // moving every process of the container there.
  // The hierarchies create chose (every v1 one for an OCI config) plus any a
  // new limit needs.
  const bool every_v1 = std::any_of(c.rec.cgroup_dirs.begin(), c.rec.cgroup_dirs.end(),
                                    [](const std::string& d) { return !is_cgroup2_dir(d); });
  TRY(CgroupPlan plan, plan_cgroups(spec.linux_->cgroups_path, id, &merged, every_v1));
  TRYV(create_cgroups(plan));
  auto pids = cgroup_pids(c.rec.cgroup_dirs);
  for (auto& h : plan.hierarchies) {
    if (std::find(c.rec.cgroup_dirs.begin(), c.rec.cgroup_dirs.end(), h.dir) !=
        c.rec.cgroup_dirs.end())
      continue;
    for (int p : pids) (void)write_file(h.dir + "/cgroup.procs", std::to_string(p));
    c.rec.cgroup_dirs.push_back(h.dir);
  }
  oci::Resources to_apply = upd;
  if (to_apply.devices.empty()) to_apply.devices = merged.devices;
  TRYV(apply_resources(plan, to_apply));
  spec.linux_->resources = merged;
  TRYV(write_file_atomic(c.dir.file("config.json"), oci::to_json(spec, 2), 0600, Sync::none));
  return c.dir.save(c.rec);
}

Status events_container(const Globals& g, const std::string& id, bool once, int interval_ms) {
  for (;;) {
    ContainerRecord rec;
    {
      TRY(Opened c, open_container(g, id));
      if (c.status == oci::ContainerStatus::kStopped) {
        if (once) return Error::msg("container not running");
        return ok();
      }
      rec = c.rec;
    }
    nlohmann::ordered_json ev = {{"type", "stats"}, {"id", id}, {"data", stats(rec)}};
    std::printf("%s\n", ev.dump().c_str());
    std::fflush(stdout);
    if (once) return ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  }
}

}  // namespace comet::runtime
