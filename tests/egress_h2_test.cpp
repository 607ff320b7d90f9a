// h2c in the wire judge: the HPACK decoder (egress/hpack.hpp) against RFC
// 7541's examples and its decoding errors, and H2Requests (egress/wire.hpp)
// following frames and judging every request's :authority.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comet/egress/hpack.hpp"
#include "comet/egress/wire.hpp"

namespace hpack = comet::egress::hpack;
namespace wire = comet::egress::wire;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes hex(const std::string& h) {
  Bytes b;
  std::string d;
  for (char c : h)
    if (c != ' ') d += c;
  for (std::size_t i = 0; i + 1 < d.size(); i += 2)
    b.push_back(static_cast<uint8_t>(std::stoi(d.substr(i, 2), nullptr, 16)));
  return b;
}

using Headers = std::vector<hpack::Header>;

Headers decode(hpack::Decoder& d, const std::string& h) {
  Bytes b = hex(h);
  hpack::Result r = d.decode(b.data(), b.size());
  EXPECT_TRUE(r.ok) << r.why;
  return r.headers;
}

std::string why(const std::string& h) {
  hpack::Decoder d;
  Bytes b = hex(h);
  hpack::Result r = d.decode(b.data(), b.size());
  EXPECT_FALSE(r.ok) << h;
  return r.why;
}

}  // namespace

// RFC 7541 C.3: requests without Huffman coding, one decoder for the three.
TEST(Hpack, Rfc7541C3RequestsWithoutHuffman) {
  hpack::Decoder d;
  EXPECT_EQ(decode(d, "828684410f7777772e6578616d706c652e636f6d"),
            (Headers{{":method", "GET"},
                     {":scheme", "http"},
                     {":path", "/"},
                     {":authority", "www.example.com"}}));
  EXPECT_EQ(d.table_size(), 57u);
  EXPECT_EQ(decode(d, "828684be58086e6f2d6361636865"), (Headers{{":method", "GET"},
                                                                {":scheme", "http"},
                                                                {":path", "/"},
                                                                {":authority", "www.example.com"},
                                                                {"cache-control", "no-cache"}}));
  EXPECT_EQ(d.table_size(), 110u);
  EXPECT_EQ(decode(d, "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565"),
            (Headers{{":method", "GET"},
                     {":scheme", "https"},
                     {":path", "/index.html"},
                     {":authority", "www.example.com"},
                     {"custom-key", "custom-value"}}));
  EXPECT_EQ(d.table_size(), 164u);
  EXPECT_EQ(d.table_entries(), 3u);
}

// RFC 7541 C.4: the same requests Huffman-coded.
TEST(Hpack, Rfc7541C4RequestsWithHuffman) {
  hpack::Decoder d;
  EXPECT_EQ(decode(d, "828684418cf1e3c2e5f23a6ba0ab90f4ff"),
            (Headers{{":method", "GET"},
                     {":scheme", "http"},
                     {":path", "/"},
                     {":authority", "www.example.com"}}));
  EXPECT_EQ(decode(d, "828684be5886a8eb10649cbf"), (Headers{{":method", "GET"},
                                                            {":scheme", "http"},
                                                            {":path", "/"},
                                                            {":authority", "www.example.com"},
                                                            {"cache-control", "no-cache"}}));
  EXPECT_EQ(decode(d, "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf"),
            (Headers{{":method", "GET"},
                     {":scheme", "https"},
                     {":path", "/index.html"},
                     {":authority", "www.example.com"},
                     {"custom-key", "custom-value"}}));
  EXPECT_EQ(d.table_size(), 164u);
}

// RFC 7541 C.5: responses with a 256-byte table, so entries are evicted.
TEST(Hpack, Rfc7541C5EvictionAtTheTableSize) {
  hpack::Decoder d;
  decode(d, "3fe101");  // a size update to 256 (RFC: the setting; here the update)
  decode(d,
         "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a32"
         "3120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d");
  EXPECT_EQ(d.table_size(), 222u);
  EXPECT_EQ(decode(d, "4803333037c1c0bf"), (Headers{{":status", "307"},
                                                    {"cache-control", "private"},
                                                    {"date", "Mon, 21 Oct 2013 20:13:21 GMT"},
                                                    {"location", "https://www.example.com"}}));
  EXPECT_EQ(d.table_size(), 222u);  // ":status: 302" was evicted for ":status: 307"
  EXPECT_EQ(d.table_entries(), 4u);
}

TEST(Hpack, DecodingErrorsAreRefused) {
  EXPECT_EQ(why("80"), "bad index");                // index 0
  EXPECT_EQ(why("be"), "bad index");                // 62: empty dynamic table
  EXPECT_EQ(why("ff80808080808001"), "bad index");  // integer too long
  EXPECT_EQ(why("82"
                "3fe101"),
            "table size update after a field");
  EXPECT_EQ(why("3fe1ff07"), "table size update");  // over 64 KiB
  EXPECT_EQ(why("410f7777"), "string cut");
  EXPECT_EQ(why("4181fe"), "bad huffman code");        // padding not all ones
  EXPECT_EQ(why("4182ffff"), "bad huffman code");      // 16 bits of padding
  EXPECT_EQ(why("4184ffffffff"), "bad huffman code");  // EOS inside
}

TEST(Hpack, HuffmanRoundTripsEveryPrintableByte) {
  // "www.example.com" (RFC 7541 C.4.1) and "no-cache" decode; a byte of
  // padding alone is rejected (8 bits).
  std::string out;
  Bytes a = hex("f1e3c2e5f23a6ba0ab90f4ff");
  ASSERT_TRUE(hpack::huffman_decode(a.data(), a.size(), &out));
  EXPECT_EQ(out, "www.example.com");
  out.clear();
  Bytes pad = hex("ff");
  EXPECT_FALSE(hpack::huffman_decode(pad.data(), pad.size(), &out));
}

// ------------------------------------------------------------------ h2c frames
namespace {

const std::string kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

std::string frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string f;
  f += static_cast<char>(payload.size() >> 16);
  f += static_cast<char>(payload.size() >> 8);
  f += static_cast<char>(payload.size());
  f += static_cast<char>(type);
  f += static_cast<char>(flags);
  f += static_cast<char>(stream >> 24);
  f += static_cast<char>(stream >> 16);
  f += static_cast<char>(stream >> 8);
  f += static_cast<char>(stream);
  return f + payload;
}

// A header block: GET http / and a literal :authority (with incremental
// indexing), or the block given.
std::string block(const std::string& authority) {
  std::string b = "\x82\x86\x84";
  b += '\x41';
  b += static_cast<char>(authority.size());
  return b + authority;
}

std::string headers(uint32_t stream, const std::string& blk, uint8_t flags = 0x5) {
  return frame(0x1, flags, stream, blk);
}

const std::string kSettings = frame(0x4, 0, 0, std::string("\x00\x03\x00\x00\x00\x64", 6));

struct Fed {
  std::string forwarded;
  std::vector<std::string> hosts;
  wire::H2 end = wire::H2::need_more;
  std::string why;
};

// Feeds `t` STEP bytes at a time; accepts the hosts in `allow`.
Fed feed(const std::string& t, std::size_t step = 4096,
         const std::vector<std::string>& allow = {"good.test"}) {
  Fed r;
  wire::H2Requests h;
  std::string have;
  std::size_t given = 0;
  for (;;) {
    wire::H2Step s = h.next(reinterpret_cast<const uint8_t*>(have.data()), have.size());
    if (s.what == wire::H2::forward) {
      r.forwarded += have.substr(0, s.n);
      have.erase(0, s.n);
      continue;
    }
    if (s.what == wire::H2::authority) {
      r.hosts.push_back(s.host);
      if (std::find(allow.begin(), allow.end(), s.host) == allow.end()) {
        r.end = s.what;
        return r;
      }
      h.accept_head();
      continue;
    }
    if (s.what != wire::H2::need_more) {
      r.end = s.what;
      r.why = s.why;
      return r;
    }
    if (given == t.size()) return r;
    std::size_t k = std::min(step, t.size() - given);
    have += t.substr(given, k);
    given += k;
  }
}

}  // namespace

TEST(WireH2, EveryRequestsAuthorityIsJudgedWholeOrByteByByte) {
  std::string good = kPreface + kSettings + headers(1, block("good.test:8080"));
  // The second request names the other host, on the same connection.
  std::string t =
      good + frame(0x8, 0, 0, std::string("\x00\x01\x00\x00", 4)) + headers(3, block("evil.test"));
  for (std::size_t step : {1u, 2u, 9u, 4096u}) {
    Fed r = feed(t, step);
    EXPECT_EQ(r.hosts, (std::vector<std::string>{"good.test", "evil.test"})) << step;
    EXPECT_EQ(r.end, wire::H2::authority) << step;
    // Everything before the second HEADERS went out; not a byte of it.
    EXPECT_EQ(r.forwarded, t.substr(0, t.size() - headers(3, block("evil.test")).size())) << step;
  }
  // Nothing of a request goes before its block is complete.
  Fed half = feed(kPreface + kSettings + headers(1, block("good.test")).substr(0, 12));
  EXPECT_TRUE(half.hosts.empty());
  EXPECT_EQ(half.forwarded, kPreface + kSettings);
}

TEST(WireH2, TheDynamicTableIsFollowedAcrossRequests) {
  // Request 2 names its authority by index 62 (request 1's literal): good.
  // Request 3 indexes a new literal that names evil, then 62 points at it.
  std::string t = kPreface + headers(1, block("good.test")) + headers(3, "\x82\x86\x84\xbe") +
                  headers(5,
                          "\x82\x86\x84"
                          "\x41\x09"
                          "evil.test") +
                  headers(7, "\x82\x86\x84\xbe");
  Fed r = feed(t, 4096, {"good.test", "evil.test"});
  EXPECT_EQ(r.hosts,
            (std::vector<std::string>{"good.test", "good.test", "evil.test", "evil.test"}));
}

TEST(WireH2, ContinuationsAreJoinedAndNothingMayComeBetween) {
  std::string b = block("evil.test");
  std::string t = kPreface + headers(1, b.substr(0, 5), 0x1) + frame(0x9, 0, 1, b.substr(5, 2)) +
                  frame(0x9, 0x4, 1, b.substr(7));
  for (std::size_t step : {1u, 4096u}) {
    Fed r = feed(t, step);
    EXPECT_EQ(r.hosts, (std::vector<std::string>{"evil.test"}));
    EXPECT_EQ(r.forwarded, kPreface) << "a CONTINUATION's HEADERS went out before the judgement";
  }
  Fed between = feed(kPreface + headers(1, b.substr(0, 5), 0x1) + kSettings);
  EXPECT_EQ(between.end, wire::H2::malformed);
  EXPECT_EQ(between.why, "CONTINUATION expected");
  EXPECT_EQ(feed(kPreface + frame(0x9, 0x4, 1, b)).why, "CONTINUATION without HEADERS");
}

TEST(WireH2, PaddingAndPriorityAreSkippedNotRead) {
  std::string b = block("evil.test");
  std::string padded = std::string("\x03", 1) + b + std::string(3, '\0');
  EXPECT_EQ(feed(kPreface + headers(1, padded, 0x5 | 0x8)).hosts,
            (std::vector<std::string>{"evil.test"}));
  std::string prio = std::string("\x00\x00\x00\x00\x10", 5) + b;
  EXPECT_EQ(feed(kPreface + headers(1, prio, 0x5 | 0x20)).hosts,
            (std::vector<std::string>{"evil.test"}));
  EXPECT_EQ(feed(kPreface + headers(1, std::string("\x40", 1) + b, 0x5 | 0x8)).why,
            "HEADERS padding");
}

TEST(WireH2, AuthorityAndHostMustAgree) {
  // host only, as some clients write it
  std::string host_only = std::string("\x82\x86\x84") + "\x40\x04host\x09good.test";
  EXPECT_EQ(feed(kPreface + headers(1, host_only)).hosts, (std::vector<std::string>{"good.test"}));
  std::string both = block("good.test") +
                     "\x40\x04Host\x09"
                     "evil.test";
  Fed r = feed(kPreface + headers(1, both));
  EXPECT_EQ(r.end, wire::H2::malformed);
  EXPECT_EQ(r.why, "two authorities");
  EXPECT_EQ(feed(kPreface + headers(1, "\x82\x86\x84")).end, wire::H2::no_authority);
  EXPECT_EQ(feed(kPreface + headers(1, "\x82\x86\x84\x81")).why, "authority");  // empty
  EXPECT_EQ(feed(kPreface + headers(1, block("a@evil.test"))).why, "authority");
  std::string connect = std::string("\x42\x07") + "CONNECT" + "\x41\x0dgood.test:443";
  EXPECT_EQ(feed(kPreface + headers(1, connect)).why, "CONNECT");
}

TEST(WireH2, FramingRefusals) {
  EXPECT_EQ(feed("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n").why, "connection preface");
  EXPECT_EQ(feed(kPreface + headers(2, block("good.test"))).why, "HEADERS on stream 2");
  EXPECT_EQ(feed(kPreface + headers(0, block("good.test"))).why, "HEADERS on stream 0");
  EXPECT_EQ(feed(kPreface + frame(0x5, 0x4, 1, "\x00\x00\x00\x02" + block("x"))).why,
            "PUSH_PROMISE from a client");
  EXPECT_EQ(feed(kPreface + headers(1, "\x80")).why, "hpack: bad index");
  std::string big(wire::kMaxH2Block, 'a');
  EXPECT_EQ(feed(kPreface + headers(1, big)).end, wire::H2::too_large);
}

TEST(WireH2, TrailersOnlyOnAnOpenStream) {
  // Stream 1 open (no END_STREAM): trailers without an authority pass.
  std::string t = kPreface + headers(1, block("good.test"), 0x4) + frame(0x0, 0, 1, "body") +
                  headers(1, "\x40\x07grpc-x1\x01y", 0x5);
  Fed r = feed(t);
  EXPECT_EQ(r.end, wire::H2::need_more);
  EXPECT_EQ(r.forwarded, t);
  // A lower stream the client never opened, or one it ended: refused
  // (a lenient server would take it as a request with no authority).
  std::string ended = kPreface + headers(3, block("good.test"), 0x5) + headers(1, "\x82\x86\x84");
  EXPECT_EQ(feed(ended).why, "HEADERS on a closed stream");
  std::string data_end = kPreface + headers(1, block("good.test"), 0x4) + frame(0x0, 0x1, 1, "x") +
                         headers(1, "\x40\x01x\x01y", 0x5);
  EXPECT_EQ(feed(data_end).why, "HEADERS on a closed stream");
  std::string rst = kPreface + headers(1, block("good.test"), 0x4) +
                    frame(0x3, 0, 1, std::string(4, '\0')) + headers(1, "\x40\x01x\x01y", 0x5);
  EXPECT_EQ(feed(rst).why, "HEADERS on a closed stream");
}

TEST(WireH2, DataPayloadsAreOpaque) {
  wire::H2Requests h;
  std::string t = kPreface + headers(1, block("good.test"), 0x4);
  auto step = [&](const std::string& s) {
    return h.next(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  std::string rest = t;
  wire::H2Step s;
  while ((s = step(rest)).what == wire::H2::forward) rest.erase(0, s.n);
  ASSERT_EQ(s.what, wire::H2::authority);
  h.accept_head();
  s = step(rest);
  ASSERT_EQ(s.what, wire::H2::forward);
  rest.erase(0, s.n);
  EXPECT_EQ(rest, "");
  std::string data = frame(0x0, 0x1, 1, std::string(100000 % 16384, 'd'));
  s = step(data);
  ASSERT_EQ(s.what, wire::H2::forward);
  EXPECT_EQ(s.n, 9u);
  EXPECT_EQ(h.opaque_left(), 100000u % 16384);
  h.skip(h.opaque_left());
  EXPECT_EQ(h.opaque_left(), 0u);
}
