// Counting a run's violations and the flags registry of pack versions
// that violated (violations.hpp): finish_run, flag_at_delete and the
// <flags dir>/<name>@<version>.json files.
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "comet/base/switches.hpp"
#include "comet/base/sys.hpp"
#include "comet/host/log.hpp"
#include "comet/host/state_store.hpp"
#include "comet/host/user_dirs.hpp"
#include "comet/reporting/violations.hpp"

namespace comet::runtime::violations {
long ViolationTally::total() const {
  long n = 0;
  for (const auto& s : surfaces) n += s.all();
  return n;
}

ViolationTally tally_violations(const std::string& text) {
  ViolationTally t;
  auto at = [&t](const std::string& surface) -> SurfaceTally& {
    auto it = std::find_if(t.surfaces.begin(), t.surfaces.end(),
                           [&](const SurfaceTally& s) { return s.surface == surface; });
    if (it != t.surfaces.end()) return *it;
    t.surfaces.push_back(SurfaceTally{surface, 0, 0, "", ""});
    return t.surfaces.back();
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    auto j = nlohmann::json::parse(text.substr(pos, end - pos), nullptr, false);
    pos = end + 1;
    if (j.is_discarded() || !j.is_object()) continue;
    const std::string type = j.value("type", "");
    if (type == "events_truncated" && j.contains("dropped_by_surface") &&
        j["dropped_by_surface"].is_object()) {
      for (const auto& [surface, n] : j["dropped_by_surface"].items())
        if (n.is_number_integer() && n.get<long>() > 0) at(surface).dropped += n.get<long>();
      continue;
    }
    if (type != "capability_violation") continue;
    SurfaceTally& s = at(j.value("surface", "?"));
    const long rep = j.value("repeated", 0L);
    s.recorded += rep > 0 ? rep : 1;
    if (s.first_requested.empty()) {
      s.first_requested = j.value("requested", "");
      s.first_syscall = j.value("syscall", "");
    }
    const std::string time = j.value("time", "");
    if (!time.empty() && (t.first_time.empty() || time < t.first_time)) t.first_time = time;
    if (time > t.last_time) t.last_time = time;
  }
  return t;
}

long count_violations(const std::string& text, std::string* first, std::string* last) {
  ViolationTally t = tally_violations(text);
  if (first && (first->empty() || (!t.first_time.empty() && t.first_time < *first)))
    *first = t.first_time;
  if (last && t.last_time > *last) *last = t.last_time;
  return t.total();
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
void flag_pack(const std::string& root, const std::map<std::string, std::string>& annotations,
               const Counted& c) {
  if (c.n == 0) return;
  auto p = pack_of(annotations);
  if (!p) return;
  Status st = record_flag(root, *p, c.n, c.first, c.last);
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
    flag_pack(root, rec->annotations, c);
    // Counted: delete must not flag these again (flag_at_delete).
    (void)write_file_atomic(dir.file(kFlaggedFile), "", 0600, Sync::none);
  }
  return c.n;
}

void flag_at_delete(const std::string& state_dir,
                    const std::map<std::string, std::string>& annotations) {
  if (path_exists(join_path(state_dir, kFlaggedFile))) return;  // run/pack run did
  if (!pack_of(annotations)) return;                            // not a pack: no file to read
  flag_pack(std::filesystem::path(state_dir).parent_path().string(), annotations,
            count_events(state_dir));
}

// Per user: root's /var/lib/comet-runtime/flags, an ordinary user's (or a
// rootless engine's) $XDG_DATA_HOME/comet-runtime/flags (user_dirs.hpp),
// for the default state root; another --root keeps its own, so that one
// root's `pack flags list` never shows another's packs.
std::string flags_dir(const std::string& root) {
  std::string dir = switches::flags_dir();
  if (!dir.empty()) return dir;
  const std::string default_root = rootless() ? user_dirs().runtime : "/run/comet-runtime";
  std::error_code ec;
  const auto norm = [&](const std::string& p) {
    auto a = std::filesystem::weakly_canonical(p, ec);
    return ec ? p : a.string();
  };
  if (root.empty() || norm(root) == norm(default_root)) return user_dirs().data + "/flags";
  return join_path(root, ".flags@");
}

namespace {
std::string flag_file(const std::string& root, const std::string& name_at_version) {
  return join_path(flags_dir(root), name_at_version + ".json");
}
bool valid_flag_name(const std::string& s) {
  return !s.empty() && s.find('/') == std::string::npos && s.find('@') != std::string::npos &&
         s[0] != '.';
}
}  // namespace

std::vector<Flag> list_flags(const std::string& root) {
  std::vector<Flag> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(flags_dir(root), ec);
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

Status record_flag(const std::string& root, const PackId& p, long count, const std::string& first,
                   const std::string& last) {
  std::string key = p.name + "@" + p.version;
  if (!valid_flag_name(key)) return Error::msg("bad pack name " + key);
  TRYV(mkdir_p(flags_dir(root), 0700));
  std::string now = rfc3339_now(true);
  nlohmann::json j = {{"pack", key},
                      {"first", first.empty() ? now : first},
                      {"last", last.empty() ? now : last},
                      {"count", 0}};
  if (auto t = read_file(flag_file(root, key)); t.ok()) {
    auto old = nlohmann::json::parse(*t, nullptr, false);
    if (!old.is_discarded() && old.is_object()) {
      j["first"] = old.value("first", j["first"].get<std::string>());
      j["count"] = old.value("count", 0L);
    }
  }
  j["count"] = j["count"].get<long>() + count;
  return write_file_atomic(flag_file(root, key), j.dump() + "\n", 0600);
}

Status clear_flag(const std::string& root, const std::string& key) {
  if (!valid_flag_name(key))
    return Error::msg("pack flags clear: expected NAME@VERSION, got " + key);
  if (::unlink(flag_file(root, key).c_str()) < 0)
    return Error::sys(errno, "pack flags clear " + key + ": " + flag_file(root, key));
  return {};
}

std::string flag_warning(const std::string& root,
                         const std::map<std::string, std::string>& annotations) {
  auto p = pack_of(annotations);
  if (!p) return "";
  std::string key = p->name + "@" + p->version;
  if (!valid_flag_name(key)) return "";
  auto t = read_file(flag_file(root, key));
  if (!t.ok()) return "";
  auto j = nlohmann::json::parse(*t, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "";
  return "pack " + key + " is flagged: " + std::to_string(j.value("count", 0L)) +
         " capability violation(s) since " + j.value("first", "?") + ", last " +
         j.value("last", "?") +
         "; see the events with `pack run --events FILE` or `comet-runtime events --violations "
         "ID`, and `comet-runtime pack flags list`";
}

std::string kept_events_file(const std::string& root, const std::string& id) {
  return join_path(join_path(root, kKeptEventsDir), id + ".jsonl");
}

std::string keep_events(const std::string& root, const std::string& id,
                        const std::string& state_dir) {
  auto text = read_file(join_path(state_dir, kEventsFile));
  if (!text.ok() || text->empty()) return "";
  const std::string dir = join_path(root, kKeptEventsDir);
  if (!mkdir_p(dir, 0700).ok()) return "";
  const std::string path = kept_events_file(root, id);
  if (Status st = write_file_atomic(path, *text, 0600, Sync::none); !st.ok()) {
    log::warn("keep the events of " + id + ": " + st.error().what());
    return "";
  }
  // Bounded: the newest kKeptRuns files (by mtime), the oldest removed.
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> kept;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::error_code ec2;
    auto t = it->last_write_time(ec2);
    if (!ec2 && it->path().extension() == ".jsonl") kept.emplace_back(t, it->path());
  }
  if (kept.size() > static_cast<size_t>(kKeptRuns)) {
    std::sort(kept.begin(), kept.end(), [](auto& a, auto& b) { return a.first > b.first; });
    for (size_t i = kKeptRuns; i < kept.size(); i++)
      if (kept[i].second != path) std::filesystem::remove(kept[i].second, ec);
  }
  return path;
}

std::string violation_summary(const std::string& text, const std::string& where) {
  const ViolationTally t = tally_violations(text);
  const long total = t.total();
  if (total == 0) return "";
  std::string line =
      "comet: " + std::to_string(total) + " capability violation" + (total == 1 ? "" : "s") + ":";
  for (size_t i = 0; i < t.surfaces.size(); i++) {
    const SurfaceTally& s = t.surfaces[i];
    line += (i ? ", " : " ") + s.surface + " \u00d7" + std::to_string(s.all());
    if (!s.first_requested.empty()) line += " (" + s.first_requested + ")";
    if (s.dropped) line += " (" + std::to_string(s.dropped) + " past the events cap)";
  }
  if (!where.empty()) line += "; events: " + where;
  return line;
}

}  // namespace comet::runtime::violations
