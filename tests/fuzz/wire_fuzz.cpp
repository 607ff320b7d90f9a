// wire: the wire judge's first-flight parsers (egress/wire.hpp) on
// arbitrary bytes, which is what an agent can send.
//
// Invariants (beyond "no crash, no sanitizer report"):
//   1. client_hello() decides only once: when a prefix is decided, every
//      longer input is decided the same way (more bytes never turn a
//      refusal into an SNI, nor change the name).
//   2. An SNI it returns is lowercase LDH, 1..255 octets, no empty label.
//   3. HttpRequests forwards only a prefix of its input, never a byte
//      before the first head was judged, and the same bytes and hosts
//      whether the input comes whole or one byte at a time, or with the
//      bytes opaque_left() allows moved past it unread (skip(), as the
//      judge's splice(2) path does).
//   4. H2Requests (h2c) likewise: a prefix forwarded, the same bytes,
//      authorities and end whole or byte by byte or spliced; and the
//      HPACK decoder never fails differently on the same block twice.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comet/egress/wire.hpp"
#include "fuzz_check.hpp"

namespace wire = comet::egress::wire;

namespace {

struct HttpRun {
  std::string forwarded;
  std::vector<std::string> hosts;
  int end = 0;
};

// Follows one client stream as the judge does: whole or STEP bytes at a
// time, with the bytes opaque_left() allows moved past the parser unread
// when SPLICE. JUDGED_FIRST: not a byte may go before a request was judged
// (HTTP/1.x; h2c forwards its preface and SETTINGS first, and the judge
// connects only after a judged request).
template <class Parser, class What>
HttpRun follow(const uint8_t* d, size_t n, size_t step, bool splice, What forward, What judged,
               bool judged_first) {
  HttpRun r;
  Parser h;
  std::string have;
  size_t given = 0;
  for (int guard = 0; guard < 1 << 20; ++guard) {
    if (splice && have.empty() && h.opaque_left() > 0 && given < n) {
      FUZZ_CHECK(!judged_first || !r.hosts.empty(), "opaque bytes before any head was judged");
      size_t k =
          static_cast<size_t>(std::min<uint64_t>(h.opaque_left(), std::min(step, n - given)));
      r.forwarded.append(reinterpret_cast<const char*>(d + given), k);
      h.skip(k);
      given += k;
      continue;
    }
    auto s = h.next(reinterpret_cast<const uint8_t*>(have.data()), have.size());
    if (s.what == forward) {
      FUZZ_CHECK(s.n > 0 && s.n <= have.size(), "forward beyond the input");
      FUZZ_CHECK(!judged_first || !r.hosts.empty(), "a byte forwarded before any head was judged");
      r.forwarded += have.substr(0, s.n);
      have.erase(0, s.n);
      continue;
    }
    if (s.what == judged) {
      FUZZ_CHECK(!s.host.empty(), "an empty host judged");
      r.hosts.push_back(s.host);
      h.accept_head();
      continue;
    }
    if (s.what != What::need_more) {
      r.end = static_cast<int>(s.what);
      return r;
    }
    if (given >= n) return r;
    size_t k = std::min(step, n - given);
    have.append(reinterpret_cast<const char*>(d + given), k);
    given += k;
  }
  return r;
}

HttpRun http(const uint8_t* d, size_t n, size_t step, bool splice = false) {
  return follow<wire::HttpRequests>(d, n, step, splice, wire::Http::forward, wire::Http::host,
                                    true);
}

HttpRun h2(const uint8_t* d, size_t n, size_t step, bool splice = false) {
  return follow<wire::H2Requests>(d, n, step, splice, wire::H2::forward, wire::H2::authority,
                                  false);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  wire::TlsResult all = wire::client_hello(data, size);
  if (all.what == wire::Tls::sni) {
    FUZZ_CHECK(!all.name.empty() && all.name.size() <= 255, all.name);
    for (char c : all.name) FUZZ_CHECK(!(c >= 'A' && c <= 'Z'), all.name);
    FUZZ_CHECK(all.name.find("..") == std::string::npos && all.name.back() != '.', all.name);
  }
  for (size_t n : {size / 4, size / 2, size - (size ? 1 : 0)}) {
    wire::TlsResult part = wire::client_hello(data, n);
    if (part.what == wire::Tls::need_more) continue;
    FUZZ_CHECK(part.what == all.what && part.name == all.name,
               "a decided prefix changed its verdict with more bytes");
  }
  if (size <= 4096) {
    HttpRun whole = http(data, size, size ? size : 1);
    HttpRun bytes = http(data, size, 1);
    FUZZ_CHECK(
        whole.forwarded == bytes.forwarded && whole.hosts == bytes.hosts && whole.end == bytes.end,
        "whole and byte-by-byte input judged differently");
    for (size_t step : {size_t{1}, size_t{7}, size ? size : 1}) {
      HttpRun spliced = http(data, size, step, true);
      FUZZ_CHECK(spliced.forwarded == whole.forwarded && spliced.hosts == whole.hosts &&
                     spliced.end == whole.end,
                 "bodies moved unread judged differently");
    }
    FUZZ_CHECK(
        std::string(reinterpret_cast<const char*>(data), whole.forwarded.size()) == whole.forwarded,
        "forwarded bytes are not a prefix of the input");
    // h2c: the input after the preface, so that frames are reached.
    std::string t = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    t.append(reinterpret_cast<const char*>(data), size);
    const auto* td = reinterpret_cast<const uint8_t*>(t.data());
    HttpRun hw = h2(td, t.size(), t.size());
    for (size_t step : {size_t{1}, size_t{9}}) {
      HttpRun hs = h2(td, t.size(), step);
      FUZZ_CHECK(hs.forwarded == hw.forwarded && hs.hosts == hw.hosts && hs.end == hw.end,
                 "h2: whole and stepped input judged differently");
      HttpRun hp = h2(td, t.size(), step, true);
      FUZZ_CHECK(hp.forwarded == hw.forwarded && hp.hosts == hw.hosts && hp.end == hw.end,
                 "h2: payloads moved unread judged differently");
    }
    FUZZ_CHECK(t.compare(0, hw.forwarded.size(), hw.forwarded) == 0,
               "h2: forwarded bytes are not a prefix of the input");
    comet::egress::hpack::Decoder d1, d2;
    auto r1 = d1.decode(data, size);
    auto r2 = d2.decode(data, size);
    FUZZ_CHECK(r1.ok == r2.ok && r1.headers == r2.headers, "hpack: not deterministic");
  }
  return 0;
}
