// The confinement policy a config asks the runtime for, beyond what OCI can
// express, and the spec tightening it implies. Pure: no syscalls.
//
// Sources (annotations on any config.json, so that podman --annotation and
// Kubernetes pod annotations reach it too):
//   org.soyaos.comet.policy        {"lockdown":true,"exec":["/usr/bin/python3"],
//                                   "network":"none"|"egress"|"open","profile":"strict",
//                                   "deny":["/home/u/.ssh"]}
//   org.soyaos.comet.capabilities  a pack's capabilities block: implies
//                                  lockdown, and network none (egress: []),
//                                  egress (a list) or open ("*")
// When both are present the stricter value of each field wins. An
// annotation that does not parse is an error: the runtime refuses to create
// the container rather than run it with less than was asked.
//
// What each field means (docs/policy.md):
//   lockdown  the namespace lock-down seccomp filter (mount family, unshare,
//             setns, namespace clone flags, ptrace, bpf, keyctl, ...), clock
//             setting, raw and packet sockets, io_uring
//   exec      the exec lock: only these container paths may be executed
//             (Landlock execute right); fork, vfork and non-thread clone
//             fail with EPERM, clone3 with ENOSYS, memfd_create with EPERM
//   network   none: no socket but AF_UNIX can be created (child-network
//             filter); egress: the runtime's nft allowlist; open: nothing
//   deny      paths the runtime checks from inside are unreadable before the
//             workload runs (with the masked paths); create fails otherwise
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/oci/spec.hpp"

namespace comet::capability {

inline constexpr std::string_view kAnnotationPolicy = "org.soyaos.comet.policy";

enum class NetworkPolicy { open, egress, none };  // ordered: later is stricter

struct Policy {
  bool lockdown = false;
  std::optional<std::vector<std::string>> exec;  // exec lock when set
  NetworkPolicy network = NetworkPolicy::open;
  std::string profile;            // informational (sandbox profile name)
  std::vector<std::string> deny;  // paths that must be unreadable inside (verified)
  // The unix-socket rule (sandbox profiles, issue 22): set = on, holding the
  // sockets it lets through (absolute, sorted). JSON "unix":{"allow":[...]}.
  std::optional<std::vector<std::string>> unix_allow;
  // The git rule (sandbox profiles that protect the workspace's git files):
  // set = on, holding the git directories that are the workspace's own
  // (absolute, real); no other ".git" may be made or written in. JSON
  // "git":{"own":[...]}. Enforced by the sandbox's init for the reporter
  // (runtime/create_rule.hpp): `sandbox` only.
  std::optional<std::vector<std::string>> git_own;
  // Derived from the capabilities annotation, never read from the policy
  // annotation: the TCP ports egress allows (declared tcp/http/https entries
  // and 53 for the resolver), for the Landlock network rules.
  std::vector<uint16_t> tcp_connect_ports;
  bool operator==(const Policy&) const = default;
};

std::string_view to_string(NetworkPolicy n);
std::string policy_to_json(const Policy& p);
Result<Policy> policy_from_json(std::string_view json_text);

// The policy the annotations ask for, or nullopt when they ask for none.
Result<std::optional<Policy>> policy_from_annotations(
    const std::map<std::string, std::string>& annotations);

// Tightens `spec` for `p`; never loosens anything:
//   process: every capability set emptied, noNewPrivileges, no terminal change
//   root: read-only
//   namespaces: pid, ipc, uts, mount and cgroup added as new ones when
//               absent, and network too unless the policy's network is open
//               (an engine's joined namespace stays joined)
//   network:  a policy other than open cannot run in the host's netns
// An engine's user namespace (rootless podman) is kept: it is a layer, and
// the lock-down refuses new ones inside. Returns an error when the spec
// cannot be tightened as asked.
Status tighten(oci::Spec& spec, const Policy& p);

}  // namespace comet::capability
