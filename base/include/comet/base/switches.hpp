// The COMET_* environment switches, every one of them, read here and only
// here. Each is for tests, benchmarks or a host without the default helper;
// none is needed in normal use, and an unset switch is the default
// behaviour. Header-only: fault() is read in the fork-style child too.
//
// One more is not read here: COMET_SANDBOX_GLOBAL_CONFIG comes from the
// environment `sandbox` captured and passes around (sandbox_config.cpp), so
// that config_paths() stays a function of its arguments.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

namespace comet::switches {

namespace detail {
inline bool equals(const char* name, const char* value) noexcept {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}
// The value, or "" when unset or empty.
inline std::string text(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}
}  // namespace detail

// COMET_FAULT=<point>: test-only fault injection; names the fault point that
// misbehaves (fault.hpp lists them). nullptr when unset. Allocation-free.
inline const char* fault() noexcept {
  return std::getenv("COMET_FAULT");
}

// COMET_USER_DIRS=RUNTIME\nDATA\nCACHE: not a switch for people: an
// ordinary user's `pack run` that moved into its own user namespace re-execs
// itself with the dirs it computed as the user (user_ns.hpp), since inside
// it is uid 0 and could not compute them again (/tmp/comet-runtime-UID).
// Read only by a rootless runtime in a user namespace (user_dirs.cpp).
inline std::string user_dirs_handed() {
  return detail::text("COMET_USER_DIRS");
}

// COMET_FS_EVENTS=off: no fs.read/fs.write violation events (the BPF watch,
// fswatch.hpp) for packs and sandboxes; the mounts still enforce. For
// benchmarks.
inline bool fs_events_off() noexcept {
  return detail::equals("COMET_FS_EVENTS", "off");
}

// COMET_OWN_INIT=off: a pack's container gets no PID 1 of the runtime's own
// (child.hpp, docs/events.md "Exit code 3 under an engine").
inline bool own_init_off() noexcept {
  return detail::equals("COMET_OWN_INIT", "off");
}

// COMET_REPORTER=process: the violation reporter of a foreground run is a
// process of its own, not a thread (the test that kills the reporter alone).
inline bool reporter_process() noexcept {
  return detail::equals("COMET_REPORTER", "process");
}

// COMET_VIOLATION_REPORTING=off: no notifying lock-down and no reporter
// (violations go unseen; `pack run` then does not use its cache).
inline bool violation_reporting_off() noexcept {
  return detail::equals("COMET_VIOLATION_REPORTING", "off");
}

// COMET_ALLOW_MISSING=LAYER[,LAYER]: run without a confinement layer this
// kernel cannot give (docs/rootless.md, "Fail closed"): `landlock` (no
// Landlock: the write and exec-file rules are not applied), `seccomp-listener`
// (no SECCOMP_FILTER_FLAG_NEW_LISTENER: violations are refused but not
// reported), `nested-repos` (a sandbox workspace too large for the search
// for nested repositories: those beyond it are not protected),
// `write-path-repos` (the same for a profile's write paths outside the
// workspace), `link-targets` (a protected directory whose links the sandbox
// cannot all follow: where they lead is not protected). Unset, a
// missing layer is an error (exit 125). A layer the
// kernel has is applied whatever this says.
inline bool allow_missing(const char* layer) {
  const std::string v = detail::text("COMET_ALLOW_MISSING");
  const std::string want(layer);
  size_t pos = 0;
  while (pos <= v.size()) {
    size_t end = v.find(',', pos);
    if (end == std::string::npos) end = v.size();
    if (v.compare(pos, end - pos, want) == 0) return true;
    pos = end + 1;
  }
  return false;
}

// COMET_ROOTFS_CACHE=<dir>: where `pack run` keeps the default rootfs it
// builds from the host ("": the built-in directory; tests use a private one).
inline std::string rootfs_cache() {
  return detail::text("COMET_ROOTFS_CACHE");
}

// COMET_CACHE_DIR=<dir>: the pack cache store when --cache-dir is not given
// ("": /var/cache/comet-runtime/packs).
inline std::string cache_dir() {
  return detail::text("COMET_CACHE_DIR");
}

// COMET_FLAGS_DIR=<dir>: where packs flagged for violations are recorded
// ("": /var/lib/comet-runtime/flags).
inline std::string flags_dir() {
  return detail::text("COMET_FLAGS_DIR");
}

// COMET_NET_HELPER=pasta|slirp4netns: the user-mode network helper for a
// container the runtime gives a network itself ("": slirp4netns, or pasta
// when COMET_PASTA is set).
inline std::string net_helper() {
  return detail::text("COMET_NET_HELPER");
}

// COMET_PASTA=<path>: the pasta binary ("": search /usr/bin, /usr/local/bin).
// Set, it also makes pasta the default network helper.
inline std::string pasta() {
  return detail::text("COMET_PASTA");
}

// COMET_SLIRP4NETNS=<path>: the slirp4netns binary ("": search /usr/bin,
// /usr/local/bin).
inline std::string slirp4netns() {
  return detail::text("COMET_SLIRP4NETNS");
}

// COMET_DNS_UPSTREAM=<list>: the egress resolver's upstream servers, in
// place of /etc/resolv.conf's (--dns-upstream still wins). "": unset.
inline std::string dns_upstream() {
  return detail::text("COMET_DNS_UPSTREAM");
}

// Tests only.

// COMET_UPDATE_GOLDEN=1: the golden-file unit tests rewrite their expected
// outputs instead of comparing (review the diff).
inline bool update_golden() noexcept {
  return detail::equals("COMET_UPDATE_GOLDEN", "1");
}

// COMET_FUZZ_KNOWN_BUGS=0: the fuzz targets turn the check that tolerates a
// known bug back on (tests/fuzz/yaml_guard.hpp). True unless it starts
// with '0'.
inline bool fuzz_known_bugs() noexcept {
  const char* v = std::getenv("COMET_FUZZ_KNOWN_BUGS");
  return !(v && *v == '0');
}

}  // namespace comet::switches
