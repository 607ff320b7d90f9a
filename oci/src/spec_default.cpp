// default_spec(): the config.json `runc spec` (runc 1.1, rootless = false)
// writes. tests/data/oci/runc-spec.json holds runc's own output; the test
// compares the two as parsed JSON.
#include "comet/oci/spec.hpp"

namespace comet::oci {

Spec default_spec() {
  Spec s;
  s.oci_version = "1.0.2-dev";

  Process p;
  p.terminal = true;
  p.user.uid = 0;
  p.user.gid = 0;
  p.args = {"sh"};
  p.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"};
  p.cwd = "/";
  const std::vector<std::string> caps = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"};
  Capabilities c;
  c.bounding = caps;
  c.effective = caps;
  c.permitted = caps;
  c.ambient = caps;
  p.capabilities = std::move(c);
  p.rlimits = {Rlimit{"RLIMIT_NOFILE", 1024, 1024}};
  p.no_new_privileges = true;
  s.process = std::move(p);

  s.root = Root{"rootfs", true};
  s.hostname = "runc";

  s.mounts = {
      Mount{"/proc", "proc", "proc", {}, {}, {}},
      Mount{"/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}, {}, {}},
      Mount{"/dev/pts",
            "devpts",
            "devpts",
            {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"},
            {},
            {}},
      Mount{"/dev/shm",
            "tmpfs",
            "shm",
            {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"},
            {},
            {}},
      Mount{"/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}, {}, {}},
      Mount{"/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}, {}, {}},
      Mount{"/sys/fs/cgroup",
            "cgroup",
            "cgroup",
            {"nosuid", "noexec", "nodev", "relatime", "ro"},
            {},
            {}},
  };

  Linux l;
  Resources r;
  DeviceCgroup deny_all;
  deny_all.allow = false;
  deny_all.access = "rwm";
  r.devices = {deny_all};
  l.resources = std::move(r);
  for (const char* t : {"pid", "network", "ipc", "uts", "mount"}) l.namespaces.push_back({t, ""});
  l.masked_paths = {"/proc/acpi",        "/proc/asound",        "/proc/kcore",
                    "/proc/keys",        "/proc/latency_stats", "/proc/timer_list",
                    "/proc/timer_stats", "/proc/sched_debug",   "/sys/firmware",
                    "/proc/scsi"};
  l.readonly_paths = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};
  s.linux_ = std::move(l);
  return s;
}

void to_rootless(Spec& spec, uint32_t uid, uint32_t gid) {
  Linux& l = spec.linux_ ? *spec.linux_ : spec.linux_.emplace();
  std::erase_if(l.namespaces,
                [](const Namespace& n) { return n.type == "network" || n.type == "user"; });
  l.namespaces.push_back({"user", ""});
  l.uid_mappings = {IdMapping{0, uid, 1}};
  l.gid_mappings = {IdMapping{0, gid, 1}};
  for (Mount& m : spec.mounts) {
    if (m.destination == "/sys" || m.destination == "/sys/") {
      m = Mount{"/sys", "none", "/sys", {"rbind", "nosuid", "noexec", "nodev", "ro"}, {}, {}};
      continue;
    }
    std::erase_if(m.options, [](const std::string& o) {
      return o.rfind("gid=", 0) == 0 || o.rfind("uid=", 0) == 0;
    });
  }
  l.resources.reset();
}

}  // namespace comet::oci
