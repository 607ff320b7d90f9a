// `comet-runtime pack validate|lint|bundle|explain|run`: the SoyaPack
// tooling over capability/ (parse, lint, compile, match). Only `run` starts
// a container (through run_container()).
#include "comet/pack/pack_cli.hpp"
#include "comet/base/fault.hpp"
#include "comet/base/random.hpp"
#include "comet/base/switches.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <variant>

#include "comet/base/sys.hpp"
#include "comet/capability/compile.hpp"
#include "comet/capability/lint.hpp"
#include "comet/capability/manifest.hpp"
#include "comet/capability/match.hpp"
#include "comet/host/log.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/oci/spec.hpp"
#include "comet/pack/hostroot.hpp"
#include "comet/pack/pack_cache.hpp"
#include "comet/reporting/violations.hpp"

namespace comet::runtime {
namespace cap = comet::capability;
namespace {

// PATH is a pack directory or its soyapack.yaml.
Result<std::pair<std::string, std::string>> read_manifest(const std::string& path) {
  std::string file = path;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    file = join_path(path, "soyapack.yaml");
  TRY(std::string text, read_file(file));
  return std::make_pair(file, std::move(text));
}

std::string pack_dir_of(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return path;
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string abs_path(const std::string& p) {
  // Test-only (fault.hpp): reach the compiler's own guard for relative paths.
  if (fault_is("pack-relative-paths")) return p;
  std::error_code ec;
  auto a = std::filesystem::absolute(p, ec);
  return ec ? p : a.lexically_normal().string();
}

struct Loaded {
  std::string file;  // soyapack.yaml
  std::string dir;   // the pack directory, absolute
  cap::Manifest man;
  std::string text;  // the manifest's bytes (the cache key)
};

// Reads and parses (and with `validate`, validates) the manifest at PATH.
// An error is logged and comes back as the exit code the verb uses for it:
// `unreadable` when the file cannot be read, `invalid` when it is refused.
std::variant<Loaded, int> load(const std::string& path, bool validate, int unreadable,
                               int invalid) {
  auto m = read_manifest(path);
  if (!m.ok()) {
    log::error(m.error().what());
    return unreadable;
  }
  auto man =
      validate ? cap::load_manifest(m->second, m->first) : cap::parse_manifest(m->second, m->first);
  if (!man.ok()) {
    log::error(man.error().what());
    return invalid;
  }
  return Loaded{m->first, abs_path(pack_dir_of(path)), std::move(*man), std::move(m->second)};
}

#define TRY_EXIT(decl, expr) TRY_EXIT_IMPL_(COMET_CONCAT(try_exit_, __LINE__), decl, expr)
#define TRY_EXIT_IMPL_(tmp, decl, expr)                            \
  auto tmp = (expr);                                               \
  if (std::holds_alternative<int>(tmp)) return std::get<int>(tmp); \
  decl = std::move(std::get<Loaded>(tmp))

// The pack as the sandbox sees it at /workdir: a copy of the pack directory
// (regular files, directories and symlinks; nothing else), with a mount
// point for every per-run host directory under /workdir, since /workdir is
// read-only inside and the pack directory itself is never written.
Status copy_sparse(const std::string& from, const std::string& to, std::uint64_t& budget);

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

}  // namespace

int pack_validate(const std::string& path) {
  TRY_EXIT(Loaded l, load(path, /*validate=*/true, 2, 1));
  std::printf("%s: %s@%s is valid\n", l.file.c_str(), l.man.name.c_str(), l.man.version.c_str());
  return 0;
}

int pack_lint(const std::string& path, bool strict, const std::string& format,
              const std::string& rootfs) {
  // lint runs on anything that parses; shape errors make the input unusable.
  TRY_EXIT(Loaded l, load(path, /*validate=*/false, 2, 2));
  cap::LintOptions opts;
  opts.strict = strict;
  if (!rootfs.empty()) {
    opts.exists_in_rootfs = [rootfs](const std::string& p) {
      struct stat st;
      return ::stat(join_path(rootfs, p).c_str(), &st) == 0;
    };
  }
  auto findings = cap::lint(l.man, opts);
  if (format == "json")
    std::printf("%s\n", cap::render_json(findings, l.file, 2).c_str());
  else
    std::fputs(cap::render_text(findings).c_str(), stdout);
  return cap::has_errors(findings) ? 1 : 0;
}

int pack_bundle(const std::string& pack, const std::string& rootfs, const std::string& out,
                const std::string& input, const std::string& output) {
  TRY_EXIT(Loaded l, load(pack, /*validate=*/true, 2, 1));
  if (rootfs.empty()) {
    log::error("pack bundle: --rootfs DIR is required");
    return 2;
  }
  cap::CompileInputs in;
  in.rootfs = abs_path(rootfs);
  in.pack_dir = abs_path(join_path(out, "workdir"));
  if (!input.empty()) in.host_dirs["/workdir/inputs"] = abs_path(input);
  if (!output.empty()) in.host_dirs["/workdir/out"] = abs_path(output);
  auto spec = cap::compile(l.man, in);
  if (!spec.ok()) {
    log::error(spec.error().what());
    return 1;
  }
  // Nothing is written unless the whole config compiled.
  Status st = mkdir_p(out, 0755);
  if (st.ok()) st = stage_workdir(l.dir, in.pack_dir, in.host_dirs);
  if (st.ok())
    st = write_file_atomic(join_path(out, "config.json"), oci::to_json(*spec, 2) + "\n", 0644);
  if (!st.ok()) {
    log::error(st.error().what());
    return 1;
  }
  std::printf("%s\n", join_path(out, "config.json").c_str());
  return 0;
}

int pack_explain(const std::string& pack, const std::string& path, const std::string& host) {
  TRY_EXIT(Loaded l, load(pack, /*validate=*/true, 2, 2));
  const cap::Manifest* man = &l.man;
  if (path.empty() == host.empty()) {
    log::error("pack explain: give exactly one of --path P or --host HOST:PORT[:PROTO]");
    return 2;
  }
  if (!path.empty()) {
    auto d = cap::fs_decision(man->capabilities, path);
    std::string by = d.path.empty() ? d.entry : d.path + " " + d.entry;
    if (d.access == cap::Access::denied)
      std::printf("denied: %s (no fs entry matches; the path does not exist in the sandbox)\n",
                  path.c_str());
    else
      std::printf("allowed: %s %s, by %s\n", std::string(cap::to_string(d.access)).c_str(),
                  path.c_str(), by.c_str());
    return d.access == cap::Access::denied ? 1 : 0;
  }
  // HOST:PORT[:PROTO], PROTO default https (tcp for other ports than 443/80).
  auto parts = split(host, ':');
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty()) {
    log::error("pack explain --host \"" + host + "\": expected HOST:PORT[:PROTO]");
    return 2;
  }
  int port = 0;
  try {
    port = std::stoi(parts[1]);
  } catch (const std::exception&) {
  }
  if (port < 1 || port > 65535) {
    log::error("pack explain --host \"" + host + "\": port must be 1..65535");
    return 2;
  }
  std::string proto_s = parts.size() == 3 ? parts[2]
                                          : (port == 80    ? "http"
                                             : port == 443 ? "https"
                                                           : "tcp");
  auto proto = cap::parse_protocol(proto_s);
  if (!proto) {
    log::error("pack explain --host \"" + host + "\": unknown protocol \"" + proto_s + "\"");
    return 2;
  }
  auto d = cap::egress_allows(man->capabilities, parts[0], port, *proto);
  std::string target = parts[0] + ":" + std::to_string(port) + ":" + proto_s;
  if (d.allowed)
    std::printf("allowed: %s, by %s %s\n", target.c_str(), d.path.c_str(), d.entry.c_str());
  else
    std::printf("denied: %s (no match)\n", target.c_str());
  return d.allowed ? 0 : 1;
}

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

// Copies the agent's output tree into DST: directories and regular files
// only (a symlink or device the agent made is skipped and named; names are
// shown escaped by the logger), never following anything. DST is created if
// needed. limit: resources.output (data bytes plus kEntryCost per entry).
Status collect_output(const std::string& src, const std::string& dst,
                      std::uint64_t limit = UINT64_MAX) {
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

// The per-run directory and everything under it, removed on every path out
// (the mounts made under it first: RunMounts).
struct RunDir {
  std::string path;
  bool keep = false;
  ~RunDir() {
    if (!path.empty() && !keep) {
      unmount_under(path);
      auto st = remove_tree(path);
      if (!st.ok()) log::warn("pack run: " + st.error().what());
    }
  }
};

// What the agent must not learn (issue 21, item 12): /proc/self/mountinfo
// shows, for every bind mount, the source's path inside its file system
// (the run directory under the state root, --input, --rootfs). So nothing a
// pack sees is a bind of a host directory: what it reads is an overlay
// whose layers are named "/proc/self/fd/N" (an fd of this process at mount
// time: the string is all mountinfo keeps), and what it writes is a tmpfs
// of its own, sized by the pack's limits. All of it under the run
// directory, unmounted (MNT_DETACH) when the run ends; `delete --force ID`
// does the same for a run that was killed.
class RunMounts {
 public:
  ~RunMounts() {
    for (auto it = points_.rbegin(); it != points_.rend(); ++it)
      (void)::umount2(it->c_str(), MNT_DETACH);
  }
  // A tmpfs at DIR (made if missing): size bytes, owned by uid:gid.
  Status tmpfs(const std::string& dir, std::uint64_t size, uint32_t uid, uint32_t gid) {
    if (::mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST)
      return Error::sys(errno, "create " + dir);
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
  // A read-only view of LOWER at DIR: an overlay of LOWER and an empty
  // directory (overlayfs wants two lower layers without an upper one).
  // upper: a writable view instead (a tmpfs holds the upper layer: the
  // runtime makes its mount points there, LOWER is never written).
  Status view(const std::string& dir, const std::string& lower, const std::string& scratch,
              bool upper) {
    if (::mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST)
      return Error::sys(errno, "create " + dir);
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

 private:
  static std::string fd_name(int fd) { return "/proc/self/fd/" + std::to_string(fd); }
  std::vector<std::string> points_;
};

}  // namespace

// ---- the deterministic-tier cache (pack_cache.hpp, docs/cache.md) ------------

namespace {

// A plain line on this process's stderr, outside the log's framing: the
// `cache hit|miss|stored <key>` lines a user (and a test) reads.
void say(const std::string& line) {
  (void)write_fully(STDERR_FILENO, line + "\n");
}

// The tee: one child forked before run_container (the runtime process
// itself stays single-threaded; create forks later). It copies what the
// agent writes on the two pipes to the original stdout/stderr and to the
// capture files, and exits once the parent says the run is over (a byte on
// CTL) after draining what is left, even if some process still holds a
// write end. Exit status 0: both streams captured whole; 1: a stream went
// over kMaxStreamBytes or a capture write failed (the run is not stored).
struct TeeStream {
  int in, orig, cap;
  std::uint64_t n;
  bool orig_ok, cap_ok;
  bool tty;                // orig is a terminal: control characters are shown, not sent
  std::string carry = {};  // an incomplete UTF-8 sequence from the last read
};

// What an agent writes to the caller's terminal is shown, never obeyed
// (issue 21, red team): C0 controls but tab, newline and carriage return,
// DEL, and C1 controls (UTF-8 C2 80..9F) become caret notation (^[ for
// ESC), so no escape sequence reaches the terminal (no OSC 52 clipboard
// write, no title, no cleared screen with a fake prompt).
std::string shown(const char* buf, size_t n, std::string* carry = nullptr) {
  return visible_controls(std::string_view(buf, n), true, carry);
}

void tee_pass(TeeStream& s, const char* buf, size_t n) noexcept {
  if (s.orig_ok) {
    // a closed reader: keep recording
    if (s.tty) {
      try {
        std::string in = s.carry + std::string(buf, n);
        s.orig_ok = write_fully(s.orig, shown(in.data(), in.size(), &s.carry));
      } catch (...) {
        s.orig_ok = false;
      }
    } else {
      s.orig_ok = write_fully(s.orig, std::string_view(buf, n));
    }
  }
  if (!s.cap_ok) return;
  if (s.n + n > cache::kMaxStreamBytes || !write_fully(s.cap, std::string_view(buf, n))) {
    s.cap_ok = false;
    return;
  }
  s.n += n;
}

[[noreturn]] void tee_main(TeeStream* s, int ctl) noexcept {
  struct sigaction sa = {};
  sa.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2})
    ::sigaction(sig, &sa, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  static char buf[1 << 16];
  bool drain = false;
  while (!drain || s[0].in >= 0 || s[1].in >= 0) {
    if (s[0].in < 0 && s[1].in < 0) {
      // Both streams ended: wait for the word (so the parent's write to
      // CTL always has a reader).
      struct pollfd c = {ctl, POLLIN, 0};
      if (::poll(&c, 1, -1) < 0 && errno == EINTR) continue;
      break;
    }
    struct pollfd p[3] = {{s[0].in, POLLIN, 0}, {s[1].in, POLLIN, 0}, {ctl, POLLIN, 0}};
    if (!drain && ::poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (!drain && p[2].revents) {
      // The run is over: every agent process is gone and what it wrote is
      // in the pipes. Read them empty without blocking.
      drain = true;
      for (int i = 0; i < 2; i++)
        if (s[i].in >= 0) ::fcntl(s[i].in, F_SETFL, O_NONBLOCK);
    }
    for (int i = 0; i < 2; i++) {
      if (s[i].in < 0 || (!drain && !p[i].revents)) continue;
      ssize_t n = ::read(s[i].in, buf, sizeof buf);
      if (n > 0) {
        tee_pass(s[i], buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        if (s[i].tty && !s[i].carry.empty() && s[i].orig_ok) {  // a sequence the stream never ended
          try {
            s[i].orig_ok = write_fully(s[i].orig, shown(s[i].carry.data(), s[i].carry.size()));
          } catch (...) {
          }
        }
        ::close(s[i].in);
        s[i].in = -1;
      }
    }
  }
  _exit(s[0].cap_ok && s[1].cap_ok ? 0 : 1);
}

// Points this process's stdin at /dev/null and stdout/stderr at pipes read
// by the tee for the length of the run; the container inherits them.
//
// The runtime's own log lines would land in the capture too (the logger
// writes to fd 2), so while the capture runs, a logger on stderr writes to
// a copy of the original stderr (log::set_fd).
class StdioCapture {
 public:
  ~StdioCapture() { (void)finish(); }

  // dir "": no capture, only the terminal guard (the agent's stdin is
  // /dev/null, its output shown through the tee, never the caller's tty).
  Status start(const std::string& dir, const Globals& g) {
    UniqueFd cap_out, cap_err;
    if (!dir.empty()) {
      cap_out.reset(
          ::open(join_path(dir, "stdout").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
      if (!cap_out) return Error::sys(errno, "create " + join_path(dir, "stdout"));
      cap_err.reset(
          ::open(join_path(dir, "stderr").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
      if (!cap_err) return Error::sys(errno, "create " + join_path(dir, "stderr"));
    }
    int out[2], err[2], ctl[2];
    if (::pipe2(out, O_CLOEXEC) < 0) return Error::sys(errno, "pipe2");
    UniqueFd out_r(out[0]), out_w(out[1]);
    if (::pipe2(err, O_CLOEXEC) < 0) return Error::sys(errno, "pipe2");
    UniqueFd err_r(err[0]), err_w(err[1]);
    if (::pipe2(ctl, O_CLOEXEC) < 0) return Error::sys(errno, "pipe2");
    UniqueFd ctl_r(ctl[0]), ctl_w(ctl[1]);
    UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!null) return Error::sys(errno, "open /dev/null");
    for (int i = 0; i < 3; i++) {
      saved_[i].reset(::fcntl(i, F_DUPFD_CLOEXEC, 3));
      if (!saved_[i]) return Error::sys(errno, "dup fd " + std::to_string(i));
    }
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) return Error::sys(errno, "fork the output tee");
    if (pid == 0) {
      TeeStream s[2] = {{out_r.get(), saved_[1].get(), cap_out.get(), 0, true, cap_out.valid(),
                         ::isatty(saved_[1].get()) == 1},
                        {err_r.get(), saved_[2].get(), cap_err.get(), 0, true, cap_err.valid(),
                         ::isatty(saved_[2].get()) == 1}};
      ::close(out_w.get());
      ::close(err_w.get());
      ::close(ctl_w.get());
      tee_main(s, ctl_r.get());
    }
    tee_ = ChildGuard(pid);
    ctl_ = std::move(ctl_w);
    if (g.log.empty()) move_log();
    active_ = true;
    if (::dup2(null.get(), STDIN_FILENO) < 0 || ::dup2(out_w.get(), STDOUT_FILENO) < 0 ||
        ::dup2(err_w.get(), STDERR_FILENO) < 0)
      return Error::sys(errno, "dup2 the output pipes onto stdio");
    return {};
  }

  // Restores stdio and waits for the tee. True when both streams were
  // captured whole.
  bool finish() {
    if (!active_) return false;
    active_ = false;
    if (log_moved_) log::set_fd(STDERR_FILENO, true);
    log_moved_ = false;
    for (int i = 0; i < 3; i++) (void)::dup2(saved_[i].get(), i);
    for (auto& s : saved_) s.reset();
    // SIGPIPE ignored for this one write: a tee that died (killed from
    // outside) must not take the runtime with it.
    struct sigaction ign = {}, old = {};
    ign.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ign, &old);
    (void)!::write(ctl_.get(), "x", 1);
    ::sigaction(SIGPIPE, &old, nullptr);
    ctl_.reset();
    int st = tee_.wait();
    tee_.release();
    return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }

 private:
  void move_log() {
    log::set_fd(saved_[2].get(), true);
    log_moved_ = true;
  }

  UniqueFd saved_[3];
  UniqueFd ctl_;
  ChildGuard tee_;
  bool active_ = false;

 public:
  bool active() const { return active_; }

 private:
  bool log_moved_ = false;
};

// The compiled policy as the key sees it: every per-run host path replaced
// by a fixed placeholder, so that the run directory's random name is not
// part of the key, but which per-run directories exist is.
Result<oci::Spec> placeholder_spec(const Loaded& l, const PackRunOptions& o) {
  cap::CompileInputs in;
  in.rootfs = "/comet-cache/rootfs";
  in.pack_dir = "/comet-cache/workdir";
  if (o.args) in.args = *o.args;
  int n = 0;
  for (const std::string& w : l.man.capabilities.fs.write)
    if (w != "/tmp") in.host_dirs[w] = "/comet-cache/w" + std::to_string(n++);
  if (!o.input.empty()) in.host_dirs["/workdir/inputs"] = "/comet-cache/inputs";
  return cap::compile(l.man, in);
}

// hash_tree() with the store's memo of ROOT's per-file digests.
Result<std::string> tree_digest(const cache::Store& store, const std::string& root) {
  std::string abs = abs_path(root);
  cache::Memo memo = store.load_memo(abs);
  cache::Memo before = memo;
  TRY(std::string digest, cache::hash_tree(abs, nullptr, &memo));
  bool same =
      memo.size() == before.size() &&
      std::equal(memo.begin(), memo.end(), before.begin(), [](const auto& a, const auto& b) {
        return a.first == b.first && a.second.sha256 == b.second.sha256 &&
               a.second.ino == b.second.ino && a.second.ctime_ns == b.second.ctime_ns &&
               a.second.mtime_ns == b.second.mtime_ns && a.second.size == b.second.size &&
               a.second.dev == b.second.dev;
      });
  if (!same) store.save_memo(abs, memo);
  return digest;
}

Result<std::string> run_key(const cache::Store& store, const Loaded& l, const PackRunOptions& o,
                            const std::string& rootfs, const oci::Spec& spec) {
  cache::KeyInputs k;
  k.manifest = l.text;
  TRY(k.pack_tree, tree_digest(store, l.dir));
  if (o.rootfs.empty()) {
    // default_rootfs(): the directory's name is its plan key already.
    k.rootfs = "default:" + std::filesystem::path(rootfs).filename().string();
  } else {
    TRY(std::string t, tree_digest(store, rootfs));
    k.rootfs = "tree:" + t;
  }
  if (!o.input.empty()) {
    TRY(k.inputs, tree_digest(store, o.input));
  }
  if (spec.process) {
    k.args = spec.process->args;
    k.env = spec.process->env;
  }
  k.runtime = cache::runtime_identity();
  k.policy = oci::to_json(spec, -1);
  return cache::compose_key(k);
}

// A hit: the out/ tree into --output, the recorded stdout and stderr, the
// recorded exit status. No container, no run directory.
int replay(const cache::Store& store, const cache::Entry& e, const PackRunOptions& o) {
  std::string dir = store.entry_dir(e.key);
  say("cache hit " + e.key);
  if (!o.output.empty() && std::find(e.dirs.begin(), e.dirs.end(), "out") != e.dirs.end()) {
    Status c = collect_output(join_path(dir, "out"), o.output);
    if (!c.ok()) {
      log::error("pack run: restore the cached output: " + c.error().what());
      return 1;
    }
  }
  for (auto [name, fd] : {std::pair{"stdout", STDOUT_FILENO}, std::pair{"stderr", STDERR_FILENO}}) {
    auto text = read_file(join_path(dir, name));
    if (!text.ok()) {
      log::error("pack run: read the cached " + std::string(name) + ": " + text.error().what());
      return 1;
    }
    // a terminal gets the text shown, not obeyed (shown())
    if (!write_fully(fd, ::isatty(fd) == 1 ? shown(text->data(), text->size()) : *text)) break;
  }
  store.touch(e.key);
  return e.exit_status;
}

// Whether the /workdir/out tree can be replayed exactly: only directories
// and regular files (collect_output() skips anything else, with a warning
// that a hit would not repeat).
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

// The store's temp dir of one miss, removed unless committed.
struct PendingEntry {
  const cache::Store* store = nullptr;
  std::string key, temp;
  ~PendingEntry() {
    if (!temp.empty()) (void)remove_tree(temp);
  }
};

}  // namespace

int pack_run(const Globals& g, const PackRunOptions& o_in) {
  PackRunOptions o = o_in;
  // Absolute now: the output is collected after the run, wherever this
  // process's working directory is by then.
  if (!o.output.empty()) o.output = abs_path(o.output);
  TRY_EXIT(Loaded l, load(o.pack, /*validate=*/true, 2, 1));
  // Usage first: nothing is built, looked up or run for a refused command.
  const auto& rd = l.man.capabilities.fs.read;
  const auto& wr = l.man.capabilities.fs.write;
  if (!o.input.empty() && std::find(rd.begin(), rd.end(), "/workdir/inputs") == rd.end()) {
    log::error("pack run --input: the pack does not declare fs.read /workdir/inputs");
    return 2;
  }
  if (!o.output.empty() && std::find(wr.begin(), wr.end(), "/workdir/out") == wr.end()) {
    log::error("pack run --output: the pack does not declare fs.write /workdir/out");
    return 2;
  }
  cache::Flags cf;
  cf.no_cache = o.no_cache;
  cf.upstream = o.allow_upstream ? cache::Upstream::allow : cache::Upstream::refuse;
  cf.cache_dir_given = !o.cache_dir.empty();
  cache::Decision decision = cache::decide(l.man, cf);
  if (!decision.error.empty()) {
    log::error(decision.error);
    return 2;
  }
  // Without the reporter a violation goes unseen (no exit 3): such a run
  // could be recorded as clean, so the cache is not used at all.
  if (decision.cache && switches::violation_reporting_off())
    decision = {false, "COMET_VIOLATION_REPORTING=off: violations would go unseen", ""};
  std::string rootfs = o.rootfs;
  if (rootfs.empty()) {
    // The embedded default: the interpreter and what it needs, from the host.
    // COMET_ROOTFS_CACHE: another cache directory (tests use a private one).
    const std::string rcache = switches::rootfs_cache();
    auto r = default_rootfs(l.man.runtime.interpreter,
                            rcache.empty() ? std::string(kDefaultRootfsCache) : rcache);
    if (!r.ok()) {
      log::error("pack run: no --rootfs given, and the default rootfs for " +
                 l.man.runtime.interpreter + " cannot be built: " + r.error().what());
      return 1;
    }
    rootfs = *r;
  }

  // The cache: look up; on a hit, replay and stop here.
  cache::Store store(cache::store_dir(o.cache_dir));
  PendingEntry pending;
  if (decision.cache) {
    auto spec = placeholder_spec(l, o);
    Status prep = spec.ok() ? store.prepare() : Status(spec.error());
    auto key = prep.ok() ? run_key(store, l, o, rootfs, *spec) : Result<std::string>(prep.error());
    if (!spec.ok()) {
      // The real compile below reports it.
    } else if (!key.ok()) {
      log::warn("pack run: not cached (cache " + store.dir() + "): " + key.error().what());
    } else {
      auto hit = store.lookup(*key);
      if (hit.ok() && *hit) {
        if (std::string w = violations::flag_warning(spec->annotations); !w.empty()) log::warn(w);
        return replay(store, **hit, o);
      }
      if (!hit.ok()) {
        log::warn("cache: discarded the corrupt entry " + *key + ": " + hit.error().what());
        Status d = store.discard(*key);
        if (!d.ok()) log::warn("cache: " + d.error().what());
      }
      auto temp = store.make_temp(*key);
      if (!temp.ok()) {
        log::warn("pack run: not cached: " + temp.error().what());
      } else {
        say("cache miss " + *key);
        pending.store = &store;
        pending.key = *key;
        pending.temp = *temp;
      }
    }
  } else {
    log::debug("pack run: not cached: " + decision.why);
  }

  auto report = [](const std::string& msg) {
    log::error(msg);
    return 1;
  };
  auto fail = [&report](const Error& e) { return report("pack run: " + e.what()); };
  std::string id = o.id.empty() ? "pack-" + random_hex(6) : o.id;
  RunDir run;
  {
    Status st = mkdir_p(join_path(g.root, "packs"), 0700);
    if (!st.ok()) return fail(st.error());
    std::string base = join_path(join_path(g.root, "packs"), id);
    if (::mkdir(base.c_str(), 0700) < 0)
      return fail(Error::sys(errno, "create the run directory " + base));
    run.path = base;
  }
  RunMounts mounts;  // before the run dir goes: see RunMounts
  const cap::Resources& lim = l.man.resources;
  cap::CompileInputs in;
  // Nothing the pack sees is a bind of a host directory (RunMounts): the
  // rootfs, the pack's files and --input are overlay views, every fs.write
  // place a tmpfs of the pack's size.
  in.rootfs = join_path(run.path, "rootfs");
  if (Status v = mounts.view(in.rootfs, abs_path(rootfs), join_path(run.path, "rootfs-rw"), true);
      !v.ok())
    return fail(v.error());
  in.pack_dir = join_path(run.path, "workdir");
  if (o.args) in.args = *o.args;
  // Every fs.write entry is fed from a fresh per-run tmpfs the agent's user
  // owns (/workdir/out: the output limit; the others: tmp); /workdir/inputs
  // from --input (read-only) when given.
  std::string out_dir;
  int n = 0;
  for (const std::string& w : wr) {
    if (w == "/tmp") continue;
    std::string d = join_path(run.path, "w" + std::to_string(n++));
    Status t = mounts.tmpfs(
        d, static_cast<std::uint64_t>(w == "/workdir/out" ? lim.output : lim.tmp), in.uid, in.gid);
    if (!t.ok()) return fail(t.error());
    in.host_dirs[w] = d;
    if (w == "/workdir/out") out_dir = d;
  }
  if (!o.input.empty()) {
    std::string v = join_path(run.path, "inputs");
    if (Status st = mounts.view(v, abs_path(o.input), join_path(run.path, "empty"), false);
        !st.ok())
      return fail(st.error());
    in.host_dirs["/workdir/inputs"] = v;
  }
  auto spec = cap::compile(l.man, in);
  if (!spec.ok()) return fail(spec.error());
  std::string bundle = join_path(run.path, "bundle");
  Status st = mkdir_p(bundle, 0700);
  const std::string staged = join_path(run.path, "workdir-src");
  if (st.ok()) st = stage_workdir(l.dir, staged, in.host_dirs);
  if (st.ok()) st = mounts.view(in.pack_dir, staged, join_path(run.path, "empty"), false);
  if (st.ok())
    st = write_file_atomic(join_path(bundle, "config.json"), oci::to_json(*spec, 2) + "\n", 0600,
                           Sync::none);
  if (!st.ok()) return fail(st.error());

  // A miss: stdout and stderr teed into the entry's temp dir.
  StdioCapture capture;
  if (!pending.temp.empty()) {
    Status c = capture.start(pending.temp, g);
    if (!c.ok()) {
      (void)capture.finish();
      log::warn("pack run: not cached: " + c.error().what());
      (void)remove_tree(pending.temp);
      pending.temp.clear();
    }
  }
  // The caller's stdio is never the agent's (issue 21, red teams): the
  // agent gets /dev/null as stdin and pipes for its output, which the tee
  // passes on (to a terminal with control characters made visible). So it
  // cannot read what the user types, change a terminal's modes, send it
  // escape sequences, or reopen /proc/self/fd/1 to read the caller's log
  // file and learn its host path.
  if (!capture.active()) {
    Status c = capture.start("", g);
    if (!c.ok()) {
      (void)capture.finish();
      return fail(Error(c.error().err(), "guard the terminal: " + c.error().message()));
    }
  }
  CreateOptions co;
  co.id = id;
  co.bundle = bundle;
  co.net_helper = true;  // a bundle this runtime made: connectivity for its egress list
  auto status = run_container(g, co, /*detach=*/false);
  bool captured = capture.finish();
  if (!status.ok()) return report(status.error().what());
  // The output limit reached: its tmpfs is full (the agent's last writes
  // failed: ENOSPC), or collecting it would pass the limit. A resource
  // violation, reported, exit 3.
  int result = *status;
  Status collected;
  if (!o.output.empty())
    collected = collect_output(out_dir, o.output, static_cast<std::uint64_t>(lim.output));
  if (!out_dir.empty()) {
    struct statvfs sv;
    const bool full = ::statvfs(out_dir.c_str(), &sv) == 0 &&
                      (static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize < 64 * 1024 ||
                       (sv.f_files > 0 && sv.f_favail == 0));
    if (full || (!collected.ok() && collected.error().err() == EFBIG)) {
      violations::Event e;
      e.container = id;
      e.pack = violations::PackId{l.man.name, l.man.version};
      e.surface = "resource";
      e.requested =
          "/workdir/out over its limit (resources.output " + std::to_string(lim.output) + " bytes)";
      e.syscall = "write";
      e.pid = 1;
      e.err = ENOSPC;
      violations::deliver_line(violations::delivery(), violations::to_json_line(e));
      (void)violations::record_flag(*e.pack, 1, rfc3339_now(true), rfc3339_now(true));
      log::error("pack run: /workdir/out reached its limit of " + std::to_string(lim.output) +
                 " bytes (resources.output)" +
                 (full ? "; the agent's writes past it failed with ENOSPC" : "") +
                 (collected.ok() ? "" : "; --output holds what fitted"));
      result = violations::kViolationExit;
    }
  }
  if (!collected.ok() && collected.error().err() != EFBIG) return fail(collected.error());
  if (pending.temp.empty()) return result;
  if (result != *status) {
    say("cache not stored " + pending.key + ": /workdir/out reached its limit");
    return result;
  }

  // Record only a run whose result is the pack's: no violation (exit 3),
  // not killed by a signal (a ^C or the OOM killer is not a result), the
  // whole of both streams, an out/ tree that replays exactly.
  std::string why;
  if (*status == violations::kViolationExit)
    why = "exit 3 (a capability violation, or the agent's own 3)";
  else if (*status >= 128)
    why = "the agent was killed by a signal (exit " + std::to_string(*status) + ")";
  else if (!captured)
    why = "stdout or stderr was not captured whole (over " +
          cache::format_size(cache::kMaxStreamBytes) + "?)";
  else if (!out_dir.empty() && !plain_tree(out_dir))
    why = "/workdir/out holds something other than files and directories";
  if (why.empty() && !out_dir.empty()) {
    // resources.cache_entry: what one entry may hold (its output here; the
    // streams are capped on their own)
    Status c = collect_output(out_dir, join_path(pending.temp, "out"),
                              static_cast<std::uint64_t>(lim.cache_entry));
    if (!c.ok())
      why = "the output is over resources.cache_entry (" + std::to_string(lim.cache_entry) +
            " bytes)";
  }
  if (!why.empty()) {
    say("cache not stored " + pending.key + ": " + why);
    return *status;
  }
  cache::Entry e;
  e.key = pending.key;
  e.pack = l.man.name + "@" + l.man.version;
  e.created = rfc3339_now();
  e.exit_status = *status;
  e.allow_upstream = o.allow_upstream;
  auto committed = store.commit(pending.temp, e);
  pending.temp.clear();  // committed, or removed by commit()
  if (!committed.ok())
    say("cache not stored " + pending.key + ": " + committed.error().what());
  else if (*committed)
    say("cache stored " + pending.key);
  else
    say("cache stored " + pending.key + " (by a concurrent run first)");
  return *status;
}

}  // namespace comet::runtime
