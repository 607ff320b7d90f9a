#include "comet/base/result.hpp"

#include <cstring>
#include <string>

namespace comet {

const char* errno_name(int err) {
  // strerrorname_np is glibc >= 2.32 and gives "EPERM".
  const char* n = strerrorname_np(err);
  return n ? n : "E?";
}

std::string Error::what() const {
  if (errno_ == 0) return msg_;
  return msg_ + ": " + errno_name(errno_) + " (" + std::strerror(errno_) + ")";
}

}  // namespace comet
