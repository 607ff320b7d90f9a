// Random ids: temporary-name suffixes, sandbox ids, event ids, DNS ids. All
// from getrandom(2), which blocks only until the kernel's pool is first
// seeded and then never fails for up to 256 bytes; the fallback (the clock
// and the pid) is there so that an id still differs from the last one
// should it ever fail (ENOSYS on a pre-3.17 kernel, EINTR).
#pragma once

#include <cstddef>
#include <string>

namespace comet {

// Fills buf with n (at most 256) random bytes.
void random_bytes(void* buf, std::size_t n) noexcept;

// `bytes` random bytes as 2 * bytes lowercase hex digits.
std::string random_hex(std::size_t bytes);

// A random UUID, version 4: "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx".
std::string random_uuid();

}  // namespace comet
