// The path a recorded fs call named (fswatch.hpp): made absolute from the
// task's fds and cwd in /proc, and resolved inside the container's root
// with openat2(RESOLVE_BENEATH) one component at a time.

#include "comet/reporting/fswatch.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "comet/base/openat2.hpp"
#include "comet/base/sys.hpp"

namespace comet::runtime {

FsPath fd_in_task(int tid, std::int64_t dfd) {
  FsPath out;
  const int fd = static_cast<int>(dfd);
  std::string link = "/proc/" + std::to_string(tid) + "/fd/" + std::to_string(fd);
  char buf[4096];
  ssize_t n = fd >= 0 ? ::readlink(link.c_str(), buf, sizeof buf - 1) : -1;
  if (n > 0 && buf[0] == '/') {
    out.path.assign(buf, static_cast<std::size_t>(n));
    // A removed file: where it was is still what the call wrote to.
    constexpr std::string_view kDeleted = " (deleted)";
    if (out.path.size() > kDeleted.size() &&
        out.path.compare(out.path.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0)
      out.path.resize(out.path.size() - kDeleted.size());
    return out;
  }
  // Closed since, or not a file (a pipe, a socket: never a path of the
  // sandbox's mounts); unknown, so it fails closed.
  out.path = "fd " + std::to_string(fd) + (n > 0 ? " (" + std::string(buf, n) + ")" : "");
  out.known = false;
  return out;
}

FsPath absolute_in_task(int tid, std::int64_t dfd, const std::string& path, const FsCwd& at_call,
                        const std::string& cwd) {
  FsPath out;
  if (path.empty() || path.front() == '/') {
    out.path = path;
    return out;
  }
  const int fd = static_cast<int>(dfd);
  std::string base;
  if (fd == AT_FDCWD && !at_call.moved) {
    base = cwd;
  } else {
    std::string link = "/proc/" + std::to_string(tid) +
                       (fd == AT_FDCWD ? std::string("/cwd") : "/fd/" + std::to_string(fd));
    char buf[4096];
    ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
    struct stat st;
    if (n > 0 && buf[0] == '/' && ::stat(link.c_str(), &st) == 0) {
      // The cwd the call had, not one the task moved to since.
      const bool same =
          fd != AT_FDCWD || (st.st_ino == at_call.ino && major(st.st_dev) == (at_call.dev >> 20) &&
                             minor(st.st_dev) == (at_call.dev & 0xfffff));
      if (same) base.assign(buf, static_cast<std::size_t>(n));
    }
  }
  if (base.empty()) {
    out.path = path;
    out.known = false;
    return out;
  }
  out.path = base + "/" + path;  // not cleaned: ".." after a symlink is the kernel's
  return out;
}

namespace {

std::vector<std::string> components(const std::string& p) {
  return path_components(p);
}

std::string joined(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& c : parts) s += "/" + c;
  return s.empty() ? "/" : s;
}

// How many components of /proc/PID/ name a magic link: 1 for root, cwd
// and exe, 2 for fd/N and map_files/RANGE; 0 for anything else.
std::size_t magic_link(const std::string& c) {
  if (c == "root" || c == "cwd" || c == "exe") return 1;
  if (c == "fd" || c == "map_files") return 2;
  return 0;
}

}  // namespace

FsPath resolve_in_root(int rootfd, const FsPath& in, bool follow_last) {
  FsPath out = in;
  if (!in.known || in.path.empty() || in.path.front() != '/') return out;
  // "l/" is the directory l leads to: the kernel follows it for every call
  if (in.path.back() == '/') follow_last = true;
  std::vector<std::string> todo = components(in.path);
  std::reverse(todo.begin(), todo.end());  // a stack: back() is the next component
  std::vector<std::string> done;
  std::vector<UniqueFd> dirs;  // dirs[i]: the directory done[0..i]
  int links = 0;
  // done, then what is left as written; a ".." there pops only what it added
  auto with_rest = [&] {
    std::vector<std::string> all = done;
    const std::size_t floor = all.size();
    for (auto it = todo.rbegin(); it != todo.rend(); ++it) {
      if (*it == "." || it->empty()) continue;
      if (*it == "..") {
        if (all.size() > floor) all.pop_back();
        continue;
      }
      all.push_back(*it);
    }
    return joined(all);
  };
  while (!todo.empty()) {
    std::string c = todo.back();
    todo.pop_back();
    if (c == ".") continue;
    if (c == "..") {
      if (!done.empty()) {
        out.passed.push_back(joined(done));
        done.pop_back();
        dirs.pop_back();
      }
      continue;
    }
    if (!done.empty() && done.front() == "proc") {
      // The container's procfs names the container's pids, not ours: read
      // the rest as written. /proc/PID/{root,cwd,fd/N,...}/more leads
      // anywhere (/proc/self/root/home/x is /home/x).
      todo.push_back(c);
      for (std::size_t i = 0; i < todo.size(); i++) {  // todo[0] is the last component
        const std::size_t m = magic_link(todo[i]);
        if (m && i >= m) out.opaque = true;  // components follow the link
      }
      // (no floor here: procfs directories all exist, the kernel's ".."
      // climbs them: /proc/self/../../home/x is /home/x)
      std::vector<std::string> all = done;
      for (auto it = todo.rbegin(); it != todo.rend(); ++it) all.push_back(*it);
      out.resolved = clean_path(joined(all));
      return out;
    }
    const int at = dirs.empty() ? rootfd : dirs.back().get();
    const bool last = todo.empty();
    char buf[4096];
    ssize_t n = ::readlinkat(at, c.c_str(), buf, sizeof buf - 1);
    if (n >= 0 && (!last || follow_last)) {
      if (++links > 40) {
        out.opaque = true;
        todo.push_back(c);
        out.resolved = with_rest();
        return out;
      }
      std::string target(buf, static_cast<std::size_t>(n));
      if (!target.empty() && target.front() == '/') {
        done.clear();
        dirs.clear();
      }
      auto t = components(target);
      for (auto it = t.rbegin(); it != t.rend(); ++it) todo.push_back(*it);
      continue;
    }
    done.push_back(c);
    if (n >= 0) break;  // the last component, a symlink the call does not follow
    struct open_how how = {};
    how.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    UniqueFd d(sys_openat2(at, c.c_str(), how));
    if (!d) break;  // missing, or not a directory: the kernel stopped here
    dirs.push_back(std::move(d));
  }
  out.resolved = with_rest();
  return out;
}

}  // namespace comet::runtime
