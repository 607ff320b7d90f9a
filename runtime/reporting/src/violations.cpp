// capability_violation events: envelope, files, delivery, flags (violations.hpp).
#include "comet/reporting/violations.hpp"

#include <sys/syscall.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "comet/base/fd.hpp"
#include "comet/base/random.hpp"
#include "comet/base/switches.hpp"
#include "comet/base/sys.hpp"
#include "comet/host/log.hpp"
#include "comet/host/state_store.hpp"

extern "C" char* seccomp_syscall_resolve_num_arch(uint32_t arch_token, int num);

namespace comet::runtime::violations {
namespace {

std::string g_delivery;
std::string g_pinned_target;  // pin_delivery_target()
int g_pinned_fd = -1;

std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// Names of the set namespace flags of clone/unshare, e.g. "CLONE_NEWUSER|CLONE_NEWNET".
std::string ns_flags(std::uint64_t f) {
  static const std::pair<std::uint64_t, const char*> kNames[] = {
      {CLONE_NEWNS, "CLONE_NEWNS"},     {CLONE_NEWCGROUP, "CLONE_NEWCGROUP"},
      {CLONE_NEWUTS, "CLONE_NEWUTS"},   {CLONE_NEWIPC, "CLONE_NEWIPC"},
      {CLONE_NEWUSER, "CLONE_NEWUSER"}, {CLONE_NEWPID, "CLONE_NEWPID"},
      {CLONE_NEWNET, "CLONE_NEWNET"},   {CLONE_FS, "CLONE_FS"},
      {CLONE_FILES, "CLONE_FILES"},     {CLONE_SYSVSEM, "CLONE_SYSVSEM"},
      {0x00000080ULL, "CLONE_NEWTIME"}};
  std::string out;
  for (auto& [bit, name] : kNames) {
    if (!(f & bit)) continue;
    if (!out.empty()) out += "|";
    out += name;
  }
  return out.empty() ? hex(f) : out;
}

void write_all(int fd, const std::string& s) {
  (void)write_fully(fd, s);  // events are best effort: errors are dropped
}

}  // namespace

std::optional<PackId> pack_of(const std::map<std::string, std::string>& a) {
  auto it = a.find("org.soyaos.comet.pack");
  if (it == a.end()) return std::nullopt;
  size_t at = it->second.rfind('@');
  if (at == std::string::npos || at == 0 || at + 1 == it->second.size()) return std::nullopt;
  return PackId{it->second.substr(0, at), it->second.substr(at + 1)};
}

std::string to_json_line(const Event& e) {
  nlohmann::json j;
  j["type"] = "capability_violation";
  j["time"] = rfc3339_now(true);
  j["id"] = random_uuid();
  j["container"] = e.container;
  if (e.pack)
    j["pack"] = {{"name", e.pack->name}, {"version", e.pack->version}};
  else
    j["pack"] = nullptr;
  j["surface"] = e.surface;
  j["requested"] = e.requested;
  if (e.matched_entry)
    j["matched_entry"] = *e.matched_entry;
  else
    j["matched_entry"] = nullptr;
  j["syscall"] = e.syscall;
  j["pid"] = e.pid;
  j["errno"] = e.err_name.empty() ? errno_name(e.err) : e.err_name;
  if (e.repeated > 0) j["repeated"] = e.repeated;
  // `requested` holds bytes the agent chose (a path): invalid UTF-8 becomes
  // U+FFFD rather than an exception that would take the reporter down.
  // ASCII only (\uXXXX): the line is printed to terminals as it is
  // (`events --violations`, --events /dev/stderr), and a path an agent chose
  // may hold C1 controls (U+009B, CSI).
  return j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

Classified classify(int nr, const std::uint64_t a[6]) {
  Classified c;
  char* n = seccomp_syscall_resolve_num_arch(0 /* SCMP_ARCH_NATIVE */, nr);
  c.syscall = n ? n : "syscall_" + std::to_string(nr);
  std::free(n);
  const std::string& s = c.syscall;
  auto low32 = [](std::uint64_t v) { return static_cast<std::uint32_t>(v); };
  if (s == "fork" || s == "vfork") {
    c.surface = "process";
    c.requested = s;
  } else if (s == "clone") {
    constexpr std::uint64_t kNs = 0x7e020080ULL;  // CLONE_NEW* (and NEWTIME in exit_signal bits)
    if (a[0] & kNs & ~0x80ULL) {
      c.surface = "namespace";
      c.requested = "clone(" + ns_flags(a[0] & kNs) + ")";
    } else {
      c.surface = "process";
      c.requested = "clone";
    }
  } else if (s == "memfd_create" || s == "memfd_secret") {
    c.surface = "process";
    c.requested = s;
  } else if (s == "settimeofday" || s == "stime" || s == "clock_settime" ||
             s == "clock_settime64" || s == "adjtimex" || s == "clock_adjtime" ||
             s == "clock_adjtime64") {
    // adjtimex and clock_adjtime are refused whatever their modes (the
    // struct timex is behind a pointer a filter cannot read): the kernel
    // would refuse a change without CAP_SYS_TIME unreported.
    c.surface = "clock";
    c.requested = s == "clock_settime" || s == "clock_settime64" || s == "clock_adjtime" ||
                          s == "clock_adjtime64"
                      ? s + "(clock " + std::to_string(low32(a[0])) + ")"
                      : s;
  } else if (s == "socket" || s == "socketpair") {
    c.surface = "egress";
    c.requested = s + "(family " + std::to_string(low32(a[0])) + ", type " +
                  std::to_string(low32(a[1]) & 0xf) + ")";
  } else if (s == "connect") {
    c.surface = "runtime-socket";  // the reporter puts in the path
    c.requested = "connect";
  } else if (s == "mknod" || s == "mknodat") {
    // The reporter puts the path in front: "mknodat(/dev/x, char 1:3)".
    const std::uint64_t mode = a[s == "mknod" ? 1 : 2], dev = low32(a[s == "mknod" ? 2 : 3]);
    const std::uint64_t major = (dev & 0xfff00) >> 8,
                        minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
    c.surface = "device";
    c.requested = std::string((mode & 0170000) == 0060000 ? "block " : "char ") +
                  std::to_string(major) + ":" + std::to_string(minor);
  } else if (s == "ioctl") {
    // the lock-down's only ioctl rules: terminal injection
    const std::uint32_t req = low32(a[1]);
    c.surface = "terminal";
    c.requested = req == 0x5412   ? "ioctl(TIOCSTI)"
                  : req == 0x541C ? "ioctl(TIOCLINUX)"
                                  : "ioctl(" + std::to_string(req) + ")";
  } else if (s == "unshare") {
    c.surface = "namespace";
    c.requested = "unshare(" + ns_flags(low32(a[0])) + ")";
  } else {
    c.surface = "namespace";
    c.requested = s;
  }
  return c;
}

void deliver_line(const std::string& target, const std::string& line) {
  if (target.empty()) return;
  if (target.rfind("unix:", 0) == 0) {
    std::string path = target.substr(5);
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    struct sockaddr_un sa = {};
    sa.sun_family = AF_UNIX;
    if (!fd || path.size() >= sizeof sa.sun_path) return;
    std::memcpy(sa.sun_path, path.data(), path.size());
    struct timeval tv = {0, 200000};  // never hold the reporter for long
    ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) return;
    write_all(fd.get(), line + "\n");
    return;
  }
  if (g_pinned_fd >= 0 && target == g_pinned_target) {
    write_all(g_pinned_fd, line + "\n");
    return;
  }
  UniqueFd fd(::open(target.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
  if (fd) write_all(fd.get(), line + "\n");
}

Status pin_delivery_target(const std::string& target) {
  if (target.empty() || target.rfind("unix:", 0) == 0) return {};
  int fd = ::open(target.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Error::sys(errno, "open the events target " + target);
  if (g_pinned_fd >= 0) ::close(g_pinned_fd);
  g_pinned_fd = fd;
  g_pinned_target = target;
  return {};
}

bool EventBudget::admit(const std::string& surface, bool first_of_key, std::uint64_t file_bytes,
                        std::size_t bytes) {
  long& w = written_[surface];
  const bool ok = file_bytes + bytes <= kMaxEventsBytes || (first_of_key && w < kKeepPerSurface) ||
                  (first_of_key && file_bytes + bytes <= kMaxEventsBytesHard);
  if (ok) {
    w++;
  } else {
    dropped_[surface]++;
    dropped_total_++;
  }
  return ok;
}

std::string EventBudget::truncated_line(const std::string& time,
                                        const std::string& container) const {
  nlohmann::ordered_json j;
  j["type"] = "events_truncated";
  j["time"] = time;
  j["container"] = container;
  j["dropped"] = dropped_total_;
  nlohmann::ordered_json by = nlohmann::ordered_json::object();
  for (const auto& [s, n] : dropped_) by[s] = n;
  j["dropped_by_surface"] = by;
  return j.dump();
}

Status append_event(const std::string& state_dir, const Event& e) {
  std::string line = to_json_line(e);
  std::string path = join_path(state_dir, kEventsFile);
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) return Error::sys(errno, "open " + path);
  struct stat st;
  if (::fstat(fd.get(), &st) == 0 && static_cast<std::uint64_t>(st.st_size) >= kMaxEventsBytes)
    return {};  // full: the reporter's events_truncated line says so
  write_all(fd.get(), line + "\n");
  if (auto t = read_file(join_path(state_dir, "events.deliver")); t.ok()) deliver_line(*t, line);
  return {};
}

bool append_event(const std::string& state_dir, const Event& e, EventBudget& budget,
                  bool first_of_key) {
  std::string line = to_json_line(e);
  std::string path = join_path(state_dir, kEventsFile);
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
  struct stat st;
  std::uint64_t size =
      fd && ::fstat(fd.get(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  if (!budget.admit(e.surface, first_of_key, size, line.size() + 1)) return false;
  if (fd) write_all(fd.get(), line + "\n");
  if (auto t = read_file(join_path(state_dir, "events.deliver")); t.ok()) deliver_line(*t, line);
  return true;
}

namespace {
long long monotonic_ns() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}
}  // namespace

RateLimited::RateLimited(std::string state_dir)
    : dir_(std::move(state_dir)), last_flush_ns_(monotonic_ns()) {}

void RateLimited::report(const Event& e) {
  constexpr std::size_t kMaxKeys = 1024;
  const std::string key = e.surface + '\0' + e.requested + '\0' + e.syscall;
  auto it = seen_.find(key);
  if (container_.empty()) container_ = e.container;
  if (it == seen_.end()) {
    if (seen_.size() < kMaxKeys) seen_[key].last = e;
    (void)append_event(dir_, e, budget_, /*first_of_key=*/true);
    return;
  }
  it->second.count++;
  it->second.last = e;
  if (monotonic_ns() - last_flush_ns_ > 1000000000LL) flush();
}

void RateLimited::flush() {
  last_flush_ns_ = monotonic_ns();
  for (auto& [k, p] : seen_) {
    if (p.count == 0) continue;
    Event e = p.last;
    e.repeated = p.count;
    p.count = 0;
    (void)append_event(dir_, e, budget_, /*first_of_key=*/false);
  }
}

void RateLimited::finish() {
  flush();
  if (budget_.dropped() == 0) return;
  std::string path = join_path(dir_, kEventsFile);
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
  const std::string line = budget_.truncated_line(rfc3339_now(true), container_);
  if (fd) write_all(fd.get(), line + "\n");
  if (auto t = read_file(join_path(dir_, "events.deliver")); t.ok()) deliver_line(*t, line);
}

namespace {
// The inode of the socket bound to PORT (and ADDR's address) in one of
// /proc/PID/net/{udp,tcp}[6], or 0.
unsigned long socket_inode(int pid, const sockaddr_storage& addr, bool tcp) {
  bool v6 = addr.ss_family == AF_INET6;
  unsigned port = 0;
  std::string want_addr;  // as the kernel prints it
  char hex[40];
  if (v6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    port = ntohs(a->sin6_port);
    const auto* w = reinterpret_cast<const std::uint32_t*>(a->sin6_addr.s6_addr);
    std::snprintf(hex, sizeof hex, "%08X%08X%08X%08X", w[0], w[1], w[2], w[3]);
  } else {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    port = ntohs(a->sin_port);
    std::snprintf(hex, sizeof hex, "%08X", a->sin_addr.s_addr);
  }
  want_addr = hex;
  auto text =
      read_file("/proc/" + std::to_string(pid) + "/net/" + (tcp ? "tcp" : "udp") + (v6 ? "6" : ""));
  if (!text.ok()) return 0;
  std::istringstream in(*text);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, st, queues, tr, retr, uid, timeout;
    unsigned long inode = 0;
    if (!(f >> sl >> local >> remote >> st >> queues >> tr >> retr >> uid >> timeout >> inode))
      continue;
    auto colon = local.find(':');
    if (colon == std::string::npos) continue;
    if (std::strtoul(local.c_str() + colon + 1, nullptr, 16) != port) continue;
    if (local.substr(0, colon) != want_addr) continue;
    return inode;
  }
  return 0;
}
}  // namespace

int socket_owner(int netns_pid, const sockaddr_storage& addr, bool tcp) {
  unsigned long inode = socket_inode(netns_pid, addr, tcp);
  if (inode == 0) return 0;
  struct stat ns;
  if (::stat(("/proc/" + std::to_string(netns_pid) + "/ns/net").c_str(), &ns) < 0) return 0;
  const std::string want = "socket:[" + std::to_string(inode) + "]";
  std::error_code ec;
  for (const auto& p : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = p.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat pns;
    if (::stat((p.path() / "ns/net").c_str(), &pns) < 0 || pns.st_ino != ns.st_ino ||
        pns.st_dev != ns.st_dev)
      continue;
    std::error_code fec;
    for (const auto& fd : std::filesystem::directory_iterator(p.path() / "fd", fec)) {
      char buf[64];
      ssize_t n = ::readlink(fd.path().c_str(), buf, sizeof buf - 1);
      if (n > 0 && std::string_view(buf, static_cast<std::size_t>(n)) == want)
        return std::atoi(name.c_str());
    }
  }
  return 0;
}

void set_delivery(const std::string& target) {
  g_delivery = target;
}
const std::string& delivery() {
  return g_delivery;
}

long count_violations(const std::string& text, std::string* first, std::string* last) {
  long n = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    auto j = nlohmann::json::parse(text.substr(pos, end - pos), nullptr, false);
    pos = end + 1;
    if (j.is_discarded() || !j.is_object()) continue;
    if (j.value("type", "") != "capability_violation") continue;
    long rep = j.value("repeated", 0L);
    n += rep > 0 ? rep : 1;
    std::string t = j.value("time", "");
    if (first && (first->empty() || t < *first)) *first = t;
    if (last && t > *last) *last = t;
  }
  return n;
}

namespace {
// Waits (bounded) for PID, if it is still the process that started at
// START, to exit. A pidfd wakes us the moment it does (no polling interval).
void wait_exit(int pid, unsigned long long start, int ms) {
  int pfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pfd >= 0 && process_start_time(pid) == start) {
    struct pollfd p = {pfd, POLLIN, 0};
    while (::poll(&p, 1, ms) < 0 && errno == EINTR) {
    }
  }
  if (pfd >= 0) ::close(pfd);
}

// The violations of a state dir's events file, with the first and last times.
struct Counted {
  long n = 0;
  std::string first, last;
};
Counted count_events(const std::string& state_dir) {
  Counted c;
  auto text = read_file(join_path(state_dir, kEventsFile));
  if (text.ok()) c.n = count_violations(*text, &c.first, &c.last);
  return c;
}

// Flags the pack version of these annotations (if any) with what was counted.
void flag_pack(const std::map<std::string, std::string>& annotations, const Counted& c) {
  if (c.n == 0) return;
  auto p = pack_of(annotations);
  if (!p) return;
  Status st = record_flag(*p, c.n, c.first, c.last);
  if (!st.ok()) log::warn("flag " + p->name + "@" + p->version + ": " + st.error().what());
}
}  // namespace

long finish_run(const std::string& root, const std::string& id) {
  ContainerDir dir(root, id);
  auto rec = dir.load();
  bool reporter_alive = false;  // still serving processes the agent left behind
  // The DNS resolver exits with the init, writing its rate-limit summaries
  // (RateLimited::flush) on the way out.
  if (rec.ok() && rec->egress_resolver_pid > 0)
    wait_exit(rec->egress_resolver_pid, rec->egress_resolver_start, 1000);
  if (rec.ok() && rec->reporter_pid > 0) {
    // The reporter exits once the last confined process is gone (its
    // listener hangs up); give it a bounded time to write what it holds.
    wait_exit(rec->reporter_pid, rec->reporter_start, 3000);
    reporter_alive = !process_dead(rec->reporter_pid) &&
                     process_start_time(rec->reporter_pid) == rec->reporter_start;
  }
  const Counted c = count_events(dir.path());
  if (rec.ok() && rec->reporter_pid > 0 && !reporter_alive &&
      !path_exists(dir.file("reporter.done"))) {
    // Killed or crashed: its calls failed with ENOSYS, still denied, but
    // what it did not write is unknown. Treated as a violation (exit 3),
    // without flagging the pack (there is no event to show).
    log::warn("container " + id +
              ": the violation reporter did not finish; events may be missing (exit 3)");
    if (c.n == 0) return 1;
  }
  if (rec.ok()) {
    flag_pack(rec->annotations, c);
    // Counted: delete must not flag these again (flag_at_delete).
    (void)write_file_atomic(dir.file(kFlaggedFile), "", 0600, Sync::none);
  }
  return c.n;
}

void flag_at_delete(const std::string& state_dir,
                    const std::map<std::string, std::string>& annotations) {
  if (path_exists(join_path(state_dir, kFlaggedFile))) return;  // run/pack run did
  if (!pack_of(annotations)) return;                            // not a pack: no file to read
  flag_pack(annotations, count_events(state_dir));
}

std::string flags_dir() {
  std::string dir = switches::flags_dir();
  return dir.empty() ? "/var/lib/comet-runtime/flags" : dir;
}

namespace {
std::string flag_file(const std::string& name_at_version) {
  return join_path(flags_dir(), name_at_version + ".json");
}
bool valid_flag_name(const std::string& s) {
  return !s.empty() && s.find('/') == std::string::npos && s.find('@') != std::string::npos &&
         s[0] != '.';
}
}  // namespace

std::vector<Flag> list_flags() {
  std::vector<Flag> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(flags_dir(), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (it->path().extension() != ".json") continue;
    auto t = read_file(it->path().string());
    if (!t.ok()) continue;
    auto j = nlohmann::json::parse(*t, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    out.push_back(
        {j.value("pack", ""), j.value("first", ""), j.value("last", ""), j.value("count", 0L)});
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.pack < b.pack; });
  return out;
}

Status record_flag(const PackId& p, long count, const std::string& first, const std::string& last) {
  std::string key = p.name + "@" + p.version;
  if (!valid_flag_name(key)) return Error::msg("bad pack name " + key);
  TRYV(mkdir_p(flags_dir(), 0700));
  std::string now = rfc3339_now(true);
  nlohmann::json j = {{"pack", key},
                      {"first", first.empty() ? now : first},
                      {"last", last.empty() ? now : last},
                      {"count", 0}};
  if (auto t = read_file(flag_file(key)); t.ok()) {
    auto old = nlohmann::json::parse(*t, nullptr, false);
    if (!old.is_discarded() && old.is_object()) {
      j["first"] = old.value("first", j["first"].get<std::string>());
      j["count"] = old.value("count", 0L);
    }
  }
  j["count"] = j["count"].get<long>() + count;
  return write_file_atomic(flag_file(key), j.dump() + "\n", 0600);
}

Status clear_flag(const std::string& key) {
  if (!valid_flag_name(key))
    return Error::msg("pack flags clear: expected NAME@VERSION, got " + key);
  if (::unlink(flag_file(key).c_str()) < 0)
    return Error::sys(errno, "pack flags clear " + key + ": " + flag_file(key));
  return {};
}

std::string flag_warning(const std::map<std::string, std::string>& annotations) {
  auto p = pack_of(annotations);
  if (!p) return "";
  std::string key = p->name + "@" + p->version;
  if (!valid_flag_name(key)) return "";
  auto t = read_file(flag_file(key));
  if (!t.ok()) return "";
  auto j = nlohmann::json::parse(*t, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "";
  return "pack " + key + " is flagged: " + std::to_string(j.value("count", 0L)) +
         " capability violation(s) since " + j.value("first", "?") + ", last " +
         j.value("last", "?") +
         "; see the events with `pack run --events FILE` or `comet-runtime events --violations "
         "ID`, and `comet-runtime pack flags list`";
}

int flags_cli(const std::string& action, const std::string& arg) {
  if (action.empty() || action == "list") {
    for (const Flag& f : list_flags())
      std::cout << nlohmann::json(
                       {{"pack", f.pack}, {"first", f.first}, {"last", f.last}, {"count", f.count}})
                       .dump()
                << "\n";
    return 0;
  }
  if (action == "clear") {
    Status st = clear_flag(arg);
    if (!st.ok()) {
      log::error(st.error().what());
      return 1;
    }
    return 0;
  }
  log::error("pack flags: unknown action " + action + " (list or clear NAME@VERSION)");
  return 2;
}

int events_cli(const std::string& root, const std::string& id, bool follow) {
  ContainerDir dir(root, id);
  if (!dir.exists()) {
    log::error("container does not exist: " + id);
    return 1;
  }
  std::string path = dir.file(kEventsFile);
  UniqueFd fd;
  off_t off = 0;
  for (;;) {
    if (!fd) fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd) {
      char buf[8192];
      ssize_t n;
      while ((n = ::pread(fd.get(), buf, sizeof buf, off)) > 0) {
        std::cout.write(buf, n);
        off += n;
      }
      std::cout.flush();
    }
    if (!follow || !dir.exists()) return 0;
    ::usleep(200000);
  }
}

}  // namespace comet::runtime::violations
