#include "comet/base/random.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace comet {

void random_bytes(void* buf, std::size_t n) noexcept {
  n = std::min<std::size_t>(n, 256);
  if (::getrandom(buf, n, 0) == static_cast<ssize_t>(n)) return;
  struct timespec ts = {};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  unsigned long long x = static_cast<unsigned long long>(ts.tv_nsec) ^
                         (static_cast<unsigned long long>(ts.tv_sec) << 30) ^
                         (static_cast<unsigned long long>(::getpid()) * 2654435761ULL);
  auto* b = static_cast<unsigned char*>(buf);
  for (std::size_t i = 0; i < n; i++) {
    x ^= x << 13;  // xorshift64: spreads the seed over every byte
    x ^= x >> 7;
    x ^= x << 17;
    b[i] = static_cast<unsigned char>(x);
  }
}

std::string random_hex(std::size_t bytes) {
  unsigned char b[256];
  bytes = std::min(bytes, sizeof b);
  random_bytes(b, bytes);
  static const char* kHex = "0123456789abcdef";
  std::string s;
  s.reserve(2 * bytes);
  for (std::size_t i = 0; i < bytes; i++) {
    s += kHex[b[i] >> 4];
    s += kHex[b[i] & 15];
  }
  return s;
}

std::string random_uuid() {
  unsigned char b[16];
  random_bytes(b, sizeof b);
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // variant 1 (RFC 4122)
  char s[37];
  std::snprintf(s, sizeof s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                b[13], b[14], b[15]);
  return s;
}

}  // namespace comet
