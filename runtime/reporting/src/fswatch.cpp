// fs.read / fs.write violation source (fswatch.hpp): the pinned BPF
// program, its maps and the watch of one cgroup. The detacher that unpins
// it when nothing is watched is fswatch_linger.cpp; what the program
// reports is classified in fs_classify.cpp and fs_paths.cpp.
#include "comet/reporting/fswatch.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <map>
#include <span>

#include "comet/base/sys.hpp"
#include "comet/host/cgroups.hpp"
#include "comet/host/log.hpp"
#include "comet/host/sha256.hpp"
#include "fswatch_internal.hpp"

namespace comet::runtime {
using namespace fsw;

namespace {

constexpr const char kBpffs[] = "/sys/fs/bpf";
constexpr const char kPinRoot[] = "/sys/fs/bpf/comet-runtime";
constexpr const char kLockFile[] = "/run/comet-runtime/fswatch.lock";
constexpr std::size_t kRingBytes = 512 * 1024;  // = the inner map template's max_entries
constexpr std::uint32_t kSlots = 1024;          // = rings' max_entries

std::span<const unsigned char> image() {
  return detail::fswatch_bpf_image();
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

}  // namespace

namespace fsw {

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

// flock'ed for every change of the pins and of the watched map's keys.
Result<UniqueFd> lock() {
  (void)::mkdir("/run/comet-runtime", 0700);
  UniqueFd fd(::open(kLockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) return Error::sys(errno, std::string("open ") + kLockFile);
  while (::flock(fd.get(), LOCK_EX) < 0)
    if (errno != EINTR) return Error::sys(errno, std::string("flock ") + kLockFile);
  return fd;
}

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

}  // namespace fsw

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
  detach_when_idle();
}

}  // namespace comet::runtime
