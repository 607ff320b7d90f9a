#include "comet/host/state_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "comet/base/sys.hpp"
#include "comet/host/cgroups.hpp"

namespace comet::runtime {

using nlohmann::json;

Status validate_id(const std::string& id) {
  if (id.empty()) return Error::msg("invalid container id: must not be empty");
  if (id.size() > 1024) return Error::msg("invalid container id: longer than 1024 characters");
  if (id == "." || id == "..") return Error::msg("invalid container id \"" + id + "\"");
  for (unsigned char c : id) {
    bool okc = std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '+';
    if (!okc)
      return Error::msg("invalid container id \"" + id + "\": only [A-Za-z0-9_+.-] are allowed");
  }
  if (id.find("..") != std::string::npos)
    return Error::msg("invalid container id \"" + id + "\": must not contain \"..\"");
  return ok();
}

ContainerDir::ContainerDir(std::string root, std::string id)
    : root_(std::move(root)), id_(std::move(id)), path_(join_path(root_, id_)) {}

bool ContainerDir::exists() const {
  struct stat st;
  return ::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Status ContainerDir::create() {
  TRYV(mkdir_p(root_, 0711));
  if (::mkdir(path_.c_str(), 0711) < 0) {
    if (errno == EEXIST) return Error::msg("container with given ID already exists: " + id_);
    return Error::sys(errno, "mkdir " + path_);
  }
  return ok();
}

Result<UniqueFd> ContainerDir::lock() const {
  std::string p = file("lock");
  // Read-only: flock() does not need write access, and state/list must
  // work on a read-only --root. The file is made on first use (create, or
  // delete --force after a create killed before it got this far). That
  // cannot re-create it inside a directory being removed: remove() renames
  // the directory away first, so <root>/<id>/lock no longer resolves.
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && exists())
    fd = ::open(p.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == ENOENT) return Error::msg("container does not exist");
    return Error::sys(errno, "open " + p);
  }
  UniqueFd owner(fd);
  while (::flock(fd, LOCK_EX) < 0) {
    if (errno != EINTR) return Error::sys(errno, "flock " + p);
  }
  // The directory may have been removed by a delete we waited for.
  struct stat a, b;
  if (::fstat(fd, &a) < 0 || ::stat(p.c_str(), &b) < 0 || a.st_ino != b.st_ino)
    return Error::msg("container does not exist");
  return owner;
}

Status ContainerDir::save(const ContainerRecord& r) const {
  json j = {{"id", r.id},
            {"bundle", r.bundle},
            {"rootfs", r.rootfs},
            {"created", r.created},
            {"owner", r.owner},
            {"pid", r.pid},
            {"start_time", r.start_time},
            {"create_done", r.create_done},
            {"annotations", r.annotations},
            {"cgroup_dirs", r.cgroup_dirs},
            {"freezer_dir", r.freezer_dir},
            {"freezer_v2", r.freezer_v2},
            {"helper_pids", r.helper_pids},
            {"helper_starts", r.helper_starts},
            {"layers", r.layers},
            {"rootless", r.rootless},
            {"cleanup_paths", r.cleanup_paths},
            {"net_devices", r.net_devices},
            {"net_devices_netns", r.net_devices_netns},
            {"terminal", r.terminal},
            {"egress_resolver_pid", r.egress_resolver_pid},
            {"egress_resolver_start", r.egress_resolver_start},
            {"egress_net_pid", r.egress_net_pid},
            {"egress_net_start", r.egress_net_start},
            {"egress_netns", r.egress_netns},
            {"egress_table", r.egress_table},
            {"reporter_pid", r.reporter_pid},
            {"reporter_start", r.reporter_start}};
  return write_file_atomic(file("state.json"), j.dump(), 0600, Sync::none);
}

Result<ContainerRecord> ContainerDir::load() const {
  auto text = read_file(file("state.json"));
  if (!text.ok()) {
    if (text.error().err() == ENOENT) return Error::msg("container does not exist");
    return std::move(text).error();
  }
  try {
    json j = json::parse(*text);
    ContainerRecord r;
    r.id = j.at("id").get<std::string>();
    r.bundle = j.at("bundle").get<std::string>();
    r.rootfs = j.value("rootfs", "");
    r.created = j.value("created", "");
    r.owner = j.value("owner", "");
    r.pid = j.at("pid").get<int>();
    r.start_time = j.value("start_time", 0ULL);
    r.create_done = j.value("create_done", false);
    r.annotations = j.value("annotations", std::map<std::string, std::string>{});
    r.cgroup_dirs = j.value("cgroup_dirs", std::vector<std::string>{});
    r.freezer_dir = j.value("freezer_dir", "");
    r.freezer_v2 = j.value("freezer_v2", false);
    r.helper_pids = j.value("helper_pids", std::vector<int>{});
    r.helper_starts = j.value("helper_starts", std::vector<unsigned long long>{});
    r.layers = j.value("layers", std::vector<std::string>{});
    r.rootless = j.value("rootless", std::map<std::string, std::string>{});
    r.cleanup_paths = j.value("cleanup_paths", std::vector<std::string>{});
    r.net_devices = j.value("net_devices", std::map<std::string, std::string>{});
    r.net_devices_netns = j.value("net_devices_netns", "");
    r.terminal = j.value("terminal", false);
    r.egress_resolver_pid = j.value("egress_resolver_pid", 0);
    r.egress_resolver_start = j.value("egress_resolver_start", 0ULL);
    r.egress_net_pid = j.value("egress_net_pid", 0);
    r.egress_net_start = j.value("egress_net_start", 0ULL);
    r.egress_netns = j.value("egress_netns", "");
    r.egress_table = j.value("egress_table", "");
    r.reporter_pid = j.value("reporter_pid", 0);
    r.reporter_start = j.value("reporter_start", 0ULL);
    return r;
  } catch (const std::exception& e) {
    return Error::msg("container " + id_ + ": corrupt state " + file("state.json") + ": " +
                      e.what());
  }
}

namespace {
// '@' is not allowed in an id (validate_id), so a tombstone is never a container.
constexpr const char* kTombstone = ".deleted@";

// Tombstones (.deleted@ID@PID) of deletes killed mid-removal: their pid is dead.
void sweep_tombstones(const std::string& root) {
  DIR* d = ::opendir(root.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  const size_t n = std::strlen(kTombstone);
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, n, kTombstone) != 0) continue;
    size_t dash = name.rfind('@');
    int pid = dash == std::string::npos ? 0 : std::atoi(name.c_str() + dash + 1);
    if (pid <= 0 || process_dead(pid)) stale.push_back(join_path(root, name));
  }
  ::closedir(d);
  for (auto& p : stale) (void)remove_tree(p);
}
}  // namespace

// Called with the lock held. The directory is first renamed to a hidden
// tombstone, atomically: from then on the id does not exist for any other
// command (their open of <id>/lock fails, or their post-flock check does),
// and nothing can be created in the tree while it is being removed.
Status ContainerDir::remove() const {
  // Never remove through a mount: a container without a mount namespace
  // has its rootfs bound under here (ChildContext::Mounts::host_root), and
  // a create killed part-way may have left it.
  unmount_under(path_);
  std::string tomb =
      join_path(root_, std::string(kTombstone) + id_ + "@" + std::to_string(::getpid()));
  if (::rename(path_.c_str(), tomb.c_str()) < 0) {
    if (errno == ENOENT) return ok();
    return remove_tree(path_);  // e.g. a read-only root: report what removal says
  }
  Status st = remove_tree(tomb);
  sweep_tombstones(root_);
  return st;
}

oci::ContainerStatus derive_status(const ContainerDir& dir, const ContainerRecord& rec) {
  bool alive = rec.pid > 0 && !process_dead(rec.pid) &&
               (rec.start_time == 0 || process_start_time(rec.pid) == rec.start_time);
  if (!alive) return oci::ContainerStatus::kStopped;
  if (!rec.create_done) return oci::ContainerStatus::kCreating;
  // Frozen first: a paused created container is "paused" until resumed.
  if (!rec.freezer_dir.empty() && cgroup_frozen(rec.freezer_dir, rec.freezer_v2))
    return oci::ContainerStatus::kPaused;
  if (path_exists(dir.file("exec.fifo"))) return oci::ContainerStatus::kCreated;
  return oci::ContainerStatus::kRunning;
}

Result<LockedContainer> open_locked(const std::string& root, const std::string& id) {
  TRYV(validate_id(id));
  ContainerDir dir(root, id);
  if (!dir.exists()) return Error::msg("container does not exist");
  TRY(UniqueFd lock, dir.lock());
  TRY(ContainerRecord rec, dir.load());
  oci::ContainerStatus st = derive_status(dir, rec);
  return LockedContainer{std::move(dir), std::move(lock), std::move(rec), st};
}

std::vector<std::string> list_ids(const std::string& root) {
  std::vector<std::string> ids;
  DIR* d = ::opendir(root.c_str());
  if (!d) return ids;
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) ids.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace comet::runtime
