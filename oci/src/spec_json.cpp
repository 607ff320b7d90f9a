// config.json -> Spec. Every field is read through a small set of typed
// helpers that know the JSON path of the value, so a type error names the
// field and the offending value:
//   config.json: process.user.uid: expected an unsigned 32-bit integer, got "root"
// nlohmann exceptions are caught in parse_spec() and never escape.
//
// Semantics follow the Go reference (specs-go): unknown fields are ignored,
// null counts as absent, a missing field keeps its zero value; the semantic
// checks live in validate.cpp.
#include <cstdint>
#include <exception>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "comet/oci/spec.hpp"

namespace comet::oci {
namespace {

using json = nlohmann::json;
// comet::Status, even in a translation unit that also sees oci::Status (state.hpp).
using Status = ::comet::Status;

// ---------------------------------------------------------------------------
// Paths and error text.

std::string child(const std::string& path, std::string_view key) {
  if (path.empty()) return std::string(key);
  std::string p = path;
  p += '.';
  p += key;
  return p;
}

std::string at(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// Map keys are arbitrary strings ("net.ipv4.ip_forward"): always bracketed.
std::string key_path(const std::string& path, const std::string& key) {
  return path + "[" + json(key).dump(-1, ' ', false, json::error_handler_t::replace) + "]";
}

// How a bad value is shown: scalars as JSON text, containers by kind.
std::string describe(const json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  constexpr size_t kMax = 80;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

Error type_error(const std::string& path, std::string_view expected, const json& got) {
  std::string m = path.empty() ? std::string() : path + ": ";
  m += "expected ";
  m += expected;
  m += ", got ";
  m += describe(got);
  return Error::msg(std::move(m));
}

// The member `key` of object `obj`, or nullptr when absent or null.
const json* member(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// ---------------------------------------------------------------------------
// Scalars.

template <typename T>
constexpr const char* int_kind() {
  if constexpr (std::is_same_v<T, uint16_t>) return "an unsigned 16-bit integer";
  if constexpr (std::is_same_v<T, uint32_t>) return "an unsigned 32-bit integer";
  if constexpr (std::is_same_v<T, uint64_t>) return "an unsigned 64-bit integer";
  if constexpr (std::is_same_v<T, int32_t>) return "a 32-bit integer";
  if constexpr (std::is_same_v<T, int64_t>) return "a 64-bit integer";
  return "an integer";
}

template <typename T>
Result<T> as_int(const json& j, const std::string& path) {
  static_assert(std::is_integral_v<T> && sizeof(T) <= 8);
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v <= static_cast<uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(v);
  } else if (j.is_number_integer()) {
    const int64_t v = j.get<int64_t>();
    if constexpr (std::is_signed_v<T>) {
      if (v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
          v <= static_cast<int64_t>(std::numeric_limits<T>::max()))
        return static_cast<T>(v);
    } else {
      if (v >= 0 && static_cast<uint64_t>(v) <= std::numeric_limits<T>::max())
        return static_cast<T>(v);
    }
  }
  return type_error(path, int_kind<T>(), j);
}

Result<std::string> as_string(const json& j, const std::string& path) {
  if (!j.is_string()) return type_error(path, "a string", j);
  return j.get<std::string>();
}

Status expect_object(const json& j, const std::string& path) {
  if (!j.is_object()) return type_error(path, "an object", j);
  return ok();
}

Status get(const json& obj, const std::string& path, const char* key, std::string& out) {
  const json* v = member(obj, key);
  if (!v) return ok();
  TRY(out, as_string(*v, child(path, key)));
  return ok();
}

Status get(const json& obj, const std::string& path, const char* key, bool& out) {
  const json* v = member(obj, key);
  if (!v) return ok();
  if (!v->is_boolean()) return type_error(child(path, key), "a boolean", *v);
  out = v->get<bool>();
  return ok();
}

Status get(const json& obj, const std::string& path, const char* key, std::optional<bool>& out) {
  const json* v = member(obj, key);
  if (!v) return ok();
  if (!v->is_boolean()) return type_error(child(path, key), "a boolean", *v);
  out = v->get<bool>();
  return ok();
}

template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
Status get(const json& obj, const std::string& path, const char* key, T& out) {
  const json* v = member(obj, key);
  if (!v) return ok();
  TRY(out, as_int<T>(*v, child(path, key)));
  return ok();
}

template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
Status get(const json& obj, const std::string& path, const char* key, std::optional<T>& out) {
  const json* v = member(obj, key);
  if (!v) return ok();
  TRY(out, as_int<T>(*v, child(path, key)));
  return ok();
}

// ---------------------------------------------------------------------------
// Containers.

// An array member: parse each element with fn(const json&, path, T&) -> Status.
template <typename T, typename Fn>
Status get_array(const json& obj, const std::string& path, const char* key, std::vector<T>& out,
                 Fn fn) {
  const json* v = member(obj, key);
  if (!v) return ok();
  const std::string p = child(path, key);
  if (!v->is_array()) return type_error(p, "an array", *v);
  out.clear();
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    T item{};
    TRYV(fn((*v)[i], at(p, i), item));
    out.push_back(std::move(item));
  }
  return ok();
}

Status parse_string(const json& j, const std::string& path, std::string& out) {
  TRY(out, as_string(j, path));
  return ok();
}

template <typename T>
Status parse_int(const json& j, const std::string& path, T& out) {
  TRY(out, as_int<T>(j, path));
  return ok();
}

Status get(const json& obj, const std::string& path, const char* key,
           std::vector<std::string>& out) {
  return get_array(obj, path, key, out, parse_string);
}

// A {"key": "value"} member.
Status get(const json& obj, const std::string& path, const char* key,
           std::map<std::string, std::string>& out) {
  const json* v = member(obj, key);
  if (!v) return ok();
  const std::string p = child(path, key);
  TRYV(expect_object(*v, p));
  out.clear();
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (it->is_null()) continue;
    TRY(auto s, as_string(*it, key_path(p, it.key())));
    out.emplace(it.key(), std::move(s));
  }
  return ok();
}

// An optional object member parsed with fn(const json&, path, T&) -> Status.
template <typename T, typename Fn>
Status get_object(const json& obj, const std::string& path, const char* key, std::optional<T>& out,
                  Fn fn) {
  const json* v = member(obj, key);
  if (!v) return ok();
  const std::string p = child(path, key);
  TRYV(expect_object(*v, p));
  T item{};
  TRYV(fn(*v, p, item));
  out = std::move(item);
  return ok();
}

// Members the model only records as present: true when the value is a
// non-empty object (an empty one requests nothing).
Result<bool> has_object(const json& obj, const std::string& path, const char* key) {
  const json* v = member(obj, key);
  if (!v) return false;
  TRYV(expect_object(*v, child(path, key)));
  return !v->empty();
}

// ---------------------------------------------------------------------------
// Process.

Status parse_user(const json& j, const std::string& p, User& u) {
  TRYV(expect_object(j, p));
  TRYV(get(j, p, "uid", u.uid));
  TRYV(get(j, p, "gid", u.gid));
  TRYV(get(j, p, "umask", u.umask));
  TRYV(get_array(j, p, "additionalGids", u.additional_gids, parse_int<uint32_t>));
  TRYV(get(j, p, "username", u.username));
  return ok();
}

Status parse_console_size(const json& j, const std::string& p, ConsoleSize& c) {
  TRYV(get(j, p, "height", c.height));
  TRYV(get(j, p, "width", c.width));
  return ok();
}

Status parse_capabilities(const json& j, const std::string& p, Capabilities& c) {
  TRYV(get(j, p, "bounding", c.bounding));
  TRYV(get(j, p, "effective", c.effective));
  TRYV(get(j, p, "inheritable", c.inheritable));
  TRYV(get(j, p, "permitted", c.permitted));
  TRYV(get(j, p, "ambient", c.ambient));
  return ok();
}

Status parse_rlimit(const json& j, const std::string& p, Rlimit& r) {
  TRYV(expect_object(j, p));
  TRYV(get(j, p, "type", r.type));
  TRYV(get(j, p, "hard", r.hard));
  TRYV(get(j, p, "soft", r.soft));
  return ok();
}

Status parse_process(const json& j, const std::string& p, Process& pr) {
  TRYV(get(j, p, "terminal", pr.terminal));
  TRYV(get_object(j, p, "consoleSize", pr.console_size, parse_console_size));
  if (const json* u = member(j, "user")) TRYV(parse_user(*u, child(p, "user"), pr.user));
  TRYV(get(j, p, "args", pr.args));
  TRYV(get(j, p, "commandLine", pr.command_line));
  TRYV(get(j, p, "env", pr.env));
  TRYV(get(j, p, "cwd", pr.cwd));
  TRYV(get_object(j, p, "capabilities", pr.capabilities, parse_capabilities));
  TRYV(get_array(j, p, "rlimits", pr.rlimits, parse_rlimit));
  TRYV(get(j, p, "noNewPrivileges", pr.no_new_privileges));
  TRYV(get(j, p, "apparmorProfile", pr.apparmor_profile));
  TRYV(get(j, p, "oomScoreAdj", pr.oom_score_adj));
  TRYV(get(j, p, "selinuxLabel", pr.selinux_label));
  TRY(pr.has_io_priority, has_object(j, p, "ioPriority"));
  TRY(pr.has_scheduler, has_object(j, p, "scheduler"));
  TRY(pr.has_exec_cpu_affinity, has_object(j, p, "execCPUAffinity"));
  return ok();
}

// ---------------------------------------------------------------------------
// Root, mounts, hooks.

Status parse_root(const json& j, const std::string& p, Root& r) {
  TRYV(get(j, p, "path", r.path));
  TRYV(get(j, p, "readonly", r.readonly));
  return ok();
}

Status parse_id_mapping(const json& j, const std::string& p, IdMapping& m) {
  TRYV(expect_object(j, p));
  TRYV(get(j, p, "containerID", m.container_id));
  TRYV(get(j, p, "hostID", m.host_id));
  TRYV(get(j, p, "size", m.size));
  return ok();
}

Status parse_mount(const json& j, const std::string& p, Mount& m) {
  TRYV(expect_object(j, p));
  TRYV(get(j, p, "destination", m.destination));
  TRYV(get(j, p, "type", m.type));
  TRYV(get(j, p, "source", m.source));
  TRYV(get(j, p, "options", m.options));
  // Idmapped mounts are refused by the runtime; type-check the mappings so
  // a malformed one is still reported as such, then record their presence.
  std::vector<IdMapping> uid, gid;
  TRYV(get_array(j, p, "uidMappings", uid, parse_id_mapping));
  TRYV(get_array(j, p, "gidMappings", gid, parse_id_mapping));
  m.has_idmap = !uid.empty() || !gid.empty();
  return ok();
}

Status parse_hook(const json& j, const std::string& p, Hook& h) {
  TRYV(expect_object(j, p));
  TRYV(get(j, p, "path", h.path));
  TRYV(get(j, p, "args", h.args));
  TRYV(get(j, p, "env", h.env));
  TRYV(get(j, p, "timeout", h.timeout));
  return ok();
}

Status parse_hooks(const json& j, const std::string& p, Hooks& h) {
  TRYV(get_array(j, p, "prestart", h.prestart, parse_hook));
  TRYV(get_array(j, p, "createRuntime", h.create_runtime, parse_hook));
  TRYV(get_array(j, p, "createContainer", h.create_container, parse_hook));
  TRYV(get_array(j, p, "startContainer", h.start_container, parse_hook));
  TRYV(get_array(j, p, "poststart", h.poststart, parse_hook));
  TRYV(get_array(j, p, "poststop", h.poststop, parse_hook));
  return ok();
}

// ---------------------------------------------------------------------------
// linux.resources.

Status parse_device_cgroup(const json& j, const std::string& p, DeviceCgroup& d) {
  TRYV(expect_object(j, p));
  TRYV(get(j, p, "allow", d.allow));
  TRYV(get(j, p, "type", d.type));
  TRYV(get(j, p, "major", d.major));
  TRYV(get(j, p, "minor", d.minor));
  TRYV(get(j, p, "access", d.access));
  return ok();
}

Status parse_memory(const json& j, const std::string& p, Memory& m) {
  TRYV(get(j, p, "limit", m.limit));
  TRYV(get(j, p, "reservation", m.reservation));
  TRYV(get(j, p, "swap", m.swap));
  TRYV(get(j, p, "kernel", m.kernel));
  TRYV(get(j, p, "kernelTCP", m.kernel_tcp));
  TRYV(get(j, p, "swappiness", m.swappiness));
  TRYV(get(j, p, "disableOOMKiller", m.disable_oom_killer));
  TRYV(get(j, p, "useHierarchy", m.use_hierarchy));
  TRYV(get(j, p, "checkBeforeUpdate", m.check_before_update));
  return ok();
}

Status parse_cpu(const json& j, const std::string& p, Cpu& c) {
  TRYV(get(j, p, "shares", c.shares));
  TRYV(get(j, p, "quota", c.quota));
  TRYV(get(j, p, "burst", c.burst));
  TRYV(get(j, p, "period", c.period));
  TRYV(get(j, p, "realtimeRuntime", c.realtime_runtime));
  TRYV(get(j, p, "realtimePeriod", c.realtime_period));
  TRYV(get(j, p, "cpus", c.cpus));
  TRYV(get(j, p, "mems", c.mems));
  TRYV(get(j, p, "idle", c.idle));
  return ok();
}

Status parse_pids(const json& j, const std::string& p, Pids& pids) {
  return get(j, p, "limit", pids.limit);
}

Status parse_weight_device(const json& j, const std::string& p, WeightDevice& w) {
  TRYV(expect_object(j, p));
  TRYV(get(j, p, "major", w.major));
  TRYV(get(j, p, "minor", w.minor));
  TRYV(get(j, p, "weight", w.weight));
  TRYV(get(j, p, "leafWeight", w.leaf_weight));
  return ok();
}

Status parse_throttle_device(const json& j, const std::string& p, ThrottleDevice& t) {
  TRYV(expect_object(j, p));
  TRYV(get(j, p, "major", t.major));
  TRYV(get(j, p, "minor", t.minor));
  TRYV(get(j, p, "rate", t.rate));
  return ok();
}

Status parse_block_io(const json& j, const std::string& p, BlockIO& b) {
  TRYV(get(j, p, "weight", b.weight));
  TRYV(get(j, p, "leafWeight", b.leaf_weight));
  TRYV(get_array(j, p, "weightDevice", b.weight_device, parse_weight_device));
  TRYV(get_array(j, p, "throttleReadBpsDevice", b.throttle_read_bps, parse_throttle_device));
  TRYV(get_array(j, p, "throttleWriteBpsDevice", b.throttle_write_bps, parse_throttle_device));
  TRYV(get_array(j, p, "throttleReadIOPSDevice", b.throttle_read_iops, parse_throttle_device));
  TRYV(get_array(j, p, "throttleWriteIOPSDevice", b.throttle_write_iops, parse_throttle_device));
  return ok();
}

Status parse_hugepage_limit(const json& j, const std::string& p, HugepageLimit& h) {
  TRYV(expect_object(j, p));
  TRYV(get(j, p, "pageSize", h.page_size));
  TRYV(get(j, p, "limit", h.limit));
  return ok();
}

Status parse_resources(const json& j, const std::string& p, Resources& r) {
  TRYV(get_array(j, p, "devices", r.devices, parse_device_cgroup));
  TRYV(get_object(j, p, "memory", r.memory, parse_memory));
  TRYV(get_object(j, p, "cpu", r.cpu, parse_cpu));
  TRYV(get_object(j, p, "pids", r.pids, parse_pids));
  TRYV(get_object(j, p, "blockIO", r.block_io, parse_block_io));
  TRYV(get_array(j, p, "hugepageLimits", r.hugepage_limits, parse_hugepage_limit));
  TRYV(get(j, p, "unified", r.unified));
  TRY(r.has_network, has_object(j, p, "network"));
  TRY(r.has_rdma, has_object(j, p, "rdma"));
  return ok();
}

// ---------------------------------------------------------------------------
// linux.seccomp.

Status parse_seccomp_arg(const json& j, const std::string& p, SeccompArg& a) {
  TRYV(expect_object(j, p));
  TRYV(get(j, p, "index", a.index));
  TRYV(get(j, p, "value", a.value));
  TRYV(get(j, p, "valueTwo", a.value_two));
  TRYV(get(j, p, "op", a.op));
  return ok();
}

Status parse_syscall(const json& j, const std::string& p, SeccompSyscall& s) {
  TRYV(expect_object(j, p));
  TRYV(get(j, p, "names", s.names));
  TRYV(get(j, p, "action", s.action));
  TRYV(get(j, p, "errnoRet", s.errno_ret));
  TRYV(get_array(j, p, "args", s.args, parse_seccomp_arg));
  return ok();
}

Status parse_seccomp(const json& j, const std::string& p, Seccomp& s) {
  TRYV(get(j, p, "defaultAction", s.default_action));
  TRYV(get(j, p, "defaultErrnoRet", s.default_errno_ret));
  TRYV(get(j, p, "architectures", s.architectures));
  TRYV(get(j, p, "flags", s.flags));
  TRYV(get(j, p, "listenerPath", s.listener_path));
  TRYV(get(j, p, "listenerMetadata", s.listener_metadata));
  TRYV(get_array(j, p, "syscalls", s.syscalls, parse_syscall));
  return ok();
}

// ---------------------------------------------------------------------------
// linux.

Status parse_namespace(const json& j, const std::string& p, Namespace& n) {
  TRYV(expect_object(j, p));
  TRYV(get(j, p, "type", n.type));
  TRYV(get(j, p, "path", n.path));
  return ok();
}

Status parse_device(const json& j, const std::string& p, Device& d) {
  TRYV(expect_object(j, p));
  TRYV(get(j, p, "type", d.type));
  TRYV(get(j, p, "path", d.path));
  TRYV(get(j, p, "major", d.major));
  TRYV(get(j, p, "minor", d.minor));
  TRYV(get(j, p, "fileMode", d.file_mode));
  TRYV(get(j, p, "uid", d.uid));
  TRYV(get(j, p, "gid", d.gid));
  return ok();
}

Status parse_time_offsets(const json& j, const std::string& p,
                          std::map<std::string, TimeOffset>& out) {
  const json* v = member(j, "timeOffsets");
  if (!v) return ok();
  const std::string tp = child(p, "timeOffsets");
  TRYV(expect_object(*v, tp));
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (it->is_null()) continue;
    const std::string cp = key_path(tp, it.key());
    TRYV(expect_object(*it, cp));
    TimeOffset off;
    TRYV(get(*it, cp, "secs", off.secs));
    TRYV(get(*it, cp, "nanosecs", off.nanosecs));
    out[it.key()] = off;
  }
  return ok();
}

Status parse_personality(const json& j, const std::string& p, Personality& pe) {
  TRYV(get(j, p, "domain", pe.domain));
  TRYV(get(j, p, "flags", pe.flags));
  return ok();
}

Status parse_linux(const json& j, const std::string& p, Linux& l) {
  TRYV(get_array(j, p, "namespaces", l.namespaces, parse_namespace));
  TRYV(get_array(j, p, "uidMappings", l.uid_mappings, parse_id_mapping));
  TRYV(get_array(j, p, "gidMappings", l.gid_mappings, parse_id_mapping));
  TRYV(parse_time_offsets(j, p, l.time_offsets));
  TRYV(get_array(j, p, "devices", l.devices, parse_device));
  TRYV(get(j, p, "cgroupsPath", l.cgroups_path));
  TRYV(get_object(j, p, "resources", l.resources, parse_resources));
  TRYV(get(j, p, "rootfsPropagation", l.rootfs_propagation));
  TRYV(get_object(j, p, "seccomp", l.seccomp, parse_seccomp));
  TRYV(get(j, p, "sysctl", l.sysctl));
  TRYV(get(j, p, "maskedPaths", l.masked_paths));
  TRYV(get(j, p, "readonlyPaths", l.readonly_paths));
  TRYV(get(j, p, "mountLabel", l.mount_label));
  TRYV(get_object(j, p, "personality", l.personality, parse_personality));
  TRY(l.has_intel_rdt, has_object(j, p, "intelRdt"));
  return ok();
}

Status parse_root_object(const json& j, Spec& s) {
  const std::string p;
  TRYV(expect_object(j, p));
  TRYV(get(j, p, "ociVersion", s.oci_version));
  TRYV(get_object(j, p, "process", s.process, parse_process));
  TRYV(get_object(j, p, "root", s.root, parse_root));
  TRYV(get(j, p, "hostname", s.hostname));
  TRYV(get(j, p, "domainname", s.domainname));
  TRYV(get_array(j, p, "mounts", s.mounts, parse_mount));
  TRYV(get_object(j, p, "hooks", s.hooks, parse_hooks));
  TRYV(get(j, p, "annotations", s.annotations));
  TRYV(get_object(j, p, "linux", s.linux_, parse_linux));
  return ok();
}

// nlohmann quotes the offending input verbatim ("last read: '...'"), which
// may be invalid UTF-8: keep well-formed sequences, show other bytes as <FF>
// so the message stays printable and JSON-encodable.
std::string sanitize_utf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const auto c = static_cast<unsigned char>(in[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      len = 1;
      cp = c;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    }
    bool valid = len != 0 && i + len <= in.size();
    for (size_t k = 1; valid && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(in[i + k]);
      valid = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Reject overlong forms, surrogates and values past U+10FFFF.
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    valid = valid && cp >= kMin[len] && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
    if (valid) {
      out.append(in.substr(i, len));
      i += len;
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += '<';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      out += '>';
      ++i;
    }
  }
  return out;
}

// "[json.exception.parse_error.101] parse error at line 1, column 2: syntax
// error ..." -> "syntax error ...".
std::string parse_error_detail(const char* what) {
  std::string_view w(what);
  size_t pos = w.find("parse error");
  if (pos != std::string_view::npos) {
    pos = w.find(": ", pos);
    if (pos != std::string_view::npos) w.remove_prefix(pos + 2);
  }
  return sanitize_utf8(w);
}

// "line L column C" (1-based, columns in bytes) of byte offset `off`.
std::string line_column(std::string_view text, size_t off) {
  if (off > text.size()) off = text.size();
  size_t line = 1, col = 1;
  for (size_t i = 0; i < off; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + " column " + std::to_string(col);
}

Error invalid_json(std::string_view text, const nlohmann::json::parse_error& e) {
  // e.byte is the 1-based index of the last byte read (text.size()+1 at EOF).
  const size_t off = e.byte == 0 ? 0 : e.byte - 1;
  return Error::msg("config.json: invalid JSON at " + line_column(text, off) + ": " +
                    parse_error_detail(e.what()));
}

// nlohmann reports a number that overflows a double ("1e400") as
// out_of_range 406 without a position; the offending literal is the first
// number token outside a string that spells exactly that text.
Error number_overflow(std::string_view text, const std::exception& e) {
  std::string_view w(e.what());
  const size_t q1 = w.find('\'');
  const size_t q2 = w.rfind('\'');
  std::string detail = "number overflow";
  size_t off = std::string_view::npos;
  if (q1 != std::string_view::npos && q2 > q1 + 1) {
    const std::string_view tok = w.substr(q1 + 1, q2 - q1 - 1);
    detail = "number overflow parsing '" + sanitize_utf8(tok) + "'";
    auto is_num = [](char c) {
      return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
    };
    bool in_string = false;
    for (size_t i = 0; i < text.size() && off == std::string_view::npos; ++i) {
      const char c = text[i];
      if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if ((i == 0 || !is_num(text[i - 1])) && text.substr(i, tok.size()) == tok &&
                 (i + tok.size() == text.size() || !is_num(text[i + tok.size()]))) {
        off = i + tok.size() - 1;  // nlohmann positions point at a token's last byte
      }
    }
  }
  if (off == std::string_view::npos) return Error::msg("config.json: invalid JSON: " + detail);
  return Error::msg("config.json: invalid JSON at " + line_column(text, off) + ": " + detail);
}

}  // namespace

Result<Spec> parse_spec(std::string_view json_text) {
  try {
    json j = json::parse(json_text.begin(), json_text.end());
    Spec s;
    Status st = parse_root_object(j, s);
    if (!st.ok()) return std::move(st).error().wrap("config.json");
    return s;
  } catch (const json::parse_error& e) {
    return invalid_json(json_text, e);
  } catch (const json::out_of_range& e) {
    return number_overflow(json_text, e);
  } catch (const std::bad_alloc&) {
    return Error::sys(ENOMEM, "config.json: out of memory");
  } catch (const std::exception& e) {
    return Error::msg(std::string("config.json: ") + e.what());
  } catch (...) {
    return Error::msg("config.json: unexpected error while parsing");
  }
}

const Namespace* find_namespace(const Spec& spec, std::string_view type) {
  if (!spec.linux_) return nullptr;
  for (const Namespace& ns : spec.linux_->namespaces)
    if (ns.type == type) return &ns;
  return nullptr;
}

bool has_namespace(const Spec& spec, std::string_view type) {
  return find_namespace(spec, type) != nullptr;
}

}  // namespace comet::oci
