// DNS messages (RFC 1035): a bounds-checked parser and a builder. Pure: no
// syscalls, no allocation beyond the returned values. The parser reads
// untrusted bytes from the container (queries) and from upstream servers
// (answers); it never reads past the buffer, follows only backward
// compression pointers (so every name terminates), and caps names at 255
// octets and a message at kMaxRecords records. Fuzzed by
// tests/fuzz/dns_message_fuzz.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "comet/base/result.hpp"

namespace comet::egress::dns {

inline constexpr uint16_t kTypeA = 1;
inline constexpr uint16_t kTypeCname = 5;
inline constexpr uint16_t kTypeAaaa = 28;
inline constexpr uint16_t kTypeOpt = 41;
inline constexpr uint16_t kClassIn = 1;

inline constexpr uint16_t kFlagQr = 0x8000;  // response
inline constexpr uint16_t kFlagAa = 0x0400;
inline constexpr uint16_t kFlagTc = 0x0200;  // truncated
inline constexpr uint16_t kFlagRd = 0x0100;  // recursion desired
inline constexpr uint16_t kFlagRa = 0x0080;  // recursion available

enum Rcode : uint16_t {
  kNoError = 0,
  kFormErr = 1,
  kServFail = 2,
  kNxDomain = 3,
  kNotImp = 4,
  kRefused = 5,
};

inline constexpr std::size_t kHeaderSize = 12;
inline constexpr std::size_t kMaxName = 255;     // wire octets, RFC 1035 2.3.4
inline constexpr std::size_t kMaxRecords = 256;  // all sections together
inline constexpr std::size_t kMaxMessage = 65535;

// A domain name as text: labels joined by '.', ASCII letters lower-cased,
// no trailing dot, "" for the root. Octets other than [a-z0-9_-] inside a
// label are written \DDD (decimal), so a label holding a '.' can never be
// read as two labels, and such a name never matches an allowlist entry.
struct Question {
  std::string name;
  uint16_t type = kTypeA;
  uint16_t qclass = kClassIn;
  bool operator==(const Question&) const = default;
};

struct Record {
  std::string name;
  uint16_t type = kTypeA;
  uint16_t rclass = kClassIn;
  uint32_t ttl = 0;
  // CNAME: the target (decompressed), rdata empty. Every other type: the
  // raw rdata (A: 4 octets, AAAA: 16).
  std::string target;
  std::vector<uint8_t> rdata;
  bool operator==(const Record&) const = default;
};

struct Message {
  uint16_t id = 0;
  uint16_t flags = 0;
  std::vector<Question> questions;
  std::vector<Record> answers;
  std::vector<Record> authority;
  std::vector<Record> additional;

  bool response() const { return flags & kFlagQr; }
  bool truncated() const { return flags & kFlagTc; }
  int opcode() const { return (flags >> 11) & 0xf; }
  int rcode() const { return flags & 0xf; }
  void set_rcode(uint16_t r) { flags = static_cast<uint16_t>((flags & ~0xfu) | (r & 0xfu)); }
  bool operator==(const Message&) const = default;
};

// Only the 12-octet header (id, flags, counts), for replying FORMERR to a
// message whose body does not parse.
struct Header {
  uint16_t id = 0;
  uint16_t flags = 0;
  uint16_t qdcount = 0, ancount = 0, nscount = 0, arcount = 0;
};
Result<Header> parse_header(const uint8_t* data, std::size_t len);

// The whole message. Errors say what was malformed and at which offset.
Result<Message> parse(const uint8_t* data, std::size_t len);
inline Result<Message> parse(const std::vector<uint8_t>& b) {
  return parse(b.data(), b.size());
}

// Wire form, names uncompressed. Fails for a name that cannot be encoded
// (label over 63 octets, name over 255, a bad \DDD escape) or a message
// over 65535 octets.
Result<std::vector<uint8_t>> build(const Message& m);

// Name text helpers (the same normalisation the parser applies).
bool valid_name(std::string_view text);
std::string normalize_name(std::string_view text);  // lower case, no trailing dot

// A reply to `query` carrying only its question and `rcode` (QR and RA set,
// RD copied). Used for REFUSED, SERVFAIL, FORMERR.
Message error_reply(const Message& query, uint16_t rcode);

}  // namespace comet::egress::dns
