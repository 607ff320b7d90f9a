// What a connection says it is, read from its first bytes (docs/egress.md,
// "Host, port and protocol on the wire"). Pure parsers of untrusted bytes,
// fed whatever has arrived so far; each says "need more" until it can
// decide, and never decides on a partial record (no fail-open).
//
//   client_hello()  the first TLS ClientHello of a stream (records may be
//                   split anywhere, the handshake message may span several
//                   records): its SNI, or why there is none to judge
//   HttpRequests    every HTTP/1.1 request head of a stream, in order
//                   (keep-alive, pipelining), with the body framing
//                   (Content-Length, chunked) followed so that the next
//                   head is found where the server will find it
//   H2Requests      an h2c stream (prior knowledge, or after Upgrade: h2c):
//                   its frames followed, every header block HPACK-decoded
//                   (hpack.hpp) as the server decodes it, each request's
//                   :authority and host judged before its frames go out
//
// Fuzzed by tests/fuzz/wire_fuzz.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "comet/egress/hpack.hpp"

namespace comet::egress::wire {

// A ClientHello above this many bytes (handshake message) is refused: real
// ones are a few hundred bytes to ~2 KiB (with post-quantum key shares).
inline constexpr std::size_t kMaxClientHello = 32 * 1024;
// An HTTP request head (request line and headers) above this is refused.
inline constexpr std::size_t kMaxHttpHead = 32 * 1024;

enum class Tls {
  need_more,  // a prefix of a possible ClientHello: wait for more bytes
  sni,        // a ClientHello with one host_name: `name` (lowercase)
  no_sni,     // a ClientHello without server_name
  ech,        // carries encrypted_client_hello (0xfe0d): cannot be checked
  not_tls,    // the first bytes are not a TLS handshake record
  malformed,  // a TLS handshake record whose ClientHello does not parse
  too_large,  // over kMaxClientHello
};

struct TlsResult {
  Tls what = Tls::need_more;
  std::string name;  // Tls::sni; for malformed: what was wrong
};

TlsResult client_hello(const uint8_t* data, std::size_t len);

// The first byte of a TLS handshake record; anything else on a connection
// to an http entry is read as HTTP.
inline bool looks_like_tls(uint8_t first) {
  return first == 0x16;
}

// Why an HTTP stream was refused, or the host it named.
enum class Http {
  need_more,  // wait for more bytes
  forward,    // `n` bytes may go to the far end (a judged head or body bytes)
  host,       // a complete request head naming `host`: judge it, then call
              // accept_head() to have its bytes forwarded
  no_host,    // a request without Host (or with two)
  h2c,        // the HTTP/2 prior-knowledge preface: not judged (refused)
  malformed,  // not HTTP/1.x, or framing that could be read two ways
  too_large,  // a head over kMaxHttpHead
};

struct HttpStep {
  Http what = Http::need_more;
  std::size_t n = 0;  // Http::forward: bytes from the start of the input
  std::string host;   // Http::host: lowercase, no port, no brackets
  std::string why;    // malformed: what was wrong
};

// One client-to-server HTTP/1.x byte stream. The caller keeps the bytes
// not yet forwarded and calls next() with them (from their start) until it
// says need_more; after Http::host it must call accept_head() (the host is
// allowed) before the next call, or drop the connection.
class HttpRequests {
 public:
  HttpStep next(const uint8_t* data, std::size_t len);
  void accept_head();
  // Bytes the parser would only count, never read: what is left of a
  // Content-Length body or of a chunk's data (0 anywhere else). The caller
  // may move up to that many past the parser (splice(2)) and say so with
  // skip(), as if next() had returned Http::forward for them.
  uint64_t opaque_left() const;
  void skip(uint64_t n);

 private:
  enum class State { head, judged, body, chunk_size, chunk_data, chunk_crlf, trailer };
  State state_ = State::head;
  std::size_t head_len_ = 0;  // the judged head's length
  uint64_t left_ = 0;         // body or chunk bytes still to forward
  bool chunked_ = false;
  bool pending_accept_ = false;
};

// An h2c header block above this many bytes (HEADERS and CONTINUATIONs,
// frame headers included) is refused; it must fit in the judge's buffer.
inline constexpr std::size_t kMaxH2Block = 64 * 1024;

enum class H2 {
  need_more,     // wait for more bytes
  forward,       // `n` bytes may go to the far end
  authority,     // a complete request header block naming `host`: judge it,
                 // then accept_head() to have its frames forwarded
  no_authority,  // a request with neither :authority nor host
  malformed,     // not HTTP/2 framing, an HPACK error, two authorities, ...
  too_large,     // a header block over kMaxH2Block
};

struct H2Step {
  H2 what = H2::need_more;
  std::size_t n = 0;  // H2::forward
  std::string host;   // H2::authority: lowercase, no port
  std::string why;    // malformed
};

// One client-to-server h2c byte stream from its connection preface on,
// used like HttpRequests: next() on the bytes not yet forwarded, accept_head()
// after H2::authority. Only header blocks are read; every other frame's
// payload is opaque (spliced).
class H2Requests {
 public:
  H2Step next(const uint8_t* data, std::size_t len);
  void accept_head();
  bool accepted() const { return accepted_; }  // a request was judged and accepted
  uint64_t opaque_left() const;
  void skip(uint64_t n);

 private:
  enum class State { preface, frame, payload, judged };
  bool accepted_ = false;
  State state_ = State::preface;
  uint64_t left_ = 0;              // State::payload: bytes of the frame still to go
  std::size_t block_bytes_ = 0;    // HEADERS + CONTINUATIONs of the open block, as sent
  uint32_t block_stream_ = 0;      // the open block's stream (0: none)
  bool block_trailers_ = false;    // the open block is on a stream already opened
  bool block_end_stream_ = false;  // its HEADERS ended the stream
  std::string block_;              // the open block's fragments, joined
  uint32_t last_stream_ = 0;       // the highest stream the client opened
  std::set<uint32_t> open_;        // streams opened and not ended by the client
  bool pending_accept_ = false;
  hpack::Decoder hpack_;
};

// "a.b.c" against an egress host pattern (capability::host_matches rules:
// exact, case-insensitive, or "*.suffix" for strict subdomains).
bool name_allowed(std::string_view pattern, std::string_view name);

}  // namespace comet::egress::wire
