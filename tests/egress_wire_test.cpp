// The wire judge's parsers (egress/wire.hpp): ClientHello SNI and HTTP/1.x
// request heads, on whole, fragmented, truncated and malformed input.
#include "comet/egress/wire.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wire = comet::egress::wire;
using Bytes = std::vector<uint8_t>;

namespace {

void u16(Bytes& b, std::size_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}

Bytes ext(uint16_t type, const Bytes& body) {
  Bytes e;
  u16(e, type);
  u16(e, body.size());
  e.insert(e.end(), body.begin(), body.end());
  return e;
}

Bytes sni_ext(const std::vector<std::string>& names) {
  Bytes list;
  for (const auto& n : names) {
    list.push_back(0);
    u16(list, n.size());
    list.insert(list.end(), n.begin(), n.end());
  }
  Bytes body;
  u16(body, list.size());
  body.insert(body.end(), list.begin(), list.end());
  return ext(0, body);
}

// A ClientHello handshake message with these extensions (none: no
// extensions block at all when `with_block` is false).
Bytes hello_msg(const std::vector<Bytes>& exts, bool with_block = true) {
  Bytes body = {3, 3};
  body.insert(body.end(), 32, 0x42);  // random
  body.push_back(32);
  body.insert(body.end(), 32, 0x01);  // session id
  u16(body, 4);
  body.insert(body.end(), {0x13, 0x01, 0x13, 0x02});  // cipher suites
  body.push_back(1);
  body.push_back(0);  // compression
  if (with_block) {
    Bytes all;
    for (const auto& e : exts) all.insert(all.end(), e.begin(), e.end());
    u16(body, all.size());
    body.insert(body.end(), all.begin(), all.end());
  }
  Bytes msg = {1, static_cast<uint8_t>(body.size() >> 16), static_cast<uint8_t>(body.size() >> 8),
               static_cast<uint8_t>(body.size())};
  msg.insert(msg.end(), body.begin(), body.end());
  return msg;
}

// The message in records of at most `per` bytes each.
Bytes records(const Bytes& msg, std::size_t per = 16384) {
  Bytes out;
  for (std::size_t o = 0; o < msg.size(); o += per) {
    std::size_t n = std::min(per, msg.size() - o);
    out.insert(out.end(), {0x16, 3, 1});
    u16(out, n);
    out.insert(out.end(), msg.begin() + static_cast<long>(o),
               msg.begin() + static_cast<long>(o + n));
  }
  return out;
}

wire::TlsResult parse(const Bytes& b) {
  return wire::client_hello(b.data(), b.size());
}

const Bytes kAlpn = ext(16, {0, 3, 2, 'h', '2'});

}  // namespace

TEST(WireTls, SniOfAWholeClientHello) {
  auto r = parse(records(hello_msg({kAlpn, sni_ext({"API.Test"}), ext(43, {2, 3, 4})})));
  EXPECT_EQ(r.what, wire::Tls::sni);
  EXPECT_EQ(r.name, "api.test");
}

TEST(WireTls, EveryPrefixWaitsAndOnlyTheWholeDecides) {
  // Byte by byte: no prefix decides (no fail-open on a partial record).
  Bytes b = records(hello_msg({sni_ext({"evil.test"})}));
  for (std::size_t n = 1; n < b.size(); ++n)
    ASSERT_EQ(wire::client_hello(b.data(), n).what, wire::Tls::need_more) << n;
  EXPECT_EQ(parse(b).name, "evil.test");
}

TEST(WireTls, AMessageSplitAcrossRecords) {
  for (std::size_t per : {1u, 3u, 7u, 100u}) {
    Bytes b = records(hello_msg({kAlpn, sni_ext({"a.cdn.test"})}), per);
    auto r = parse(b);
    EXPECT_EQ(r.what, wire::Tls::sni) << per;
    EXPECT_EQ(r.name, "a.cdn.test") << per;
    for (std::size_t n = 1; n < b.size(); n += 5)
      ASSERT_EQ(wire::client_hello(b.data(), n).what, wire::Tls::need_more) << per << " " << n;
  }
}

TEST(WireTls, NoSniEchNotTls) {
  EXPECT_EQ(parse(records(hello_msg({kAlpn}))).what, wire::Tls::no_sni);
  EXPECT_EQ(parse(records(hello_msg({}, false))).what, wire::Tls::no_sni);
  auto ech = parse(records(hello_msg({sni_ext({"public.test"}), ext(0xfe0d, {0, 1, 2})})));
  EXPECT_EQ(ech.what, wire::Tls::ech);
  Bytes http = {'G', 'E', 'T', ' '};
  EXPECT_EQ(parse(http).what, wire::Tls::not_tls);
  EXPECT_EQ(parse({0x16, 2}).what, wire::Tls::not_tls);
  EXPECT_EQ(parse({0x16, 3, 9}).what, wire::Tls::not_tls);
  EXPECT_EQ(parse({0x16}).what, wire::Tls::need_more);
}

TEST(WireTls, BadLengthsAreMalformed) {
  Bytes b = records(hello_msg({sni_ext({"x.test"})}));
  // A record length of zero, and one above the limit.
  Bytes zero = {0x16, 3, 1, 0, 0};
  EXPECT_EQ(parse(zero).what, wire::Tls::malformed);
  Bytes big = {0x16, 3, 1, 0xff, 0xff};
  EXPECT_EQ(parse(big).what, wire::Tls::malformed);
  // Extensions length one more than there is.
  Bytes m = hello_msg({sni_ext({"x.test"})});
  std::size_t ext_len_at = 4 + 2 + 32 + 1 + 32 + 2 + 4 + 2;
  m[ext_len_at + 1]++;
  EXPECT_EQ(parse(records(m)).what, wire::Tls::malformed);
  // An SNI list length that disagrees with the extension's.
  Bytes s = sni_ext({"x.test"});
  s[5]++;
  EXPECT_EQ(parse(records(hello_msg({s}))).what, wire::Tls::malformed);
  // Not a ClientHello (ServerHello type), and a second record type inside.
  Bytes sh = hello_msg({});
  sh[0] = 2;
  EXPECT_EQ(parse(records(sh)).what, wire::Tls::malformed);
  Bytes mixed = records(hello_msg({sni_ext({"x.test"})}), 10);
  mixed[15] = 0x17;  // the second record's type
  EXPECT_EQ(parse(mixed).what, wire::Tls::malformed);
}

TEST(WireTls, DuplicatesAndBadNames) {
  EXPECT_EQ(parse(records(hello_msg({sni_ext({"a.test"}), sni_ext({"b.test"})}))).what,
            wire::Tls::malformed);
  EXPECT_EQ(parse(records(hello_msg({sni_ext({"a.test", "b.test"})}))).what, wire::Tls::malformed);
  for (const std::string& bad : std::vector<std::string>{
           "a.test.", "", "a..test", "a test", std::string("a\0b", 3), std::string(256, 'a')})
    EXPECT_EQ(parse(records(hello_msg({sni_ext({bad})}))).what, wire::Tls::malformed) << bad;
}

TEST(WireTls, TooLarge) {
  Bytes head = {0x16, 3, 1, 0x40, 0, 1, 0x01, 0, 0};  // a 64 KiB ClientHello announced
  EXPECT_EQ(parse(head).what, wire::Tls::too_large);
}

TEST(WireTls, Wildcards) {
  EXPECT_TRUE(wire::name_allowed("api.test", "API.test"));
  EXPECT_TRUE(wire::name_allowed("*.cdn.test", "a.cdn.test"));
  EXPECT_TRUE(wire::name_allowed("*.cdn.test", "a.b.cdn.test"));
  EXPECT_FALSE(wire::name_allowed("*.cdn.test", "cdn.test"));
  EXPECT_FALSE(wire::name_allowed("*.cdn.test", "evilcdn.test"));
  EXPECT_FALSE(wire::name_allowed("api.test", "api.test.evil"));
}

// ------------------------------------------------------------------ HTTP

namespace {

struct Fed {
  std::vector<std::string> hosts;  // every head judged, in order
  std::string forwarded;
  wire::Http end = wire::Http::need_more;
};

// Feeds `text` in pieces of `step` bytes, allowing every host in `allowed`
// (all when empty), as the judge does. With `splice`, what opaque_left()
// allows goes by unread (skip()) whenever nothing is buffered, as the
// judge's splice(2) path moves it.
Fed feed(const std::string& text, std::size_t step = 1 << 20,
         const std::vector<std::string>& allowed = {}, bool splice = false) {
  Fed r;
  wire::HttpRequests h;
  std::string have;
  std::size_t given = 0;
  for (;;) {
    if (splice && have.empty() && h.opaque_left() > 0 && given < text.size()) {
      std::size_t k = std::min<std::size_t>({h.opaque_left(), step, text.size() - given});
      r.forwarded += text.substr(given, k);
      h.skip(k);
      given += k;
      continue;
    }
    wire::HttpStep s = h.next(reinterpret_cast<const uint8_t*>(have.data()), have.size());
    if (s.what == wire::Http::forward) {
      r.forwarded += have.substr(0, s.n);
      have.erase(0, s.n);
      continue;
    }
    if (s.what == wire::Http::host) {
      r.hosts.push_back(s.host);
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), s.host) == allowed.end()) {
        r.end = wire::Http::host;
        return r;
      }
      h.accept_head();
      continue;
    }
    if (s.what != wire::Http::need_more) {
      r.end = s.what;
      return r;
    }
    if (given >= text.size()) return r;
    have += text.substr(given, step);
    given += step;
  }
}

}  // namespace

TEST(WireHttp, KeepAliveAndPipelining) {
  std::string two =
      "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n"
      "POST /x HTTP/1.1\r\nHost: API.test:8080\r\nContent-Length: 5\r\n\r\nhello"
      "GET /y HTTP/1.1\r\nhost: other.test\r\n\r\n";
  for (std::size_t step : {1u, 2u, 7u, 4096u}) {
    Fed r = feed(two, step);
    EXPECT_EQ(r.hosts, (std::vector<std::string>{"api.test", "api.test", "other.test"})) << step;
    EXPECT_EQ(r.forwarded, two) << step;
    // Only api.test allowed: the third head is refused, nothing of it sent.
    Fed only = feed(two, step, {"api.test"});
    EXPECT_EQ(only.end, wire::Http::host);
    EXPECT_EQ(only.forwarded, two.substr(0, two.find("GET /y"))) << step;
  }
}

TEST(WireHttp, ChunkedBodyHidesNoHead) {
  // A head-like text inside a chunked body is body, not a request.
  std::string body = "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n";
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  std::string t = "POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n" +
                  std::string(size) + ";ext=1\r\n" + body + "\r\n0\r\nX-T: 1\r\n\r\n" +
                  "GET /2 HTTP/1.1\r\nHost: evil.test\r\n\r\n";
  for (std::size_t step : {1u, 5u, 4096u}) {
    Fed r = feed(t, step, {"api.test"});
    EXPECT_EQ(r.hosts, (std::vector<std::string>{"api.test", "evil.test"})) << step;
    EXPECT_EQ(r.end, wire::Http::host);
    EXPECT_EQ(r.forwarded, t.substr(0, t.find("GET /2"))) << step;
  }
}

TEST(WireHttp, BodiesMovedUnreadKeepTheHeadsInPlace) {
  char size[16];
  std::string hidden = "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n";
  std::snprintf(size, sizeof size, "%zx", hidden.size());
  std::string t =
      "POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: " + std::to_string(hidden.size()) +
      "\r\n\r\n" + hidden +
      "POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n" + size + "\r\n" +
      hidden + "\r\n0\r\n\r\n" + "GET /3 HTTP/1.1\r\nHost: evil.test\r\n\r\n";
  for (std::size_t step : {1u, 3u, 16u, 4096u}) {
    Fed r = feed(t, step, {"api.test"}, true);
    EXPECT_EQ(r.hosts, (std::vector<std::string>{"api.test", "api.test", "evil.test"})) << step;
    EXPECT_EQ(r.end, wire::Http::host) << step;
    EXPECT_EQ(r.forwarded, t.substr(0, t.find("GET /3"))) << step;
  }
  wire::HttpRequests h;  // nothing is opaque before a head, nor in one
  EXPECT_EQ(h.opaque_left(), 0u);
  h.skip(10);
  std::string head = "GET / HTTP/1.1\r\nHost: a\r\n";
  EXPECT_EQ(h.next(reinterpret_cast<const uint8_t*>(head.data()), head.size()).what,
            wire::Http::need_more);
  EXPECT_EQ(h.opaque_left(), 0u);
}

TEST(WireHttp, Refusals) {
  EXPECT_EQ(feed("GET / HTTP/1.1\r\n\r\n").end, wire::Http::no_host);
  EXPECT_EQ(feed("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n").end, wire::Http::no_host);
  EXPECT_EQ(feed("GET / HTTP/1.1\r\nHost: \r\n\r\n").end, wire::Http::no_host);
  EXPECT_EQ(feed("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").end, wire::Http::h2c);
  const char* malformed[] = {
      "GET / HTTP/1.1\nHost: a\n\n",                      // bare LF
      "GET / HTTP/1.1\r\nHost: a\r\n X: folded\r\n\r\n",  // obs-fold
      "GET / HTTP/1.1\r\nHost : a\r\n\r\n",               // space before colon
      "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
      "GET http://evil.test/ HTTP/1.1\r\nHost: a\r\n\r\n",  // absolute-form
      "GET http://a@evil.test/ HTTP/1.1\r\nHost: a\r\n\r\n",
      "CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n",
      "\x16\x03\x01\x00\x05hello",  // TLS on an http port
      "GET / HTTP/3.0\r\nHost: a\r\n\r\n",
      "GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n",
  };
  for (const char* m : malformed) EXPECT_EQ(feed(m).end, wire::Http::malformed) << m;
  EXPECT_EQ(feed("GET http://a:80/x HTTP/1.1\r\nHost: a\r\n\r\n").hosts,
            std::vector<std::string>{"a"});
  EXPECT_EQ(feed("GET / HTTP/1.1\r\nHost: [fd00::1]:80\r\n\r\n").hosts,
            std::vector<std::string>{"fd00::1"});
  EXPECT_EQ(feed("GET / HTTP/1.1\r\nHost: " + std::string(40000, 'a') + "\r\n\r\n").end,
            wire::Http::too_large);
  EXPECT_EQ(feed(std::string(40000, 'a')).end, wire::Http::too_large);
}

TEST(WireHttp, ATruncatedHeadIsNeverForwarded) {
  Fed r = feed("GET / HTTP/1.1\r\nHost: api.test\r\n");
  EXPECT_EQ(r.end, wire::Http::need_more);
  EXPECT_TRUE(r.forwarded.empty());
  EXPECT_TRUE(r.hosts.empty());
}
