// An HPACK decoder (RFC 7541) for the wire judge's h2c reader: the header
// blocks an agent sends, decoded as the server will decode them, so that
// every request's `:authority` (and `host`) is judged (docs/egress.md,
// "h2c"). Pure: no syscalls, no allocation past the bounds below. Strict
// where the RFC says "MUST treat as a decoding error" (a server that is
// lenient there only sees a connection the judge already refused).
//
// Fuzzed through tests/fuzz/wire_fuzz.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

namespace comet::egress::hpack {

// The dynamic table's size before any size update: HTTP/2's default
// SETTINGS_HEADER_TABLE_SIZE, which the server's decoder starts with too.
inline constexpr std::size_t kDefaultTableSize = 4096;
// The largest size update accepted. The judge does not see the server's
// SETTINGS; an encoder that goes past what the server allows is refused by
// the server itself.
inline constexpr std::size_t kMaxTableSize = 64 * 1024;
// The decoded header list of one block, in bytes (names + values + 32 each,
// as SETTINGS_MAX_HEADER_LIST_SIZE counts).
inline constexpr std::size_t kMaxHeaderList = 64 * 1024;

using Header = std::pair<std::string, std::string>;

struct Result {
  bool ok = false;
  std::string why;              // when !ok: what was wrong
  std::vector<Header> headers;  // in order
};

class Decoder {
 public:
  // One complete header block (the fragments of a HEADERS frame and its
  // CONTINUATIONs, joined). The dynamic table changes as the server's does.
  Result decode(const uint8_t* data, std::size_t len);

  std::size_t table_size() const { return size_; }
  std::size_t table_entries() const { return table_.size(); }

 private:
  bool lookup(uint64_t index, Header* out) const;
  void insert(Header h);
  void evict();

  std::deque<Header> table_;  // newest first (index 62)
  std::size_t size_ = 0;      // RFC 7541 4.1: name + value + 32 per entry
  std::size_t max_ = kDefaultTableSize;
};

// A Huffman-coded string literal (RFC 7541 5.2, Appendix B); false when it
// is not a valid code: EOS inside, padding over 7 bits or not all ones.
bool huffman_decode(const uint8_t* data, std::size_t len, std::string* out);

}  // namespace comet::egress::hpack
