// The agent's view of one path (pack_view.hpp).
#include "pack_view.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <deque>

#include "comet/base/sys.hpp"
#include "comet/capability/compile.hpp"

namespace comet::runtime::pack_detail {
namespace cap = comet::capability;

const char* to_string(Layer l) {
  switch (l) {
    case Layer::image:
      return "image";
    case Layer::pack:
      return "pack";
    case Layer::input:
      return "input";
    case Layer::writable:
      return "writable";
    case Layer::tmp:
      return "tmp";
    case Layer::dev:
      return "dev";
    case Layer::devpts:
      return "devpts";
    case Layer::shm:
      return "shm";
    case Layer::proc:
      return "proc";
    case Layer::proc_readonly:
      return "proc-readonly";
    case Layer::masked:
      return "masked";
  }
  return "?";
}

namespace {

bool under(const std::string& p, const std::string& prefix) {
  if (prefix == "/") return true;
  return p == prefix || (p.size() > prefix.size() && p.compare(0, prefix.size(), prefix) == 0 &&
                         p[prefix.size()] == '/');
}

std::size_t depth(const std::string& p) {
  return p == "/" ? 0 : static_cast<std::size_t>(std::count(p.begin(), p.end(), '/'));
}

std::string parent_of(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
}

std::string child(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::deque<std::string> components(const std::string& p) {
  std::deque<std::string> out;
  for (std::string& c : split(p, '/'))
    if (!c.empty() && c != ".") out.push_back(std::move(c));
  return out;
}

// One name in the view, as lstat(2) in the container would see it.
struct Entry {
  bool exists = false;
  mode_t mode = 0;  // type and permission bits
  uint32_t uid = 0, gid = 0;
  std::string target;  // a symlink's text
  std::string host;    // the host path behind it, "" for the runtime's own
  std::size_t mount = 0;
};

Entry synthetic(mode_t mode, uint32_t uid = 0, uint32_t gid = 0, std::string target = "") {
  Entry e;
  e.exists = true;
  e.mode = mode;
  e.uid = uid;
  e.gid = gid;
  e.target = std::move(target);
  return e;
}

Entry from_host(const std::string& host) {
  Entry e;
  e.host = host;
  struct stat st;
  if (::lstat(host.c_str(), &st) < 0) return e;
  e.exists = true;
  e.mode = st.st_mode;
  e.uid = st.st_uid;
  e.gid = st.st_gid;
  if (S_ISLNK(st.st_mode)) {
    char buf[PATH_MAX];
    ssize_t n = ::readlink(host.c_str(), buf, sizeof buf);
    if (n > 0) e.target.assign(buf, static_cast<std::size_t>(n));
  }
  return e;
}

class View {
 public:
  View(const ViewInputs& in, const std::vector<ViewMount>& mounts) : in_(in), mounts_(mounts) {}

  // The deepest mount covering P, below index BELOW (a masked path's
  // underlying mount).
  std::size_t mount_of(const std::string& p, std::size_t below = SIZE_MAX) const {
    std::size_t best = 0;
    for (std::size_t i = 0; i < mounts_.size() && i < below; ++i)
      if (under(p, mounts_[i].dest) && depth(mounts_[i].dest) >= depth(mounts_[best].dest))
        best = i;
    return best;
  }

  Entry lookup(const std::string& p, std::size_t below = SIZE_MAX) const {
    std::size_t i = mount_of(p, below);
    const ViewMount& m = mounts_[i];
    Entry e = lookup_in(m, p, i);
    e.mount = i;
    return e;
  }

  const ViewMount& mount(std::size_t i) const { return mounts_[i]; }
  bool allowed(const Entry& e, unsigned want) const {
    unsigned bits = e.uid == in_.uid   ? (e.mode >> 6) & 7u
                    : e.gid == in_.gid ? (e.mode >> 3) & 7u
                                       : e.mode & 7u;
    return (bits & want) == want;
  }

 private:
  Entry lookup_in(const ViewMount& m, const std::string& p, std::size_t i) const {
    const std::string rel = m.dest == "/" ? p : p.substr(m.dest.size());
    switch (m.layer) {
      case Layer::image:
      case Layer::input:
        return from_host(m.host + rel);
      case Layer::pack: {
        // The staged copy (stage_workdir): directories 0755, files 0644,
        // symlinks as shipped, nothing else; owned by the caller.
        Entry e = from_host(m.host + rel);
        if (!e.exists) return e;
        if (S_ISDIR(e.mode))
          e.mode = S_IFDIR | 0755;
        else if (S_ISREG(e.mode))
          e.mode = S_IFREG | 0644;
        else if (!S_ISLNK(e.mode))
          return Entry{};
        e.uid = e.gid = in_.owner;
        return e;
      }
      case Layer::writable:
        // pack run: a fresh tmpfs (RunMounts::tmpfs), mode 0755, the agent's.
        return rel.empty() ? synthetic(S_IFDIR | 0755, in_.uid, in_.gid) : Entry{};
      case Layer::tmp:
      case Layer::shm:
        return rel.empty() ? synthetic(S_IFDIR | 01777) : Entry{};
      case Layer::devpts:
        if (rel.empty()) return synthetic(S_IFDIR | 0755);
        return rel == "/ptmx" ? synthetic(S_IFCHR | 0666) : Entry{};
      case Layer::dev:
        return dev_entry(rel);
      case Layer::proc:
      case Layer::proc_readonly:
        return proc_entry(p.substr(5));  // below /proc, whichever mount
      case Layer::masked: {
        // Only what exists is masked (mask_paths() skips the rest).
        Entry under_it = lookup(p, i);
        if (!under_it.exists) return under_it;
        if (S_ISDIR(under_it.mode)) return synthetic(S_IFDIR | 01777);  // tmpfs, ro
        Entry e = synthetic(S_IFCHR | 0666);  // the host's /dev/null, bound
        e.host = "/dev/null";
        return e;
      }
    }
    return Entry{};
  }

  // setup_dev(): the default devices, 0666 root, and its links.
  static Entry dev_entry(const std::string& rel) {
    if (rel.empty()) return synthetic(S_IFDIR | 0755);
    const std::string n = rel.substr(1);
    for (const char* d : {"null", "zero", "full", "random", "urandom", "tty"})
      if (n == d) return synthetic(S_IFCHR | 0666);
    if (n == "fd") return synthetic(S_IFLNK | 0777, 0, 0, "/proc/self/fd");
    if (n == "stdin") return synthetic(S_IFLNK | 0777, 0, 0, "/proc/self/fd/0");
    if (n == "stdout") return synthetic(S_IFLNK | 0777, 0, 0, "/proc/self/fd/1");
    if (n == "stderr") return synthetic(S_IFLNK | 0777, 0, 0, "/proc/self/fd/2");
    if (n == "ptmx") return synthetic(S_IFLNK | 0777, 0, 0, "pts/ptmx");
    if (n == "core" && ::access("/proc/kcore", F_OK) == 0)
      return synthetic(S_IFLNK | 0777, 0, 0, "/proc/kcore");
    return Entry{};
  }

  // The container's procfs is the kernel's: the host's /proc shows the same
  // files, but for processes. /proc/self (and thread-self) are the agent's
  // own (owned by it); another pid is one of the pack's processes, which
  // the host's numbers say nothing about: missing.
  Entry proc_entry(const std::string& rel) const {
    auto parts = components(rel);
    if (parts.empty()) return from_host("/proc");
    const std::string& first = parts.front();
    const bool self = first == "self" || first == "thread-self";
    if (!self &&
        std::all_of(first.begin(), first.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return Entry{};
    Entry e;
    if (self && parts.size() == 1) {
      struct stat st;
      if (::stat("/proc/self", &st) < 0) return e;
      e = synthetic(st.st_mode);
      e.host = "/proc/self";
    } else {
      e = from_host("/proc" + rel);
    }
    if (e.exists && self) {
      e.uid = in_.uid;
      e.gid = in_.gid;
    }
    return e;
  }

  const ViewInputs& in_;
  const std::vector<ViewMount>& mounts_;
};

std::string octal(mode_t m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

std::string kind_of(mode_t m) {
  if (S_ISREG(m)) return "file";
  if (S_ISDIR(m)) return "directory";
  if (S_ISCHR(m)) return "character device";
  if (S_ISBLK(m)) return "block device";
  if (S_ISLNK(m)) return "symlink";
  if (S_ISFIFO(m)) return "fifo";
  if (S_ISSOCK(m)) return "socket";
  return "other";
}

}  // namespace

std::vector<ViewMount> plan_view(const ViewInputs& in) {
  const cap::FsPolicy& fs = in.man->capabilities.fs;
  std::vector<ViewMount> m;
  m.push_back({"/", Layer::image, in.rootfs, true, false});
  m.push_back({"/proc", Layer::proc, "/proc", false, false});
  m.push_back({"/dev", Layer::dev, "", false, true});
  m.push_back({"/dev/pts", Layer::devpts, "", false, true});
  m.push_back({"/dev/shm", Layer::shm, "", true, true});
  m.push_back({std::string(cap::kWorkdir), Layer::pack, in.pack_dir, true, false});
  for (const std::string& w : fs.write) {
    if (w == "/tmp")
      m.push_back({w, Layer::tmp, "", false, true});
    else
      m.push_back({w, Layer::writable, "", false, true});
  }
  if (!in.input.empty() &&
      std::find(fs.read.begin(), fs.read.end(), "/workdir/inputs") != fs.read.end())
    m.push_back({"/workdir/inputs", Layer::input, in.input, true, false});
  for (const std::string& p : cap::default_readonly_paths())
    m.push_back({p, Layer::proc_readonly, "/proc", true, false});
  std::vector<std::string> masked = cap::default_masked_paths();
  masked.push_back("/proc/cmdline");
  masked.push_back("/proc/sys/kernel/random/boot_id");
  for (const std::string& p : masked) m.push_back({p, Layer::masked, "", false, false});
  // Parents before children (masked after read-only at equal depth: made later).
  std::stable_sort(m.begin(), m.end(), [](const ViewMount& a, const ViewMount& b) {
    return depth(a.dest) < depth(b.dest);
  });
  return m;
}

PathView see_path(const ViewInputs& in, const std::vector<ViewMount>& mounts,
                  const std::string& path) {
  View view(in, mounts);
  PathView v;
  v.path = path.empty() || path[0] != '/' ? child(std::string(cap::kWorkdir), path) : path;
  std::deque<std::string> todo = components(v.path);
  std::string cur = "/";
  Entry cur_e = view.lookup("/");
  Entry last;
  bool missing_parent = false;
  int walk_err = 0;
  std::string walk_why;
  int links = 0;
  while (!todo.empty()) {
    std::string c = std::move(todo.front());
    todo.pop_front();
    if (c == "..") {
      cur = parent_of(cur);
      cur_e = view.lookup(cur);
      continue;
    }
    if (!view.allowed(cur_e, 1)) {
      walk_err = EACCES;
      walk_why = "no search permission on " + cur + " for uid " + std::to_string(in.uid);
      break;
    }
    const std::string next = child(cur, c);
    Entry e = view.lookup(next);
    if (!e.exists) {
      missing_parent = !todo.empty();
      cur = next;
      for (const std::string& rest : todo) cur = child(cur, rest);
      last = e;
      walk_err = ENOENT;
      walk_why = missing_parent ? next + " does not exist" : "";
      break;
    }
    const ViewMount& em = view.mount(e.mount);
    if (S_ISLNK(e.mode) && (em.layer == Layer::proc || em.layer == Layer::proc_readonly) &&
        (under(next, "/proc/self") || under(next, "/proc/thread-self")) && depth(next) > 2) {
      // fd/N, cwd, root, exe, map_files/...: a magic link leads to what the
      // process has open, not to its text.
      walk_err = -1;
      walk_why = next + " is a magic link: it leads to what the agent has open";
      cur = next;
      last = e;
      break;
    }
    if (S_ISLNK(e.mode)) {
      if (++links > 40) {
        walk_err = ELOOP;
        walk_why = "too many symlinks";
        break;
      }
      auto t = components(e.target);
      for (auto it = t.rbegin(); it != t.rend(); ++it) todo.push_front(*it);
      if (!e.target.empty() && e.target[0] == '/') {
        cur = "/";
        cur_e = view.lookup("/");
      }
      continue;
    }
    if (!todo.empty() && !S_ISDIR(e.mode)) {
      walk_err = ENOTDIR;
      walk_why = next + " is not a directory";
      break;
    }
    cur = next;
    cur_e = e;
    last = e;
  }
  v.resolved = cur;
  const bool found = walk_err == 0;
  v.exists = found;
  const Entry& e = found ? cur_e : last;
  const std::size_t mi = found ? e.mount : view.mount_of(cur);
  v.layer = view.mount(mi).layer;
  v.host = e.host;
  v.kind = found ? kind_of(e.mode) : walk_err < 0 ? "magic link" : "missing";

  // read: open(O_RDONLY) (and getdents for a directory)
  if (!found) {
    v.read_err = walk_err;
    v.read_why = walk_why.empty() ? "nothing is at " + cur + " in the view" : walk_why;
  } else if (!view.allowed(e, 4)) {
    v.read_err = EACCES;
    v.read_why =
        "mode " + octal(e.mode) + " gives uid " + std::to_string(in.uid) + " no read permission";
  }

  // write: open(O_WRONLY|O_CREAT|O_TRUNC); a new file in a directory
  auto create_in = [&](const std::string& dir, const Entry& dir_e) {
    const ViewMount& m = view.mount(dir_e.mount);
    if (!view.allowed(dir_e, 1)) {
      v.write_err = EACCES;
      v.write_why = "no search permission on " + dir + " for uid " + std::to_string(in.uid);
    } else if (m.layer == Layer::proc || m.layer == Layer::proc_readonly) {
      // procfs's lookups fail with ENOENT for a name they do not have,
      // before O_CREAT (or the read-only mount) is looked at.
      v.write_err = ENOENT;
      v.write_why = "procfs makes no new files";
    } else if (m.read_only) {
      v.write_err = EROFS;
      v.write_why = dir + " is on a read-only mount (" + to_string(m.layer) + ")";
    } else if (!view.allowed(dir_e, 3)) {
      v.write_err = EACCES;
      v.write_why = dir + " is not writable by uid " + std::to_string(in.uid) + " (mode bits)";
    } else if (!m.landlock_write) {
      v.write_err = EACCES;
      v.write_why = "Landlock: writes only beneath the writable mounts";
    }
  };
  if (found && S_ISDIR(e.mode)) {
    v.dir_write = true;
    create_in(cur, e);
  } else if (found) {
    const ViewMount& m = view.mount(e.mount);
    if (m.read_only && S_ISREG(e.mode)) {
      v.write_err = EROFS;  // O_TRUNC wants write access to the mount first
      v.write_why = "a read-only mount (" + std::string(to_string(m.layer)) + ")";
    } else if (!view.allowed(e, 2)) {
      v.write_err = EACCES;
      v.write_why =
          "mode " + octal(e.mode) + " gives uid " + std::to_string(in.uid) + " no write permission";
    } else if (!m.landlock_write) {
      v.write_err = EACCES;
      v.write_why = "Landlock: writes only beneath the writable mounts";
    }
  } else if (walk_err == ENOENT && !missing_parent) {
    Entry pe = view.lookup(parent_of(cur));
    create_in(parent_of(cur), pe);
  } else {
    v.write_err = walk_err;
    v.write_why = v.read_why;
  }
  return v;
}

std::string outcome(int err) {
  return err == 0 ? "ok" : err < 0 ? "depends" : errno_name(err);
}

std::string describe(const PathView& v, const ViewInputs& in) {
  std::string what;
  switch (v.layer) {
    case Layer::image:
      what = "the image (rootfs " + in.rootfs + "), mounted read-only";
      break;
    case Layer::pack:
      what = "the pack's own files (" + in.pack_dir + "), a read-only copy at /workdir";
      break;
    case Layer::input:
      what = "--input " + in.input + ", read-only at /workdir/inputs";
      break;
    case Layer::writable:
      what =
          "an fs.write place: a fresh tmpfs the agent owns (pack run copies /workdir/out into "
          "--output after the run)";
      break;
    case Layer::tmp:
      what = "/tmp: a fresh tmpfs (fs.write lists /tmp)";
      break;
    case Layer::dev:
      what = "the runtime's /dev: a tmpfs with null, zero, full, random, urandom and tty";
      break;
    case Layer::devpts:
      what = "/dev/pts: the container's own devpts";
      break;
    case Layer::shm:
      what = "/dev/shm: an empty read-only tmpfs";
      break;
    case Layer::proc:
      what = "the container's own procfs";
      break;
    case Layer::proc_readonly:
      what = "the container's procfs, a read-only part of it";
      break;
    case Layer::masked:
      what = "a masked path: reads as empty (the host's /dev/null, or an empty read-only tmpfs)";
      break;
  }
  return what;
}

}  // namespace comet::runtime::pack_detail
