// fs.read / fs.write violation events (docs/events.md): a BPF program on
// the sys_exit tracepoint (runtime/reporting/bpf/fswatch.bpf.c) sees every path call
// that failed with an errno the sandbox's mounts give, in a watched
// container's cgroup, and hands it to that container's reporter through a
// ring buffer of its own. It only observes: the mounts decide, the program
// runs after the call and can change nothing.
//
//   create   watch(cgroup2 dir): loads and pins the program once per boot
//            (/sys/fs/bpf/comet-runtime/<hash>/), attaches it while any
//            container is watched, makes the container's ring buffer and
//            files it under the cgroup's id
//   reporter drains the ring, resolves each record's path in the task and
//            classify_fs() says whether it is a violation; unwatch() at its end
//   delete   unwatch() again (a killed reporter); after the last one the
//            program stays attached 10 s, then a detacher unpins it
//
// One program for every container: a call that succeeds costs the
// tracepoint and one compare, on every syscall of the host while a
// container is watched; nothing when none is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"
#include "comet/capability/manifest.hpp"

namespace comet::runtime {

// The path the agent looks up (access(2), ENOENT) right before it sends its
// listener: the BPF program records nothing of the container's before it
// (the runtime's own set-up), and not the marker itself.
inline constexpr const char kFsArmMarker[] =
    "/\x01"
    "comet-fswatch-arm";

// What the BPF program hands over (layout of struct fs_record).
struct FsRecord {
  std::uint64_t cgroup;
  std::uint32_t tgid, tid;
  std::int32_t nr, ret;
  std::int64_t dfd, dfd2;
  std::uint64_t flags;
  std::uint32_t info;     // kFsPathCut | kFsPath2Cut | kFsCwdMoved
  std::uint32_t cwd_dev;  // the caller's cwd: dev (kernel encoding, MAJOR << 20 | MINOR)
  std::uint64_t cwd_ino;  // and inode number
  char path[512];
  char path2[512];
};
inline constexpr std::uint32_t kFsPathCut = 1;   // the path filled the buffer: it may go on
inline constexpr std::uint32_t kFsPath2Cut = 2;  // the same for path2
// The caller's cwd is not the one the agent had when it armed (process.cwd).
inline constexpr std::uint32_t kFsCwdMoved = 4;
// The path could not be read from the caller's memory (unmapped after the
// call): where it led is unknown.
inline constexpr std::uint32_t kFsPathFault = 8;

struct FsWatch {
  UniqueFd ring;             // the container's ring buffer map
  std::uint64_t cgroup = 0;  // the cgroup2 id it is filed under
};

// Registers the container's cgroup (a cgroup2 directory).
Result<FsWatch> fswatch_watch(const std::string& cgroup2_dir);
// Whether an error of fswatch_watch() says the kernel or the caller cannot
// (EPERM, EACCES, ENOSYS, EOPNOTSUPP, EINVAL, ENOENT, ESRCH: no CAP_BPF, no
// BTF, a program or map type this kernel lacks): create then goes on
// without fs events, warning. Anything else (no free slot, ENOMEM) fails
// the create: the events would be missing for no reason the host has.
bool fswatch_unsupported(const Error& e);
// Unregisters (idempotent); drops entries whose cgroup is gone. When
// nothing is watched any more it starts the detacher (once), which unpins
// the program's link after 10 s with nothing watched: attaching right after
// a detach waits for an RCU grace period (8-16 ms), which back-to-back
// packs would pay each time.
void fswatch_unwatch(std::uint64_t cgroup);
// The detacher's body: main() runs it for argv[0] "comet-fswatch-linger".
int fswatch_linger_main() noexcept;
// Records of the cgroup that its full ring could not take (the BPF
// program counts them); 0 when it is not watched.
std::uint64_t fswatch_lost(std::uint64_t cgroup);
// A ring record (n bytes: the fixed part and the used length of the path)
// as a whole FsRecord; false when it is too short to be one.
bool fs_record_of(const void* data, std::size_t n, FsRecord& out);

// The cgroup2 id of a directory (its inode number), 0 when it has none.
std::uint64_t cgroup_id_of(const std::string& cgroup2_dir);

// What the container may touch, for classify_fs().
struct FsView {
  capability::FsPolicy fs;
  // The rootfs's own top-level entries and the config's mount points'
  // first components ("usr", "etc", "proc", "workdir", ...): a missing file
  // inside the image is only missing, not hidden. Never home, root, srv,
  // var, mnt or media, which an image may have but a pack does not read.
  std::vector<std::string> image_top;
  std::string cwd = "/";  // process.cwd: the base of relative paths while kFsCwdMoved is clear
  // A sandbox profile (docs/sandbox.md) instead of a pack's fs policy: a
  // write refused (EROFS, EACCES, EPERM, EXDEV) under a protected path, or
  // anywhere outside the writable ones, is fs.write (matched_entry: the
  // protected path); a call refused with EACCES under a denied path is
  // fs.read (matched_entry: the denied path). A missing file is only missing.
  bool sandbox = false;
  std::vector<std::string> writable, protect, deny;
  // Missing protected names the git rule's init refuses: a write refused on
  // the way to one (a symlink, file or rename where a directory above it
  // would go) is fs.write too (matched_entry: the name; red team round 18).
  std::vector<std::string> refused;
};

// One path of a record, as far as the reporter could tell where it leads.
struct FsPath {
  std::string path;      // absolute as the kernel walks it (not cleaned); as given when !known
  std::string resolved;  // where it leads in the container (symlinks followed), or ""
  bool known = true;     // false: relative to a cwd or dirfd that is gone
  bool cut = false;      // longer than the record could hold
  bool opaque = false;   // through a /proc magic link or a symlink loop: anywhere
  // Directories the walk went into and left again by "..": the kernel went
  // through them too (/root/../workdir/x looks into /root).
  std::vector<std::string> passed;
};

struct FsViolation {
  std::string surface;  // fs.read | fs.write
  std::string requested;
  std::optional<std::string> matched_entry;
  std::string syscall;
  int err = 0;
};

// Pure: is this failed call a violation? fs.write: a call that writes
// (open for writing or creating, mkdir, unlink, rename, link, symlink,
// truncate, chmod, chown, utimes, xattrs, bind of a unix socket, mknod of a
// non-device) on a path that no fs.write entry covers, or a symlink refused
// where fs.write allows writing (packs may not make symlinks: EACCES).
// fs.read: any other call on a path no entry makes readable and whose first
// component is not a system directory (usr lib lib64 bin sbin etc proc dev
// sys), one of the image's top-level entries or a mount point of the config
// (there a missing or refused file is the image's own business). What is
// judged is where the path leads (resolved), when the reporter could look,
// else the path cleaned lexically. A path whose end cannot be told (not
// known, cut, opaque) is a violation unless it is one already:
// fail closed. connect(2) to a container runtime's socket is left to the
// runtime-socket surface.
std::optional<FsViolation> classify_fs(int nr, std::uint64_t flags, int err, const FsPath& path,
                                       const FsPath& path2, const FsView& view);

// The path of a record made absolute in the task: relative to the agent's
// cwd (view.cwd) when the record says the cwd has not moved; else to the
// task's cwd read from /proc while the task (tid) lives and that is still
// the directory the call had (dev and inode); to a dirfd read from /proc
// while the task lives (an agent could swap the fd first: docs/events.md).
// Not known otherwise.
struct FsCwd {
  bool moved = false;  // kFsCwdMoved
  std::uint32_t dev = 0;
  std::uint64_t ino = 0;
};
// Whether a call with an empty path acts on its fd itself: fchmod,
// fchown, fsetxattr, fremovexattr, utimensat(fd, NULL), and the *at calls
// with AT_EMPTY_PATH. Such a record is judged on what the fd names.
bool fs_on_fd_itself(int nr, std::uint64_t flags);
// What the task's fd names (/proc/TID/fd/N), as a path in the container;
// not known (fail closed) once the fd is closed, or for a pipe or socket.
FsPath fd_in_task(int tid, std::int64_t dfd);
FsPath absolute_in_task(int tid, std::int64_t dfd, const std::string& path, const FsCwd& at_call,
                        const std::string& cwd);

// Where an absolute path leads in the tree under rootfd (the container's
// root, as the agent sees it): each existing component looked up with
// openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), symlinks read and
// followed by hand (40 at most; the last component only when follow_last),
// ".." over what was resolved. The first component that is missing or not
// a directory is where the kernel stopped: the rest is appended as written,
// and a ".." there never climbs back over it. Below /proc the walk stops:
// a magic link (root, cwd, fd, map_files, exe) with more components after
// it makes the path opaque.
FsPath resolve_in_root(int rootfd, const FsPath& path, bool follow_last = true);
// Whether the call follows a symlink in the last component of its first
// (second = false) or second path: not lstat, unlink, rmdir, rename, link,
// symlink, mkdir, readlink, mknod, bind, the l*xattr and lchown calls, an
// open with O_NOFOLLOW or O_CREAT|O_EXCL, an *at call with
// AT_SYMLINK_NOFOLLOW, inotify's IN_DONT_FOLLOW, fanotify's
// FAN_MARK_DONT_FOLLOW; linkat and name_to_handle_at only with
// AT_SYMLINK_FOLLOW. A path ending in "/" is always followed
// (resolve_in_root).
bool fs_follows_last(int nr, std::uint64_t flags, bool second);

}  // namespace comet::runtime
