// The files of a pack run (pack_parts.hpp): the staged /workdir, the
// output collected with its holes and its limit, the run directory and the
// overlay and tmpfs mounts under it.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "comet/base/fd.hpp"
#include "comet/base/sys.hpp"
#include "comet/host/log.hpp"
#include "pack_parts.hpp"

namespace comet::runtime::pack_detail {
namespace {

// What collection charges for a directory or a file besides its data.
constexpr std::uint64_t kEntryCost = 4096;
// EFBIG marks "over the pack's output limit" for pack_run (a resource event).
Error over_limit(const std::string& at) {
  return Error(EFBIG, "the output is over its limit (resources.output): stopped at " + at);
}

// Copies one file keeping its holes (SEEK_DATA/SEEK_HOLE): a 1 GiB sparse
// file the agent made stays sparse on the host. budget: the data bytes that
// may still be written; past it the copy stops with an error.
Status copy_sparse(const std::string& from, const std::string& to, std::uint64_t& budget) {
  UniqueFd in(::open(from.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!in) return Error::sys(errno, "open " + from);
  struct stat st;
  if (::fstat(in.get(), &st) < 0) return Error::sys(errno, "stat " + from);
  UniqueFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!out) return Error::sys(errno, "create " + to);
  off_t pos = 0;
  std::vector<char> buf(1 << 16);
  while (pos < st.st_size) {
    off_t data = ::lseek(in.get(), pos, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // only a hole is left
    if (data < 0) return Error::sys(errno, "seek " + from);
    off_t hole = ::lseek(in.get(), data, SEEK_HOLE);
    if (hole < 0) return Error::sys(errno, "seek " + from);
    if (static_cast<std::uint64_t>(hole - data) > budget) return over_limit(from);
    budget -= static_cast<std::uint64_t>(hole - data);
    for (off_t off = data; off < hole;) {
      ssize_t n = ::pread(in.get(), buf.data(),
                          static_cast<std::size_t>(std::min<off_t>(hole - off, buf.size())), off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Error::sys(n < 0 ? errno : EIO, "read " + from);
      for (ssize_t w = 0; w < n;) {
        ssize_t k = ::pwrite(out.get(), buf.data() + w, static_cast<std::size_t>(n - w), off + w);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return Error::sys(errno, "write " + to);
        w += k;
      }
      off += n;
    }
    pos = hole;
  }
  if (::ftruncate(out.get(), st.st_size) < 0) return Error::sys(errno, "truncate " + to);
  return {};
}

}  // namespace

Status stage_workdir(const std::string& pack_dir, const std::string& dst,
                     const std::map<std::string, std::string>& host_dirs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dst, ec)) TRYV(remove_tree(dst));
  TRYV(mkdir_p(dst, 0755));
  for (auto it = fs::recursive_directory_iterator(pack_dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path() == fs::path(dst)) {  // the bundle written inside the pack
      it.disable_recursion_pending();
      continue;
    }
    const fs::path rel = it->path().lexically_relative(pack_dir);
    const fs::path to = fs::path(dst) / rel;
    auto st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_symlink(st)) {
      fs::copy_symlink(it->path(), to, ec);
    } else if (fs::is_directory(st)) {
      fs::create_directory(to, ec);
      if (!ec) fs::permissions(to, fs::perms(0755), ec);
    } else if (fs::is_regular_file(st)) {
      // holes kept: a sparse file in a pack is not made dense on the host
      std::uint64_t unlimited = UINT64_MAX;
      TRYV(copy_sparse(it->path().string(), to.string(), unlimited));
    }
    if (ec) return Error::sys(ec.value(), "copy " + it->path().string() + " into " + dst);
  }
  if (ec) return Error::sys(ec.value(), "read pack directory " + pack_dir);
  for (const auto& [sandbox_path, host] : host_dirs) {
    (void)host;
    if (sandbox_path.rfind("/workdir/", 0) != 0) continue;
    // The mount point, made component by component in the staged copy and
    // never through a symlink the pack shipped (red team: a pack's
    // `scratch -> /etc/x` and an fs.write entry /workdir/scratch/deep made
    // /etc/x/deep on the host, as root).
    std::string cur = dst;
    for (const std::string& part : split(sandbox_path.substr(9), '/')) {
      if (part.empty()) continue;
      cur = join_path(cur, part);
      struct stat ls;
      if (::lstat(cur.c_str(), &ls) == 0) {
        if (S_ISLNK(ls.st_mode) || !S_ISDIR(ls.st_mode))
          return Error::msg("the pack's " + sandbox_path + " passes through " +
                            cur.substr(dst.size()) +
                            ", which is not a directory of the pack (a symlink or a file): "
                            "an fs entry must name a directory path in the pack");
        continue;
      }
      if (::mkdir(cur.c_str(), 0755) < 0) return Error::sys(errno, "mkdir " + cur);
    }
  }
  return {};
}

Status collect_output(const std::string& src, const std::string& dst, std::uint64_t limit) {
  std::uint64_t budget = limit;
  namespace fs = std::filesystem;
  TRYV(mkdir_p(dst, 0755));
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(src, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path to = fs::path(dst) / it->path().lexically_relative(src);
    auto st = it->symlink_status(ec);
    if (ec) break;
    // Every directory and file takes at least a block where it lands: an
    // output of many empty ones is not free (red team: 60,000 empty
    // directories under a 1 MiB limit became 236 MB).
    if (budget < kEntryCost) return over_limit(it->path().string());
    budget -= kEntryCost;
    if (fs::is_directory(st)) {
      fs::create_directory(to, ec);
    } else if (fs::is_regular_file(st)) {
      Status c = copy_sparse(it->path().string(), to.string(), budget);
      if (!c.ok()) return c;
    } else {
      log::warn("pack run: output " + it->path().lexically_relative(src).string() +
                " is not a regular file or directory; not collected");
      continue;
    }
    if (ec) return Error::sys(ec.value(), "collect " + it->path().string() + " into " + dst);
  }
  if (ec) return Error::sys(ec.value(), "read the output tree " + src);
  return {};
}

bool plain_tree(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    auto st = it->symlink_status(ec);
    if (ec || !(fs::is_directory(st) || fs::is_regular_file(st))) return false;
  }
  return !ec;
}

RunDir::~RunDir() {
  if (!path.empty() && !keep) {
    unmount_under(path);
    auto st = remove_tree(path);
    if (!st.ok()) log::warn("pack run: " + st.error().what());
  }
}

RunMounts::~RunMounts() {
  for (auto it = points_.rbegin(); it != points_.rend(); ++it)
    (void)::umount2(it->c_str(), MNT_DETACH);
}

Status RunMounts::tmpfs(const std::string& dir, std::uint64_t size, uint32_t uid, uint32_t gid) {
  if (::mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST) return Error::sys(errno, "create " + dir);
  // Inodes too: one per 4 KiB of the size (at least 1024), as each file
  // or directory the pack makes costs a block where it is collected.
  std::string data = "size=" + std::to_string(size) +
                     ",nr_inodes=" + std::to_string(std::max<std::uint64_t>(1024, size / 4096)) +
                     ",mode=0755,uid=" + std::to_string(uid) + ",gid=" + std::to_string(gid);
  if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, data.c_str()) < 0)
    return Error::sys(errno, "mount a tmpfs on " + dir);
  points_.push_back(dir);
  return {};
}

Status RunMounts::view(const std::string& dir, const std::string& lower, const std::string& scratch,
                       bool upper) {
  if (::mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST) return Error::sys(errno, "create " + dir);
  UniqueFd l(::open(lower.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!l) return Error::sys(errno, "open " + lower);
  std::string data;
  UniqueFd e, u, w;
  if (upper) {
    TRYV(tmpfs(scratch, 16u << 20, 0, 0));
    for (const char* d : {"/u", "/w"})
      if (::mkdir((scratch + d).c_str(), 0755) < 0)
        return Error::sys(errno, "mkdir " + scratch + d);
    u.reset(::open((scratch + "/u").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    w.reset(::open((scratch + "/w").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!u || !w) return Error::sys(errno, "open " + scratch);
    data = "lowerdir=" + fd_name(l.get()) + ",upperdir=" + fd_name(u.get()) +
           ",workdir=" + fd_name(w.get());
  } else {
    if (::mkdir(scratch.c_str(), 0500) < 0 && errno != EEXIST)
      return Error::sys(errno, "create " + scratch);
    e.reset(::open(scratch.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!e) return Error::sys(errno, "open " + scratch);
    data = "lowerdir=" + fd_name(l.get()) + ":" + fd_name(e.get());
  }
  unsigned long flags = MS_NOSUID | MS_NODEV | (upper ? 0 : MS_RDONLY);
  if (::mount("overlay", dir.c_str(), "overlay", flags, data.c_str()) < 0)
    return Error::sys(errno, "mount an overlay view of " + lower + " on " + dir +
                                 " (the pack must not see host paths)");
  points_.push_back(dir);
  return {};
}

}  // namespace comet::runtime::pack_detail
