// The deterministic-tier cache of `pack run`: hashing, the key, the store
// (pack_cache.hpp, docs/cache.md).
#include "comet/pack/pack_cache.hpp"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "comet/base/fd.hpp"
#include "comet/base/random.hpp"
#include "comet/base/switches.hpp"
#include "comet/base/sys.hpp"
#include "comet/host/user_dirs.hpp"

namespace comet::runtime::cache {
namespace cap = comet::capability;

std::string store_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (std::string env = switches::cache_dir(); !env.empty()) return env;
  // An ordinary user's store is in its own cache dir (user_dirs.hpp).
  if (rootless()) return join_path(user_dirs().cache, "packs");
  return kDefaultDir;
}

// ---- hashing ----------------------------------------------------------------

namespace {

constexpr size_t kReadChunk = 256 << 10;

// Reads FD to its end into H; the number of bytes.
Result<std::uint64_t> hash_fd(int fd, Sha256& h, const std::string& what) {
  // Not zero-filled: a hit hashes a few small files, and touching 256 KiB
  // of fresh pages would be most of the cost.
  static thread_local std::unique_ptr<char[]> buf(new char[kReadChunk]);
  std::uint64_t total = 0;
  for (;;) {
    ssize_t n = ::read(fd, buf.get(), kReadChunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::sys(errno, "read " + what);
    }
    if (n == 0) break;
    h.update(std::string_view(buf.get(), static_cast<size_t>(n)));
    total += static_cast<std::uint64_t>(n);
  }
  return total;
}

std::int64_t ns_of(const struct timespec& ts) {
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t now_ns() {
  struct timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return ns_of(ts);
}

std::string octal(mode_t m) {
  char b[16];
  std::snprintf(b, sizeof b, "%o", static_cast<unsigned>(m & 07777));
  return b;
}

class TreeHasher {
 public:
  TreeHasher(TreeStats* st, Memo* memo) : st_(st), memo_(memo), now_(now_ns()) {}

  Result<std::string> run(const std::string& root) {
    UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return Error::sys(errno, "hash " + root);
    struct stat s;
    if (::fstat(fd.get(), &s) < 0) return Error::sys(errno, "hash: fstat " + root);
    root_ = root;
    h_.field("comet tree 1");
    record('d', s, ".");
    TRYV(dir(fd.get(), ""));
    if (memo_) *memo_ = std::move(fresh_);
    return h_.hex();
  }

 private:
  void record(char type, const struct stat& s, const std::string& rel) {
    h_.field(std::string_view(&type, 1));
    h_.field(octal(s.st_mode));
    h_.field(std::to_string(s.st_uid) + ":" + std::to_string(s.st_gid));
    h_.field(rel);
    if (st_) st_->entries++;
  }

  Status dir(int dfd, const std::string& rel) {
    int dup = ::fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) return Error::sys(errno, "hash: dup");
    DIR* d = ::fdopendir(dup);
    if (!d) {
      ::close(dup);
      return Error::sys(errno, "hash: opendir " + join_path(root_, rel));
    }
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* de = ::readdir(d)) {
      std::string_view n = de->d_name;
      if (n != "." && n != "..") names.emplace_back(n);
    }
    int err = errno;
    ::closedir(d);
    if (err) return Error::sys(err, "hash: readdir " + join_path(root_, rel));
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      std::string r = rel.empty() ? name : rel + "/" + name;
      struct stat s;
      if (::fstatat(dfd, name.c_str(), &s, AT_SYMLINK_NOFOLLOW) < 0)
        return Error::sys(errno, "hash: lstat " + join_path(root_, r));
      switch (s.st_mode & S_IFMT) {
        case S_IFDIR: {
          record('d', s, r);
          UniqueFd sub(
              ::openat(dfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
          if (!sub) return Error::sys(errno, "hash: open " + join_path(root_, r));
          TRYV(dir(sub.get(), r));
          break;
        }
        case S_IFREG: {
          record('f', s, r);
          h_.field(std::to_string(s.st_size));
          TRY(std::string digest, file(dfd, name, r, s));
          h_.field(digest);
          break;
        }
        case S_IFLNK: {
          record('l', s, r);
          std::string target(static_cast<size_t>(s.st_size) + 1, '\0');
          ssize_t n = ::readlinkat(dfd, name.c_str(), target.data(), target.size());
          if (n < 0) return Error::sys(errno, "hash: readlink " + join_path(root_, r));
          target.resize(static_cast<size_t>(n));
          h_.field(target);
          break;
        }
        default:
          record('o', s, r);
          h_.field(std::to_string(s.st_mode & S_IFMT) + " " + std::to_string(s.st_rdev));
      }
    }
    return {};
  }

  Result<std::string> file(int dfd, const std::string& name, const std::string& rel,
                           const struct stat& s) {
    MemoLine line{static_cast<std::uint64_t>(s.st_dev),
                  static_cast<std::uint64_t>(s.st_ino),
                  static_cast<std::uint64_t>(s.st_size),
                  ns_of(s.st_mtim),
                  ns_of(s.st_ctim),
                  ""};
    if (st_) {
      st_->files++;
      st_->bytes += line.size;
    }
    if (memo_) {
      auto it = memo_->find(rel);
      if (it != memo_->end()) {
        const MemoLine& m = it->second;
        if (m.dev == line.dev && m.ino == line.ino && m.size == line.size &&
            m.mtime_ns == line.mtime_ns && m.ctime_ns == line.ctime_ns && m.sha256.size() == 64) {
          fresh_[rel] = m;
          return m.sha256;
        }
      }
    }
    UniqueFd fd(::openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return Error::sys(errno, "hash: open " + join_path(root_, rel));
    ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    Sha256 inner;
    TRY(std::uint64_t n, hash_fd(fd.get(), inner, join_path(root_, rel)));
    struct stat after;
    if (::fstat(fd.get(), &after) < 0) return Error::sys(errno, "hash: fstat " + rel);
    if (n != line.size || after.st_ino != s.st_ino || ns_of(after.st_mtim) != line.mtime_ns)
      return Error::msg("hash: " + join_path(root_, rel) + " changed while it was hashed");
    if (st_) st_->hashed += n;
    line.sha256 = inner.hex();
    // A file changed within the settle time could change again in the same
    // timestamp tick without its identity changing: not memoized.
    if (memo_ && now_ - line.ctime_ns >= kMemoSettleNs && rel.find('\n') == std::string::npos)
      fresh_[rel] = line;
    return line.sha256;
  }

  Sha256 h_;
  TreeStats* st_;
  Memo* memo_;
  Memo fresh_;
  std::int64_t now_;
  std::string root_;
};

}  // namespace

Result<std::string> hash_file(const std::string& path, std::uint64_t* size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return Error::sys(errno, "open " + path);
  Sha256 h;
  TRY(std::uint64_t n, hash_fd(fd.get(), h, path));
  if (size) *size = n;
  return h.hex();
}

Result<std::string> hash_tree(const std::string& root, TreeStats* stats, Memo* memo) {
  TreeHasher t(stats, memo);
  return t.run(root);
}

static constexpr std::string_view kMemoHead = "comet-runtime tree memo 1\t";

std::string render_memo(const std::string& root, const Memo& m) {
  std::string out = std::string(kMemoHead) + root + "\n";
  for (const auto& [rel, l] : m) {
    out += l.sha256 + "\t" + std::to_string(l.dev) + "\t" + std::to_string(l.ino) + "\t" +
           std::to_string(l.size) + "\t" + std::to_string(l.mtime_ns) + "\t" +
           std::to_string(l.ctime_ns) + "\t" + rel + "\n";
  }
  return out;
}

Memo parse_memo(std::string_view text, const std::string& root) {
  Memo m;
  std::string head = std::string(kMemoHead) + root + "\n";
  if (text.substr(0, head.size()) != head) return m;
  text.remove_prefix(head.size());
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) break;  // a torn last line
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    std::vector<std::string> f;
    size_t pos = 0;
    for (int i = 0; i < 6; i++) {
      size_t tab = line.find('\t', pos);
      if (tab == std::string_view::npos) break;
      f.emplace_back(line.substr(pos, tab - pos));
      pos = tab + 1;
    }
    if (f.size() != 6 || f[0].size() != 64 || pos >= line.size()) continue;
    try {
      MemoLine l{std::stoull(f[1]), std::stoull(f[2]), std::stoull(f[3]),
                 std::stoll(f[4]),  std::stoll(f[5]),  f[0]};
      m[std::string(line.substr(pos))] = l;
    } catch (const std::exception&) {
    }
  }
  return m;
}

// ---- cacheability and the key ------------------------------------------------

Decision decide(const cap::Manifest& m, const Flags& f) {
  const cap::Capabilities& c = m.capabilities;
  std::string pack = m.name + "@" + m.version;
  if (c.tier != cap::Tier::read_only) {
    std::string tail = ": " + pack + " is a " + std::string(cap::to_string(c.tier)) +
                       " pack; only read-only packs are cached";
    if (f.upstream == Upstream::allow) return {false, "", "pack run --cache=allow-upstream" + tail};
    if (f.cache_dir_given) return {false, "", "pack run --cache-dir" + tail};
    return {false, "a " + std::string(cap::to_string(c.tier)) + " pack is never cached", ""};
  }
  if (f.no_cache) return {false, "--no-cache", ""};
  bool egress = c.egress.any || !c.egress.entries.empty();
  if (egress && f.upstream != Upstream::allow)
    return {false, "the pack declares egress (cached only with --cache=allow-upstream)", ""};
  return {true, "", ""};
}

std::string compose_key(const KeyInputs& in) {
  Sha256 h;
  h.field(kKeyFormat);
  auto named = [&h](std::string_view name, std::string_view value) {
    h.field(name);
    h.field(value);
  };
  auto list = [&h](std::string_view name, const std::vector<std::string>& v) {
    h.field(name);
    h.field(std::to_string(v.size()));
    for (const auto& s : v) h.field(s);
  };
  named("manifest", in.manifest);
  named("pack", in.pack_tree);
  named("rootfs", in.rootfs);
  named("inputs", in.inputs);
  list("args", in.args);
  list("env", in.env);
  named("runtime", in.runtime);
  named("policy", in.policy);
  return h.hex();
}

namespace {

int build_id_cb(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::string*>(data);
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((nh->n_namesz + 3) & ~3u);
      const char* next = desc + ((nh->n_descsz + 3) & ~3u);
      if (next > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
          std::string_view(name, 4) == std::string_view("GNU\0", 4)) {
        static const char* kHex = "0123456789abcdef";
        for (unsigned j = 0; j < nh->n_descsz; j++) {
          auto c = static_cast<unsigned char>(desc[j]);
          *out += kHex[c >> 4];
          *out += kHex[c & 15];
        }
        return 1;
      }
      p = next;
    }
  }
  return 1;  // only the first object: the executable itself
}

}  // namespace

std::string runtime_identity() {
  static const std::string id = [] {
    std::string build_id;
    ::dl_iterate_phdr(build_id_cb, &build_id);
    if (!build_id.empty()) return std::string(COMET_VERSION) + " build-id:" + build_id;
    auto d = hash_file("/proc/self/exe");
    return std::string(COMET_VERSION) + " sha256:" + (d.ok() ? *d : std::string("unknown"));
  }();
  return id;
}

bool valid_key(std::string_view key) {
  return key.size() == 64 && std::all_of(key.begin(), key.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// ---- entries -----------------------------------------------------------------

std::string entry_to_json(const Entry& e) {
  nlohmann::ordered_json j;
  j["format"] = kKeyFormat;
  j["key"] = e.key;
  j["pack"] = e.pack;
  j["created"] = e.created;
  j["exit"] = e.exit_status;
  j["allow_upstream"] = e.allow_upstream;
  j["dirs"] = e.dirs;
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const auto& f : e.files)
    files.push_back({{"path", f.path}, {"sha256", f.sha256}, {"size", f.size}, {"mode", f.mode}});
  j["files"] = files;
  // ASCII (\uXXXX): `cache show` prints it, with names the agent chose
  return j.dump(2, ' ', true, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<Entry> entry_from_json(std::string_view text) {
  try {
    auto j = nlohmann::json::parse(text);
    if (j.at("format").get<std::string>() != kKeyFormat)
      return Error::msg("entry.json: format is not \"" + std::string(kKeyFormat) + "\"");
    Entry e;
    e.key = j.at("key").get<std::string>();
    e.pack = j.at("pack").get<std::string>();
    e.created = j.at("created").get<std::string>();
    e.exit_status = j.at("exit").get<int>();
    e.allow_upstream = j.at("allow_upstream").get<bool>();
    e.dirs = j.at("dirs").get<std::vector<std::string>>();
    for (const auto& f : j.at("files")) {
      FileRecord r;
      r.path = f.at("path").get<std::string>();
      r.sha256 = f.at("sha256").get<std::string>();
      r.size = f.at("size").get<std::uint64_t>();
      r.mode = f.at("mode").get<mode_t>();
      e.files.push_back(std::move(r));
    }
    return e;
  } catch (const std::exception& ex) {
    return Error::msg(std::string("entry.json: ") + ex.what());
  }
}

std::vector<std::string> plan_eviction(std::vector<Listed> entries, std::uint64_t max_bytes) {
  std::sort(entries.begin(), entries.end(), [](const Listed& a, const Listed& b) {
    return a.used_ns != b.used_ns ? a.used_ns < b.used_ns : a.key < b.key;
  });
  std::uint64_t total = 0;
  for (const auto& e : entries) total += e.size;
  std::vector<std::string> out;
  for (const auto& e : entries) {
    if (total <= max_bytes) break;
    out.push_back(e.key);
    total -= e.size;
  }
  return out;
}

std::optional<std::uint64_t> parse_size(std::string_view s) {
  size_t i = 0;
  std::uint64_t n = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    std::uint64_t d = static_cast<std::uint64_t>(s[i] - '0');
    if (n > (UINT64_MAX - d) / 10) return std::nullopt;
    n = n * 10 + d;
    i++;
  }
  if (i == 0) return std::nullopt;
  std::string_view unit = s.substr(i);
  int shift = 0;
  if (!unit.empty()) {
    switch (unit[0]) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      case 't':
      case 'T':
        shift = 40;
        break;
      case 'b':
      case 'B':
        shift = -1;
        break;
      default:
        return std::nullopt;
    }
    std::string_view rest = unit.substr(1);
    if (shift < 0) {
      if (!rest.empty()) return std::nullopt;
      shift = 0;
    } else if (!(rest.empty() || rest == "B" || rest == "iB" || rest == "b")) {
      return std::nullopt;
    }
  }
  if (shift && n > (UINT64_MAX >> shift)) return std::nullopt;
  return n << shift;
}

std::string format_size(std::uint64_t b) {
  const char* units[] = {"B", "K", "M", "G", "T"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%lluB", static_cast<unsigned long long>(b));
  else
    std::snprintf(buf, sizeof buf, "%.1f%s", v, units[u]);
  return buf;
}

// ---- the store -----------------------------------------------------------------

namespace fs = std::filesystem;

namespace {

// Calls fn(rel, status, entry) for every entry under dir, symlinks not
// followed, until fn returns false. Returns the walk's error, if any.
template <class Fn>
std::error_code walk_tree(const std::string& dir, Fn&& fn) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    auto st = it->symlink_status(ec);
    if (ec) break;
    if (!fn(it->path().lexically_relative(dir).string(), st, *it)) break;
  }
  return ec;
}

}  // namespace

std::string Store::entry_dir(const std::string& key) const {
  return join_path(join_path(dir_, key.substr(0, 2)), key);
}

Status Store::prepare() const {
  TRYV(mkdir_p(dir_, 0700));
  TRYV(mkdir_p(join_path(dir_, "tmp"), 0700));
  TRYV(mkdir_p(join_path(dir_, "memo"), 0700));
  return {};
}

std::string Store::verify(const std::string& entry_dir, const Entry& e) {
  std::map<std::string, const FileRecord*> want;
  for (const auto& f : e.files) want[f.path] = &f;
  std::set<std::string> want_dirs(e.dirs.begin(), e.dirs.end());
  std::set<std::string> seen;
  std::string bad;
  std::error_code ec = walk_tree(
      entry_dir, [&](const std::string& rel, fs::file_status st, const fs::directory_entry&) {
        if (fs::is_directory(st)) {
          if (!want_dirs.count(rel)) bad = "unexpected directory " + rel;
        } else if (rel == "entry.json" && fs::is_regular_file(st)) {
          return true;
        } else if (!fs::is_regular_file(st) || !want.count(rel)) {
          bad = "unexpected " + std::string(fs::is_regular_file(st) ? "file " : "entry ") + rel;
        }
        seen.insert(rel);
        return bad.empty();
      });
  if (!bad.empty()) return bad;
  if (ec) return "cannot read the entry: " + ec.message();
  for (const auto& d : want_dirs)
    if (!seen.count(d)) return "missing directory " + d;
  for (const auto& [path, rec] : want) {
    if (!seen.count(path)) return "missing " + path;
    std::uint64_t size = 0;
    auto digest = hash_file(join_path(entry_dir, path), &size);
    if (!digest.ok()) return digest.error().what();
    if (size != rec->size)
      return path + ": " + std::to_string(size) + " bytes, recorded " + std::to_string(rec->size);
    if (*digest != rec->sha256) return path + ": content does not match its recorded SHA-256";
  }
  return "";
}

Result<std::optional<Entry>> Store::lookup(const std::string& key) const {
  std::string dir = entry_dir(key);
  struct stat st;
  if (::lstat(dir.c_str(), &st) < 0) {
    if (errno == ENOENT) return std::optional<Entry>();
    return Error::sys(errno, "lstat " + dir);
  }
  if (!S_ISDIR(st.st_mode)) return Error::msg("not a directory");
  auto text = read_file(join_path(dir, "entry.json"));
  if (!text.ok()) {
    if (text.error().err() == ENOENT) return Error::msg("partial entry (no entry.json)");
    return std::move(text).error();
  }
  TRY(Entry e, entry_from_json(*text));
  if (e.key != key) return Error::msg("entry.json names another key " + e.key);
  std::string problem = verify(dir, e);
  if (!problem.empty()) return Error::msg(problem);
  return std::optional<Entry>(std::move(e));
}

Status Store::discard(const std::string& key) const {
  std::string dir = entry_dir(key);
  std::string away = join_path(join_path(dir_, "tmp"), "discard." + key + "." + random_hex(6));
  if (::rename(dir.c_str(), away.c_str()) < 0) {
    if (errno == ENOENT) return {};
    return remove_tree(dir);  // tmp/ missing or another filesystem: in place
  }
  return remove_tree(away);
}

void Store::touch(const std::string& key) const {
  (void)::utimensat(AT_FDCWD, entry_dir(key).c_str(), nullptr, 0);
}

Result<std::string> Store::make_temp(const std::string& key) const {
  std::string t = join_path(join_path(dir_, "tmp"),
                            key + "." + std::to_string(::getpid()) + "." + random_hex(6));
  if (::mkdir(t.c_str(), 0700) < 0) return Error::sys(errno, "mkdir " + t);
  return t;
}

Result<bool> Store::commit(const std::string& temp, Entry e) const {
  auto drop = [&temp] { (void)remove_tree(temp); };
  e.files.clear();
  e.dirs.clear();
  std::vector<std::string> rels;
  std::string odd;
  std::error_code ec =
      walk_tree(temp, [&](const std::string& rel, fs::file_status st, const fs::directory_entry&) {
        if (fs::is_directory(st)) {
          e.dirs.push_back(rel);
        } else if (fs::is_regular_file(st)) {
          rels.push_back(rel);
        } else {
          odd = rel;
          return false;
        }
        return true;
      });
  if (!odd.empty()) {
    drop();
    return Error::msg("cache: " + odd + " is not a regular file or directory");
  }
  if (ec) {
    drop();
    return Error::sys(ec.value(), "cache: read " + temp);
  }
  std::sort(e.dirs.begin(), e.dirs.end());
  std::sort(rels.begin(), rels.end());
  for (const auto& rel : rels) {
    FileRecord r;
    r.path = rel;
    std::string p = join_path(temp, rel);
    auto d = hash_file(p, &r.size);
    if (!d.ok()) {
      drop();
      return std::move(d).error();
    }
    r.sha256 = *d;
    struct stat st;
    if (::lstat(p.c_str(), &st) == 0) r.mode = st.st_mode & 07777;
    e.files.push_back(std::move(r));
  }
  Status w = write_file_atomic(join_path(temp, "entry.json"), entry_to_json(e), 0600);
  if (!w.ok()) {
    drop();
    return std::move(w).error();
  }
  std::string parent = join_path(dir_, e.key.substr(0, 2));
  if (::mkdir(parent.c_str(), 0700) < 0 && errno != EEXIST) {
    int err = errno;
    drop();
    return Error::sys(err, "mkdir " + parent);
  }
  std::string final_dir = entry_dir(e.key);
  if (::rename(temp.c_str(), final_dir.c_str()) < 0) {
    int err = errno;
    drop();
    if (err == EEXIST || err == ENOTEMPTY) return false;  // another run recorded it first
    return Error::sys(err, "rename " + temp + " to " + final_dir);
  }
  return true;
}

namespace {

std::uint64_t tree_size(const std::string& dir) {
  std::uint64_t total = 0;
  (void)walk_tree(dir, [&](const std::string&, fs::file_status st, const fs::directory_entry& d) {
    std::error_code ec;
    if (fs::is_regular_file(st))
      if (auto n = d.file_size(ec); !ec) total += n;
    return true;
  });
  return total;
}

}  // namespace

std::vector<Listed> Store::list() const {
  std::vector<Listed> out;
  std::error_code ec;
  for (const auto& shard : fs::directory_iterator(dir_, ec)) {
    std::string sname = shard.path().filename().string();
    if (sname.size() != 2 || !shard.is_directory(ec)) continue;
    std::error_code ec2;
    for (const auto& ent : fs::directory_iterator(shard.path(), ec2)) {
      std::string key = ent.path().filename().string();
      if (!valid_key(key) || key.substr(0, 2) != sname) continue;
      Listed l;
      l.key = key;
      l.dir = ent.path().string();
      struct stat st;
      if (::lstat(l.dir.c_str(), &st) < 0 || !S_ISDIR(st.st_mode)) continue;
      l.used_ns = ns_of(st.st_mtim);
      l.size = tree_size(l.dir);
      if (auto text = read_file(join_path(l.dir, "entry.json")); text.ok())
        if (auto e = entry_from_json(*text); e.ok()) l.entry = std::move(*e);
      out.push_back(std::move(l));
    }
  }
  std::sort(out.begin(), out.end(), [](const Listed& a, const Listed& b) { return a.key < b.key; });
  return out;
}

namespace {
std::string memo_path(const std::string& store, const std::string& root) {
  return join_path(join_path(store, "memo"), sha256_hex(root));
}
}  // namespace

Memo Store::load_memo(const std::string& root) const {
  auto text = read_file(memo_path(dir_, root));
  if (!text.ok()) return {};
  return parse_memo(*text, root);
}

void Store::save_memo(const std::string& root, const Memo& m) const {
  (void)write_file_atomic(memo_path(dir_, root), render_memo(root, m), 0600);
}

Status Store::prune(std::optional<std::uint64_t> max_bytes,
                    std::vector<std::string>* removed) const {
  auto say = [removed](const std::string& s) {
    if (removed) removed->push_back(s);
  };
  std::error_code ec;
  // Temp dirs whose writer is gone: <key>.<pid>.<random>, discard.*.
  std::string tmp = join_path(dir_, "tmp");
  for (const auto& t : fs::directory_iterator(tmp, ec)) {
    std::string name = t.path().filename().string();
    bool stale = name.rfind("discard.", 0) == 0;
    auto parts = split(name, '.');
    if (!stale && parts.size() == 3) {
      int pid = 0;
      try {
        pid = std::stoi(parts[1]);
      } catch (const std::exception&) {
      }
      stale = pid <= 0 || (::kill(pid, 0) < 0 && errno == ESRCH);
    } else if (!stale) {
      stale = true;  // not ours: nothing else belongs in tmp/
    }
    if (!stale) continue;
    TRYV(remove_tree(t.path().string()));
    say("removed temp " + join_path("tmp", name));
  }
  // Entries that are partial or do not verify.
  std::vector<Listed> valid;
  for (auto& l : list()) {
    std::string problem = l.entry ? verify(l.dir, *l.entry) : "partial entry (no entry.json)";
    if (problem.empty() && l.entry->key != l.key) problem = "entry.json names another key";
    if (problem.empty()) {
      valid.push_back(std::move(l));
      continue;
    }
    TRYV(discard(l.key));
    say("removed corrupt entry " + l.key + ": " + problem);
  }
  // Memos of trees that are gone.
  for (const auto& m : fs::directory_iterator(join_path(dir_, "memo"), ec)) {
    auto text = read_file(m.path().string());
    std::string root;
    if (text.ok() && text->rfind(kMemoHead, 0) == 0) {
      size_t nl = text->find('\n');
      root = text->substr(kMemoHead.size(), nl - kMemoHead.size());
    }
    if (!root.empty() && path_exists(root)) continue;
    std::error_code rec;
    fs::remove(m.path(), rec);
    say("removed memo " + m.path().filename().string());
  }
  if (max_bytes) {
    std::map<std::string, std::uint64_t> sizes;
    for (const auto& l : valid) sizes[l.key] = l.size;
    for (const auto& key : plan_eviction(valid, *max_bytes)) {
      TRYV(discard(key));
      say("evicted " + key + " (" + format_size(sizes[key]) + ")");
    }
  }
  return {};
}

}  // namespace comet::runtime::cache
