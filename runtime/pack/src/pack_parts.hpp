// What the files of the `pack` verbs share (private to comet_pack):
//   pack_cli.cpp        the manifest loader and validate, lint, bundle, explain
//   pack_files.cpp      the staged /workdir, output collection, the run
//                       directory and its mounts
//   pack_stdio.cpp      the agent's stdio: the tee and the terminal guard
//   pack_run.cpp        `pack run`, phase by phase, and its cache lookups
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "comet/base/fd.hpp"
#include "comet/base/result.hpp"
#include "comet/capability/manifest.hpp"
#include "comet/lifecycle/container.hpp"

namespace comet::runtime::pack_detail {

// ---- the manifest (pack_cli.cpp) ---------------------------------------------

struct Loaded {
  std::string file;  // soyapack.yaml
  std::string dir;   // the pack directory, absolute
  capability::Manifest man;
  std::string text;  // the manifest's bytes (the cache key)
};

// A value, or the exit code a verb returns (its error already logged).
template <typename T>
using OrExit = std::variant<T, int>;

// Reads and parses (and with `validate`, validates) the manifest at PATH.
// An error is logged and comes back as the exit code the verb uses for it:
// `unreadable` when the file cannot be read, `invalid` when it is refused.
OrExit<Loaded> load(const std::string& path, bool validate, int unreadable, int invalid);

// P made absolute and normal (as given when that fails).
std::string abs_path(const std::string& p);

// ROOTFS when given, else the default rootfs of `pack run` for the pack's
// interpreter (default_rootfs(): built once, cached). VERB names the
// command in the error.
OrExit<std::string> pack_rootfs(const Loaded& l, const std::string& rootfs,
                                const std::string& verb);
// A directory flag's value ("" passes): "VERB FLAG PATH: <errno>" when it is
// not an existing directory.
Status check_dir_flag(const std::string& verb, const std::string& flag, const std::string& path);

// TRY_EXIT(decl, expr): EXPR is an OrExit<T>; an exit code is returned, a
// value bound to DECL.
#define TRY_EXIT(decl, expr) TRY_EXIT_IMPL_(COMET_CONCAT(try_exit_, __LINE__), decl, expr)
#define TRY_EXIT_IMPL_(tmp, decl, expr)                            \
  auto tmp = (expr);                                               \
  if (std::holds_alternative<int>(tmp)) return std::get<int>(tmp); \
  decl = std::move(std::get<0>(tmp))

// ---- files (pack_files.cpp) --------------------------------------------------------

// The pack as the sandbox sees it at /workdir: a copy of the pack directory
// (regular files, directories and symlinks; nothing else), with a mount
// point for every per-run host directory under /workdir, since /workdir is
// read-only inside and the pack directory itself is never written.
Status stage_workdir(const std::string& pack_dir, const std::string& dst,
                     const std::map<std::string, std::string>& host_dirs);

// Copies the agent's output tree into DST: directories and regular files
// only (a symlink or device the agent made is skipped and named; names are
// shown escaped by the logger), never following anything. DST is created if
// needed. limit: resources.output (data bytes plus a block per entry); over
// it, an error with errno EFBIG.
Status collect_output(const std::string& src, const std::string& dst,
                      std::uint64_t limit = UINT64_MAX);

// Whether the /workdir/out tree can be replayed exactly: only directories
// and regular files (collect_output() skips anything else, with a warning
// that a hit would not repeat).
bool plain_tree(const std::string& dir);

// The per-run directory and everything under it, removed on every path out
// (the mounts made under it first: RunMounts).
struct RunDir {
  std::string path;
  bool keep = false;
  ~RunDir();
};

// What the agent must not learn (issue 21, item 12): /proc/self/mountinfo
// shows, for every bind mount, the source's path inside its file system
// (the run directory under the state root, --input, --rootfs). So nothing a
// pack sees is a bind of a host directory: what it reads is an overlay
// whose layers are named "/proc/self/fd/N" (an fd of this process at mount
// time: the string is all mountinfo keeps), and what it writes is a tmpfs
// of its own, sized by the pack's limits. All of it under the run
// directory, unmounted (MNT_DETACH) when the run ends; `delete --force ID`
// does the same for a run that was killed.
class RunMounts {
 public:
  RunMounts() = default;
  RunMounts(const RunMounts&) = delete;
  RunMounts& operator=(const RunMounts&) = delete;
  ~RunMounts();
  // A tmpfs at DIR (made if missing): size bytes, owned by uid:gid.
  Status tmpfs(const std::string& dir, std::uint64_t size, uint32_t uid, uint32_t gid);
  // A read-only view of LOWER at DIR: an overlay of LOWER and an empty
  // directory (overlayfs wants two lower layers without an upper one).
  // upper: a writable view instead (a tmpfs holds the upper layer: the
  // runtime makes its mount points there, LOWER is never written).
  Status view(const std::string& dir, const std::string& lower, const std::string& scratch,
              bool upper);

 private:
  static std::string fd_name(int fd) { return "/proc/self/fd/" + std::to_string(fd); }
  std::vector<std::string> points_;
};

// ---- stdio (pack_stdio.cpp) ---------------------------------------------------------

// A plain line on this process's stderr, outside the log's framing: the
// `cache hit|miss|stored <key>` lines a user (and a test) reads.
void say(const std::string& line);

// What an agent writes to the caller's terminal is shown, never obeyed
// (issue 21, red team): C0 controls but tab, newline and carriage return,
// DEL, and C1 controls (UTF-8 C2 80..9F) become caret notation (^[ for
// ESC), so no escape sequence reaches the terminal (no OSC 52 clipboard
// write, no title, no cleared screen with a fake prompt).
std::string shown(const char* buf, size_t n, std::string* carry = nullptr);

// Points this process's stdin at /dev/null and stdout/stderr at pipes read
// by the tee (a child forked before run_container: the runtime process
// itself stays single-threaded) for the length of the run; the container
// inherits them.
//
// The runtime's own log lines would land in the capture too (the logger
// writes to fd 2), so while the capture runs, a logger on stderr writes to
// a copy of the original stderr (log::set_fd).
class StdioCapture {
 public:
  StdioCapture() = default;
  StdioCapture(const StdioCapture&) = delete;
  StdioCapture& operator=(const StdioCapture&) = delete;
  ~StdioCapture() { (void)finish(); }

  // dir "": no capture, only the terminal guard (the agent's stdin is
  // /dev/null, its output shown through the tee, never the caller's tty).
  Status start(const std::string& dir, const Globals& g);

  // Restores stdio and waits for the tee. True when both streams were
  // captured whole.
  bool finish();

  bool active() const { return active_; }

 private:
  void move_log();

  UniqueFd saved_[3];
  UniqueFd ctl_;
  ChildGuard tee_;
  bool active_ = false;
  bool log_moved_ = false;
};

}  // namespace comet::runtime::pack_detail
