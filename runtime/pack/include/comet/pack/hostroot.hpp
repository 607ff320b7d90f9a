// `comet-runtime rootfs --from-host`: a minimal rootfs made of host programs,
// the ELF interpreter and shared libraries they load, and a small skeleton
// (/proc /dev /sys /tmp /workdir, /etc/passwd, group, hosts, resolv.conf,
// ld.so.cache). It is the default rootfs of `pack run`: no image registry.
//
// Three layers, each testable alone, over the runtime's ELF reader
// (parse_elf(), comet/host/elf.hpp: PT_INTERP, DT_NEEDED, DT_RPATH,
// DT_RUNPATH from a byte buffer, bounds-checked):
//   library_search_dirs()   pure: the directories ld.so tries for one
//                           DT_NEEDED name, in ld.so's order
//   plan_host_rootfs()      reads the host (stat, readlink, ELF files) and
//                           returns the rootfs as data: path -> dir | file |
//                           symlink; write_rootfs() makes it on disk, in a
//                           temp dir renamed into place.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/host/elf.hpp"

namespace comet::runtime {

// ---- library search (ld.so's order on Debian) --------------------------------

// The directories glibc's ld.so searches last (without ld.so.cache hits).
const std::vector<std::string>& default_library_dirs();

// One line of an ld.so.conf file: a directory, or an `include` glob pattern.
struct LdConfItem {
  bool include = false;
  std::string value;
};
// Parses ld.so.conf text as ldconfig does: '#' comments, one directory per
// line (trailing '/' removed), `include PATTERN...`, `hwcap` lines ignored.
std::vector<LdConfItem> parse_ld_so_conf(std::string_view text);

// The directories of /etc/ld.so.conf and the files it includes (globbed,
// sorted, relative patterns taken from the including file's directory), in
// order. A missing file gives no directories. CONSULT, when set, is called
// with each file before it is read and each pattern's directory before it is
// globbed.
std::vector<std::string> ld_so_conf_dirs(
    const std::string& path = "/etc/ld.so.conf",
    const std::function<void(const std::string&)>& consult = nullptr);

// $ORIGIN / ${ORIGIN}, $LIB, $PLATFORM in one RPATH/RUNPATH entry.
std::string expand_dst(std::string_view entry, std::string_view origin);

// Where ld.so looks for a DT_NEEDED name (without '/') of object OBJ whose
// directory is ORIGIN: OBJ's DT_RPATH then LOADER_RPATH (the expanded RPATHs
// of the objects that loaded it, up to the executable), both only when OBJ has
// no DT_RUNPATH; then OBJ's DT_RUNPATH; then CONF_DIRS (ld.so.conf, standing
// in for ld.so.cache); then default_library_dirs(). Duplicates removed.
std::vector<std::string> library_search_dirs(const ElfInfo& obj, std::string_view origin,
                                             const std::vector<std::string>& loader_rpath,
                                             const std::vector<std::string>& conf_dirs);

// The first DIRS/NAME for which USABLE says yes (it exists and is an ELF of
// our class and machine: ld.so skips the others), or "" when none is.
std::string find_library(const std::string& name, const std::vector<std::string>& dirs,
                         const std::function<bool(const std::string&)>& usable);

// ---- Python -----------------------------------------------------------------

// True when a binary whose realpath has this file name gets its standard
// library too: "python3.11", not "python3" or "python3.11-config".
bool is_python_name(std::string_view file_name);
// True when REL (a path relative to /usr/lib/pythonX.Y, no leading '/') is
// left out of the rootfs: test/, idlelib/, tkinter/, turtledemo/, ensurepip/,
// lib2to3/tests/, config-X.Y-*/ (libpython's static archive and Makefile,
// only used to build C extensions), dist-packages/ and site-packages/.
// __pycache__ is kept.
bool python_stdlib_skipped(std::string_view rel);

// ---- the rootfs as data -----------------------------------------------------

struct RootfsEntry {
  enum class Kind { dir, file, symlink };
  Kind kind = Kind::dir;
  mode_t mode = 0755;   // permission bits (dir, file)
  std::string source;   // file: host path of the content (empty: `content`)
  std::string content;  // file: literal content (the skeleton's /etc files)
  std::string target;   // symlink: the link text, verbatim
  // The host file's identity, for the cache key.
  off_t size = 0;
  int64_t mtime_ns = 0;
  ino_t ino = 0;
  dev_t dev = 0;
};
// Rootfs path ("/usr/bin/true") -> entry. Sorted, so a directory comes before
// everything below it.
using RootfsPlan = std::map<std::string, RootfsEntry>;

struct HostRootfsOptions {
  std::vector<std::string> binaries;  // a name looked up in PATH, or a path
  std::vector<std::string> trees;     // host directory trees added verbatim
  std::string output;                 // DIR
  bool copy = false;                  // never hard-link
  bool force = false;                 // replace a non-empty DIR
};

// What the planner looked at besides the plan's own entries (directories it
// searched for a library before the hit, ld.so.conf files), as lstat saw
// them when it looked.
struct HostFact {
  bool exists = false;
  mode_t type = 0;  // S_IFMT bits
  off_t size = 0;
  int64_t mtime_ns = 0;
  ino_t ino = 0;
};
using HostFacts = std::map<std::string, HostFact>;

// Resolves every binary, its interpreter and libraries to a fixed point, the
// Python standard library, the trees and the skeleton. Errors name what is
// missing and who needs it. LOOKED_AT, when set, receives the other facts the
// plan depends on.
Result<RootfsPlan> plan_host_rootfs(const HostRootfsOptions& o, HostFacts* looked_at = nullptr);

// Every fact a plan was made from, one line each: the host entries of PLAN
// (with their identity) and LOOKED_AT. While manifest_holds() says yes, a new
// plan would be the same. "" when a path holds a newline (no manifest).
std::string plan_manifest(const RootfsPlan& plan, const HostFacts& looked_at);
bool manifest_holds(std::string_view manifest);

// Refuses a plan that cannot be written safely: every path clean and
// absolute, every entry's parent a directory entry of the plan (so writing it
// never follows a symlink).
Status check_plan(const RootfsPlan& plan);

// SHA-256 (hex) over the sorted entries: path, kind, link text, mode, and each
// host file's size, mtime and inode (so a package upgrade changes it).
Result<std::string> plan_key(const RootfsPlan& plan);

// Writes PLAN as DIR: built in a temp dir beside DIR, renamed into place. DIR
// must not exist or be an empty directory; with FORCE a non-empty one is
// replaced, unless it holds files the plan takes from the host (or is /).
// Files are hard-linked when they are on DIR's filesystem (unless COPY),
// copied otherwise (mode, owner when root, mtime kept); a host file that
// changed since it was planned is an error. On failure nothing is left
// behind.
Status write_rootfs(const RootfsPlan& plan, const std::string& dir, bool copy, bool force);

// `rootfs --from-host`: plan then write. Returns what was added, one line per
// entry ("file /usr/bin/true", "link /lib64 -> usr/lib64", "dir /usr"), for
// --verbose.
Result<std::vector<std::string>> rootfs_from_host(const HostRootfsOptions& o);

// ---- the cached default rootfs of `pack run` -----------------------------------

inline constexpr const char* kDefaultRootfsCache = "/var/lib/comet-runtime/rootfs";

// A rootfs holding INTERPRETER (an absolute host path such as /usr/bin/python3)
// with its libraries (and a Python's standard library) and the skeleton,
// nothing else (no shell, no busybox). Cached as CACHE_ROOT/<plan_key>, so it
// is rebuilt when any of its host files changes; builders serialise on
// flock(CACHE_ROOT/.lock). CACHE_ROOT/index/<sha256 of INTERPRETER> keeps the
// last key and its plan_manifest(): when that still holds, the cached rootfs
// is returned without planning (lstat of each fact, no lock). Old keys are
// never removed. Returns the rootfs directory.
Result<std::string> default_rootfs(const std::string& interpreter,
                                   const std::string& cache_root = kDefaultRootfsCache);

}  // namespace comet::runtime
