#include "comet/host/seccomp_cache.hpp"

#include <linux/filter.h>

#include <cstdio>
#include <cstring>

#include <seccomp.h>

#include "comet/base/sys.hpp"
#include "comet/host/sha256.hpp"
#include "comet/host/user_dirs.hpp"
#include "comet/seccomp/bpf_eval.hpp"

namespace comet::runtime {
namespace {

// The built-in filters are the same for every container, and libseccomp
// takes ~20 ms to build the Docker-like one: the finished BPF is cached,
// keyed by a SHA-256 of everything that decides it (the profile, the
// options, libseccomp's version, the architecture, this runtime's version).
// The cache is root-only (0700); an entry that does not read back whole and
// pass check_filter() is compiled again. Any cache error just compiles.
constexpr const char* kSeccompCache = "/run/comet-runtime/cache/seccomp";

// An ordinary user's cache is its own, in its runtime dir (user_dirs.hpp):
// the root-only one cannot be read, and compiling every time costs ~20 ms.
std::string cache_dir() {
  return rootless() ? user_dirs().runtime + "/cache/seccomp" : std::string(kSeccompCache);
}

std::string canonical(const oci::Seccomp& p, const seccomp::CompileOptions& o) {
  const scmp_version* v = seccomp_version();
  std::string s = std::string("comet ") + COMET_VERSION + " libseccomp " +
                  std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                  std::to_string(v->micro) + " arch " + std::to_string(seccomp_arch_native()) +
                  " opt " + std::to_string(static_cast<int>(o.optimize)) + " stub " +
                  std::to_string(o.enosys_stub) + "\n" + p.default_action + " " +
                  std::to_string(p.default_errno_ret.value_or(~0U)) + " " + p.listener_path + " " +
                  p.listener_metadata + "\n";
  for (const auto& a : p.architectures) s += a + " ";
  for (const auto& f : p.flags) s += f + " ";
  for (const auto& sc : p.syscalls) {
    s += "\n" + sc.action + " " + std::to_string(sc.errno_ret.value_or(~0U)) + ":";
    for (const auto& n : sc.names) s += " " + n;
    for (const auto& a : sc.args)
      s += " [" + std::to_string(a.index) + " " + a.op + " " + std::to_string(a.value) + " " +
           std::to_string(a.value_two) + "]";
  }
  return s;
}

}  // namespace

Result<seccomp::Program> compile_cached(const oci::Seccomp& profile,
                                        const seccomp::CompileOptions& o) {
  std::string key = sha256_hex(canonical(profile, o));
  const std::string dir = cache_dir();
  std::string file = key.empty() ? "" : dir + "/" + key;
  if (!file.empty()) {
    if (auto text = read_file(file); text.ok()) {
      // "<flags> <needs_listener> <count> <listener_path>\n" + BPF
      const std::string& t = *text;
      size_t nl = t.find('\n');
      unsigned flags = 0, listener = 0;
      size_t count = 0;
      char path[256] = "";
      if (nl != std::string::npos &&
          std::sscanf(t.substr(0, nl).c_str(), "%u %u %zu %255s", &flags, &listener, &count,
                      path) >= 3 &&
          t.size() - nl - 1 == count * sizeof(sock_filter)) {
        seccomp::Program prog;
        prog.filter.resize(count);
        std::memcpy(prog.filter.data(), t.data() + nl + 1, count * sizeof(sock_filter));
        prog.flags = flags;
        prog.needs_listener = listener != 0;
        prog.listener_path = std::string(path) == "-" ? "" : path;
        prog.listener_metadata = profile.listener_metadata;
        if (seccomp::check_filter(prog.filter).empty() &&
            prog.listener_path == profile.listener_path)
          return prog;
      }
    }
  }
  TRY(seccomp::Program prog, seccomp::compile(profile, o));
  if (!file.empty() && prog.listener_path.find_first_of(" \n") == std::string::npos &&
      prog.listener_path.size() < 256 && mkdir_p(dir, 0700).ok()) {
    std::string out = std::to_string(prog.flags) + " " + std::to_string(prog.needs_listener) + " " +
                      std::to_string(prog.filter.size()) + " " +
                      (prog.listener_path.empty() ? "-" : prog.listener_path) + "\n";
    out.append(reinterpret_cast<const char*>(prog.filter.data()),
               prog.filter.size() * sizeof(sock_filter));
    (void)write_file_atomic(file, out, 0600, Sync::none);  // a /run cache, checked on read
  }
  return prog;
}

}  // namespace comet::runtime
