// Internal: strict, typed reading of a YAML node tree with positions.
//
// The tree is built from libyaml's event parser (yaml_read.cpp). Scalars
// are typed by the YAML 1.2 core schema (so `port: "443"` is a string and
// `version: 1.4` a float), mappings must have unique string keys drawn from
// a known set, and every error names file:line:column and the field path.
// Callers wrap their use in guard() so that no exception escapes.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/capability/manifest.hpp"

namespace comet::capability::detail {

enum class YType { null, boolean, integer, floating, string, sequence, mapping, unsupported };

// One node of the document. Aliases share their anchor's node.
struct YNode;
using Node = std::shared_ptr<const YNode>;
struct YNode {
  enum class Kind { scalar, sequence, mapping };
  Kind kind = Kind::scalar;
  // "?" for an untagged plain scalar (typed by the core schema), "!" for an
  // untagged quoted or block scalar (a string) and for the non-specific
  // tag, else the resolved tag ("!!str" is "tag:yaml.org,2002:str").
  std::string tag;
  std::string value;                         // a scalar's text
  Loc loc;                                   // where the node starts
  std::vector<Node> items;                   // a sequence's
  std::vector<std::pair<Node, Node>> pairs;  // a mapping's, in source order
};

YType type_of(const Node& n);
// The value as a message shows it after "got ": 5, true, null, "x", a list.
std::string describe(const Node& n);

// A value with the best position we have for it (a null value takes the
// position of its key: an empty value has no text of its own).
struct Field {
  Node node;
  Loc loc;
  Loc key_loc;  // for a mapping value, where its key is; else = loc
};

class Reader {
 public:
  Reader(std::string file, std::map<std::string, Loc>* locations)
      : file_(std::move(file)), locations_(locations) {}

  const std::string& file() const { return file_; }
  Error error(Loc loc, const std::string& path, const std::string& msg) const;
  void record(const std::string& path, Loc loc) const;

  // Exactly one document; an empty text is an error naming `what`.
  Result<Field> load(std::string_view text) const;

  // A mapping whose keys are unique strings from `known`.
  class Map {
   public:
    const Field* get(std::string_view key) const;
    const Field& self() const { return self_; }
    const std::string& path() const { return path_; }

   private:
    friend class Reader;
    Field self_;
    std::string path_;
    std::vector<std::pair<std::string, Field>> fields_;
  };
  Result<Map> map(const Field& f, const std::string& path,
                  const std::vector<std::string_view>& known) const;
  // A mapping with arbitrary (unique, string) keys, in source order; the
  // keys' positions are returned with them.
  Result<std::vector<std::pair<std::string, Field>>> entries(const Field& f,
                                                             const std::string& path) const;
  Status require(const Map& m, const std::vector<std::string_view>& keys) const;

  Result<std::string> string(const Field& f, const std::string& path) const;
  // `expected` completes "expected ...", e.g. "an integer 1..65535".
  Result<long long> integer(const Field& f, const std::string& path,
                            const std::string& expected) const;
  Result<std::vector<Field>> list(const Field& f, const std::string& path) const;
  Result<std::vector<std::string>> strings(const Field& f, const std::string& path) const;

  // Apply a value check (util.hpp) and turn its message into an error.
  Status check(const std::optional<std::string>& problem, Loc loc, const std::string& path) const {
    if (problem) return error(loc, path, *problem);
    return {};
  }

 private:
  Result<Node> parse_document(std::string_view text) const;
  std::string file_;
  std::map<std::string, Loc>* locations_;
};

// Run fn, converting any exception into an Error.
template <typename T>
Result<T> guard(const std::string& file, const std::function<Result<T>()>& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return Error::msg(file + ": " + e.what());
  } catch (...) {
    return Error::msg(file + ": unexpected failure");
  }
}

}  // namespace comet::capability::detail
