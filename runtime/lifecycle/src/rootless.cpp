#include "comet/lifecycle/rootless.hpp"

#include <dirent.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "comet/base/sys.hpp"
#include "comet/host/user_dirs.hpp"

namespace comet::runtime {
namespace {

constexpr std::string_view kPrefix = "rootless: ";
constexpr std::string_view kLayerPrefix = "layer ";

// "memory" -> the config field a user would remove.
std::string field_of(const std::string& ctl) {
  if (ctl.rfind("unified:", 0) == 0) return "linux.resources.unified." + ctl.substr(8);
  if (ctl == "io") return "linux.resources.blockIO";
  if (ctl == "cpuset") return "linux.resources.cpu.cpus/mems";
  if (ctl == "hugetlb") return "linux.resources.hugepageLimits";
  return "linux.resources." + ctl;
}

}  // namespace

std::string container_owner() {
  if (!rootless()) return "";
  const unsigned long uid = outer_uid();
  if (const passwd* pw = ::getpwuid(static_cast<uid_t>(uid)); pw && pw->pw_name) return pw->pw_name;
  return "#" + std::to_string(uid);
}

Error refusal(const std::string& why) {
  return Error::msg(std::string(kPrefix) + why);
}

Error layer_refusal(const std::string& why) {
  return Error::msg(std::string(kLayerPrefix) + why);
}

bool is_refusal(const Error& e) {
  return e.message().rfind(kPrefix, 0) == 0 || e.message().rfind(kLayerPrefix, 0) == 0;
}

Status check_rootless_limits(const CgroupPlan& plan, const std::string& note,
                             const oci::Resources* res) {
  if (!res) return ok();
  const std::vector<std::string> need = limit_controllers(*res);
  if (need.empty()) return ok();
  if (plan.hierarchies.empty())
    return refusal(field_of(need[0]) + " needs a cgroup, and this user has none (cgroup: " + note +
                   "); remove the limit, or run in a cgroup2 subtree delegated to this user "
                   "(docs/rootless.md)");
  const CgroupHierarchy& h = plan.hierarchies[0];
  for (const std::string& ctl : need) {
    if (ctl == "network" || ctl == "rdma")
      return refusal(field_of(ctl) + ": not supported by this runtime");
    if (ctl.rfind("unified:", 0) == 0) continue;  // the file's write says whether it exists
    if (std::find(h.controllers.begin(), h.controllers.end(), ctl) == h.controllers.end()) {
      std::string have;
      for (auto& c : h.controllers) have += (have.empty() ? "" : " ") + c;
      return refusal(
          field_of(ctl) + " needs the " + ctl + " controller, which the delegated " + "cgroup " +
          h.dir + " does not have (its controllers: " + (have.empty() ? "none" : have) +
          "; the delegating manager enables them in the parent's cgroup.subtree_control)");
    }
  }
  return ok();
}

std::vector<int> container_pids(const ContainerRecord& rec) {
  if (!rec.cgroup_dirs.empty()) return cgroup_pids(rec.cgroup_dirs);
  std::vector<int> out;
  // A recycled pid is not the container's init.
  if (rec.pid <= 0 || (rec.start_time && process_start_time(rec.pid) != rec.start_time)) return out;
  struct stat init_ns {
  }, self_ns{};
  const std::string init_path = "/proc/" + std::to_string(rec.pid) + "/ns/pid";
  if (::stat(init_path.c_str(), &init_ns) != 0) return out;
  // The init shares our pid namespace: only the init is known to be its.
  if (::stat("/proc/self/ns/pid", &self_ns) == 0 && self_ns.st_ino == init_ns.st_ino &&
      self_ns.st_dev == init_ns.st_dev)
    return {rec.pid};
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    struct stat ns {};
    std::string p = std::string("/proc/") + e->d_name + "/ns/pid";
    if (::stat(p.c_str(), &ns) == 0 && ns.st_ino == init_ns.st_ino && ns.st_dev == init_ns.st_dev)
      out.push_back(std::atoi(e->d_name));
  }
  ::closedir(d);
  return out;
}

}  // namespace comet::runtime
