// DNS wire format (RFC 1035 section 4), parse and build; see dns_message.hpp.
#include "comet/egress/dns_message.hpp"

#include <cstdio>

namespace comet::egress::dns {
namespace {

class Reader {
 public:
  Reader(const uint8_t* d, std::size_t n) : d_(d), n_(n) {}
  std::size_t pos() const { return p_; }
  std::size_t size() const { return n_; }
  bool u8(uint8_t& v) {
    if (n_ - p_ < 1) return false;
    v = d_[p_++];
    return true;
  }
  bool u16(uint16_t& v) {
    if (n_ - p_ < 2) return false;
    v = static_cast<uint16_t>((d_[p_] << 8) | d_[p_ + 1]);
    p_ += 2;
    return true;
  }
  bool u32(uint32_t& v) {
    if (n_ - p_ < 4) return false;
    v = (uint32_t{d_[p_]} << 24) | (uint32_t{d_[p_ + 1]} << 16) | (uint32_t{d_[p_ + 2]} << 8) |
        uint32_t{d_[p_ + 3]};
    p_ += 4;
    return true;
  }
  bool skip(std::size_t k) {
    if (n_ - p_ < k) return false;
    p_ += k;
    return true;
  }
  const uint8_t* data() const { return d_; }

  // A possibly compressed name starting at the cursor; the cursor ends
  // after the name's in-place part.
  bool name(std::string& out, std::string& why) {
    out.clear();
    std::size_t at = p_;
    std::size_t wire = 0;  // octets of the uncompressed form, terminator included
    bool jumped = false;
    std::size_t limit = at;  // a pointer must point strictly before this
    for (int hops = 0;; ++hops) {
      if (at >= n_) {
        why = "name runs past the end";
        return false;
      }
      uint8_t len = d_[at];
      if ((len & 0xc0) == 0xc0) {
        if (at + 1 >= n_) {
          why = "compression pointer runs past the end";
          return false;
        }
        std::size_t target = (static_cast<std::size_t>(len & 0x3f) << 8) | d_[at + 1];
        // Backward only: each jump lands strictly before the previous
        // label start, so the walk ends (and hops is bounded by n_).
        if (target >= limit || hops > 127) {
          why = "compression pointer does not point backward";
          return false;
        }
        if (!jumped) p_ = at + 2;
        jumped = true;
        limit = target;
        at = target;
        continue;
      }
      if (len & 0xc0) {
        why = "reserved label type";
        return false;
      }
      if (len == 0) {
        if (!jumped) p_ = at + 1;
        wire += 1;
        if (wire > kMaxName) {
          why = "name longer than 255 octets";
          return false;
        }
        return true;
      }
      if (at + 1 + len > n_) {
        why = "label runs past the end";
        return false;
      }
      wire += 1 + len;
      if (wire + 1 > kMaxName) {
        why = "name longer than 255 octets";
        return false;
      }
      if (!out.empty()) out += '.';
      for (std::size_t i = 0; i < len; ++i) {
        unsigned char c = d_[at + 1 + i];
        if (c >= 'A' && c <= 'Z') c = static_cast<unsigned char>(c - 'A' + 'a');
        bool plain = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        if (plain) {
          out += static_cast<char>(c);
        } else {
          char esc[5];
          std::snprintf(esc, sizeof esc, "\\%03u", static_cast<unsigned>(c));
          out += esc;
        }
      }
      at += 1 + len;
    }
  }

 private:
  const uint8_t* d_;
  std::size_t n_;
  std::size_t p_ = 0;
};

Error malformed(const std::string& what, std::size_t at) {
  return Error::msg("dns: malformed message at offset " + std::to_string(at) + ": " + what);
}

Status read_record(Reader& r, Record& rec) {
  std::string why;
  std::size_t start = r.pos();
  if (!r.name(rec.name, why)) return malformed(why, start);
  uint16_t rdlen = 0;
  if (!r.u16(rec.type) || !r.u16(rec.rclass) || !r.u32(rec.ttl) || !r.u16(rdlen))
    return malformed("record header runs past the end", r.pos());
  if (r.size() - r.pos() < rdlen) return malformed("rdata runs past the end", r.pos());
  std::size_t rd = r.pos();
  if (rec.type == kTypeCname) {
    Reader sub(r.data(), rd + rdlen);  // the name must fit in rdata
    sub.skip(rd);
    if (!sub.name(rec.target, why)) return malformed("cname target: " + why, rd);
    if (sub.pos() != rd + rdlen) return malformed("cname rdata has trailing octets", rd);
  } else {
    if ((rec.type == kTypeA && rec.rclass == kClassIn && rdlen != 4) ||
        (rec.type == kTypeAaaa && rec.rclass == kClassIn && rdlen != 16))
      return malformed("address record of the wrong length", rd);
    rec.rdata.assign(r.data() + rd, r.data() + rd + rdlen);
  }
  r.skip(rdlen);
  return ok();
}

// Text name -> wire labels. Accepts what the parser produces (\DDD escapes).
Status encode_name(std::string_view text, std::vector<uint8_t>& out) {
  if (!text.empty() && text.back() == '.') text.remove_suffix(1);
  std::size_t wire = 1;
  std::vector<uint8_t> label;
  auto flush = [&]() -> Status {
    if (label.empty()) return Error::msg("dns: empty label in name");
    if (label.size() > 63) return Error::msg("dns: label longer than 63 octets");
    wire += 1 + label.size();
    if (wire > kMaxName) return Error::msg("dns: name longer than 255 octets");
    out.push_back(static_cast<uint8_t>(label.size()));
    out.insert(out.end(), label.begin(), label.end());
    label.clear();
    return ok();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '.') {
      TRYV(flush());
    } else if (c == '\\') {
      if (text.size() - i < 4) return Error::msg("dns: bad escape in name");
      int v = 0;
      for (int k = 1; k <= 3; ++k) {
        char d = text[i + static_cast<std::size_t>(k)];
        if (d < '0' || d > '9') return Error::msg("dns: bad escape in name");
        v = v * 10 + (d - '0');
      }
      if (v > 255) return Error::msg("dns: bad escape in name");
      label.push_back(static_cast<uint8_t>(v));
      i += 3;
    } else {
      label.push_back(static_cast<uint8_t>(c));
    }
  }
  if (!text.empty()) TRYV(flush());
  out.push_back(0);
  return ok();
}

void put16(std::vector<uint8_t>& o, uint16_t v) {
  o.push_back(static_cast<uint8_t>(v >> 8));
  o.push_back(static_cast<uint8_t>(v));
}
void put32(std::vector<uint8_t>& o, uint32_t v) {
  put16(o, static_cast<uint16_t>(v >> 16));
  put16(o, static_cast<uint16_t>(v));
}

Status put_record(std::vector<uint8_t>& o, const Record& r) {
  TRYV(encode_name(r.name, o));
  put16(o, r.type);
  put16(o, r.rclass);
  put32(o, r.ttl);
  std::vector<uint8_t> rdata;
  if (r.type == kTypeCname) {
    TRYV(encode_name(r.target, rdata));
  } else {
    rdata = r.rdata;
  }
  if (rdata.size() > 0xffff) return Error::msg("dns: rdata longer than 65535 octets");
  put16(o, static_cast<uint16_t>(rdata.size()));
  o.insert(o.end(), rdata.begin(), rdata.end());
  return ok();
}

}  // namespace

Result<Header> parse_header(const uint8_t* data, std::size_t len) {
  Reader r(data, len);
  Header h;
  if (!r.u16(h.id) || !r.u16(h.flags) || !r.u16(h.qdcount) || !r.u16(h.ancount) ||
      !r.u16(h.nscount) || !r.u16(h.arcount))
    return malformed("shorter than the 12-octet header", len);
  return h;
}

Result<Message> parse(const uint8_t* data, std::size_t len) {
  if (len > kMaxMessage) return malformed("longer than 65535 octets", 0);
  TRY(Header h, parse_header(data, len));
  std::size_t total = std::size_t{h.qdcount} + h.ancount + h.nscount + h.arcount;
  if (total > kMaxRecords) return malformed("more than 256 records", 4);
  // Every question takes at least 5 octets, every record 11: a count the
  // buffer cannot hold is rejected before anything is reserved.
  if (std::size_t{h.qdcount} * 5 + (total - h.qdcount) * 11 > len - kHeaderSize)
    return malformed("record counts larger than the message", 4);
  Message m;
  m.id = h.id;
  m.flags = h.flags;
  Reader r(data, len);
  r.skip(kHeaderSize);
  std::string why;
  m.questions.reserve(h.qdcount);
  for (uint16_t i = 0; i < h.qdcount; ++i) {
    Question q;
    std::size_t at = r.pos();
    if (!r.name(q.name, why)) return malformed("question name: " + why, at);
    if (!r.u16(q.type) || !r.u16(q.qclass)) return malformed("question runs past the end", at);
    m.questions.push_back(std::move(q));
  }
  struct Section {
    uint16_t count;
    std::vector<Record>* out;
  } sections[] = {{h.ancount, &m.answers}, {h.nscount, &m.authority}, {h.arcount, &m.additional}};
  for (auto& s : sections) {
    s.out->reserve(s.count);
    for (uint16_t i = 0; i < s.count; ++i) {
      Record rec;
      TRYV(read_record(r, rec));
      s.out->push_back(std::move(rec));
    }
  }
  // Trailing octets are tolerated (some servers pad), as resolvers do.
  return m;
}

Result<std::vector<uint8_t>> build(const Message& m) {
  std::size_t total =
      m.questions.size() + m.answers.size() + m.authority.size() + m.additional.size();
  if (m.questions.size() > 0xffff || m.answers.size() > 0xffff || m.authority.size() > 0xffff ||
      m.additional.size() > 0xffff || total > kMaxRecords)
    return Error::msg("dns: too many records to build");
  std::vector<uint8_t> o;
  o.reserve(512);
  put16(o, m.id);
  put16(o, m.flags);
  put16(o, static_cast<uint16_t>(m.questions.size()));
  put16(o, static_cast<uint16_t>(m.answers.size()));
  put16(o, static_cast<uint16_t>(m.authority.size()));
  put16(o, static_cast<uint16_t>(m.additional.size()));
  for (const Question& q : m.questions) {
    TRYV(encode_name(q.name, o));
    put16(o, q.type);
    put16(o, q.qclass);
  }
  for (const auto* sec : {&m.answers, &m.authority, &m.additional})
    for (const Record& r : *sec) TRYV(put_record(o, r));
  if (o.size() > kMaxMessage) return Error::msg("dns: message longer than 65535 octets");
  return o;
}

std::string normalize_name(std::string_view text) {
  if (!text.empty() && text.back() == '.') text.remove_suffix(1);
  std::string s(text);
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

bool valid_name(std::string_view text) {
  std::vector<uint8_t> scratch;
  return encode_name(text, scratch).ok();
}

Message error_reply(const Message& query, uint16_t rcode) {
  Message r;
  r.id = query.id;
  r.flags = static_cast<uint16_t>(kFlagQr | kFlagRa | (query.flags & kFlagRd) |
                                  (query.flags & 0x7800));  // opcode copied
  r.set_rcode(rcode);
  if (!query.questions.empty()) r.questions.push_back(query.questions.front());
  return r;
}

}  // namespace comet::egress::dns
