// What the agent of a pack sees at one path (`pack explain --path`, issue 26
// trap 3): which layer of its view serves the path (the image, the pack's
// files, --input, a writable place, the runtime's /dev, procfs, a masked
// path) and what open(2) would answer the agent for a read and for a write.
//
// Two steps, as everywhere in the runtime: plan_view() is pure (the mounts
// the compiler and `pack run` make, as data, from the manifest); see_path()
// then walks the path through that plan the way the kernel does (symlinks
// of the image followed inside it, search permission on every directory,
// the mount's read-only flag before the mode bits, Landlock's write rule
// after them), reading the host dirs behind each layer with lstat(2).
//
// "write" is open(O_WRONLY|O_CREAT|O_TRUNC) of the path: create or replace
// the file (packprobe's `write=`); for a directory it is the creation of a
// new file in it. Both are answered as the errno the agent gets, 0 for
// success. integration/pack/test_pack_explain.py checks every answer against
// what a probe agent observes in a real `pack run`.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "comet/capability/manifest.hpp"

namespace comet::runtime::pack_detail {

enum class Layer {
  image,          // the rootfs, read-only
  pack,           // /workdir: a read-only copy of the pack directory
  input,          // /workdir/inputs from --input, read-only
  writable,       // an fs.write place (but /tmp): a fresh tmpfs the agent owns
  tmp,            // /tmp when fs.write lists it: a fresh tmpfs, mode 1777
  dev,            // the runtime's /dev tmpfs: null zero full random urandom tty
  devpts,         // /dev/pts
  shm,            // /dev/shm: an empty read-only tmpfs
  proc,           // the container's own procfs
  proc_readonly,  // a read-only part of it (/proc/sys, /proc/bus, ...)
  masked,         // a masked path: the host's /dev/null, or an empty read-only tmpfs
};
const char* to_string(Layer l);

struct ViewMount {
  std::string dest;  // sandbox path
  Layer layer = Layer::image;
  std::string host;  // the host directory behind it ("" for the runtime's own)
  bool read_only = true;
  bool landlock_write = false;  // Landlock grants writes beneath it
};

struct ViewInputs {
  const capability::Manifest* man = nullptr;
  std::string rootfs;    // host path of the image
  std::string pack_dir;  // host path of the pack
  std::string input;     // --input, "" when not given
  uint32_t uid = 65534;  // the agent's identity
  uint32_t gid = 65534;
  uint32_t owner = 0;  // who owns the staged copy of the pack (the caller)
};

// The mounts of a `pack run` of MAN, parents before children (the deepest
// mount covering a path serves it). Masked and read-only /proc paths are
// listed too. Pure.
std::vector<ViewMount> plan_view(const ViewInputs& in);

struct PathView {
  std::string path;      // as asked, made absolute (relative to /workdir)
  std::string resolved;  // where it led (symlinks followed, `..` taken)
  Layer layer = Layer::image;
  std::string host;  // the host path behind it, "" when none
  bool exists = false;
  std::string kind;        // "file", "directory", "character device", "symlink", "missing", ...
  bool dir_write = false;  // write = a new file in the directory
  int read_err = 0;        // 0: the read works; -1: it depends (a magic link); else the errno
  int write_err = 0;
  std::string read_why, write_why;  // why not ("" when it works)
};

// Where PATH leads in the view and what the agent gets. Reads the host dirs
// behind the layers (lstat), and /proc for procfs paths.
PathView see_path(const ViewInputs& in, const std::vector<ViewMount>& mounts,
                  const std::string& path);

// "ok", "depends" or the errno's name ("EROFS").
std::string outcome(int err);

// One sentence on the layer: what it is and where it comes from.
std::string describe(const PathView& v, const ViewInputs& in);

}  // namespace comet::runtime::pack_detail
