// Semantic checks on a parsed Spec (runtime-spec config.md / config-linux.md
// plus the runc rules the runtime mirrors). The first problem wins; every
// message names the field path and the offending value, lowercase.
//
// Not checked here: seccomp action/operator/arch names (seccomp/ does that),
// ioPriority/scheduler/execCPUAffinity/memoryPolicy values (the lifecycle's
// plan_process_attrs() does, beside the kernel values), and anything that
// needs the host (does a namespace path exist, is it the host netns, ...).
#include <algorithm>
#include <array>
#include <cctype>
#include <set>
#include <string>
#include <string_view>

#include "comet/oci/spec.hpp"

namespace comet::oci {
namespace {

std::string quote(std::string_view s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  q += '"';
  return q;
}

std::string at(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// "<path> "<value>": <problem>"
Error bad(const std::string& path, std::string_view value, std::string_view problem) {
  return Error::msg(path + " " + quote(value) + ": " + std::string(problem));
}

bool is_absolute(std::string_view p) {
  return !p.empty() && p.front() == '/';
}

template <size_t N>
bool one_of(std::string_view v, const std::array<std::string_view, N>& set) {
  return std::find(set.begin(), set.end(), v) != set.end();
}

comet::Status absolute_path(const std::string& path, std::string_view value) {
  if (value.empty()) return Error::msg(path + ": required");
  if (!is_absolute(value)) return bad(path, value, "must be an absolute path");
  return ok();
}

// ---------------------------------------------------------------------------
// ociVersion: SemVer 2.0 "MAJOR.MINOR.PATCH[-pre][+build]", major 1.

bool parse_number(std::string_view& s, unsigned long& out) {
  size_t n = 0;
  out = 0;
  while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) {
    if (n >= 9) return false;  // no realistic version component is this long
    out = out * 10 + static_cast<unsigned long>(s[n] - '0');
    ++n;
  }
  if (n == 0) return false;
  s.remove_prefix(n);
  return true;
}

comet::Status check_version(const std::string& v) {
  if (v.empty()) return Error::msg("ociVersion: required");
  std::string_view s(v);
  unsigned long major = 0, minor = 0, patch = 0;
  bool okv = parse_number(s, major) && !s.empty() && s.front() == '.';
  if (okv) s.remove_prefix(1);
  okv = okv && parse_number(s, minor) && !s.empty() && s.front() == '.';
  if (okv) s.remove_prefix(1);
  okv = okv && parse_number(s, patch) && (s.empty() || s.front() == '-' || s.front() == '+');
  if (okv && !s.empty()) okv = s.size() > 1;  // "1.0.0-" is not a version
  if (!okv) return bad("ociVersion", v, "not a semantic version (expected 1.MINOR.PATCH)");
  if (major != 1)
    return bad("ociVersion", v, "unsupported major version (this runtime implements 1.x)");
  return ok();
}

// ---------------------------------------------------------------------------
// process

constexpr std::array<std::string_view, 16> kRlimits = {
    "RLIMIT_AS",     "RLIMIT_CORE",   "RLIMIT_CPU",        "RLIMIT_DATA",
    "RLIMIT_FSIZE",  "RLIMIT_LOCKS",  "RLIMIT_MEMLOCK",    "RLIMIT_MSGQUEUE",
    "RLIMIT_NICE",   "RLIMIT_NOFILE", "RLIMIT_NPROC",      "RLIMIT_RSS",
    "RLIMIT_RTPRIO", "RLIMIT_RTTIME", "RLIMIT_SIGPENDING", "RLIMIT_STACK"};

comet::Status check_process(const Process& p) {
  if (p.args.empty()) return Error::msg("process.args: required (at least one element)");
  if (p.cwd.empty()) return Error::msg("process.cwd: required");
  if (!is_absolute(p.cwd)) return bad("process.cwd", p.cwd, "must be an absolute path");

  // Capability names are not checked here: the runtime skips unknown ones
  // with a warning, as runc does (an unknown name can only grant less).

  std::set<std::string_view> seen;
  for (size_t i = 0; i < p.rlimits.size(); ++i) {
    const Rlimit& r = p.rlimits[i];
    const std::string path = at("process.rlimits", i);
    if (!one_of(r.type, kRlimits)) return bad(path + ".type", r.type, "unknown rlimit type");
    if (!seen.insert(r.type).second) return bad(path + ".type", r.type, "duplicate rlimit type");
    if (r.soft > r.hard)
      return Error::msg(path + ": soft limit " + std::to_string(r.soft) + " exceeds hard limit " +
                        std::to_string(r.hard));
  }
  return ok();
}

// ---------------------------------------------------------------------------
// hooks

comet::Status check_hook_list(const std::string& path, const std::vector<Hook>& hooks) {
  for (size_t i = 0; i < hooks.size(); ++i) {
    const Hook& h = hooks[i];
    const std::string hp = at(path, i);
    TRYV(absolute_path(hp + ".path", h.path));
    if (h.timeout && *h.timeout <= 0)
      return Error::msg(hp + ".timeout " + std::to_string(*h.timeout) + ": must be greater than 0");
  }
  return ok();
}

comet::Status check_hooks(const Hooks& h) {
  TRYV(check_hook_list("hooks.prestart", h.prestart));
  TRYV(check_hook_list("hooks.createRuntime", h.create_runtime));
  TRYV(check_hook_list("hooks.createContainer", h.create_container));
  TRYV(check_hook_list("hooks.startContainer", h.start_container));
  TRYV(check_hook_list("hooks.poststart", h.poststart));
  TRYV(check_hook_list("hooks.poststop", h.poststop));
  return ok();
}

// ---------------------------------------------------------------------------
// linux

constexpr std::array<std::string_view, 8> kNamespaces = {"pid", "network", "mount",  "ipc",
                                                         "uts", "user",    "cgroup", "time"};

constexpr std::array<std::string_view, 9> kPropagations = {
    "private", "rprivate", "slave", "rslave", "shared", "rshared", "unbindable", "runbindable", ""};

comet::Status check_namespaces(const Linux& l) {
  std::set<std::string_view> seen;
  for (size_t i = 0; i < l.namespaces.size(); ++i) {
    const Namespace& ns = l.namespaces[i];
    const std::string path = at("linux.namespaces", i);
    if (!one_of(ns.type, kNamespaces))
      return bad(path + ".type", ns.type,
                 "unknown namespace type (expected pid, network, mount, ipc, uts, user, cgroup "
                 "or time)");
    if (!seen.insert(ns.type).second) return bad(path + ".type", ns.type, "duplicate namespace");
    if (!ns.path.empty() && !is_absolute(ns.path))
      return bad(path + ".path", ns.path, "must be an absolute path");
  }
  return ok();
}

comet::Status check_id_mappings(const Spec& s, const Linux& l) {
  const Namespace* user = find_namespace(s, "user");
  const bool mappings = !l.uid_mappings.empty() || !l.gid_mappings.empty();
  if (!user) {
    if (!l.uid_mappings.empty()) return Error::msg("linux.uidMappings: requires a user namespace");
    if (!l.gid_mappings.empty()) return Error::msg("linux.gidMappings: requires a user namespace");
    return ok();
  }
  if (!user->path.empty()) {
    if (mappings)
      return Error::msg(
          std::string(l.uid_mappings.empty() ? "linux.gidMappings" : "linux.uidMappings") +
          ": cannot be set when joining an existing user namespace (path " + quote(user->path) +
          ")");
    return ok();
  }
  if (l.uid_mappings.empty())
    return Error::msg("linux.uidMappings: required when creating a new user namespace");
  if (l.gid_mappings.empty())
    return Error::msg("linux.gidMappings: required when creating a new user namespace");
  for (const auto* list : {&l.uid_mappings, &l.gid_mappings}) {
    const char* name = list == &l.uid_mappings ? "linux.uidMappings" : "linux.gidMappings";
    for (size_t i = 0; i < list->size(); ++i)
      if ((*list)[i].size == 0) return Error::msg(at(name, i) + ".size: must be greater than 0");
  }
  return ok();
}

comet::Status check_time_offsets(const Spec& s, const Linux& l) {
  if (l.time_offsets.empty()) return ok();
  const Namespace* t = find_namespace(s, "time");
  if (!t) return Error::msg("linux.timeOffsets: requires a time namespace");
  if (!t->path.empty())
    return Error::msg(
        "linux.timeOffsets: cannot be set when joining an existing time namespace "
        "(path " +
        quote(t->path) + ")");
  for (const auto& [clock, off] : l.time_offsets) {
    const std::string path = "linux.timeOffsets[" + quote(clock) + "]";
    if (clock != "monotonic" && clock != "boottime")
      return Error::msg(path + ": unknown clock (expected monotonic or boottime)");
    if (off.nanosecs >= 1000000000u)
      return Error::msg(path + ".nanosecs " + std::to_string(off.nanosecs) +
                        ": must be less than 1000000000");
  }
  return ok();
}

comet::Status check_devices(const Linux& l) {
  for (size_t i = 0; i < l.devices.size(); ++i) {
    const Device& d = l.devices[i];
    const std::string path = at("linux.devices", i);
    if (d.type != "c" && d.type != "b" && d.type != "u" && d.type != "p")
      return bad(path + ".type", d.type, "unknown device type (expected c, b, u or p)");
    TRYV(absolute_path(path + ".path", d.path));
  }
  if (!l.resources) return ok();
  for (size_t i = 0; i < l.resources->devices.size(); ++i) {
    const DeviceCgroup& d = l.resources->devices[i];
    const std::string path = at("linux.resources.devices", i);
    if (!d.type.empty() && d.type != "a" && d.type != "c" && d.type != "b")
      return bad(path + ".type", d.type, "unknown device type (expected a, c or b)");
    if (d.access.find_first_not_of("rwm") != std::string::npos)
      return bad(path + ".access", d.access,
                 "invalid access (expected a combination of r, w and m)");
  }
  return ok();
}

// runc's rules (libcontainer/configs/validate): a sysctl may only be set
// when the kernel namespaces it and the container has that namespace (new or
// joined; whether a joined netns is the host's needs the host, not checked).
comet::Status check_sysctl(const Spec& s, const Linux& l) {
  auto starts = [](std::string_view k, std::string_view p) { return k.substr(0, p.size()) == p; };
  for (const auto& [raw_key, value] : l.sysctl) {
    const std::string what = "linux.sysctl: sysctl " + quote(raw_key);
    // "net/ipv4/ip_forward" is the same sysctl as "net.ipv4.ip_forward".
    std::string key = raw_key;
    for (auto& ch : key)
      if (ch == '/') ch = '.';
    if (starts(key, "net.")) {
      if (!has_namespace(s, "network")) return Error::msg(what + " requires a network namespace");
      continue;
    }
    if (starts(key, "kernel.shm") || starts(key, "kernel.msg") || key == "kernel.sem" ||
        key == "kernel.sem_next_id" || starts(key, "fs.mqueue.")) {
      if (!has_namespace(s, "ipc")) return Error::msg(what + " requires an ipc namespace");
      continue;
    }
    if (key == "kernel.hostname" || key == "kernel.domainname") {
      if (!has_namespace(s, "uts")) return Error::msg(what + " requires a uts namespace");
      continue;
    }
    return Error::msg(what + " is not in a separate kernel namespace");
  }
  return ok();
}

comet::Status check_path_list(const std::string& path, const std::vector<std::string>& paths) {
  for (size_t i = 0; i < paths.size(); ++i)
    if (!is_absolute(paths[i])) return bad(at(path, i), paths[i], "must be an absolute path");
  return ok();
}

comet::Status check_linux(const Spec& s, const Linux& l) {
  TRYV(check_namespaces(l));
  TRYV(check_id_mappings(s, l));
  TRYV(check_time_offsets(s, l));
  TRYV(check_devices(l));
  TRYV(check_sysctl(s, l));
  if (!one_of(l.rootfs_propagation, kPropagations))
    return bad("linux.rootfsPropagation", l.rootfs_propagation,
               "unknown propagation (expected private, rprivate, slave, rslave, shared, rshared, "
               "unbindable or runbindable)");
  TRYV(check_path_list("linux.maskedPaths", l.masked_paths));
  TRYV(check_path_list("linux.readonlyPaths", l.readonly_paths));
  if (l.personality && l.personality->domain != "LINUX" && l.personality->domain != "LINUX32")
    return bad("linux.personality.domain", l.personality->domain,
               "unknown personality domain (expected LINUX or LINUX32)");
  return ok();
}

comet::Status validate(const Spec& s) {
  TRYV(check_version(s.oci_version));
  if (!s.root) return Error::msg("root: required");
  if (s.root->path.empty()) return Error::msg("root.path: required");
  if (!s.process) return Error::msg("process: required");
  TRYV(check_process(*s.process));
  for (size_t i = 0; i < s.mounts.size(); ++i)
    TRYV(absolute_path(at("mounts", i) + ".destination", s.mounts[i].destination));
  if (s.hooks) TRYV(check_hooks(*s.hooks));
  // runc: "unable to set hostname without a private UTS namespace".
  if (!s.hostname.empty() && !has_namespace(s, "uts"))
    return bad("hostname", s.hostname, "unable to set hostname without a private uts namespace");
  if (!s.domainname.empty() && !has_namespace(s, "uts"))
    return bad("domainname", s.domainname,
               "unable to set domainname without a private uts namespace");
  if (s.linux_) TRYV(check_linux(s, *s.linux_));
  return ok();
}

}  // namespace

comet::Status validate_spec(const Spec& spec) {
  try {
    return validate(spec);
  } catch (...) {  // std::bad_alloc from building a message
    return Error::sys(ENOMEM, "validating config.json: out of memory");
  }
}

}  // namespace comet::oci
