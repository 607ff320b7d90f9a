// The container process's scheduling, I/O priority, CPU affinity, memory
// policy and LSM exec label (runtime-spec 1.2/1.3: process.ioPriority,
// process.scheduler, process.execCPUAffinity, linux.memoryPolicy,
// process.apparmorProfile, process.selinuxLabel).
//
// plan_process_attrs() is pure: names to kernel values, every range and
// combination the kernel would refuse with a bare EINVAL refused here with a
// line naming the field. apply_*() make the system calls, in the child
// (child.cpp), single-threaded and noexcept: they return 0 or an errno.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/oci/spec.hpp"

namespace comet::runtime {

// What the host offers that a config may ask for (detect_host_facilities()
// reads it; tests make their own).
struct HostFacilities {
  bool apparmor = false;  // /sys/module/apparmor/parameters/enabled is "Y"
  bool selinux = false;   // selinuxfs is mounted (/sys/fs/selinux/enforce exists)
  bool resctrl = false;   // /sys/fs/resctrl is a resctrl mount (linux.intelRdt)
};
HostFacilities detect_host_facilities() noexcept;

// struct sched_attr (sched_setattr(2)), the fields we set.
struct SchedAttr {
  uint32_t policy = 0;
  uint64_t flags = 0;
  int32_t nice = 0;
  uint32_t priority = 0;
  uint64_t runtime = 0, deadline = 0, period = 0;
};

struct ProcessAttrs {
  std::optional<int> ioprio;  // IOPRIO_PRIO_VALUE(class, level)
  std::optional<SchedAttr> sched;
  std::vector<uint64_t> cpus_initial;  // CPU bitmaps; empty: leave as is
  std::vector<uint64_t> cpus_final;
  std::optional<int> mpol_mode;  // mode | flags
  std::vector<unsigned long> mpol_nodes;
  // Written to the exec attribute just before execve; empty: nothing.
  std::string apparmor_exec;  // "exec PROFILE"
  std::string selinux_exec;   // the label
  // Why a requested label is not applied (no such LSM on the host): logged
  // at debug level by the caller, as runc does.
  std::vector<std::string> notes;

  bool empty() const noexcept {
    return !ioprio && !sched && cpus_initial.empty() && cpus_final.empty() && !mpol_mode &&
           apparmor_exec.empty() && selinux_exec.empty();
  }
};

// "0-3,7" to a bitmap (bit N of word N/64); at most 8192 CPUs/nodes.
// `field` names the config field in errors.
Result<std::vector<uint64_t>> parse_id_list(std::string_view list, const std::string& field);

Result<ProcessAttrs> plan_process_attrs(const oci::Process& p, const oci::Linux& lx,
                                        const HostFacilities& host);

// In the child. Each returns 0 or errno; `what` is set to the failing step.
// The linux.memoryPolicy modes and flags this runtime knows (features).
std::vector<std::string> memory_policy_modes();
std::vector<std::string> memory_policy_flags();
int apply_sched_attrs(const ProcessAttrs& a, const char** what) noexcept;  // ioprio, sched, mpol
int apply_affinity(const std::vector<uint64_t>& cpus) noexcept;
// Writes the exec label under proc_dir (an fd of a procfs, or of a test
// tree): "thread-self/attr/apparmor/exec", else "thread-self/attr/exec"
// (kernels before 5.8, and SELinux).
int write_exec_attr(int proc_dir, const char* lsm_dir, const std::string& value) noexcept;

}  // namespace comet::runtime
