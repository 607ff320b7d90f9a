// The one place in capability/ that reads the filesystem: a pack's
// soyapack.yaml, never more than kMaxManifestBytes of it. Everything else
// takes text.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "comet/base/fd.hpp"
#include "comet/base/sys.hpp"
#include "comet/capability/manifest.hpp"

namespace comet::capability {

namespace {

std::string too_large(const std::string& file) {
  return file + ": larger than 1 MiB; not a manifest";
}

// FILE's bytes, reading at most kMaxManifestBytes + 1 of them: a FIFO or
// /dev/zero given as a manifest ends at the cap, not at memory's end.
Result<std::string> read_capped(const std::string& file) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return Error::sys(errno, "open " + file);
  std::string text;
  char buf[65536];
  while (text.size() <= kMaxManifestBytes) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::sys(errno, "read " + file);
    if (n == 0) return text;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return Error::msg(too_large(file));
}

std::string manifest_in(const std::string& dir) {
  if (dir.empty() || dir == ".") return std::string(kManifestFile);
  return dir + (dir.back() == '/' ? "" : "/") + std::string(kManifestFile);
}

}  // namespace

Result<ManifestFile> read_manifest_file(const std::string& path) {
  try {
    struct stat st {};
    const bool dir = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    ManifestFile out;
    out.file = dir ? join_path(path, kManifestFile) : path;
    TRY(out.text, read_capped(out.file));
    return out;
  } catch (const std::exception& e) {
    return Error::msg("load " + path + ": " + e.what());
  }
}

Result<Manifest> load_pack(const std::string& pack_dir) {
  try {
    const std::string file = manifest_in(pack_dir);
    TRY(const std::string text, read_capped(file));
    return load_manifest(text, file);
  } catch (const std::exception& e) {
    return Error::msg("load " + pack_dir + ": " + e.what());
  }
}

}  // namespace comet::capability
