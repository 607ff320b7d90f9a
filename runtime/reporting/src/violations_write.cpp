// Writing capability_violation events (violations.hpp): the events file
// of a state dir (append_event, under an EventBudget), the rate-limited
// writer of long-lived sources (RateLimited) and delivery to --events
// targets (a file, or unix:PATH).
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "comet/base/fd.hpp"
#include "comet/base/sys.hpp"
#include "comet/reporting/violations.hpp"

namespace comet::runtime::violations {
namespace {

std::string g_delivery;
std::string g_pinned_target;  // pin_delivery_target()
int g_pinned_fd = -1;

void write_all(int fd, const std::string& s) {
  (void)write_fully(fd, s);  // events are best effort: errors are dropped
}

}  // namespace

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
  // Not pinned (another process's writer): never through a symlink, never
  // into a FIFO or a device.
  UniqueFd fd(::open(target.c_str(),
                     O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600));
  struct stat st;
  if (fd && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) write_all(fd.get(), line + "\n");
}

Status pin_delivery_target(const std::string& target) {
  if (target.empty() || target.rfind("unix:", 0) == 0) return {};
  int fd = ::open(target.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Error::sys(errno, "open the events target " + target);
  return pin_delivery_fd(target, fd);
}

Status pin_delivery_fd(const std::string& target, int fd) {
  if (g_pinned_fd >= 0) ::close(g_pinned_fd);
  g_pinned_fd = fd;
  g_pinned_target = target;
  return {};
}

bool EventBudget::admit(const std::string& surface, bool first_of_key, std::uint64_t file_bytes,
                        std::size_t bytes, const std::string& entry) {
  long& w = written_[surface];
  long* we = nullptr;
  if (!entry.empty()) {
    const std::string k = surface + '\0' + entry;
    auto it = written_entry_.find(k);
    if (it != written_entry_.end())
      we = &it->second;
    else if (written_entry_.size() < kMaxEntryClasses)
      we = &written_entry_[k];
  }
  const bool ok = file_bytes + bytes <= kMaxEventsBytes ||
                  (first_of_key && (w < kKeepPerSurface || (we && *we < kKeepPerSurface))) ||
                  (first_of_key && file_bytes + bytes <= kMaxEventsBytesHard);
  if (ok) {
    w++;
    if (we) ++*we;
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
  if (!budget.admit(e.surface, first_of_key, size, line.size() + 1, e.matched_entry.value_or("")))
    return false;
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

void set_delivery(const std::string& target) {
  g_delivery = target;
}
const std::string& delivery() {
  return g_delivery;
}

}  // namespace comet::runtime::violations
