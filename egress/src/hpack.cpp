// An HPACK decoder (RFC 7541): egress/include/comet/egress/hpack.hpp.
#include "comet/egress/hpack.hpp"

#include <array>
#include <string_view>

namespace comet::egress::hpack {

namespace {

// RFC 7541 Appendix A: the static table, indexes 1..61.
constexpr std::pair<std::string_view, std::string_view> kStatic[61] = {
    {":authority", ""},
    {":method", "GET"},
    {":method", "POST"},
    {":path", "/"},
    {":path", "/index.html"},
    {":scheme", "http"},
    {":scheme", "https"},
    {":status", "200"},
    {":status", "204"},
    {":status", "206"},
    {":status", "304"},
    {":status", "400"},
    {":status", "404"},
    {":status", "500"},
    {"accept-charset", ""},
    {"accept-encoding", "gzip, deflate"},
    {"accept-language", ""},
    {"accept-ranges", ""},
    {"accept", ""},
    {"access-control-allow-origin", ""},
    {"age", ""},
    {"allow", ""},
    {"authorization", ""},
    {"cache-control", ""},
    {"content-disposition", ""},
    {"content-encoding", ""},
    {"content-language", ""},
    {"content-length", ""},
    {"content-location", ""},
    {"content-range", ""},
    {"content-type", ""},
    {"cookie", ""},
    {"date", ""},
    {"etag", ""},
    {"expect", ""},
    {"expires", ""},
    {"from", ""},
    {"host", ""},
    {"if-match", ""},
    {"if-modified-since", ""},
    {"if-none-match", ""},
    {"if-range", ""},
    {"if-unmodified-since", ""},
    {"last-modified", ""},
    {"link", ""},
    {"location", ""},
    {"max-forwards", ""},
    {"proxy-authenticate", ""},
    {"proxy-authorization", ""},
    {"range", ""},
    {"referer", ""},
    {"refresh", ""},
    {"retry-after", ""},
    {"server", ""},
    {"set-cookie", ""},
    {"strict-transport-security", ""},
    {"transfer-encoding", ""},
    {"user-agent", ""},
    {"vary", ""},
    {"via", ""},
    {"www-authenticate", ""},
};

// RFC 7541 Appendix B: the code length of each symbol (0..255, and 256:
// EOS). The code is canonical: codes of one length are consecutive, in
// symbol order, so the lengths alone define it (checked by the unit test's
// RFC 7541 C.4 examples).
constexpr uint8_t kCodeLength[257] = {
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6,  10, 10, 12, 13, 6,  8,  11, 10, 10, 8,  11, 8,  6,  6,  6,
    5,  5,  5,  6,  6,  6,  6,  6,  6,  6,  7,  8,  15, 6,  12, 10, 13, 6,  7,  7,  7,  7,  7,  7,
    7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  8,  7,  8,  13, 19, 13, 14, 6,
    15, 5,  6,  5,  6,  5,  6,  6,  6,  5,  7,  7,  6,  6,  6,  5,  6,  7,  6,  5,  5,  6,  7,  7,
    7,  7,  7,  15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21,
    23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24,
    21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
};

constexpr int kMaxCodeLength = 30;
constexpr int kEos = 256;

// The canonical code rebuilt from the lengths: for each length, its first
// code and where its symbols start in `symbols`.
struct Canonical {
  std::array<uint32_t, kMaxCodeLength + 1> first{};
  std::array<uint16_t, kMaxCodeLength + 1> count{};
  std::array<uint16_t, kMaxCodeLength + 1> offset{};
  std::array<uint16_t, 257> symbols{};

  constexpr Canonical() {
    for (int s = 0; s < 257; ++s) ++count[kCodeLength[s]];
    uint16_t at = 0;
    uint32_t code = 0;
    for (int len = 1; len <= kMaxCodeLength; ++len) {
      first[len] = code;
      offset[len] = at;
      for (int s = 0; s < 257; ++s)
        if (kCodeLength[s] == len) symbols[at++] = static_cast<uint16_t>(s);
      code = (code + count[len]) << 1;
    }
  }
};

constexpr Canonical kCode;

// RFC 7541 5.1: an integer with an N-bit prefix. At most 2^28 or so: more
// continuation bytes are an error, not an overflow.
bool read_int(const uint8_t*& p, const uint8_t* end, int prefix, uint64_t* out) {
  if (p == end) return false;
  const uint64_t max = (uint64_t{1} << prefix) - 1;
  uint64_t v = *p++ & max;
  if (v == max) {
    for (int shift = 0;; shift += 7) {
      if (p == end || shift > 21) return false;
      uint8_t b = *p++;
      v += static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
  }
  *out = v;
  return true;
}

// RFC 7541 5.2: a string literal, Huffman-coded or not.
bool read_string(const uint8_t*& p, const uint8_t* end, std::string* out, std::string* why) {
  if (p == end) return *why = "string cut", false;
  bool huffman = *p & 0x80;
  uint64_t len = 0;
  if (!read_int(p, end, 7, &len)) return *why = "string length", false;
  if (len > static_cast<uint64_t>(end - p)) return *why = "string cut", false;
  if (len > kMaxHeaderList) return *why = "string too long", false;
  const uint8_t* s = p;
  p += len;
  if (!huffman) {
    out->assign(reinterpret_cast<const char*>(s), len);
    return true;
  }
  out->clear();
  if (!huffman_decode(s, len, out)) return *why = "bad huffman code", false;
  return true;
}

}  // namespace

bool huffman_decode(const uint8_t* data, std::size_t len, std::string* out) {
  uint32_t code = 0;
  int bits = 0;
  bool ones = true;  // every bit since the last symbol was 1
  for (std::size_t i = 0; i < len; ++i) {
    for (int b = 7; b >= 0; --b) {
      uint32_t bit = (data[i] >> b) & 1;
      code = (code << 1) | bit;
      ones = ones && bit;
      ++bits;
      if (bits > kMaxCodeLength) return false;
      uint32_t first = kCode.first[bits];
      if (code >= first && code - first < kCode.count[bits]) {
        uint16_t sym = kCode.symbols[kCode.offset[bits] + (code - first)];
        if (sym == kEos) return false;  // RFC 7541 5.2: EOS in a string
        out->push_back(static_cast<char>(sym));
        code = 0;
        bits = 0;
        ones = true;
      }
    }
  }
  // Padding: the most significant bits of EOS (all ones), shorter than a byte.
  return bits < 8 && ones;
}

bool Decoder::lookup(uint64_t index, Header* out) const {
  if (index == 0) return false;
  if (index <= 61) {
    const auto& [n, v] = kStatic[index - 1];
    *out = {std::string(n), std::string(v)};
    return true;
  }
  if (index - 62 >= table_.size()) return false;
  *out = table_[index - 62];
  return true;
}

void Decoder::evict() {
  while (size_ > max_ && !table_.empty()) {
    size_ -= table_.back().first.size() + table_.back().second.size() + 32;
    table_.pop_back();
  }
}

// RFC 7541 4.4: an entry larger than the table empties it and is not added.
void Decoder::insert(Header h) {
  std::size_t n = h.first.size() + h.second.size() + 32;
  if (n > max_) {
    table_.clear();
    size_ = 0;
    return;
  }
  size_ += n;
  table_.push_front(std::move(h));
  evict();
}

Result Decoder::decode(const uint8_t* data, std::size_t len) {
  Result r;
  const uint8_t* p = data;
  const uint8_t* end = data + len;
  std::size_t list = 0;
  auto fail = [&](std::string why) {
    r.ok = false;
    r.why = std::move(why);
    r.headers.clear();
    return r;
  };
  while (p < end) {
    uint8_t b = *p;
    Header h;
    if (b & 0x80) {  // 6.1 indexed
      uint64_t idx = 0;
      if (!read_int(p, end, 7, &idx) || !lookup(idx, &h)) return fail("bad index");
    } else if ((b & 0xe0) == 0x20) {  // 6.3 dynamic table size update
      if (!r.headers.empty()) return fail("table size update after a field");
      uint64_t v = 0;
      if (!read_int(p, end, 5, &v) || v > kMaxTableSize) return fail("table size update");
      max_ = static_cast<std::size_t>(v);
      evict();
      continue;
    } else {  // 6.2 literals: with incremental indexing (01), without (0000), never (0001)
      bool index = (b & 0xc0) == 0x40;
      uint64_t idx = 0;
      if (!read_int(p, end, index ? 6 : 4, &idx)) return fail("bad index");
      if (idx) {
        Header named;
        if (!lookup(idx, &named)) return fail("bad index");
        h.first = std::move(named.first);
      } else if (std::string why; !read_string(p, end, &h.first, &why)) {
        return fail(why);
      }
      if (std::string why; !read_string(p, end, &h.second, &why)) return fail(why);
      if (index) insert(h);
    }
    list += h.first.size() + h.second.size() + 32;
    if (list > kMaxHeaderList) return fail("header list too large");
    r.headers.push_back(std::move(h));
  }
  r.ok = true;
  return r;
}

}  // namespace comet::egress::hpack
