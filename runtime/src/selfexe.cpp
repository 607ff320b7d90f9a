#include "comet/runtime/selfexe.hpp"

#include <fcntl.h>
#include <linux/memfd.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <seccomp.h>
#include <cerrno>
#include <cstdio>
#include <cstring>

extern char** environ;

namespace comet::runtime {
namespace {

constexpr int kSeals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;

// The verb, skipping global options (and their values).
const char* command_of(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (a[0] != '-') return a;
    if (std::strchr(a, '=')) continue;
    if (!std::strcmp(a, "--root") || !std::strcmp(a, "--log") || !std::strcmp(a, "--log-format"))
      i++;
  }
  return "";
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "comet-runtime: cannot run from a sealed copy of itself: %s: %s\n", what,
               std::strerror(errno));
  std::_Exit(1);
}

}  // namespace

bool running_sealed() {
  int fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  int seals = ::fcntl(fd, F_GET_SEALS);
  ::close(fd);
  return seals >= 0 && (seals & kSeals) == kSeals;
}

void ensure_sealed_self(int argc, char** argv) {
  const char* cmd = command_of(argc, argv);
  if (std::strcmp(cmd, "create") && std::strcmp(cmd, "run") && std::strcmp(cmd, "exec")) return;
  if (running_sealed()) return;
  int src = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (src < 0) die("open /proc/self/exe");
  struct stat st;
  if (::fstat(src, &st) < 0) die("fstat /proc/self/exe");
  unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
#ifdef MFD_EXEC
  flags |= MFD_EXEC;
#else
  flags |= 0x0010U;  // MFD_EXEC (Linux 6.3): exec allowed even with vm.memfd_noexec=1
#endif
  int mfd = ::memfd_create("comet-runtime", flags);
  if (mfd < 0 && errno == EINVAL)
    mfd = ::memfd_create("comet-runtime", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (mfd < 0) die("memfd_create");
  off_t off = 0;
  while (off < st.st_size) {
    ssize_t n = ::sendfile(mfd, src, &off, static_cast<size_t>(st.st_size - off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) die("copy the runtime binary");
  }
  ::close(src);
  if (::fcntl(mfd, F_ADD_SEALS, kSeals) < 0) die("seal the copy");
  ::fexecve(mfd, argv, environ);
  die("fexecve");
}

std::string version_text() {
  const scmp_version* v = seccomp_version();
  char buf[256];
  std::snprintf(buf, sizeof buf, "comet-runtime version %s\nspec: 1.2.0\nlibseccomp: %u.%u.%u",
                COMET_VERSION, v->major, v->minor, v->micro);
  return buf;
}

}  // namespace comet::runtime
