// seccomp/: compiles an OCI seccomp block (and the project's built-in
// filters) to a classic-BPF program with libseccomp, in the parent. The
// container child only loads the finished program, last, just before execve,
// with no allocation and no libseccomp call (load() is noexcept and async-
// signal-safe).
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/oci/spec.hpp"

namespace comet::seccomp {

struct Program {
  std::vector<sock_filter> filter;  // the BPF program, ready for seccomp(2)
  unsigned int flags = 0;           // SECCOMP_FILTER_FLAG_* to pass to seccomp(2)
  bool needs_listener = false;      // some rule is SCMP_ACT_NOTIFY: load with NEW_LISTENER
  std::string listener_path;        // linux.seccomp.listenerPath
  std::string listener_metadata;
};

// Compile an OCI seccomp block for the native architecture (plus the
// architectures it lists). Errors name the offending value, for example
// "linux.seccomp.syscalls[3].action: unknown action \"SCMP_ACT_FOO\"".
Result<Program> compile(const oci::Seccomp& spec);

// Load a compiled program into the calling thread. Returns 0 or an errno.
// When prog.needs_listener, *listener_fd receives the notification fd.
// Does not set no_new_privs (the caller decides); without it the caller must
// hold CAP_SYS_ADMIN.
int load(const Program& prog, int* listener_fd) noexcept;

// ---------------------------------------------------------------------------
// Additions (compile options, feature lists, built-in profile).

// libseccomp's filter layout: a linear list of syscall checks, or a binary
// tree (SCMP_FLTATR_CTL_OPTIMIZE = 2). kAuto picks the tree, like runc, when
// the profile names more than kAutoTreeThreshold syscalls.
enum class Optimize { kAuto, kLinear, kBinaryTree };
inline constexpr std::size_t kAutoTreeThreshold = 32;

struct CompileOptions {
  Optimize optimize = Optimize::kAuto;
  // Prepend runc's patchbpf stub: on each filtered architecture, syscall
  // numbers above the highest one the profile names get -ENOSYS instead of
  // the default action, so that libc falls back from syscalls newer than the
  // profile. Skipped (as in runc) when the default action is ALLOW, LOG or
  // TRACE, or is already ERRNO(ENOSYS).
  bool enosys_stub = true;
};

// compile(spec) is compile(spec, CompileOptions{}).
Result<Program> compile(const oci::Seccomp& spec, const CompileOptions& options);

// For the `features` command (runtime-spec features.json "seccomp" block).
std::vector<std::string> known_actions() noexcept;    // SCMP_ACT_*
std::vector<std::string> known_operators() noexcept;  // SCMP_CMP_*
std::vector<std::string> known_archs() noexcept;      // SCMP_ARCH_* this libseccomp supports
std::vector<std::string> known_flags() noexcept;      // SECCOMP_FILTER_FLAG_* compile() accepts
// The subset of known_flags() the running kernel accepts (probed with a
// harmless seccomp(2) call that fails with EFAULT when the flag is known).
std::vector<std::string> supported_flags() noexcept;

// A Docker-default-like allowlist (moby profiles/seccomp/default.json as
// resolved for the host architecture, Docker's default capability set and
// no CAP_SYS_ADMIN): defaultAction SCMP_ACT_ERRNO (EPERM).
oci::Seccomp docker_default_profile() noexcept;

// The project's second filter, stacked on a base one (Docker-like or the
// engine's) for confined containers: default ALLOW, so it only ever takes
// away. Native architecture only (other ABIs are killed).
//   namespaces    the lock-down: mount family and the new mount API,
//                 unshare, setns, clone with namespace flags, ptrace,
//                 process_vm_*, pidfd_getfd, bpf, perf_event_open,
//                 userfaultfd, keyrings, kexec, modules, clock setting,
//                 io_uring, AF_PACKET and SOCK_RAW sockets, ioctl TIOCSTI
//                 and TIOCLINUX (terminal injection): EPERM
//   clone3        always ENOSYS (libc falls back to clone)
//   exec_lock     fork, vfork, memfd_create and clone without CLONE_THREAD:
//                 EPERM (threads still work)
//   network_none  socket/socketpair of any family but AF_UNIX: EPERM
//   socket_families  socket/socketpair of any family but AF_UNIX, AF_INET,
//                 AF_INET6 and AF_NETLINK (NETLINK_ROUTE only, what glibc
//                 asks for): EPERM. AF_VSOCK, AF_PACKET, AF_BLUETOOTH, ...
//                 leave the host outside netfilter.
// Integer arguments are compared as the 32-bit values the kernel reads.
//   notify        report violations (runtime/reporting/include/comet/reporting/reporter.hpp): every
//   rule
//                 above except clone3 is SCMP_ACT_NOTIFY instead of
//                 SCMP_ACT_ERRNO, same conditions; the listener path is the
//                 placeholder kReporterListener (the runtime's own reporter
//                 gets the fd, never a socket of the config's). The reporter
//                 answers each notification with the errno the notify=false
//                 program gives; when no reporter answers the kernel fails
//                 the call with ENOSYS, so enforcement never depends on it.
//                 With exec_lock, execve and execveat also notify (the
//                 notify=false program allows them: the reporter answers
//                 CONTINUE and Landlock decides).
struct LockdownOptions {
  bool namespaces = true;
  bool exec_lock = false;
  bool network_none = false;
  bool socket_families = false;
  bool notify = false;
  // The unix-socket rule (capability::Policy::unix_allow): connect, sendto
  // with an address, sendmsg and sendmmsg always notify (the reporter
  // decides and performs an allowed call itself), so it needs notify.
  bool unix_rule = false;
  // The git rule (capability::Policy::git_own, runtime/create_rule.hpp):
  // every call that makes a name or opens for writing notifies (the
  // reporter has it judged and made), so it needs notify too.
  bool create_rule = false;
};
inline constexpr const char* kReporterListener = "comet-runtime:reporter";
oci::Seccomp lockdown_profile(const LockdownOptions& o) noexcept;
// The namespace lock-down's EPERM list (mounts, namespaces, ptrace and
// process_vm_*, bpf, perf, keys, kexec, modules, clock setting, io_uring),
// for other filters that want the same floor (runtime/helper_confine.hpp).
std::vector<std::string> lockdown_denied_syscalls();

// The syscalls lockdown_profile(o) may refuse (clone3 excepted): what a base
// filter of the runtime's own must allow so that the lock-down's notify
// rules are reached (the kernel's precedence is ERRNO > USER_NOTIF).
std::vector<std::string> lockdown_reportable(const LockdownOptions& o);

}  // namespace comet::seccomp
