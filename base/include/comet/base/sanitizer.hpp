// COMET_ASAN: defined in an AddressSanitizer build. Code that clones a
// CLONE_VM child on a stack of its own forks there instead (ASan cannot
// follow such a child). g++ says __SANITIZE_ADDRESS__, clang only
// __has_feature(address_sanitizer).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define COMET_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COMET_ASAN 1
#endif
#endif
