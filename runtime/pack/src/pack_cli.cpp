// `comet-runtime pack validate|lint|bundle|explain`: the SoyaPack tooling
// over capability/ (parse, lint, compile, match), and the manifest loader
// every pack verb uses. `run`, the only verb that starts a container
// (through run_container()), is in pack_run.cpp.
#include "comet/pack/pack_cli.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>

#include "comet/base/fault.hpp"
#include "comet/base/sys.hpp"
#include "comet/capability/compile.hpp"
#include "comet/capability/lint.hpp"
#include "comet/capability/manifest.hpp"
#include "comet/capability/match.hpp"
#include "comet/host/log.hpp"
#include "comet/oci/spec.hpp"
#include "pack_parts.hpp"

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

int pack_bundle(const std::string& pack, const std::string& rootfs, const std::string& out,
                const std::string& input, const std::string& output) {
  TRY_EXIT(Loaded l, load(pack, /*validate=*/true, 2, 1));
  if (rootfs.empty()) {
    log::error("pack bundle: --rootfs DIR is required");
    return 2;
  }
  for (auto [flag, dir] : {std::pair{"--rootfs", &rootfs}, std::pair{"--input", &input}})
    if (Status st = check_dir_flag("pack bundle", flag, *dir); !st.ok()) {
      log::error(st.error().what());
      return 2;
    }
  cap::CompileInputs in;
  in.rootfs = abs_path(rootfs);
  in.pack_dir = abs_path(join_path(out, "workdir"));
  if (!input.empty()) in.host_dirs["/workdir/inputs"] = abs_path(input);
  if (!output.empty()) in.host_dirs["/workdir/out"] = abs_path(output);
  auto spec = cap::compile(l.man, in);
  if (!spec.ok()) {
    log::error(spec.error().what());
    return 1;
  }
  // Nothing is written unless the whole config compiled.
  Status st = mkdir_p(out, 0755);
  if (st.ok()) st = stage_workdir(l.dir, in.pack_dir, in.host_dirs);
  if (st.ok())
    st = write_file_atomic(join_path(out, "config.json"), oci::to_json(*spec, 2) + "\n", 0644);
  if (!st.ok()) {
    log::error(st.error().what());
    return 1;
  }
  std::printf("%s\n", join_path(out, "config.json").c_str());
  return 0;
}

namespace {
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

int pack_explain(const std::string& pack, const std::string& path, const std::string& host) {
  TRY_EXIT(Loaded l, load(pack, /*validate=*/true, 2, 2));
  const cap::Manifest* man = &l.man;
  if (path.empty() == host.empty()) {
    log::error("pack explain: give exactly one of --path P or --host HOST:PORT[:PROTO]");
    return 2;
  }
  if (!path.empty()) {
    auto d = cap::fs_decision(man->capabilities, path);
    std::string by = d.path.empty() ? d.entry : d.path + " " + d.entry;
    if (d.access == cap::Access::denied)
      std::printf("denied: %s (no fs entry matches; the path does not exist in the sandbox)\n",
                  path.c_str());
    else
      std::printf("allowed: %s %s, by %s\n", std::string(cap::to_string(d.access)).c_str(),
                  path.c_str(), by.c_str());
    return d.access == cap::Access::denied ? 1 : 0;
  }
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
