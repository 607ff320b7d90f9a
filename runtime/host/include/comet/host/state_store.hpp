// One directory per container under --root:
//
//   <root>/<id>/state.json   our record, written atomically (tmp + rename)
//   <root>/<id>/config.json  the bundle's config as create saw it
//   <root>/<id>/exec.fifo    exists between create and start
//   <root>/<id>/lock         flock()ed (read-only fd) by every command on this id
//   <root>/.deleted@<id>@<pid>  a directory being removed (see remove())
//
// The directory is made with mkdir(2) first, so two creates of one id race
// to a single winner. The record is written twice: once right after clone
// (so a runtime killed mid-create still leaves enough for delete --force to
// clean up), and again, complete, when create succeeds.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"
#include "comet/oci/state.hpp"

namespace comet::runtime {

struct ContainerRecord {
  std::string id;
  std::string bundle;
  std::string rootfs;
  std::string created;  // RFC 3339
  std::string owner;
  int pid = 0;
  unsigned long long start_time = 0;  // /proc/PID/stat starttime, guards pid reuse
  bool create_done = false;           // false: create is in progress or died
  std::map<std::string, std::string> annotations;
  std::vector<std::string> cgroup_dirs;  // absolute, every hierarchy joined
  std::string freezer_dir;               // v1 freezer or the v2 dir
  bool freezer_v2 = false;
  std::vector<int> helper_pids;  // per-container helpers, killed at delete
  std::vector<unsigned long long> helper_starts;
  std::vector<std::string> layers;  // active hardening layers, for state/inspect
  // Rootless (docs/rootless.md): what this user could not have, for state:
  // {"cgroup": "none (not delegated)", "fs-events": "off (no CAP_BPF)"}.
  std::map<std::string, std::string> rootless;
  std::vector<std::string> cleanup_paths;  // things delete must remove (netns mounts, ...)
  // linux.netDevices moved in (net_devices.hpp): container name -> host
  // name, and the netns that holds them (pinned in the state dir, or the
  // config's path), for delete to move them back.
  std::map<std::string, std::string> net_devices;
  std::string net_devices_netns;
  bool terminal = false;
  // Egress (egress/egress.hpp Handles): what delete tears down.
  int egress_resolver_pid = 0;
  unsigned long long egress_resolver_start = 0;
  int egress_net_pid = 0;  // the network helper (slirp4netns or pasta)
  unsigned long long egress_net_start = 0;
  std::string egress_netns;  // an engine's netns that holds our nft table ("" = ours)
  std::string egress_table;  // our nft table ("" = none loaded)
  // Violation reporter (reporter.hpp): stopped at delete; <dir>/events.jsonl.
  int reporter_pid = 0;
  unsigned long long reporter_start = 0;
};

// Reject ids runc would reject, and more: empty, '/', '..', '.', NUL,
// control chars, longer than 1024.
Status validate_id(const std::string& id);

class ContainerDir {
 public:
  ContainerDir(std::string root, std::string id);

  const std::string& path() const { return path_; }
  const std::string& id() const { return id_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

  bool exists() const;
  // mkdir root (0711) and the container dir;
  // EEXIST -> "container with given ID already exists: ID"
  Status create();
  // flock(LOCK_EX) on <dir>/lock, held by the returned fd. A directory
  // gone (or renamed by a delete) while we waited is "container does not exist".
  Result<UniqueFd> lock() const;
  Status save(const ContainerRecord& rec) const;
  Result<ContainerRecord> load() const;
  // With the lock held: rename to <root>/.deleted@<id>@<pid> (atomic: the id
  // is gone for every other command at once), then remove that tree; also
  // removes tombstones of deletes that were killed.
  Status remove() const;

 private:
  std::string root_, id_, path_;
};

// Live status from the record: dead pid -> stopped; fifo -> created;
// frozen -> paused; else running. A record whose create never finished is
// "creating" while its process lives, "stopped" otherwise.
oci::ContainerStatus derive_status(const ContainerDir& dir, const ContainerRecord& rec);

std::vector<std::string> list_ids(const std::string& root);

// What every verb on an existing container starts with: the id checked, the
// directory locked, the record loaded, the live status derived.
struct LockedContainer {
  ContainerDir dir;
  UniqueFd lock;
  ContainerRecord rec;
  oci::ContainerStatus status;
};
// "container does not exist" when there is no such container.
Result<LockedContainer> open_locked(const std::string& root, const std::string& id);

}  // namespace comet::runtime
