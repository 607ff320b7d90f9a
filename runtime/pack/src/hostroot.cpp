// `comet-runtime rootfs --from-host` and the cached default rootfs of
// `pack run`. See hostroot.hpp for the layers: the ELF reader
// (host/elf.hpp), ld.so's search order as a pure function (ld_search.cpp),
// the Python rules (python_stdlib.cpp), a planner that reads the host and
// returns the rootfs as data (host_planner.cpp), and a writer that makes it
// in a temp dir and renames it (rootfs_writer.cpp). Here: the plan's key and
// manifest, and the cache of default rootfses.
#include "comet/pack/hostroot.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <functional>
#include <memory>

#include "comet/base/fd.hpp"
#include "comet/base/sys.hpp"
#include "comet/host/sha256.hpp"

#include "hostroot_paths.hpp"

namespace comet::runtime {

using namespace hostroot_detail;

namespace {

// Every builder holds CACHE_ROOT/.lock, so a temp dir seen while holding it
// was left by a build that was killed.
void remove_stale_temps(const std::string& cache_root) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(cache_root.c_str()), ::closedir);
  if (!d) return;
  std::vector<std::string> stale;
  while (struct dirent* e = ::readdir(d.get())) {
    std::string_view nm = e->d_name;
    if (nm.size() > 1 && nm[0] == '.' && nm.find(".tmp-") != std::string_view::npos)
      stale.emplace_back(nm);
  }
  for (const auto& nm : stale) (void)remove_tree(join_path(cache_root, nm));
}

}  // namespace

namespace {

// In every key and index: change it when what a plan makes changes (the
// skeleton, the skip list), so that no cached rootfs of the old shape is used.
constexpr const char* kFormat = "comet-runtime hostroot 1";

// SHA-256 over PARTS, each followed by a NUL (so ("ab","c") != ("a","bc")).
Result<std::string> sha256_hex(
    const std::function<void(const std::function<void(std::string_view)>&)>& parts) {
  Sha256 h;
  parts([&](std::string_view s) {
    h.update(s);
    h.update("\0", 1);
  });
  return h.hex();
}

char type_char(mode_t type) {
  switch (type) {
    case S_IFDIR:
      return 'd';
    case S_IFREG:
      return 'f';
    case S_IFLNK:
      return 'l';
    default:
      return 'o';
  }
}

std::string manifest_line(char kind, ino_t ino, off_t size, int64_t mtime_ns,
                          const std::string& path) {
  return std::string(1, kind) + " " + std::to_string(ino) + " " + std::to_string(size) + " " +
         std::to_string(mtime_ns) + " " + path + "\n";
}

}  // namespace

Result<std::string> plan_key(const RootfsPlan& plan) {
  return sha256_hex([&plan](const std::function<void(std::string_view)>& feed) {
    feed(kFormat);
    for (const auto& [path, e] : plan) {
      feed(path);
      feed(kind_name(e.kind));
      feed(std::to_string(e.mode));
      feed(e.target);
      feed(e.source);
      feed(e.content);
      if (!e.source.empty() || e.kind == RootfsEntry::Kind::symlink) {
        feed(std::to_string(e.size));
        feed(std::to_string(e.mtime_ns));
        feed(std::to_string(e.ino));
      }
    }
  });
}

std::string plan_manifest(const RootfsPlan& plan, const HostFacts& looked_at) {
  std::string out;
  for (const auto& [path, e] : plan) {
    if (e.ino == 0) continue;  // the skeleton: not from the host
    if (path.find('\n') != std::string::npos) return "";
    char kind = e.kind == RootfsEntry::Kind::dir    ? 'd'
                : e.kind == RootfsEntry::Kind::file ? 'f'
                                                    : 'l';
    out += manifest_line(kind, e.ino, e.size, e.mtime_ns, path);
  }
  for (const auto& [path, f] : looked_at) {
    if (path.find('\n') != std::string::npos) return "";
    out += manifest_line(f.exists ? type_char(f.type) : '-', f.ino, f.size, f.mtime_ns, path);
  }
  return out;
}

bool manifest_holds(std::string_view manifest) {
  if (manifest.empty()) return false;
  while (!manifest.empty()) {
    size_t nl = manifest.find('\n');
    if (nl == std::string_view::npos) return false;
    std::string line(manifest.substr(0, nl));
    manifest.remove_prefix(nl + 1);
    char kind = 0;
    unsigned long long ino = 0;
    long long size = 0, mtime = 0;
    int used = 0;
    if (std::sscanf(line.c_str(), "%c %llu %lld %lld %n", &kind, &ino, &size, &mtime, &used) != 4 ||
        used <= 0 || static_cast<size_t>(used) >= line.size())
      return false;
    std::string path = line.substr(static_cast<size_t>(used));
    struct stat st;
    if (::lstat(path.c_str(), &st) < 0) {
      if (errno == ENOENT && kind == '-') continue;
      return false;
    }
    int64_t now = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (kind != type_char(st.st_mode & S_IFMT) || st.st_ino != ino || st.st_size != size ||
        now != mtime)
      return false;
  }
  return true;
}

Result<std::string> default_rootfs(const std::string& interpreter, const std::string& cache_root) {
  if (interpreter.empty() || interpreter[0] != '/')
    return Error::msg("default rootfs: the interpreter must be an absolute host path, got \"" +
                      interpreter + "\"");
  struct stat st;
  if (::stat(interpreter.c_str(), &st) < 0) {
    if (errno == ENOENT)
      return Error::msg("default rootfs: the interpreter " + interpreter +
                        " does not exist on the host");
    return Error::sys(errno, "default rootfs: stat " + interpreter);
  }
  // The index: the last key for this interpreter and what its plan was made
  // from. While all of that is unchanged, planning again would give the
  // same key: skip it (and the lock; a cached rootfs never changes).
  TRY(std::string ikey, sha256_hex([&interpreter](const std::function<void(std::string_view)>& f) {
        f(interpreter);
      }));
  std::string index = join_path(cache_root, "index/" + ikey);
  if (auto text = read_file(index); text.ok()) {
    std::string_view t = *text;
    const std::string kHead = std::string(kFormat) + " index\n";
    if (t.substr(0, kHead.size()) == kHead && t.size() > kHead.size() + 65 &&
        t[kHead.size() + 64] == '\n') {
      std::string dir = join_path(cache_root, std::string(t.substr(kHead.size(), 64)));
      if (::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
          manifest_holds(t.substr(kHead.size() + 65)))
        return dir;
    }
  }

  HostRootfsOptions o;
  o.binaries = {interpreter};
  HostFacts facts;
  TRY(RootfsPlan plan, plan_host_rootfs(o, &facts));
  TRY(std::string key, plan_key(plan));
  TRYV(mkdir_p(join_path(cache_root, "index"), 0755));
  std::string lock_path = join_path(cache_root, ".lock");
  UniqueFd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock) return Error::sys(errno, "default rootfs: open " + lock_path);
  while (::flock(lock.get(), LOCK_EX) < 0)
    if (errno != EINTR) return Error::sys(errno, "default rootfs: flock " + lock_path);
  std::string dir = join_path(cache_root, key);
  if (::lstat(dir.c_str(), &st) < 0 || !S_ISDIR(st.st_mode)) {
    remove_stale_temps(cache_root);
    Status w = write_rootfs(plan, dir, false, false);
    if (!w.ok()) return std::move(w).error().wrap("default rootfs for " + interpreter);
  }
  std::string manifest = plan_manifest(plan, facts);
  if (!manifest.empty()) {
    // Best effort: without an index the next call plans again.
    std::string text = std::string(kFormat) + " index\n" + key + "\n" + manifest;
    (void)write_file_atomic(index, text, 0644);
  }
  return dir;
}

}  // namespace comet::runtime
