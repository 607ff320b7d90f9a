// fs.read / fs.write violation source (fswatch.hpp): the pinned BPF
// program's life cycle, and the pure classification of what it reports.
#include "comet/reporting/fswatch.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <spawn.h>
#include <sys/fanotify.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <span>

#include "comet/base/openat2.hpp"
#include "comet/base/sys.hpp"
#include "comet/capability/match.hpp"
#include "comet/capability/profile.hpp"
#include "comet/host/cgroups.hpp"
#include "comet/host/log.hpp"
#include "comet/host/sha256.hpp"
#include "comet/reporting/violations.hpp"

namespace comet::runtime {
namespace detail {
extern const unsigned char kFsWatchBpf[];
extern const std::size_t kFsWatchBpfSize;
}  // namespace detail

namespace {

constexpr const char kBpffs[] = "/sys/fs/bpf";
constexpr const char kPinRoot[] = "/sys/fs/bpf/comet-runtime";
constexpr const char kLockFile[] = "/run/comet-runtime/fswatch.lock";
constexpr std::size_t kRingBytes = 512 * 1024;  // = the inner map template's max_entries
constexpr std::uint32_t kSlots = 1024;          // = rings' max_entries

std::span<const unsigned char> image() {
  return {detail::kFsWatchBpf, detail::kFsWatchBpfSize};
}

// This build's program: a different object is a different pin directory,
// with its own detacher (two versions of the runtime may run side by side).
const std::string& program_hash() {
  static const std::string h =
      sha256_hex(std::string_view(reinterpret_cast<const char*>(image().data()), image().size()))
          .substr(0, 16);
  return h;
}

std::string pin_dir() {
  return std::string(kPinRoot) + "/" + program_hash();
}

__attribute__((format(printf, 2, 0))) int quiet_print(enum libbpf_print_level level,
                                                      const char* fmt, va_list ap) {
  if (level != LIBBPF_WARN || !log::debug_enabled()) return 0;
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  std::string s(buf);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  log::debug("libbpf: " + s);
  return 0;
}

// flock'ed for every change of the pins and of the watched map's keys.
Result<UniqueFd> lock() {
  (void)::mkdir("/run/comet-runtime", 0700);
  UniqueFd fd(::open(kLockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) return Error::sys(errno, std::string("open ") + kLockFile);
  while (::flock(fd.get(), LOCK_EX) < 0)
    if (errno != EINTR) return Error::sys(errno, std::string("flock ") + kLockFile);
  return fd;
}

Status ensure_bpffs() {
  struct statfs s;
  if (::statfs(kBpffs, &s) == 0 && s.f_type == BPF_FS_MAGIC) return {};
  // As systemd does at boot on hosts that have it.
  if (::mount("bpf", kBpffs, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0)
    return Error::sys(errno, std::string("mount bpffs on ") + kBpffs);
  return {};
}

// The program and its maps, from their pins or loaded and pinned now.
struct Pinned {
  UniqueFd prog, slot_of, rings;
};
Result<Pinned> pinned() {
  const std::string dir = pin_dir();
  Pinned p;
  p.prog.reset(bpf_obj_get((dir + "/prog").c_str()));
  p.slot_of.reset(bpf_obj_get((dir + "/slot_of").c_str()));
  p.rings.reset(bpf_obj_get((dir + "/rings").c_str()));
  if (p.prog && p.slot_of && p.rings) return p;
  p = {};
  libbpf_set_print(quiet_print);
  // LIBBPF_OPTS without its GNU statement expression (clang -Wpedantic)
  bpf_object_open_opts opts{};
  opts.sz = sizeof opts;
  opts.object_name = "comet_fswatch";
  bpf_object* obj = bpf_object__open_mem(image().data(), image().size(), &opts);
  if (!obj) return Error::sys(errno, "open the fs watch BPF object");
  struct Closer {
    bpf_object* o;
    ~Closer() { bpf_object__close(o); }
  } closer{obj};
  if (int r = bpf_object__load(obj)) return Error::sys(-r, "load the fs watch BPF program");
  bpf_program* prog = bpf_object__find_program_by_name(obj, "fs_exit");
  bpf_map* slots = bpf_object__find_map_by_name(obj, "slot_of");
  bpf_map* rings = bpf_object__find_map_by_name(obj, "rings");
  if (!prog || !slots || !rings) return Error::msg("the fs watch BPF object is incomplete");
  TRYV(mkdir_p(dir, 0700));
  for (const char* n : {"prog", "slot_of", "rings", "link"})
    (void)::unlink((dir + "/" + n).c_str());
  // Another build's pins that nothing uses (no link: detached) go.
  if (DIR* d = ::opendir(kPinRoot)) {
    while (struct dirent* e = ::readdir(d)) {
      std::string other = std::string(kPinRoot) + "/" + e->d_name;
      struct stat st;
      if (e->d_name[0] == '.' || other == dir || ::stat((other + "/link").c_str(), &st) == 0)
        continue;
      for (const char* n : {"prog", "slot_of", "rings", "watched"})
        (void)::unlink((other + "/" + n).c_str());
      (void)::rmdir(other.c_str());
    }
    ::closedir(d);
  }
  struct {
    int fd;
    const char* name;
    UniqueFd* out;
  } pins[] = {{bpf_map__fd(slots), "slot_of", &p.slot_of},
              {bpf_map__fd(rings), "rings", &p.rings},
              {bpf_program__fd(prog), "prog", &p.prog}};  // the program last: it marks "complete"
  for (auto& x : pins) {
    if (bpf_obj_pin(x.fd, (dir + "/" + x.name).c_str()) < 0)
      return Error::sys(errno, "pin " + dir + "/" + x.name);
    x.out->reset(::fcntl(x.fd, F_DUPFD_CLOEXEC, 3));
    if (!*x.out) return Error::sys(errno, "dup the fs watch BPF fds");
  }
  return p;
}

// Whether the cgroup2 directory with this id still exists (its file
// handle opens), so a crashed container's entry can go. Unsure is alive:
// an entry wrongly dropped would unwatch a running container.
bool cgroup_alive(std::uint64_t id) {
  static const std::string root = cgroup2_mountpoint();
  if (root.empty()) return true;
  UniqueFd mfd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!mfd) return true;
  alignas(struct file_handle) unsigned char buf[sizeof(struct file_handle) + sizeof id];
  auto* fh = reinterpret_cast<struct file_handle*>(buf);
  fh->handle_bytes = sizeof id;
  fh->handle_type = 0xfe;  // FILEID_KERNFS
  std::memcpy(buf + sizeof(struct file_handle), &id, sizeof id);
  UniqueFd f(static_cast<int>(
      ::syscall(SYS_open_by_handle_at, mfd.get(), fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC)));
  return f || (errno != ESTALE && errno != ENOENT);
}

// The watched cgroups and their slots; entries of cgroups that are gone
// are dropped on the way.
struct WatchEntry {  // struct watch of fswatch.bpf.c
  std::uint32_t slot, armed;
  std::uint64_t lost, cwd;
};

std::map<std::uint64_t, std::uint32_t> live_entries(int slot_of) {
  std::map<std::uint64_t, std::uint32_t> out;
  std::vector<std::uint64_t> keys;
  std::uint64_t k = 0, next = 0;
  const void* prev = nullptr;
  while (bpf_map_get_next_key(slot_of, prev, &next) == 0 && keys.size() < 65536) {
    keys.push_back(next);
    k = next;
    prev = &k;
  }
  for (std::uint64_t key : keys) {
    WatchEntry e{};
    if (bpf_map_lookup_elem(slot_of, &key, &e) != 0) continue;
    if (!cgroup_alive(key)) {
      (void)bpf_map_delete_elem(slot_of, &key);
      continue;
    }
    out[key] = e.slot;
  }
  return out;
}

// When this program's last container ended, and its detacher's pid.
std::string idle_file() {
  return "/run/comet-runtime/fswatch-" + program_hash() + ".idle";
}
std::string linger_file() {
  return "/run/comet-runtime/fswatch-" + program_hash() + ".linger";
}
constexpr int kLingerSeconds = 10;

// The detacher (fswatch_linger_main), unless one is waiting already.
void spawn_linger() {
  if (auto t = read_file(linger_file()); t.ok()) {
    auto sp = t->find(' ');
    int pid = std::atoi(t->c_str());
    unsigned long long start = sp == std::string::npos ? 0 : std::strtoull(t->c_str() + sp, 0, 10);
    if (pid > 0 && start != 0 && process_start_time(pid) == start) return;
  }
  char argv0[] = "comet-fswatch-linger";
  char* argv[] = {argv0, nullptr};
  char* envp[] = {nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  for (int fd = 0; fd < 3; fd++) posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", O_RDWR, 0);
  pid_t pid = 0;
  if (::posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv, envp) == 0) {
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
  posix_spawn_file_actions_destroy(&fa);
}

}  // namespace

std::uint64_t cgroup_id_of(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.st_ino);
}

Result<FsWatch> fswatch_watch(const std::string& cgroup2_dir) {
  FsWatch w;
  w.cgroup = cgroup_id_of(cgroup2_dir);
  if (w.cgroup == 0) return Error::sys(errno, "stat " + cgroup2_dir);
  TRY(UniqueFd l, lock());
  TRYV(ensure_bpffs());
  TRY(Pinned p, pinned());
  const std::string link = pin_dir() + "/link";
  struct stat lst;
  if (::stat(link.c_str(), &lst) != 0) {
    UniqueFd lfd(bpf_raw_tracepoint_open(nullptr, p.prog.get()));
    if (!lfd) return Error::sys(errno, "attach the fs watch BPF program");
    if (bpf_obj_pin(lfd.get(), link.c_str()) < 0) return Error::sys(errno, "pin " + link);
  }
  // The lowest free slot; its ring is made the first time it is used.
  auto live = live_entries(p.slot_of.get());
  std::vector<bool> used(kSlots, false);
  for (auto& [cg, s] : live)
    if (s < kSlots) used[s] = true;
  std::uint32_t slot = 0;
  while (slot < kSlots && used[slot]) slot++;
  if (slot == kSlots) return Error::msg("all " + std::to_string(kSlots) + " fs watch slots in use");
  std::uint32_t id = 0;
  if (bpf_map_lookup_elem(p.rings.get(), &slot, &id) == 0) w.ring.reset(bpf_map_get_fd_by_id(id));
  // A ring that still holds an earlier container's records (its reporter
  // was killed) is not reused: they would take this one's room.
  if (w.ring) {
    struct pollfd pf = {w.ring.get(), POLLIN, 0};
    if (::poll(&pf, 1, 0) > 0 && (pf.revents & POLLIN)) w.ring.reset();
  }
  if (!w.ring) {
    UniqueFd ring(bpf_map_create(BPF_MAP_TYPE_RINGBUF, "comet_fs_ring", 0, 0, kRingBytes, nullptr));
    if (!ring) return Error::sys(errno, "create an fs watch ring buffer");
    int rfd = ring.get();
    if (bpf_map_update_elem(p.rings.get(), &slot, &rfd, BPF_ANY) < 0)
      return Error::sys(errno, "file the fs watch ring buffer");
    w.ring = std::move(ring);
  }
  if (::fcntl(w.ring.get(), F_SETFD, FD_CLOEXEC) < 0) return Error::sys(errno, "fcntl");
  WatchEntry e{slot, 0, 0, 0};
  if (bpf_map_update_elem(p.slot_of.get(), &w.cgroup, &e, BPF_ANY) < 0)
    return Error::sys(errno, "watch cgroup " + cgroup2_dir);
  return w;
}

bool fswatch_unsupported(const Error& e) {
  switch (e.err()) {
    case EPERM:
    case EACCES:
    case ENOSYS:
    case EOPNOTSUPP:
    case EINVAL:
    case ENOENT:
    case ESRCH:
      return true;
    default:
      return false;
  }
}

std::uint64_t fswatch_lost(std::uint64_t cgroup) {
  UniqueFd m(bpf_obj_get((pin_dir() + "/slot_of").c_str()));
  WatchEntry e{};
  if (!m || bpf_map_lookup_elem(m.get(), &cgroup, &e) != 0) return 0;
  return e.lost;
}

bool fs_record_of(const void* data, std::size_t n, FsRecord& out) {
  if (n < offsetof(FsRecord, path) + 1) return false;
  std::memset(&out, 0, sizeof out);
  std::memcpy(&out, data, std::min(n, sizeof out));
  out.path[sizeof out.path - 1] = 0;
  out.path2[sizeof out.path2 - 1] = 0;
  return true;
}

void fswatch_unwatch(std::uint64_t cgroup) {
  const std::string dir = pin_dir();
  struct stat st;
  if (::stat((dir + "/slot_of").c_str(), &st) != 0) return;  // never watched on this boot
  auto l = lock();
  if (!l.ok()) return;
  UniqueFd m(bpf_obj_get((dir + "/slot_of").c_str()));
  if (!m) return;
  if (cgroup) (void)bpf_map_delete_elem(m.get(), &cgroup);
  if (!live_entries(m.get()).empty()) return;
  if (::stat((dir + "/link").c_str(), &st) != 0) return;  // detached already
  // Nothing watched: detach, but not at once. Attaching again right after
  // a detach waits for its RCU grace period (8-16 ms measured), on the path
  // of the next pack: the detacher waits kLingerSeconds of idleness first.
  UniqueFd idle(::open(idle_file().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  spawn_linger();
}

int fswatch_linger_main() noexcept {
  // Not spawn_detached() (spawn.hpp), though it is a double fork too: its
  // first fork must be a posix_spawn of the binary, for the callers of
  // fswatch_unwatch() may have threads (the reporter's), and this exec'd
  // process, single-threaded, is the middle one; a spawn_detached() here
  // would add a third process on the path of delete.
  // Spawned by spawn_linger(), whose caller holds the lock and waits for
  // this first process. Everything a caller or a test may look for is done
  // before it exits: the cwd and cgroups are left before the fork (a shim's
  // or a pod's call must not stay busy for the seconds the detacher waits),
  // and the pid file names the detacher before the caller returns.
  if (::chdir("/") != 0) return 1;
  (void)move_self_to_root_cgroups();
  pid_t child = ::fork();
  if (child < 0) return 1;
  if (child != 0) {
    try {
      std::string me =
          std::to_string(child) + " " + std::to_string(process_start_time(child)) + "\n";
      if (write_file_atomic(linger_file(), me, 0600, Sync::none).ok()) return 0;
    } catch (...) {
    }
    ::kill(child, SIGKILL);
    return 1;
  }
  ::setsid();
  ::syscall(SYS_close_range, 3, ~0U, 0);
  try {
    for (;;) {
      struct stat st;
      long idle_for = kLingerSeconds;
      if (::stat(idle_file().c_str(), &st) == 0)
        idle_for = static_cast<long>(::time(nullptr) - st.st_mtime);
      if (idle_for < kLingerSeconds) {
        ::sleep(static_cast<unsigned>(kLingerSeconds - idle_for + 1));
        continue;
      }
      auto l = lock();
      if (!l.ok()) return 1;
      if (::stat(idle_file().c_str(), &st) == 0 && ::time(nullptr) - st.st_mtime < kLingerSeconds)
        continue;
      const std::string dir = pin_dir();
      UniqueFd m(bpf_obj_get((dir + "/slot_of").c_str()));
      if (!m || live_entries(m.get()).empty()) (void)::unlink((dir + "/link").c_str());
      (void)::unlink(idle_file().c_str());
      (void)::unlink(linger_file().c_str());
      return 0;
    }
  } catch (...) {
    return 1;
  }
}

// ---- classification (pure) ----

namespace {

// Newer than Debian 12's headers.
constexpr int kSysFchmodat2 = 452, kSysSetxattrat = 463, kSysGetxattrat = 464,
              kSysListxattrat = 465, kSysRemovexattrat = 466, kSysFileGetattr = 468,
              kSysFileSetattr = 469;

enum class Kind { read, write, skip };

Kind kind_of(int nr, std::uint64_t flags) {
  switch (nr) {
    case SYS_open:
    case SYS_openat:
    case SYS_openat2: {
      const std::uint64_t acc = flags & O_ACCMODE;
      return acc != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) ? Kind::write : Kind::read;
    }
    case SYS_stat:
    case SYS_lstat:
    case SYS_newfstatat:
    case SYS_statx:
    case SYS_access:
    case SYS_faccessat:
    case SYS_faccessat2:
    case SYS_readlink:
    case SYS_readlinkat:
    case SYS_chdir:
    case SYS_statfs:
    case SYS_getxattr:
    case SYS_lgetxattr:
    case SYS_listxattr:
    case SYS_llistxattr:
    case kSysGetxattrat:
    case kSysListxattrat:
    case kSysFileGetattr:
    case SYS_inotify_add_watch:
    case SYS_name_to_handle_at:
    case SYS_fanotify_mark:
    case SYS_connect:
    case SYS_sendto:
    case SYS_sendmsg:
      return Kind::read;
    case SYS_mknod:
    case SYS_mknodat: {
      const mode_t fmt = static_cast<mode_t>(flags) & S_IFMT;
      // Devices are the lock-down's (surface device, seccomp).
      return fmt == S_IFCHR || fmt == S_IFBLK ? Kind::skip : Kind::write;
    }
    case SYS_creat:
    case SYS_mkdir:
    case SYS_mkdirat:
    case SYS_rmdir:
    case SYS_unlink:
    case SYS_unlinkat:
    case SYS_rename:
    case SYS_renameat:
    case SYS_renameat2:
    case SYS_link:
    case SYS_linkat:
    case SYS_symlink:
    case SYS_symlinkat:
    case SYS_truncate:
    case SYS_chmod:
    case SYS_fchmodat:
    case kSysFchmodat2:
    case SYS_chown:
    case SYS_lchown:
    case SYS_fchownat:
    case SYS_utimensat:
    case SYS_utime:
    case SYS_utimes:
    case SYS_futimesat:
    case SYS_setxattr:
    case SYS_lsetxattr:
    case SYS_removexattr:
    case SYS_lremovexattr:
    case kSysSetxattrat:
    case kSysRemovexattrat:
    case kSysFileSetattr:
    case SYS_bind:
    case SYS_fchmod:
    case SYS_fchown:
    case SYS_fsetxattr:
    case SYS_fremovexattr:
      return Kind::write;
    default:
      return Kind::skip;
  }
}

std::string first_component(const std::string& p) {
  std::size_t b = p.find_first_not_of('/');
  if (b == std::string::npos) return "";
  std::size_t e = p.find('/', b);
  return p.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

// Top-level directories an image may have but a pack never reads from it:
// a failed lookup there is a violation even when the rootfs has them.
bool never_image(const std::string& top) {
  static const char* const kNever[] = {"home", "root", "srv", "var", "mnt", "media"};
  for (const char* n : kNever)
    if (top == n) return true;
  return false;
}

// glibc asks nscd first for names, users and groups (getaddrinfo,
// getpwnam): a connect to its socket that fails is no one's violation.
bool is_nscd_socket(const std::string& p) {
  return p == "/var/run/nscd/socket" || p == "/run/nscd/socket";
}

}  // namespace

namespace {

// The longest of `list` that is `p` or a parent of it, or nullptr.
const std::string* under_any(const std::vector<std::string>& list, const std::string& p) {
  const std::string* best = nullptr;
  for (const std::string& e : list) {
    const bool in = p == e || e == "/" ||
                    (p.size() > e.size() && p.compare(0, e.size(), e) == 0 && p[e.size()] == '/');
    if (in && (!best || e.size() > best->size())) best = &e;
  }
  return best;
}

std::optional<FsViolation> classify_sandbox(int nr, int err, Kind k, const FsPath& path,
                                            const FsPath& path2, const FsView& view) {
  // The unix-socket rule reports its own calls (unix_rule.hpp).
  if (nr == SYS_connect || nr == SYS_sendto || nr == SYS_sendmsg) return std::nullopt;
  std::uint64_t noargs[6] = {};
  auto make = [&](const std::string& p, const std::string* entry, bool write) {
    FsViolation v;
    v.surface = write ? "fs.write" : "fs.read";
    v.requested = p;
    if (entry) v.matched_entry = *entry;
    v.syscall = violations::classify(nr, noargs).syscall;
    v.err = err;
    return v;
  };
  // EBUSY: a rename onto, or an unlink of, a mount point (a protected path
  // or a pinned parent of one).
  const bool refused_write = k == Kind::write && (err == EROFS || err == EACCES || err == EPERM ||
                                                  err == EXDEV || err == EBUSY);
  // A protected path named by either path first (a rename's target is the
  // second), then a denied one, then a write outside the writable places.
  if (refused_write)
    for (const FsPath* p : {&path, &path2}) {
      if (p->path.empty() || !p->known || p->cut || p->opaque) continue;
      const std::string judged = p->resolved.empty() ? clean_path(p->path) : p->resolved;
      if (const std::string* pr = under_any(view.protect, judged)) return make(judged, pr, true);
    }
  for (const FsPath* p : {&path, &path2}) {
    if (p->path.empty()) continue;
    if (!p->known || p->cut || p->opaque) {
      if (refused_write) return make(clean_path(p->path), nullptr, true);  // fail closed
      continue;
    }
    const std::string judged = p->resolved.empty() ? clean_path(p->path) : p->resolved;
    if (err == EACCES)
      if (const std::string* d = under_any(view.deny, judged)) return make(judged, d, false);
    // EBUSY in a writable place: only the sandbox's mounts make one there
    // (a pinned parent of a protected path, `mv .git x`).
    if (refused_write && (err == EBUSY || !under_any(view.writable, judged)))
      return make(judged, nullptr, true);
  }
  return std::nullopt;
}

}  // namespace

std::optional<FsViolation> classify_fs(int nr, std::uint64_t flags, int err, const FsPath& path,
                                       const FsPath& path2, const FsView& view) {
  // EXDEV: a rename or link across mounts (the kernel says so before it
  // looks at a read-only target); judged like any other write of the two.
  const bool two_paths = nr == SYS_rename || nr == SYS_renameat || nr == SYS_renameat2 ||
                         nr == SYS_link || nr == SYS_linkat;
  if (view.sandbox) {
    const Kind sk = kind_of(nr, flags);
    if (sk == Kind::skip) return std::nullopt;
    return classify_sandbox(nr, err, sk, path, path2, view);
  }
  if (err != EPERM && err != ENOENT && err != EACCES && err != ENOTDIR && err != EROFS &&
      !(err == EXDEV && two_paths))
    return std::nullopt;
  const Kind k = kind_of(nr, flags);
  if (k == Kind::skip) return std::nullopt;
  std::uint64_t noargs[6] = {};
  auto make = [&](const std::string& p, const capability::FsDecision* d, Kind as) {
    FsViolation v;
    v.surface = as == Kind::write ? "fs.write" : "fs.read";
    v.requested = p;
    if (d && (d->index || d->implicit)) v.matched_entry = d->entry;
    v.syscall = violations::classify(nr, noargs).syscall;
    v.err = err;
    return v;
  };
  // A look at an absolute path: a violation unless an entry makes it
  // readable or it is in the image. Inside the image (and the runtime's own
  // mounts: /proc, /dev) a missing file is only missing and a refused one is
  // the image's own mode bits: the image is all there is to read there.
  auto judge_read = [&](const std::string& abs, Kind as) -> std::optional<FsViolation> {
    capability::FsDecision d = capability::fs_decision(view.fs, abs);
    if (d.access != capability::Access::denied) return std::nullopt;
    static const char* const kSystem[] = {"usr", "lib",  "lib64", "bin", "sbin",
                                          "etc", "proc", "dev",   "sys"};
    const std::string top = first_component(abs);
    bool in_image = top.empty();
    for (const char* t : kSystem) in_image = in_image || top == t;
    if (!never_image(top))
      for (const std::string& t : view.image_top) in_image = in_image || t == top;
    if (in_image) return std::nullopt;
    return make(abs, &d, as);
  };
  auto judge = [&](const std::string& abs) -> std::optional<FsViolation> {
    if (k == Kind::read) return judge_read(abs, k);
    capability::FsDecision d = capability::fs_decision(view.fs, abs);
    if (d.access != capability::Access::write) return make(abs, &d, k);
    // A symlink where writing is allowed: packs may not make one
    // (Landlock, EACCES), or it could point a later lookup anywhere.
    if ((nr == SYS_symlink || nr == SYS_symlinkat) && (err == EACCES || err == EPERM))
      return make(abs, &d, k);
    return std::nullopt;
  };
  for (const FsPath* p : {&path, &path2}) {
    if (p->path.empty()) continue;  // an fd-relative call (AT_EMPTY_PATH, utimensat(fd, NULL))
    const std::string& where = p->resolved.empty() ? p->path : p->resolved;
    if ((nr == SYS_connect || nr == SYS_sendto || nr == SYS_sendmsg) &&
        (capability::is_runtime_socket(where) || is_nscd_socket(where)))
      continue;  // the runtime-socket surface's; glibc's look for nscd
    if (!p->known) return make(p->path, nullptr, k);  // relative to what? fail closed
    // Where it leads, when the reporter could look; else as written. The
    // directories it went through and left by ".." were looked into.
    const std::string judged = p->resolved.empty() ? clean_path(p->path) : p->resolved;
    for (const std::string& d : p->passed)
      if (auto v = judge_read(d, Kind::read)) return v;
    if (auto v = judge(judged)) return v;
    // Where it leads cannot be told: fail closed.
    if (p->cut) return make(clean_path(p->path) + "...", nullptr, k);
    if (p->opaque) return make(clean_path(p->path), nullptr, k);
  }
  return std::nullopt;
}

bool fs_on_fd_itself(int nr, std::uint64_t flags) {
  constexpr std::uint64_t kAtEmptyPath = 0x1000;
  switch (nr) {
    case SYS_fchmod:
    case SYS_fchown:
    case SYS_fsetxattr:
    case SYS_fremovexattr:
    case SYS_utimensat:  // utimensat(fd, NULL): futimens
      return true;
    case kSysFchmodat2:
    case SYS_fchownat:
    case kSysSetxattrat:
    case kSysRemovexattrat:
    case kSysFileSetattr:
    case SYS_linkat:
      return (flags & kAtEmptyPath) != 0;
    default:
      return false;
  }
}

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

bool fs_follows_last(int nr, std::uint64_t flags, bool second) {
  if (second) return false;  // rename, link, symlink: the new name is never followed
  switch (nr) {
    case SYS_open:
    case SYS_openat:
    case SYS_openat2:
      return !(flags & O_NOFOLLOW) && (flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL);
    case SYS_newfstatat:
    case SYS_statx:
    case SYS_faccessat2:
    case SYS_fchownat:
    case SYS_utimensat:
    case kSysFchmodat2:
    case kSysSetxattrat:
    case kSysGetxattrat:
    case kSysListxattrat:
    case kSysRemovexattrat:
    case kSysFileGetattr:
    case kSysFileSetattr:
      return !(flags & AT_SYMLINK_NOFOLLOW);
    case SYS_inotify_add_watch:
      return !(flags & IN_DONT_FOLLOW);
    case SYS_fanotify_mark:
      return !(flags & FAN_MARK_DONT_FOLLOW);
    case SYS_linkat:
    case SYS_name_to_handle_at:
      return (flags & AT_SYMLINK_FOLLOW) != 0;
    case SYS_lstat:
    case SYS_lchown:
    case SYS_lgetxattr:
    case SYS_llistxattr:
    case SYS_lsetxattr:
    case SYS_lremovexattr:
    case SYS_unlink:
    case SYS_unlinkat:
    case SYS_rmdir:
    case SYS_rename:
    case SYS_renameat:
    case SYS_renameat2:
    case SYS_link:
    case SYS_symlink:
    case SYS_symlinkat:
    case SYS_mkdir:
    case SYS_mkdirat:
    case SYS_readlink:
    case SYS_readlinkat:
    case SYS_mknod:
    case SYS_mknodat:
    case SYS_bind:
      return false;
    default:
      return true;
  }
}

}  // namespace comet::runtime
