// soyapack.yaml -> Manifest. Every error is "file:line:col: path: problem".
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>

#include "manifest_internal.hpp"
#include "util.hpp"

namespace comet::capability {

using detail::child;
using detail::Field;
using detail::index;
using detail::quote;
using detail::Reader;
using detail::suggest;

namespace detail {

// "64Mi", "1G", "512k", 1048576: bytes; nullopt for anything else.
std::optional<long long> parse_size(const std::string& t) {
  if (t.empty() || !std::isdigit(static_cast<unsigned char>(t[0]))) return std::nullopt;
  std::size_t i = 0;
  long long v = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) {
    if (v > (1LL << 50)) return std::nullopt;
    v = v * 10 + (t[i++] - '0');
  }
  std::string unit = t.substr(i);
  long long mul = unit == ""                   ? 1
                  : unit == "k" || unit == "K" ? 1000
                  : unit == "M"                ? 1000 * 1000
                  : unit == "G"                ? 1000LL * 1000 * 1000
                  : unit == "Ki"               ? 1LL << 10
                  : unit == "Mi"               ? 1LL << 20
                  : unit == "Gi"               ? 1LL << 30
                                               : 0;
  if (!mul || v > (1LL << 50) / mul) return std::nullopt;
  return v * mul;
}

}  // namespace detail

using detail::parse_size;

namespace {

const std::vector<std::string_view> kTopKeys = {
    "apiVersion", "name",     "version",      "description", "runtime",
    "tools",      "examples", "capabilities", "profile",     "resources"};
const std::vector<std::string_view> kResourceKeys = {"pids", "memory", "tmp", "output",
                                                     "cache_entry"};

Result<Resources> parse_resources(const Reader& r, const Field& f) {
  const std::string path = "resources";
  TRY(auto m, r.map(f, path, kResourceKeys));
  Resources res;
  if (const Field* p = m.get("pids")) {
    TRY(long long n,
        r.integer(*p, child(path, "pids"),
                  "an integer " + std::to_string(kMinPids) + ".." + std::to_string(kMaxPids)));
    if (n < kMinPids || n > kMaxPids)
      return r.error(p->loc, child(path, "pids"),
                     "expected an integer " + std::to_string(kMinPids) + ".." +
                         std::to_string(kMaxPids) + ", got " + std::to_string(n));
    res.pids = n;
  }
  struct Size {
    const char* key;
    long long* out;
    long long min;
  };
  for (Size z :
       {Size{"memory", &res.memory, kMinMemory}, Size{"tmp", &res.tmp, 1LL << 20},
        Size{"output", &res.output, 1LL << 20}, Size{"cache_entry", &res.cache_entry, 0}}) {
    const Field* v = m.get(z.key);
    if (!v) continue;
    std::string t;
    if (auto str = r.string(*v, child(path, z.key)); str.ok()) {
      t = *str;
    } else {
      TRY(long long n, r.integer(*v, child(path, z.key), "a size (bytes, or 64Mi, 1Gi ...)"));
      t = std::to_string(n);
    }
    auto b = parse_size(t);
    if (!b || *b < z.min)
      return r.error(v->loc, child(path, z.key),
                     "expected a size of at least " + std::to_string(z.min) +
                         " bytes (bytes, or with a suffix k M G Ki Mi Gi), got \"" + t + "\"");
    *z.out = *b;
  }
  return res;
}
const std::vector<std::string_view> kRuntimeKeys = {"interpreter", "entrypoint", "args", "env"};
const std::vector<std::string_view> kToolKeys = {"name", "kind", "url", "path", "description"};
const std::vector<std::string_view> kExampleKeys = {"name", "args", "covers", "description"};
const std::vector<std::string_view> kCapKeys = {"egress", "fs", "determinism_tier"};
const std::vector<std::string_view> kEgressKeys = {"host", "port", "protocol"};
const std::vector<std::string_view> kFsKeys = {"read", "write"};

std::vector<std::string_view> kind_names() {
  std::vector<std::string_view> out;
  for (const auto& k : tool_kinds()) out.push_back(k.name);
  return out;
}

// A string field that must also pass a value check.
Result<std::string> checked(const Reader& r, const Field& f, const std::string& path,
                            std::optional<std::string> (*check)(std::string_view)) {
  TRY(std::string s, r.string(f, path));
  TRYV(r.check(check(s), f.loc, path));
  return s;
}

Result<Runtime> parse_runtime(const Reader& r, const Field& f) {
  const std::string path = "runtime";
  TRY(auto m, r.map(f, path, kRuntimeKeys));
  TRYV(r.require(m, {"interpreter", "entrypoint"}));
  Runtime rt;
  TRY(rt.interpreter,
      checked(r, *m.get("interpreter"), child(path, "interpreter"), detail::check_interpreter));
  TRY(rt.entrypoint,
      checked(r, *m.get("entrypoint"), child(path, "entrypoint"), detail::check_entrypoint));
  if (const Field* a = m.get("args")) {
    TRY(rt.args, r.strings(*a, child(path, "args")));
  }
  if (const Field* e = m.get("env")) {
    const std::string epath = child(path, "env");
    TRY(auto entries, r.entries(*e, epath));
    for (auto& [key, v] : entries) {
      TRYV(r.check(detail::check_env_key(key), v.key_loc, child(epath, key)));
      TRY(std::string value, r.string(v, child(epath, key)));
      rt.env[key] = value;
    }
  }
  return rt;
}

Result<Tool> parse_tool(const Reader& r, const Field& f, const std::string& path) {
  TRY(auto m, r.map(f, path, kToolKeys));
  TRYV(r.require(m, {"name", "kind"}));
  Tool t;
  TRY(t.name, checked(r, *m.get("name"), child(path, "name"), detail::check_ident));
  const Field& kf = *m.get("kind");
  TRY(std::string kind, r.string(kf, child(path, "kind")));
  auto k = parse_tool_kind(kind);
  if (!k) {
    return r.error(kf.loc, child(path, "kind"),
                   "unknown tool kind " + quote(kind) + " " + suggest(kind, kind_names()));
  }
  t.kind = *k;
  const ToolKindInfo& ki = info(t.kind);
  const std::string_view need = ki.network ? "url" : "path";
  const std::string_view other = ki.network ? "path" : "url";
  if (const Field* o = m.get(other)) {
    return r.error(
        o->key_loc, child(path, other),
        std::string(ki.name) + " takes a " + std::string(need) + ", not a " + std::string(other));
  }
  if (!m.get(need)) {
    return r.error(f.loc, path, std::string(ki.name) + " needs a " + std::string(need));
  }
  const Field& nf = *m.get(need);
  TRY(std::string value, r.string(nf, child(path, need)));
  if (ki.network) {
    auto ep = parse_tool_url(t.kind, value);
    if (!ep.ok()) return r.error(nf.loc, child(path, "url"), ep.error().message());
    t.url = value;
  } else {
    t.path = value;
  }
  if (const Field* d = m.get("description")) {
    TRY(t.description, r.string(*d, child(path, "description")));
  }
  return t;
}

Result<Example> parse_example(const Reader& r, const Field& f, const std::string& path) {
  TRY(auto m, r.map(f, path, kExampleKeys));
  TRYV(r.require(m, {"name"}));
  Example e;
  TRY(e.name, checked(r, *m.get("name"), child(path, "name"), detail::check_ident));
  if (const Field* a = m.get("args")) {
    TRY(e.args, r.strings(*a, child(path, "args")));
  }
  if (const Field* c = m.get("covers")) {
    const std::string cpath = child(path, "covers");
    TRY(auto items, r.list(*c, cpath));
    for (std::size_t i = 0; i < items.size(); ++i) {
      TRY(std::string s, r.string(items[i], index(cpath, i)));
      auto cover = parse_cover(s);
      if (!cover.ok()) return r.error(items[i].loc, index(cpath, i), cover.error().message());
      e.covers.push_back(s);
    }
  }
  if (const Field* d = m.get("description")) {
    TRY(e.description, r.string(*d, child(path, "description")));
  }
  return e;
}

template <typename T>
Result<std::vector<T>> parse_list(const Reader& r, const Field& f, const std::string& path,
                                  Result<T> (*one)(const Reader&, const Field&,
                                                   const std::string&)) {
  TRY(auto items, r.list(f, path));
  std::vector<T> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    TRY(T v, one(r, items[i], index(path, i)));
    out.push_back(std::move(v));
  }
  return out;
}

Result<Egress> parse_egress(const Reader& r, const Field& f, const std::string& path) {
  Egress eg;
  if (detail::type_of(f.node) == detail::YType::string && f.node->value == "*") {
    r.record(path, f.loc);
    eg.any = true;
    return eg;
  }
  if (detail::type_of(f.node) != detail::YType::sequence) {
    return r.error(
        f.loc, path,
        "expected a list of {host, port, protocol} or \"*\", got " + detail::describe(f.node));
  }
  TRY(auto items, r.list(f, path));
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string ipath = index(path, i);
    const Field& it = items[i];
    auto t = detail::type_of(it.node);
    if (t == detail::YType::string && it.node->value == "*") {
      if (items.size() != 1) return r.error(it.loc, ipath, "\"*\" must be the only entry");
      eg.any = true;
      continue;
    }
    if (t != detail::YType::mapping) {
      return r.error(
          it.loc, ipath,
          "expected a mapping {host, port, protocol} or \"*\", got " + detail::describe(it.node));
    }
    TRY(auto m, r.map(it, ipath, kEgressKeys));
    TRYV(r.require(m, {"host", "port", "protocol"}));
    EgressEntry e;
    TRY(e.host, checked(r, *m.get("host"), child(ipath, "host"), detail::check_egress_host));
    const Field& pf = *m.get("port");
    TRY(long long port, r.integer(pf, child(ipath, "port"), "an integer 1..65535"));
    TRYV(r.check(detail::check_port(port), pf.loc, child(ipath, "port")));
    e.port = static_cast<int>(port);
    const Field& prf = *m.get("protocol");
    TRY(std::string proto, r.string(prf, child(ipath, "protocol")));
    auto p = parse_protocol(proto);
    if (!p) {
      return r.error(prf.loc, child(ipath, "protocol"),
                     "unknown protocol " + quote(proto) + " " + suggest(proto, protocol_names()));
    }
    e.protocol = *p;
    eg.entries.push_back(std::move(e));
  }
  return eg;
}

}  // namespace

namespace detail {

Result<Capabilities> parse_capabilities(const Reader& r, const Field& f, const std::string& path) {
  TRY(auto m, r.map(f, path, kCapKeys));
  TRYV(r.require(m, {"determinism_tier"}));
  Capabilities c;
  if (const Field* e = m.get("egress")) {
    TRY(c.egress, parse_egress(r, *e, child(path, "egress")));
  }
  if (const Field* fs = m.get("fs")) {
    const std::string fpath = child(path, "fs");
    TRY(auto fm, r.map(*fs, fpath, kFsKeys));
    if (const Field* rd = fm.get("read")) {
      TRY(c.fs.read, r.strings(*rd, child(fpath, "read")));
    }
    if (const Field* wr = fm.get("write")) {
      TRY(c.fs.write, r.strings(*wr, child(fpath, "write")));
    }
  }
  const Field& tf = *m.get("determinism_tier");
  const std::string tpath = child(path, "determinism_tier");
  TRY(std::string tier, r.string(tf, tpath));
  auto t = parse_tier(tier);
  if (!t) {
    return r.error(tf.loc, tpath,
                   "unknown determinism tier " + quote(tier) + " " + suggest(tier, tier_names()));
  }
  c.tier = *t;
  return c;
}

}  // namespace detail

Result<Manifest> parse_manifest(std::string_view yaml_text, std::string_view filename) {
  const std::string file(filename);
  if (yaml_text.size() > kMaxManifestBytes) {
    return Error::msg(file + ": larger than 1 MiB; not a manifest");
  }
  return detail::guard<Manifest>(file, [&]() -> Result<Manifest> {
    Manifest man;
    man.file = file;
    Reader r(file, &man.locations);
    TRY(Field root, r.load(yaml_text));
    // apiVersion first: a manifest of another version fails on its version,
    // not on the fields that version added.
    TRY(auto all, r.entries(root, ""));
    const Field* api = nullptr;
    for (const auto& [k, v] : all) {
      if (k == "apiVersion") api = &v;
    }
    if (!api) return r.error(root.loc, "", "missing required field \"apiVersion\"");
    TRY(man.api_version, checked(r, *api, "apiVersion", detail::check_api_version));

    TRY(auto m, r.map(root, "", kTopKeys));
    TRYV(r.require(m, {"name", "version", "runtime", "capabilities"}));
    TRY(man.name, checked(r, *m.get("name"), "name", detail::check_name));
    TRY(man.version, checked(r, *m.get("version"), "version", detail::check_semver));
    if (const Field* d = m.get("description")) {
      TRY(man.description, r.string(*d, "description"));
    }
    TRY(man.runtime, parse_runtime(r, *m.get("runtime")));
    if (const Field* t = m.get("tools")) {
      TRY(man.tools, parse_list<Tool>(r, *t, "tools", parse_tool));
    }
    if (const Field* e = m.get("examples")) {
      TRY(man.examples, parse_list<Example>(r, *e, "examples", parse_example));
    }
    TRY(man.capabilities, detail::parse_capabilities(r, *m.get("capabilities"), "capabilities"));
    if (const Field* p = m.get("profile")) {
      TRY(man.profile, checked(r, *p, "profile", detail::check_name));
    }
    if (const Field* rs = m.get("resources")) {
      TRY(man.resources, parse_resources(r, *rs));
    }
    return man;
  });
}

Result<Manifest> load_manifest(std::string_view yaml_text, std::string_view filename) {
  TRY(Manifest m, parse_manifest(yaml_text, filename));
  TRYV(validate(m));
  return m;
}

// --- the annotation form --------------------------------------------------------

std::string capabilities_to_json(const Capabilities& caps) {
  nlohmann::ordered_json j;
  if (caps.egress.any) {
    j["egress"] = nlohmann::ordered_json::array({"*"});
  } else {
    j["egress"] = nlohmann::ordered_json::array();
    for (const auto& e : caps.egress.entries) {
      j["egress"].push_back(
          {{"host", e.host}, {"port", e.port}, {"protocol", std::string(to_string(e.protocol))}});
    }
  }
  j["fs"] = {{"read", caps.fs.read}, {"write", caps.fs.write}};
  j["determinism_tier"] = std::string(to_string(caps.tier));
  return j.dump();
}

Result<Capabilities> capabilities_from_json(std::string_view json_text, std::string_view source) {
  const std::string file(source);
  // JSON is YAML 1.2 flow syntax, so the YAML reader (with its positions
  // and strictness) reads it too; refuse non-JSON YAML up front.
  if (!nlohmann::json::accept(json_text)) return Error::msg(file + ": invalid JSON");
  return detail::guard<Capabilities>(file, [&]() -> Result<Capabilities> {
    Reader r(file, nullptr);
    TRY(Field root, r.load(json_text));
    TRY(Capabilities c, detail::parse_capabilities(r, root, ""));
    // The same consistency rules as a manifest's.
    Manifest m;
    m.name = "annotation";
    m.version = "0.0.0";
    m.runtime.interpreter = "/x";
    m.runtime.entrypoint = "x";
    m.capabilities = c;
    m.file = file;
    auto st = validate(m);
    if (!st.ok()) return Error::msg(st.error().message());
    return c;
  });
}

}  // namespace comet::capability
