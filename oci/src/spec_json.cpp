// config.json -> Spec. The fields are those of spec_fields.hpp; each value is
// read by its C++ type through a small set of helpers that know the JSON
// path of the value, so a type error names the field and the offending value:
//   config.json: process.user.uid: expected an unsigned 32-bit integer, got "root"
// nlohmann exceptions are caught in parse_spec() and never escape.
//
// Semantics follow the Go reference (specs-go): unknown fields are ignored,
// null counts as absent, a missing field keeps its zero value; the semantic
// checks live in validate.cpp.
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "comet/oci/spec.hpp"
#include "spec_fields.hpp"

namespace comet::oci {
namespace {

using json = nlohmann::json;
// comet::Status, even in a translation unit that also sees oci::Status (state.hpp).
using Status = ::comet::Status;

// ---------------------------------------------------------------------------
// Paths and error text.

std::string child(const std::string& path, std::string_view key) {
  if (path.empty()) return std::string(key);
  std::string p = path;
  p += '.';
  p += key;
  return p;
}

std::string at(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// Map keys are arbitrary strings ("net.ipv4.ip_forward"): always bracketed.
std::string key_path(const std::string& path, const std::string& key) {
  return path + "[" + json(key).dump(-1, ' ', false, json::error_handler_t::replace) + "]";
}

// How a bad value is shown: scalars as JSON text, containers by kind.
std::string describe(const json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  constexpr size_t kMax = 80;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

Error type_error(const std::string& path, std::string_view expected, const json& got) {
  std::string m = path.empty() ? std::string() : path + ": ";
  m += "expected ";
  m += expected;
  m += ", got ";
  m += describe(got);
  return Error::msg(std::move(m));
}

// The member `key` of object `obj`, or nullptr when absent or null.
const json* member(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// ---------------------------------------------------------------------------
// Scalars.

template <typename T>
constexpr const char* int_kind() {
  if constexpr (std::is_same_v<T, uint16_t>) return "an unsigned 16-bit integer";
  if constexpr (std::is_same_v<T, uint32_t>) return "an unsigned 32-bit integer";
  if constexpr (std::is_same_v<T, uint64_t>) return "an unsigned 64-bit integer";
  if constexpr (std::is_same_v<T, int32_t>) return "a 32-bit integer";
  if constexpr (std::is_same_v<T, int64_t>) return "a 64-bit integer";
  return "an integer";
}

template <typename T>
Result<T> as_int(const json& j, const std::string& path) {
  static_assert(std::is_integral_v<T> && sizeof(T) <= 8);
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v <= static_cast<uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(v);
  } else if (j.is_number_integer()) {
    const int64_t v = j.get<int64_t>();
    if constexpr (std::is_signed_v<T>) {
      if (v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
          v <= static_cast<int64_t>(std::numeric_limits<T>::max()))
        return static_cast<T>(v);
    } else {
      if (v >= 0 && static_cast<uint64_t>(v) <= std::numeric_limits<T>::max())
        return static_cast<T>(v);
    }
  }
  return type_error(path, int_kind<T>(), j);
}

Result<std::string> as_string(const json& j, const std::string& path) {
  if (!j.is_string()) return type_error(path, "a string", j);
  return j.get<std::string>();
}

Result<bool> as_bool(const json& j, const std::string& path) {
  if (!j.is_boolean()) return type_error(path, "a boolean", j);
  return j.get<bool>();
}

Status expect_object(const json& j, const std::string& path) {
  if (!j.is_object()) return type_error(path, "an object", j);
  return ok();
}

// Members the model only records as present: true when the value is a
// non-empty object (an empty one requests nothing).
Result<bool> has_object(const json& obj, const std::string& path, const char* key) {
  const json* v = member(obj, key);
  if (!v) return false;
  TRYV(expect_object(*v, child(path, key)));
  return !v->empty();
}

// ---------------------------------------------------------------------------
// Values, by their C++ type; structs through their field list
// (spec_fields.hpp).

template <typename S>
Status read_struct(const json& j, const std::string& path, S& out);

// `j`, found at `path`, into `out`.
template <typename T>
Status read_value(const json& j, const std::string& path, T& out) {
  if constexpr (std::is_same_v<T, std::string>) {
    TRY(out, as_string(j, path));
  } else if constexpr (std::is_same_v<T, bool>) {
    TRY(out, as_bool(j, path));
  } else if constexpr (std::is_integral_v<T>) {
    TRY(out, as_int<T>(j, path));
  } else if constexpr (fields::is_optional<T>::value) {
    typename T::value_type v{};
    TRYV(read_value(j, path, v));
    out = std::move(v);
  } else if constexpr (fields::is_vector<T>::value) {
    if (!j.is_array()) return type_error(path, "an array", j);
    out.clear();
    out.reserve(j.size());
    for (size_t i = 0; i < j.size(); ++i) {
      typename T::value_type item{};
      TRYV(read_value(j[i], at(path, i), item));
      out.push_back(std::move(item));
    }
  } else if constexpr (fields::is_map<T>::value) {
    // Map keys are arbitrary strings ("net.ipv4.ip_forward"); a null value
    // counts as absent.
    TRYV(expect_object(j, path));
    out.clear();
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it->is_null()) continue;
      typename T::mapped_type item{};
      TRYV(read_value(*it, key_path(path, it.key()), item));
      out.emplace(it.key(), std::move(item));
    }
  } else {
    return read_struct(j, path, out);
  }
  return ok();
}

// The visitor of a field list that reads one object. It stops at the first
// error, which names the field's path.
template <typename S>
class Reader {
 public:
  Reader(const json& obj, const std::string& path, S& out) : obj_(obj), path_(path), out_(out) {}

  template <typename T>
  void field(const char* key, T S::*m, fields::Emit /*emit*/, int /*out*/ = -1) {
    if (!st_.ok()) return;
    if (const json* v = member(obj_, key)) st_ = read_value(*v, child(path_, key), out_.*m);
  }

  void flag_object(const char* key, bool S::*m) {
    if (!st_.ok()) return;
    auto r = has_object(obj_, path_, key);
    if (r.ok())
      out_.*m = *r;
    else
      st_ = std::move(r).error();
  }

  template <typename Elem>
  void flag_array(const char* key, bool S::*m) {
    if (!st_.ok()) return;
    std::vector<Elem> items;
    if (const json* v = member(obj_, key)) st_ = read_value(*v, child(path_, key), items);
    out_.*m = out_.*m || !items.empty();
  }

  Status status() && { return std::move(st_); }

 private:
  const json& obj_;
  const std::string& path_;
  S& out_;
  Status st_;
};

template <typename S>
Status read_struct(const json& j, const std::string& path, S& out) {
  TRYV(expect_object(j, path));
  Reader<S> r(j, path, out);
  fields::list(r, fields::Of<S>{});
  return std::move(r).status();
}

// nlohmann quotes the offending input verbatim ("last read: '...'"), which
// may be invalid UTF-8: keep well-formed sequences, show other bytes as <FF>
// so the message stays printable and JSON-encodable.
std::string sanitize_utf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const auto c = static_cast<unsigned char>(in[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      len = 1;
      cp = c;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    }
    bool valid = len != 0 && i + len <= in.size();
    for (size_t k = 1; valid && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(in[i + k]);
      valid = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Reject overlong forms, surrogates and values past U+10FFFF.
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    valid = valid && cp >= kMin[len] && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
    if (valid) {
      out.append(in.substr(i, len));
      i += len;
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += '<';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      out += '>';
      ++i;
    }
  }
  return out;
}

// "[json.exception.parse_error.101] parse error at line 1, column 2: syntax
// error ..." -> "syntax error ...".
std::string parse_error_detail(const char* what) {
  std::string_view w(what);
  size_t pos = w.find("parse error");
  if (pos != std::string_view::npos) {
    pos = w.find(": ", pos);
    if (pos != std::string_view::npos) w.remove_prefix(pos + 2);
  }
  return sanitize_utf8(w);
}

// "line L column C" (1-based, columns in bytes) of byte offset `off`.
std::string line_column(std::string_view text, size_t off) {
  if (off > text.size()) off = text.size();
  size_t line = 1, col = 1;
  for (size_t i = 0; i < off; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + " column " + std::to_string(col);
}

Error invalid_json(std::string_view text, const nlohmann::json::parse_error& e) {
  // e.byte is the 1-based index of the last byte read (text.size()+1 at EOF).
  const size_t off = e.byte == 0 ? 0 : e.byte - 1;
  return Error::msg("config.json: invalid JSON at " + line_column(text, off) + ": " +
                    parse_error_detail(e.what()));
}

// nlohmann reports a number that overflows a double ("1e400") as
// out_of_range 406 without a position; the offending literal is the first
// number token outside a string that spells exactly that text.
Error number_overflow(std::string_view text, const std::exception& e) {
  std::string_view w(e.what());
  const size_t q1 = w.find('\'');
  const size_t q2 = w.rfind('\'');
  std::string detail = "number overflow";
  size_t off = std::string_view::npos;
  if (q1 != std::string_view::npos && q2 > q1 + 1) {
    const std::string_view tok = w.substr(q1 + 1, q2 - q1 - 1);
    detail = "number overflow parsing '" + sanitize_utf8(tok) + "'";
    auto is_num = [](char c) {
      return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
    };
    bool in_string = false;
    for (size_t i = 0; i < text.size() && off == std::string_view::npos; ++i) {
      const char c = text[i];
      if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if ((i == 0 || !is_num(text[i - 1])) && text.substr(i, tok.size()) == tok &&
                 (i + tok.size() == text.size() || !is_num(text[i + tok.size()]))) {
        off = i + tok.size() - 1;  // nlohmann positions point at a token's last byte
      }
    }
  }
  if (off == std::string_view::npos) return Error::msg("config.json: invalid JSON: " + detail);
  return Error::msg("config.json: invalid JSON at " + line_column(text, off) + ": " + detail);
}

}  // namespace

Result<Spec> parse_spec(std::string_view json_text) {
  try {
    json j = json::parse(json_text.begin(), json_text.end());
    Spec s;
    Status st = read_struct(j, std::string(), s);
    if (!st.ok()) return std::move(st).error().wrap("config.json");
    return s;
  } catch (const json::parse_error& e) {
    return invalid_json(json_text, e);
  } catch (const json::out_of_range& e) {
    return number_overflow(json_text, e);
  } catch (const std::bad_alloc&) {
    return Error::sys(ENOMEM, "config.json: out of memory");
  } catch (const std::exception& e) {
    return Error::msg(std::string("config.json: ") + e.what());
  } catch (...) {
    return Error::msg("config.json: unexpected error while parsing");
  }
}

const Namespace* find_namespace(const Spec& spec, std::string_view type) {
  if (!spec.linux_) return nullptr;
  for (const Namespace& ns : spec.linux_->namespaces)
    if (ns.type == type) return &ns;
  return nullptr;
}

bool has_namespace(const Spec& spec, std::string_view type) {
  return find_namespace(spec, type) != nullptr;
}

}  // namespace comet::oci
