// The runtime side of `sandbox`: config file search and merge order, errors
// with file:line:col, the workspace-only-adds property over real files, the
// invoking user (sudo), and the host facts. Files live in a temp dir; no
// root needed.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "comet/sandbox/sandbox_config.hpp"

#include "support/tempdir.hpp"

namespace fs = std::filesystem;
using namespace comet;
using namespace comet::runtime;
namespace cap = comet::capability;

namespace {

using comet::test::TempDir;

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

struct Fixture {
  TempDir dir;
  Invoker who;
  cap::ResolveContext ctx;
  ConfigPaths paths;
  explicit Fixture(const Environ& extra = {}) {
    who.uid = 1000;
    who.gid = 1000;
    who.name = "ada";
    who.home = dir.path() + "/home";
    fs::create_directories(dir.path() + "/home/.config/comet");
    fs::create_directories(dir.path() + "/ws/.comet");
    Environ env = extra;
    env["COMET_SANDBOX_GLOBAL_CONFIG"] = dir.path() + "/etc/sandbox.yaml";
    ctx = resolve_context(who, dir.path() + "/ws", env);
    paths = config_paths(ctx, env);
  }
};

}  // namespace

TEST(SandboxConfig, SearchPathsAndOverride) {
  Invoker who;
  who.uid = 1000;
  who.home = "/home/ada";
  auto ctx = resolve_context(who, "/w",
                             {{"XDG_CONFIG_HOME", "/cfg"}, {"XDG_RUNTIME_DIR", "/run/user/1000"}});
  EXPECT_EQ(ctx.config_home, "/cfg");
  EXPECT_EQ(ctx.runtime_dir, "/run/user/1000");
  EXPECT_EQ(ctx.tmp, "/tmp");
  auto p = config_paths(ctx, {});
  EXPECT_EQ(p.global, "/etc/comet/sandbox.yaml");
  EXPECT_EQ(p.user, "/cfg/comet/sandbox.yaml");
  EXPECT_EQ(p.workspace, "/w/.comet/sandbox.yaml");
  p = config_paths(ctx, {{"COMET_SANDBOX_GLOBAL_CONFIG", "/t/g.yaml"}});
  EXPECT_EQ(p.global, "/t/g.yaml");
  // Default config home; a relative XDG_CONFIG_HOME is ignored.
  ctx = resolve_context(who, "/w", {{"XDG_CONFIG_HOME", "rel"}});
  EXPECT_EQ(ctx.config_home, "/home/ada/.config");
  // Under sudo the user's dirs, whatever the environment says.
  who.via_sudo = true;
  ctx = resolve_context(who, "/w",
                        {{"XDG_CONFIG_HOME", "/root/.config"}, {"XDG_RUNTIME_DIR", "/run/user/0"}});
  EXPECT_EQ(ctx.config_home, "/home/ada/.config");
  EXPECT_NE(ctx.runtime_dir, "/run/user/0");
}

TEST(SandboxConfig, InvokingUser) {
  auto w = invoking_user({{"HOME", "/somewhere"}});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->uid, ::getuid());
  EXPECT_EQ(w->gid, ::getgid());
  EXPECT_FALSE(w->via_sudo);
  EXPECT_EQ(w->home, "/somewhere");
  auto s = invoking_user({{"SUDO_UID", "1000"}, {"SUDO_GID", "1001"}, {"HOME", "/root"}});
  ASSERT_TRUE(s.ok());
  if (::getuid() == 0) {
    EXPECT_TRUE(s->via_sudo);
    EXPECT_EQ(s->uid, 1000u);
    EXPECT_EQ(s->gid, 1001u);
    EXPECT_NE(s->home, "/root");  // the passwd home of uid 1000, never root's
    auto bad = invoking_user({{"SUDO_UID", "12x"}});
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().message(), "SUDO_UID: expected a number, got \"12x\"");
  } else {
    EXPECT_FALSE(s->via_sudo);  // SUDO_UID means nothing unless we are root
    EXPECT_EQ(s->uid, ::getuid());
  }
  Invoker su;
  su.via_sudo = true;
  su.home = "/home/ada";
  su.name = "ada";
  auto env = workload_env({{"HOME", "/root"}, {"USER", "root"}, {"TERM", "xterm"}}, su);
  EXPECT_TRUE(has(env, "HOME=/home/ada"));
  EXPECT_TRUE(has(env, "USER=ada"));
  EXPECT_TRUE(has(env, "LOGNAME=ada"));
  EXPECT_TRUE(has(env, "TERM=xterm"));
}

TEST(SandboxConfig, LoadsInOrderAndMerges) {
  Fixture s;
  auto none = load_sandbox_config(s.paths);
  ASSERT_TRUE(none.ok()) << none.error().message();
  ASSERT_EQ(none->files.size(), 3u);
  EXPECT_EQ(none->files[0].role, "global");
  EXPECT_EQ(none->files[1].role, "user");
  EXPECT_EQ(none->files[2].role, "workspace");
  for (const auto& f : none->files) EXPECT_FALSE(f.loaded);
  EXPECT_EQ(none->set.default_profile, "workspace");

  s.dir.put("etc/sandbox.yaml", "default: strict\nprofiles:\n  ci: {extends: strict}\n");
  s.dir.put("home/.config/comet/sandbox.yaml",
            "default: ci\nprofiles:\n  mine: {extends: workspace}\n");
  s.dir.put("ws/.comet/sandbox.yaml", "profiles:\n  docs: {extends: read-only}\n");
  auto all = load_sandbox_config(s.paths);
  ASSERT_TRUE(all.ok()) << all.error().message();
  for (const auto& f : all->files) EXPECT_TRUE(f.loaded) << f.path;
  EXPECT_EQ(all->set.default_profile, "ci");  // the later global file wins
  EXPECT_EQ(all->set.custom.at("ci").file, s.paths.global);
  EXPECT_EQ(all->set.custom.at("mine").file, s.paths.user);
  EXPECT_TRUE(all->set.custom.at("docs").from_workspace);
  // The user file cannot redefine the administrator's profile.
  s.dir.put("home/.config/comet/sandbox.yaml", "profiles:\n  ci: {extends: devbox}\n");
  auto clash = load_sandbox_config(s.paths);
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.error().message(),
            s.paths.user + ":2:3: profiles.ci: profile \"ci\" is already defined at " +
                s.paths.global + ":3:3");
}

TEST(SandboxConfig, ErrorsNameFileLineColumn) {
  Fixture s;
  s.dir.put("ws/.comet/sandbox.yaml", "profiles:\n  x:\n    extends: strict\n    writes: [/a]\n");
  auto r = load_sandbox_config(s.paths);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(),
            s.paths.workspace + ":4:5: profiles.x.writes: unknown field (did you mean \"write\"?)");
  s.dir.put("ws/.comet/sandbox.yaml", "");
  s.dir.put("etc/sandbox.yaml", "deny: [relative]\n");
  r = load_sandbox_config(s.paths);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(),
            s.paths.global +
                ":1:8: deny[0]: expected an absolute path or one starting with ~, {workspace} or "
                "{tmp}, got \"relative\"");
  // Unreadable or not a file: an error, never "no config".
  fs::remove(s.paths.global);
  fs::create_directories(s.paths.global);
  r = load_sandbox_config(s.paths);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "sandbox config " + s.paths.global + ": not a regular file");
}

// The workspace file, read from disk, cannot weaken a global custom
// profile: each attempt is refused, or leaves the global profile as strict.
TEST(SandboxConfig, WorkspaceFileCannotWeakenLoadedGlobalProfile) {
  Fixture s;
  s.dir.put("etc/sandbox.yaml",
            "default: locked\nprofiles:\n  locked:\n    extends: strict\n    deny: "
            "[\"{workspace}/secrets\"]\n");
  auto base = load_sandbox_config(s.paths);
  ASSERT_TRUE(base.ok()) << base.error().message();
  auto before = cap::resolve(base->set, "locked", s.ctx);
  ASSERT_TRUE(before.ok());
  const std::vector<std::string> attempts = {
      "profiles:\n  locked: {extends: devbox}\n",
      "default: devbox\n",
      "profiles:\n  locked:\n    extends: strict\n    network: open\n",
      "floor:\n  disable: [sudo]\n",
      "deny: []\nprofiles:\n  other: {extends: devbox, write: [/]}\n",
      "hooks: [\"{workspace}/h\"]\nruntime_sockets: [/srv/s.sock]\n",
      "unix_sockets: [/srv/db.sock]\n",
      "profiles:\n  big: {extends: strict, limits: {memory: 64Gi}}\n",
      "protect: [\"{workspace}/Makefile\"]\nprofiles:\n  small: {extends: strict, limits: {pids: "
      "64}}\n",
  };
  int refused = 0;
  for (const auto& text : attempts) {
    SCOPED_TRACE(text);
    s.dir.put("ws/.comet/sandbox.yaml", text);
    auto with = load_sandbox_config(s.paths);
    if (!with.ok()) {
      ++refused;
      EXPECT_NE(with.error().message().find(s.paths.workspace + ":"), std::string::npos)
          << with.error().message();
      continue;
    }
    EXPECT_EQ(with->set.default_profile, "locked");
    auto after = cap::resolve(with->set, "", s.ctx);
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(after->name, "locked");
    EXPECT_EQ(after->write, before->write);
    EXPECT_EQ(after->read, before->read);
    EXPECT_TRUE(after->network_restricted);
    for (const auto& d : before->deny) EXPECT_TRUE(has(after->deny, d)) << d;
    for (const auto& p : before->protect) EXPECT_TRUE(has(after->protect, p)) << p;
    EXPECT_EQ(after->unix_sockets, before->unix_sockets);
    EXPECT_EQ(after->limits.pids, before->limits.pids);
    EXPECT_EQ(after->limits.memory, before->limits.memory);
  }
  // the devbox profile `other` too, since red team round 11
  EXPECT_EQ(refused, 7);
}

TEST(SandboxConfig, HostFacts) {
  TempDir d;
  const std::string& t = d.path();
  d.put("f", "x");
  fs::create_directories(t + "/dir/sub");
  fs::create_symlink(t + "/dir", t + "/link");
  auto f = host_path(t + "/f");
  EXPECT_EQ(f.kind, cap::HostKind::file);
  EXPECT_FALSE(f.symlink);
  auto l = host_path(t + "/link");
  EXPECT_EQ(l.kind, cap::HostKind::dir);
  EXPECT_TRUE(l.symlink);
  EXPECT_EQ(l.real, fs::canonical(t + "/dir").string());
  // A missing path under a symlink resolves through it.
  auto m = host_path(t + "/link/sub/none/deeper");
  EXPECT_EQ(m.kind, cap::HostKind::missing);
  EXPECT_EQ(m.real, fs::canonical(t + "/dir/sub").string() + "/none/deeper");
  // A socket.
  int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  struct sockaddr_un a = {};
  a.sun_family = AF_UNIX;
  std::string sp = t + "/s.sock";
  ASSERT_LT(sp.size(), sizeof a.sun_path);
  std::memcpy(a.sun_path, sp.c_str(), sp.size());
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(host_path(sp).kind, cap::HostKind::socket);
  ::close(s);
  // One plan's HostPaths: the same facts as host_path() for each, the
  // walked resolution (relative and ".." links, a link to a link) included,
  // and a resolved prefix is not kept past a change of the tree it names.
  fs::create_directories(t + "/a/b");
  fs::create_symlink("../a/b", t + "/dir/rel");
  fs::create_symlink(t + "/link", t + "/link2");
  fs::create_symlink(t + "/gone/x", t + "/dangling");
  HostPaths facts;
  for (const std::string& p :
       {t + "/f", t + "/link", t + "/link2/sub", t + "/dir/rel", t + "/dir/rel/../b/./",
        t + "/link/sub/none/deeper", t + "/dangling", t + "/dangling/more", t + "/none",
        t + "/link2/none", t + "/f/under-a-file"}) {
    auto one = host_path(p);
    auto many = facts.get(p);
    EXPECT_EQ(one.real, many.real) << p;
    EXPECT_EQ(one.kind, many.kind) << p;
    EXPECT_EQ(one.symlink, many.symlink) << p;
    EXPECT_EQ(one.links, many.links) << p;
    std::error_code ec;
    if (fs::exists(p, ec)) {
      EXPECT_EQ(many.real, fs::canonical(p).string()) << p;  // realpath(3)
    }
  }
  EXPECT_EQ(facts.get(t + "/dir/rel").real, fs::canonical(t + "/a/b").string());
  // "/" has entries, symlinks carry their targets.
  auto top = host_top_level();
  EXPECT_FALSE(top.empty());
  bool usr = false;
  for (const auto& e : top) usr |= e.name == "usr" && e.kind == cap::HostKind::dir;
  EXPECT_TRUE(usr);
}

// Protect and deny entries with a `*`: expanded up to the last component
// holding one, the rest appended (there or not) to directories; dot-names
// match, . and .. do not.
TEST(SandboxConfig, HostGlob) {
  TempDir d;
  const std::string& t = d.path();
  fs::create_directories(t + "/.git/modules/lib/hooks");
  fs::create_directories(t + "/.git/modules/.hidden");
  d.put(".git/modules/file", "x");
  d.put("etc/ssh_host_rsa_key", "k");
  d.put("etc/ssh_host_rsa_key.pub", "k");
  d.put("etc/ssh_host_ed25519_key", "k");
  EXPECT_EQ(
      host_glob(t + "/.git/modules/*/hooks"),
      (std::vector<std::string>{t + "/.git/modules/.hidden/hooks", t + "/.git/modules/lib/hooks"}));
  EXPECT_EQ(
      host_glob(t + "/etc/ssh_host_*_key"),
      (std::vector<std::string>{t + "/etc/ssh_host_ed25519_key", t + "/etc/ssh_host_rsa_key"}));
  EXPECT_TRUE(host_glob(t + "/.git/worktrees/*/gitdir").empty());
  EXPECT_TRUE(host_glob(t + "/no-star").empty());
}
