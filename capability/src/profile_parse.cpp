// sandbox.yaml parsing and merging (global files, then the workspace file).
#include <sstream>
#include "comet/capability/profile.hpp"
#include "util.hpp"
#include "yaml_read.hpp"

namespace comet::capability {

using detail::child;
using detail::Field;
using detail::index;
using detail::quote;
using detail::Reader;

namespace {

const std::vector<std::string_view> kTopKeys = {"default", "deny", "profiles"};
const std::vector<std::string_view> kProfileKeys = {"extends", "description", "read",   "write",
                                                    "deny",    "protect",     "network"};
const std::vector<std::string_view> kNetworks = {"open", "restricted"};

std::string at(const std::string& file, Loc l) {
  return file + ":" + std::to_string(l.line) + ":" + std::to_string(l.column);
}

std::optional<std::string> check_profile_path(std::string_view p) {
  for (std::string_view tok : {"~", "{workspace}", "{tmp}"}) {
    if (p == tok ||
        (p.size() > tok.size() && p.substr(0, tok.size()) == tok && p[tok.size()] == '/')) {
      return std::nullopt;
    }
  }
  if (!p.empty() && p[0] == '/') return std::nullopt;
  return "expected an absolute path or one starting with ~, {workspace} or {tmp}, got " + quote(p);
}

Result<std::vector<std::string>> paths(const Reader& r, const Field& f, const std::string& path) {
  TRY(auto items, r.list(f, path));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    TRY(std::string s, r.string(items[i], index(path, i)));
    TRYV(r.check(check_profile_path(s), items[i].loc, index(path, i)));
    out.push_back(std::move(s));
  }
  return out;
}

struct Doc {
  std::optional<std::string> default_profile;
  Loc default_loc;
  std::vector<DenyPath> deny;
  std::vector<CustomProfile> profiles;
};

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
  }
  if (const Field* x = m.get("write")) {
    TRY(p.write, paths(r, *x, child(path, "write")));
  }
  if (const Field* x = m.get("deny")) {
    TRY(p.deny, paths(r, *x, child(path, "deny")));
  }
  if (const Field* x = m.get("protect")) {
    TRY(p.protect, paths(r, *x, child(path, "protect")));
  }
  if (const Field* n = m.get("network")) {
    TRY(std::string net, r.string(*n, child(path, "network")));
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
    // Not YAML::LoadAll (it can loop forever in yaml-cpp 0.7, see yaml_read.cpp).
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
    if (const Field* ps = m.get("profiles")) {
      TRY(auto entries, r.entries(*ps, "profiles"));
      for (const auto& [name, f] : entries) {
        TRY(CustomProfile p, parse_profile(r, name, f));
        doc.profiles.push_back(std::move(p));
      }
    }
    return doc;
  });
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
    }
    if (!is_builtin_profile(set.default_profile) && !set.custom.count(set.default_profile)) {
      return Error::msg(default_at + ": default: unknown sandbox profile " +
                        quote(set.default_profile));
    }
    if (!workspace_doc) return set;

    const ConfigDoc& wd = *workspace_doc;
    TRY(Doc doc, parse_doc(wd));
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
      std::string name = p.name;
      set.custom.emplace(std::move(name), std::move(p));
    }
    for (auto& d : doc.deny) set.deny.push_back(std::move(d));
    return set;
  } catch (const std::exception& e) {
    return Error::msg(std::string("sandbox config: ") + e.what());
  }
}

}  // namespace comet::capability
