#include "comet/base/sys.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <algorithm>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace comet {

Result<std::string> read_file_at(int dirfd, const std::string& name) {
  int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::sys(errno, "open " + name);
  UniqueFd owner(fd);
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::sys(errno, "read " + name);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Result<std::string> read_file(const std::string& path) {
  return read_file_at(AT_FDCWD, path);
}

bool write_fully(int fd, std::string_view data) noexcept {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

static Status write_all(int fd, std::string_view data, const std::string& what) {
  if (!write_fully(fd, data)) return Error::sys(errno, "write " + what);
  return ok();
}

Status write_file(const std::string& path, std::string_view data, int flags) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | flags, 0644);
  if (fd < 0) return Error::sys(errno, "open " + path);
  UniqueFd owner(fd);
  return write_all(fd, data, path);
}

Status write_file_atomic(const std::string& path, std::string_view data, mode_t mode, Sync sync) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Error::sys(errno, "open " + tmp);
  UniqueFd owner(fd);
  Status st = write_all(fd, data, tmp);
  if (st.ok() && sync == Sync::fsync && ::fsync(fd) < 0 && errno != EINVAL)
    st = Error::sys(errno, "fsync " + tmp);
  owner.reset();
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) < 0) st = Error::sys(errno, "rename " + tmp);
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

Result<UniqueFd> open_fd(const std::string& path, int flags, mode_t mode) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) return Error::sys(errno, "open " + path);
  return UniqueFd(fd);
}

Status mkdir_p(const std::string& path, mode_t mode) {
  if (path.empty()) return ok();
  std::string cur;
  for (const auto& part : split(path, '/')) {
    if (part.empty()) continue;
    cur += "/" + part;
    if (::mkdir(cur.c_str(), mode) < 0 && errno != EEXIST) return Error::sys(errno, "mkdir " + cur);
  }
  return ok();
}

static int remove_at(int dirfd, const char* name, dev_t dev) {
  struct stat st;
  if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return errno == ENOENT ? 0 : errno;
  if (!S_ISDIR(st.st_mode)) return ::unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? errno : 0;
  if (st.st_dev != dev) return EBUSY;  // a mount point: never cross it
  int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return errno;
  }
  int err = 0;
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
    int r = remove_at(fd, e->d_name, dev);
    if (r && !err) err = r;
  }
  ::closedir(d);
  if (err) return err;
  return ::unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? errno : 0;
}

Status remove_tree(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) < 0)
    return errno == ENOENT ? ok() : Error::sys(errno, "stat " + path);
  int r = remove_at(AT_FDCWD, path.c_str(), st.st_dev);
  if (r) return Error::sys(r, "remove " + path);
  return ok();
}

std::string visible_controls(std::string_view in, bool caret, std::string* carry) {
  std::string out;
  out.reserve(in.size());
  auto hex = [&](unsigned char b) {
    static const char* d = "0123456789abcdef";
    out += "\\x";
    out += d[b >> 4];
    out += d[b & 15];
  };
  auto control = [&](unsigned char b) {
    if (!caret) return hex(b);
    out += '^';
    out += b < 0x20 ? static_cast<char>(b + '@') : '?';
  };
  const std::size_t n = in.size();
  for (std::size_t i = 0; i < n; i++) {
    const auto c = static_cast<unsigned char>(in[i]);
    if (c < 0x20) {
      if (c == '\t' || c == '\n' || (caret && c == '\r'))
        out += static_cast<char>(c);
      else
        control(c);
      continue;
    }
    if (c == 0x7f) {
      control(c);
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      continue;
    }
    const std::size_t need = c >= 0xc2 && c <= 0xdf   ? 1
                             : c >= 0xe0 && c <= 0xef ? 2
                             : c >= 0xf0 && c <= 0xf4 ? 3
                                                      : 0;
    if (need == 0) {  // a stray continuation byte (a bare C1 among them) or no lead at all
      if (c < 0xa0)
        control(c);
      else
        hex(c);
      continue;
    }
    if (i + need >= n) {
      // incomplete at the end: for the next chunk, or shown
      bool prefix_ok = true;
      for (std::size_t k = i + 1; k < n; k++)
        prefix_ok = prefix_ok && (static_cast<unsigned char>(in[k]) & 0xc0) == 0x80;
      if (carry && prefix_ok) {
        *carry = std::string(in.substr(i));
        return out;
      }
      hex(c);
      continue;
    }
    bool ok = true;
    for (std::size_t k = 1; k <= need; k++)
      ok = ok && (static_cast<unsigned char>(in[i + k]) & 0xc0) == 0x80;
    // Well-formed UTF-8 only (RFC 3629): no overlong form, no surrogate,
    // nothing past U+10FFFF; a terminal that reads bytes would see the 0x9B.
    const auto c2 = static_cast<unsigned char>(in[i + 1]);
    if ((c == 0xe0 && c2 < 0xa0) || (c == 0xed && c2 >= 0xa0) || (c == 0xf0 && c2 < 0x90) ||
        (c == 0xf4 && c2 >= 0x90))
      ok = false;
    if (!ok) {
      hex(c);
      continue;
    }
    if (c == 0xc2 && static_cast<unsigned char>(in[i + 1]) < 0xa0) {  // U+0080..U+009F: C1
      control(static_cast<unsigned char>(in[i + 1]));
      i += 1;
      continue;
    }
    out.append(in.substr(i, need + 1));
    i += need;
  }
  if (carry) carry->clear();
  return out;
}

void unmount_under(const std::string& path) {
  auto text = read_file("/proc/self/mountinfo");
  if (!text.ok()) return;
  std::string base = path;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  std::vector<std::string> points;
  std::size_t pos = 0;
  while (pos < text->size()) {
    std::size_t e = text->find('\n', pos);
    std::string line = text->substr(pos, e == std::string::npos ? std::string::npos : e - pos);
    pos = e == std::string::npos ? text->size() : e + 1;
    // id parent major:minor root MOUNTPOINT ...; octal escapes (\040) in it
    std::size_t f = 0;
    for (int i = 0; i < 4 && f != std::string::npos; i++) f = line.find(' ', f + 1);
    if (f == std::string::npos) continue;
    std::size_t g = line.find(' ', f + 1);
    std::string raw = line.substr(f + 1, g == std::string::npos ? std::string::npos : g - f - 1);
    std::string mp;
    for (std::size_t i = 0; i < raw.size(); i++) {
      if (raw[i] == '\\' && i + 3 < raw.size()) {
        mp += static_cast<char>(((raw[i + 1] - '0') << 6) | ((raw[i + 2] - '0') << 3) |
                                (raw[i + 3] - '0'));
        i += 3;
      } else {
        mp += raw[i];
      }
    }
    if (mp == base || mp.rfind(base + "/", 0) == 0) points.push_back(mp);
  }
  std::sort(points.begin(), points.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const std::string& m : points) (void)::umount2(m.c_str(), MNT_DETACH);
}

bool path_exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

std::string join_path(std::string_view a, std::string_view b) {
  std::string out(a);
  if (out.empty() || out.back() != '/') out += '/';
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  out += b;
  return out;
}

bool path_under(std::string_view path, std::string_view prefix) {
  if (prefix == "/") return !path.empty() && path[0] == '/';
  if (path.size() < prefix.size() || path.substr(0, prefix.size()) != prefix) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}

std::string clean_path(std::string_view p) {
  bool abs = !p.empty() && p.front() == '/';
  std::vector<std::string> parts;
  for (auto& s : split(p, '/')) {
    if (s.empty() || s == ".") continue;
    if (s == "..") {
      if (!parts.empty() && parts.back() != "..")
        parts.pop_back();
      else if (!abs)
        parts.push_back(s);
      continue;
    }
    parts.push_back(s);
  }
  std::string out = abs ? "/" : "";
  for (size_t i = 0; i < parts.size(); i++) {
    if (i) out += '/';
    out += parts[i];
  }
  if (out.empty()) out = ".";
  return out;
}

std::string rfc3339_now(bool nanos) {
  struct timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  ::gmtime_r(&ts.tv_sec, &tm);
  char buf[64];
  size_t n = ::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  if (nanos) n += static_cast<size_t>(std::snprintf(buf + n, sizeof buf - n, ".%09ld", ts.tv_nsec));
  std::snprintf(buf + n, sizeof buf - n, "Z");
  return buf;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? s.npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::vector<std::string> path_components(std::string_view p) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < p.size()) {
    std::size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    if (j > i) out.emplace_back(p.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

PathWalk walk_path(const std::string& abs) {
  PathWalk w;
  std::vector<std::string> todo = path_components(abs);
  std::reverse(todo.begin(), todo.end());  // a stack: the next name at the back
  std::string cur = "/";
  std::string st_of;  // the path w.st is the lstat of
  bool last_seen = todo.empty();
  int hops = 0;
  while (!todo.empty()) {
    std::string name = std::move(todo.back());
    todo.pop_back();
    // The path's own last name: the first time the stack empties (a link's
    // target is pushed only after the link is popped).
    const bool own_last = !last_seen && todo.empty();
    if (own_last) last_seen = true;
    if (name == ".") continue;
    if (name == "..") {
      auto k = cur.rfind('/');
      cur = k == 0 ? "/" : cur.substr(0, k);
      continue;
    }
    const std::string next = join_path(cur, name);
    struct stat st;
    if (::lstat(next.c_str(), &st) != 0 ||
        (!todo.empty() && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))) {
      w.first_missing = next;
      std::string rest = next;
      for (auto it = todo.rbegin(); it != todo.rend(); ++it) rest += "/" + *it;
      w.real = clean_path(rest);
      return w;
    }
    if (!S_ISLNK(st.st_mode)) {
      cur = next;
      w.st = st;
      st_of = cur;
      continue;
    }
    if (own_last) w.last_is_link = true;
    w.links.push_back(next);
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(next.c_str(), buf, sizeof buf - 1);
    if (n <= 0 || ++hops > 40) {  // a loop, or unreadable: stop at the link
      w.real = next;
      return w;
    }
    const std::string target(buf, static_cast<std::size_t>(n));
    if (target[0] == '/') cur = "/";
    std::vector<std::string> more = path_components(target);
    for (auto it = more.rbegin(); it != more.rend(); ++it) todo.push_back(*it);
  }
  w.real = cur;
  // Ended on "/", "." or "..": the lstat of where it ended.
  w.found = st_of == cur || ::lstat(cur.c_str(), &w.st) == 0;
  return w;
}

static bool read_stat(int pid, char* state, unsigned long long* start) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  // comm may contain spaces and parens: parse after the last ')'.
  char* p = std::strrchr(buf, ')');
  if (!p) return false;
  p += 2;
  *state = *p;
  // fields after comm: state(3) ... starttime is field 22 -> 19 more after state
  int field = 3;
  while (*p && field < 22) {
    if (*p == ' ') field++;
    p++;
  }
  *start = std::strtoull(p, nullptr, 10);
  return true;
}

Result<UniqueFd> connect_unix(const std::string& path, const std::string& what) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::sys(errno, "socket");
  UniqueFd s(fd);
  struct sockaddr_un a = {};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) return Error::msg(what + " path too long: " + path);
  std::memcpy(a.sun_path, path.data(), path.size());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0)
    return Error::sys(errno, "connect to " + what + " " + path);
  return s;
}

unsigned long long process_start_time(int pid) {
  char st;
  unsigned long long start = 0;
  if (!read_stat(pid, &st, &start)) return 0;
  return start;
}

bool process_dead(int pid) {
  char st;
  unsigned long long start;
  if (!read_stat(pid, &st, &start)) return true;
  return st == 'Z' || st == 'X';
}

}  // namespace comet
