// The git rule, the reporter's side: see create_rule.hpp.
#include "comet/reporting/create_rule.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "comet/base/fd.hpp"
#include "comet/base/fdpass.hpp"
#include "comet/reporting/notified_task.hpp"

namespace comet::runtime {

namespace {

static_assert(sizeof(CreateRequest) == 48 + 2 * kCreatePathMax, "trampoline.c's struct creq");
static_assert(sizeof(CreateReply) == 16 + 1024, "trampoline.c's struct crep");

// A NUL-terminated string of the task's, up to kCreatePathMax - 1 bytes.
int read_path(int pid, std::uint64_t addr, char* out, std::uint32_t* len) {
  std::size_t n = 0;
  const int err = task::read_string(pid, addr, out, kCreatePathMax, &n);
  if (err == 0) *len = static_cast<std::uint32_t>(n);
  return err;
}

// The task's umask and its ids in the sandbox's pid namespace (the last
// field of NStgid and NSpid), from one read of /proc/PID/status (its first
// 4095 bytes).
bool task_status(int pid, std::uint32_t* umask, std::int32_t* nspid, std::int32_t* nstid) {
  task::TaskStatus status;
  if (!status.read(pid, 4095)) return false;
  auto um = status.numbers("Umask", 8);
  auto tg = status.numbers("NStgid"), t = status.numbers("NSpid");
  if (!um || !tg || !t || tg->empty() || t->empty() || tg->back() < 0 || t->back() < 0)
    return false;
  *umask = static_cast<std::uint32_t>(um->empty() ? 0 : um->front()) & 0777;
  *nspid = static_cast<std::int32_t>(tg->back());
  *nstid = static_cast<std::int32_t>(t->back());
  return true;
}

// The directory a dirfd argument names, as an fd of ours: the task's cwd
// for AT_FDCWD (an absolute path ignores it), else a copy of its fd.
UniqueFd task_dir(int pid, int pidfd, std::int64_t dirfd) {
  if (static_cast<int>(dirfd) == AT_FDCWD) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/cwd", pid);
    return UniqueFd(::open(path, O_PATH | O_DIRECTORY | O_CLOEXEC));
  }
  return task::take_fd(pidfd, static_cast<int>(dirfd));
}

CreateOutcome fail(long long err) {
  CreateOutcome o;
  o.ret = -err;
  return o;
}

}  // namespace

bool create_rule_call(int nr) {
  switch (nr) {
    case SYS_open:
    case SYS_openat:
    case SYS_openat2:
    case SYS_creat:
    case SYS_mkdir:
    case SYS_mkdirat:
    case SYS_mknod:
    case SYS_mknodat:
    case SYS_symlink:
    case SYS_symlinkat:
    case SYS_link:
    case SYS_linkat:
    case SYS_rename:
    case SYS_renameat:
    case SYS_renameat2:
    case SYS_bind:
      return true;
    default:
      return false;
  }
}

void create_rule_umask(CreateRuleState& st, std::uint64_t mask) {
  if ((mask & 0777) != st.first_umask) st.umask_changed = true;
}

namespace {

bool mentions_proc_or_dev(const char* p) {
  return std::strncmp(p, "/proc", 5) == 0 || std::strncmp(p, "/dev", 4) == 0;
}

// One round trip with the init: the request and its fds out, the reply
// (and an open's fd) back. false: no answer (refused by the caller).
bool ask_init(int init_sock, CreateRequest& rq, const int* fds, int nfds, CreateReply& rep,
              UniqueFd& got) {
  if (send_fds(init_sock, &rq, sizeof rq, fds, static_cast<std::size_t>(nfds)) !=
      static_cast<ssize_t>(sizeof rq))
    return false;
  // The init is the sandbox's PID 1 and answers at once; a hung-up or
  // silent one refuses.
  struct pollfd p = {init_sock, POLLIN, 0};
  if (::poll(&p, 1, 10000) <= 0) return false;
  std::memset(&rep, 0, sizeof rep);
  return recv_fds(init_sock, &rep, sizeof rep, &got, 1) == static_cast<ssize_t>(sizeof rep);
}

}  // namespace

CreateOutcome create_rule_judge(CreateRuleState& st, const struct seccomp_notif& req, int listener,
                                int init_sock) {
  const int pid = static_cast<int>(req.pid);
  const auto* a = req.data.args;
  auto rq = std::make_unique<CreateRequest>();
  std::memset(rq.get(), 0, sizeof *rq);
  // Which argument is which: the path(s), their dirfd(s), flags and mode.
  int p1 = -1, p2 = -1;
  std::int64_t d1 = AT_FDCWD, d2 = AT_FDCWD;
  switch (req.data.nr) {
    case SYS_open:
      rq->op = kCreateOpen, p1 = 0, rq->flags = a[1], rq->mode = a[2];
      break;
    case SYS_creat:
      rq->op = kCreateOpen, p1 = 0, rq->flags = O_CREAT | O_WRONLY | O_TRUNC, rq->mode = a[1];
      break;
    case SYS_openat:
      rq->op = kCreateOpen, d1 = static_cast<std::int64_t>(a[0]), p1 = 1, rq->flags = a[2],
      rq->mode = a[3];
      break;
    case SYS_openat2: {
      rq->op = kCreateOpen, d1 = static_cast<std::int64_t>(a[0]), p1 = 1;
      struct open_how how = {};
      if (a[3] < sizeof how) return fail(EINVAL);
      if (!task::read_all(pid, a[2], &how, sizeof how)) return fail(EFAULT);
      // RESOLVE_* scoping is not emulated: ENOSYS, and callers fall back
      // to openat (what they do on kernels before 5.6).
      if (how.resolve != 0) return fail(ENOSYS);
      rq->flags = how.flags, rq->mode = how.mode;
      break;
    }
    case SYS_mkdir:
      rq->op = kCreateMkdir, p1 = 0, rq->mode = a[1];
      break;
    case SYS_mkdirat:
      rq->op = kCreateMkdir, d1 = static_cast<std::int64_t>(a[0]), p1 = 1, rq->mode = a[2];
      break;
    case SYS_mknod:
      rq->op = kCreateMknod, p1 = 0, rq->mode = a[1], rq->dev = a[2];
      break;
    case SYS_mknodat:
      rq->op = kCreateMknod, d1 = static_cast<std::int64_t>(a[0]), p1 = 1, rq->mode = a[2],
      rq->dev = a[3];
      break;
    case SYS_symlink:
      rq->op = kCreateSymlink, p1 = 0, p2 = 1;
      break;
    case SYS_symlinkat:
      rq->op = kCreateSymlink, p1 = 0, d2 = static_cast<std::int64_t>(a[1]), p2 = 2;
      break;
    case SYS_link:
      rq->op = kCreateLink, p1 = 0, p2 = 1;
      break;
    case SYS_linkat:
      rq->op = kCreateLink, d1 = static_cast<std::int64_t>(a[0]), p1 = 1,
      d2 = static_cast<std::int64_t>(a[2]), p2 = 3, rq->flags = a[4];
      break;
    case SYS_rename:
      rq->op = kCreateRename, p1 = 0, p2 = 1;
      break;
    case SYS_renameat:
      rq->op = kCreateRename, d1 = static_cast<std::int64_t>(a[0]), p1 = 1,
      d2 = static_cast<std::int64_t>(a[2]), p2 = 3;
      break;
    case SYS_renameat2:
      rq->op = kCreateRename, d1 = static_cast<std::int64_t>(a[0]), p1 = 1,
      d2 = static_cast<std::int64_t>(a[2]), p2 = 3, rq->flags = a[4];
      break;
    case SYS_bind: {
      // Every bind: the family is behind the pointer (another thread could
      // change it after a look), so the init makes each one; a unix path's
      // name is judged like any other.
      rq->op = kCreateBind;
      const std::uint64_t len = a[2];
      if (len > sizeof rq->p1) return fail(EINVAL);
      if (!task::read_all(pid, a[1], rq->p1, len)) return fail(EFAULT);
      rq->len1 = static_cast<std::uint32_t>(len);
      break;
    }
    default:
      return fail(ENOSYS);
  }
  // No set-user-ID or set-group-ID file is made: a command run as root
  // could leave a setuid-root program in a host tree (red team round 8;
  // chmod is the lock-down's). The kernel keeps S_ISUID from a create mode.
  if (rq->op == kCreateOpen || rq->op == kCreateMknod) rq->mode &= ~std::uint64_t{06000};
  if (rq->op != kCreateBind)
    if (int e = read_path(pid, a[p1], rq->p1, &rq->len1)) return fail(e);
  if (p2 >= 0)
    if (int e = read_path(pid, a[p2], rq->p2, &rq->len2)) return fail(e);
  // /proc/PID/status (~10 us) only when needed: a umask set since the
  // start, or a path through /proc or /dev (the command's /proc/self).
  const bool creates = rq->op != kCreateOpen || (rq->flags & O_CREAT) != 0;
  rq->umask = st.first_umask;
  if ((creates && st.umask_changed) || mentions_proc_or_dev(rq->p1) ||
      (p2 >= 0 && mentions_proc_or_dev(rq->p2)))
    if (!task_status(pid, &rq->umask, &rq->nspid, &rq->nstid)) return fail(ESRCH);
  UniqueFd pidfd = task::open_pidfd(pid);
  if (!pidfd) return fail(ESRCH);
  // The directory fds: the symlink's target (p1) is only text; a bind's
  // fd 1 is the socket, its fd 2 the cwd.
  const bool p1_is_path = rq->op != kCreateSymlink;
  UniqueFd dir1, dir2;
  if (rq->op == kCreateBind) {
    dir1 = task::take_fd(pidfd.get(), static_cast<int>(a[0]));
    if (!dir1) return fail(errno == EBADF ? EBADF : ENOTSOCK);
    dir2 = task_dir(pid, pidfd.get(), AT_FDCWD);
    if (!dir2) return fail(ESRCH);
  } else {
    dir1 = p1_is_path ? task_dir(pid, pidfd.get(), d1) : UniqueFd();
    dir2 = p2 >= 0 ? task_dir(pid, pidfd.get(), d2) : UniqueFd();
    if ((p1_is_path && !dir1) || (p2 >= 0 && !dir2)) return fail(EBADF);
  }
  // The fds and the status are the task's own, not a new process's.
  if (!task::notif_valid(listener, req.id)) return fail(ESRCH);

  int fds[2] = {dir1.valid() ? dir1.get() : dir2.get(), dir2.get()};
  const int nfds = dir1.valid() && dir2.valid() ? 2 : 1;
  CreateReply rep;
  UniqueFd got;
  if (!ask_init(init_sock, *rq, fds, nfds, rep, got)) return fail(EACCES);
  if (rep.refused == 2 && rq->nspid == 0) {
    // A symlink the init followed leads to /proc/self: it needs the ids.
    if (!task_status(pid, &rq->umask, &rq->nspid, &rq->nstid)) return fail(ESRCH);
    if (!task::notif_valid(listener, req.id)) return fail(ESRCH);
    got.reset();
    if (!ask_init(init_sock, *rq, fds, nfds, rep, got)) return fail(EACCES);
  }
  if (rep.refused == 2) return fail(EACCES);
  CreateOutcome o;
  o.ret = rep.ret;
  o.refused = rep.refused == 1;
  o.erofs = rep.refused == 3 && rep.ret < 0;
  if (o.refused || o.erofs) o.where.assign(rep.where, strnlen(rep.where, sizeof rep.where));
  if (rq->op == kCreateOpen && rep.ret >= 0) {
    if (!got) return fail(EACCES);
    o.fd = got.release();
    o.cloexec = (rq->flags & O_CLOEXEC) != 0;
  }
  return o;
}

namespace {

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         p[3];
}

// A path git's own checks refuse and a checkout would write outside the
// work tree's files: a ".git" component (any case), "..", ".", or an empty
// one (a leading or doubled "/").
bool unsafe_entry(const std::string& path) {
  std::size_t i = 0;
  while (i <= path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    const std::size_t n = j - i;
    if (n == 0 || (n == 1 && path[i] == '.') || (n == 2 && path[i] == '.' && path[i + 1] == '.'))
      return true;
    if (n == 4 && path[i] == '.' && (path[i + 1] | 0x20) == 'g' && (path[i + 2] | 0x20) == 'i' &&
        (path[i + 3] | 0x20) == 't')
      return true;
    i = j + 1;
  }
  return false;
}

// The extensions after the entries (signature, size, data) up to the
// trailing hash: a split index ("link") keeps its entries in another file
// (sharedindex.*) that the host's git would read: refused as unreadable.
bool has_link_extension(const std::string& d, std::size_t at, std::size_t hash) {
  const auto* u = reinterpret_cast<const unsigned char*>(d.data());
  while (at + 8 + hash <= d.size()) {
    if (d.compare(at, 4, "link") == 0) return true;
    at += 8 + std::size_t{be32(u + at + 4)};
  }
  return false;
}

}  // namespace

std::string git_index_dot_git_entry(const std::string& index, bool sha256, bool* bad) {
  *bad = false;
  UniqueFd f(::open(index.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!f) {
    *bad = errno != ENOENT;
    return "";
  }
  std::string d;
  char buf[65536];
  for (ssize_t n; (n = ::read(f.get(), buf, sizeof buf)) > 0;) {
    d.append(buf, static_cast<std::size_t>(n));
    if (d.size() > (std::size_t{256} << 20)) break;
  }
  const auto* u = reinterpret_cast<const unsigned char*>(d.data());
  if (d.size() < 12 || d.compare(0, 4, "DIRC") != 0) {
    *bad = !d.empty();
    return "";
  }
  const std::uint32_t version = be32(u + 4), count = be32(u + 8);
  if (version < 2 || version > 4) {
    *bad = true;
    return "";
  }
  const std::size_t hash = sha256 ? 32 : 20;
  std::size_t at = 12;
  if (count == 0) {  // a split index's own file may hold no entry at all
    *bad = has_link_extension(d, at, hash);
    return "";
  }
  std::string prev;
  for (std::uint32_t k = 0; k < count; k++) {
    const std::size_t start = at;
    if (at + 40 + hash + 2 > d.size()) break;
    at += 40 + hash;
    const unsigned flags = (unsigned{u[at]} << 8) | u[at + 1];
    at += 2;
    if (version >= 3 && (flags & 0x4000)) at += 2;
    std::string path;
    if (version == 4) {
      // prefix compression: a varint of bytes to drop from the previous path
      std::size_t strip = 0;
      if (at >= d.size()) break;
      unsigned char c = u[at++];
      strip = c & 0x7f;
      while ((c & 0x80) && at < d.size()) {
        c = u[at++];
        strip = ((strip + 1) << 7) | (c & 0x7f);
      }
      const std::size_t nul = d.find('\0', at);
      if (nul == std::string::npos || strip > prev.size()) break;
      path = prev.substr(0, prev.size() - strip) + d.substr(at, nul - at);
      at = nul + 1;
    } else {
      const std::size_t nul = d.find('\0', at);
      if (nul == std::string::npos) break;
      path = d.substr(at, nul - at);
      // entries are padded with 1-8 NULs to a multiple of 8 bytes
      at = start + ((at - start + path.size() + 8) & ~std::size_t{7});
    }
    if (unsafe_entry(path)) {
      *bad = path.empty();  // (a split index's entries have no name)
      return path;
    }
    prev = std::move(path);
    if (k + 1 == count) {
      *bad = has_link_extension(d, at, hash);
      return "";
    }
  }
  *bad = count != 0;
  return "";
}

}  // namespace comet::runtime
