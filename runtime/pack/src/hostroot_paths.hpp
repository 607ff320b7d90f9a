// Path helpers shared by the files of `rootfs --from-host` (hostroot.hpp):
// ld_search.cpp, host_planner.cpp, rootfs_writer.cpp, hostroot.cpp.
#pragma once

#include <unistd.h>

#include <climits>
#include <string>
#include <string_view>

#include "comet/base/sys.hpp"
#include "comet/pack/hostroot.hpp"

namespace comet::runtime::hostroot_detail {

inline std::string dirname_of(const std::string& p) {
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

inline std::string basename_of(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// True when P is DIR or below it (both clean absolute paths).
inline bool is_within(const std::string& p, const std::string& dir) {
  if (dir == "/") return true;
  return p == dir ||
         (p.size() > dir.size() && p.compare(0, dir.size(), dir) == 0 && p[dir.size()] == '/');
}

inline std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r')) a++;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r')) b--;
  return std::string(s.substr(a, b - a));
}

inline std::string absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return clean_path(p);
  char cwd[PATH_MAX];
  if (!::getcwd(cwd, sizeof cwd)) return clean_path(p);
  return clean_path(join_path(cwd, p));
}

inline const char* kind_name(RootfsEntry::Kind k) {
  switch (k) {
    case RootfsEntry::Kind::dir:
      return "dir";
    case RootfsEntry::Kind::file:
      return "file";
    case RootfsEntry::Kind::symlink:
      return "link";
  }
  return "?";
}

}  // namespace comet::runtime::hostroot_detail
