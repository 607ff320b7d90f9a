// The capability compiler: the config's security properties checked on the
// struct, input errors, and golden files (tests/data/capability/golden/
// <case>/{soyapack.yaml, inputs.json, config.json}, compared as parsed
// JSON; COMET_UPDATE_GOLDEN=1 rewrites config.json).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "comet/base/switches.hpp"
#include "comet/capability/compile.hpp"
#include "comet/oci/spec.hpp"

#include "support/seed_manifest.hpp"
#include "support/slurp.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace comet;
using namespace comet::capability;

namespace {

const fs::path kGolden = fs::path(COMET_TEST_DATA) / "capability" / "golden";

using comet::test::slurp;

using comet::test::kSeed;

Manifest seed() {
  auto m = load_manifest(kSeed);
  EXPECT_TRUE(m.ok()) << m.error().message();
  return *m;
}

CompileInputs inputs() {
  CompileInputs in;
  in.rootfs = "/r/rootfs";
  in.pack_dir = "/p/pack";
  in.host_dirs = {{"/workdir/inputs", "/run/in"}, {"/workdir/out", "/run/out"}};
  return in;
}

const oci::Mount* find_mount(const oci::Spec& s, const std::string& dest) {
  for (const auto& m : s.mounts) {
    if (m.destination == dest) return &m;
  }
  return nullptr;
}

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string compile_error(const Manifest& m, const CompileInputs& in) {
  auto r = compile(m, in);
  return r.ok() ? "OK" : r.error().message();
}

}  // namespace

TEST(CapabilityCompile, SecurityPropertiesOfTheConfig) {
  auto r = compile(seed(), inputs());
  ASSERT_TRUE(r.ok()) << r.error().message();
  const oci::Spec& s = *r;
  ASSERT_TRUE(s.root);
  EXPECT_EQ(s.root->path, "/r/rootfs");
  EXPECT_TRUE(s.root->readonly);
  ASSERT_TRUE(s.process);
  const oci::Process& p = *s.process;
  EXPECT_EQ(p.args, (std::vector<std::string>{"/usr/bin/python3", "agent.py", "--city", "Oslo"}));
  EXPECT_EQ(p.cwd, "/workdir");
  EXPECT_EQ(p.env, (std::vector<std::string>{
                       "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                       "PYTHONDONTWRITEBYTECODE=1", "HOME=/workdir", "LANG=C.UTF-8"}));
  EXPECT_TRUE(p.no_new_privileges);
  ASSERT_TRUE(p.capabilities);
  EXPECT_TRUE(p.capabilities->bounding.empty());
  EXPECT_TRUE(p.capabilities->effective.empty());
  EXPECT_TRUE(p.capabilities->inheritable.empty());
  EXPECT_TRUE(p.capabilities->permitted.empty());
  EXPECT_TRUE(p.capabilities->ambient.empty());
  EXPECT_EQ(p.user.uid, kNobody);
  EXPECT_EQ(p.user.gid, kNobody);
  EXPECT_FALSE(p.terminal);

  const oci::Mount* wd = find_mount(s, "/workdir");
  ASSERT_NE(wd, nullptr);
  EXPECT_EQ(wd->source, "/p/pack");
  for (const char* o : {"rbind", "ro", "nosuid", "nodev"}) EXPECT_TRUE(has(wd->options, o)) << o;
  const oci::Mount* in = find_mount(s, "/workdir/inputs");
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(in->source, "/run/in");
  EXPECT_TRUE(has(in->options, "ro"));
  EXPECT_FALSE(has(in->options, "rw"));
  const oci::Mount* out = find_mount(s, "/workdir/out");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->source, "/run/out");
  for (const char* o : {"rw", "nosuid", "nodev", "noexec"}) EXPECT_TRUE(has(out->options, o)) << o;
  // Parents before children.
  auto pos = [&](const char* d) { return find_mount(s, d) - s.mounts.data(); };
  EXPECT_LT(pos("/workdir"), pos("/workdir/inputs"));
  EXPECT_LT(pos("/dev"), pos("/dev/pts"));
  EXPECT_LT(pos("/dev"), pos("/dev/shm"));
  ASSERT_NE(find_mount(s, "/proc"), nullptr);
  EXPECT_EQ(find_mount(s, "/dev")->type, "tmpfs");
  EXPECT_EQ(find_mount(s, "/dev/pts")->type, "devpts");
  EXPECT_EQ(find_mount(s, "/tmp"), nullptr);  // not declared writable
  EXPECT_EQ(find_mount(s, "/sys"), nullptr);
  for (const auto& m : s.mounts) {
    EXPECT_TRUE(has(m.options, "nosuid")) << m.destination;
  }

  ASSERT_TRUE(s.linux_);
  std::vector<std::string> ns;
  for (const auto& n : s.linux_->namespaces) {
    ns.push_back(n.type);
    EXPECT_TRUE(n.path.empty());
  }
  std::sort(ns.begin(), ns.end());
  EXPECT_EQ(ns, (std::vector<std::string>{"cgroup", "ipc", "mount", "network", "pid", "uts"}));
  // runc's list, and what would identify the host (issue 21, item 12)
  std::vector<std::string> masked = default_masked_paths();
  masked.push_back("/proc/cmdline");
  masked.push_back("/proc/sys/kernel/random/boot_id");
  EXPECT_EQ(s.linux_->masked_paths, masked);
  // every pack has limits (manifest.hpp Resources defaults)
  ASSERT_TRUE(s.linux_->resources && s.linux_->resources->pids && s.linux_->resources->memory);
  EXPECT_EQ(s.linux_->resources->pids->limit, 128);
  EXPECT_EQ(*s.linux_->resources->memory->limit, 1LL << 30);
  EXPECT_EQ(*s.linux_->resources->memory->swap, 1LL << 30);
  EXPECT_EQ(s.linux_->readonly_paths, default_readonly_paths());
  EXPECT_TRUE(has(s.linux_->masked_paths, "/proc/kcore"));
  EXPECT_TRUE(has(s.linux_->readonly_paths, "/proc/sys"));
  EXPECT_FALSE(s.linux_->seccomp);  // the runtime attaches pack-baseline
  EXPECT_TRUE(s.linux_->devices.empty());

  EXPECT_EQ(s.annotations.at("org.soyaos.comet.seccomp-profile"), "pack-baseline");
  EXPECT_EQ(s.annotations.at("org.soyaos.comet.pack"), "weather-agent@1.4.2");
  EXPECT_FALSE(s.annotations.count("org.soyaos.comet.profile"));
  auto caps = capabilities_from_json(s.annotations.at("org.soyaos.comet.capabilities"));
  ASSERT_TRUE(caps.ok()) << caps.error().message();
  EXPECT_EQ(caps->egress.entries, seed().capabilities.egress.entries);
  EXPECT_EQ(caps->fs.write, seed().capabilities.fs.write);
  EXPECT_EQ(s.hostname, "weather-agent");
}

TEST(CapabilityCompile, IsDeterministic) {
  auto a = compile(seed(), inputs());
  auto b = compile(seed(), inputs());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(oci::to_json(*a), oci::to_json(*b));
}

TEST(CapabilityCompile, ConfigPassesOciValidation) {
  auto r = compile(seed(), inputs());
  ASSERT_TRUE(r.ok());
  auto st = oci::validate_spec(*r);
  EXPECT_TRUE(st.ok()) << st.error().message();
  // And survives the OCI parser.
  auto back = oci::parse_spec(oci::to_json(*r));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(oci::to_json(*back), oci::to_json(*r));
}

TEST(CapabilityCompile, ArgsOverrideTmpAndEnvPath) {
  Manifest m = seed();
  m.capabilities.fs.write.push_back("/tmp");
  m.runtime.env["PATH"] = "/opt/bin";
  m.profile = "strict";
  CompileInputs in = inputs();
  in.args = std::vector<std::string>{"--city", "Tromsø"};
  in.uid = 0;
  in.gid = 0;
  auto r = compile(m, in);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->process->args,
            (std::vector<std::string>{"/usr/bin/python3", "agent.py", "--city", "Tromsø"}));
  EXPECT_EQ(r->process->env, (std::vector<std::string>{"PYTHONDONTWRITEBYTECODE=1", "HOME=/workdir",
                                                       "LANG=C.UTF-8", "PATH=/opt/bin"}));
  const oci::Mount* tmp = find_mount(*r, "/tmp");
  ASSERT_NE(tmp, nullptr);
  EXPECT_EQ(tmp->type, "tmpfs");
  EXPECT_TRUE(has(tmp->options, "noexec"));
  EXPECT_EQ(r->annotations.at("org.soyaos.comet.profile"), "strict");
  EXPECT_EQ(r->process->user.uid, 0u);
  // A host dir for /tmp wins over the tmpfs.
  in.host_dirs["/tmp"] = "/run/tmp";
  r = compile(m, in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(find_mount(*r, "/tmp")->type, "bind");
  EXPECT_EQ(find_mount(*r, "/tmp")->source, "/run/tmp");
  // Read entries without a host dir mount nothing.
  in.host_dirs.erase("/workdir/inputs");
  r = compile(m, in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(find_mount(*r, "/workdir/inputs"), nullptr);
}

TEST(CapabilityCompile, Errors) {
  CompileInputs in = inputs();
  in.host_dirs.erase("/workdir/out");
  EXPECT_EQ(compile_error(seed(), in),
            "compile: capabilities.fs.write[0] /workdir/out has no host directory to write to "
            "(give one, e.g. pack run --output)");
  in = inputs();
  in.host_dirs["/workdir/secret"] = "/home/ada/.ssh";
  EXPECT_EQ(compile_error(seed(), in),
            "compile: a host dir is given for /workdir/secret, which capabilities.fs does not "
            "declare");
  in = inputs();
  in.host_dirs["/workdir"] = "/elsewhere";
  EXPECT_EQ(compile_error(seed(), in), "compile: /workdir is the pack dir and takes no host dir");
  in = inputs();
  in.host_dirs["/workdir/out"] = "relative/out";
  EXPECT_EQ(compile_error(seed(), in),
            "compile: the host dir for /workdir/out must be an absolute host path, got "
            "\"relative/out\"");
  in = inputs();
  in.rootfs = "rootfs";
  EXPECT_EQ(compile_error(seed(), in),
            "compile: rootfs must be an absolute host path, got \"rootfs\"");
  in = inputs();
  in.pack_dir = "";
  EXPECT_EQ(compile_error(seed(), in), "compile: pack dir must be an absolute host path, got \"\"");
  // An invalid manifest is refused with validate()'s error.
  Manifest m = seed();
  m.tools.push_back(Tool{"post", ToolKind::http_post, "https://api.openai.com/x", "", ""});
  EXPECT_EQ(compile_error(m, inputs()),
            "soyapack.yaml:10:3: tools[1].kind: capabilities.determinism_tier is read-only but "
            "tools.post uses builtin.http_post, which has side effects");
}

// --- goldens --------------------------------------------------------------------

namespace {

CompileInputs inputs_from(const json& j) {
  CompileInputs in;
  in.rootfs = j.at("rootfs");
  in.pack_dir = j.at("pack_dir");
  if (j.contains("host_dirs"))
    in.host_dirs = j["host_dirs"].get<std::map<std::string, std::string>>();
  if (j.contains("args")) in.args = j["args"].get<std::vector<std::string>>();
  if (j.contains("uid")) in.uid = j["uid"];
  if (j.contains("gid")) in.gid = j["gid"];
  return in;
}

}  // namespace

TEST(CapabilityCompile, Goldens) {
  const bool update = comet::switches::update_golden();
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(kGolden)) {
    if (e.is_directory()) cases.push_back(e.path());
  }
  std::sort(cases.begin(), cases.end());
  ASSERT_GE(cases.size(), 3u);
  for (const auto& dir : cases) {
    SCOPED_TRACE(dir.filename().string());
    auto m = load_manifest(slurp(dir / "soyapack.yaml"));
    ASSERT_TRUE(m.ok()) << m.error().message();
    auto spec = compile(*m, inputs_from(json::parse(slurp(dir / "inputs.json"))));
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    auto st = oci::validate_spec(*spec);
    EXPECT_TRUE(st.ok()) << st.error().message();
    json got = json::parse(oci::to_json(*spec));
    if (update) std::ofstream(dir / "config.json") << got.dump(2) << "\n";
    ASSERT_TRUE(fs::exists(dir / "config.json")) << "run with COMET_UPDATE_GOLDEN=1";
    json want = json::parse(slurp(dir / "config.json"));
    EXPECT_EQ(got, want) << "diff (want -> got): " << json::diff(want, got).dump(2);
  }
}
