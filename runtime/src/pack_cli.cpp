// `comet-runtime pack validate|lint|bundle|explain|run`: the SoyaPack
// tooling over capability/ (parse, lint, compile, match). Only `run` starts
// a container (through run_container()).
#include "comet/runtime/pack_cli.hpp"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <variant>

#include "comet/capability/compile.hpp"
#include "comet/capability/lint.hpp"
#include "comet/capability/manifest.hpp"
#include "comet/capability/match.hpp"
#include "comet/oci/spec.hpp"
#include "comet/runtime/container.hpp"
#include "comet/runtime/hostroot.hpp"
#include "comet/runtime/log.hpp"
#include "comet/runtime/sys.hpp"

namespace comet::runtime {
namespace cap = comet::capability;
namespace {

// PATH is a pack directory or its soyapack.yaml.
Result<std::pair<std::string, std::string>> read_manifest(const std::string& path) {
  std::string file = path;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    file = join_path(path, "soyapack.yaml");
  TRY(std::string text, read_file(file));
  return std::make_pair(file, std::move(text));
}

std::string pack_dir_of(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return path;
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string abs_path(const std::string& p) {
  std::error_code ec;
  auto a = std::filesystem::absolute(p, ec);
  return ec ? p : a.lexically_normal().string();
}

struct Loaded {
  std::string file;  // soyapack.yaml
  std::string dir;   // the pack directory, absolute
  cap::Manifest man;
};

// Reads and parses (and with `validate`, validates) the manifest at PATH.
// An error is logged and comes back as the exit code the verb uses for it:
// `unreadable` when the file cannot be read, `invalid` when it is refused.
std::variant<Loaded, int> load(const std::string& path, bool validate, int unreadable,
                               int invalid) {
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
  return Loaded{m->first, abs_path(pack_dir_of(path)), std::move(*man)};
}

#define TRY_EXIT(decl, expr) TRY_EXIT_IMPL_(COMET_CONCAT(try_exit_, __LINE__), decl, expr)
#define TRY_EXIT_IMPL_(tmp, decl, expr)                            \
  auto tmp = (expr);                                               \
  if (std::holds_alternative<int>(tmp)) return std::get<int>(tmp); \
  decl = std::move(std::get<Loaded>(tmp))

// The pack as the sandbox sees it at /workdir: a copy of the pack directory
// (regular files, directories and symlinks; nothing else), with a mount
// point for every per-run host directory under /workdir, since /workdir is
// read-only inside and the pack directory itself is never written.
Status stage_workdir(const std::string& pack_dir, const std::string& dst,
                     const std::map<std::string, std::string>& host_dirs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dst, ec)) TRYV(remove_tree(dst));
  TRYV(mkdir_p(dst, 0755));
  for (auto it = fs::recursive_directory_iterator(pack_dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path() == fs::path(dst)) {  // the bundle written inside the pack
      it.disable_recursion_pending();
      continue;
    }
    const fs::path rel = it->path().lexically_relative(pack_dir);
    const fs::path to = fs::path(dst) / rel;
    auto st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_symlink(st)) {
      fs::copy_symlink(it->path(), to, ec);
    } else if (fs::is_directory(st)) {
      fs::create_directory(to, ec);
      if (!ec) fs::permissions(to, fs::perms(0755), ec);
    } else if (fs::is_regular_file(st)) {
      fs::copy_file(it->path(), to, fs::copy_options::overwrite_existing, ec);
    }
    if (ec) return Error::sys(ec.value(), "copy " + it->path().string() + " into " + dst);
  }
  if (ec) return Error::sys(ec.value(), "read pack directory " + pack_dir);
  for (const auto& [sandbox_path, host] : host_dirs) {
    (void)host;
    if (sandbox_path.rfind("/workdir/", 0) != 0) continue;
    TRYV(mkdir_p(join_path(dst, sandbox_path.substr(9)), 0755));
  }
  return {};
}

}  // namespace

int pack_validate(const std::string& path) {
  TRY_EXIT(Loaded l, load(path, /*validate=*/true, 2, 1));
  std::printf("%s: %s@%s is valid\n", l.file.c_str(), l.man.name.c_str(), l.man.version.c_str());
  return 0;
}

int pack_lint(const std::string& path, bool strict, const std::string& format,
              const std::string& rootfs) {
  // lint runs on anything that parses; shape errors make the input unusable.
  TRY_EXIT(Loaded l, load(path, /*validate=*/false, 2, 2));
  cap::LintOptions opts;
  opts.strict = strict;
  if (!rootfs.empty()) {
    opts.exists_in_rootfs = [rootfs](const std::string& p) {
      struct stat st;
      return ::stat(join_path(rootfs, p).c_str(), &st) == 0;
    };
  }
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

namespace {

// Copies the agent's output tree into DST: directories and regular files
// only (a symlink or device the agent made is skipped and named), never
// following anything. DST is created if needed.
Status collect_output(const std::string& src, const std::string& dst) {
  namespace fs = std::filesystem;
  TRYV(mkdir_p(dst, 0755));
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(src, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path to = fs::path(dst) / it->path().lexically_relative(src);
    auto st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_directory(st)) {
      fs::create_directory(to, ec);
    } else if (fs::is_regular_file(st)) {
      fs::copy_file(it->path(), to, fs::copy_options::overwrite_existing, ec);
    } else {
      log::warn("pack run: output " + it->path().lexically_relative(src).string() +
                " is not a regular file or directory; not collected");
      continue;
    }
    if (ec) return Error::sys(ec.value(), "collect " + it->path().string() + " into " + dst);
  }
  if (ec) return Error::sys(ec.value(), "read the output tree " + src);
  return {};
}

std::string random_suffix() {
  unsigned char b[6] = {};
  if (::getrandom(b, sizeof b, 0) != static_cast<ssize_t>(sizeof b)) return "000000000000";
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s += hex[c >> 4];
    s += hex[c & 15];
  }
  return s;
}

// The per-run directory and everything under it, removed on every path out.
struct RunDir {
  std::string path;
  bool keep = false;
  ~RunDir() {
    if (!path.empty() && !keep) {
      auto st = remove_tree(path);
      if (!st.ok()) log::warn("pack run: " + st.error().what());
    }
  }
};

}  // namespace

int pack_run(const Globals& g, const PackRunOptions& o) {
  TRY_EXIT(Loaded l, load(o.pack, /*validate=*/true, 2, 1));
  std::string rootfs = o.rootfs;
  if (rootfs.empty()) {
    // The embedded default: the interpreter and what it needs, from the host.
    // COMET_ROOTFS_CACHE: another cache directory (tests use a private one).
    const char* cache = std::getenv("COMET_ROOTFS_CACHE");
    auto r =
        default_rootfs(l.man.runtime.interpreter,
                       cache && *cache ? std::string(cache) : std::string(kDefaultRootfsCache));
    if (!r.ok()) {
      log::error("pack run: no --rootfs given, and the default rootfs for " +
                 l.man.runtime.interpreter + " cannot be built: " + r.error().what());
      return 1;
    }
    rootfs = *r;
  }
  auto fail = [](const Error& e) {
    log::error("pack run: " + e.what());
    return 1;
  };
  std::string id = o.id.empty() ? "pack-" + random_suffix() : o.id;
  RunDir run;
  {
    Status st = mkdir_p(join_path(g.root, "packs"), 0700);
    if (!st.ok()) return fail(st.error());
    std::string base = join_path(join_path(g.root, "packs"), id);
    if (::mkdir(base.c_str(), 0700) < 0)
      return fail(Error::sys(errno, "create the run directory " + base));
    run.path = base;
  }
  cap::CompileInputs in;
  in.rootfs = abs_path(rootfs);
  in.pack_dir = join_path(run.path, "workdir");
  if (o.args) in.args = *o.args;
  // Every fs.write entry is fed from a fresh per-run directory the agent's
  // user owns; /workdir/inputs from --input (read-only) when given.
  std::string out_dir;
  int n = 0;
  for (const std::string& w : l.man.capabilities.fs.write) {
    if (w == "/tmp") continue;
    std::string d = join_path(run.path, "w" + std::to_string(n++));
    if (::mkdir(d.c_str(), 0755) < 0 || ::chown(d.c_str(), in.uid, in.gid) < 0)
      return fail(Error::sys(errno, "create the per-run directory " + d));
    in.host_dirs[w] = d;
    if (w == "/workdir/out") out_dir = d;
  }
  if (!o.input.empty()) {
    const auto& rd = l.man.capabilities.fs.read;
    if (std::find(rd.begin(), rd.end(), "/workdir/inputs") == rd.end()) {
      log::error("pack run --input: the pack does not declare fs.read /workdir/inputs");
      return 2;
    }
    in.host_dirs["/workdir/inputs"] = abs_path(o.input);
  }
  if (!o.output.empty() && out_dir.empty()) {
    log::error("pack run --output: the pack does not declare fs.write /workdir/out");
    return 2;
  }
  auto spec = cap::compile(l.man, in);
  if (!spec.ok()) return fail(spec.error());
  std::string bundle = join_path(run.path, "bundle");
  Status st = mkdir_p(bundle, 0700);
  if (st.ok()) st = stage_workdir(l.dir, in.pack_dir, in.host_dirs);
  if (st.ok())
    st = write_file_atomic(join_path(bundle, "config.json"), oci::to_json(*spec, 2) + "\n", 0600);
  if (!st.ok()) return fail(st.error());

  CreateOptions co;
  co.id = id;
  co.bundle = bundle;
  auto status = run_container(g, co, /*detach=*/false);
  if (!status.ok()) {
    log::error(status.error().what());
    return 1;
  }
  if (!o.output.empty()) {
    Status c = collect_output(out_dir, o.output);
    if (!c.ok()) return fail(c.error());
  }
  return *status;
}

}  // namespace comet::runtime
