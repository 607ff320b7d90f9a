// Confinement beyond OCI (capability/policy.hpp): the parent plans it, the
// child applies it last, right before execve.
//
//   parent  plan_confinement(): a base seccomp filter when the config has
//           none (Docker-like), the lock-down filter stacked on it, and the
//           Landlock exec lock's list of executable paths (the interpreter
//           and the ELF loader it names, resolved inside the rootfs)
//   child   apply_landlock(): a ruleset that handles the execute right and
//           grants it on those files only, plus (ABI >= 6) the scoping of
//           abstract unix sockets and signals; then the filters load
//
// Fail-closed: a policy that asks for a layer this kernel lacks (Landlock
// for the exec lock) is a create error, never a weaker sandbox.
#pragma once

#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/capability/policy.hpp"
#include "comet/lifecycle/child.hpp"
#include "comet/oci/spec.hpp"
#include "comet/seccomp/seccomp.hpp"

namespace comet::runtime {

// The running kernel's Landlock ABI version, 0 when Landlock is absent or
// disabled (then *err, when given, is landlock_create_ruleset's errno:
// ENOSYS no Landlock in this kernel, EOPNOTSUPP disabled at boot).
int landlock_abi(int* err = nullptr) noexcept;

// Whether seccomp(2) can make a user-notification listener
// (SECCOMP_FILTER_FLAG_NEW_LISTENER, Linux 5.0): 0, or the errno that says
// it cannot. libseccomp's probe: the flag with no program is EFAULT when
// the kernel knows the flag (it checks flags before reading the program),
// EINVAL when it does not. Installs nothing.
int seccomp_listener_missing() noexcept;

// The file a config's command names, as the exec lock sees it:
// process.args[0] when it has a slash (joined to process.cwd when
// relative), else found on the process's PATH inside the rootfs (an
// executable regular file, symlinks resolved inside it). The exec lock of a
// config whose capabilities came without a policy `exec` list (an engine's:
// podman --annotation, pod annotations) is this file and what it loads.
Result<std::string> command_in_rootfs(const oci::Process& proc, const std::string& rootfs);

// Whether a policy exec list names the command (the same string, or the
// same file inside the rootfs).
bool exec_list_names(const std::vector<std::string>& list, const std::string& cmd,
                     const std::string& rootfs);
std::string quote_list(const std::vector<std::string>& list);

// Capabilities enforced (an engine's annotation) with no exec list of a
// policy's: only the config's own command may be executed (docs/policy.md).
// With both annotations the stricter holds (docs/policy.md): a policy list
// may narrow the lock to the command, never widen it past it. Sets p.exec
// to the command (SPEC's, found in ROOTFS) when SPEC has the annotation.
Status lock_exec_to_command(capability::Policy& p, const oci::Spec& spec,
                            const std::string& rootfs);

// The config's own seccomp filter (linux.seccomp), compiled into ctx. A
// filter with a notify listener is refused with `listener_refusal` when
// one is given (exec, sandbox: nothing would receive it).
Status compile_config_seccomp(const oci::Linux& lx, ChildContext& ctx,
                              const char* listener_refusal = nullptr);

Status plan_confinement(const capability::Policy& p, const std::string& rootfs,
                        const oci::Linux& lx, ChildContext& ctx);

// Child side (noexcept, no allocation): returns 0 or an errno, with the
// path that failed in *failed (or nullptr).
int apply_landlock(const ChildContext& ctx, const char** failed) noexcept;

}  // namespace comet::runtime
