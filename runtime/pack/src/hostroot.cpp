// `comet-runtime rootfs --from-host` and the cached default rootfs of
// `pack run`. See hostroot.hpp for the layers: a pure ELF reader, ld.so's
// search order as a pure function, a planner that reads the host and returns
// the rootfs as data, and a writer that makes it in a temp dir and renames it.
#include "comet/pack/hostroot.hpp"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <set>

#include "comet/base/fd.hpp"
#include "comet/base/sys.hpp"
#include "comet/host/sha256.hpp"

namespace comet::runtime {

// The reader copies header structs out of the buffer with memcpy, which is
// only right on a little-endian host (the files it accepts are little-endian).
static_assert(std::endian::native == std::endian::little);

namespace {

// Copies a T out of B at OFF when the whole T lies inside B.
template <typename T>
bool load(std::span<const unsigned char> b, uint64_t off, T* out) {
  if (off > b.size() || b.size() - off < sizeof(T)) return false;
  std::memcpy(out, b.data() + off, sizeof(T));
  return true;
}

bool in_bounds(size_t size, uint64_t off, uint64_t len) {
  return off <= size && len <= size - off;
}

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  for (auto& p : split(s, ':'))
    if (!p.empty()) out.push_back(p);
  return out;
}

std::string dirname_of(const std::string& p) {
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

std::string basename_of(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// True when P is DIR or below it (both clean absolute paths).
bool is_within(const std::string& p, const std::string& dir) {
  if (dir == "/") return true;
  return p == dir ||
         (p.size() > dir.size() && p.compare(0, dir.size(), dir) == 0 && p[dir.size()] == '/');
}

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r')) a++;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r')) b--;
  return std::string(s.substr(a, b - a));
}

std::string absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return clean_path(p);
  char cwd[PATH_MAX];
  if (!::getcwd(cwd, sizeof cwd)) return clean_path(p);
  return clean_path(join_path(cwd, p));
}

}  // namespace

// ---- ELF ---------------------------------------------------------------------

uint16_t host_elf_machine() {
  return EM_X86_64;
}

Result<ElfInfo> parse_elf(std::span<const unsigned char> b, std::string_view name) {
  const std::string n(name);
  auto bad = [&n](const std::string& why) { return Error::msg(n + ": " + why); };
  if (b.size() < EI_NIDENT || std::memcmp(b.data(), ELFMAG, SELFMAG) != 0)
    return bad("not an ELF file");
  if (b[EI_CLASS] != ELFCLASS64)
    return bad(b[EI_CLASS] == ELFCLASS32 ? "32-bit ELF is not supported (only 64-bit little-endian)"
                                         : "unknown ELF class " + std::to_string(b[EI_CLASS]));
  if (b[EI_DATA] != ELFDATA2LSB)
    return bad("big-endian ELF is not supported (only 64-bit little-endian)");
  if (b[EI_VERSION] != EV_CURRENT)
    return bad("unknown ELF version " + std::to_string(b[EI_VERSION]));
  Elf64_Ehdr eh;
  if (!load(b, 0, &eh)) return bad("truncated ELF header");
  if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
    return bad("not an executable or shared object (e_type " + std::to_string(eh.e_type) + ")");

  uint64_t phnum = eh.e_phnum;
  if (phnum == PN_XNUM) {  // the real count is in section header 0's sh_info
    Elf64_Shdr sh0;
    if (eh.e_shoff == 0 || eh.e_shentsize < sizeof(Elf64_Shdr) || !load(b, eh.e_shoff, &sh0))
      return bad("e_phnum is PN_XNUM but section header 0 is missing");
    phnum = sh0.sh_info;
  }
  if (phnum > 0) {
    if (eh.e_phentsize < sizeof(Elf64_Phdr)) return bad("program header entries are too small");
    if (eh.e_phoff > b.size() || (b.size() - eh.e_phoff) / eh.e_phentsize < phnum)
      return bad("program headers lie outside the file");
  }

  struct Load {
    uint64_t vaddr, filesz, offset;
  };
  std::vector<Load> loads;
  std::optional<Elf64_Phdr> interp, dynamic;
  for (uint64_t i = 0; i < phnum; i++) {
    Elf64_Phdr ph;
    if (!load(b, eh.e_phoff + i * eh.e_phentsize, &ph)) return bad("truncated program header");
    if (ph.p_type == PT_LOAD) {
      loads.push_back({ph.p_vaddr, ph.p_filesz, ph.p_offset});
    } else if (ph.p_type == PT_INTERP) {
      if (interp) return bad("more than one PT_INTERP");
      interp = ph;
    } else if (ph.p_type == PT_DYNAMIC) {
      if (dynamic) return bad("more than one PT_DYNAMIC");
      dynamic = ph;
    }
  }

  ElfInfo info;
  info.type = eh.e_type;
  info.machine = eh.e_machine;
  if (interp) {
    if (!in_bounds(b.size(), interp->p_offset, interp->p_filesz))
      return bad("PT_INTERP lies outside the file");
    std::string_view s(reinterpret_cast<const char*>(b.data()) + interp->p_offset,
                       interp->p_filesz);
    auto nul = s.find('\0');
    if (nul == std::string_view::npos) return bad("PT_INTERP is not NUL-terminated");
    if (nul == 0) return bad("PT_INTERP is empty");
    info.interp = std::string(s.substr(0, nul));
  }
  if (!dynamic) return info;  // static

  if (!in_bounds(b.size(), dynamic->p_offset, dynamic->p_filesz))
    return bad("PT_DYNAMIC lies outside the file");
  std::optional<uint64_t> strtab, strsz, soname, rpath, runpath;
  std::vector<uint64_t> needed;
  const uint64_t count = dynamic->p_filesz / sizeof(Elf64_Dyn);
  for (uint64_t i = 0; i < count; i++) {
    Elf64_Dyn d;
    if (!load(b, dynamic->p_offset + i * sizeof(Elf64_Dyn), &d)) return bad("truncated PT_DYNAMIC");
    if (d.d_tag == DT_NULL) break;
    uint64_t v = d.d_un.d_val;
    switch (d.d_tag) {
      case DT_NEEDED:
        needed.push_back(v);
        break;
      case DT_STRTAB:
        strtab = v;
        break;
      case DT_STRSZ:
        strsz = v;
        break;
      case DT_SONAME:
        soname = v;
        break;
      case DT_RPATH:
        rpath = v;
        break;
      case DT_RUNPATH:
        runpath = v;
        break;
      default:
        break;
    }
  }
  if (needed.empty() && !soname && !rpath && !runpath) return info;
  if (!strtab) return bad("DT_NEEDED without DT_STRTAB");

  // DT_STRTAB is a virtual address: find the PT_LOAD whose file bytes hold it.
  uint64_t str_off = 0, str_len = 0;
  bool mapped = false;
  for (const auto& l : loads) {
    if (*strtab < l.vaddr || *strtab - l.vaddr >= l.filesz) continue;
    uint64_t delta = *strtab - l.vaddr;
    if (delta > UINT64_MAX - l.offset) return bad("DT_STRTAB offset overflows");
    str_off = l.offset + delta;
    str_len = l.filesz - delta;
    mapped = true;
    break;
  }
  if (!mapped) return bad("DT_STRTAB lies outside every PT_LOAD segment");
  if (strsz) str_len = std::min(str_len, *strsz);
  if (!in_bounds(b.size(), str_off, str_len))
    return bad("the dynamic string table lies outside the file");
  std::string_view table(reinterpret_cast<const char*>(b.data()) + str_off, str_len);

  std::string err;
  auto str_at = [&](uint64_t k, const char* what) -> std::optional<std::string> {
    if (k >= table.size()) {
      err = std::string(what) + " string offset " + std::to_string(k) + " is outside the table";
      return std::nullopt;
    }
    auto rest = table.substr(k);
    auto nul = rest.find('\0');
    if (nul == std::string_view::npos) {
      err = std::string(what) + " string is not NUL-terminated";
      return std::nullopt;
    }
    return std::string(rest.substr(0, nul));
  };
  for (uint64_t k : needed) {
    auto s = str_at(k, "DT_NEEDED");
    if (!s) return bad(err);
    if (s->empty()) return bad("empty DT_NEEDED name");
    info.needed.push_back(*s);
  }
  if (soname) {
    auto s = str_at(*soname, "DT_SONAME");
    if (!s) return bad(err);
    info.soname = *s;
  }
  if (rpath) {
    auto s = str_at(*rpath, "DT_RPATH");
    if (!s) return bad(err);
    info.rpath = split_list(*s);
  }
  if (runpath) {
    auto s = str_at(*runpath, "DT_RUNPATH");
    if (!s) return bad(err);
    info.runpath = split_list(*s);
  }
  return info;
}

// ---- library search ------------------------------------------------------------

const std::vector<std::string>& default_library_dirs() {
  static const std::vector<std::string> dirs = {
      "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/lib", "/usr/lib"};
  return dirs;
}

std::vector<LdConfItem> parse_ld_so_conf(std::string_view text) {
  std::vector<LdConfItem> out;
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  for (auto& raw : split(text, '\n')) {
    std::string line = raw.substr(0, raw.find('#'));
    line = trim(line);
    if (line.empty()) continue;
    if (line.size() > 7 && line.compare(0, 7, "include") == 0 && blank(line[7])) {
      std::string pat;
      for (char c : line.substr(8) + " ") {
        if (blank(c)) {
          if (!pat.empty()) out.push_back({true, pat});
          pat.clear();
        } else {
          pat += c;
        }
      }
      continue;
    }
    if (line.size() > 5 && strncasecmp(line.c_str(), "hwcap", 5) == 0 && blank(line[5])) continue;
    while (line.size() > 1 && line.back() == '/') line.pop_back();
    out.push_back({false, line});
  }
  return out;
}

namespace {
void collect_conf(const std::string& file, int depth, std::vector<std::string>* out,
                  const std::function<void(const std::string&)>& consult) {
  if (depth > 8) return;  // include loops
  if (consult) consult(file);
  auto text = read_file(file);
  if (!text.ok()) return;
  for (const auto& item : parse_ld_so_conf(*text)) {
    if (!item.include) {
      out->push_back(item.value);
      continue;
    }
    std::string pat = item.value;
    if (pat[0] != '/') pat = join_path(dirname_of(file), pat);
    if (consult) consult(dirname_of(pat));
    glob_t g = {};
    if (::glob(pat.c_str(), 0, nullptr, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; i++) collect_conf(g.gl_pathv[i], depth + 1, out, consult);
    ::globfree(&g);
  }
}
}  // namespace

std::vector<std::string> ld_so_conf_dirs(const std::string& path,
                                         const std::function<void(const std::string&)>& consult) {
  std::vector<std::string> out;
  collect_conf(path, 0, &out, consult);
  return out;
}

std::string expand_dst(std::string_view e, std::string_view origin) {
  static const std::pair<const char*, const char*> kTokens[] = {
      {"ORIGIN", nullptr}, {"LIB", "lib/x86_64-linux-gnu"}, {"PLATFORM", "x86_64"}};
  std::string out;
  for (size_t i = 0; i < e.size();) {
    if (e[i] != '$') {
      out += e[i++];
      continue;
    }
    bool done = false;
    for (const auto& [tok, val] : kTokens) {
      std::string_view t(tok);
      std::string_view value = val ? std::string_view(val) : origin;
      std::string braced = "{" + std::string(t) + "}";
      if (e.substr(i + 1, braced.size()) == braced) {
        out += value;
        i += 1 + braced.size();
        done = true;
      } else if (e.substr(i + 1, t.size()) == t &&
                 (i + 1 + t.size() == e.size() || e[i + 1 + t.size()] == '/')) {
        out += value;
        i += 1 + t.size();
        done = true;
      }
      if (done) break;
    }
    if (!done) out += e[i++];
  }
  return out;
}

std::vector<std::string> library_search_dirs(const ElfInfo& obj, std::string_view origin,
                                             const std::vector<std::string>& loader_rpath,
                                             const std::vector<std::string>& conf_dirs) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& d) {
    if (d.empty() || d[0] != '/') return;  // relative to the process's cwd: not ours
    std::string c = clean_path(d);
    if (seen.insert(c).second) out.push_back(c);
  };
  if (obj.runpath.empty()) {
    for (const auto& r : obj.rpath) add(expand_dst(r, origin));
    for (const auto& r : loader_rpath) add(r);
  }
  for (const auto& r : obj.runpath) add(expand_dst(r, origin));
  for (const auto& d : conf_dirs) add(d);
  for (const auto& d : default_library_dirs()) add(d);
  return out;
}

std::string find_library(const std::string& name, const std::vector<std::string>& dirs,
                         const std::function<bool(const std::string&)>& usable) {
  for (const auto& d : dirs) {
    std::string p = join_path(d, name);
    if (usable(p)) return p;
  }
  return "";
}

// ---- Python ----------------------------------------------------------------------

bool is_python_name(std::string_view f) {
  if (f.substr(0, 6) != "python") return false;
  f.remove_prefix(6);
  auto digits = [&f]() {
    size_t n = 0;
    while (n < f.size() && f[n] >= '0' && f[n] <= '9') n++;
    f.remove_prefix(n);
    return n > 0;
  };
  if (!digits() || f.empty() || f[0] != '.') return false;
  f.remove_prefix(1);
  return digits() && f.empty();
}

bool python_stdlib_skipped(std::string_view rel) {
  std::string_view first = rel.substr(0, rel.find('/'));
  static constexpr std::string_view kTop[] = {
      "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "dist-packages", "site-packages"};
  for (auto t : kTop)
    if (first == t) return true;
  // config-3.11-x86_64-linux-gnu: libpython3.11.a and the Makefile, for
  // building C extensions (25 MB on Debian 12).
  if (first.size() > 7 && first.substr(0, 7) == "config-" && first[7] >= '0' && first[7] <= '9')
    return true;
  std::string_view l2t = "lib2to3/tests";
  return rel == l2t ||
         (rel.size() > l2t.size() && rel.substr(0, l2t.size()) == l2t && rel[l2t.size()] == '/');
}

// ---- the planner -----------------------------------------------------------------

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

const char* kind_name(RootfsEntry::Kind k) {
  switch (k) {
    case RootfsEntry::Kind::dir:
      return "dir";
    case RootfsEntry::Kind::file:
      return "file";
    case RootfsEntry::Kind::symlink:
      return "link";
  }
  return "?";
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

// What an output DIR is now.
struct OutDir {
  std::string path;  // absolute, clean
  bool exists = false;
  bool empty = true;
};

Result<OutDir> inspect_out_dir(const std::string& dir, bool force) {
  if (dir.empty()) return Error::msg("an output directory (-o DIR) is required");
  OutDir o;
  o.path = absolute(dir);
  if (o.path == "/") return Error::msg("refusing to write a rootfs over /");
  std::string parent = dirname_of(o.path);
  struct stat st;
  if (::stat(parent.c_str(), &st) < 0) return Error::sys(errno, "parent directory " + parent);
  if (!S_ISDIR(st.st_mode)) return Error::sys(ENOTDIR, "parent directory " + parent);
  if (::lstat(o.path.c_str(), &st) < 0) {
    if (errno != ENOENT) return Error::sys(errno, "stat " + o.path);
    return o;
  }
  o.exists = true;
  if (S_ISLNK(st.st_mode)) return Error::msg(o.path + " is a symlink");
  if (!S_ISDIR(st.st_mode)) return Error::msg(o.path + " exists and is not a directory");
  UniqueFd fd(::open(o.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return Error::sys(errno, "open " + o.path);
  DIR* d = ::fdopendir(fd.get());
  if (!d) return Error::sys(errno, "opendir " + o.path);
  fd.release();
  while (struct dirent* e = ::readdir(d)) {
    std::string_view nm = e->d_name;
    if (nm != "." && nm != "..") {
      o.empty = false;
      break;
    }
  }
  ::closedir(d);
  if (!o.empty && !force)
    return Error::msg(o.path + " exists and is not empty (--force replaces it)");
  return o;
}

// The key describes the files the plan saw: a file replaced or changed since
// (a package upgrade during the build) must not be cached under it.
Status unchanged(const RootfsEntry& e, const struct stat& st) {
  int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (st.st_ino != e.ino || st.st_size != e.size || mtime != e.mtime_ns)
    return Error::msg(e.source + " changed while the rootfs was being built; try again");
  return ok();
}

Status write_content(const RootfsEntry& e, int root, const std::string& rel) {
  UniqueFd f(
      ::openat(root, rel.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!f) return Error::sys(errno, "create /" + rel);
  for (size_t off = 0; off < e.content.size();) {
    ssize_t n = ::write(f.get(), e.content.data() + off, e.content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::sys(errno, "write /" + rel);
    off += static_cast<size_t>(n);
  }
  if (::fchmod(f.get(), e.mode) < 0) return Error::sys(errno, "chmod /" + rel);
  return ok();
}

Status copy_file(const RootfsEntry& e, int root, const std::string& rel) {
  UniqueFd src(::open(e.source.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!src) return Error::sys(errno, "open " + e.source);
  struct stat st;
  if (::fstat(src.get(), &st) < 0) return Error::sys(errno, "stat " + e.source);
  if (!S_ISREG(st.st_mode)) return Error::msg(e.source + ": not a regular file");
  TRYV(unchanged(e, st));
  UniqueFd dst(
      ::openat(root, rel.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!dst) return Error::sys(errno, "create /" + rel);
  bool kernel_copy = true;  // copy_file_range, then read/write where it cannot
  for (;;) {
    if (kernel_copy) {
      ssize_t n = ::copy_file_range(src.get(), nullptr, dst.get(), nullptr, 1 << 30, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
        kernel_copy = false;  // both offsets are where the last call left them
        continue;
      }
      if (n < 0) return Error::sys(errno, "copy " + e.source + " to /" + rel);
      if (n == 0) break;
      continue;
    }
    char buf[1 << 16];
    ssize_t n = ::read(src.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::sys(errno, "read " + e.source);
    if (n == 0) break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::write(dst.get(), buf + off, static_cast<size_t>(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Error::sys(errno, "write /" + rel);
      off += w;
    }
  }
  // chown before chmod: chown clears the set-id bits.
  if (::geteuid() == 0 && ::fchown(dst.get(), st.st_uid, st.st_gid) < 0)
    return Error::sys(errno, "chown /" + rel);
  if (::fchmod(dst.get(), st.st_mode & 07777) < 0) return Error::sys(errno, "chmod /" + rel);
  // Python compares a .pyc's recorded source mtime with the .py's.
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  if (::futimens(dst.get(), times) < 0) return Error::sys(errno, "utimens /" + rel);
  return ok();
}

Status materialize(const RootfsPlan& plan, const std::string& dir, bool copy) {
  TRY(UniqueFd root, open_fd(dir, O_PATH | O_DIRECTORY));
  struct stat rst;
  if (::fstat(root.get(), &rst) < 0) return Error::sys(errno, "stat " + dir);
  const int r = root.get();
  // Directories stay 0700 (writable by us) until everything is in them.
  std::vector<std::pair<std::string, mode_t>> dir_modes;
  for (const auto& [path, e] : plan) {
    std::string rel = path.substr(1);
    switch (e.kind) {
      case RootfsEntry::Kind::dir:
        if (::mkdirat(r, rel.c_str(), 0700) < 0) return Error::sys(errno, "mkdir " + path);
        dir_modes.emplace_back(rel, e.mode);
        break;
      case RootfsEntry::Kind::symlink:
        if (::symlinkat(e.target.c_str(), r, rel.c_str()) < 0)
          return Error::sys(errno, "symlink " + path + " -> " + e.target);
        break;
      case RootfsEntry::Kind::file: {
        if (e.source.empty()) {
          TRYV(write_content(e, r, rel));
          break;
        }
        if (!copy && e.dev == rst.st_dev) {
          if (::linkat(AT_FDCWD, e.source.c_str(), r, rel.c_str(), 0) == 0) {
            struct stat st;
            if (::fstatat(r, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0)
              return Error::sys(errno, "stat " + path);
            TRYV(unchanged(e, st));
            break;
          }
          // EPERM: fs.protected_hardlinks for a file we do not own.
          if (errno != EXDEV && errno != EPERM && errno != EMLINK)
            return Error::sys(errno, "link " + e.source + " to " + path);
        }
        TRYV(copy_file(e, r, rel));
        break;
      }
    }
  }
  for (auto it = dir_modes.rbegin(); it != dir_modes.rend(); ++it)
    if (::fchmodat(r, it->first.c_str(), it->second, 0) < 0)
      return Error::sys(errno, "chmod /" + it->first);
  return ok();
}

// Removes a temp dir unless released.
class TempDir {
 public:
  explicit TempDir(std::string p) : path_(std::move(p)) {}
  ~TempDir() {
    if (!path_.empty()) (void)remove_tree(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  void release() { path_.clear(); }

 private:
  std::string path_;
};

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

Status write_rootfs(const RootfsPlan& plan, const std::string& dir, bool copy, bool force) {
  TRYV(check_plan(plan));
  TRY(OutDir out, inspect_out_dir(dir, force));
  if (out.exists && !out.empty) {
    // --force: never replace a directory the rootfs is made from.
    char real[PATH_MAX];
    std::string rdir = ::realpath(out.path.c_str(), real) ? std::string(real) : out.path;
    for (const auto& [path, e] : plan)
      if (!e.source.empty() && (is_within(e.source, rdir) || is_within(e.source, out.path)))
        return Error::msg("refusing to replace " + out.path + ": it holds " + e.source +
                          ", which the rootfs is made from");
  }
  std::string tmpl = join_path(dirname_of(out.path), "." + basename_of(out.path) + ".tmp-XXXXXX");
  if (!::mkdtemp(tmpl.data())) return Error::sys(errno, "mkdtemp " + tmpl);
  TempDir tmp(tmpl);
  TRYV(materialize(plan, tmp.path(), copy));
  if (::chmod(tmp.path().c_str(), 0755) < 0) return Error::sys(errno, "chmod " + tmp.path());
  if (!out.exists || out.empty) {
    // rename(2) replaces an empty directory; a non-empty one (filled since
    // we looked) fails with ENOTEMPTY/EEXIST and we leave it alone.
    if (::rename(tmp.path().c_str(), out.path.c_str()) < 0)
      return Error::sys(errno, "rename " + tmp.path() + " to " + out.path);
    tmp.release();
    return ok();
  }
  if (::renameat2(AT_FDCWD, tmp.path().c_str(), AT_FDCWD, out.path.c_str(), RENAME_EXCHANGE) < 0)
    return Error::sys(errno, "exchange " + tmp.path() + " with " + out.path);
  // tmp now holds the old tree.
  std::string old = tmp.path();
  tmp.release();
  Status st = remove_tree(old);
  if (!st.ok())
    return std::move(st).error().wrap("replaced " + out.path + ", but the old tree stays at " +
                                      old);
  return ok();
}

Result<std::vector<std::string>> rootfs_from_host(const HostRootfsOptions& o) {
  {
    // Refuse a bad DIR before the (longer) planning.
    auto out = inspect_out_dir(o.output, o.force);
    if (!out.ok()) return std::move(out).error().wrap("rootfs");
  }
  TRY(RootfsPlan plan, plan_host_rootfs(o));
  Status st = write_rootfs(plan, o.output, o.copy, o.force);
  if (!st.ok()) return std::move(st).error().wrap("rootfs");
  std::vector<std::string> lines;
  for (const auto& [path, e] : plan) {
    std::string line = std::string(kind_name(e.kind)) + " " + path;
    if (e.kind == RootfsEntry::Kind::symlink) line += " -> " + e.target;
    lines.push_back(std::move(line));
  }
  return lines;
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
