// The one place in capability/ that reads the filesystem: the pack
// directory's soyapack.yaml. Everything else takes text.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "comet/capability/manifest.hpp"

namespace comet::capability {

namespace {

constexpr std::size_t kMaxManifestBytes = 1 << 20;  // 1 MiB: a manifest, not a data file

}  // namespace

Result<Manifest> load_pack(const std::string& pack_dir) {
  try {
    const std::string display =
        (pack_dir.empty() || pack_dir == ".")
            ? std::string(kManifestFile)
            : pack_dir + (pack_dir.back() == '/' ? "" : "/") + std::string(kManifestFile);
    std::ifstream in(display, std::ios::binary);
    if (!in) return Error::sys(errno, "open " + display);
    std::ostringstream buf;
    buf << in.rdbuf();
    if (in.bad()) return Error::sys(errno, "read " + display);
    std::string text = buf.str();
    if (text.size() > kMaxManifestBytes) {
      return Error::msg(display + ": larger than 1 MiB; not a manifest");
    }
    return load_manifest(text, display);
  } catch (const std::exception& e) {
    return Error::msg("load " + pack_dir + ": " + e.what());
  }
}

}  // namespace comet::capability
