// The capability compiler: SoyaPack manifest -> OCI runtime config.
//
// compile() is a pure function of its arguments (no syscalls, no clock, no
// environment), so the same manifest and inputs always give the same
// config; tests pin it with golden files.
//
// The config it produces (see docs/ and the goldens in
// tests/data/capability/golden/):
//   root            the image rootfs, read-only
//   /workdir        the pack dir: bind, ro (rbind ro nosuid nodev)
//   fs.read  P      bind of the per-run host dir, ro   (bind ro nosuid nodev noexec)
//   fs.write P      bind of the per-run host dir, rw   (bind rw nosuid nodev noexec)
//   /tmp            tmpfs, only when fs.write lists /tmp and no host dir is given
//   /proc           proc;  /dev tmpfs (the runtime creates null zero full random
//                   urandom tty in it), /dev/pts devpts, /dev/shm tmpfs
//   namespaces      pid network ipc uts mount cgroup (new ones, no joins)
//   process         [interpreter, entrypoint, args...], cwd /workdir, env PATH +
//                   runtime.env, no capabilities in any set, noNewPrivileges,
//                   a non-root uid/gid by default
//   masked/readonly runc's default lists
//   linux.seccomp   left absent: the runtime attaches its own filter, named by
//                   the annotation org.soyaos.comet.seccomp-profile
//   annotations     org.soyaos.comet.capabilities (the capabilities block as
//                   JSON, for the runtime's egress/fs enforcement and events),
//                   org.soyaos.comet.pack = name@version,
//                   org.soyaos.comet.profile (when the manifest names one)
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/capability/manifest.hpp"
#include "comet/oci/spec.hpp"

namespace comet::capability {

inline constexpr std::string_view kAnnotationCapabilities = "org.soyaos.comet.capabilities";
inline constexpr std::string_view kAnnotationPack = "org.soyaos.comet.pack";
inline constexpr std::string_view kAnnotationProfile = "org.soyaos.comet.profile";
inline constexpr std::string_view kAnnotationSeccomp = "org.soyaos.comet.seccomp-profile";
inline constexpr std::string_view kSeccompPackBaseline = "pack-baseline";
inline constexpr std::string_view kDefaultPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
inline constexpr uint32_t kNobody = 65534;

struct CompileInputs {
  std::string rootfs;    // host path of the image rootfs (absolute)
  std::string pack_dir;  // host path of the pack (absolute), bound at /workdir
  // Per-run host directories, keyed by the fs.read / fs.write entry they
  // back (sandbox path, as written in the manifest): pack run --input DIR
  // gives {"/workdir/inputs", DIR}, --output DIR gives {"/workdir/out", DIR}.
  // Every fs.write entry needs one (except /tmp, which gets a tmpfs); an
  // fs.read entry without one is served from the pack or the rootfs; a key
  // the manifest does not declare is an error.
  std::map<std::string, std::string> host_dirs;
  std::optional<std::vector<std::string>> args;  // replaces runtime.args
  uint32_t uid = kNobody;
  uint32_t gid = kNobody;
};

// Validates the manifest (validate()) and the inputs, then builds the
// config. Errors name the manifest entry or input at fault.
Result<oci::Spec> compile(const Manifest& m, const CompileInputs& in);

// runc's default masked and read-only paths (`runc spec`).
const std::vector<std::string>& default_masked_paths();
const std::vector<std::string>& default_readonly_paths();

}  // namespace comet::capability
