#include "comet/lifecycle/trampoline.hpp"
#include "comet/base/fault.hpp"

#include <fcntl.h>
#include <linux/memfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

// trampoline_image() is defined in the generated trampoline_image.cpp
// (runtime/embed.cmake).
namespace comet::runtime {
namespace {

constexpr int kSeals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;

int memfd(unsigned flags) {
  return static_cast<int>(::syscall(SYS_memfd_create, "comet-exec", flags));
}

}  // namespace

Result<UniqueFd> sealed_trampoline() {
  constexpr unsigned kFlags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
  UniqueFd fd(fault_fail("memfd-enosys", ENOSYS) ? -1 : memfd(kFlags | MFD_EXEC));
  if (!fd && errno == EINVAL) fd.reset(memfd(kFlags));  // before Linux 6.3
  if (!fd) return Error::sys(errno, "memfd_create comet-exec");

  auto image = trampoline_image();
  std::size_t done = 0;
  while (done < image.size()) {
    ssize_t n = ::write(fd.get(), image.data() + done, image.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::sys(n < 0 ? errno : EIO, "write exec trampoline to memfd");
    done += static_cast<std::size_t>(n);
  }
  // Executable by everyone (a container process may run as any uid), and
  // readable by no one: exec of a file the task cannot read leaves it not
  // dumpable from its first instruction (fs/exec.c would_dump), so a pack's
  // init (comet-init) is never open to ptrace or /proc/1/* access by the
  // agent, not even before its own prctl(PR_SET_DUMPABLE, 0).
  if (::fchmod(fd.get(), 0111) < 0) return Error::sys(errno, "fchmod exec trampoline memfd");
  if (::fcntl(fd.get(), F_ADD_SEALS, kSeals) < 0)
    return Error::sys(errno, "seal exec trampoline memfd");
  int seals = ::fcntl(fd.get(), F_GET_SEALS);
  if (seals < 0) return Error::sys(errno, "get seals of exec trampoline memfd");
  if ((seals & kSeals) != kSeals) return Error::msg("exec trampoline memfd is not fully sealed");
  return fd;
}

int exec_via_trampoline(int tramp_fd, const char* path, char* const argv[], char* const envp[],
                        const char** scratch, std::size_t scratch_len) noexcept {
  if (tramp_fd < 0 || path == nullptr || scratch == nullptr) return EINVAL;
  std::size_t argc = 0;
  if (argv != nullptr)
    while (argv[argc] != nullptr) argc++;
  if (scratch_len < kTrampolineExtraArgs || argc > scratch_len - kTrampolineExtraArgs) return E2BIG;
  scratch[0] = kTrampolineArgv0;
  scratch[1] = path;
  for (std::size_t i = 0; i < argc; i++) scratch[i + 2] = argv[i];
  scratch[argc + 2] = nullptr;
  static char* const kNoEnv[] = {nullptr};
  // The kernel's execve argv is char* const*; it never writes the strings.
  ::syscall(SYS_execveat, tramp_fd, "", const_cast<char**>(scratch), envp ? envp : kNoEnv,
            AT_EMPTY_PATH);
  return errno;
}

int exec_via_trampoline(int tramp_fd, const char* path, char* const argv[],
                        char* const envp[]) noexcept {
  const char* slots[kTrampolineStackArgs];
  return exec_via_trampoline(tramp_fd, path, argv, envp, slots, kTrampolineStackArgs);
}

}  // namespace comet::runtime
