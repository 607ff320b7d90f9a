// The sandbox launch's private parts (sandbox_launch.cpp is the
// orchestrator): the guardian's shared block (sandbox_guardian.cpp) and
// what the launch does once the command has ended (sandbox_end.cpp).
#pragma once

#include <limits.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"
#include "comet/oci/spec.hpp"

namespace comet::runtime::sandbox_parts {

constexpr int kGuardFds = 64;  // removed directories handed over with "d"

struct GuardEntry {
  enum Kind : int { kCgroup, kDir, kFile } kind;
  std::uint64_t dev, ino;  // a placeholder we made (0: not made yet)
  std::uint64_t size;      // a file placeholder's: the size of its content
  // Being made (set before the mkdir/open, cleared when it failed): a kill
  // between the create and `ino` being known leaves an empty name that the
  // guardian removes all the same (red team round 10).
  std::uint32_t pending;
  const char* path;  // in the block's names, after the entries
};

// One mapping: the block, its n entries, the names they point to (packed:
// a PATH_MAX array per entry touched a page each, a first-touch fault of
// ~18 us apiece on this VM), then the guardian's stack.
struct GuardBlock {
  int rd;
  int mutex_fd = -1, users_fd = -1;  // the placeholder registry's (PlaceholderRegistry)
  const char *registry_path, *users_path, *registry_dir;
  int n;
  GuardEntry e[1];  // n of them
};

// The guardian's body, on its own stack (clone(CLONE_VM)): raw syscalls only.
int guardian_main(void* arg) noexcept;

// ---- the end of a run (sandbox_end.cpp) ------------------------------------

// Where the reporter writes events.jsonl: a tmpfs attached nowhere.
Result<UniqueFd> detached_tmpfs();

// One line per surface on stderr: what the sandbox refused.
void summarize_events(const std::string& dir, const std::string& deliver);

struct IndexStamp {
  bool there = false;
  bool unknown = false;  // could not be looked at (a directory made unsearchable): changed

  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  struct timespec mtime = {}, ctime = {};
  bool operator==(const IndexStamp& o) const {
    return !unknown && !o.unknown && there == o.there && dev == o.dev && ino == o.ino &&
           size == o.size && mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec &&
           ctime.tv_sec == o.ctime.tv_sec && ctime.tv_nsec == o.ctime.tv_nsec;
  }
};
using IndexStamps = std::map<std::string, IndexStamp>;

// The git directories below dir (.git/modules, .git/worktrees), from level
// `depth` to 8, at most `limit` in out: one with a HEAD is a module's or a
// worktree's (its own modules/ looked into), one without holds modules
// whose names have a "/" (modules/vendor/lib).
void git_dirs_below(const std::string& dir, int depth, std::size_t limit,
                    std::vector<std::string>& out);

// The indexes of the git directories the git rule owns, as they are now.
IndexStamps index_stamps(const std::vector<std::string>& own);

// The git rule's last look: an index that changed and names a path git
// refuses (or cannot be read safely) is moved aside and reported. ROOTS:
// the trees the command could write, where an ordinary user's directory
// the command made unsearchable gets its owner's rights back first.
void check_git_index(const std::vector<std::string>& own, const IndexStamps& before,
                     const std::string& id, const std::string& events_dir,
                     const std::string& deliver, const std::vector<std::string>& roots);

// PATH renamed to PATH.comet-refused, or beside it under a fresh name when
// that one is taken (a directory the command made there, red team round 9):
// the new name, or "" when neither could be made.
std::string move_aside(const std::string& path);
// An fs.write event of the git rule's last looks (matched_entry "git
// repository"), into the events store and to --events.
void report_git_refusal(const std::string& id, const std::string& events_dir,
                        const std::string& deliver, const std::string& requested);

// HEAD's commit id in GIT_DIR (a ref followed through packed-refs), or "".
std::string head_commit(const std::string& git_dir);

// Every ref of GIT_DIR (packed-refs, then the loose ones, at most 4096;
// "HEAD" when detached) and its object id.
using RefSnapshot = std::map<std::string, std::string>;
RefSnapshot ref_snapshot(const std::string& git_dir);

// The git rule's look at git's own data (sandbox_history.cpp): commits and
// an index that change a protected path of the work tree.
// A git directory as it was before the run: the work tree's own, then
// each of its modules' (.git/modules/..., at any depth: red team round 22
// moved a module's own ref and staged its .envrc).
struct GitDirBefore {
  std::string git_dir;
  std::string head;           // head_commit()
  RefSnapshot refs;           // ref_snapshot()
  std::set<std::string> top;  // the names at the top of git_dir (top_names())
};
std::vector<GitDirBefore> history_snapshot(const std::vector<std::string>& own);

struct GitHistoryCheck {
  std::vector<GitDirBefore> dirs;  // history_snapshot()
  IndexStamps index_before;
  std::vector<std::string> protect;  // absolute protected paths (FsView::protect)
  uid_t uid = 0;                     // the caller, who runs git
  gid_t gid = 0;
  std::string id, events_dir, deliver;
  struct timespec started = {};  // CLOCK_REALTIME before the command
};
void check_git_history(const GitHistoryCheck& c);

}  // namespace comet::runtime::sandbox_parts

// ---- rootless (sandbox_rootless.cpp; docs/sandbox.md "Rootless") ----------

namespace comet::runtime {
struct ChildContext;
struct SandboxLaunch;
}  // namespace comet::runtime

namespace comet::runtime::sandbox_parts {

// An ordinary caller's sandbox: a user namespace mapping only the caller's
// own uid and gid (the child writes the maps), and the limits without a
// cgroup: pids as RLIMIT_NPROC, which counts the sandbox's processes in
// its user namespace; a memory limit the profile names itself is refused
// (one line, 125), the default one is not enforced (said with --verbose).
// Called on the planned context; the spec's resources are then dropped.
Status plan_rootless(const SandboxLaunch& l, ChildContext& ctx, oci::Linux& lx);

// clone3 of the sandbox child; where clone3 is filtered (ENOSYS, as
// docker's default seccomp profile does) and no cgroup fd is needed, the
// same with clone(2). A refused user namespace is one line naming the
// host setting (userns_refusal).
Result<long> clone_sandbox_child(int ns_flags, int cgroup_fd);
// A refused clone of the sandbox's child, said (a refused user namespace
// names the setting that refuses it).
Error clone_sandbox_error(const Error& e, int ns_flags);

}  // namespace comet::runtime::sandbox_parts
