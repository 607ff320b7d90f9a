// The capability compiler (see compile.hpp for the layout it produces).
#include "comet/capability/compile.hpp"

#include "comet/capability/policy.hpp"

#include <algorithm>

#include "util.hpp"

namespace comet::capability {

using detail::index;
using detail::quote;

namespace {

const std::vector<std::string> kMasked = {
    "/proc/acpi",          "/proc/asound",     "/proc/kcore",       "/proc/keys",
    "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
    "/sys/firmware",       "/proc/scsi",
};
const std::vector<std::string> kReadonly = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                            "/proc/sysrq-trigger"};

using detail::mount;

struct Bind {
  std::string dest;
  std::string source;  // empty: tmpfs
  bool write = false;
};

Status check_host_path(const std::string& what, const std::string& p) {
  if (p.empty() || p[0] != '/') {
    return Error::msg("compile: " + what + " must be an absolute host path, got " + quote(p));
  }
  return {};
}

// The inputs besides the manifest: absolute host paths, and per-run host
// dirs that each back a declared entry.
Status check_inputs(const Manifest& m, const CompileInputs& in) {
  TRYV(validate(m));
  TRYV(check_host_path("rootfs", in.rootfs));
  TRYV(check_host_path("pack dir", in.pack_dir));
  const FsPolicy& fs = m.capabilities.fs;
  for (const auto& [dest, src] : in.host_dirs) {
    if (dest == kWorkdir) {
      return Error::msg("compile: /workdir is the pack dir and takes no host dir");
    }
    bool declared = std::find(fs.read.begin(), fs.read.end(), dest) != fs.read.end() ||
                    std::find(fs.write.begin(), fs.write.end(), dest) != fs.write.end();
    if (!declared) {
      return Error::msg("compile: a host dir is given for " + dest +
                        ", which capabilities.fs does not declare");
    }
    TRYV(check_host_path("the host dir for " + dest, src));
  }
  return {};
}

// The mounts capabilities.fs asks for, parents before children.
Result<std::vector<Bind>> plan_binds(const FsPolicy& fs, const CompileInputs& in) {
  std::vector<Bind> binds;
  for (std::size_t i = 0; i < fs.write.size(); ++i) {
    const std::string& p = fs.write[i];
    auto it = in.host_dirs.find(p);
    if (it != in.host_dirs.end()) {
      binds.push_back({p, it->second, true});
    } else if (p == "/tmp") {
      binds.push_back({p, "", true});
    } else {
      return Error::msg("compile: " + index("capabilities.fs.write", i) + " " + p +
                        " has no host directory to write to (give one, e.g. pack run --output)");
    }
  }
  for (const std::string& p : fs.read) {
    if (std::find(fs.write.begin(), fs.write.end(), p) != fs.write.end()) continue;
    // Without a host dir the path is served by the pack (/workdir) or the
    // read-only rootfs: nothing to mount.
    if (auto it = in.host_dirs.find(p); it != in.host_dirs.end()) {
      binds.push_back({p, it->second, false});
    }
  }
  // Parents before children; ties by path, for a stable config.
  std::stable_sort(binds.begin(), binds.end(), [](const Bind& a, const Bind& b) {
    std::size_t da = detail::path_depth(a.dest), db = detail::path_depth(b.dest);
    return da != db ? da < db : a.dest < b.dest;
  });
  return binds;
}

oci::Process make_process(const Manifest& m, const CompileInputs& in) {
  oci::Process p;
  p.terminal = false;
  p.user.uid = in.uid;
  p.user.gid = in.gid;
  p.args = {m.runtime.interpreter, m.runtime.entrypoint};
  const auto& args = in.args ? *in.args : m.runtime.args;
  p.args.insert(p.args.end(), args.begin(), args.end());
  if (!m.runtime.env.count("PATH")) p.env.push_back("PATH=" + std::string(kDefaultPath));
  // Python would write bytecode next to an imported module: /workdir and
  // the image are read-only, so every such import would be a refused
  // write (an fs.write violation, exit 3) and gain nothing.
  const std::string& interp = m.runtime.interpreter;
  const std::string base = interp.substr(interp.find_last_of('/') + 1);
  if (base.rfind("python", 0) == 0 && !m.runtime.env.count("PYTHONDONTWRITEBYTECODE"))
    p.env.push_back("PYTHONDONTWRITEBYTECODE=1");
  // HOME inside the sandbox: the runtime's default for the pack's user
  // (nobody: /nonexistent) is outside it, so every look there (Python's
  // user site) would be an fs.read violation. /workdir is readable: a
  // missing file there is only missing, a write there a real fs.write.
  if (!m.runtime.env.count("HOME")) p.env.push_back("HOME=" + std::string(kWorkdir));
  for (const auto& [k, v] : m.runtime.env) p.env.push_back(k + "=" + v);
  p.cwd = std::string(kWorkdir);
  p.capabilities = oci::Capabilities{};  // every set present and empty
  p.rlimits.push_back(oci::Rlimit{"RLIMIT_NOFILE", 1024, 1024});
  p.no_new_privileges = true;
  return p;
}

std::vector<oci::Mount> make_mounts(const Manifest& m, const CompileInputs& in,
                                    const std::vector<Bind>& binds) {
  std::vector<oci::Mount> out;
  out.push_back(mount("/proc", "proc", "proc", {"nosuid", "noexec", "nodev"}));
  out.push_back(mount("/dev", "tmpfs", "tmpfs",
                      {"nosuid", "noexec", "strictatime", "mode=755", "size=65536k"}));
  out.push_back(mount("/dev/pts", "devpts", "devpts",
                      {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}));
  // /dev/shm is read-only: a pack writes only where fs.write says, and
  // fs.write may not name /dev (red team, issue 21: it took writes).
  out.push_back(mount("/dev/shm", "tmpfs", "shm",
                      {"ro", "nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}));
  out.push_back(mount(std::string(kWorkdir), "bind", in.pack_dir,
                      {"rbind", "ro", "nosuid", "nodev", "noexec"}));
  for (const Bind& b : binds) {
    if (b.source.empty()) {
      out.push_back(mount(
          b.dest, "tmpfs", "tmpfs",
          {"nosuid", "nodev", "noexec", "mode=1777", "size=" + std::to_string(m.resources.tmp)}));
    } else {
      out.push_back(mount(b.dest, "bind", b.source,
                          {"bind", b.write ? "rw" : "ro", "nosuid", "nodev", "noexec"}));
    }
  }
  return out;
}

oci::Linux make_linux(const Manifest& m) {
  oci::Linux l;
  for (const char* ns : {"pid", "network", "ipc", "uts", "mount", "cgroup"}) {
    l.namespaces.push_back(oci::Namespace{ns, ""});
  }
  l.masked_paths = kMasked;
  // What would tell a pack about the host beyond the kernel it runs on:
  // the boot command line (the host's devices and init) and the boot id
  // (one host across runs and containers). Issue 21, item 12.
  for (const char* hidden : {"/proc/cmdline", "/proc/sys/kernel/random/boot_id"})
    l.masked_paths.push_back(hidden);
  l.readonly_paths = kReadonly;
  oci::Resources res;
  // The pack's limits (manifest.hpp Resources): pids and memory by its
  // cgroup, no swap on top; tmpfs pages it writes are charged there too.
  res.pids = oci::Pids{m.resources.pids};
  oci::Memory mem;
  mem.limit = m.resources.memory;
  mem.swap = m.resources.memory;
  res.memory = mem;
  oci::DeviceCgroup deny_all;
  deny_all.allow = false;
  deny_all.access = "rwm";
  res.devices.push_back(deny_all);
  l.resources = std::move(res);
  // linux.seccomp stays absent: the runtime attaches the filter the
  // annotation names (seccomp/).
  return l;
}

void annotate(oci::Spec& s, const Manifest& m) {
  s.annotations[std::string(kAnnotationCapabilities)] = capabilities_to_json(m.capabilities);
  s.annotations[std::string(kAnnotationPack)] = m.name + "@" + m.version;
  s.annotations[std::string(kAnnotationSeccomp)] = std::string(kSeccompPackBaseline);
  // The runtime's confinement (policy.hpp): lock-down, the exec lock on
  // the interpreter, and the network the egress list implies.
  Policy pol;
  pol.lockdown = true;
  pol.exec = std::vector<std::string>{m.runtime.interpreter};
  pol.network = m.capabilities.egress.any               ? NetworkPolicy::open
                : m.capabilities.egress.entries.empty() ? NetworkPolicy::none
                                                        : NetworkPolicy::egress;
  if (!m.profile.empty()) pol.profile = m.profile;
  s.annotations[std::string(kAnnotationPolicy)] = policy_to_json(pol);
  if (!m.profile.empty()) s.annotations[std::string(kAnnotationProfile)] = m.profile;
}

}  // namespace

const std::vector<std::string>& default_masked_paths() {
  return kMasked;
}
const std::vector<std::string>& default_readonly_paths() {
  return kReadonly;
}

Result<oci::Spec> compile(const Manifest& m, const CompileInputs& in) {
  try {
    TRYV(check_inputs(m, in));
    TRY(const std::vector<Bind> binds, plan_binds(m.capabilities.fs, in));
    oci::Spec s;
    s.oci_version = "1.2.0";
    s.hostname = m.name;
    oci::Root root;
    root.path = in.rootfs;
    root.readonly = true;
    s.root = root;
    s.process = make_process(m, in);
    s.mounts = make_mounts(m, in, binds);
    s.linux_ = make_linux(m);
    annotate(s, m);
    return s;
  } catch (const std::exception& e) {
    return Error::msg(std::string("compile: ") + e.what());
  }
}

}  // namespace comet::capability
