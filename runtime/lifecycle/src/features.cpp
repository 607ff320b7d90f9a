// `features`: what this runtime implements, and nothing more
// (runtime-spec features.md). containerd reads it to decide what to ask for.
#include <seccomp.h>
#include <sys/capability.h>

#include <cstring>
#include <string>

#include "comet/lifecycle/confine.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/lifecycle/mount_optmap.hpp"
#include "comet/lifecycle/process_attrs.hpp"
#include "comet/oci/state.hpp"
#include "comet/seccomp/seccomp.hpp"

namespace comet::runtime {

std::string features_json() {
  oci::Features f;
  f.oci_version_min = "1.0.0";
  f.oci_version_max = oci_version();
  f.hooks = {"prestart",       "createRuntime", "createContainer",
             "startContainer", "poststart",     "poststop"};
  for (const MountOptName& m : linux_mount_opts()) f.mount_options.emplace_back(m.name);
  for (const char* o :
       {"bind", "rbind", "idmap", "ridmap", "rro", "rrw", "rnosuid", "rsuid", "rnodev", "rdev",
        "rnoexec", "rexec", "rnodiratime", "rdiratime", "rnoatime", "rstrictatime", "rrelatime"})
    f.mount_options.emplace_back(o);
  f.namespaces = {"cgroup", "ipc", "mount", "network", "pid", "time", "user", "uts"};
  for (int c = 0; c <= CAP_LAST_CAP; c++) {
    char* name = cap_to_name(c);
    if (!name) continue;
    std::string n = name;
    cap_free(name);
    for (auto& ch : n) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (n.rfind("CAP_", 0) == 0) f.capabilities.push_back(n);
  }
  f.cgroup_v1 = true;
  f.cgroup_v2 = true;
  f.seccomp_enabled = true;
  // AppArmor and SELinux as runc applies them (process_attrs.hpp): what the
  // runtime supports, "irrelevant to the availability on the host".
  f.apparmor = true;
  f.selinux = true;
  // linux.intelRdt is refused (a clear error: plan.cpp), so not claimed.
  f.intel_rdt = false;
  f.idmap_mounts = true;  // mounts.hpp: uidMappings/gidMappings, idmap, ridmap
  f.net_devices = true;   // net_devices.hpp
  f.memory_policy_modes = memory_policy_modes();
  f.memory_policy_flags = memory_policy_flags();
  // Every annotation of ours changes what the runtime does with the
  // container: a policy or pack tightens it, org.soyaos.comet.events names a
  // file or socket the runtime writes to as root. An engine must not pass
  // them through from an untrusted source ("." ends a prefix).
  f.potentially_unsafe_config_annotations = {"org.soyaos.comet."};
  f.seccomp_actions = seccomp::known_actions();
  f.seccomp_operators = seccomp::known_operators();
  f.seccomp_archs = seccomp::known_archs();
  f.seccomp_known_flags = seccomp::known_flags();
  f.seccomp_supported_flags = seccomp::supported_flags();
  const scmp_version* v = seccomp_version();
  f.annotations["io.github.seccomp.libseccomp.version"] =
      std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->micro);
  f.annotations["org.soyaos.comet.version"] = COMET_VERSION;
  // The confinement layers this build and kernel can apply (docs/policy.md):
  // a pack or policy config that needs one that is missing is refused.
  int abi = landlock_abi();
  f.annotations["org.soyaos.comet.landlock.abi"] = std::to_string(abi);
  std::string layers =
      "seccomp:docker-default,seccomp:lockdown,seccomp:exec-lock,"
      "seccomp:network-none,seccomp:report,verify:read-deny";
  if (abi >= 1) layers += ",landlock:exec,landlock:write,landlock:no-symlinks";
  if (abi >= 4) layers += ",landlock:tcp";
  if (abi >= 6) layers += ",landlock:scope";
  f.annotations["org.soyaos.comet.layers"] = layers;
  f.annotations["org.soyaos.comet.egress"] = "nftables+resolver";
  return oci::to_json(f, 4);
}

}  // namespace comet::runtime
