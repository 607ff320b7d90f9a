#include "yaml_read.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <regex>
#include <set>

#include "util.hpp"

namespace comet::capability::detail {

namespace {

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

Loc mark_loc(const YAML::Mark& m) {
  if (m.line < 0 || m.column < 0) return Loc{1, 1};
  return Loc{m.line + 1, m.column + 1};
}

bool all_of(std::string_view s, bool (*pred)(char)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), pred);
}
bool dec(char c) {
  return c >= '0' && c <= '9';
}
bool oct(char c) {
  return c >= '0' && c <= '7';
}
bool hex(char c) {
  return dec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool is_float(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  std::string_view mant = s.substr(0, s.find_first_of("eE"));
  std::string_view exp = mant.size() < s.size() ? s.substr(mant.size() + 1) : std::string_view{};
  if (mant.size() < s.size()) {
    if (!exp.empty() && (exp[0] == '-' || exp[0] == '+')) exp.remove_prefix(1);
    if (!all_of(exp, dec)) return false;
  }
  size_t dot = mant.find('.');
  if (dot == std::string_view::npos) return all_of(mant, dec);
  std::string_view ip = mant.substr(0, dot), fp = mant.substr(dot + 1);
  if (ip.empty()) return all_of(fp, dec);
  return all_of(ip, dec) && (fp.empty() || all_of(fp, dec));
}

YType resolve_plain(const std::string& str) {
  // YAML 1.2 core schema, section 10.3.2 (hand-written: std::regex made
  // this the parser's hottest function).
  std::string_view s = str;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return YType::null;
  if (s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE")
    return YType::boolean;
  std::string_view sign = s;
  if (!sign.empty() && (sign[0] == '-' || sign[0] == '+')) sign.remove_prefix(1);
  if (all_of(sign, dec)) return YType::integer;
  if (s.size() > 2 && s[0] == '0' && s[1] == 'o' && all_of(s.substr(2), oct)) return YType::integer;
  if (s.size() > 2 && s[0] == '0' && s[1] == 'x' && all_of(s.substr(2), hex)) return YType::integer;
  if (is_float(s)) return YType::floating;
  std::string_view inf = sign;
  if (inf == ".inf" || inf == ".Inf" || inf == ".INF") return YType::floating;
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return YType::floating;
  return YType::string;
}

std::optional<long long> to_integer(const std::string& s) {
  int base = 10;
  std::string digits = s;
  if (s.rfind("0o", 0) == 0) {
    base = 8;
    digits = s.substr(2);
  } else if (s.rfind("0x", 0) == 0) {
    base = 16;
    digits = s.substr(2);
  }
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(digits.c_str(), &end, base);
  if (errno == ERANGE || end == digits.c_str() || *end != '\0') return std::nullopt;
  return v;
}

}  // namespace

YType type_of(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return YType::null;
    case YAML::NodeType::Sequence:
      return YType::sequence;
    case YAML::NodeType::Map:
      return YType::mapping;
    case YAML::NodeType::Scalar:
      break;
    default:
      return YType::null;
  }
  const std::string& tag = n.Tag();
  if (tag == "!") return YType::string;  // quoted
  if (tag == "?" || tag.empty()) return resolve_plain(n.Scalar());
  if (tag.rfind(kTagPrefix, 0) == 0) {
    std::string t = tag.substr(kTagPrefix.size());
    if (t == "str") return YType::string;
    if (t == "int") return YType::integer;
    if (t == "bool") return YType::boolean;
    if (t == "null") return YType::null;
    if (t == "float") return YType::floating;
  }
  return YType::unsupported;
}

std::string describe(const YAML::Node& n) {
  switch (type_of(n)) {
    case YType::null:
      return "null";
    case YType::sequence:
      return "a list";
    case YType::mapping:
      return "a mapping";
    case YType::string:
      return quote(n.Scalar());
    case YType::unsupported:
      return "a value tagged " + n.Tag();
    default:
      return n.Scalar();
  }
}

Error Reader::error(Loc loc, const std::string& path, const std::string& msg) const {
  std::string out = file_;
  if (loc.line > 0) out += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column);
  out += ": ";
  if (!path.empty()) out += path + ": ";
  return Error::msg(out + msg);
}

void Reader::record(const std::string& path, Loc loc) const {
  if (locations_) (*locations_)[path] = loc;
}

// Where a second YAML document starts ("---" after content, or content after
// "..."), or line 0 when there is only one.
int second_document_line(std::string_view text) {
  bool content = false, ended = false;
  int line = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view l = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    line++;
    bool marker_start = l.substr(0, 3) == "---" && (l.size() == 3 || l[3] == ' ' || l[3] == '\t');
    bool marker_end = l.substr(0, 3) == "..." && (l.size() == 3 || l[3] == ' ' || l[3] == '\t');
    size_t first = l.find_first_not_of(" \t\r");
    bool blank = first == std::string_view::npos || l[first] == '#' || l[0] == '%';
    if (marker_start) {
      if (content || ended) return line;
    } else if (marker_end) {
      ended = true;
    } else if (!blank) {
      if (ended) return line;
      content = true;
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return 0;
}

// The first invalid UTF-8 byte's offset, or npos.
size_t invalid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!n || (n > 1 && c < 0xc2 && n == 2) || i + n > s.size()) return i;
    for (size_t k = 1; k < n; k++)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return i;
    i += n;
  }
  return std::string_view::npos;
}

Result<Field> Reader::load(std::string_view text) const {
  // YAML is UTF-8 here, and every string we keep must be: the capability
  // block travels as JSON.
  if (size_t bad = invalid_utf8(text); bad != std::string_view::npos)
    return error(Loc{}, "", "not valid UTF-8 (byte " + std::to_string(bad) + ")");
  // One document. Not YAML::LoadAll: in yaml-cpp 0.7 it loops forever,
  // growing without bound, on a stray token such as "," (jbeder/yaml-cpp
  // #1040). Load parses the first document only; a second is refused here.
  if (int l2 = second_document_line(text))
    return error(Loc{l2, 1}, "", "expected one YAML document, got more than one");
  YAML::Node doc = YAML::Load(std::string(text));
  if (!doc || doc.IsNull())
    return error(Loc{1, 1}, "", "expected a mapping, got an empty document");
  Loc l = mark_loc(doc.Mark());
  return Field{doc, l, l};
}

const Field* Reader::Map::get(std::string_view key) const {
  for (const auto& [k, f] : fields_) {
    if (k == key) return &f;
  }
  return nullptr;
}

Result<std::vector<std::pair<std::string, Field>>> Reader::entries(const Field& f,
                                                                   const std::string& path) const {
  if (type_of(f.node) != YType::mapping) {
    return error(f.loc, path, "expected a mapping, got " + describe(f.node));
  }
  std::vector<std::pair<std::string, Field>> out;
  std::map<std::string, Loc> seen;
  for (auto it = f.node.begin(); it != f.node.end(); ++it) {
    const YAML::Node k = it->first;
    const YAML::Node val = it->second;
    Loc kloc = mark_loc(k.Mark());
    if (type_of(k) != YType::string) {
      return error(kloc, path, "expected string keys, got " + describe(k));
    }
    const std::string& key = k.Scalar();
    const std::string kpath = child(path, key);
    if (auto s = seen.find(key); s != seen.end()) {
      return error(kloc, kpath,
                   "duplicate field (first at line " + std::to_string(s->second.line) + ")");
    }
    seen[key] = kloc;
    Field v{val, val.IsNull() ? kloc : mark_loc(val.Mark()), kloc};
    out.emplace_back(key, v);
  }
  return out;
}

Result<Reader::Map> Reader::map(const Field& f, const std::string& path,
                                const std::vector<std::string_view>& known) const {
  TRY(auto fields, entries(f, path));
  Map m;
  m.self_ = f;
  m.path_ = path;
  for (auto& [key, v] : fields) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      // The key's own position: where the typo is.
      return error(v.key_loc, child(path, key), "unknown field " + suggest(key, known));
    }
    record(child(path, key), v.loc);
  }
  m.fields_ = std::move(fields);
  record(path, f.loc);
  return m;
}

Status Reader::require(const Map& m, const std::vector<std::string_view>& keys) const {
  for (auto k : keys) {
    if (!m.get(k)) {
      return error(m.self().loc, m.path(), "missing required field " + quote(k));
    }
  }
  return {};
}

Result<std::string> Reader::string(const Field& f, const std::string& path) const {
  if (type_of(f.node) != YType::string) {
    std::string hint = f.node.IsScalar() && type_of(f.node) != YType::unsupported
                           ? " (quote it to make it a string)"
                           : "";
    return error(f.loc, path, "expected a string, got " + describe(f.node) + hint);
  }
  record(path, f.loc);
  return f.node.Scalar();
}

Result<long long> Reader::integer(const Field& f, const std::string& path,
                                  const std::string& expected) const {
  if (type_of(f.node) != YType::integer) {
    return error(f.loc, path, "expected " + expected + ", got " + describe(f.node));
  }
  auto v = to_integer(f.node.Scalar());
  if (!v) return error(f.loc, path, "expected " + expected + ", got " + f.node.Scalar());
  record(path, f.loc);
  return *v;
}

Result<std::vector<Field>> Reader::list(const Field& f, const std::string& path) const {
  if (type_of(f.node) != YType::sequence) {
    return error(f.loc, path, "expected a list, got " + describe(f.node));
  }
  std::vector<Field> out;
  for (auto it = f.node.begin(); it != f.node.end(); ++it) {
    const YAML::Node node = *it;
    Loc l = node.IsNull() ? f.loc : mark_loc(node.Mark());
    Field item{node, l, l};
    record(index(path, out.size()), item.loc);
    out.push_back(item);
  }
  record(path, f.loc);
  return out;
}

Result<std::vector<std::string>> Reader::strings(const Field& f, const std::string& path) const {
  TRY(auto items, list(f, path));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    TRY(auto s, string(items[i], index(path, i)));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace comet::capability::detail
