#include "comet/lifecycle/process_attrs.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "comet/base/fd.hpp"

namespace comet::runtime {
namespace {

constexpr unsigned kMaxIds = 8192;
constexpr long kResctrlMagic = 0x7655821;  // RDTGROUP_SUPER_MAGIC

struct Named {
  const char* name;
  unsigned value;
};

// include/uapi/linux/ioprio.h
constexpr Named kIoClasses[] = {
    {"IOPRIO_CLASS_RT", 1}, {"IOPRIO_CLASS_BE", 2}, {"IOPRIO_CLASS_IDLE", 3}};
constexpr int kIoprioClassShift = 13;
constexpr int kIoprioWhoProcess = 1;

// include/uapi/linux/sched.h
constexpr Named kPolicies[] = {{"SCHED_OTHER", 0},   {"SCHED_FIFO", 1}, {"SCHED_RR", 2},
                               {"SCHED_BATCH", 3},   {"SCHED_ISO", 4},  {"SCHED_IDLE", 5},
                               {"SCHED_DEADLINE", 6}};
constexpr Named kSchedFlags[] = {
    {"SCHED_FLAG_RESET_ON_FORK", 0x01}, {"SCHED_FLAG_RECLAIM", 0x02},
    {"SCHED_FLAG_DL_OVERRUN", 0x04},    {"SCHED_FLAG_KEEP_POLICY", 0x08},
    {"SCHED_FLAG_KEEP_PARAMS", 0x10},   {"SCHED_FLAG_UTIL_CLAMP_MIN", 0x20},
    {"SCHED_FLAG_UTIL_CLAMP_MAX", 0x40}};

// include/uapi/linux/mempolicy.h
constexpr Named kMpolModes[] = {{"MPOL_DEFAULT", 0},
                                {"MPOL_PREFERRED", 1},
                                {"MPOL_BIND", 2},
                                {"MPOL_INTERLEAVE", 3},
                                {"MPOL_LOCAL", 4},
                                {"MPOL_PREFERRED_MANY", 5},
                                {"MPOL_WEIGHTED_INTERLEAVE", 6}};
constexpr Named kMpolFlags[] = {{"MPOL_F_NUMA_BALANCING", 1u << 13},
                                {"MPOL_F_RELATIVE_NODES", 1u << 14},
                                {"MPOL_F_STATIC_NODES", 1u << 15}};

template <size_t N>
std::vector<std::string> all_names(const Named (&table)[N]) {
  std::vector<std::string> v;
  for (const Named& n : table) v.emplace_back(n.name);
  return v;
}

template <size_t N>
std::optional<unsigned> lookup(const Named (&table)[N], const std::string& name) {
  for (const Named& n : table)
    if (name == n.name) return n.value;
  return std::nullopt;
}

template <size_t N>
std::string names(const Named (&table)[N]) {
  std::string s;
  for (size_t i = 0; i < N; i++)
    s += (i ? (i + 1 == N ? " or " : ", ") : "") + std::string(table[i].name);
  return s;
}

Error bad(const std::string& field, const std::string& value, const std::string& why) {
  return Error::msg(field + " \"" + value + "\": " + why);
}

Status plan_ioprio(const oci::IoPriority& io, ProcessAttrs& a) {
  auto cls = lookup(kIoClasses, io.io_class);
  if (!cls)
    return bad("process.ioPriority.class", io.io_class,
               "unknown class (expected " + names(kIoClasses) + ")");
  if (io.priority < 0 || io.priority > 7)
    return Error::msg("process.ioPriority.priority " + std::to_string(io.priority) +
                      ": out of range (0 to 7)");
  a.ioprio = static_cast<int>(*cls << kIoprioClassShift) | io.priority;
  return {};
}

Status plan_sched(const oci::Scheduler& s, ProcessAttrs& a) {
  const std::string f = "process.scheduler";
  auto policy = lookup(kPolicies, s.policy);
  if (!policy)
    return bad(f + ".policy", s.policy, "unknown policy (expected " + names(kPolicies) + ")");
  if (s.policy == "SCHED_ISO")
    return bad(f + ".policy", s.policy, "not implemented by Linux (the kernel refuses it)");
  if (s.nice < -20 || s.nice > 19)
    return Error::msg(f + ".nice " + std::to_string(s.nice) + ": out of range (-20 to 19)");
  const bool realtime = s.policy == "SCHED_FIFO" || s.policy == "SCHED_RR";
  if (realtime && (s.priority < 1 || s.priority > 99))
    return Error::msg(f + ".priority " + std::to_string(s.priority) + ": " + s.policy +
                      " needs a priority from 1 to 99");
  if (!realtime && s.priority != 0)
    return Error::msg(f + ".priority " + std::to_string(s.priority) +
                      ": only SCHED_FIFO and SCHED_RR take a priority");
  const bool deadline = s.policy == "SCHED_DEADLINE";
  if (!deadline && (s.runtime || s.deadline || s.period))
    return Error::msg(f + ": runtime, deadline and period are for SCHED_DEADLINE only");
  if (deadline) {
    uint64_t period = s.period ? s.period : s.deadline;
    if (s.runtime < 1024 || s.runtime > s.deadline || s.deadline > period)
      return Error::msg(f +
                        ": SCHED_DEADLINE needs 1024 <= runtime <= deadline <= period "
                        "(nanoseconds; period 0 means the deadline)");
  }
  SchedAttr attr;
  attr.policy = *policy;
  attr.nice = s.nice;
  attr.priority = static_cast<uint32_t>(s.priority);
  attr.runtime = s.runtime;
  attr.deadline = s.deadline;
  attr.period = s.period;
  for (const std::string& fl : s.flags) {
    auto v = lookup(kSchedFlags, fl);
    if (!v) return bad(f + ".flags", fl, "unknown flag (expected " + names(kSchedFlags) + ")");
    attr.flags |= *v;
  }
  a.sched = attr;
  return {};
}

Status plan_mpol(const oci::MemoryPolicy& m, ProcessAttrs& a) {
  const std::string f = "linux.memoryPolicy";
  auto mode = lookup(kMpolModes, m.mode);
  if (!mode) return bad(f + ".mode", m.mode, "unknown mode (expected " + names(kMpolModes) + ")");
  const bool no_nodes = m.mode == "MPOL_DEFAULT" || m.mode == "MPOL_LOCAL";
  const bool need_nodes = !no_nodes && m.mode != "MPOL_PREFERRED";
  if (no_nodes && !m.nodes.empty()) return bad(f + ".nodes", m.nodes, m.mode + " takes no nodes");
  if (need_nodes && m.nodes.empty()) return Error::msg(f + ".nodes: required for " + m.mode);
  unsigned flags = 0;
  for (const std::string& fl : m.flags) {
    auto v = lookup(kMpolFlags, fl);
    if (!v) return bad(f + ".flags", fl, "unknown flag (expected " + names(kMpolFlags) + ")");
    flags |= *v;
  }
  if ((flags & (1u << 14)) && (flags & (1u << 15)))
    return Error::msg(f +
                      ".flags: MPOL_F_RELATIVE_NODES and MPOL_F_STATIC_NODES exclude each other");
  if (!m.nodes.empty()) {
    TRY(std::vector<uint64_t> bits, parse_id_list(m.nodes, f + ".nodes"));
    a.mpol_nodes.assign(bits.begin(), bits.end());
  }
  a.mpol_mode = static_cast<int>(*mode | flags);
  return {};
}

}  // namespace

HostFacilities detect_host_facilities() noexcept {
  HostFacilities h;
  char c = 0;
  UniqueFd fd(::open("/sys/module/apparmor/parameters/enabled", O_RDONLY | O_CLOEXEC));
  h.apparmor = fd && ::read(fd.get(), &c, 1) == 1 && c == 'Y';
  struct stat st;
  h.selinux = ::stat("/sys/fs/selinux/enforce", &st) == 0;
  struct statfs sf;
  h.resctrl = ::statfs("/sys/fs/resctrl", &sf) == 0 && sf.f_type == kResctrlMagic;
  return h;
}

Result<std::vector<uint64_t>> parse_id_list(std::string_view list, const std::string& field) {
  std::vector<uint64_t> bits;
  auto fail = [&](const std::string& why) {
    return bad(field, std::string(list), why + " (expected a list such as \"0-3,7\")");
  };
  if (list.empty()) return fail("empty");
  size_t i = 0;
  auto number = [&](unsigned& out) {
    size_t start = i;
    out = 0;
    while (i < list.size() && list[i] >= '0' && list[i] <= '9') {
      out = out * 10 + static_cast<unsigned>(list[i] - '0');
      if (out >= kMaxIds) return false;
      i++;
    }
    return i > start;
  };
  while (i <= list.size()) {
    unsigned lo = 0, hi = 0;
    if (!number(lo)) return fail("not a number, or above " + std::to_string(kMaxIds - 1));
    hi = lo;
    if (i < list.size() && list[i] == '-') {
      i++;
      if (!number(hi)) return fail("not a number, or above " + std::to_string(kMaxIds - 1));
      if (hi < lo) return fail("a range that goes down");
    }
    if (bits.size() < hi / 64 + 1) bits.resize(hi / 64 + 1, 0);
    for (unsigned n = lo; n <= hi; n++) bits[n / 64] |= uint64_t{1} << (n % 64);
    if (i == list.size()) break;
    if (list[i] != ',') return fail("unexpected '" + std::string(1, list[i]) + "'");
    i++;
  }
  return bits;
}

Result<ProcessAttrs> plan_process_attrs(const oci::Process& p, const oci::Linux& lx,
                                        const HostFacilities& host) {
  ProcessAttrs a;
  if (p.io_priority) TRYV(plan_ioprio(*p.io_priority, a));
  if (p.scheduler) TRYV(plan_sched(*p.scheduler, a));
  if (p.exec_cpu_affinity) {
    const oci::CpuAffinity& c = *p.exec_cpu_affinity;
    if (!c.initial.empty()) {
      TRY(a.cpus_initial, parse_id_list(c.initial, "process.execCPUAffinity.initial"));
    }
    if (!c.final_cpus.empty()) {
      TRY(a.cpus_final, parse_id_list(c.final_cpus, "process.execCPUAffinity.final"));
    }
  }
  if (lx.memory_policy) TRYV(plan_mpol(*lx.memory_policy, a));
  if (!p.apparmor_profile.empty()) {
    if (host.apparmor)
      a.apparmor_exec = "exec " + p.apparmor_profile;
    else
      a.notes.push_back("process.apparmorProfile \"" + p.apparmor_profile +
                        "\": AppArmor is not enabled on this host, not applied");
  }
  if (!p.selinux_label.empty()) {
    if (host.selinux)
      a.selinux_exec = p.selinux_label;
    else
      a.notes.push_back("process.selinuxLabel \"" + p.selinux_label +
                        "\": SELinux is not enabled on this host, not applied");
  }
  return a;
}

int apply_sched_attrs(const ProcessAttrs& a, const char** what) noexcept {
  if (a.ioprio && ::syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, *a.ioprio) < 0) {
    *what = "ioprio_set (process.ioPriority)";
    return errno;
  }
  if (a.sched) {
    struct {
      uint32_t size, policy;
      uint64_t flags;
      int32_t nice;
      uint32_t priority;
      uint64_t runtime, deadline, period;
    } attr = {48,
              a.sched->policy,
              a.sched->flags,
              a.sched->nice,
              a.sched->priority,
              a.sched->runtime,
              a.sched->deadline,
              a.sched->period};
    static_assert(sizeof attr == 48);
    if (::syscall(SYS_sched_setattr, 0, &attr, 0) < 0) {
      *what = "sched_setattr (process.scheduler)";
      return errno;
    }
  }
  if (a.mpol_mode) {
    const unsigned long* mask = a.mpol_nodes.empty() ? nullptr : a.mpol_nodes.data();
    unsigned long maxnode = a.mpol_nodes.empty() ? 0 : a.mpol_nodes.size() * 64 + 1;
    if (::syscall(SYS_set_mempolicy, *a.mpol_mode, mask, maxnode) < 0) {
      *what = "set_mempolicy (linux.memoryPolicy)";
      return errno;
    }
  }
  return 0;
}

int apply_affinity(const std::vector<uint64_t>& cpus) noexcept {
  if (cpus.empty()) return 0;
  if (::syscall(SYS_sched_setaffinity, 0, cpus.size() * sizeof(uint64_t), cpus.data()) < 0)
    return errno;
  return 0;
}

int write_exec_attr(int proc_dir, const char* lsm_dir, const std::string& value) noexcept {
  int fd = -1;
  if (lsm_dir) {
    char path[64];
    std::snprintf(path, sizeof path, "thread-self/attr/%s/exec", lsm_dir);
    fd = ::openat(proc_dir, path, O_WRONLY | O_CLOEXEC);
  }
  if (fd < 0) fd = ::openat(proc_dir, "thread-self/attr/exec", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  UniqueFd owner(fd);
  ssize_t n = ::write(fd, value.data(), value.size());
  if (n < 0) return errno;
  return static_cast<size_t>(n) == value.size() ? 0 : EIO;
}

std::vector<std::string> memory_policy_modes() {
  return all_names(kMpolModes);
}

std::vector<std::string> memory_policy_flags() {
  return all_names(kMpolFlags);
}

}  // namespace comet::runtime
