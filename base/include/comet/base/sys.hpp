// Small syscall helpers that return comet::Result with the syscall and path
// in the message. Used by the parent side; the child uses the noexcept
// primitives in child.hpp.
#pragma once

#include <sys/stat.h>

#include <string>
#include <string_view>
#include <vector>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"

namespace comet {

Result<std::string> read_file(const std::string& path);
// write(2) until all of `data` is out, retrying EINTR. False on an error
// (errno set; EIO for a write that returned 0). Safe after fork.
bool write_fully(int fd, std::string_view data) noexcept;
Result<std::string> read_file_at(int dirfd, const std::string& name);
// write then rename: readers see the old or the new content, never a part
// (also after a crash of the writer). Sync::fsync also makes it survive a
// power loss, at a disk flush each (1-8 ms on this VM's ext4). Sync::none
// is for what does not outlive the boot: the state dir, run dirs, bundles
// made for one run, caches under /run. runc and crun do not fsync their
// state either.
enum class Sync { fsync, none };
Status write_file_atomic(const std::string& path, std::string_view data, mode_t mode = 0600,
                         Sync sync = Sync::fsync);
Status write_file(const std::string& path, std::string_view data, int flags = 0);
Result<UniqueFd> open_fd(const std::string& path, int flags, mode_t mode = 0);
Status mkdir_p(const std::string& path, mode_t mode = 0755);
// rm -rf that never follows symlinks and never crosses a mount point.
Status remove_tree(const std::string& path);
// Text that may have come from an agent or a pack, made safe for a
// terminal: C0 controls (but tab, newline, carriage return), DEL and the C1
// controls (UTF-8 C2 80..9F, or a byte 0x80..0x9F outside a valid UTF-8
// sequence) are shown, never sent: `caret` as ^[ / ^? (the tee of an
// agent's output), else as \xNN (the runtime's log lines, where newline,
// tab and carriage return are escaped too). Any other byte that is not
// valid UTF-8 becomes \xNN. carry: an incomplete UTF-8 sequence at the end
// is kept there for the next call (a stream read in chunks); nullptr:
// shown as bytes.
std::string visible_controls(std::string_view in, bool caret, std::string* carry = nullptr);

// Detaches (MNT_DETACH) every mount of this mount namespace at PATH or
// beneath it, deepest first; what cannot be read or unmounted is left.
void unmount_under(const std::string& path);
bool path_exists(const std::string& path);
std::string join_path(std::string_view a, std::string_view b);
// Clean a path lexically (collapse //, ., ..) without touching the disk.
std::string clean_path(std::string_view p);
// Component-wise prefix, lexical: "/a/b/c" and "/a/b" are under "/a/b",
// "/a/bc" is not; every absolute path is under "/".
bool path_under(std::string_view path, std::string_view prefix);
std::string rfc3339_now(bool nanos = true);
std::vector<std::string> split(std::string_view s, char sep);
// The names of a path, without the empty ones: "/a//b/" -> {"a", "b"}.
std::vector<std::string> path_components(std::string_view p);
// An absolute path resolved component by component as the kernel would
// (up to 40 links), recording every symlink met on the way: a symlinked
// parent, each hop of a chain, the last component when it is one.
// `real` is where it leads (for a missing path: the resolved existing
// prefix plus the rest, cleaned); `first_missing` the first component that
// does not exist ("" when it all exists). A loop stops the walk there.
struct PathWalk {
  std::string real;
  std::vector<std::string> links;
  std::string first_missing;
  // Found: REAL exists, and ST is its lstat (not a link: stat(2) of the
  // path), from the walk itself. LAST_IS_LINK: the path's own last name is
  // a symlink (lstat(2) of the path).
  bool found = false;
  struct stat st = {};
  bool last_is_link = false;
};
PathWalk walk_path(const std::string& abs);
// /proc/PID/stat field 22 (starttime in clock ticks), or 0 when unreadable.
unsigned long long process_start_time(int pid);
// A connected AF_UNIX stream socket; WHAT names it in errors
// ("connect to console socket /run/x.sock: ENOENT").
Result<UniqueFd> connect_unix(const std::string& path, const std::string& what);
// Zombie or gone.
bool process_dead(int pid);

}  // namespace comet
