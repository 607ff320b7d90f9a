// The Python rules of `rootfs --from-host` (hostroot.hpp, "Python"): which
// binaries bring their standard library, and what of it is left out.
#include "comet/pack/hostroot.hpp"

#include <string_view>

#include "hostroot_paths.hpp"

namespace comet::runtime {

using namespace hostroot_detail;

bool is_python_name(std::string_view f) {
  if (f.substr(0, 6) != "python") return false;
  f.remove_prefix(6);
  auto digits = [&f]() {
    size_t n = 0;
    while (n < f.size() && f[n] >= '0' && f[n] <= '9') n++;
    f.remove_prefix(n);
    return n > 0;
  };
  if (!digits() || f.empty() || f[0] != '.') return false;
  f.remove_prefix(1);
  return digits() && f.empty();
}

bool python_stdlib_skipped(std::string_view rel) {
  std::string_view first = rel.substr(0, rel.find('/'));
  static constexpr std::string_view kTop[] = {
      "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "dist-packages", "site-packages"};
  for (auto t : kTop)
    if (first == t) return true;
  // config-3.11-x86_64-linux-gnu: libpython3.11.a and the Makefile, for
  // building C extensions (25 MB on Debian 12).
  if (first.size() > 7 && first.substr(0, 7) == "config-" && first[7] >= '0' && first[7] <= '9')
    return true;
  std::string_view l2t = "lib2to3/tests";
  return rel == l2t ||
         (rel.size() > l2t.size() && rel.substr(0, l2t.size()) == l2t && rel[l2t.size()] == '/');
}

}  // namespace comet::runtime
