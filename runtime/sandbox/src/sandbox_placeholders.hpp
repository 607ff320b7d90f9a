// The placeholders of missing protected names (docs/sandbox.md "Protected
// paths"): made on the host before a sandbox starts, shared by the
// sandboxes of one workspace through a registry, removed by the last one
// out while they are still the empty ones made. Private to the sandbox
// launch (sandbox_launch.cpp).
#pragma once

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"
#include "comet/capability/profile_compile.hpp"

namespace comet::runtime::sandbox_parts {

std::string parent_of(const std::string& p);

struct Made {
  std::string path;
  bool dir;
  dev_t dev;
  ino_t ino;
  std::string content;  // a file's
};

struct Step {
  std::string path;
  bool dir;
  std::string content;  // a file's (Placeholder::content)
};

// Every missing component of every placeholder, parents first: what we
// are about to create (and will remove while it is still ours and as made).
std::vector<Step> placeholder_steps(const std::vector<capability::Placeholder>& ps);

// Makes STEP owned by UID:GID; its lstat once made (the identity the
// registry and the guardian check before they remove it).
Result<struct stat> make_placeholder(const Step& step, uid_t uid, gid_t gid);

// Removes M if it is still the empty placeholder made. A directory comes
// back open (O_PATH) once removed: its last close, which frees its block,
// is the guardian's (GuardEntry).
// ROOTS: the trees the command could write, where a directory of the
// user's own that the command made unsearchable gets its owner's rights
// back first (regain_own_dir).
UniqueFd remove_placeholder(const Made& m, const std::vector<std::string>& roots);

// DIR, a directory of the runtime's user that lacks its owner's rights
// (not followed if a link): given them back, with a warning. True if so.
bool regain_own_dir(const std::string& dir);
// The same for every directory on the way to PATH at or under one of ROOTS
// (an ordinary user's runtime only). True if one was changed.
bool regain_own_dirs(const std::string& path, const std::vector<std::string>& roots);

// Placeholders are the host's files while any sandbox of the workspace
// runs: a second sandbox binds over the first one's, and unlinking a file
// that is a mount point removes the mounts on it in every namespace. So
// they are shared, per workspace, under the state root
// (<root>/.placeholders/<hash of the workspace>): a registry ("dev ino
// d|f content-in-hex|- path" lines) whose flock is the mutex around making and removing
// them, and a users file each running sandbox holds LOCK_SH on. The last
// sandbox out (LOCK_EX|LOCK_NB on users succeeds) removes every registered
// placeholder that is still the empty one made; the others leave them.
class PlaceholderRegistry {
 public:
  // Opens (and flocks: the mutex) the registry of WORKSPACE under
  // STATE_ROOT/.placeholders.
  Status open(const std::string& state_root, const std::string& workspace);
  // Registered and still there as made.
  std::vector<Made> entries() const;
  // Registers M: written with the others by join() (or by the cleanup's
  // last(): the mutex is held from open() to either, so no other sandbox
  // reads the registry in between; the guardian knows each placeholder on
  // its own).
  void add(const Made& m) {
    static const char* digits = "0123456789abcdef";
    std::string hex;  // the content a file placeholder holds ("-": none), at most 64 bytes
    for (unsigned char c : m.content.substr(0, 64)) {
      hex.push_back(digits[c >> 4]);
      hex.push_back(digits[c & 15]);
    }
    std::string line = std::to_string(static_cast<unsigned long long>(m.dev)) + " " +
                       std::to_string(static_cast<unsigned long long>(m.ino)) +
                       (m.dir ? " d " : " f ") + (hex.empty() ? "-" : hex) + " " + m.path + "\n";
    pending_ += line;
  }
  // A user from now on; the mutex is released.
  Status join() {
    TRYV(flush());
    if (::flock(users_.get(), LOCK_SH) < 0) return Error::sys(errno, "sandbox: lock users");
    unlock();
    return ok();
  }
  // Whether this is the last sandbox of the workspace: then the mutex
  // stays held (and the registry is emptied) until the placeholders are
  // removed and this object goes.
  bool last() {
    if (!mutex_) return true;
    (void)flush();  // a launch that failed between add() and join()
    if (!locked_ && ::flock(mutex_.get(), LOCK_EX) == 0) locked_ = true;
    if (::flock(users_.get(), LOCK_EX | LOCK_NB) < 0) {
      unlock();
      return false;
    }
    return true;
  }
  // After the last one out removed the placeholders, still under the
  // mutex: nothing of the registry stays (a sandbox waiting on this mutex
  // then sees the path changed, and starts a new one).
  void finish() {
    finished_ = true;
    ::unlink(users_path_.c_str());
    ::unlink(registry_path_.c_str());
    ::rmdir(dir_.c_str());
  }
  void unlock() {
    if (locked_) ::flock(mutex_.get(), LOCK_UN);
    locked_ = false;
  }
  bool opened() const { return static_cast<bool>(mutex_); }
  int mutex_fd() const { return mutex_.get(); }
  int users_fd() const { return users_.get(); }
  const std::string& registry_path() const { return registry_path_; }
  const std::string& users_path() const { return users_path_; }
  const std::string& dir() const { return dir_; }

 private:
  Status flush();
  std::string dir_, registry_path_, users_path_;
  std::string pending_;  // add()'s lines, not yet written
  UniqueFd mutex_, users_;
  bool finished_ = false;

 public:
  // A launch that failed before its cleanup owned the registry (a plan
  // error): the last one out still removes what is registered's files.
  ~PlaceholderRegistry() {
    if (!mutex_ || finished_) return;
    if (last()) finish();
    unlock();
  }
  PlaceholderRegistry() = default;
  PlaceholderRegistry(const PlaceholderRegistry&) = delete;
  PlaceholderRegistry& operator=(const PlaceholderRegistry&) = delete;

 private:
  bool locked_ = false;
};

}  // namespace comet::runtime::sandbox_parts
