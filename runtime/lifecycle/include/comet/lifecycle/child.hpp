// Everything the container child needs, computed by the parent before
// clone(2). The child reads it (copy-on-write memory), never parses, and
// reports errors over the sync socket.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/host/cgroups.hpp"
#include "comet/lifecycle/mounts.hpp"
#include "comet/lifecycle/process_attrs.hpp"
#include "comet/oci/spec.hpp"
#include "comet/seccomp/seccomp.hpp"

namespace comet::runtime {

struct CapSets {
  uint64_t bounding = 0, effective = 0, permitted = 0, inheritable = 0, ambient = 0;
};

struct ResolvedRlimit {
  int resource;
  struct rlimit value;
};

struct JoinNs {
  int clone_flag;
  std::string path;
  int fd = -1;  // opened by the parent before clone
};

// The context is made of parts, one per phase of the child, each filled by
// the planner that owns it (plan.cpp, confine.cpp, create.cpp / exec.cpp /
// sandbox_launch.cpp for the fds).
struct ChildContext {
  // namespaces: made, joined, or (exec) entered through the init's pidfd
  struct Namespaces {
    int new_ns_flags = 0;       // CLONE_NEW* to create
    std::vector<JoinNs> joins;  // user first
    bool slow_path = false;     // two-stage: joins or a time namespace
    std::map<std::string, oci::TimeOffset> time_offsets;
    bool userns = false;  // the container has its own user ns (new or joined)
    bool cgroupns = false;
    int exec_ns_flags = 0;  // exec: CLONE_NEW* where the init's ns differs from ours
    // A rootless sandbox (sandbox_launch.hpp): the child maps the caller's
    // own uid and gid (host ids, >= 0) onto themselves in the user
    // namespace clone(2) made, setgroups denied (map_own_ids in child.cpp).
    long self_map_uid = -1, self_map_gid = -1;
    // Rootless: the maps are written by this user (or newuidmap), which
    // needs the child's /proc files to be its own: dumpable until sync 2.
    bool maps_need_dumpable = false;
  } ns;

  // files and mounts
  struct Mounts {
    std::string rootfs;  // absolute host path
    bool rootfs_readonly = false;
    unsigned long rootfs_propagation = 0;  // 0 = default (rslave)
    bool no_pivot = false;
    // No mount namespace (runtime-spec: the container inherits the
    // runtime's): the rootfs is bound on host_root, a directory of the
    // container's state dir, and the mounts are made under it in the
    // runtime's mount namespace, private; `delete` detaches them
    // (docs/namespaces.md "Inherited namespaces").
    bool host_mounts = false;
    std::string host_root;
    // exec into a container that shares the runtime's mount namespace: the
    // init's root (/proc/PID/root), entered with chroot.
    std::string exec_root;
    std::vector<MountOp> mounts;
    std::vector<oci::Device> devices;  // config devices
    bool dev_is_tmpfs = false;         // the config mounts a tmpfs on /dev: add default devices
    std::vector<std::string> masked_paths, readonly_paths;
    CgroupPlan cgroups;
    // sandbox (sandbox_launch.hpp): no bundle on disk. The child mounts a
    // tmpfs on skeleton_dir in its own mount namespace and makes there the
    // empty root (rootfs), the files the plan binds (skeleton_files: absolute
    // path, mode) and the host's top-level symlinks (skeleton_links: name in
    // rootfs, target).
    std::string skeleton_dir;
    std::vector<std::pair<std::string, mode_t>> skeleton_files;
    std::vector<std::pair<std::string, std::string>> skeleton_links;
  } fs;

  // identity and process
  struct Process {
    std::string hostname, domainname;
    bool set_hostname = false, set_domainname = false;
    std::vector<std::pair<std::string, std::string>> sysctl;
    std::vector<std::string> args, env;
    std::string cwd;
    uint32_t uid = 0, gid = 0;
    std::vector<gid_t> additional_gids;
    int umask = -1;
    CapSets caps;
    bool has_caps = false;
    bool no_new_privileges = false;
    std::vector<ResolvedRlimit> rlimits;
    unsigned long personality = 0xffffffff;  // unset
    bool new_keyring = true;
    std::string keyring_name;
    bool terminal = false;
    oci::ConsoleSize console_size;
    bool has_console_size = false;
    int preserve_fds = 0;
    std::optional<int> oom_score_adj;  // exec: set by the child (create: by the parent)
    ProcessAttrs attrs;  // scheduler, I/O priority, affinity, memory policy, LSM label
    // hooks that run inside the container
    std::vector<oci::Hook> create_container_hooks, start_container_hooks;
  } proc;

  struct Confinement {
    // seccomp
    bool has_seccomp = false;
    seccomp::Program seccomp;
    // confinement (confine.hpp), applied last: Landlock, then the base
    // filter, then the lock-down filter stacked on it
    bool has_lockdown = false;
    seccomp::Program lockdown;
    std::vector<std::string> exec_allow;         // the only files that may be executed
    std::vector<std::string> landlock_write;     // dirs under which writes are allowed
    uint64_t landlock_fs = 0;                    // handled filesystem rights (0: no ruleset)
    uint64_t landlock_net = 0;                   // handled network rights
    std::vector<uint16_t> landlock_tcp_connect;  // ports TCP connect() may reach
    int landlock_abi = 0;
    // packs: no symlink may be made anywhere (one made and removed between a
    // lookup and the reporter's look at it would hide where it led)
    bool landlock_no_symlinks = false;
    // sandbox: the files of the caller's stdio (a terminal, a file) may be
    // reopened for writing (/dev/stdout): a Landlock rule for each
    bool landlock_stdio = false;
    std::vector<std::string> layers;  // what is active, for state
    // read-deny verification, from inside, after every mount: these must be
    // unreadable (missing, empty, or refusing) and read-only, or create fails
    std::vector<std::string> verify_unreadable, verify_readonly;
    // sandbox: what the lock-down listener is sent with (no state dir)
    std::string state_json;
  } confine;

  // fds opened by the parent, inherited across clone; the sync socket
  struct Fds {
    int sync_fd = -1;
    int state_dir_fd = -1;            // O_PATH: exec.fifo is opened through it after pivot_root
    int proc_fd = -1;                 // the host's /proc, verified procfs
    int trampoline_fd = -1;           // sealed memfd of the exec trampoline (trampoline.hpp)
    int lock_fd = -1;                 // the state lock: closed first, or `start` would wait on us
    int console_sock_fd = -1;         // connected --console-socket
    int seccomp_listener_sock = -1;   // connected listenerPath socket
    int lockdown_listener_sock = -1;  // connected socket of the violation reporter (confine.hpp)
    // The git rule (create_rule.hpp, own_init only): the init makes the
    // agent's naming calls for the reporter over this socket, in a Landlock
    // domain the agent's is nested in.
    int create_sock = -1;
    int events_fd = -1;   // own init: the state dir's events file, read-only
    int exec_pidfd = -1;  // exec: pidfd of the container init
  } fds;

  // A pack's own PID 1 (docs/events.md "Exit code 3 under an engine"): the
  // init forks the agent after the exec fifo and execs the trampoline as
  // "comet-init", which reaps, forwards signals and exits with the agent's
  // status, or 3 when fds.events_fd holds a violation; init_dns_barrier:
  // sync with the resolver first.
  struct OwnInit {
    bool own_init = false;
    bool init_dns_barrier = false;
    // fs events (fswatch.hpp): the init syncs with the reporter over
    // lockdown_listener_sock too; the agent marks the end of the runtime's
    // set-up in the ring (kFsArmMarker) before it sends the listener.
    bool init_reporter_barrier = false;
    bool fs_arm_marker = false;
    std::vector<std::string> git_own;  // the git rule: the workspace's git dirs
    // With the git rule: the protected paths (a `*` globs one component),
    // answered EROFS by the init where their read-only mount came off
    // (trampoline.c PROT: the host renamed a file over one)
    std::vector<std::string> protect;
  } init;
};

// The child's entry point after clone(2). Never returns: it execs the user
// process or _exit()s after reporting an error.
// clone3(2) fork-style (no new stack), optionally straight into a cgroup2
// directory (cgroup_fd >= 0): the child of create, exec and the sandbox.
Result<long> clone_into(int ns_flags, int cgroup_fd);

// clone3(2) of FN(ARG) on STACK (STACK_SIZE bytes), FLAGS plus
// CLONE_INTO_CGROUP when CGROUP_FD >= 0 and CLONE_PARENT_SETTID into
// PARENT_TID when given (written before the child runs). For a
// CLONE_VM | CLONE_VFORK child: returns once it has exec'd or exited.
Result<long> clone_fn_into(std::uint64_t flags, int cgroup_fd, void* stack, size_t stack_size,
                           int (*fn)(void*), void* arg, pid_t* parent_tid);

[[noreturn]] void child_main(const ChildContext& ctx) noexcept;

// The `sandbox` child (sandbox_launch.hpp): the same steps as child_main
// without a state dir, hooks or exec fifo. After kGo it sets up the view,
// then becomes the sandbox's init (own_init) or execs the command. The
// parent sees EOF on the sync socket once everything exec'd (CLOEXEC), or
// a kError. It dies with the parent (PR_SET_PDEATHSIG, kept to the exec).
[[noreturn]] void sandbox_child_main(const ChildContext& ctx) noexcept;

// The `exec` child: setns(pidfd) into the container, fork into its pid
// namespace, set up the process as child_main does, execve. The parent sees
// EOF on the sync socket when execve succeeded (the socket is CLOEXEC), or
// a kError. Stage 1 sends kInitPid with the pid of the exec'd process.
[[noreturn]] void exec_child_main(const ChildContext& ctx) noexcept;

}  // namespace comet::runtime
