#include "comet/base/result.hpp"

#include <cstring>
#include <string>

namespace comet {

std::string errno_name(int err) {
  // strerrorname_np is glibc >= 2.32 and gives "EPERM".
  if (const char* n = strerrorname_np(err)) return n;
  return "E" + std::to_string(err);
}

std::string Error::what() const {
  if (errno_ == 0) return msg_;
  return msg_ + ": " + errno_name(errno_) + " (" + std::strerror(errno_) + ")";
}

}  // namespace comet
