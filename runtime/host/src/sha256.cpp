// SHA-256 through libcrypto's SHA256_Init/Update/Final, not EVP: in
// OpenSSL 3 the first EVP digest of a process loads openssl.cnf and the
// default provider and fills the algorithm name map, 1.0-1.7 ms measured on
// this machine, against 11 us for the same digest here (same assembly
// kernels, so the same throughput on large inputs). These functions are
// deprecated in 3.0 but built in Debian's libcrypto; docs/dependencies.md
// says what to do if they go.
#include "comet/host/sha256.hpp"

#include <openssl/sha.h>

namespace comet::runtime {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

struct Sha256::State {
  SHA256_CTX ctx;
};

Sha256::Sha256() : st_(std::make_unique<State>()) {
  SHA256_Init(&st_->ctx);
}
Sha256::~Sha256() = default;

void Sha256::update(const void* data, std::size_t len) {
  SHA256_Update(&st_->ctx, data, len);
}

std::array<std::uint8_t, 32> Sha256::digest() {
  std::array<std::uint8_t, 32> md{};
  SHA256_Final(md.data(), &st_->ctx);
  SHA256_Init(&st_->ctx);
  return md;
}

#pragma GCC diagnostic pop

std::string Sha256::hex() {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::uint8_t b : digest()) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

void Sha256::field(std::string_view s) {
  update(std::to_string(s.size()) + ":");
  update(s);
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex();
}

}  // namespace comet::runtime
