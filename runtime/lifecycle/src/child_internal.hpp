// Private to comet_lifecycle: the pieces of the container child (child.hpp),
// one concern per file, all run after clone(2), single-threaded and
// noexcept, reporting every failure to the parent through die().
//
//   child.cpp          the three entry points (child_main, sandbox_child_main,
//                      exec_child_main), the sync protocol's child side and
//                      the namespaces
//   child_mounts.cpp   the file system: mounts resolved inside the rootfs,
//                      devices, console, masks, the move into the root
//   child_process.cpp  the process: identity, confinement, seccomp, a pack's
//                      own init, the exec through the trampoline
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "comet/lifecycle/child.hpp"
#include "comet/lifecycle/mounts.hpp"
#include "comet/lifecycle/sync.hpp"

namespace comet::runtime::child {

// The context of this child (set first thing by each entry point).
extern const ChildContext* g_ctx;
extern std::string g_state;  // hookstate.json, read after kHooksDone
extern int g_dev_null;       // /dev/null of our (new) mount namespace, verified

// child.cpp: report ERR and the formatted text to the parent (or, with no
// parent left, to stderr) and _exit(1).
[[noreturn]] void die(int err, const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));
// One fd (and fd2 unless -1) over a unix socket (SCM_RIGHTS) with PAYLOAD
// as the data; dies on error. Closes the fds and the socket.
void send_fd(int sock, int fd, std::string_view payload, const char* what, int fd2 = -1);

// child_mounts.cpp
std::string fdpath(int fd);
int openat2_in_root(int rootfd, const std::string& path, int flags, unsigned long long resolve);
int ensure_target(int rootfd, const std::string& dest, bool dir, int depth = 0);
int remount_bind(const std::string& path, unsigned long flags);
void prepare_rootfs_mount();                 // propagation of /, the rootfs bound on itself
void prepare_host_root();                    // no mount ns: the rootfs bound on host_root, private
void open_dev_null(const char* fstat_what);  // g_dev_null
void do_mount(int rootfd, const MountOp& op);
void setup_dev(int rootfd);
int setup_console(int rootfd);  // returns the pty's peer
int exec_console();             // exec: a pty of the container's devpts; the peer
void mask_paths(int rootfd);
void enter_root(int rootfd);
void make_skeleton();

// child_process.cpp
void verify_confinement();
void write_sysctls();
void load_seccomp();
// The process's own set-up, the same in a container's init, a sandbox's
// init and an exec'd process: a session of its own (with the pty SLAVE as
// its controlling terminal unless -1), the cwd, the environment, the
// executable, the umask, the identity and no_new_privs.
struct Prologue {
  std::string exe;
  bool kept_admin;  // CAP_SYS_ADMIN kept only to load the filter
};
Prologue become_process(int slave, const char* cwd_origin);
// The shared tail: confinement, filters (the config's unless EARLY_SECCOMP
// loaded it already) and the exec; or, for a pack's own init, the agent
// started under it and the init's exec.
[[noreturn]] void exec_process(const Prologue& p, bool early_seccomp) noexcept;

}  // namespace comet::runtime::child
