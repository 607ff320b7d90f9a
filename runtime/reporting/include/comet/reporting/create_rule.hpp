// The git rule (capability::Policy::git_own, docs/sandbox.md "Nested
// repositories"): no `.git` may be made anywhere a sandbox's writes outlive
// it, and nothing may be written inside a git directory that is not the
// workspace's own. A mount can only protect a name that exists, or one
// listed at start; this rule judges every new name when it is made.
//
// The lock-down notifies every call that makes a name or opens for writing
// (seccomp::LockdownOptions::create_rule): mkdir[at], mknod[at],
// symlink[at], link[at], rename[at|at2], creat, open[at] with O_CREAT or a
// write mode, and every openat2. The reporter copies the call's path(s)
// once, takes the task's directory fds (pidfd_getfd; its cwd for AT_FDCWD)
// and hands the call to the sandbox's init (comet-init, trampoline.c), which
// makes it: it has the agent's identity, mount namespace and root, and a
// Landlock domain the agent's is nested in (same rules), and no seccomp
// filter. The init resolves the parent directory, follows a last symlink
// itself for an open (so it judges where the name really is), refuses
// (EACCES) a last name ".git" (any case) and a parent inside a ".git"
// directory that is not one of git_own, except on the sandbox's own tmpfs
// mounts, and otherwise makes the call on the parent's fd with the name it
// judged (O_NOFOLLOW). No other thread can change what is judged after the
// look (the copy), and no rename can move a judged parent into a git
// directory (that rename is judged too). An open's fd goes back to the
// task with SECCOMP_IOCTL_NOTIF_ADDFD.
#pragma once

#include <linux/seccomp.h>

#include <cstdint>
#include <string>

namespace comet::runtime {

// The request and reply on the reporter <-> init socket (SOCK_SEQPACKET);
// the same layout as struct creq / crep in trampoline.c.
enum CreateOp : std::uint32_t {
  kCreateOpen = 1,
  kCreateMkdir = 2,
  kCreateMknod = 3,
  kCreateSymlink = 4,  // p1: the target (as is), p2: the new name (dir 1)
  kCreateLink = 5,     // p1: the old path (dir 1), p2: the new name (dir 2)
  kCreateRename = 6,   // p1 (dir 1) -> p2 (dir 2)
  kCreateBind = 7,     // p1: the sockaddr (len1 bytes); fd 1: the socket, fd 2: the cwd
};
inline constexpr std::size_t kCreatePathMax = 4096;
struct CreateRequest {
  std::uint32_t op;
  std::uint32_t umask;
  std::uint64_t flags;  // open flags; linkat's or renameat2's flags
  std::uint64_t mode;
  std::uint64_t dev;
  std::int32_t nspid, nstid;  // the task in the sandbox's pid namespace (/proc/self); 0: not read
  std::uint32_t len1, len2;
  char p1[kCreatePathMax];
  char p2[kCreatePathMax];
};
struct CreateReply {
  std::int64_t ret;  // >= 0, or -errno; an open's fd comes as SCM_RIGHTS
  // 1: refused; 2: the init needs nspid (ret -EAGAIN); 3: EROFS at the
  // protected path in where (the fs events report it, when there are any)
  std::int32_t refused;
  std::int32_t pad;
  char where[1024];  // the refused name, as the sandbox sees it
};

bool create_rule_call(int nr);

// What the reporter keeps between calls. The task's umask is read from
// /proc/PID/status only once some process has set one other than the
// sandbox's first (umask(2) notifies, and is let through); the task's ids
// in the sandbox's pid namespace only when a path may need them (the init
// asks for them when a symlink it follows leads to /proc/self).
struct CreateRuleState {
  std::uint32_t first_umask = 022;
  bool umask_changed = false;
};
// A umask(2) notification: note it (the caller answers CONTINUE).
void create_rule_umask(CreateRuleState& st, std::uint64_t mask);

struct CreateOutcome {
  long long ret = 0;  // -errno, or the result
  int fd = -1;        // an open's fd (owned by the caller): ADDFD it
  bool cloexec = false;
  bool refused = false;
  // EROFS (or a rename's EBUSY) at the protected path in where
  // (CreateReply::refused 3): the fs events report it where there are any
  bool erofs = false;
  std::string where;
};

// Judges and makes the call over `init_sock`. Every error is an answer
// (-EACCES when the init cannot be reached): fail closed.
CreateOutcome create_rule_judge(CreateRuleState& st, const struct seccomp_notif& req, int listener,
                                int init_sock);

// The git index at `index` (versions 2-4; `sha256`: 32-byte object ids)
// has an entry whose path has a ".git", "..", "." or empty component, which
// git's own path check refuses and a host's `git restore .` would write
// into the git directory or outside the work tree (red team rounds 7, 8):
// the first such path, or "". An index that cannot be read or parsed, or a
// split index (its entries in another file): "" with *bad set.
std::string git_index_dot_git_entry(const std::string& index, bool sha256, bool* bad);

}  // namespace comet::runtime
