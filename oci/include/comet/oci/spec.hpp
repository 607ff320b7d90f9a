// The OCI runtime-spec (v1.0 .. v1.3) config.json model: plain data, no
// syscalls. Parsing and validation live in spec_json.cpp / validate.cpp.
//
// Optional blocks are std::optional so that "absent" and "empty" stay
// distinguishable where the spec gives them different meanings (for example
// linux.seccomp absent = no filter; process.capabilities absent = no caps).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "comet/base/result.hpp"

namespace comet::oci {

struct Rlimit {
  std::string type;  // "RLIMIT_NOFILE"
  uint64_t hard = 0;
  uint64_t soft = 0;
};

struct Capabilities {
  std::vector<std::string> bounding, effective, inheritable, permitted, ambient;
};

struct User {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::optional<uint32_t> umask;
  std::vector<uint32_t> additional_gids;
  std::string username;  // windows only in the spec; kept for round-trip
};

struct ConsoleSize {
  uint32_t height = 0;
  uint32_t width = 0;
};

// process.ioPriority: ioprio_set(2) of the container process.
struct IoPriority {
  std::string io_class;  // IOPRIO_CLASS_RT, IOPRIO_CLASS_BE, IOPRIO_CLASS_IDLE
  int32_t priority = 0;  // 0 (highest) .. 7
};

// process.scheduler: sched_setattr(2) of the container process.
struct Scheduler {
  std::string policy;  // SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_ISO, SCHED_IDLE,
                       // SCHED_DEADLINE
  int32_t nice = 0;
  int32_t priority = 0;
  std::vector<std::string> flags;  // SCHED_FLAG_*
  uint64_t runtime = 0, deadline = 0, period = 0;
};

// process.execCPUAffinity: the runtime's process before it joins the
// cgroup (initial), and the container process (final). cpuset lists: "0-3,7".
struct CpuAffinity {
  std::string initial;
  std::string final_cpus;
};

struct Process {
  bool terminal = false;
  std::optional<ConsoleSize> console_size;
  User user;
  std::vector<std::string> args;
  std::string command_line;  // windows
  std::vector<std::string> env;
  std::string cwd;
  std::optional<Capabilities> capabilities;
  std::vector<Rlimit> rlimits;
  bool no_new_privileges = false;
  std::string apparmor_profile;
  std::optional<int> oom_score_adj;
  std::string selinux_label;
  std::optional<IoPriority> io_priority;         // v1.2
  std::optional<Scheduler> scheduler;            // v1.2
  std::optional<CpuAffinity> exec_cpu_affinity;  // v1.2
};

struct Root {
  std::string path;
  bool readonly = false;
};

struct IdMapping {
  uint32_t container_id = 0;
  uint32_t host_id = 0;
  uint32_t size = 0;
};

struct Mount {
  std::string destination;
  std::string type;
  std::string source;
  std::vector<std::string> options;
  // uidMappings/gidMappings (v1.2): an idmapped mount (mount_plan.hpp).
  std::vector<IdMapping> uid_mappings, gid_mappings;
};

struct Hook {
  std::string path;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::optional<int> timeout;  // seconds, > 0
};

struct Hooks {
  std::vector<Hook> prestart, create_runtime, create_container, start_container, poststart,
      poststop;
};

struct Namespace {
  std::string type;  // pid network mount ipc uts user cgroup time
  std::string path;  // empty: create a new one
};

struct Device {
  std::string type;  // c b u p
  std::string path;
  int64_t major = 0;
  int64_t minor = 0;
  std::optional<uint32_t> file_mode;
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
};

struct DeviceCgroup {
  bool allow = false;
  std::string type;  // a c b; empty = all
  std::optional<int64_t> major;
  std::optional<int64_t> minor;
  std::string access;  // rwm
};

struct Memory {
  std::optional<int64_t> limit, reservation, swap, kernel, kernel_tcp;
  std::optional<uint64_t> swappiness;
  std::optional<bool> disable_oom_killer;
  std::optional<bool> use_hierarchy;
  std::optional<bool> check_before_update;
};

struct Cpu {
  std::optional<uint64_t> shares;
  std::optional<int64_t> quota;
  std::optional<int64_t> burst;
  std::optional<uint64_t> period;
  std::optional<int64_t> realtime_runtime;
  std::optional<uint64_t> realtime_period;
  std::string cpus, mems;
  std::optional<int64_t> idle;
};

struct Pids {
  int64_t limit = 0;
};

struct WeightDevice {
  int64_t major = 0, minor = 0;
  std::optional<uint16_t> weight, leaf_weight;
};

struct ThrottleDevice {
  int64_t major = 0, minor = 0;
  uint64_t rate = 0;
};

struct BlockIO {
  std::optional<uint16_t> weight, leaf_weight;
  std::vector<WeightDevice> weight_device;
  std::vector<ThrottleDevice> throttle_read_bps, throttle_write_bps, throttle_read_iops,
      throttle_write_iops;
};

struct HugepageLimit {
  std::string page_size;  // "2MB"
  uint64_t limit = 0;
};

struct Resources {
  std::vector<DeviceCgroup> devices;
  std::optional<Memory> memory;
  std::optional<Cpu> cpu;
  std::optional<Pids> pids;
  std::optional<BlockIO> block_io;
  std::vector<HugepageLimit> hugepage_limits;
  std::map<std::string, std::string> unified;  // cgroup v2 key=value
  bool has_network = false;                    // network/rdma: refused
  bool has_rdma = false;
};

struct SeccompArg {
  uint32_t index = 0;
  uint64_t value = 0;
  uint64_t value_two = 0;
  std::string op;  // SCMP_CMP_EQ ...
};

struct SeccompSyscall {
  std::vector<std::string> names;
  std::string action;  // SCMP_ACT_*
  std::optional<uint32_t> errno_ret;
  std::vector<SeccompArg> args;
};

struct Seccomp {
  std::string default_action;
  std::optional<uint32_t> default_errno_ret;
  std::vector<std::string> architectures;  // SCMP_ARCH_*
  std::vector<std::string> flags;          // SECCOMP_FILTER_FLAG_*
  std::string listener_path;
  std::string listener_metadata;
  std::vector<SeccompSyscall> syscalls;
};

struct Personality {
  std::string domain;  // LINUX LINUX32
  std::vector<std::string> flags;
};

// linux.memoryPolicy: set_mempolicy(2) of the container process.
struct MemoryPolicy {
  std::string mode;   // MPOL_DEFAULT, MPOL_BIND, MPOL_INTERLEAVE, MPOL_WEIGHTED_INTERLEAVE,
                      // MPOL_PREFERRED, MPOL_PREFERRED_MANY, MPOL_LOCAL
  std::string nodes;  // "0-3,7"
  std::vector<std::string> flags;  // MPOL_F_NUMA_BALANCING, MPOL_F_RELATIVE_NODES,
                                   // MPOL_F_STATIC_NODES
};

// linux.netDevices["eth1"]: the name inside the container ("" keeps it).
struct NetDevice {
  std::string name;
};

struct TimeOffset {
  int64_t secs = 0;
  uint32_t nanosecs = 0;
};

struct Linux {
  std::vector<Namespace> namespaces;
  std::vector<IdMapping> uid_mappings, gid_mappings;
  std::map<std::string, TimeOffset> time_offsets;  // "monotonic", "boottime"
  std::vector<Device> devices;
  std::string cgroups_path;
  std::optional<Resources> resources;
  std::string rootfs_propagation;
  std::optional<Seccomp> seccomp;
  std::map<std::string, std::string> sysctl;
  std::vector<std::string> masked_paths;
  std::vector<std::string> readonly_paths;
  std::string mount_label;
  std::optional<Personality> personality;
  bool has_intel_rdt = false;
  std::optional<MemoryPolicy> memory_policy;  // v1.3
  // v1.2: host interfaces moved into the container's netns, by host name.
  std::map<std::string, NetDevice> net_devices;
};

struct Spec {
  std::string oci_version;
  std::optional<Process> process;
  std::optional<Root> root;
  std::string hostname;
  std::string domainname;
  std::vector<Mount> mounts;
  std::optional<Hooks> hooks;
  std::map<std::string, std::string> annotations;
  std::optional<Linux> linux_;  // "linux" (a macro under GNU extensions)
};

// Parse config.json text. Errors name the JSON field path:
//   "config.json: process.user.uid: expected an unsigned integer, got \"root\""
Result<Spec> parse_spec(std::string_view json_text);

// Semantic validation as runtime-spec requires it (ociVersion major 1,
// absolute mount destinations, known namespace types, no duplicate namespace
// types, user ns mappings when a user ns is created, known rlimit and
// capability names, ...). Returns the first problem found.
Status validate_spec(const Spec& spec);

// Serialise back to JSON text (used by `spec`, golden tests, pack bundle).
std::string to_json(const Spec& spec, int indent = 2);

// The config.json `runc spec` writes (rootless = false), with args `sh`.
Spec default_spec();

// What `runc spec --rootless` makes of a spec (runc's specconv.ToRootless):
// no network namespace (the user could not configure one), a new user
// namespace mapping container 0 to the caller's UID and GID (one id each:
// what an ordinary user may write without newuidmap), /sys bind-mounted
// (rbind,nosuid,noexec,nodev,ro: sysfs cannot be mounted without a network
// namespace of the user's own), no uid=/gid= mount options (ids outside the
// mapping cannot be given), and no linux.resources (no cgroup to hold them).
// default_spec() through it is tests/data/oci/good/runc-rootless.json with
// UID and GID 0.
void to_rootless(Spec& spec, uint32_t uid, uint32_t gid);

// Lookup helpers.
bool has_namespace(const Spec& spec, std::string_view type);
const Namespace* find_namespace(const Spec& spec, std::string_view type);

}  // namespace comet::oci
