#include "comet/lifecycle/confine.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <seccomp.h>

#include "comet/base/fd.hpp"
#include "comet/base/openat2.hpp"
#include "comet/base/switches.hpp"
#include "comet/base/sys.hpp"
#include "comet/capability/compile.hpp"
#include "comet/host/elf.hpp"
#include "comet/host/log.hpp"
#include "comet/host/seccomp_cache.hpp"
#include "comet/host/sha256.hpp"
#include "comet/lifecycle/rootless.hpp"
#include "comet/reporting/reporter.hpp"
#include "comet/seccomp/bpf_eval.hpp"
#include "comet/seccomp/seccomp.hpp"

namespace comet::runtime {
namespace {

// <linux/landlock.h> from Debian 12 predates ABI 4; the kernel's layout.
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};
struct PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));
constexpr uint32_t kCreateRulesetVersion = 1U << 0;
constexpr uint32_t kRulePathBeneath = 1;
constexpr uint64_t kAccessFsExecute = 1ULL << 0;
// WRITE_FILE REMOVE_DIR REMOVE_FILE MAKE_CHAR MAKE_DIR MAKE_REG MAKE_SOCK
// MAKE_FIFO MAKE_BLOCK MAKE_SYM (ABI 1), REFER (2), TRUNCATE (3)
constexpr uint64_t kAccessFsWriteV1 = (1ULL << 1) | (0xffULL << 4) | (1ULL << 12);
constexpr uint64_t kAccessFsMakeSym = 1ULL << 12;
constexpr uint64_t kAccessFsRefer = 1ULL << 13;
constexpr uint64_t kAccessFsTruncate = 1ULL << 14;
constexpr uint64_t kAccessFsWriteFile = 1ULL << 1;
constexpr uint64_t kAccessFsReadFile = 1ULL << 2;
constexpr uint64_t kFileRights =
    kAccessFsExecute | kAccessFsWriteFile | kAccessFsReadFile | kAccessFsTruncate;
constexpr uint32_t kRuleNetPort = 2;
constexpr uint64_t kAccessNetBindTcp = 1ULL << 0;
constexpr uint64_t kAccessNetConnectTcp = 1ULL << 1;
struct NetPortAttr {
  uint64_t allowed_access;
  uint64_t port;
} __attribute__((packed));
constexpr uint64_t kScopeAbstractUnixSocket = 1ULL << 0;
constexpr uint64_t kScopeSignal = 1ULL << 1;

long ll_create(const RulesetAttr* a, size_t size, uint32_t flags) noexcept {
  return ::syscall(SYS_landlock_create_ruleset, a, size, flags);
}

// Reads at most `limit` bytes of rootfs/path, resolved inside the rootfs
// (symlinks and .. cannot leave it).
// openat2(2), again on EAGAIN (a rename or mount elsewhere raced the
// RESOLVE_IN_ROOT walk; the kernel asks the caller to retry).
int openat2_retry(int dirfd, const char* path, const struct open_how& how) {
  return sys_openat2(dirfd, path, how, /*attempts=*/128);
}

Result<std::string> read_in_root(int rootfd, const std::string& path, size_t limit) {
  struct open_how how = {};
  how.flags = O_RDONLY | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  UniqueFd fd(openat2_retry(rootfd, path.c_str(), how));
  if (!fd) return Error::sys(errno, "open " + path + " in the rootfs");
  std::string out(limit, '\0');
  size_t got = 0;
  while (got < limit) {
    ssize_t n = ::read(fd.get(), out.data() + got, limit - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::sys(errno, "read " + path + " in the rootfs");
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

}  // namespace

int landlock_abi(int* err) noexcept {
  long v = ll_create(nullptr, 0, kCreateRulesetVersion);
  if (v < 0 && err) *err = errno;
  return v < 0 ? 0 : static_cast<int>(v);
}

int seccomp_listener_missing() noexcept {
  long rc =
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, nullptr);
  if (rc < 0 && errno == EFAULT) return 0;
  return rc < 0 ? errno : EINVAL;  // rc >= 0 cannot happen without a program
}

namespace {

// A layer this kernel cannot give (docs/rootless.md, "Fail closed"): an
// error naming the layer, why, and the switch that runs without it; exit
// 125 (rootless.hpp is_refusal).
Error missing_layer(const char* layer, const std::string& why, const std::string& loses) {
  return layer_refusal(std::string(layer) + ": " + why + "; without it " + loses +
                       ": refusing to run; COMET_ALLOW_MISSING=" + layer +
                       " runs without it (docs/rootless.md)");
}

std::string landlock_why(int err) {
  if (err == EOPNOTSUPP)
    return "Landlock is disabled on this kernel (landlock_create_ruleset: EOPNOTSUPP; add "
           "landlock to the lsm= boot parameter)";
  if (err == ENOSYS)
    return "this kernel has no Landlock (landlock_create_ruleset: ENOSYS; Linux 5.13 or "
           "later with CONFIG_SECURITY_LANDLOCK)";
  return "Landlock is not available (landlock_create_ruleset: " + errno_name(err) + ")";
}

}  // namespace

namespace {

// An executable regular file at `path` inside the rootfs (symlinks
// resolved inside it), as execve's PATH search would take it.
bool executable_in_root(int rootfd, const std::string& path) {
  struct open_how how = {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  UniqueFd fd(openat2_retry(rootfd, path.c_str(), how));
  struct stat st;
  return fd && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
}

}  // namespace

Result<std::string> command_in_rootfs(const oci::Process& proc, const std::string& rootfs) {
  if (proc.args.empty() || proc.args[0].empty()) return Error::msg("process.args: empty");
  const std::string& cmd = proc.args[0];
  if (cmd.find('/') != std::string::npos) {
    if (cmd[0] == '/') return cmd;
    std::string cwd = proc.cwd.empty() ? "/" : proc.cwd;
    return (std::filesystem::path(cwd) / cmd).lexically_normal().string();
  }
  // execvp's search, with the process's own PATH (runc's default without one).
  std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (const std::string& e : proc.env)
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  UniqueFd root(::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return Error::sys(errno, "open rootfs " + rootfs);
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t e = path.find(':', pos);
    std::string dir = path.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
    pos = e == std::string::npos ? path.size() + 1 : e + 1;
    if (dir.empty() || dir[0] != '/') continue;  // "" and relative entries: never the cwd
    std::string cand = join_path(dir, cmd);
    if (executable_in_root(root.get(), cand)) return cand;
  }
  return Error(ENOENT, "process.args[0] \"" + cmd + "\": not found in the rootfs on PATH " + path);
}

bool exec_list_names(const std::vector<std::string>& list, const std::string& cmd,
                     const std::string& rootfs) {
  UniqueFd root(::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  auto id = [&](const std::string& p, struct stat& st) {
    struct open_how how = {};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    UniqueFd fd(openat2_retry(root.get(), p.c_str(), how));
    return fd && ::fstat(fd.get(), &st) == 0;
  };
  struct stat want;
  const bool have = root && id(cmd, want);
  for (const std::string& e : list) {
    if (e == cmd) return true;
    struct stat st;
    if (have && id(e, st) && st.st_dev == want.st_dev && st.st_ino == want.st_ino) return true;
  }
  return false;
}

std::string quote_list(const std::vector<std::string>& list) {
  std::string s = "[";
  for (const std::string& e : list) s += (s.size() > 1 ? ", " : "") + e;
  return s + "]";
}

Status lock_exec_to_command(capability::Policy& p, const oci::Spec& spec,
                            const std::string& rootfs) {
  if (!spec.process || !spec.annotations.count(std::string(capability::kAnnotationCapabilities)))
    return {};
  TRY(std::string cmd, command_in_rootfs(*spec.process, rootfs));
  if (p.exec && !exec_list_names(*p.exec, cmd, rootfs))
    return Error::msg("annotation org.soyaos.comet.policy: exec " + quote_list(*p.exec) +
                      " does not name the config's command " + cmd +
                      " (with the capabilities annotation only the command may be executed)");
  p.exec = std::vector<std::string>{cmd};
  return {};
}

Status compile_config_seccomp(const oci::Linux& lx, ChildContext& ctx,
                              const char* listener_refusal) {
  if (!lx.seccomp) return {};
  TRY(ctx.confine.seccomp, seccomp::compile(*lx.seccomp));
  ctx.confine.has_seccomp = true;
  if (listener_refusal && ctx.confine.seccomp.needs_listener) return Error::msg(listener_refusal);
  return {};
}

Status plan_confinement(const capability::Policy& p, const std::string& rootfs,
                        const oci::Linux& lx, ChildContext& ctx) {
  // Violation reporting (reporter.hpp): the lock-down notifies instead of
  // failing, and the reporter answers with the same errno.
  seccomp::LockdownOptions lo =
      lockdown_options(p, ctx.confine.has_seccomp && ctx.confine.seccomp.needs_listener);
  if (lo.unix_rule && !lo.notify)
    return Error::msg(
        "the unix-socket rule (policy \"unix\") needs the violation reporter, and the config's "
        "own seccomp filter already has a listener (the kernel allows one)");
  if (lo.create_rule && !lo.notify)
    return Error::msg(
        "the git rule (policy \"git\") needs the violation reporter, and the config's own "
        "seccomp filter already has a listener (the kernel allows one)");
  if (lo.notify) {
    if (int err = seccomp_listener_missing()) {
      const std::string why =
          "this kernel cannot make a seccomp user-notification listener "
          "(seccomp SECCOMP_FILTER_FLAG_NEW_LISTENER: " +
          errno_name(err) + "; Linux 5.0 or later has it)";
      if (lo.unix_rule || lo.create_rule)
        return layer_refusal(std::string("seccomp-listener: ") + why + "; the policy's " +
                             (lo.unix_rule ? "unix-socket" : "git") +
                             " rule is enforced through it: cannot run without it");
      if (!switches::allow_missing("seccomp-listener"))
        return missing_layer("seccomp-listener", why,
                             "violations are refused but never reported (no events, no exit 3)");
      log::warn("seccomp-listener: " + why +
                "; running without it (COMET_ALLOW_MISSING): "
                "violations are refused but not reported");
      lo.notify = false;
      ctx.confine.layers.push_back("missing:seccomp-listener");
    }
  }
  if (!ctx.confine.has_seccomp) {
    // No filter of the engine's or the config's: the Docker-like one. When
    // reporting, it lets the lock-down's syscalls through to the lock-down
    // (ERRNO beats USER_NOTIF, so a base refusal would never be reported);
    // the lock-down still refuses every one of them. An engine's or the
    // config's base filter is left alone: what it refuses is not reported.
    oci::Seccomp base = seccomp::docker_default_profile();
    // Native architecture only, like the lock-down stacked on it: Docker's
    // i386 and x32 rules could never allow anything here (the lock-down
    // kills any other ABI, and KILL outranks every other action), and they
    // are two thirds of the program: 1267 instructions against 422, about
    // 0.3 ms less for the kernel to check and JIT at every start.
    base.architectures.clear();
    if (lo.notify) {
      oci::SeccompSyscall pass;
      pass.names = seccomp::lockdown_reportable(lo);
      pass.action = "SCMP_ACT_ALLOW";
      base.syscalls.push_back(std::move(pass));
    }
    TRY(ctx.confine.seccomp, compile_cached(base, seccomp::CompileOptions{}));
    ctx.confine.has_seccomp = true;
    ctx.confine.layers.push_back("seccomp:docker-default");
  } else {
    ctx.confine.layers.push_back("seccomp:config");
  }
  (void)lx;
  seccomp::CompileOptions co;
  co.enosys_stub = false;
  TRY(ctx.confine.lockdown, compile_cached(seccomp::lockdown_profile(lo), co));
  ctx.confine.has_lockdown = true;
  if (p.lockdown) ctx.confine.layers.push_back("seccomp:lockdown");
  if (lo.exec_lock) ctx.confine.layers.push_back("seccomp:exec-lock");
  if (lo.network_none) ctx.confine.layers.push_back("seccomp:network-none");
  if (lo.socket_families) ctx.confine.layers.push_back("seccomp:socket-families");
  if (lo.notify) ctx.confine.layers.push_back("seccomp:report");
  if (lo.unix_rule) ctx.confine.layers.push_back("seccomp:unix-sockets");
  if (lo.create_rule) ctx.confine.layers.push_back("seccomp:git-rule");

  // Read-deny verification lists (child.cpp verify_confinement()).
  if (ctx.fs.rootfs_readonly) ctx.confine.verify_readonly.push_back("/");
  for (const MountOp& m : ctx.fs.mounts) {
    if (m.opt.flags & MS_RDONLY) ctx.confine.verify_readonly.push_back(m.dest);
  }
  for (const auto& r : ctx.fs.readonly_paths) ctx.confine.verify_readonly.push_back(r);
  ctx.confine.verify_unreadable = ctx.fs.masked_paths;
  for (const auto& d : p.deny) ctx.confine.verify_unreadable.push_back(d);
  ctx.confine.layers.push_back("verify:read-deny");

  int ll_err = 0;
  int abi = landlock_abi(&ll_err);
  if (abi < 1) {
    if (!switches::allow_missing("landlock"))
      return missing_layer("landlock", landlock_why(ll_err),
                           std::string("writes are held by the mounts alone") +
                               (p.exec ? " and the exec lock cannot hold" : ""));
    log::warn("landlock: " + landlock_why(ll_err) + "; running without it (COMET_ALLOW_MISSING)" +
              (p.exec ? ": the exec lock holds no files, fork is still refused" : ""));
    ctx.confine.layers.push_back("missing:landlock");
  }
  ctx.confine.landlock_abi = abi;
  if (abi >= 1) {
    // Writes only beneath the mounts the plan makes writable (defence in
    // depth under the read-only mounts; the mount plan stays what decides).
    ctx.confine.landlock_fs |=
        kAccessFsWriteV1 | (abi >= 2 ? kAccessFsRefer : 0) | (abi >= 3 ? kAccessFsTruncate : 0);
    for (const MountOp& m : ctx.fs.mounts) {
      bool writable_type =
          m.type == "bind" || m.type == "tmpfs" || m.type == "devpts" || m.type == "mqueue";
      // Read-only also when recursively so ("rro": a sandbox profile's
      // readable trees): there a FIFO or a device node, which a read-only
      // mount does not stop from being opened for writing, stays closed.
      const bool ro = (m.opt.flags & MS_RDONLY) || (m.opt.rec_attr_set & MOUNT_ATTR_RDONLY);
      if (writable_type && !ro) ctx.confine.landlock_write.push_back(m.dest);
    }
    if (!ctx.fs.rootfs_readonly) ctx.confine.landlock_write.push_back("/");
    ctx.confine.layers.push_back("landlock:write");
  }
  // No TCP at all under network none. Under egress Landlock stays out of
  // connect(): it would answer EACCES where the nft rules answer
  // ECONNREFUSED, the errno the agent must see (docs/egress.md).
  if (abi >= 4 && p.network == capability::NetworkPolicy::none) {
    ctx.confine.landlock_net = kAccessNetBindTcp | kAccessNetConnectTcp;
    ctx.confine.layers.push_back("landlock:tcp");
  }
  if (abi >= 6) ctx.confine.layers.push_back("landlock:scope");
  if (p.exec) {
    // The list is also the reporter's: what it does not report. Without
    // Landlock (allowed missing) nothing else holds the files.
    if (abi >= 1) ctx.confine.landlock_fs |= kAccessFsExecute;
    UniqueFd root(::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root) return Error::sys(errno, "open rootfs " + rootfs);
    std::vector<std::string> allow;
    for (const std::string& exe : *p.exec) {
      std::string cur = exe;
      // The file and the loader the kernel opens for it (PT_INTERP), or a
      // script's #! interpreter; a few levels at most.
      for (int depth = 0; depth < 4 && !cur.empty(); depth++) {
        if (std::find(allow.begin(), allow.end(), cur) != allow.end()) break;
        TRY(std::string head, read_in_root(root.get(), cur, 1 << 16));
        allow.push_back(cur);
        if (head.rfind("#!", 0) == 0) {
          size_t end = head.find('\n');
          std::string line = head.substr(2, end == std::string::npos ? head.npos : end - 2);
          size_t b = line.find_first_not_of(" \t");
          if (b == std::string::npos) return Error::msg("policy: exec " + cur + ": empty #! line");
          size_t e = line.find_first_of(" \t", b);
          cur = line.substr(b, e == std::string::npos ? e : e - b);
          continue;
        }
        auto interp =
            elf_interpreter({reinterpret_cast<const unsigned char*>(head.data()), head.size()},
                            cur + " (in the rootfs)");
        if (!interp.ok()) return Error::msg("policy: exec " + interp.error().what());
        // The kernel resolves a relative PT_INTERP against the caller's cwd.
        if (!interp->empty() && (*interp)[0] != '/')
          return Error::msg("policy: exec " + cur + " (in the rootfs): bad ELF interpreter path");
        cur = *interp;
      }
    }
    ctx.confine.exec_allow = std::move(allow);
    if (abi >= 1) ctx.confine.layers.push_back("landlock:exec");
  }
  return {};
}

namespace {

// With `nofollow`, a symlink at PATH gets no rule: a writable mount's
// destination can be a pinned symlink (a link on the way to a protected
// path, profile_compile.cpp pin_link), and following it granted writes
// beneath whatever it names, or failed where that is missing inside
// (red team round 11: a workspace link to a host /tmp directory, which the
// private /tmp does not hold, made every run exit 125 with ENOENT while
// --can-auto-allow said true). Landlock judges the file a path resolves
// to, never the link, so the rule is not needed.
int add_path_rule(int rs, const char* path, uint64_t access, const char** failed,
                  bool nofollow = false) noexcept {
  int fd = ::open(path, O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
  if (fd < 0) {
    *failed = path;
    return errno;
  }
  struct stat st;
  if (nofollow && ::fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
    ::close(fd);
    return 0;
  }
  if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) access &= kFileRights;
  PathBeneathAttr pb = {access, fd};
  long r = ::syscall(SYS_landlock_add_rule, rs, kRulePathBeneath, &pb, 0);
  int e = errno;
  ::close(fd);
  if (r < 0) {
    *failed = path;
    return e;
  }
  return 0;
}

}  // namespace

int apply_landlock(const ChildContext& ctx, const char** failed) noexcept {
  *failed = nullptr;
  if (ctx.confine.landlock_fs == 0 && ctx.confine.landlock_net == 0) return 0;
  RulesetAttr attr = {};
  attr.handled_access_fs = ctx.confine.landlock_fs;
  size_t size = sizeof(uint64_t);
  if (ctx.confine.landlock_abi >= 4) {
    attr.handled_access_net = ctx.confine.landlock_net;
    size = 2 * sizeof(uint64_t);
  }
  if (ctx.confine.landlock_abi >= 6) {
    attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
    size = sizeof attr;
  }
  int rs = static_cast<int>(ll_create(&attr, size, 0));
  if (rs < 0) return errno;
  int err = 0;
  for (const std::string& path : ctx.confine.exec_allow) {
    if ((err = add_path_rule(rs, path.c_str(), kAccessFsExecute, failed))) break;
  }
  uint64_t write = ctx.confine.landlock_fs & ~kAccessFsExecute;
  if (ctx.confine.landlock_no_symlinks) write &= ~kAccessFsMakeSym;
  for (size_t i = 0; !err && i < ctx.confine.landlock_write.size(); i++) {
    // a writable mount under the exec lock: still no execute right there
    err = add_path_rule(rs, ctx.confine.landlock_write[i].c_str(), write, failed, true);
  }
  // The caller's stdio (sandbox): `> /dev/stdout` reopens fd 1's file
  // through /proc/self/fd/1, which Landlock judges by its path, outside
  // every writable tree when it is the caller's terminal or a file of the
  // caller's. That file only, and only as its fd was opened: what the
  // command could already do through it. A file given as stdin (`< FILE`,
  // read-only) is not made writable (red team round 14: `< .git/config`
  // reopened through /proc/self/fd/0 for writing, past the read-only bind,
  // on the caller's mount); an appending fd gives no truncation.
  for (int fd = 0; !err && ctx.confine.landlock_stdio && fd <= 2; fd++) {
    struct stat st;
    const int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || ::fstat(fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode))) continue;
    const int mode = fl & O_ACCMODE;
    uint64_t rights = 0;
    if (mode == O_RDONLY || mode == O_RDWR) rights |= kAccessFsReadFile;
    if (mode == O_WRONLY || mode == O_RDWR)
      rights |= kAccessFsWriteFile | ((fl & O_APPEND) ? 0 : kAccessFsTruncate);
    rights &= write & kFileRights;
    if (!rights) continue;
    char self[32];
    std::snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    const char* ignored = nullptr;
    (void)add_path_rule(rs, self, rights, &ignored);  // best effort
  }
  for (size_t i = 0; !err && i < ctx.confine.landlock_tcp_connect.size(); i++) {
    NetPortAttr np = {kAccessNetConnectTcp, ctx.confine.landlock_tcp_connect[i]};
    if (::syscall(SYS_landlock_add_rule, rs, kRuleNetPort, &np, 0) < 0) err = errno;
  }
  if (err) {
    ::close(rs);
    return err;
  }
  long r = ::syscall(SYS_landlock_restrict_self, rs, 0);
  int e = errno;
  ::close(rs);
  return r < 0 ? e : 0;
}

}  // namespace comet::runtime
