// Shared helpers for the libFuzzer targets: FUZZ_CHECK aborts (so libFuzzer
// records a crash and saves the input) when an invariant does not hold, and
// prints what was expected. Invariant failures are findings exactly like
// sanitizer reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace comet::fuzz {

[[noreturn]] inline void fail(const char* file, int line, const char* cond,
                              const std::string& detail) {
  std::fprintf(stderr, "\n==FUZZ-INVARIANT== %s:%d: %s\n", file, line, cond);
  if (!detail.empty()) std::fprintf(stderr, "%s\n", detail.c_str());
  std::fflush(stderr);
  std::abort();
}

inline std::string_view as_view(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
inline bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    unsigned cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      n = 1, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

}  // namespace comet::fuzz

#define FUZZ_CHECK(cond, detail)                                                      \
  do {                                                                                \
    if (!(cond)) ::comet::fuzz::fail(__FILE__, __LINE__, #cond, std::string(detail)); \
  } while (0)
