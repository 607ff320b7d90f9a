// The exec trampoline (CVE-2019-5736 hardening, complementing selfexe.hpp).
//
// The final execve of a container process must not be made by the runtime's
// own binary: if the target is a script starting "#!/proc/self/exe", the
// kernel would resolve the interpreter in the exec'ing process and run the
// runtime's binary inside the container. Instead the runtime execveat()s a
// tiny static binary (runtime/lifecycle/trampoline/trampoline.c, embedded in this
// library) from a sealed memfd, and that binary execs the target. While it
// runs, /proc/PID/exe is the sealed memfd (unwritable); after, the target.
//
// Wiring (in the container init / exec path):
//   1. Before forking/cloning (or at least before the seccomp filter and the
//      pivot_root), call sealed_trampoline() and keep the fd. It is
//      O_CLOEXEC, so it vanishes at the final exec; it must survive until
//      then (do not close it in the close-fds sweep, or re-create it).
//   2. Where the child would execve(path, argv, envp), call
//      exec_via_trampoline(fd, path, argv, envp) instead. It only returns on
//      failure, with errno (from execveat: e.g. EACCES, ENOEXEC on the memfd
//      itself). Failures of the *target* path (ENOENT, EACCES...) happen in
//      the trampoline after the point of no return: the process exits 127.
//      So resolve and check the target path (PATH lookup, access(X_OK))
//      before calling, as runc does, to report a precise error.
//   3. The trampoline makes only execve and exit_group syscalls, so it works
//      under any seccomp filter that lets the target itself be exec'd
//      (execveat must be allowed for the first hop).
#pragma once

#include <cstddef>
#include <span>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"

namespace comet::runtime {

// argv[0] the trampoline insists on (anything else: exit 127).
inline constexpr const char kTrampolineArgv0[] = "comet-exec";
// Extra argv slots exec_via_trampoline needs beyond the target's argc:
// argv[0] marker, path, and the terminating NULL.
inline constexpr std::size_t kTrampolineExtraArgs = 3;

// The embedded trampoline ELF image (defined in the generated
// trampoline_image.cpp, runtime/embed.cmake).
std::span<const unsigned char> trampoline_image() noexcept;

// memfd_create("comet-exec", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC),
// retried without MFD_EXEC on EINVAL (kernels before 6.3), filled with the
// image and sealed F_SEAL_SEAL|F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_WRITE.
Result<UniqueFd> sealed_trampoline();

// execveat(tramp_fd, "", ["comet-exec", path, argv[0], argv[1], ..., NULL],
// envp, AT_EMPTY_PATH): the process then runs path with exactly argv/envp.
// Async-signal-safe, no allocation: the new argv is built in `scratch`
// (scratch_len pointers; needs argc + kTrampolineExtraArgs). Returns the
// errno on failure (E2BIG when scratch is too small, EINVAL for bad args);
// never returns on success.
int exec_via_trampoline(int tramp_fd, const char* path, char* const argv[], char* const envp[],
                        const char** scratch, std::size_t scratch_len) noexcept;

// As above with an on-stack array of kTrampolineStackArgs pointers (32 KiB
// of stack: fine in a forked child; use the scratch overload for more args).
inline constexpr std::size_t kTrampolineStackArgs = 4096;
int exec_via_trampoline(int tramp_fd, const char* path, char* const argv[],
                        char* const envp[]) noexcept;

}  // namespace comet::runtime
