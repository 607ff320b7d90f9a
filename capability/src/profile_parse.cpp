// sandbox.yaml parsing and merging (global files, then the workspace file).
#include <sstream>
#include "comet/capability/profile.hpp"
#include "manifest_internal.hpp"
#include "util.hpp"
#include "yaml_read.hpp"

namespace comet::capability {

using detail::child;
using detail::Field;
using detail::index;
using detail::quote;
using detail::Reader;

namespace {

const std::vector<std::string_view> kTopKeys = {
    "default", "deny", "profiles", "hooks", "floor", "protect", "runtime_sockets", "unix_sockets"};
const std::vector<std::string_view> kFloorKeys = {"add", "disable"};
const std::vector<std::string_view> kFloorRuleKeys = {"id", "command", "reason"};
const std::vector<std::string_view> kProfileKeys = {"extends", "description",  "read",
                                                    "write",   "deny",         "protect",
                                                    "network", "unix_sockets", "limits"};
const std::vector<std::string_view> kLimitKeys = {"pids", "memory", "tmp"};
const std::vector<std::string_view> kNetworks = {"open", "restricted"};

std::string at(const std::string& file, Loc l) {
  return file + ":" + std::to_string(l.line) + ":" + std::to_string(l.column);
}

std::optional<std::string> check_profile_path(std::string_view p, bool runtime_ok = false) {
  for (std::string_view tok : {"~", "{workspace}", "{tmp}", "{runtime}"}) {
    if (tok == "{runtime}" && !runtime_ok) continue;
    if (p == tok ||
        (p.size() > tok.size() && p.substr(0, tok.size()) == tok && p[tok.size()] == '/')) {
      return std::nullopt;
    }
  }
  if (!p.empty() && p[0] == '/') return std::nullopt;
  return std::string("expected an absolute path or one starting with ~, {workspace}") +
         (runtime_ok ? ", {tmp} or {runtime}" : " or {tmp}") + ", got " + quote(p);
}

Result<std::vector<std::string>> paths(const Reader& r, const Field& f, const std::string& path,
                                       bool runtime_ok = false) {
  TRY(auto items, r.list(f, path));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    TRY(std::string s, r.string(items[i], index(path, i)));
    TRYV(r.check(check_profile_path(s, runtime_ok), items[i].loc, index(path, i)));
    out.push_back(std::move(s));
  }
  return out;
}

// A top-level path list with each entry's position.
Result<std::vector<ConfigPath>> config_paths(const Reader& r, const Field& f,
                                             const std::string& path, bool runtime_ok = false) {
  TRY(auto list, paths(r, f, path, runtime_ok));
  TRY(auto items, r.list(f, path));
  std::vector<ConfigPath> out;
  for (std::size_t i = 0; i < list.size(); ++i) out.push_back({list[i], r.file(), items[i].loc});
  return out;
}

// unix_sockets entries: paths as runtime_sockets, and never a container
// runtime's API socket (that would be root on the host).
Result<std::vector<ConfigPath>> unix_socket_paths(const Reader& r, const Field& f,
                                                  const std::string& path) {
  TRY(auto list, config_paths(r, f, path, true));
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (is_runtime_socket(list[i].path))
      return r.error(list[i].loc, index(path, i),
                     quote(list[i].path) + " is a container-runtime socket: root on the host");
  }
  return list;
}

Status parse_limits(const Reader& r, const Field& f, const std::string& path, CustomProfile& p) {
  TRY(auto m, r.map(f, path, kLimitKeys));
  if (const Field* v = m.get("pids")) {
    const std::string expected =
        "an integer " + std::to_string(kMinPids) + ".." + std::to_string(kMaxPids);
    TRY(long long n, r.integer(*v, child(path, "pids"), expected));
    if (n < kMinPids || n > kMaxPids)
      return r.error(v->loc, child(path, "pids"),
                     "expected " + expected + ", got " + std::to_string(n));
    p.pids = n;
    p.pids_loc = v->loc;
  }
  struct Size {
    const char* key;
    std::optional<long long>* out;
    Loc* loc;
    long long min;
  };
  for (Size z : {Size{"memory", &p.memory, &p.memory_loc, kMinMemory},
                 Size{"tmp", &p.tmp, &p.tmp_loc, 1LL << 20}}) {
    const Field* v = m.get(z.key);
    if (!v) continue;
    std::string t;
    if (auto str = r.string(*v, child(path, z.key)); str.ok()) {
      t = *str;
    } else {
      TRY(long long n, r.integer(*v, child(path, z.key), "a size (bytes, or 64Mi, 1Gi ...)"));
      t = std::to_string(n);
    }
    auto b = detail::parse_size(t);
    if (!b || *b < z.min)
      return r.error(v->loc, child(path, z.key),
                     "expected a size of at least " + std::to_string(z.min) +
                         " bytes (bytes, or with a suffix k M G Ki Mi Gi), got \"" + t + "\"");
    *z.out = *b;
    *z.loc = v->loc;
  }
  return {};
}

struct Doc {
  std::optional<std::string> default_profile;
  Loc default_loc;
  std::vector<DenyPath> deny;
  std::vector<CustomProfile> profiles;
  std::vector<ConfigPath> runtime_sockets, hooks, protect, unix_sockets;
  Loc unix_sockets_loc;  // the first unix_sockets key (top-level or a profile's)
  bool has_unix_sockets = false;
  std::vector<FloorRule> floor;
  std::vector<std::string> floor_disable;
  Loc floor_disable_loc;
  bool has_floor_disable = false;
};

// floor.add[i].command: a string of words, or a list of them.
Result<std::vector<std::string>> command_words(const Reader& r, const Field& f,
                                               const std::string& path) {
  std::vector<std::string> words;
  if (f.node && f.node->kind == detail::YNode::Kind::sequence) {
    TRY(words, r.strings(f, path));
  } else {
    TRY(std::string s, r.string(f, path));
    std::string w;
    for (char c : s) {
      if (c == ' ' || c == '\t') {
        if (!w.empty()) words.push_back(std::move(w));
        w.clear();
      } else {
        w += c;
      }
    }
    if (!w.empty()) words.push_back(std::move(w));
  }
  if (words.empty()) return r.error(f.loc, path, "expected at least one word");
  for (const auto& w : words) {
    if (w.empty()) return r.error(f.loc, path, "expected non-empty words");
  }
  return words;
}

Status parse_floor(const Reader& r, const Field& f, Doc& doc) {
  TRY(auto m, r.map(f, "floor", kFloorKeys));
  if (const Field* add = m.get("add")) {
    TRY(auto items, r.list(*add, "floor.add"));
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::string path = index("floor.add", i);
      TRY(auto rm, r.map(items[i], path, kFloorRuleKeys));
      TRYV(r.require(rm, {"id", "command"}));
      FloorRule rule;
      rule.file = r.file();
      rule.loc = items[i].loc;
      TRY(rule.id, r.string(*rm.get("id"), child(path, "id")));
      TRYV(r.check(detail::check_name(rule.id), rm.get("id")->loc, child(path, "id")));
      TRY(rule.command, command_words(r, *rm.get("command"), child(path, "command")));
      if (const Field* why = rm.get("reason")) {
        TRY(rule.reason, r.string(*why, child(path, "reason")));
      }
      doc.floor.push_back(std::move(rule));
    }
  }
  if (const Field* d = m.get("disable")) {
    TRY(doc.floor_disable, r.strings(*d, "floor.disable"));
    doc.floor_disable_loc = d->loc;
    doc.has_floor_disable = true;
  }
  return {};
}

Result<CustomProfile> parse_profile(const Reader& r, const std::string& name, const Field& f) {
  const std::string path = child("profiles", name);
  CustomProfile p;
  p.name = name;
  p.file = r.file();
  p.loc = f.key_loc;
  TRYV(r.check(detail::check_name(name), f.key_loc, path));
  if (is_builtin_profile(name)) {
    return r.error(f.key_loc, path, "cannot redefine the built-in profile " + quote(name));
  }
  TRY(auto m, r.map(f, path, kProfileKeys));
  TRYV(r.require(m, {"extends"}));
  const Field& ef = *m.get("extends");
  TRY(p.extends, r.string(ef, child(path, "extends")));
  p.extends_loc = ef.loc;
  if (p.extends == "off") {
    return r.error(ef.loc, child(path, "extends"), "cannot extend \"off\", which is no sandbox");
  }
  if (!is_builtin_profile(p.extends)) {
    return r.error(ef.loc, child(path, "extends"),
                   "expected a built-in profile (workspace, devbox, read-only, strict), got " +
                       quote(p.extends));
  }
  if (const Field* d = m.get("description")) {
    TRY(p.description, r.string(*d, child(path, "description")));
  }
  if (const Field* x = m.get("read")) {
    TRY(p.read, paths(r, *x, child(path, "read")));
    TRY(auto items, r.list(*x, child(path, "read")));
    for (const auto& it : items) p.read_locs.push_back(it.loc);
  }
  if (const Field* x = m.get("write")) {
    TRY(p.write, paths(r, *x, child(path, "write")));
    TRY(auto items, r.list(*x, child(path, "write")));
    for (const auto& it : items) p.write_locs.push_back(it.loc);
  }
  if (const Field* x = m.get("deny")) {
    TRY(p.deny, paths(r, *x, child(path, "deny")));
  }
  if (const Field* x = m.get("protect")) {
    TRY(p.protect, paths(r, *x, child(path, "protect")));
  }
  if (const Field* x = m.get("unix_sockets")) {
    TRY(auto list, unix_socket_paths(r, *x, child(path, "unix_sockets")));
    for (auto& e : list) p.unix_sockets.push_back(std::move(e.path));
  }
  if (const Field* x = m.get("limits")) TRYV(parse_limits(r, *x, child(path, "limits"), p));
  if (const Field* n = m.get("network")) {
    TRY(std::string net, r.string(*n, child(path, "network")));
    p.network_loc = n->loc;
    if (net == "open") {
      p.network = Network::open;
    } else if (net == "restricted") {
      p.network = Network::restricted;
    } else {
      return r.error(n->loc, child(path, "network"),
                     "expected restricted or open, got " + quote(net));
    }
  }
  return p;
}

Result<Doc> parse_doc(const ConfigDoc& cd) {
  return detail::guard<Doc>(cd.filename, [&]() -> Result<Doc> {
    Doc doc;
    Reader r(cd.filename, nullptr);
    if (cd.text.find_first_not_of(" \t\r\n") == std::string::npos) return doc;  // empty file
    {
      bool only_comments = true;
      std::istringstream lines(cd.text);
      for (std::string line; std::getline(lines, line);) {
        size_t f = line.find_first_not_of(" \t\r");
        if (f != std::string::npos && line[f] != '#') only_comments = false;
      }
      if (only_comments) return doc;
    }
    TRY(Field root, r.load(cd.text));
    TRY(auto m, r.map(root, "", kTopKeys));
    if (const Field* d = m.get("default")) {
      TRY(std::string name, r.string(*d, "default"));
      doc.default_profile = name;
      doc.default_loc = d->loc;
    }
    if (const Field* d = m.get("deny")) {
      TRY(auto list, paths(r, *d, "deny"));
      TRY(auto items, r.list(*d, "deny"));
      for (std::size_t i = 0; i < list.size(); ++i) {
        doc.deny.push_back(DenyPath{list[i], cd.filename, items[i].loc});
      }
    }
    if (const Field* d = m.get("runtime_sockets")) {
      TRY(doc.runtime_sockets, config_paths(r, *d, "runtime_sockets", true));
    }
    if (const Field* d = m.get("hooks")) {
      TRY(doc.hooks, config_paths(r, *d, "hooks"));
    }
    if (const Field* d = m.get("protect")) {
      TRY(doc.protect, config_paths(r, *d, "protect"));
    }
    if (const Field* d = m.get("unix_sockets")) {
      TRY(doc.unix_sockets, unix_socket_paths(r, *d, "unix_sockets"));
      doc.unix_sockets_loc = d->loc;
      doc.has_unix_sockets = true;
    }
    if (const Field* d = m.get("floor")) TRYV(parse_floor(r, *d, doc));
    if (const Field* ps = m.get("profiles")) {
      TRY(auto entries, r.entries(*ps, "profiles"));
      for (const auto& [name, f] : entries) {
        TRY(CustomProfile p, parse_profile(r, name, f));
        if (!p.unix_sockets.empty() && !doc.has_unix_sockets) {
          TRY(auto pm, r.map(f, child("profiles", name), kProfileKeys));
          doc.unix_sockets_loc = pm.get("unix_sockets")->loc;
          doc.has_unix_sockets = true;
        }
        doc.profiles.push_back(std::move(p));
      }
    }
    return doc;
  });
}

// Floor rule ids are unique across every file: a later file cannot replace
// an earlier file's rule (that could weaken it), only add its own.
Status add_floor(ProfileSet& set, Doc& doc, const std::string& filename) {
  for (FloorRule& rule : doc.floor) {
    for (const FloorRule& have : set.floor) {
      if (have.id == rule.id) {
        return Error::msg(at(filename, rule.loc) + ": floor.add: rule " + quote(rule.id) +
                          " is already defined at " + at(have.file, have.loc));
      }
    }
    set.floor.push_back(std::move(rule));
  }
  return {};
}

void add_lists(ProfileSet& set, Doc& doc) {
  for (auto& p : doc.runtime_sockets) set.runtime_sockets.push_back(std::move(p));
  for (auto& p : doc.hooks) set.hooks.push_back(std::move(p));
  for (auto& p : doc.protect) set.protect.push_back(std::move(p));
  for (auto& p : doc.unix_sockets) set.unix_sockets.push_back(std::move(p));
}

// A workspace file's profile may only take access away (red team round
// 11: `write: ["/"]`, `network: open` under --profile y was accepted and
// auto-allowed): no devbox base (it writes everything, protects nothing),
// no `network: open`, and read/write entries only inside the workspace
// ({workspace} or below it, no ".."), which its base can reach anyway;
// where a symlink in the workspace leads is checked when the sandbox
// starts (sandbox_cli.cpp).
Status check_grants(const CustomProfile& p, const std::string& file) {
  const std::string at_p = "profiles." + p.name;
  if (p.extends == "devbox")
    return Error::msg(at(file, p.extends_loc) + ": " + at_p +
                      ".extends: the workspace file cannot extend devbox, which protects nothing");
  if (p.network && *p.network == Network::open)
    return Error::msg(at(file, p.network_loc) + ": " + at_p +
                      ".network: the workspace file cannot open the network");
  auto inside = [](const std::string& e) {
    if (e != "{workspace}" && e.rfind("{workspace}/", 0) != 0) return false;
    return ("/" + e + "/").find("/../") == std::string::npos;
  };
  for (const auto* l : {&p.read, &p.write}) {
    const bool w = l == &p.write;
    for (std::size_t i = 0; i < l->size(); i++)
      if (!inside((*l)[i]))
        return Error::msg(at(file, (w ? p.write_locs : p.read_locs).at(i)) + ": " + at_p +
                          (w ? ".write[" : ".read[") + std::to_string(i) +
                          "]: the workspace file can only name paths inside {workspace}, got " +
                          quote((*l)[i]));
  }
  return {};
}

// A workspace file's profile may only lower the limits of what it extends
// (0 there means none, so any value is lower).
Status check_lowers(const CustomProfile& p, const std::string& file) {
  const ResolvedProfile::Limits base = builtin_limits(p.extends);
  struct L {
    const char* key;
    const std::optional<long long>& v;
    long long base;
    Loc loc;
  };
  for (const L& l :
       {L{"pids", p.pids, base.pids, p.pids_loc}, L{"memory", p.memory, base.memory, p.memory_loc},
        L{"tmp", p.tmp, base.tmp, p.tmp_loc}}) {
    if (l.v && l.base != 0 && *l.v > l.base)
      return Error::msg(at(file, l.loc) + ": profiles." + p.name + ".limits." + l.key +
                        ": the workspace file can only lower a limit (" + p.extends + ": " +
                        std::to_string(l.base) + "), got " + std::to_string(*l.v));
  }
  return {};
}

}  // namespace

Result<ProfileSet> merge(const std::vector<ConfigDoc>& global_docs,
                         const std::optional<ConfigDoc>& workspace_doc) {
  try {
    ProfileSet set;
    std::string default_at;  // where the default was set
    for (const ConfigDoc& cd : global_docs) {
      TRY(Doc doc, parse_doc(cd));
      for (CustomProfile& p : doc.profiles) {
        if (auto it = set.custom.find(p.name); it != set.custom.end()) {
          return Error::msg(at(cd.filename, p.loc) + ": profiles." + p.name + ": profile " +
                            quote(p.name) + " is already defined at " +
                            at(it->second.file, it->second.loc));
        }
        std::string name = p.name;
        set.custom.emplace(std::move(name), std::move(p));
      }
      if (doc.default_profile) {
        set.default_profile = *doc.default_profile;
        default_at = at(cd.filename, doc.default_loc);
      }
      for (auto& d : doc.deny) set.deny.push_back(std::move(d));
      TRYV(add_floor(set, doc, cd.filename));
      for (auto& d : doc.floor_disable) set.floor_disable.push_back(std::move(d));
      add_lists(set, doc);
    }
    if (!is_builtin_profile(set.default_profile) && !set.custom.count(set.default_profile)) {
      return Error::msg(default_at + ": default: unknown sandbox profile " +
                        quote(set.default_profile));
    }
    if (!workspace_doc) return set;

    const ConfigDoc& wd = *workspace_doc;
    TRY(Doc doc, parse_doc(wd));
    if (doc.has_unix_sockets) {
      // The allowlist opens sockets the rule would refuse: a repository may
      // not loosen its own sandbox.
      return Error::msg(at(wd.filename, doc.unix_sockets_loc) +
                        ": unix_sockets: only the global and user files can allow unix sockets");
    }
    if (doc.default_profile) {
      return Error::msg(at(wd.filename, doc.default_loc) +
                        ": default: the workspace file cannot set the default profile");
    }
    for (CustomProfile& p : doc.profiles) {
      if (auto it = set.custom.find(p.name); it != set.custom.end()) {
        return Error::msg(at(wd.filename, p.loc) + ": profiles." + p.name +
                          ": the workspace file cannot redefine profile " + quote(p.name) +
                          " (defined at " + at(it->second.file, it->second.loc) + ")");
      }
      p.from_workspace = true;
      TRYV(check_grants(p, wd.filename));
      TRYV(check_lowers(p, wd.filename));
      std::string name = p.name;
      set.custom.emplace(std::move(name), std::move(p));
    }
    if (doc.has_floor_disable) {
      return Error::msg(at(wd.filename, doc.floor_disable_loc) +
                        ": floor.disable: the workspace file cannot disable floor rules");
    }
    for (auto& d : doc.deny) set.deny.push_back(std::move(d));
    TRYV(add_floor(set, doc, wd.filename));
    add_lists(set, doc);
    return set;
  } catch (const std::exception& e) {
    return Error::msg(std::string("sandbox config: ") + e.what());
  }
}

}  // namespace comet::capability
