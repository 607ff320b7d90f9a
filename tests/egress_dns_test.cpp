// egress/dns_message: the parser on good, hostile and malformed input, and
// the builder's round trip.
#include <gtest/gtest.h>

#include "comet/egress/dns_message.hpp"

using namespace comet::egress::dns;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes header(uint16_t id, uint16_t flags, uint16_t qd, uint16_t an = 0, uint16_t ns = 0,
             uint16_t ar = 0) {
  return {static_cast<uint8_t>(id >> 8),
          static_cast<uint8_t>(id),
          static_cast<uint8_t>(flags >> 8),
          static_cast<uint8_t>(flags),
          0,
          static_cast<uint8_t>(qd),
          0,
          static_cast<uint8_t>(an),
          0,
          static_cast<uint8_t>(ns),
          0,
          static_cast<uint8_t>(ar)};
}

void append(Bytes& b, std::initializer_list<int> v) {
  for (int x : v) b.push_back(static_cast<uint8_t>(x));
}

// "api.test" A IN query.
Bytes query_api_test() {
  Bytes b = header(0x1234, kFlagRd, 1);
  append(b, {3, 'a', 'p', 'i', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1});
  return b;
}

}  // namespace

TEST(EgressDns, ParsesAQuery) {
  auto m = parse(query_api_test());
  ASSERT_TRUE(m.ok()) << m.error().what();
  EXPECT_EQ(m->id, 0x1234);
  EXPECT_FALSE(m->response());
  EXPECT_EQ(m->opcode(), 0);
  ASSERT_EQ(m->questions.size(), 1u);
  EXPECT_EQ(m->questions[0].name, "api.test");
  EXPECT_EQ(m->questions[0].type, kTypeA);
  EXPECT_EQ(m->questions[0].qclass, kClassIn);
}

TEST(EgressDns, LowerCasesAndEscapes) {
  Bytes b = header(1, 0, 1);
  append(b, {4, 'A', '.', 0x01, 'z', 4, 'T', 'E', 'S', 'T', 0, 0, 1, 0, 1});
  auto m = parse(b);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->questions[0].name, "a\\046\\001z.test");
  // and it builds back to the same octets (labels kept, case folded)
  auto w = build(*m);
  ASSERT_TRUE(w.ok());
  auto again = parse(*w);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->questions[0].name, m->questions[0].name);
}

TEST(EgressDns, ResponseWithCompressionAndCname) {
  Bytes b = header(7, kFlagQr | kFlagRd | kFlagRa, 1, 2);
  append(b, {3, 'a', 'p', 'i', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1});  // q at 12
  // api.test CNAME edge.cdn.test (cdn.test... via pointer to "test" at 16)
  append(b, {0xc0, 12,  0,   5,   0,   1, 0,   0,   0,   60,   0, 11,
             4,    'e', 'd', 'g', 'e', 3, 'c', 'd', 'n', 0xc0, 16});
  // edge.cdn.test A 10.0.0.7: name is a pointer to the cname's target
  std::size_t target = b.size() - 11;
  append(b, {0xc0, static_cast<int>(target), 0, 1, 0, 1, 0, 0, 1, 0, 0, 4, 10, 0, 0, 7});
  auto m = parse(b);
  ASSERT_TRUE(m.ok()) << m.error().what();
  ASSERT_EQ(m->answers.size(), 2u);
  EXPECT_EQ(m->answers[0].name, "api.test");
  EXPECT_EQ(m->answers[0].type, kTypeCname);
  EXPECT_EQ(m->answers[0].target, "edge.cdn.test");
  EXPECT_EQ(m->answers[0].ttl, 60u);
  EXPECT_EQ(m->answers[1].name, "edge.cdn.test");
  EXPECT_EQ(m->answers[1].rdata, (Bytes{10, 0, 0, 7}));
  EXPECT_EQ(m->answers[1].ttl, 256u);
  auto w = build(*m);
  ASSERT_TRUE(w.ok());
  auto again = parse(*w);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *m);
}

TEST(EgressDns, RejectsMalformed) {
  // shorter than the header
  EXPECT_FALSE(parse(Bytes{0, 1, 0}).ok());
  EXPECT_FALSE(parse_header(Bytes{0, 1, 0}.data(), 3).ok());
  // question runs past the end
  Bytes cut = query_api_test();
  cut.resize(cut.size() - 3);
  EXPECT_FALSE(parse(cut).ok());
  // label runs past the end
  Bytes lab = header(1, 0, 1);
  append(lab, {40, 'a', 'b'});
  EXPECT_FALSE(parse(lab).ok());
  // a pointer to itself (a loop) and a forward pointer
  Bytes loop = header(1, 0, 1);
  append(loop, {0xc0, 12, 0, 1, 0, 1});
  auto r = parse(loop);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("backward"), std::string::npos);
  Bytes fwd = header(1, 0, 1);
  append(fwd, {0xc0, 14, 0, 1, 0, 1, 1, 'a', 0});
  EXPECT_FALSE(parse(fwd).ok());
  // two pointers chasing each other (both backward from their own place is impossible)
  Bytes pp = header(1, 0, 2);
  append(pp, {1, 'a', 0xc0, 16, 0, 1, 0, 1});  // at 12: a -> ptr to 16 (its own pointer)
  EXPECT_FALSE(parse(pp).ok());
  // reserved label type 0x40
  Bytes res = header(1, 0, 1);
  append(res, {0x40, 0, 0, 1, 0, 1});
  EXPECT_FALSE(parse(res).ok());
  // counts larger than the message can hold
  Bytes counts = header(1, 0, 1, 200, 0, 0);
  append(counts, {0, 0, 1, 0, 1});
  EXPECT_FALSE(parse(counts).ok());
  // A record with a 5-octet address
  Bytes a5 = header(1, kFlagQr, 0, 1);
  append(a5, {0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 5, 1, 2, 3, 4, 5});
  EXPECT_FALSE(parse(a5).ok());
  // rdata runs past the end
  Bytes rd = header(1, kFlagQr, 0, 1);
  append(rd, {0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2});
  EXPECT_FALSE(parse(rd).ok());
  // CNAME target longer than its rdata
  Bytes cn = header(1, kFlagQr, 0, 1);
  append(cn, {0, 0, 5, 0, 1, 0, 0, 0, 1, 0, 2, 3, 'a', 'b', 'c', 0});
  EXPECT_FALSE(parse(cn).ok());
}

TEST(EgressDns, NameLengthLimits) {
  // 4 labels of 63 = 256 wire octets with the terminator: too long
  Bytes b = header(1, 0, 1);
  for (int l = 0; l < 4; ++l) {
    b.push_back(63);
    for (int i = 0; i < 63; ++i) b.push_back('a');
  }
  append(b, {0, 0, 1, 0, 1});
  auto r = parse(b);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("255"), std::string::npos);
  // builder refuses a 64-octet label and a bad escape
  Message m;
  m.questions.push_back({std::string(64, 'a') + ".test", kTypeA, kClassIn});
  EXPECT_FALSE(build(m).ok());
  m.questions[0].name = "a\\99.test";
  EXPECT_FALSE(build(m).ok());
  m.questions[0].name = "a..test";
  EXPECT_FALSE(build(m).ok());
  EXPECT_TRUE(valid_name("api.test"));
  EXPECT_FALSE(valid_name("api..test"));
  EXPECT_EQ(normalize_name("API.Test."), "api.test");
}

TEST(EgressDns, ErrorReply) {
  auto q = parse(query_api_test());
  ASSERT_TRUE(q.ok());
  Message r = error_reply(*q, kRefused);
  EXPECT_EQ(r.id, 0x1234);
  EXPECT_TRUE(r.response());
  EXPECT_EQ(r.rcode(), kRefused);
  EXPECT_TRUE(r.flags & kFlagRd);
  ASSERT_EQ(r.questions.size(), 1u);
  EXPECT_EQ(r.questions[0].name, "api.test");
  EXPECT_TRUE(r.answers.empty());
  auto w = build(r);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)[3] & 0xf, kRefused);
}
