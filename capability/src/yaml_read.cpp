#include "yaml_read.hpp"

#include <yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "util.hpp"

namespace comet::capability::detail {

namespace {

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

Loc mark_loc(const yaml_mark_t& m) {
  return Loc{static_cast<int>(m.line) + 1, static_cast<int>(m.column) + 1};
}

// A document may name a node once (an anchor) and use it again (an alias);
// the tree shares it. What the validators walk is the expanded document,
// so its size is bounded (a "billion laughs" of nested aliases is refused
// before it is walked).
constexpr std::size_t kMaxExpandedNodes = 100000;

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

YType type_of(const Node& n) {
  if (!n) return YType::null;
  switch (n->kind) {
    case YNode::Kind::sequence:
      return YType::sequence;
    case YNode::Kind::mapping:
      return YType::mapping;
    case YNode::Kind::scalar:
      break;
  }
  const std::string& tag = n->tag;
  if (tag == "!") return YType::string;  // quoted
  if (tag == "?" || tag.empty()) return resolve_plain(n->value);
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

std::string describe(const Node& n) {
  switch (type_of(n)) {
    case YType::null:
      return "null";
    case YType::sequence:
      return "a list";
    case YType::mapping:
      return "a mapping";
    case YType::string:
      return quote(n->value);
    case YType::unsupported:
      return "a value tagged " + n->tag;
    default:
      return n->value;
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

// The first document of TEXT as a tree, from libyaml's events.
Result<Node> Reader::parse_document(std::string_view text) const {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) return error(Loc{}, "", "out of memory for the parser");
  struct ParserOwner {
    yaml_parser_t* p;
    ~ParserOwner() { yaml_parser_delete(p); }
  } parser_owner{&parser};
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()),
                               text.size());
  struct Frame {
    std::shared_ptr<YNode> node;
    Node key;             // a mapping's key waiting for its value
    std::size_t started;  // `expanded` when the node began
  };
  std::vector<Frame> stack;
  std::map<std::string, std::pair<Node, std::size_t>> anchors;  // name -> node, expanded size
  std::map<const YNode*, std::string> open_anchors;             // containers not yet ended
  Node root;
  std::size_t expanded = 0;
  auto add = [&](Node n) {
    if (stack.empty()) {
      root = std::move(n);
      return;
    }
    Frame& top = stack.back();
    if (top.node->kind == YNode::Kind::sequence) {
      top.node->items.push_back(std::move(n));
    } else if (!top.key) {
      top.key = std::move(n);
    } else {
      top.node->pairs.emplace_back(std::move(top.key), std::move(n));
      top.key.reset();
    }
  };
  auto tag_of = [](const yaml_char_t* tag, bool plain) -> std::string {
    if (tag) return reinterpret_cast<const char*>(tag);
    return plain ? "?" : "!";
  };
  for (;;) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev)) {
      std::string why = parser.problem ? parser.problem : "syntax error";
      if (parser.context) why += std::string(" ") + parser.context;
      return error(mark_loc(parser.problem_mark), "", "invalid YAML: " + why);
    }
    struct EventOwner {
      yaml_event_t* e;
      ~EventOwner() { yaml_event_delete(e); }
    } event_owner{&ev};
    const Loc loc = mark_loc(ev.start_mark);
    const char* anchor = nullptr;
    switch (ev.type) {
      case YAML_STREAM_START_EVENT:
      case YAML_DOCUMENT_START_EVENT:
      case YAML_NO_EVENT:
        continue;
      case YAML_DOCUMENT_END_EVENT:
      case YAML_STREAM_END_EVENT:
        return root;
      case YAML_SCALAR_EVENT: {
        auto n = std::make_shared<YNode>();
        n->kind = YNode::Kind::scalar;
        n->tag = tag_of(ev.data.scalar.tag, ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE);
        n->value.assign(reinterpret_cast<const char*>(ev.data.scalar.value), ev.data.scalar.length);
        n->loc = loc;
        anchor = reinterpret_cast<const char*>(ev.data.scalar.anchor);
        if (anchor) anchors[anchor] = {n, 1};
        ++expanded;
        add(std::move(n));
        break;
      }
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        bool seq = ev.type == YAML_SEQUENCE_START_EVENT;
        auto n = std::make_shared<YNode>();
        n->kind = seq ? YNode::Kind::sequence : YNode::Kind::mapping;
        n->tag = tag_of(seq ? ev.data.sequence_start.tag : ev.data.mapping_start.tag, true);
        n->loc = loc;
        anchor = reinterpret_cast<const char*>(seq ? ev.data.sequence_start.anchor
                                                   : ev.data.mapping_start.anchor);
        if (anchor) open_anchors[n.get()] = anchor;
        ++expanded;
        add(n);
        stack.push_back(Frame{std::move(n), nullptr, expanded});
        if (stack.size() > 64) return error(loc, "", "invalid YAML: nested more than 64 deep");
        break;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: {
        Frame f = std::move(stack.back());
        stack.pop_back();
        if (auto it = open_anchors.find(f.node.get()); it != open_anchors.end()) {
          anchors[it->second] = {f.node, expanded - f.started + 1};
          open_anchors.erase(it);
        }
        break;
      }
      case YAML_ALIAS_EVENT: {
        std::string name = reinterpret_cast<const char*>(ev.data.alias.anchor);
        auto it = anchors.find(name);
        if (it == anchors.end()) {
          for (const auto& [node, open] : open_anchors)
            if (open == name)
              return error(loc, "", "invalid YAML: alias *" + name + " is inside its own anchor");
          return error(loc, "", "invalid YAML: unknown alias *" + name);
        }
        expanded += it->second.second;
        add(it->second.first);
        break;
      }
    }
    if (expanded > kMaxExpandedNodes)
      return error(loc, "",
                   "invalid YAML: more than " + std::to_string(kMaxExpandedNodes) +
                       " nodes once aliases are expanded");
  }
}

Result<Field> Reader::load(std::string_view text) const {
  // YAML is UTF-8 here, and every string we keep must be: the capability
  // block travels as JSON.
  if (size_t bad = invalid_utf8(text); bad != std::string_view::npos)
    return error(Loc{}, "", "not valid UTF-8 (byte " + std::to_string(bad) + ")");
  // One document: the parser reads the first only; a second is refused
  // here, by line, before parsing.
  if (int l2 = second_document_line(text))
    return error(Loc{l2, 1}, "", "expected one YAML document, got more than one");
  TRY(Node doc, parse_document(text));
  if (type_of(doc) == YType::null)
    return error(Loc{1, 1}, "", "expected a mapping, got an empty document");
  return Field{doc, doc->loc, doc->loc};
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
  for (const auto& [k, val] : f.node->pairs) {
    Loc kloc = k->loc;
    if (type_of(k) != YType::string) {
      return error(kloc, path, "expected string keys, got " + describe(k));
    }
    const std::string& key = k->value;
    const std::string kpath = child(path, key);
    if (auto s = seen.find(key); s != seen.end()) {
      return error(kloc, kpath,
                   "duplicate field (first at line " + std::to_string(s->second.line) + ")");
    }
    seen[key] = kloc;
    Field v{val, type_of(val) == YType::null ? kloc : val->loc, kloc};
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
    const YType t = type_of(f.node);
    std::string hint =
        f.node && f.node->kind == YNode::Kind::scalar && t != YType::unsupported && t != YType::null
            ? " (quote it to make it a string)"
            : "";
    return error(f.loc, path, "expected a string, got " + describe(f.node) + hint);
  }
  record(path, f.loc);
  return f.node->value;
}

Result<long long> Reader::integer(const Field& f, const std::string& path,
                                  const std::string& expected) const {
  if (type_of(f.node) != YType::integer) {
    return error(f.loc, path, "expected " + expected + ", got " + describe(f.node));
  }
  auto v = to_integer(f.node->value);
  if (!v) return error(f.loc, path, "expected " + expected + ", got " + f.node->value);
  record(path, f.loc);
  return *v;
}

Result<std::vector<Field>> Reader::list(const Field& f, const std::string& path) const {
  if (type_of(f.node) != YType::sequence) {
    return error(f.loc, path, "expected a list, got " + describe(f.node));
  }
  std::vector<Field> out;
  for (const Node& node : f.node->items) {
    Loc l = type_of(node) == YType::null ? f.loc : node->loc;
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
