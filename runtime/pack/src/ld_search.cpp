// ld.so's search order on Debian, as pure functions over ElfInfo
// (hostroot.hpp, "library search"), and /etc/ld.so.conf.
#include "comet/pack/hostroot.hpp"

#include <glob.h>
#include <strings.h>

#include <functional>
#include <set>

#include "comet/base/sys.hpp"

#include "hostroot_paths.hpp"

namespace comet::runtime {

using namespace hostroot_detail;

const std::vector<std::string>& default_library_dirs() {
  static const std::vector<std::string> dirs = {
      "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/lib", "/usr/lib"};
  return dirs;
}

std::vector<LdConfItem> parse_ld_so_conf(std::string_view text) {
  std::vector<LdConfItem> out;
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  for (auto& raw : split(text, '\n')) {
    std::string line = raw.substr(0, raw.find('#'));
    line = trim(line);
    if (line.empty()) continue;
    if (line.size() > 7 && line.compare(0, 7, "include") == 0 && blank(line[7])) {
      std::string pat;
      for (char c : line.substr(8) + " ") {
        if (blank(c)) {
          if (!pat.empty()) out.push_back({true, pat});
          pat.clear();
        } else {
          pat += c;
        }
      }
      continue;
    }
    if (line.size() > 5 && strncasecmp(line.c_str(), "hwcap", 5) == 0 && blank(line[5])) continue;
    while (line.size() > 1 && line.back() == '/') line.pop_back();
    out.push_back({false, line});
  }
  return out;
}

namespace {
void collect_conf(const std::string& file, int depth, std::vector<std::string>* out,
                  const std::function<void(const std::string&)>& consult) {
  if (depth > 8) return;  // include loops
  if (consult) consult(file);
  auto text = read_file(file);
  if (!text.ok()) return;
  for (const auto& item : parse_ld_so_conf(*text)) {
    if (!item.include) {
      out->push_back(item.value);
      continue;
    }
    std::string pat = item.value;
    if (pat[0] != '/') pat = join_path(dirname_of(file), pat);
    if (consult) consult(dirname_of(pat));
    glob_t g = {};
    if (::glob(pat.c_str(), 0, nullptr, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; i++) collect_conf(g.gl_pathv[i], depth + 1, out, consult);
    ::globfree(&g);
  }
}
}  // namespace

std::vector<std::string> ld_so_conf_dirs(const std::string& path,
                                         const std::function<void(const std::string&)>& consult) {
  std::vector<std::string> out;
  collect_conf(path, 0, &out, consult);
  return out;
}

std::string expand_dst(std::string_view e, std::string_view origin) {
  static const std::pair<const char*, const char*> kTokens[] = {
      {"ORIGIN", nullptr}, {"LIB", "lib/x86_64-linux-gnu"}, {"PLATFORM", "x86_64"}};
  std::string out;
  for (size_t i = 0; i < e.size();) {
    if (e[i] != '$') {
      out += e[i++];
      continue;
    }
    bool done = false;
    for (const auto& [tok, val] : kTokens) {
      std::string_view t(tok);
      std::string_view value = val ? std::string_view(val) : origin;
      std::string braced = "{" + std::string(t) + "}";
      if (e.substr(i + 1, braced.size()) == braced) {
        out += value;
        i += 1 + braced.size();
        done = true;
      } else if (e.substr(i + 1, t.size()) == t &&
                 (i + 1 + t.size() == e.size() || e[i + 1 + t.size()] == '/')) {
        out += value;
        i += 1 + t.size();
        done = true;
      }
      if (done) break;
    }
    if (!done) out += e[i++];
  }
  return out;
}

std::vector<std::string> library_search_dirs(const ElfInfo& obj, std::string_view origin,
                                             const std::vector<std::string>& loader_rpath,
                                             const std::vector<std::string>& conf_dirs) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& d) {
    if (d.empty() || d[0] != '/') return;  // relative to the process's cwd: not ours
    std::string c = clean_path(d);
    if (seen.insert(c).second) out.push_back(c);
  };
  if (obj.runpath.empty()) {
    for (const auto& r : obj.rpath) add(expand_dst(r, origin));
    for (const auto& r : loader_rpath) add(r);
  }
  for (const auto& r : obj.runpath) add(expand_dst(r, origin));
  for (const auto& d : conf_dirs) add(d);
  for (const auto& d : default_library_dirs()) add(d);
  return out;
}

std::string find_library(const std::string& name, const std::vector<std::string>& dirs,
                         const std::function<bool(const std::string&)>& usable) {
  for (const auto& d : dirs) {
    std::string p = join_path(d, name);
    if (usable(p)) return p;
  }
  return "";
}

}  // namespace comet::runtime
