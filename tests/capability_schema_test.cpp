// Keeps docs/soyapack.schema.json and the manifest parser in agreement.
//
// Two checks:
//  1. A corpus: tests/data/capability/good/*.yaml must load (parse +
//     validate) and validate against the schema; bad/*.yaml must fail to
//     load with exactly the text of the sibling .err file, and the schema
//     must reject it too, unless the file's first line is
//     "# schema: accepts" (a rule JSON Schema cannot express: unique names,
//     tier against tool kinds, IPv4 octet ranges, nested fs entries).
//  2. Structure: the schema's enums and patterns equal the parser's tables
//     and constants (tool kinds, protocols, tiers, name/semver patterns).
//
// The schema side uses a small validator, below, for exactly the subset of
// JSON Schema 2020-12 the schema uses: type, enum, const, pattern (via
// std::regex, ECMAScript), minimum, maximum, minItems, maxItems, items,
// properties, required, additionalProperties (false or a schema),
// propertyNames, oneOf, not, and local $ref. Any other keyword fails the
// test, so the schema cannot drift outside what is checked. YAML is
// converted to JSON with the YAML 1.2 core schema, as the parser types it.
//
// COMET_UPDATE_GOLDEN=1 rewrites the .err files (review the diff!).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "comet/base/switches.hpp"
#include "comet/capability/manifest.hpp"

#include "support/slurp.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace comet::capability;

namespace {

const fs::path kData = fs::path(COMET_TEST_DATA) / "capability";

using comet::test::slurp;

json load_schema() {
  return json::parse(slurp(fs::path(COMET_SOURCE_DIR) / "docs/soyapack.schema.json"));
}

// --- YAML -> JSON, YAML 1.2 core schema ---------------------------------------

json scalar_to_json(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!" || n.Tag() == "tag:yaml.org,2002:str") return s;
  if (n.Tag() != "?") throw std::runtime_error("tag " + n.Tag());
  if (s.empty() || std::regex_match(s, std::regex("~|null|Null|NULL"))) return nullptr;
  if (std::regex_match(s, std::regex("true|True|TRUE"))) return true;
  if (std::regex_match(s, std::regex("false|False|FALSE"))) return false;
  if (std::regex_match(s, std::regex("[-+]?[0-9]+"))) return std::stoll(s);
  if (std::regex_match(s, std::regex("0o[0-7]+"))) return std::stoll(s.substr(2), nullptr, 8);
  if (std::regex_match(s, std::regex("0x[0-9a-fA-F]+")))
    return std::stoll(s.substr(2), nullptr, 16);
  if (std::regex_match(s, std::regex("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?"))) {
    return std::stod(s);
  }
  return s;
}

json to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& it : n) a.push_back(to_json(it));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& it : n) {
        if (!it.first.IsScalar()) throw std::runtime_error("non-scalar key");
        json k = scalar_to_json(it.first);
        if (!k.is_string()) throw std::runtime_error("non-string key");
        if (o.contains(k.get<std::string>())) throw std::runtime_error("duplicate key");
        o[k.get<std::string>()] = to_json(it.second);
      }
      return o;
    }
    case YAML::NodeType::Scalar:
      return scalar_to_json(n);
    default:
      return nullptr;
  }
}

// Returns nullopt when the YAML is not a single JSON-representable document.
std::optional<json> yaml_doc(const std::string& text) {
  try {
    auto docs = YAML::LoadAll(text);
    if (docs.size() != 1) return std::nullopt;
    return to_json(docs[0]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// --- the JSON Schema subset ---------------------------------------------------

class Validator {
 public:
  explicit Validator(json root) : root_(std::move(root)) {}

  // Empty when valid; else the first problem.
  std::string check(const json& v) { return check(root_, v, "$"); }

 private:
  const json& deref(const json& s) {
    if (!s.is_object() || !s.contains("$ref")) return s;
    std::string ref = s["$ref"];
    if (ref.rfind("#/$defs/", 0) != 0) throw std::runtime_error("unsupported $ref " + ref);
    return root_["$defs"].at(ref.substr(8));
  }

  static bool type_ok(const std::string& t, const json& v) {
    if (t == "string") return v.is_string();
    if (t == "integer") return v.is_number_integer();
    if (t == "number") return v.is_number();
    if (t == "boolean") return v.is_boolean();
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "null") return v.is_null();
    throw std::runtime_error("unknown type " + t);
  }

  std::string check(const json& schema_in, const json& v, const std::string& at) {
    const json& s = deref(schema_in);
    static const std::set<std::string> known = {
        "$schema",       "$id",      "title", "description", "$defs",    "$ref",
        "type",          "enum",     "const", "pattern",     "minimum",  "maximum",
        "minItems",      "maxItems", "items", "properties",  "required", "additionalProperties",
        "propertyNames", "oneOf",    "not"};
    for (const auto& [k, unused] : s.items()) {
      if (!known.count(k)) throw std::runtime_error("schema keyword outside the subset: " + k);
    }
    if (s.contains("type") && !type_ok(s["type"], v))
      return at + ": not a " + s["type"].get<std::string>();
    if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end()) {
      return at + ": not in enum";
    }
    if (s.contains("const") && s["const"] != v) return at + ": not the const";
    if (s.contains("pattern") && v.is_string()) {
      std::regex re(s["pattern"].get<std::string>(), std::regex::ECMAScript);
      if (!std::regex_search(v.get<std::string>(), re)) return at + ": does not match pattern";
    }
    if (v.is_number()) {
      if (s.contains("minimum") && v.get<double>() < s["minimum"].get<double>())
        return at + ": < minimum";
      if (s.contains("maximum") && v.get<double>() > s["maximum"].get<double>())
        return at + ": > maximum";
    }
    if (v.is_array()) {
      if (s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>())
        return at + ": too few items";
      if (s.contains("maxItems") && v.size() > s["maxItems"].get<std::size_t>())
        return at + ": too many items";
      if (s.contains("items")) {
        for (std::size_t i = 0; i < v.size(); ++i) {
          auto e = check(s["items"], v[i], at + "[" + std::to_string(i) + "]");
          if (!e.empty()) return e;
        }
      }
    }
    if (v.is_object()) {
      if (s.contains("required")) {
        for (const auto& r : s["required"]) {
          if (!v.contains(r.get<std::string>())) return at + ": missing " + r.get<std::string>();
        }
      }
      for (const auto& [k, val] : v.items()) {
        if (s.contains("propertyNames")) {
          auto e = check(s["propertyNames"], json(k), at + "." + k + "(name)");
          if (!e.empty()) return e;
        }
        if (s.contains("properties") && s["properties"].contains(k)) {
          auto e = check(s["properties"][k], val, at + "." + k);
          if (!e.empty()) return e;
        } else if (s.contains("additionalProperties")) {
          const json& ap = s["additionalProperties"];
          if (ap.is_boolean()) {
            if (!ap.get<bool>()) return at + "." + k + ": additional property";
          } else {
            auto e = check(ap, val, at + "." + k);
            if (!e.empty()) return e;
          }
        }
      }
    }
    if (s.contains("oneOf")) {
      int n = 0;
      for (const auto& branch : s["oneOf"]) n += check(branch, v, at).empty() ? 1 : 0;
      if (n != 1) return at + ": matches " + std::to_string(n) + " oneOf branches";
    }
    if (s.contains("not") && check(s["not"], v, at).empty()) return at + ": matches not";
    return "";
  }

  json root_;
};

std::vector<fs::path> yamls(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kData / dir)) {
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool update() {
  return comet::switches::update_golden();
}

}  // namespace

TEST(CapabilitySchema, GoodFixturesLoadAndMatchSchema) {
  Validator v(load_schema());
  auto files = yamls("good");
  ASSERT_GE(files.size(), 5u);
  for (const auto& p : files) {
    SCOPED_TRACE(p.filename().string());
    auto m = load_manifest(slurp(p), p.filename().string());
    EXPECT_TRUE(m.ok()) << m.error().message();
    auto doc = yaml_doc(slurp(p));
    ASSERT_TRUE(doc.has_value());
    EXPECT_EQ(v.check(*doc), "");
  }
}

TEST(CapabilitySchema, BadFixturesFailWithExactErrorAndSchemaAgrees) {
  Validator v(load_schema());
  auto files = yamls("bad");
  ASSERT_GE(files.size(), 40u);
  for (const auto& p : files) {
    SCOPED_TRACE(p.filename().string());
    const std::string text = slurp(p);
    auto m = load_manifest(text, "soyapack.yaml");
    ASSERT_FALSE(m.ok());
    fs::path errf = p;
    errf.replace_extension(".err");
    if (update()) std::ofstream(errf) << m.error().message() << "\n";
    std::string want = slurp(errf);
    while (!want.empty() && want.back() == '\n') want.pop_back();
    EXPECT_EQ(m.error().message(), want);

    bool schema_accepts = text.rfind("# schema: accepts", 0) == 0;
    auto doc = yaml_doc(text);
    bool valid = doc && v.check(*doc).empty();
    EXPECT_EQ(valid, schema_accepts) << (doc ? v.check(*doc) : "not one JSON document");
  }
}

TEST(CapabilitySchema, EnumsAndPatternsEqualTheParser) {
  json s = load_schema();
  std::vector<std::string> kinds;
  for (const auto& k : tool_kinds()) kinds.emplace_back(k.name);
  EXPECT_EQ(s["$defs"]["tool"]["properties"]["kind"]["enum"].get<std::vector<std::string>>(),
            kinds);

  std::vector<std::string> branch_kinds;
  for (const auto& b : s["$defs"]["tool"]["oneOf"]) {
    for (const auto& k : b["properties"]["kind"]["enum"]) branch_kinds.push_back(k);
  }
  std::sort(branch_kinds.begin(), branch_kinds.end());
  std::sort(kinds.begin(), kinds.end());
  EXPECT_EQ(branch_kinds, kinds);  // every kind in exactly one url/path branch

  std::vector<std::string> protos(protocol_names().begin(), protocol_names().end());
  EXPECT_EQ(
      s["$defs"]["egressEntry"]["properties"]["protocol"]["enum"].get<std::vector<std::string>>(),
      protos);
  std::vector<std::string> tiers(tier_names().begin(), tier_names().end());
  EXPECT_EQ(s["$defs"]["capabilities"]["properties"]["determinism_tier"]["enum"]
                .get<std::vector<std::string>>(),
            tiers);
  EXPECT_EQ(s["properties"]["apiVersion"]["enum"][0], std::string(kApiVersion));
  EXPECT_EQ(s["properties"]["name"]["pattern"], std::string(kNamePattern));
  EXPECT_EQ(s["properties"]["profile"]["pattern"], std::string(kNamePattern));
  EXPECT_EQ(s["properties"]["version"]["pattern"], std::string(kSemverPattern));
  EXPECT_EQ(s["$defs"]["tool"]["properties"]["name"]["pattern"], std::string(kIdentPattern));
  EXPECT_EQ(s["$defs"]["example"]["properties"]["name"]["pattern"], std::string(kIdentPattern));
  EXPECT_EQ(s["$defs"]["runtime"]["properties"]["env"]["propertyNames"]["pattern"],
            std::string(kEnvKeyPattern));
  // Side effects are what the tier rule keys on; the schema documents them
  // only in prose, so pin the set here.
  std::set<std::string> side;
  for (const auto& k : tool_kinds()) {
    if (k.side_effect) side.insert(std::string(k.name));
  }
  EXPECT_EQ(side, (std::set<std::string>{"builtin.http_post", "builtin.http_put",
                                         "builtin.http_patch", "builtin.http_delete",
                                         "builtin.tcp_connect", "builtin.udp_send"}));
}

TEST(CapabilitySchema, ValidatorSubsetSelfCheck) {
  Validator v(json::parse(R"({"type":"object","additionalProperties":false,
    "required":["a"],"properties":{"a":{"type":"integer","minimum":1,"maximum":3},
    "b":{"oneOf":[{"enum":["x"]},{"type":"array","items":{"type":"string","pattern":"^y"}}]},
    "c":{"type":"object","propertyNames":{"pattern":"^[A-Z]+$"},"additionalProperties":{"type":"string"}},
    "d":{"not":{"required":["z"]}}}})"));
  EXPECT_EQ(v.check(json::parse(R"({"a":2,"b":"x","c":{"K":"v"},"d":{}})")), "");
  EXPECT_NE(v.check(json::parse(R"({"a":4})")), "");
  EXPECT_NE(v.check(json::parse(R"({"a":1,"e":1})")), "");
  EXPECT_NE(v.check(json::parse(R"({"b":"x"})")), "");
  EXPECT_NE(v.check(json::parse(R"({"a":1,"b":["n"]})")), "");
  EXPECT_NE(v.check(json::parse(R"({"a":1,"c":{"k":"v"}})")), "");
  EXPECT_NE(v.check(json::parse(R"({"a":1,"c":{"K":1}})")), "");
  EXPECT_NE(v.check(json::parse(R"({"a":1,"d":{"z":1}})")), "");
  Validator bad(json::parse(R"({"if":{}})"));
  EXPECT_THROW(bad.check(json::object()), std::runtime_error);
}
