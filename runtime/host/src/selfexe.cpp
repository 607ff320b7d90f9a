#include "comet/host/selfexe.hpp"

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
std::string version_text() {
  const scmp_version* v = seccomp_version();
  char buf[256];
  std::snprintf(buf, sizeof buf, "comet-runtime version %s\nspec: 1.2.0\nlibseccomp: %u.%u.%u",
                COMET_VERSION, v->major, v->minor, v->micro);
  return buf;
}

}  // namespace comet::runtime
