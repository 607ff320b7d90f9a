// Idmapped bind mounts (runtime-spec 1.2 uidMappings/gidMappings on a
// mount, the idmap/ridmap options), made in the parent: see mounts.hpp.
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "comet/base/sys.hpp"
#include "comet/lifecycle/mounts.hpp"

namespace comet::runtime {
namespace {

std::string map_text(const std::vector<oci::IdMapping>& v) {
  std::string t;
  for (const auto& m : v)
    t += std::to_string(m.container_id) + " " + std::to_string(m.host_id) + " " +
         std::to_string(m.size) + "\n";
  return t;
}

// A user namespace holding the mappings, as an fd: a child unshares one
// and waits; we write its maps, open its ns/user, and let it go. The child
// only calls async-signal-safe functions (the caller may have threads).
Result<UniqueFd> userns_with(const std::vector<oci::IdMapping>& uids,
                             const std::vector<oci::IdMapping>& gids) {
  int ready[2], go[2];
  if (::pipe2(ready, O_CLOEXEC) < 0) return Error::sys(errno, "pipe2");
  UniqueFd ready_r(ready[0]), ready_w(ready[1]);
  if (::pipe2(go, O_CLOEXEC) < 0) return Error::sys(errno, "pipe2");
  UniqueFd go_r(go[0]), go_w(go[1]);
  const pid_t pid = ::fork();
  if (pid < 0) return Error::sys(errno, "fork");
  if (pid == 0) {
    ::close(go[1]);
    ::close(ready[0]);
    char c = ::unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
    if (::write(ready[1], &c, 1) != 1) ::_exit(1);
    (void)::read(go[0], &c, 1);  // EOF when the parent is done
    ::_exit(0);
  }
  ready_w.reset();
  go_r.reset();
  auto reap = [&] {
    go_w.reset();
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  };
  char c = 0;
  if (::read(ready_r.get(), &c, 1) != 1 || c != 'y') {
    reap();
    return Error::msg("unshare(CLONE_NEWUSER) for an idmapped mount failed");
  }
  const std::string proc = "/proc/" + std::to_string(pid) + "/";
  Status st = write_file(proc + "uid_map", map_text(uids));
  if (st.ok()) st = write_file(proc + "gid_map", map_text(gids));
  UniqueFd ns(::open((proc + "ns/user").c_str(), O_RDONLY | O_CLOEXEC));
  const int ns_err = errno;
  reap();
  if (!st.ok()) return Error::sys(st.error().err(), "write the idmapped mount's id maps");
  if (!ns) return Error::sys(ns_err, "open " + proc + "ns/user");
  return ns;
}

}  // namespace

Result<UniqueFd> open_idmapped_tree(const MountOp& op) {
  TRY(UniqueFd userns, userns_with(op.uid_map, op.gid_map));
  const unsigned rec = op.opt.recursive_bind ? AT_RECURSIVE : 0;
  UniqueFd tree(static_cast<int>(::syscall(SYS_open_tree, AT_FDCWD, op.source.c_str(),
                                           OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | rec)));
  if (!tree) return Error::sys(errno, "idmapped mount " + op.dest + ": open_tree " + op.source);
  struct mount_attr attr = {};
  attr.attr_set = MOUNT_ATTR_IDMAP;
  attr.userns_fd = static_cast<unsigned>(userns.get());
  const unsigned flags = AT_EMPTY_PATH | (op.opt.ridmap ? AT_RECURSIVE : 0);
  if (::syscall(SYS_mount_setattr, tree.get(), "", flags, &attr, sizeof attr) < 0) {
    const int e = errno;
    std::string why;
    if (e == EINVAL) {
      struct statfs s;
      char magic[32] = "?";
      if (::fstatfs(tree.get(), &s) == 0)
        std::snprintf(magic, sizeof magic, "0x%lx", static_cast<unsigned long>(s.f_type));
      why = ": the filesystem of " + op.source + " (magic " + magic +
            ") cannot be idmapped, or a submount of it cannot (ridmap)";
    } else if (e == EPERM) {
      why = ": idmapped mounts need CAP_SYS_ADMIN over the filesystem (root)";
    }
    return Error::sys(
        e, "idmapped mount " + op.dest + ": mount_setattr(MOUNT_ATTR_IDMAP) on " + op.source + why);
  }
  return tree;
}

}  // namespace comet::runtime
