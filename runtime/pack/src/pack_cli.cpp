// `comet-runtime pack validate|lint|bundle|explain`: the SoyaPack tooling
// over capability/ (parse, lint, compile, match), and the manifest loader
// every pack verb uses. `run`, the only verb that starts a container
// (through run_container()), is in pack_run.cpp.
#include "comet/pack/pack_cli.hpp"

#include <sys/stat.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "comet/base/fault.hpp"
#include "comet/base/switches.hpp"
#include "comet/base/sys.hpp"
#include "comet/capability/compile.hpp"
#include "comet/capability/lint.hpp"
#include "comet/capability/manifest.hpp"
#include "comet/capability/match.hpp"
#include "comet/host/log.hpp"
#include "comet/host/user_dirs.hpp"
#include "comet/lifecycle/rootless.hpp"
#include "comet/oci/spec.hpp"
#include "comet/pack/hostroot.hpp"
#include "pack_parts.hpp"
#include "pack_view.hpp"

namespace comet::runtime {
namespace cap = comet::capability;

namespace pack_detail {
namespace {

// PATH is a pack directory or its soyapack.yaml.
Result<std::pair<std::string, std::string>> read_manifest(const std::string& path) {
  // at most kMaxManifestBytes + 1 read: /dev/zero or a FIFO stops there
  TRY(cap::ManifestFile f, cap::read_manifest_file(path));
  return std::make_pair(std::move(f.file), std::move(f.text));
}

std::string pack_dir_of(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return path;
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

std::string abs_path(const std::string& p) {
  // Test-only (fault.hpp): reach the compiler's own guard for relative paths.
  if (fault_is("pack-relative-paths")) return p;
  std::error_code ec;
  auto a = std::filesystem::absolute(p, ec);
  return ec ? p : a.lexically_normal().string();
}

Status check_dir_flag(const std::string& verb, const std::string& flag, const std::string& path) {
  if (path.empty()) return {};
  struct stat st;
  if (::stat(path.c_str(), &st) < 0) return Error::sys(errno, verb + " " + flag + " " + path);
  if (!S_ISDIR(st.st_mode)) return Error::sys(ENOTDIR, verb + " " + flag + " " + path);
  return {};
}

OrExit<Loaded> load(const std::string& path, bool validate, int unreadable, int invalid) {
  auto m = read_manifest(path);
  if (!m.ok()) {
    log::error(m.error().what());
    return unreadable;
  }
  auto man =
      validate ? cap::load_manifest(m->second, m->first) : cap::parse_manifest(m->second, m->first);
  if (!man.ok()) {
    log::error(man.error().what());
    return invalid;
  }
  return Loaded{m->first, abs_path(pack_dir_of(path)), std::move(*man), std::move(m->second)};
}

OrExit<std::string> pack_rootfs(const Loaded& l, const std::string& rootfs,
                                const std::string& verb) {
  if (!rootfs.empty()) return abs_path(rootfs);
  // COMET_ROOTFS_CACHE: another cache directory (tests use a private one).
  const std::string rcache = switches::rootfs_cache();
  // An ordinary user's cache is in its own data dir (user_dirs.hpp).
  const std::string fallback =
      rootless() ? join_path(user_dirs().data, "rootfs") : std::string(kDefaultRootfsCache);
  auto r = default_rootfs(l.man.runtime.interpreter, rcache.empty() ? fallback : rcache);
  if (!r.ok()) {
    log::error(verb + ": no --rootfs given, and the default rootfs for " +
               l.man.runtime.interpreter + " cannot be built: " + r.error().what());
    return 1;
  }
  return *r;
}

}  // namespace pack_detail

using namespace pack_detail;

int pack_validate(const std::string& path) {
  TRY_EXIT(Loaded l, load(path, /*validate=*/true, 2, 1));
  std::printf("%s: %s@%s is valid\n", l.file.c_str(), l.man.name.c_str(), l.man.version.c_str());
  return 0;
}

int pack_lint(const std::string& path, bool strict, const std::string& format,
              const std::string& rootfs) {
  // lint runs on anything that parses. Exit codes as validate's: 1 for a
  // manifest that is wrong (a typo, a shape error or a lint error), 2 for
  // one that cannot be read (docs/errors.md).
  TRY_EXIT(Loaded l, load(path, /*validate=*/false, 2, 1));
  cap::LintOptions opts;
  opts.strict = strict;
  if (!rootfs.empty()) {
    opts.exists_in_rootfs = [rootfs](const std::string& p) {
      struct stat st;
      return ::stat(join_path(rootfs, p).c_str(), &st) == 0;
    };
  }
  const std::string dir = l.dir;
  opts.exists_in_pack = [dir](const std::string& p) {
    struct stat st;
    return ::stat(join_path(dir, p).c_str(), &st) == 0 && S_ISREG(st.st_mode);
  };
  auto findings = cap::lint(l.man, opts);
  if (format == "json")
    std::printf("%s\n", cap::render_json(findings, l.file, 2).c_str());
  else
    std::fputs(cap::render_text(findings).c_str(), stdout);
  return cap::has_errors(findings) ? 1 : 0;
}

namespace {

std::string oct(unsigned mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode);
  return buf;
}

// Whether UID:GID (the agent, no capabilities) may make files in the
// directory ST describes: the owner's, group's or others' w and x bits.
bool agent_can_write(const struct stat& st, uint32_t uid, uint32_t gid) {
  unsigned bits = st.st_uid == uid   ? (st.st_mode >> 6) & 7u
                  : st.st_gid == gid ? (st.st_mode >> 3) & 7u
                                     : st.st_mode & 7u;
  return (bits & 3u) == 3u;
}

// The host dirs behind the fs.write places of a bundle (but /tmp, a tmpfs
// in the config): --output for /workdir/out, else BUNDLE/out, and
// BUNDLE/write/<path> for every other place.
std::map<std::string, std::string> bundle_write_dirs(const Loaded& l, const BundleOptions& o) {
  std::map<std::string, std::string> dirs;
  const std::string bundle = abs_path(o.bundle);
  for (const std::string& w : l.man.capabilities.fs.write) {
    if (w == "/tmp") continue;
    if (w == "/workdir/out")
      dirs[w] = o.output.empty() ? join_path(bundle, "out") : abs_path(o.output);
    else
      dirs[w] = join_path(join_path(bundle, "write"), w);
  }
  return dirs;
}

}  // namespace

int pack_bundle(const BundleOptions& o) {
  TRY_EXIT(Loaded l, load(o.pack, /*validate=*/true, 2, 1));
  if (o.bundle.empty()) {
    log::error("pack bundle: --bundle DIR is required (the OCI bundle to write)");
    return 2;
  }
  const auto& wr = l.man.capabilities.fs.write;
  if (!o.output.empty() && std::find(wr.begin(), wr.end(), "/workdir/out") == wr.end()) {
    log::error("pack bundle --output: the pack does not declare fs.write /workdir/out");
    return 2;
  }
  for (auto [flag, dir] : {std::pair{"--rootfs", &o.rootfs}, std::pair{"--input", &o.input}})
    if (Status st = check_dir_flag("pack bundle", flag, *dir); !st.ok()) {
      log::error(st.error().what());
      return 2;
    }
  cap::CompileInputs in;
  in.rootfs = abs_path(o.rootfs);
  in.pack_dir = abs_path(join_path(o.bundle, "workdir"));
  if (!o.input.empty()) in.host_dirs["/workdir/inputs"] = abs_path(o.input);
  const auto write_dirs = bundle_write_dirs(l, o);
  for (const auto& [dest, dir] : write_dirs) in.host_dirs[dest] = dir;
  auto spec = cap::compile(l.man, in);
  if (!spec.ok()) {
    log::error(spec.error().what());
    return 1;
  }
  // The agent runs as in.uid (nobody) with no capabilities: a place it
  // writes that it cannot write is a run that fails with EACCES (issue 26).
  // One that exists must be its already; nothing is written otherwise.
  for (const auto& [dest, dir] : write_dirs) {
    struct stat st;
    if (::stat(dir.c_str(), &st) < 0) continue;  // made below, for the agent
    if (!S_ISDIR(st.st_mode) || !agent_can_write(st, in.uid, in.gid)) {
      log::error("pack bundle: the agent runs as uid " + std::to_string(in.uid) +
                 " and cannot write " + dir + " (the host dir for " + dest + ", owner " +
                 std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid) + ", mode " +
                 oct(st.st_mode & 07777) + "): chown " + std::to_string(in.uid) + ":" +
                 std::to_string(in.gid) + " it, or name a directory that does not exist yet");
      return 1;
    }
  }
  // Nothing is written unless the whole config compiled.
  Status st = mkdir_p(o.bundle, 0755);
  if (st.ok()) st = stage_workdir(l.dir, in.pack_dir, in.host_dirs);
  for (const auto& [dest, dir] : write_dirs) {
    struct stat sb;
    if (!st.ok() || ::stat(dir.c_str(), &sb) == 0) continue;
    st = mkdir_p(dir, 0755);
    if (st.ok() && ::chown(dir.c_str(), in.uid, in.gid) < 0)
      st = Error::sys(errno, "chown " + dir + " to the agent's uid " + std::to_string(in.uid));
  }
  if (st.ok())
    st = write_file_atomic(join_path(o.bundle, "config.json"), oci::to_json(*spec, 2) + "\n", 0644);
  if (!st.ok()) {
    log::error("pack bundle: " + st.error().what());
    return 1;
  }
  std::printf("%s\n", join_path(o.bundle, "config.json").c_str());
  for (const auto& [dest, dir] : write_dirs)
    std::printf("%s: %s (the agent, uid %u, writes there)\n", dest.c_str(), dir.c_str(), in.uid);
  return 0;
}

namespace {

int explain_path(const Loaded& l, const ExplainOptions& o) {
  TRY_EXIT(std::string rootfs, pack_rootfs(l, o.rootfs, "pack explain"));
  ViewInputs in;
  in.man = &l.man;
  in.rootfs = rootfs;
  in.pack_dir = l.dir;
  in.input = o.input.empty() ? "" : abs_path(o.input);
  in.owner = static_cast<uint32_t>(::geteuid());
  const PathView v = see_path(in, plan_view(in), o.path);
  const auto d = cap::fs_decision(l.man.capabilities, v.resolved);
  const std::string by = d.access == cap::Access::denied
                             ? "no capabilities.fs entry covers it"
                             : std::string(cap::to_string(d.access)) + " by " +
                                   (d.path.empty() ? d.entry : d.path + " " + d.entry);
  const int rc = v.read_err == 0 || v.write_err == 0 ? 0 : 1;
  if (o.format == "json") {
    nlohmann::json j = {
        {"path", v.path},
        {"resolved", v.resolved},
        {"layer", to_string(v.layer)},
        {"kind", v.kind},
        {"exists", v.exists},
        {"host", v.host},
        {"read", outcome(v.read_err)},
        {"write", outcome(v.write_err)},
        {"write_means", v.dir_write ? "a new file in the directory" : "create or replace the file"},
        {"read_why", v.read_why},
        {"write_why", v.write_why},
        {"fs_entry", d.access == cap::Access::denied ? ""
                     : d.path.empty()                ? d.entry
                                                     : d.path},
        {"rootfs", rootfs}};
    std::printf("%s\n", j.dump(2, ' ', true).c_str());
    return rc;
  }
  // Names come from the image (a symlink's text) and the caller: shown,
  // never sent to a terminal as controls (visible_controls()).
  const std::string shown = v.path == v.resolved ? v.path : v.path + " (-> " + v.resolved + ")";
  const std::string verdict = rc != 0 ? "neither readable nor writable"
                              : v.read_err == 0 && v.write_err == 0 ? "readable and writable"
                              : v.read_err == 0                     ? "readable, not writable"
                                                                    : "writable, not readable";
  const auto why = [](const std::string& w) { return w.empty() ? w : " (" + w + ")"; };
  const std::string lines[] = {
      shown + ": " + (v.exists ? v.kind : "does not exist") + ", " + verdict,
      "  from:  " + describe(v, in), "  read:  " + outcome(v.read_err) + why(v.read_why),
      "  write: " + outcome(v.write_err) + (v.dir_write ? " (a new file in it)" : "") +
          why(v.write_why),
      "  manifest: " + by +
          (d.access == cap::Access::denied
               ? " (reads are not refused for that; a write outside fs.write is)"
               : "")};
  for (const std::string& line : lines)
    std::printf("%s\n", visible_controls(line, /*caret=*/false).c_str());
  return rc;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}
}  // namespace

int pack_annotation(const std::string& pack, const std::string& format) {
  TRY_EXIT(Loaded l, load(pack, /*validate=*/true, 2, 1));
  const std::string caps = cap::capabilities_to_json(l.man.capabilities);
  const std::string name = l.man.name + "@" + l.man.version;
  const std::string kc(cap::kAnnotationCapabilities), kp(cap::kAnnotationPack);
  if (format == "json") {
    std::printf("%s\n", caps.c_str());
  } else if (format == "k8s") {
    // YAML single-quoted scalars: only ' is special (doubled).
    std::printf("annotations:\n  %s: '%s'\n  %s: '%s'\n", kc.c_str(),
                replace_all(caps, "'", "''").c_str(), kp.c_str(),
                replace_all(name, "'", "''").c_str());
  } else {
    // podman splits --annotation as CSV (pflag StringSlice): a field with
    // commas or quotes is quoted, its quotes doubled.
    std::printf("\"%s=%s\",%s=%s\n", kc.c_str(), replace_all(caps, "\"", "\"\"").c_str(),
                kp.c_str(), name.c_str());
  }
  return 0;
}

int pack_explain(const ExplainOptions& o) {
  TRY_EXIT(Loaded l, load(o.pack, /*validate=*/true, 2, 2));
  const cap::Manifest* man = &l.man;
  const std::string& path = o.path;
  const std::string& host = o.host;
  if (path.empty() == host.empty()) {
    log::error("pack explain: give exactly one of --path P or --host HOST:PORT[:PROTO]");
    return 2;
  }
  // As pack run: a missing --input or --rootfs is named by its flag (issue
  // 26, trap 5), not explained as an empty /workdir/inputs that no run has.
  for (auto [flag, dir] : {std::pair{"--input", &o.input}, std::pair{"--rootfs", &o.rootfs}})
    if (Status st = check_dir_flag("pack explain", flag, *dir); !st.ok()) {
      log::error(st.error().what());
      return 2;
    }
  if (!path.empty()) return explain_path(l, o);
  // HOST:PORT[:PROTO], PROTO default https (tcp for other ports than 443/80).
  auto parts = split(host, ':');
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty()) {
    log::error("pack explain --host \"" + host + "\": expected HOST:PORT[:PROTO]");
    return 2;
  }
  int port = 0;
  try {
    port = std::stoi(parts[1]);
  } catch (const std::exception&) {
  }
  if (port < 1 || port > 65535) {
    log::error("pack explain --host \"" + host + "\": port must be 1..65535");
    return 2;
  }
  std::string proto_s = parts.size() == 3 ? parts[2]
                                          : (port == 80    ? "http"
                                             : port == 443 ? "https"
                                                           : "tcp");
  auto proto = cap::parse_protocol(proto_s);
  if (!proto) {
    log::error("pack explain --host \"" + host + "\": unknown protocol \"" + proto_s + "\"");
    return 2;
  }
  auto d = cap::egress_allows(man->capabilities, parts[0], port, *proto);
  std::string target = parts[0] + ":" + std::to_string(port) + ":" + proto_s;
  if (d.allowed)
    std::printf("allowed: %s, by %s %s\n", target.c_str(), d.path.c_str(), d.entry.c_str());
  else
    std::printf("denied: %s (no match)\n", target.c_str());
  return d.allowed ? 0 : 1;
}

}  // namespace comet::runtime
