// The config.json fields of every runtime-spec struct, listed once. The
// parser (spec_json.cpp) and the writer (spec_serialize.cpp) both walk these
// lists, so a field is named in one place: its JSON name, its member, and
// whether the writer always writes it or omits it when empty (Go's
// `json:"name"` and `json:"name,omitempty"` in specs-go/config.go).
//
// A list is a function template over a visitor V, which provides
//   v.field(name, &S::member, emit[, out])
//       a value read from and written to `name`. Its C++ type says how: a
//       string, bool, integer, std::optional of one, a vector or string-keyed
//       map of them, or another struct of this file (read and written by its
//       own list). `out` is the member's position in the written object when
//       it differs from the order the parser reads in (linux, devices).
//   v.flag_object(name, &S::flag)
//       a member only recorded as present (a non-empty object), never
//       written back: a request the runtime refuses (see spec.hpp).
//   v.flag_array<Elem>(name, &S::flag)
//       the same for an array of Elem, type-checked as such.
//
// Fields are listed in the order the parser reads them: the first bad one
// is the one reported. Unknown members are ignored (as specs-go does).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "comet/oci/spec.hpp"

namespace comet::oci::fields {

enum class Emit {
  kAlways,     // written even when empty: `json:"name"`
  kOmitEmpty,  // omitted when "", false, 0, empty or absent: `json:",omitempty"`
};
inline constexpr Emit kAlways = Emit::kAlways;
inline constexpr Emit kOmitEmpty = Emit::kOmitEmpty;

template <typename S>
using Of = std::type_identity<S>;

// The member types the reader and writer tell apart.
template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};
template <typename T>
struct is_vector : std::false_type {};
template <typename T>
struct is_vector<std::vector<T>> : std::true_type {};
template <typename T>
struct is_map : std::false_type {};
template <typename T>
struct is_map<std::map<std::string, T>> : std::true_type {};

// ---------------------------------------------------------------------------
// process

template <typename V>
void list(V& v, Of<User>) {
  v.field("uid", &User::uid, kAlways);
  v.field("gid", &User::gid, kAlways);
  v.field("umask", &User::umask, kOmitEmpty);
  v.field("additionalGids", &User::additional_gids, kOmitEmpty);
  v.field("username", &User::username, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<ConsoleSize>) {
  v.field("height", &ConsoleSize::height, kAlways);
  v.field("width", &ConsoleSize::width, kAlways);
}

template <typename V>
void list(V& v, Of<Capabilities>) {
  v.field("bounding", &Capabilities::bounding, kOmitEmpty);
  v.field("effective", &Capabilities::effective, kOmitEmpty);
  v.field("inheritable", &Capabilities::inheritable, kOmitEmpty);
  v.field("permitted", &Capabilities::permitted, kOmitEmpty);
  v.field("ambient", &Capabilities::ambient, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<Rlimit>) {
  v.field("type", &Rlimit::type, kAlways);
  v.field("hard", &Rlimit::hard, kAlways);
  v.field("soft", &Rlimit::soft, kAlways);
}

template <typename V>
void list(V& v, Of<IoPriority>) {
  v.field("class", &IoPriority::io_class, kAlways);
  v.field("priority", &IoPriority::priority, kAlways);
}

template <typename V>
void list(V& v, Of<Scheduler>) {
  v.field("policy", &Scheduler::policy, kAlways);
  v.field("nice", &Scheduler::nice, kOmitEmpty);
  v.field("priority", &Scheduler::priority, kOmitEmpty);
  v.field("flags", &Scheduler::flags, kOmitEmpty);
  v.field("runtime", &Scheduler::runtime, kOmitEmpty);
  v.field("deadline", &Scheduler::deadline, kOmitEmpty);
  v.field("period", &Scheduler::period, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<CpuAffinity>) {
  v.field("initial", &CpuAffinity::initial, kOmitEmpty);
  v.field("final", &CpuAffinity::final_cpus, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<Process>) {
  v.field("terminal", &Process::terminal, kOmitEmpty);
  v.field("consoleSize", &Process::console_size, kOmitEmpty);
  v.field("user", &Process::user, kAlways);
  v.field("args", &Process::args, kOmitEmpty);
  v.field("commandLine", &Process::command_line, kOmitEmpty);
  v.field("env", &Process::env, kOmitEmpty);
  v.field("cwd", &Process::cwd, kAlways);
  v.field("capabilities", &Process::capabilities, kOmitEmpty);
  v.field("rlimits", &Process::rlimits, kOmitEmpty);
  v.field("noNewPrivileges", &Process::no_new_privileges, kOmitEmpty);
  v.field("apparmorProfile", &Process::apparmor_profile, kOmitEmpty);
  v.field("oomScoreAdj", &Process::oom_score_adj, kOmitEmpty);
  v.field("selinuxLabel", &Process::selinux_label, kOmitEmpty);
  v.field("ioPriority", &Process::io_priority, kOmitEmpty);
  v.field("scheduler", &Process::scheduler, kOmitEmpty);
  v.field("execCPUAffinity", &Process::exec_cpu_affinity, kOmitEmpty);
}

// ---------------------------------------------------------------------------
// root, mounts, hooks

template <typename V>
void list(V& v, Of<Root>) {
  v.field("path", &Root::path, kAlways);
  v.field("readonly", &Root::readonly, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<IdMapping>) {
  v.field("containerID", &IdMapping::container_id, kAlways);
  v.field("hostID", &IdMapping::host_id, kAlways);
  v.field("size", &IdMapping::size, kAlways);
}

template <typename V>
void list(V& v, Of<Mount>) {
  v.field("destination", &Mount::destination, kAlways);
  v.field("type", &Mount::type, kOmitEmpty);
  v.field("source", &Mount::source, kOmitEmpty);
  v.field("options", &Mount::options, kOmitEmpty);
  v.field("uidMappings", &Mount::uid_mappings, kOmitEmpty);
  v.field("gidMappings", &Mount::gid_mappings, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<Hook>) {
  v.field("path", &Hook::path, kAlways);
  v.field("args", &Hook::args, kOmitEmpty);
  v.field("env", &Hook::env, kOmitEmpty);
  v.field("timeout", &Hook::timeout, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<Hooks>) {
  v.field("prestart", &Hooks::prestart, kOmitEmpty);
  v.field("createRuntime", &Hooks::create_runtime, kOmitEmpty);
  v.field("createContainer", &Hooks::create_container, kOmitEmpty);
  v.field("startContainer", &Hooks::start_container, kOmitEmpty);
  v.field("poststart", &Hooks::poststart, kOmitEmpty);
  v.field("poststop", &Hooks::poststop, kOmitEmpty);
}

// ---------------------------------------------------------------------------
// linux.resources

template <typename V>
void list(V& v, Of<DeviceCgroup>) {
  v.field("allow", &DeviceCgroup::allow, kAlways);
  v.field("type", &DeviceCgroup::type, kOmitEmpty);
  v.field("major", &DeviceCgroup::major, kOmitEmpty);
  v.field("minor", &DeviceCgroup::minor, kOmitEmpty);
  v.field("access", &DeviceCgroup::access, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<Memory>) {
  v.field("limit", &Memory::limit, kOmitEmpty);
  v.field("reservation", &Memory::reservation, kOmitEmpty);
  v.field("swap", &Memory::swap, kOmitEmpty);
  v.field("kernel", &Memory::kernel, kOmitEmpty);
  v.field("kernelTCP", &Memory::kernel_tcp, kOmitEmpty);
  v.field("swappiness", &Memory::swappiness, kOmitEmpty);
  v.field("disableOOMKiller", &Memory::disable_oom_killer, kOmitEmpty);
  v.field("useHierarchy", &Memory::use_hierarchy, kOmitEmpty);
  v.field("checkBeforeUpdate", &Memory::check_before_update, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<Cpu>) {
  v.field("shares", &Cpu::shares, kOmitEmpty);
  v.field("quota", &Cpu::quota, kOmitEmpty);
  v.field("burst", &Cpu::burst, kOmitEmpty);
  v.field("period", &Cpu::period, kOmitEmpty);
  v.field("realtimeRuntime", &Cpu::realtime_runtime, kOmitEmpty);
  v.field("realtimePeriod", &Cpu::realtime_period, kOmitEmpty);
  v.field("cpus", &Cpu::cpus, kOmitEmpty);
  v.field("mems", &Cpu::mems, kOmitEmpty);
  v.field("idle", &Cpu::idle, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<Pids>) {
  v.field("limit", &Pids::limit, kAlways);
}

template <typename V>
void list(V& v, Of<WeightDevice>) {
  v.field("major", &WeightDevice::major, kAlways);
  v.field("minor", &WeightDevice::minor, kAlways);
  v.field("weight", &WeightDevice::weight, kOmitEmpty);
  v.field("leafWeight", &WeightDevice::leaf_weight, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<ThrottleDevice>) {
  v.field("major", &ThrottleDevice::major, kAlways);
  v.field("minor", &ThrottleDevice::minor, kAlways);
  v.field("rate", &ThrottleDevice::rate, kAlways);
}

template <typename V>
void list(V& v, Of<BlockIO>) {
  v.field("weight", &BlockIO::weight, kOmitEmpty);
  v.field("leafWeight", &BlockIO::leaf_weight, kOmitEmpty);
  v.field("weightDevice", &BlockIO::weight_device, kOmitEmpty);
  v.field("throttleReadBpsDevice", &BlockIO::throttle_read_bps, kOmitEmpty);
  v.field("throttleWriteBpsDevice", &BlockIO::throttle_write_bps, kOmitEmpty);
  v.field("throttleReadIOPSDevice", &BlockIO::throttle_read_iops, kOmitEmpty);
  v.field("throttleWriteIOPSDevice", &BlockIO::throttle_write_iops, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<HugepageLimit>) {
  v.field("pageSize", &HugepageLimit::page_size, kAlways);
  v.field("limit", &HugepageLimit::limit, kAlways);
}

template <typename V>
void list(V& v, Of<Resources>) {
  v.field("devices", &Resources::devices, kOmitEmpty);
  v.field("memory", &Resources::memory, kOmitEmpty);
  v.field("cpu", &Resources::cpu, kOmitEmpty);
  v.field("pids", &Resources::pids, kOmitEmpty);
  v.field("blockIO", &Resources::block_io, kOmitEmpty);
  v.field("hugepageLimits", &Resources::hugepage_limits, kOmitEmpty);
  v.field("unified", &Resources::unified, kOmitEmpty);
  v.flag_object("network", &Resources::has_network);
  v.flag_object("rdma", &Resources::has_rdma);
}

// ---------------------------------------------------------------------------
// linux.seccomp

template <typename V>
void list(V& v, Of<SeccompArg>) {
  v.field("index", &SeccompArg::index, kAlways);
  v.field("value", &SeccompArg::value, kAlways);
  v.field("valueTwo", &SeccompArg::value_two, kOmitEmpty);
  v.field("op", &SeccompArg::op, kAlways);
}

template <typename V>
void list(V& v, Of<SeccompSyscall>) {
  v.field("names", &SeccompSyscall::names, kAlways);
  v.field("action", &SeccompSyscall::action, kAlways);
  v.field("errnoRet", &SeccompSyscall::errno_ret, kOmitEmpty);
  v.field("args", &SeccompSyscall::args, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<Seccomp>) {
  v.field("defaultAction", &Seccomp::default_action, kAlways);
  v.field("defaultErrnoRet", &Seccomp::default_errno_ret, kOmitEmpty);
  v.field("architectures", &Seccomp::architectures, kOmitEmpty);
  v.field("flags", &Seccomp::flags, kOmitEmpty);
  v.field("listenerPath", &Seccomp::listener_path, kOmitEmpty);
  v.field("listenerMetadata", &Seccomp::listener_metadata, kOmitEmpty);
  v.field("syscalls", &Seccomp::syscalls, kOmitEmpty);
}

// ---------------------------------------------------------------------------
// linux

template <typename V>
void list(V& v, Of<Namespace>) {
  v.field("type", &Namespace::type, kAlways);
  v.field("path", &Namespace::path, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<Device>) {
  // Read type first; written path first, as runc writes it.
  v.field("type", &Device::type, kAlways, 1);
  v.field("path", &Device::path, kAlways, 0);
  v.field("major", &Device::major, kAlways, 2);
  v.field("minor", &Device::minor, kAlways, 3);
  v.field("fileMode", &Device::file_mode, kOmitEmpty, 4);
  v.field("uid", &Device::uid, kOmitEmpty, 5);
  v.field("gid", &Device::gid, kOmitEmpty, 6);
}

template <typename V>
void list(V& v, Of<TimeOffset>) {
  v.field("secs", &TimeOffset::secs, kOmitEmpty);
  v.field("nanosecs", &TimeOffset::nanosecs, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<Personality>) {
  v.field("domain", &Personality::domain, kAlways);
  v.field("flags", &Personality::flags, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<MemoryPolicy>) {
  v.field("mode", &MemoryPolicy::mode, kAlways);
  v.field("nodes", &MemoryPolicy::nodes, kAlways);
  v.field("flags", &MemoryPolicy::flags, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<NetDevice>) {
  v.field("name", &NetDevice::name, kOmitEmpty);
}

template <typename V>
void list(V& v, Of<Linux>) {
  // The last column is the Go struct order, in which the members are written.
  v.field("namespaces", &Linux::namespaces, kOmitEmpty, 5);
  v.field("uidMappings", &Linux::uid_mappings, kOmitEmpty, 0);
  v.field("gidMappings", &Linux::gid_mappings, kOmitEmpty, 1);
  v.field("timeOffsets", &Linux::time_offsets, kOmitEmpty, 13);
  v.field("devices", &Linux::devices, kOmitEmpty, 6);
  v.field("cgroupsPath", &Linux::cgroups_path, kOmitEmpty, 4);
  v.field("resources", &Linux::resources, kOmitEmpty, 3);
  v.field("rootfsPropagation", &Linux::rootfs_propagation, kOmitEmpty, 8);
  v.field("seccomp", &Linux::seccomp, kOmitEmpty, 7);
  v.field("sysctl", &Linux::sysctl, kOmitEmpty, 2);
  v.field("maskedPaths", &Linux::masked_paths, kOmitEmpty, 9);
  v.field("readonlyPaths", &Linux::readonly_paths, kOmitEmpty, 10);
  v.field("mountLabel", &Linux::mount_label, kOmitEmpty, 11);
  v.field("personality", &Linux::personality, kOmitEmpty, 12);
  v.flag_object("intelRdt", &Linux::has_intel_rdt);
  v.field("memoryPolicy", &Linux::memory_policy, kOmitEmpty, 14);
  v.field("netDevices", &Linux::net_devices, kOmitEmpty, 15);
}

template <typename V>
void list(V& v, Of<Spec>) {
  v.field("ociVersion", &Spec::oci_version, kAlways);
  v.field("process", &Spec::process, kOmitEmpty);
  v.field("root", &Spec::root, kOmitEmpty);
  v.field("hostname", &Spec::hostname, kOmitEmpty);
  v.field("domainname", &Spec::domainname, kOmitEmpty);
  v.field("mounts", &Spec::mounts, kOmitEmpty);
  v.field("hooks", &Spec::hooks, kOmitEmpty);
  v.field("annotations", &Spec::annotations, kOmitEmpty);
  v.field("linux", &Spec::linux_, kOmitEmpty);
}

}  // namespace comet::oci::fields
