// Confinement of the resolver (helper_confine.hpp).
#include "comet/lifecycle/helper_confine.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "comet/oci/spec.hpp"
#include "comet/seccomp/seccomp.hpp"

namespace comet::runtime {
namespace {

Status private_readonly_tree(const std::vector<std::string>& writable) {
  if (::unshare(CLONE_NEWNS) < 0) return Error::sys(errno, "unshare(CLONE_NEWNS)");
  // A slave: the host's unmounts still reach this copy, so it pins nothing.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) < 0)
    return Error::sys(errno, "make / a recursive slave");
  for (const std::string& d : writable)
    if (::mount(d.c_str(), d.c_str(), nullptr, MS_BIND, nullptr) < 0)
      return Error::sys(errno, "bind " + d + " on itself");
  struct mount_attr ro = {};
  ro.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
  if (::syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof ro) < 0)
    return Error::sys(errno, "mount_setattr(/, read-only, recursive)");
  for (const std::string& d : writable) {
    struct mount_attr rw = {};
    rw.attr_clr = MOUNT_ATTR_RDONLY;
    if (::syscall(SYS_mount_setattr, AT_FDCWD, d.c_str(), 0, &rw, sizeof rw) < 0)
      return Error::sys(errno, "mount_setattr(" + d + ", writable)");
  }
  return ok();
}

int last_cap() {
  int fd = ::open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
  char buf[16] = {};
  int v = 0;
  if (fd >= 0 && ::read(fd, buf, sizeof buf - 1) > 0) v = std::atoi(buf);
  if (fd >= 0) ::close(fd);
  return v > 0 ? v : 40;
}

Status drop_caps(uint64_t keep) {
  const int lc = last_cap();
  for (int cap = 0; cap <= lc; cap++)
    if (!(keep & (1ULL << cap)) && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
      return Error::sys(errno, "drop capability " + std::to_string(cap) + " from the bounding set");
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    return Error::sys(errno, "clear the ambient capabilities");
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2] = {};
  d[0].effective = d[0].permitted = static_cast<uint32_t>(keep);
  d[1].effective = d[1].permitted = static_cast<uint32_t>(keep >> 32);
  if (::syscall(SYS_capset, &hdr, d) < 0) return Error::sys(errno, "capset");
  return ok();
}

oci::SeccompSyscall deny(std::vector<std::string> names) {
  oci::SeccompSyscall s;
  s.names = std::move(names);
  s.action = "SCMP_ACT_ERRNO";
  s.errno_ret = EPERM;
  return s;
}

oci::SeccompSyscall deny_if(std::string name, uint32_t index, std::string op, uint64_t value,
                            uint64_t value_two = 0) {
  oci::SeccompSyscall s = deny({std::move(name)});
  oci::SeccompArg a;
  a.index = index;
  a.op = std::move(op);
  a.value = value;
  a.value_two = value_two;
  s.args.push_back(a);
  return s;
}

// A deny list on an ALLOW default: what the resolver never needs, and what
// a uid-0 process without capabilities could still do to the host.
oci::Seccomp helper_profile(const HelperConfinement& c, int self) {
  oci::Seccomp p;
  p.default_action = "SCMP_ACT_ALLOW";
  // The lock-down's floor (mounts, namespaces, ptrace, bpf, keys, modules,
  // io_uring, ...), and what a helper never needs on top: exec, signals by
  // pidfd or to a thread, and the remaining ways into other processes.
  std::vector<std::string> names = seccomp::lockdown_denied_syscalls();
  for (const char* n : {"execve", "execveat", "pidfd_send_signal", "tkill", "name_to_handle_at",
                        "process_madvise", "kcmp"})
    names.emplace_back(n);
  p.syscalls.push_back(deny(std::move(names)));
  // Signals: only its companion, and itself (abort()).
  if (c.signal_pid > 0) {
    p.syscalls.push_back(deny_if("kill", 0, "SCMP_CMP_NE", static_cast<uint64_t>(c.signal_pid)));
    p.syscalls.push_back(
        deny_if("pidfd_open", 0, "SCMP_CMP_NE", static_cast<uint64_t>(c.signal_pid)));
  } else {
    p.syscalls.push_back(deny({"kill", "pidfd_open"}));
  }
  p.syscalls.push_back(deny_if("tgkill", 0, "SCMP_CMP_NE", static_cast<uint64_t>(self)));
  // Sockets: UDP and TCP to the upstreams; nothing that reaches netlink
  // (CAP_NET_ADMIN in the host's namespace), raw or packet I/O, or, as
  // uid 0, a container-runtime's unix socket.
  p.syscalls.push_back(deny_if("socket", 0, "SCMP_CMP_EQ", AF_NETLINK));
  p.syscalls.push_back(deny_if("socket", 0, "SCMP_CMP_EQ", AF_PACKET));
  p.syscalls.push_back(deny_if("socket", 1, "SCMP_CMP_MASKED_EQ", 0xf, SOCK_RAW));
  p.syscalls.push_back(deny_if("socket", 1, "SCMP_CMP_MASKED_EQ", 0xf, SOCK_PACKET));
  if (!c.allow_unix) {
    p.syscalls.push_back(deny_if("socket", 0, "SCMP_CMP_EQ", AF_UNIX));
    p.syscalls.push_back(deny({"socketpair"}));
  }
  return p;
}

}  // namespace

Status confine_helper(const HelperConfinement& c) {
  const int self = static_cast<int>(::getpid());
  // Compiled while the mounts are still what libseccomp expects.
  seccomp::CompileOptions co;
  co.enosys_stub = false;
  auto prog = seccomp::compile(helper_profile(c, self), co);
  if (!prog.ok()) return std::move(prog).error().wrap("helper seccomp filter");
  TRYV(private_readonly_tree(c.writable));
  TRYV(drop_caps(c.keep_caps));
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return Error::sys(errno, "no_new_privs");
  if (int e = seccomp::load(*prog, nullptr); e != 0)
    return Error::sys(e, "load the helper seccomp filter");
  return ok();
}

}  // namespace comet::runtime
