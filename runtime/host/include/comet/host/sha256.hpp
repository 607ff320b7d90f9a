// SHA-256 (OpenSSL libcrypto), for content keys: the built-in seccomp
// filter cache, the default rootfs cache and the pack result cache.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace comet::runtime {

// Streaming; move-only.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, std::size_t len);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // A length-prefixed field: ("ab","c") and ("a","bc") never collide.
  void field(std::string_view s);
  // Both end the hash and start a new one (the object can be reused).
  std::array<std::uint8_t, 32> digest();
  std::string hex();  // digest() as 64 lowercase hex digits

 private:
  struct State;
  std::unique_ptr<State> st_;
};

std::string sha256_hex(std::string_view data);

}  // namespace comet::runtime
