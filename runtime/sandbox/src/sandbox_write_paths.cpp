// Write paths without symlinks (sandbox_write_paths.hpp). Red team round
// 12: a write path was resolved by realpath(3) and its target bound
// read-write, so `build -> /host/dir` left by an earlier run (or
// `~/.comet/sessions -> /etc`, left by a default run for a later strict
// one) made the link's target writable.
#include "sandbox_write_paths.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <deque>

#include "comet/base/fd.hpp"
#include "comet/base/sys.hpp"

namespace comet::runtime::sandbox_parts {

namespace {

constexpr int kMaxLinks = 40;  // as the kernel's MAXSYMLINKS

bool under(const std::string& p, const std::string& root) {
  if (root == "/") return true;
  return p == root ||
         (p.size() > root.size() && p.compare(0, root.size(), root) == 0 && p[root.size()] == '/');
}

std::deque<std::string> components(const std::string& p) {
  std::deque<std::string> out;
  std::size_t i = 0;
  while (i < p.size()) {
    std::size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    if (j > i) out.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::string parent_of(const std::string& p) {
  const auto k = p.rfind('/');
  return k == 0 || k == std::string::npos ? "/" : p.substr(0, k);
}

// A link only root can have made, where no sandboxed command writes.
bool trusted_link(const struct stat& link, const struct stat& dir, const std::string& at,
                  const std::vector<std::string>& keep_out) {
  if (link.st_uid != 0 || dir.st_uid != 0 || (dir.st_mode & 022) != 0) return false;
  for (const std::string& k : keep_out)
    if (under(at, k)) return false;
  return true;
}

Status walk(const std::string& path, const std::vector<std::string>& keep_out) {
  UniqueFd dir(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return Error::sys(errno, "sandbox: open /");
  std::string at = "/";  // what `dir` is, symlink-free
  std::deque<std::string> rest = components(path);
  int links = 0;
  while (!rest.empty()) {
    const std::string c = rest.front();
    rest.pop_front();
    if (c == ".") continue;
    if (c == "..") {
      at = parent_of(at);
      dir.reset(::open(at.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
      if (!dir) return Error::sys(errno, "sandbox: write path " + path + ": open " + at);
      continue;
    }
    const std::string next = at == "/" ? "/" + c : at + "/" + c;
    UniqueFd fd(::openat(dir.get(), c.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
      if (errno == ENOENT || errno == ENOTDIR) return {};  // missing: not mounted
      return Error::sys(errno, "sandbox: write path " + path + ": open " + next);
    }
    struct stat st, dst;
    if (::fstat(fd.get(), &st) < 0 || ::fstat(dir.get(), &dst) < 0)
      return Error::sys(errno, "sandbox: write path " + path + ": fstat " + next);
    if (!S_ISLNK(st.st_mode)) {
      at = next;
      dir = std::move(fd);
      continue;
    }
    char buf[PATH_MAX];
    const ssize_t n = ::readlinkat(fd.get(), "", buf, sizeof buf - 1);
    if (n < 0) return Error::sys(errno, "sandbox: write path " + path + ": readlink " + next);
    const std::string target(buf, static_cast<std::size_t>(n));
    if (!trusted_link(st, dst, next, keep_out))
      return Error::msg("sandbox: write path " + path + " goes through the symlink " + next +
                        " (-> " + target +
                        "), which a sandboxed command or another user could have made: "
                        "refused (a write path is bound where it is, not where a link leads; "
                        "remove the link or name the real directory)");
    if (++links > kMaxLinks)
      return Error::sys(ELOOP, "sandbox: write path " + path + ": too many symlinks");
    std::deque<std::string> t = components(target);
    rest.insert(rest.begin(), t.begin(), t.end());
    if (!target.empty() && target[0] == '/') {
      at.resize(1);  // "/" (an assignment of "/" trips g++ 12's -Wrestrict)
      at[0] = '/';
      dir.reset(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!dir) return Error::sys(errno, "sandbox: open /");
    }
  }
  return {};
}

}  // namespace

Status write_paths_follow_no_links(const std::vector<std::string>& writes,
                                   const std::vector<std::string>& keep_out) {
  // Each tree as named and as resolved: a link at /data/home/u/x is in the
  // home /home/u when /home -> /data/home.
  std::vector<std::string> out;
  for (const std::string& k : keep_out) {
    if (k.empty() || k[0] != '/' || k == "/") continue;
    out.push_back(clean_path(k));
    char buf[PATH_MAX];
    if (::realpath(k.c_str(), buf)) out.emplace_back(buf);
  }
  for (const std::string& w : writes) {
    if (w.empty() || w[0] != '/' || w == "/") continue;
    TRYV(walk(clean_path(w), out));
  }
  return {};
}

}  // namespace comet::runtime::sandbox_parts
