// The first-flight parsers (see wire.hpp). Every length is checked against
// what is there before it is used; nothing is decided on a partial record.
#include "comet/egress/wire.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

#include "comet/capability/match.hpp"

namespace comet::egress::wire {
namespace {

constexpr uint8_t kHandshakeRecord = 0x16;
constexpr uint8_t kClientHello = 1;
constexpr uint16_t kExtServerName = 0;
constexpr uint16_t kExtEch = 0xfe0d;
constexpr std::size_t kMaxRecord = 16384 + 256;  // TLSPlaintext.length, with slack

// A bounds-checked reader over one byte range.
class Reader {
 public:
  Reader(const uint8_t* p, std::size_t n) : p_(p), n_(n) {}
  bool u8(uint8_t& v) {
    if (n_ < 1) return false;
    v = p_[0];
    skip(1);
    return true;
  }
  bool u16(uint16_t& v) {
    if (n_ < 2) return false;
    v = static_cast<uint16_t>((p_[0] << 8) | p_[1]);
    skip(2);
    return true;
  }
  bool bytes(std::size_t k, Reader& out) {
    if (n_ < k) return false;
    out = Reader(p_, k);
    skip(k);
    return true;
  }
  bool skip_n(std::size_t k) {
    if (n_ < k) return false;
    skip(k);
    return true;
  }
  std::size_t left() const { return n_; }
  const uint8_t* data() const { return p_; }

 private:
  void skip(std::size_t k) {
    p_ += k;
    n_ -= k;
  }
  const uint8_t* p_;
  std::size_t n_;
};

TlsResult bad(std::string why) {
  return {Tls::malformed, std::move(why)};
}

bool host_char(uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_';
}

// A DNS name as SNI carries it: 1..255 octets of LDH (and '_'), no empty
// label, no trailing dot (RFC 6066, 3). Lowercased into `out`.
bool dns_name(const uint8_t* p, std::size_t n, std::string& out) {
  if (n == 0 || n > 255) return false;
  out.clear();
  char prev = '.';
  for (std::size_t i = 0; i < n; ++i) {
    uint8_t c = p[i];
    if (!host_char(c)) return false;
    if (c == '.' && prev == '.') return false;
    prev = static_cast<char>(c);
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  }
  return prev != '.';
}

TlsResult server_name(Reader ext, std::string& name) {
  uint16_t list_len = 0;
  if (!ext.u16(list_len) || list_len != ext.left() || list_len == 0)
    return bad("server_name list length");
  bool have = false;
  while (ext.left() > 0) {
    uint8_t type = 0;
    uint16_t len = 0;
    Reader n(nullptr, 0);
    if (!ext.u8(type) || !ext.u16(len) || !ext.bytes(len, n)) return bad("server_name entry");
    if (type != 0) return bad("server_name type " + std::to_string(type));
    if (have) return bad("two host_name entries");
    if (!dns_name(n.data(), n.left(), name)) return bad("server_name is not a host name");
    have = true;
  }
  return {Tls::sni, name};
}

// The ClientHello body (after the 4-byte handshake header), complete.
TlsResult parse_body(Reader r) {
  uint8_t sid_len = 0, comp_len = 0;
  uint16_t cs_len = 0;
  if (!r.skip_n(2 + 32)) return bad("short ClientHello");
  if (!r.u8(sid_len) || sid_len > 32 || !r.skip_n(sid_len)) return bad("session id");
  if (!r.u16(cs_len) || cs_len < 2 || cs_len % 2 || !r.skip_n(cs_len)) return bad("cipher suites");
  if (!r.u8(comp_len) || comp_len < 1 || !r.skip_n(comp_len)) return bad("compression methods");
  if (r.left() == 0) return {Tls::no_sni, ""};  // no extensions at all
  uint16_t ext_len = 0;
  if (!r.u16(ext_len) || ext_len != r.left()) return bad("extensions length");
  std::vector<uint16_t> seen;
  std::string name;
  bool sni = false, ech = false;
  while (r.left() > 0) {
    uint16_t type = 0, len = 0;
    Reader ext(nullptr, 0);
    if (!r.u16(type) || !r.u16(len) || !r.bytes(len, ext)) return bad("extension length");
    if (std::find(seen.begin(), seen.end(), type) != seen.end())
      return bad("extension " + std::to_string(type) + " twice");
    seen.push_back(type);
    if (type == kExtEch) ech = true;
    if (type == kExtServerName) {
      TlsResult s = server_name(ext, name);
      if (s.what != Tls::sni) return s;
      sni = true;
    }
  }
  if (ech) return {Tls::ech, sni ? name : ""};
  if (sni) return {Tls::sni, name};
  return {Tls::no_sni, ""};
}

}  // namespace

TlsResult client_hello(const uint8_t* data, std::size_t len) {
  // Walk the record headers first: how many handshake bytes are there?
  // The copy and the parse happen once the message is complete, so a
  // ClientHello sent one byte at a time costs one header walk per byte.
  std::size_t off = 0, have = 0;
  std::size_t need = 0;  // 0: the handshake header is not complete yet
  std::vector<std::pair<std::size_t, std::size_t>> frags;  // (offset, length)
  while (off < len) {
    if (data[off] != kHandshakeRecord)
      return off == 0 ? TlsResult{Tls::not_tls, ""} : bad("a record that is not a handshake");
    if (len - off >= 2 && data[off + 1] != 3)
      return off == 0 ? TlsResult{Tls::not_tls, ""} : bad("record version");
    if (len - off >= 3 && data[off + 2] > 4)
      return off == 0 ? TlsResult{Tls::not_tls, ""} : bad("record version");
    if (len - off < 5) return {Tls::need_more, ""};
    std::size_t rlen = (std::size_t{data[off + 3]} << 8) | data[off + 4];
    if (rlen == 0 || rlen > kMaxRecord) return bad("record length " + std::to_string(rlen));
    std::size_t avail = std::min(rlen, len - off - 5);
    frags.emplace_back(off + 5, avail);
    have += avail;
    if (need == 0 && have >= 4) {
      // The handshake header: the first four bytes across the fragments.
      uint8_t h[4];
      std::size_t k = 0;
      for (auto [o, n] : frags)
        for (std::size_t i = 0; i < n && k < 4; ++i) h[k++] = data[o + i];
      if (h[0] != kClientHello) return bad("first handshake message is not a ClientHello");
      std::size_t mlen = (std::size_t{h[1]} << 16) | (std::size_t{h[2]} << 8) | h[3];
      if (mlen > kMaxClientHello) return {Tls::too_large, ""};
      need = 4 + mlen;
    }
    if (need != 0 && have >= need) break;
    if (avail < rlen) return {Tls::need_more, ""};
    off += 5 + rlen;
  }
  if (need == 0 || have < need) return {Tls::need_more, ""};
  std::vector<uint8_t> msg;
  msg.reserve(need);
  for (auto [o, n] : frags) msg.insert(msg.end(), data + o, data + o + n);
  msg.resize(need);
  return parse_body(Reader(msg.data() + 4, need - 4));
}

bool name_allowed(std::string_view pattern, std::string_view name) {
  return capability::host_matches(pattern, name);
}

// ---------------------------------------------------------------- HTTP/1.x

namespace {

constexpr std::size_t kMaxLine = 8192;  // a chunk-size or trailer line

bool tchar(uint8_t c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

std::string lower(std::string_view s) {
  std::string o(s);
  for (char& c : o)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return o;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool digits(std::string_view s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// A step of either stream parser (HttpStep, H2Step): a refusal, or `n`
// bytes to forward.
template <class Step, class What>
Step refuse_as(What what, std::string why) {
  Step s;
  s.what = what;
  s.why = std::move(why);
  return s;
}

template <class Step>
Step forward_as(std::size_t n) {
  Step s;
  s.what = decltype(s.what)::forward;
  s.n = n;
  return s;
}

HttpStep refuse(Http what, std::string why = "") {
  return refuse_as<HttpStep>(what, std::move(why));
}

HttpStep forward(std::size_t n) {
  return forward_as<HttpStep>(n);
}

// "name", "name:port", "[v6]", "[v6]:port" -> the host, lowercase; "" when
// it is none of those.
std::string authority_host(std::string_view a) {
  std::string_view host = a, port;
  bool v6 = !a.empty() && a.front() == '[';
  if (v6) {
    auto close = a.find(']');
    if (close == std::string_view::npos) return "";
    host = a.substr(1, close - 1);
    std::string_view rest = a.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return "";
      port = rest.substr(1);
      if (!digits(port)) return "";
    }
    for (char c : host)
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return "";
  } else {
    auto colon = a.find(':');
    if (colon != std::string_view::npos) {
      host = a.substr(0, colon);
      if (!digits(a.substr(colon + 1))) return "";
    }
    for (char c : host)
      if (!host_char(static_cast<uint8_t>(c))) return "";
  }
  if (host.empty() || host.size() > 255) return "";
  return lower(host);
}

// Where the head ends (just past CRLF CRLF), 0 when not there yet, or
// SIZE_MAX when a CR or LF stands alone (a bare LF is a line end to some
// servers and not to others: refused rather than guessed).
std::size_t head_end(const uint8_t* d, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (d[i] == '\n') return SIZE_MAX;  // not preceded by CR (that case is below)
    if (d[i] != '\r') continue;
    if (i + 1 >= n) return 0;
    if (d[i + 1] != '\n') return SIZE_MAX;
    if (i + 3 < n && d[i + 2] == '\r' && d[i + 3] == '\n') return i + 4;
    if (i + 2 < n && d[i + 2] == '\r' && i + 3 >= n) return 0;
    ++i;  // past the LF
  }
  return 0;
}

// The line ending at the next CRLF from d: its length without CRLF, 0 with
// *ok=false when not complete, SIZE_MAX on a bare CR or LF.
std::size_t line_len(const uint8_t* d, std::size_t n, bool* complete) {
  *complete = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (d[i] == '\n') return SIZE_MAX;
    if (d[i] != '\r') continue;
    if (i + 1 >= n) return 0;
    if (d[i + 1] != '\n') return SIZE_MAX;
    *complete = true;
    return i;
  }
  return 0;
}

struct Head {
  std::string host;
  bool chunked = false;
  uint64_t length = 0;
};

// A complete head (without its final CRLF CRLF); the refusal, or
// Http::host with the framing in `h`.
HttpStep parse_head(std::string_view text, Head& h) {
  std::vector<std::string_view> lines;
  for (std::size_t pos = 0; pos <= text.size();) {
    std::size_t e = text.find("\r\n", pos);
    if (e == std::string_view::npos) e = text.size();
    lines.push_back(text.substr(pos, e - pos));
    pos = e + 2;
  }
  // Request line: METHOD SP target SP HTTP/1.x
  std::string_view rl = lines[0];
  auto sp1 = rl.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : rl.find(' ', sp1 + 1);
  if (sp1 == 0 || sp2 == std::string_view::npos || rl.find(' ', sp2 + 1) != std::string_view::npos)
    return refuse(Http::malformed, "request line");
  std::string_view method = rl.substr(0, sp1), target = rl.substr(sp1 + 1, sp2 - sp1 - 1),
                   version = rl.substr(sp2 + 1);
  if (method == "PRI" && target == "*" && version == "HTTP/2.0") return refuse(Http::h2c);
  for (char c : method)
    if (!tchar(static_cast<uint8_t>(c))) return refuse(Http::malformed, "method");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return refuse(Http::malformed, "version");
  if (method == "CONNECT") return refuse(Http::malformed, "CONNECT");
  if (target.empty()) return refuse(Http::malformed, "request target");
  for (char c : target)
    if (static_cast<uint8_t>(c) <= 0x20 || c == 0x7f) return refuse(Http::malformed, "target");
  int hosts = 0, lengths = 0;
  bool te = false;
  std::string host_value;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    if (l.empty() || l.front() == ' ' || l.front() == '\t')
      return refuse(Http::malformed, "folded or empty header line");
    auto colon = l.find(':');
    if (colon == std::string_view::npos || colon == 0) return refuse(Http::malformed, "header");
    for (char c : l.substr(0, colon))
      if (!tchar(static_cast<uint8_t>(c))) return refuse(Http::malformed, "header name");
    std::string_view value = trim(l.substr(colon + 1));
    for (char c : value)
      if ((static_cast<uint8_t>(c) < 0x20 && c != '\t') || c == 0x7f)
        return refuse(Http::malformed, "header value");
    std::string name = lower(l.substr(0, colon));
    if (name == "host") {
      ++hosts;
      host_value = std::string(value);
    } else if (name == "content-length") {
      if (!digits(value)) return refuse(Http::malformed, "Content-Length");
      uint64_t v = std::stoull(std::string(value));
      if (lengths++ && v != h.length) return refuse(Http::malformed, "two Content-Lengths");
      h.length = v;
    } else if (name == "transfer-encoding") {
      if (te || lower(value) != "chunked") return refuse(Http::malformed, "Transfer-Encoding");
      te = true;
    }
  }
  if (te && lengths) return refuse(Http::malformed, "Transfer-Encoding with Content-Length");
  h.chunked = te;
  if (hosts != 1) return refuse(Http::no_host);
  h.host = authority_host(host_value);
  if (h.host.empty()) return refuse(Http::no_host);
  // absolute-form: a server takes the target's authority over Host.
  std::string lt = lower(target.substr(0, 8));
  std::size_t scheme = lt.rfind("http://", 0) == 0 ? 7 : lt.rfind("https://", 0) == 0 ? 8 : 0;
  if (scheme) {
    std::string_view rest = target.substr(scheme);
    std::string_view auth = rest.substr(0, rest.find_first_of("/?#"));
    if (auth.find('@') != std::string_view::npos || authority_host(auth) != h.host)
      return refuse(Http::malformed, "target authority differs from Host");
  } else if (target.front() != '/' && target != "*") {
    return refuse(Http::malformed, "request target");
  }
  HttpStep s;
  s.what = Http::host;
  s.host = h.host;
  return s;
}

}  // namespace

HttpStep HttpRequests::next(const uint8_t* d, std::size_t n) {
  bool complete = false;
  switch (state_) {
    case State::head: {
      // The method is decided from its first byte on: TLS, binary or an
      // empty line is refused at once rather than after the timeout.
      for (std::size_t i = 0; i < n && d[i] != ' '; ++i)
        if (!tchar(d[i])) return refuse(Http::malformed, "method");
      std::size_t end = head_end(d, n);
      if (end == SIZE_MAX) return refuse(Http::malformed, "bare CR or LF");
      if (end == 0) return n > kMaxHttpHead ? refuse(Http::too_large) : HttpStep{};
      if (end > kMaxHttpHead) return refuse(Http::too_large);
      Head h;
      HttpStep s = parse_head(std::string_view(reinterpret_cast<const char*>(d), end - 4), h);
      if (s.what != Http::host) return s;
      head_len_ = end;
      chunked_ = h.chunked;
      left_ = h.length;
      state_ = State::judged;  // until accept_head()
      pending_accept_ = true;
      return s;
    }
    case State::judged:
      if (pending_accept_) return refuse(Http::malformed, "head not accepted");
      state_ = chunked_ ? State::chunk_size : left_ ? State::body : State::head;
      return forward(head_len_);
    case State::body: {
      if (n == 0) return {};
      std::size_t k = static_cast<std::size_t>(std::min<uint64_t>(left_, n));
      left_ -= k;
      if (left_ == 0) state_ = State::head;
      return forward(k);
    }
    case State::chunk_size: {
      std::size_t l = line_len(d, n, &complete);
      if (l == SIZE_MAX) return refuse(Http::malformed, "bare CR or LF in a chunk size");
      if (!complete) return n > kMaxLine ? refuse(Http::malformed, "chunk size line") : HttpStep{};
      std::string_view line(reinterpret_cast<const char*>(d), l);
      std::string_view size = line.substr(0, line.find(';'));
      if (size.empty() || size.size() > 15) return refuse(Http::malformed, "chunk size");
      uint64_t v = 0;
      for (char c : size) {
        if (!std::isxdigit(static_cast<unsigned char>(c)))
          return refuse(Http::malformed, "chunk size");
        v = v * 16 + static_cast<uint64_t>(std::isdigit(static_cast<unsigned char>(c))
                                               ? c - '0'
                                               : (c | 0x20) - 'a' + 10);
      }
      left_ = v;
      state_ = v ? State::chunk_data : State::trailer;
      return forward(l + 2);
    }
    case State::chunk_data: {
      if (n == 0) return {};
      std::size_t k = static_cast<std::size_t>(std::min<uint64_t>(left_, n));
      left_ -= k;
      if (left_ == 0) state_ = State::chunk_crlf;
      return forward(k);
    }
    case State::chunk_crlf:
      if (n < 2) return {};
      if (d[0] != '\r' || d[1] != '\n') return refuse(Http::malformed, "chunk end");
      state_ = State::chunk_size;
      return forward(2);
    case State::trailer: {
      std::size_t l = line_len(d, n, &complete);
      if (l == SIZE_MAX) return refuse(Http::malformed, "bare CR or LF in a trailer");
      if (!complete) return n > kMaxLine ? refuse(Http::malformed, "trailer line") : HttpStep{};
      if (l == 0) {
        state_ = State::head;
        return forward(2);
      }
      if (d[0] == ' ' || d[0] == '\t') return refuse(Http::malformed, "folded trailer");
      return forward(l + 2);
    }
  }
  return {};
}

void HttpRequests::accept_head() {
  pending_accept_ = false;
}

uint64_t HttpRequests::opaque_left() const {
  return state_ == State::body || state_ == State::chunk_data ? left_ : 0;
}

void HttpRequests::skip(uint64_t n) {
  n = std::min(n, opaque_left());
  left_ -= n;
  if (left_ == 0 && state_ == State::body) state_ = State::head;
  if (left_ == 0 && state_ == State::chunk_data) state_ = State::chunk_crlf;
}

namespace {

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::size_t kFrameHeader = 9;
constexpr uint8_t kData = 0x0, kHeaders = 0x1, kRstStream = 0x3, kPushPromise = 0x5,
                  kContinuation = 0x9;
constexpr uint8_t kEndStream = 0x1, kEndHeaders = 0x4, kPadded = 0x8, kPriority = 0x20;
// Streams the client has open at once: servers allow about 100-250
// (SETTINGS_MAX_CONCURRENT_STREAMS); past this the connection is refused.
constexpr std::size_t kMaxOpenStreams = 1024;

H2Step h2_refuse(H2 what, std::string why = "") {
  return refuse_as<H2Step>(what, std::move(why));
}

H2Step h2_forward(std::size_t n) {
  return forward_as<H2Step>(n);
}

}  // namespace

H2Step H2Requests::next(const uint8_t* d, std::size_t n) {
  switch (state_) {
    case State::preface: {
      std::size_t k = std::min(n, kPreface.size());
      if (std::string_view(reinterpret_cast<const char*>(d), k) != kPreface.substr(0, k))
        return h2_refuse(H2::malformed, "connection preface");
      if (n < kPreface.size()) return {};
      state_ = State::frame;
      return h2_forward(kPreface.size());
    }
    case State::payload: {
      if (n == 0) return {};
      std::size_t k = static_cast<std::size_t>(std::min<uint64_t>(left_, n));
      left_ -= k;
      if (left_ == 0) state_ = State::frame;
      return h2_forward(k);
    }
    case State::judged: {
      if (pending_accept_) return h2_refuse(H2::malformed, "header block not accepted");
      state_ = State::frame;
      std::size_t k = block_bytes_;
      block_bytes_ = 0;
      return h2_forward(k);
    }
    case State::frame:
      break;
  }
  // The frames of an open header block are held (not forwarded) until the
  // block is judged: the next frame starts past them.
  for (;;) {
    if (n < block_bytes_ + kFrameHeader) return {};
    const uint8_t* f = d + block_bytes_;
    uint32_t len = (uint32_t{f[0]} << 16) | (uint32_t{f[1]} << 8) | f[2];
    uint8_t type = f[3], flags = f[4];
    uint32_t stream =
        (uint32_t{f[5] & 0x7fu} << 24) | (uint32_t{f[6]} << 16) | (uint32_t{f[7]} << 8) | f[8];
    if (block_stream_ != 0 && (type != kContinuation || stream != block_stream_))
      return h2_refuse(H2::malformed, "CONTINUATION expected");
    if (block_stream_ == 0 && type == kContinuation)
      return h2_refuse(H2::malformed, "CONTINUATION without HEADERS");
    if (type == kPushPromise) return h2_refuse(H2::malformed, "PUSH_PROMISE from a client");
    if (type != kHeaders && type != kContinuation) {  // read no further: opaque
      if ((type == kData && (flags & kEndStream)) || type == kRstStream) open_.erase(stream);
      left_ = len;
      if (len) state_ = State::payload;
      return h2_forward(kFrameHeader);
    }
    if (block_bytes_ + kFrameHeader + len > kMaxH2Block) return h2_refuse(H2::too_large);
    if (n < block_bytes_ + kFrameHeader + len) return {};
    const uint8_t* pl = f + kFrameHeader;
    std::size_t plen = len;
    if (type == kHeaders) {
      if (stream == 0 || stream % 2 == 0)
        return h2_refuse(H2::malformed, "HEADERS on stream " + std::to_string(stream));
      std::size_t pad = 0;
      if (flags & kPadded) {
        if (plen < 1) return h2_refuse(H2::malformed, "HEADERS padding");
        pad = pl[0];
        ++pl;
        --plen;
      }
      if (flags & kPriority) {
        if (plen < 5) return h2_refuse(H2::malformed, "HEADERS priority");
        pl += 5;
        plen -= 5;
      }
      if (pad > plen) return h2_refuse(H2::malformed, "HEADERS padding");
      plen -= pad;
      block_stream_ = stream;
      // A stream opened before: trailers, only while it is open (a lower
      // id the client never opened would be a request to a lenient server).
      block_trailers_ = stream <= last_stream_;
      if (block_trailers_ && !open_.count(stream))
        return h2_refuse(H2::malformed, "HEADERS on a closed stream");
      if (!block_trailers_) {
        if (open_.size() >= kMaxOpenStreams) return h2_refuse(H2::malformed, "too many streams");
        last_stream_ = stream;
        open_.insert(stream);
      }
      if (flags & kEndStream) block_end_stream_ = true;
      block_.clear();
    }
    block_.append(reinterpret_cast<const char*>(pl), plen);
    block_bytes_ += kFrameHeader + len;
    if (flags & kEndHeaders) break;
  }
  if (block_end_stream_) open_.erase(block_stream_);
  block_stream_ = 0;
  block_end_stream_ = false;
  hpack::Result r = hpack_.decode(reinterpret_cast<const uint8_t*>(block_.data()), block_.size());
  block_.clear();
  if (!r.ok) return h2_refuse(H2::malformed, "hpack: " + r.why);
  std::string host;
  int authorities = 0;
  for (const auto& [name, value] : r.headers) {
    std::string lname = lower(name);  // uppercase is malformed in HTTP/2: judged all the same
    if (lname == ":authority" || lname == "host") {
      std::string h = authority_host(value);
      if (h.empty()) return h2_refuse(H2::malformed, "authority");
      if (authorities++ && h != host) return h2_refuse(H2::malformed, "two authorities");
      host = std::move(h);
    } else if (lname == ":method" && value == "CONNECT") {
      return h2_refuse(H2::malformed, "CONNECT");
    }
  }
  if (authorities == 0) {
    if (!block_trailers_) return h2_refuse(H2::no_authority);
    std::size_t k = block_bytes_;  // trailers naming no authority: nothing to judge
    block_bytes_ = 0;
    return h2_forward(k);
  }
  state_ = State::judged;
  pending_accept_ = true;
  H2Step s;
  s.what = H2::authority;
  s.host = std::move(host);
  return s;
}

void H2Requests::accept_head() {
  pending_accept_ = false;
  accepted_ = true;
}

uint64_t H2Requests::opaque_left() const {
  return state_ == State::payload ? left_ : 0;
}

void H2Requests::skip(uint64_t n) {
  n = std::min(n, opaque_left());
  left_ -= n;
  if (left_ == 0 && state_ == State::payload) state_ = State::frame;
}

}  // namespace comet::egress::wire
