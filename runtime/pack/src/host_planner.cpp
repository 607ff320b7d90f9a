// The planner of `rootfs --from-host` (hostroot.hpp, "the rootfs as data"):
// reads the host (lstat, readlink, the ELF files, ld.so.conf) and returns
// the rootfs as data; nothing is written.
#include "comet/pack/hostroot.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <deque>
#include <memory>
#include <set>

#include "comet/base/fd.hpp"
#include "comet/base/sys.hpp"
#include "comet/host/elf.hpp"

#include "hostroot_paths.hpp"

namespace comet::runtime {

using namespace hostroot_detail;

namespace {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile() {
    if (p_) ::munmap(p_, n_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Maps a regular file read-only. Empty files map to an empty span.
  Status open(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return Error::sys(errno, "open " + path);
    struct stat st;
    if (::fstat(fd.get(), &st) < 0) return Error::sys(errno, "stat " + path);
    if (!S_ISREG(st.st_mode)) return Error::msg(path + ": not a regular file");
    n_ = static_cast<size_t>(st.st_size);
    if (n_ == 0) return ok();
    void* p = ::mmap(nullptr, n_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (p == MAP_FAILED) return Error::sys(errno, "mmap " + path);
    p_ = p;
    return ok();
  }
  std::span<const unsigned char> bytes() const {
    return {static_cast<const unsigned char*>(p_), p_ ? n_ : 0};
  }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

Result<std::string> read_link(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
  if (n < 0) return Error::sys(errno, "readlink " + path);
  if (static_cast<size_t>(n) >= sizeof buf) return Error::sys(ENAMETOOLONG, "readlink " + path);
  return std::string(buf, static_cast<size_t>(n));
}

RootfsEntry from_stat(RootfsEntry::Kind kind, const struct stat& st) {
  RootfsEntry e;
  e.kind = kind;
  e.mode = st.st_mode & 07777;
  e.size = st.st_size;
  e.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  e.ino = st.st_ino;
  e.dev = st.st_dev;
  return e;
}

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

class Planner {
 public:
  explicit Planner(RootfsPlan* plan) : plan_(plan) {
    conf_dirs_ = ld_so_conf_dirs("/etc/ld.so.conf", [this](const std::string& p) { note(p); });
  }

  const HostFacts& facts() const { return facts_; }

  // Records every directory and symlink met while resolving PATH (absolute)
  // the way the kernel does, and the file it ends at. Returns the real path.
  Result<std::string> add_path(const std::string& path) {
    auto memo = resolved_.find(path);
    if (memo != resolved_.end()) return memo->second;
    TRY(std::string real, resolve_and_record(path));
    resolved_.emplace(path, real);
    return real;
  }

  // A host directory tree, verbatim (modes kept), minus what SKIP says (REL is
  // relative to the tree), on one filesystem. A symlink inside it is kept as
  // it is, and what it points to is added too (only the directories, when it
  // names a directory); a dangling one stays dangling, as on the host.
  // Sockets, fifos and devices are left out.
  // Returns the tree's real path.
  Result<std::string> add_tree(const std::string& root,
                               const std::function<bool(std::string_view)>& skip) {
    TRY(std::string real, add_path(root));
    struct stat st;
    if (::stat(real.c_str(), &st) < 0 || !S_ISDIR(st.st_mode))
      return Error::sys(ENOTDIR, "tree " + root);
    TRYV(walk(real, "", st.st_dev, skip));
    return real;
  }

  Status add_binary(const std::string& arg) {
    TRY(std::string path, locate(arg));
    TRY(std::string real, add_path(path));
    auto parsed = elf(real);
    if (!parsed.ok()) {
      char head[2] = {};
      UniqueFd f(::open(real.c_str(), O_RDONLY | O_CLOEXEC));
      if (f && ::read(f.get(), head, 2) == 2 && head[0] == '#' && head[1] == '!')
        return Error::msg(real + ": a script, not an ELF file (add its interpreter instead)");
      return std::move(parsed).error();
    }
    const ElfInfo* info = *parsed;
    TRYV(check_machine(*info, real));
    TRYV(add_deps(real, *info, dirname_of(real), {}));
    std::string name = basename_of(real);
    if (!is_python_name(name)) return ok();
    // /usr/bin/python3.11 -> /usr/lib/python3.11
    std::string stdlib = join_path(dirname_of(dirname_of(real)), "lib/" + name);
    struct stat st;
    if (::stat(stdlib.c_str(), &st) < 0 || !S_ISDIR(st.st_mode))
      return Error::msg("the standard library of " + real + " is not at " + stdlib);
    TRY(std::string real_stdlib, add_tree(stdlib, python_stdlib_skipped));
    // Extension modules are dlopen()ed by the interpreter: their libraries
    // are searched with the interpreter as the loader.
    std::vector<std::string> exe_rpath;
    if (info->runpath.empty())
      for (const auto& r : info->rpath) exe_rpath.push_back(expand_dst(r, dirname_of(real)));
    std::string dynload = join_path(real_stdlib, "lib-dynload");
    std::vector<std::string> mods;
    for (const auto& [p, e] : *plan_)
      if (e.kind == RootfsEntry::Kind::file && dirname_of(p) == dynload && p.size() > 3 &&
          p.compare(p.size() - 3, 3, ".so") == 0)
        mods.push_back(p);
    for (const auto& m : mods) {
      TRY(const ElfInfo* mi, elf(m));
      TRYV(check_machine(*mi, m));
      TRYV(add_deps(m, *mi, dynload, exe_rpath));
    }
    return ok();
  }

  void add_skeleton() {
    for (const char* d : {"/proc", "/dev", "/sys", "/tmp", "/workdir", "/etc"}) {
      RootfsEntry e;
      e.kind = RootfsEntry::Kind::dir;
      e.mode = 0755;
      plan_->emplace(d, e);  // a --tree may have brought it already
    }
    auto file = [this](const char* path, std::string content) {
      RootfsEntry e;
      e.kind = RootfsEntry::Kind::file;
      e.mode = 0644;
      e.content = std::move(content);
      plan_->emplace(path, std::move(e));
    };
    file("/etc/passwd",
         "root:x:0:0:root:/root:/usr/sbin/nologin\n"
         "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
    file("/etc/group", "root:x:0:\nnogroup:x:65534:\n");
    file("/etc/resolv.conf", "");
    file("/etc/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
  }

  // /etc/ld.so.cache, and merged /usr's top-level symlinks (/bin -> usr/bin,
  // ...) so that both spellings of every path resolve.
  Status add_host_links() {
    struct stat st;
    if (plan_->count("/etc/ld.so.cache") == 0 && ::lstat("/etc/ld.so.cache", &st) == 0) {
      auto r = add_path("/etc/ld.so.cache");
      if (!r.ok()) return std::move(r).error();
    }
    for (const char* top : {"/bin", "/sbin", "/lib", "/lib64"}) {
      if (::lstat(top, &st) < 0 || !S_ISLNK(st.st_mode)) continue;
      auto r = add_path(top);
      if (!r.ok()) return std::move(r).error();
    }
    return ok();
  }

 private:
  Result<std::string> resolve_and_record(const std::string& path) {
    std::deque<std::string> todo;
    for (auto& c : split(path, '/')) todo.push_back(c);
    std::string cur;  // resolved so far, no symlinks in it; "" is "/"
    int links = 0;
    while (!todo.empty()) {
      std::string c = std::move(todo.front());
      todo.pop_front();
      if (c.empty() || c == ".") continue;
      if (c == "..") {
        cur = cur.empty() ? "" : dirname_of(cur);
        if (cur == "/") cur.clear();
        continue;
      }
      std::string next = cur + "/" + c;
      struct stat st;
      if (::lstat(next.c_str(), &st) < 0) return Error::sys(errno, "stat " + next);
      if (S_ISLNK(st.st_mode)) {
        if (++links > 40) return Error::sys(ELOOP, "resolve " + path);
        TRY(std::string target, read_link(next));
        RootfsEntry e = from_stat(RootfsEntry::Kind::symlink, st);
        e.target = target;
        TRYV(record(next, std::move(e)));
        auto parts = split(target, '/');
        todo.insert(todo.begin(), parts.begin(), parts.end());
        if (!target.empty() && target[0] == '/') cur.clear();
        continue;
      }
      if (S_ISDIR(st.st_mode)) {
        RootfsEntry e = from_stat(RootfsEntry::Kind::dir, st);
        e.mode = 0755;
        TRYV(record(next, std::move(e)));
        cur = next;
        continue;
      }
      if (!S_ISREG(st.st_mode))
        return Error::msg(next + ": not a regular file, directory or symlink");
      for (const auto& rest : todo)
        if (!rest.empty()) return Error::sys(ENOTDIR, "resolve " + path);
      RootfsEntry e = from_stat(RootfsEntry::Kind::file, st);
      e.source = next;
      TRYV(record(next, std::move(e)));
      cur = next;
    }
    return cur.empty() ? std::string("/") : cur;
  }

  Status record(const std::string& path, RootfsEntry e) {
    auto it = plan_->find(path);
    if (it == plan_->end()) {
      plan_->emplace_hint(it, path, std::move(e));
      return ok();
    }
    const RootfsEntry& old = it->second;
    bool same = old.kind == e.kind &&
                (e.kind != RootfsEntry::Kind::symlink || old.target == e.target) &&
                (e.kind != RootfsEntry::Kind::file || old.source == e.source);
    if (!same)
      return Error::msg(path + ": added as a " + kind_name(e.kind) + " and as a " +
                        kind_name(old.kind));
    return ok();
  }

  // One filesystem, as cp -x: a mount point inside the tree (a /proc, a
  // bind mount) is added as an empty directory.
  Status walk(const std::string& dir, const std::string& rel, dev_t dev,
              const std::function<bool(std::string_view)>& skip) {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return Error::sys(errno, "open " + dir);
    int dfd = fd.get();
    DIR* d = ::fdopendir(fd.release());
    if (!d) {
      ::close(dfd);
      return Error::sys(errno, "opendir " + dir);
    }
    std::unique_ptr<DIR, int (*)(DIR*)> dir_owner(d, ::closedir);
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      std::string_view nm = e->d_name;
      if (nm != "." && nm != "..") names.emplace_back(nm);
    }
    if (errno) return Error::sys(errno, "readdir " + dir);
    std::sort(names.begin(), names.end());
    for (const auto& nm : names) {
      std::string child = dir + "/" + nm;
      std::string crel = rel.empty() ? nm : rel + "/" + nm;
      if (skip && skip(crel)) continue;
      struct stat st;
      if (::fstatat(dfd, nm.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0)
        return Error::sys(errno, "stat " + child);
      if (S_ISDIR(st.st_mode)) {
        TRYV(record(child, from_stat(RootfsEntry::Kind::dir, st)));
        if (st.st_dev == dev) {
          TRYV(walk(child, crel, dev, skip));
        }
      } else if (S_ISREG(st.st_mode)) {
        RootfsEntry e = from_stat(RootfsEntry::Kind::file, st);
        e.source = child;
        TRYV(record(child, std::move(e)));
      } else if (S_ISLNK(st.st_mode)) {
        TRY(std::string target, read_link(child));
        RootfsEntry e = from_stat(RootfsEntry::Kind::symlink, st);
        e.target = target;
        TRYV(record(child, std::move(e)));
        auto r = add_path(child);  // what it points to; a dangling link stays as it is
        (void)r;
      }
      // sockets, fifos and devices are left out
    }
    return ok();
  }

  Result<std::string> locate(const std::string& arg) {
    if (arg.empty()) return Error::msg("an empty binary name");
    if (arg.find('/') != std::string::npos) {
      std::string p = absolute(arg);
      if (::access(p.c_str(), F_OK) < 0) return Error::sys(errno, arg);
      return p;
    }
    const char* env = std::getenv("PATH");
    for (const auto& d : split(env && *env ? env : kDefaultPath, ':')) {
      if (d.empty() || d[0] != '/') continue;
      std::string p = join_path(d, arg);
      struct stat st;
      if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0)
        return p;
    }
    return Error::msg(arg + ": not found in PATH");
  }

  Result<const ElfInfo*> elf(const std::string& path) {
    auto it = elf_cache_.find(path);
    if (it != elf_cache_.end()) return &it->second;
    MappedFile m;
    TRYV(m.open(path));
    TRY(ElfInfo info, parse_elf(m.bytes(), path));
    return &elf_cache_.emplace(path, std::move(info)).first->second;
  }

  static Status check_machine(const ElfInfo& info, const std::string& path) {
    if (info.machine != host_elf_machine())
      return Error::msg(path + ": ELF machine " + std::to_string(info.machine) +
                        " is not this host's (" + std::to_string(host_elf_machine()) + ")");
    return ok();
  }

  // A candidate ld.so would take: an ELF of our class and machine.
  bool usable(const std::string& path) {
    auto memo = usable_.find(path);
    if (memo != usable_.end()) return memo->second;
    struct stat st;
    bool yes = false;
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      auto info = elf(path);
      yes = info.ok() && (*info)->machine == host_elf_machine();
    }
    usable_.emplace(path, yes);
    return yes;
  }

  // The interpreter and, breadth first as ld.so loads them, every library
  // ROOT needs, to a fixed point. LOADER_RPATH: the expanded DT_RPATHs of
  // whatever loads ROOT (an extension module's interpreter).
  Status add_deps(const std::string& root, const ElfInfo& info, const std::string& origin,
                  const std::vector<std::string>& loader_rpath) {
    if (!info.interp.empty()) {
      auto r = add_path(info.interp);
      if (!r.ok()) return std::move(r).error().wrap("the ELF interpreter of " + root);
      TRY(const ElfInfo* ii, elf(*r));
      TRYV(check_machine(*ii, *r));
    }
    struct Obj {
      std::string path;
      const ElfInfo* info;
      std::string origin;
      std::vector<std::string> loader_rpath;
    };
    std::deque<Obj> queue = {{root, &info, origin, loader_rpath}};
    std::set<std::string> loaded = {basename_of(root)};
    if (!info.soname.empty()) loaded.insert(info.soname);
    std::set<std::string> done = {root};
    while (!queue.empty()) {
      Obj o = std::move(queue.front());
      queue.pop_front();
      auto dirs = library_search_dirs(*o.info, o.origin, o.loader_rpath, conf_dirs_);
      std::vector<std::string> child_rpath = o.loader_rpath;
      if (o.info->runpath.empty())
        for (const auto& r : o.info->rpath) child_rpath.push_back(expand_dst(r, o.origin));
      for (const auto& name : o.info->needed) {
        if (loaded.count(name)) continue;
        std::string path;
        if (name.find('/') != std::string::npos)
          path = usable(absolute(name)) ? absolute(name) : "";
        else
          path = find_library(name, dirs, [this](const std::string& p) {
            note(dirname_of(p));  // a library added here later would win: see plan_manifest
            return usable(p);
          });
        if (path.empty())
          return Error::msg(name + ", needed by " + o.path +
                            ", not found (searched its RPATH/RUNPATH, /etc/ld.so.conf and " +
                            "the default library directories)");
        loaded.insert(name);
        TRY(std::string real, add_path(path));
        TRY(const ElfInfo* ci, elf(real));
        if (!ci->soname.empty()) loaded.insert(ci->soname);
        if (!done.insert(real).second) continue;
        queue.push_back({path, ci, dirname_of(path), child_rpath});
      }
    }
    return ok();
  }

  RootfsPlan* plan_;
  std::vector<std::string> conf_dirs_;
  std::map<std::string, ElfInfo> elf_cache_;
  std::map<std::string, std::string> resolved_;  // add_path() results
  std::map<std::string, bool> usable_;           // usable() results
  HostFacts facts_;

  // Records what PATH is now, once, before the planner relies on it.
  void note(const std::string& path) {
    if (facts_.count(path)) return;
    HostFact f;
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0) {
      f.exists = true;
      f.type = st.st_mode & S_IFMT;
      f.size = st.st_size;
      f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
      f.ino = st.st_ino;
    }
    facts_.emplace(path, f);
  }
};

}  // namespace

Result<RootfsPlan> plan_host_rootfs(const HostRootfsOptions& o, HostFacts* looked_at) {
  if (o.binaries.empty()) return Error::msg("rootfs: --from-host needs at least one binary");
  RootfsPlan plan;
  Planner p(&plan);
  for (const auto& b : o.binaries) {
    Status st = p.add_binary(b);
    if (!st.ok()) return std::move(st).error().wrap("rootfs");
  }
  for (const auto& t : o.trees) {
    auto r = p.add_tree(absolute(t), nullptr);
    if (!r.ok()) return std::move(r).error().wrap("rootfs: --tree " + t);
  }
  Status st = p.add_host_links();
  if (!st.ok()) return std::move(st).error().wrap("rootfs");
  p.add_skeleton();
  TRYV(check_plan(plan));
  if (looked_at) *looked_at = p.facts();
  return plan;
}

Status check_plan(const RootfsPlan& plan) {
  for (const auto& [path, e] : plan) {
    if (path.size() < 2 || path[0] != '/' || path.back() == '/' ||
        path.find("//") != std::string::npos || path.find("/./") != std::string::npos ||
        path.find("/../") != std::string::npos || path.ends_with("/.") || path.ends_with("/.."))
      return Error::msg("rootfs plan: bad path \"" + path + "\"");
    std::string parent = dirname_of(path);
    if (parent == "/") continue;
    auto it = plan.find(parent);
    if (it == plan.end() || it->second.kind != RootfsEntry::Kind::dir)
      return Error::msg("rootfs plan: the parent of " + path + " is not a directory of the plan");
  }
  return ok();
}

}  // namespace comet::runtime
