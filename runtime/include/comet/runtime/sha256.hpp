// SHA-256 (OpenSSL libcrypto), for content keys: the built-in seccomp
// filter cache, the default rootfs cache and the pack result cache.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace comet::runtime {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, std::size_t len);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::array<std::uint8_t, 32> digest();  // ends the hash
  std::string hex();                      // digest() as 64 lowercase hex digits

 private:
  struct State;
  std::unique_ptr<State> st_;
};

std::string sha256_hex(std::string_view data);

}  // namespace comet::runtime
