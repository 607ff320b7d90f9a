// Spec -> config.json text, with the runtime-spec field names and the
// omitempty rules of the Go reference (specs-go/config.go), members in the
// Go struct order so the output reads like `runc spec`'s.
//
// Not round-tripped: the has_* presence flags (ioPriority, scheduler,
// execCPUAffinity, idmapped mounts, network, rdma, intelRdt) carry no data to
// write back, so they are omitted; a spec using them is refused anyway.
#include <exception>
#include <string>

#include <nlohmann/json.hpp>

#include "comet/oci/spec.hpp"

namespace comet::oci {
namespace {

using ojson = nlohmann::ordered_json;

void put_str(ojson& j, const char* key, const std::string& v) {
  if (!v.empty()) j[key] = v;
}

void put_strs(ojson& j, const char* key, const std::vector<std::string>& v) {
  if (!v.empty()) j[key] = v;
}

void put_map(ojson& j, const char* key, const std::map<std::string, std::string>& v) {
  if (v.empty()) return;
  ojson m = ojson::object();
  for (const auto& [k, val] : v) m[k] = val;
  j[key] = std::move(m);
}

template <typename T>
void put_opt(ojson& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

template <typename T, typename Fn>
void put_array(ojson& j, const char* key, const std::vector<T>& v, Fn fn) {
  if (v.empty()) return;
  ojson a = ojson::array();
  for (const T& item : v) a.push_back(fn(item));
  j[key] = std::move(a);
}

// ---------------------------------------------------------------------------

ojson user_json(const User& u) {
  ojson j = ojson::object();
  j["uid"] = u.uid;
  j["gid"] = u.gid;
  put_opt(j, "umask", u.umask);
  if (!u.additional_gids.empty()) j["additionalGids"] = u.additional_gids;
  put_str(j, "username", u.username);
  return j;
}

ojson capabilities_json(const Capabilities& c) {
  ojson j = ojson::object();
  put_strs(j, "bounding", c.bounding);
  put_strs(j, "effective", c.effective);
  put_strs(j, "inheritable", c.inheritable);
  put_strs(j, "permitted", c.permitted);
  put_strs(j, "ambient", c.ambient);
  return j;
}

ojson process_json(const Process& p) {
  ojson j = ojson::object();
  if (p.terminal) j["terminal"] = true;
  if (p.console_size)
    j["consoleSize"] = {{"height", p.console_size->height}, {"width", p.console_size->width}};
  j["user"] = user_json(p.user);
  put_strs(j, "args", p.args);
  put_str(j, "commandLine", p.command_line);
  put_strs(j, "env", p.env);
  j["cwd"] = p.cwd;
  if (p.capabilities) j["capabilities"] = capabilities_json(*p.capabilities);
  put_array(j, "rlimits", p.rlimits, [](const Rlimit& r) {
    return ojson{{"type", r.type}, {"hard", r.hard}, {"soft", r.soft}};
  });
  if (p.no_new_privileges) j["noNewPrivileges"] = true;
  put_str(j, "apparmorProfile", p.apparmor_profile);
  put_opt(j, "oomScoreAdj", p.oom_score_adj);
  put_str(j, "selinuxLabel", p.selinux_label);
  return j;
}

ojson mount_json(const Mount& m) {
  ojson j = ojson::object();
  j["destination"] = m.destination;
  put_str(j, "type", m.type);
  put_str(j, "source", m.source);
  put_strs(j, "options", m.options);
  return j;
}

ojson hook_json(const Hook& h) {
  ojson j = ojson::object();
  j["path"] = h.path;
  put_strs(j, "args", h.args);
  put_strs(j, "env", h.env);
  put_opt(j, "timeout", h.timeout);
  return j;
}

ojson hooks_json(const Hooks& h) {
  ojson j = ojson::object();
  put_array(j, "prestart", h.prestart, hook_json);
  put_array(j, "createRuntime", h.create_runtime, hook_json);
  put_array(j, "createContainer", h.create_container, hook_json);
  put_array(j, "startContainer", h.start_container, hook_json);
  put_array(j, "poststart", h.poststart, hook_json);
  put_array(j, "poststop", h.poststop, hook_json);
  return j;
}

ojson id_mapping_json(const IdMapping& m) {
  return ojson{{"containerID", m.container_id}, {"hostID", m.host_id}, {"size", m.size}};
}

// ---------------------------------------------------------------------------
// linux.resources

ojson device_cgroup_json(const DeviceCgroup& d) {
  ojson j = ojson::object();
  j["allow"] = d.allow;
  put_str(j, "type", d.type);
  put_opt(j, "major", d.major);
  put_opt(j, "minor", d.minor);
  put_str(j, "access", d.access);
  return j;
}

ojson memory_json(const Memory& m) {
  ojson j = ojson::object();
  put_opt(j, "limit", m.limit);
  put_opt(j, "reservation", m.reservation);
  put_opt(j, "swap", m.swap);
  put_opt(j, "kernel", m.kernel);
  put_opt(j, "kernelTCP", m.kernel_tcp);
  put_opt(j, "swappiness", m.swappiness);
  put_opt(j, "disableOOMKiller", m.disable_oom_killer);
  put_opt(j, "useHierarchy", m.use_hierarchy);
  put_opt(j, "checkBeforeUpdate", m.check_before_update);
  return j;
}

ojson cpu_json(const Cpu& c) {
  ojson j = ojson::object();
  put_opt(j, "shares", c.shares);
  put_opt(j, "quota", c.quota);
  put_opt(j, "burst", c.burst);
  put_opt(j, "period", c.period);
  put_opt(j, "realtimeRuntime", c.realtime_runtime);
  put_opt(j, "realtimePeriod", c.realtime_period);
  put_str(j, "cpus", c.cpus);
  put_str(j, "mems", c.mems);
  put_opt(j, "idle", c.idle);
  return j;
}

ojson throttle_json(const ThrottleDevice& t) {
  return ojson{{"major", t.major}, {"minor", t.minor}, {"rate", t.rate}};
}

ojson block_io_json(const BlockIO& b) {
  ojson j = ojson::object();
  put_opt(j, "weight", b.weight);
  put_opt(j, "leafWeight", b.leaf_weight);
  put_array(j, "weightDevice", b.weight_device, [](const WeightDevice& w) {
    ojson d{{"major", w.major}, {"minor", w.minor}};
    put_opt(d, "weight", w.weight);
    put_opt(d, "leafWeight", w.leaf_weight);
    return d;
  });
  put_array(j, "throttleReadBpsDevice", b.throttle_read_bps, throttle_json);
  put_array(j, "throttleWriteBpsDevice", b.throttle_write_bps, throttle_json);
  put_array(j, "throttleReadIOPSDevice", b.throttle_read_iops, throttle_json);
  put_array(j, "throttleWriteIOPSDevice", b.throttle_write_iops, throttle_json);
  return j;
}

ojson resources_json(const Resources& r) {
  ojson j = ojson::object();
  put_array(j, "devices", r.devices, device_cgroup_json);
  if (r.memory) j["memory"] = memory_json(*r.memory);
  if (r.cpu) j["cpu"] = cpu_json(*r.cpu);
  if (r.pids) j["pids"] = ojson{{"limit", r.pids->limit}};
  if (r.block_io) j["blockIO"] = block_io_json(*r.block_io);
  put_array(j, "hugepageLimits", r.hugepage_limits, [](const HugepageLimit& h) {
    return ojson{{"pageSize", h.page_size}, {"limit", h.limit}};
  });
  put_map(j, "unified", r.unified);
  return j;
}

// ---------------------------------------------------------------------------
// linux.seccomp

ojson syscall_json(const SeccompSyscall& s) {
  ojson j = ojson::object();
  j["names"] = s.names;
  j["action"] = s.action;
  put_opt(j, "errnoRet", s.errno_ret);
  put_array(j, "args", s.args, [](const SeccompArg& a) {
    ojson arg{{"index", a.index}, {"value", a.value}};
    if (a.value_two != 0) arg["valueTwo"] = a.value_two;
    arg["op"] = a.op;
    return arg;
  });
  return j;
}

ojson seccomp_json(const Seccomp& s) {
  ojson j = ojson::object();
  j["defaultAction"] = s.default_action;
  put_opt(j, "defaultErrnoRet", s.default_errno_ret);
  put_strs(j, "architectures", s.architectures);
  put_strs(j, "flags", s.flags);
  put_str(j, "listenerPath", s.listener_path);
  put_str(j, "listenerMetadata", s.listener_metadata);
  put_array(j, "syscalls", s.syscalls, syscall_json);
  return j;
}

// ---------------------------------------------------------------------------
// linux

ojson device_json(const Device& d) {
  ojson j = ojson::object();
  j["path"] = d.path;
  j["type"] = d.type;
  j["major"] = d.major;
  j["minor"] = d.minor;
  put_opt(j, "fileMode", d.file_mode);
  put_opt(j, "uid", d.uid);
  put_opt(j, "gid", d.gid);
  return j;
}

ojson linux_json(const Linux& l) {
  ojson j = ojson::object();
  put_array(j, "uidMappings", l.uid_mappings, id_mapping_json);
  put_array(j, "gidMappings", l.gid_mappings, id_mapping_json);
  put_map(j, "sysctl", l.sysctl);
  if (l.resources) j["resources"] = resources_json(*l.resources);
  put_str(j, "cgroupsPath", l.cgroups_path);
  put_array(j, "namespaces", l.namespaces, [](const Namespace& ns) {
    ojson n{{"type", ns.type}};
    put_str(n, "path", ns.path);
    return n;
  });
  put_array(j, "devices", l.devices, device_json);
  if (l.seccomp) j["seccomp"] = seccomp_json(*l.seccomp);
  put_str(j, "rootfsPropagation", l.rootfs_propagation);
  put_strs(j, "maskedPaths", l.masked_paths);
  put_strs(j, "readonlyPaths", l.readonly_paths);
  put_str(j, "mountLabel", l.mount_label);
  if (l.personality) {
    ojson p{{"domain", l.personality->domain}};
    put_strs(p, "flags", l.personality->flags);
    j["personality"] = std::move(p);
  }
  if (!l.time_offsets.empty()) {
    ojson t = ojson::object();
    for (const auto& [clock, off] : l.time_offsets) {
      ojson o = ojson::object();
      if (off.secs != 0) o["secs"] = off.secs;
      if (off.nanosecs != 0) o["nanosecs"] = off.nanosecs;
      t[clock] = std::move(o);
    }
    j["timeOffsets"] = std::move(t);
  }
  return j;
}

ojson spec_json(const Spec& s) {
  ojson j = ojson::object();
  j["ociVersion"] = s.oci_version;
  if (s.process) j["process"] = process_json(*s.process);
  if (s.root) {
    ojson r{{"path", s.root->path}};
    if (s.root->readonly) r["readonly"] = true;
    j["root"] = std::move(r);
  }
  put_str(j, "hostname", s.hostname);
  put_str(j, "domainname", s.domainname);
  put_array(j, "mounts", s.mounts, mount_json);
  if (s.hooks) j["hooks"] = hooks_json(*s.hooks);
  put_map(j, "annotations", s.annotations);
  if (s.linux_) j["linux"] = linux_json(*s.linux_);
  return j;
}

}  // namespace

std::string to_json(const Spec& spec, int indent) {
  try {
    return spec_json(spec).dump(indent < 0 ? -1 : indent, ' ', false,
                                nlohmann::ordered_json::error_handler_t::replace);
  } catch (...) {
    return std::string();  // only std::bad_alloc can get here
  }
}

}  // namespace comet::oci
