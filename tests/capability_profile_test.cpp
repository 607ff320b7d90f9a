// Sandbox profiles: built-ins, custom profiles, merging, fail-closed
// resolution, and the proof that a workspace file cannot weaken anything.
#include <gtest/gtest.h>

#include <map>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "comet/capability/profile.hpp"

#include "support/resolve_context.hpp"

namespace fs = std::filesystem;
using comet::Result;
using namespace comet::capability;

namespace {

const fs::path kDir = fs::path(COMET_TEST_DATA) / "capability" / "profiles";

ConfigDoc doc(const std::string& file, const std::string& shown) {
  std::ifstream in(kDir / file);
  std::stringstream s;
  s << in.rdbuf();
  return ConfigDoc{s.str(), shown};
}

ConfigDoc etc() {
  return doc("etc-sandbox.yaml", "/etc/comet/sandbox.yaml");
}
ConfigDoc user() {
  return doc("user-sandbox.yaml", "/home/ada/.config/comet/sandbox.yaml");
}

ResolveContext ctx() {
  return comet::test::ada_context();
}

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

ResolvedProfile must(const Result<ResolvedProfile>& r) {
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r.ok() ? *r : ResolvedProfile{};
}

std::string merge_error(const std::vector<ConfigDoc>& g, const std::optional<ConfigDoc>& w) {
  auto r = merge(g, w);
  return r.ok() ? "OK" : r.error().message();
}

}  // namespace

TEST(CapabilityProfile, Builtins) {
  EXPECT_EQ(builtin_profile_names(),
            (std::vector<std::string_view>{"workspace", "devbox", "read-only", "strict", "off"}));
  auto w = must(resolve("", ctx()));  // the default
  EXPECT_EQ(w.name, "workspace");
  EXPECT_EQ(w.base, "workspace");
  EXPECT_TRUE(w.sandboxed);
  EXPECT_EQ(w.read, (std::vector<std::string>{"/"}));
  EXPECT_EQ(w.write, (std::vector<std::string>{"/home/ada/src/app", "/home/ada/.comet", "/tmp"}));
  EXPECT_FALSE(w.network_restricted);
  // Container-runtime sockets are hidden in every sandboxed profile but
  // devbox, network open or not (issue 7).
  EXPECT_TRUE(w.block_runtime_sockets);
  EXPECT_TRUE(has(w.runtime_sockets, "/run/docker.sock"));
  EXPECT_TRUE(has(w.runtime_sockets, "/run/buildkit/buildkitd.sock"));
  EXPECT_TRUE(has(w.runtime_socket_dirs, "/run/containerd"));
  // Hook and config sources are never writable from inside.
  for (const char* p : {"/home/ada/.comet/hooks", "/home/ada/.config/comet", "/etc/comet",
                        "/home/ada/src/app/.comet"}) {
    EXPECT_TRUE(has(w.protect, p)) << p;
  }

  auto d = must(resolve("devbox", ctx()));
  EXPECT_EQ(d.write, (std::vector<std::string>{"/"}));
  EXPECT_EQ(d.protect, (std::vector<std::string>{"/data"}));  // and no hook protection
  EXPECT_FALSE(d.network_restricted);
  EXPECT_FALSE(d.block_runtime_sockets);
  EXPECT_TRUE(d.runtime_sockets.empty());

  auto ro = must(resolve("read-only", ctx()));
  EXPECT_EQ(ro.write, (std::vector<std::string>{"/home/ada/.comet", "/tmp"}));
  EXPECT_TRUE(ro.network_restricted);
  EXPECT_TRUE(ro.block_runtime_sockets);
  EXPECT_FALSE(
      has(ro.deny, "/run/docker.sock"));  // sockets have their own list (profile_compile.hpp)
  EXPECT_TRUE(has(ro.runtime_sockets, "/run/docker.sock"));
  EXPECT_TRUE(has(ro.runtime_sockets, "/run/containerd/containerd.sock"));
  EXPECT_TRUE(has(ro.runtime_sockets, "/run/podman/podman.sock"));
  EXPECT_TRUE(has(ro.runtime_sockets, "/var/run/crio/crio.sock"));
  EXPECT_TRUE(has(ro.runtime_sockets, "/home/ada/.docker/run/docker.sock"));
  for (const char* dir :
       {"/run/containerd", "/run/podman", "/run/crio", "/run/buildkit", "/run/docker"})
    EXPECT_TRUE(has(ro.runtime_socket_dirs, dir)) << dir;

  auto s = must(resolve("strict", ctx()));
  EXPECT_EQ(s.write,
            (std::vector<std::string>{"/home/ada/src/app", "/home/ada/.comet/sessions", "/tmp"}));
  EXPECT_FALSE(has(s.read, "/"));
  EXPECT_FALSE(has(s.read, "/home/ada"));
  EXPECT_TRUE(has(s.read, "/usr"));
  EXPECT_TRUE(has(s.read, "/etc"));
  EXPECT_TRUE(has(s.read, "/home/ada/src/app"));
  EXPECT_TRUE(s.network_restricted);

  auto off = must(resolve("off", ctx()));
  EXPECT_FALSE(off.sandboxed);
  EXPECT_FALSE(off.network_restricted);
  EXPECT_TRUE(off.deny.empty());
}

TEST(CapabilityProfile, FailClosed) {
  auto r = resolve("stict", ctx());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "unknown sandbox profile \"stict\" (did you mean \"strict\"?)");
  r = resolve("nope", ctx());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(),
            "unknown sandbox profile \"nope\" (known: workspace, devbox, read-only, strict, off)");
  ResolveContext c = ctx();
  c.workspace.clear();
  r = resolve("workspace", c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(),
            "profile workspace: \"{workspace}\" needs the workspace directory, which is not known");
  EXPECT_TRUE(resolve("read-only", c).ok());  // names no workspace
  c = ctx();
  c.home = "relative";
  r = resolve("read-only", c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(),
            "profile read-only: the home directory must be absolute, got \"relative\"");
  // The user runtime dir is optional; when known, its sockets are denied too.
  c = ctx();
  c.runtime_dir = "/run/user/1000";
  auto s = must(resolve("strict", c));
  EXPECT_TRUE(has(s.runtime_sockets, "/run/user/1000/podman/podman.sock"));
  EXPECT_TRUE(has(s.runtime_sockets, "/run/user/1000/docker.sock"));
  EXPECT_TRUE(has(s.runtime_socket_dirs, "/run/user/1000/podman"));
  EXPECT_FALSE(has(must(resolve("strict", ctx())).runtime_sockets, "/run/user/1000/docker.sock"));
}

TEST(CapabilityProfile, RuntimeSocketsAndHooksFromConfig) {
  auto set =
      merge({ConfigDoc{"runtime_sockets: [/srv/ci/dockerd.sock, \"{runtime}/nerd.sock\"]\n"
                       "hooks: [/etc/comet/hooks.d, ~/.comet/agent-hooks]\n",
                       "/etc/comet/sandbox.yaml"}});
  ASSERT_TRUE(set.ok()) << set.error().message();
  ResolveContext c = ctx();
  c.runtime_dir = "/run/user/1000";
  auto w = must(resolve(*set, "workspace", c));
  EXPECT_TRUE(has(w.runtime_sockets, "/srv/ci/dockerd.sock"));
  EXPECT_TRUE(has(w.runtime_sockets, "/run/user/1000/nerd.sock"));
  EXPECT_TRUE(has(w.protect, "/etc/comet/hooks.d"));
  EXPECT_TRUE(has(w.protect, "/home/ada/.comet/agent-hooks"));
  // {runtime} unknown: nothing there to hide, not an error.
  auto nr = must(resolve(*set, "workspace", ctx()));
  EXPECT_TRUE(has(nr.runtime_sockets, "/srv/ci/dockerd.sock"));
  // devbox neither hides sockets nor protects hooks.
  auto d = must(resolve(*set, "devbox", c));
  EXPECT_FALSE(has(d.runtime_sockets, "/srv/ci/dockerd.sock"));
  EXPECT_FALSE(has(d.protect, "/etc/comet/hooks.d"));
  // {runtime} is only for runtime_sockets.
  EXPECT_EQ(merge_error({ConfigDoc{"hooks: [\"{runtime}/h\"]\n", "s.yaml"}}, std::nullopt),
            "s.yaml:1:9: hooks[0]: expected an absolute path or one starting with ~, {workspace} "
            "or {tmp}, got \"{runtime}/h\"");
  EXPECT_EQ(merge_error({ConfigDoc{"runtime_sockets: [run/x.sock]\n", "s.yaml"}}, std::nullopt),
            "s.yaml:1:19: runtime_sockets[0]: expected an absolute path or one starting with ~, "
            "{workspace}, {tmp} or {runtime}, got \"run/x.sock\"");
  EXPECT_EQ(merge_error({ConfigDoc{"floor: {add: [{id: x}]}\n", "s.yaml"}}, std::nullopt),
            "s.yaml:1:15: floor.add[0]: missing required field \"command\"");
  EXPECT_EQ(merge_error({ConfigDoc{"floor: {remove: [sudo]}\n", "s.yaml"}}, std::nullopt),
            "s.yaml:1:9: floor.remove: unknown field (known: add, disable)");
}

TEST(CapabilityProfile, CustomProfilesExtendABuiltin) {
  auto set = merge({etc()});
  ASSERT_TRUE(set.ok()) << set.error().message();
  EXPECT_EQ(set->default_profile, "strict");
  auto ci = must(resolve(*set, "ci", ctx()));
  EXPECT_EQ(ci.base, "strict");
  EXPECT_TRUE(has(ci.read, "/opt/sdk"));
  EXPECT_TRUE(has(ci.read, "/usr"));
  EXPECT_TRUE(has(ci.write, "/home/ada/src/app/build"));
  EXPECT_TRUE(has(ci.deny, "/home/ada/.netrc"));
  EXPECT_TRUE(has(ci.deny, "/home/ada/.ssh"));  // the file's global deny
  EXPECT_FALSE(ci.network_restricted);          // overridden
  EXPECT_TRUE(ci.block_runtime_sockets);        // open network or not
  auto audit = must(resolve(*set, "audit", ctx()));
  EXPECT_TRUE(has(audit.protect, "/home/ada/src/app/.git"));
  EXPECT_TRUE(audit.network_restricted);
  // The set's default, and global deny on built-ins too (not on off).
  auto def = must(resolve(*set, "", ctx()));
  EXPECT_EQ(def.name, "strict");
  EXPECT_TRUE(has(def.deny, "/home/ada/.aws"));
  EXPECT_TRUE(must(resolve(*set, "off", ctx())).deny.empty());
  EXPECT_EQ(set->custom.at("ci").file, "/etc/comet/sandbox.yaml");
  EXPECT_EQ(set->custom.at("ci").loc.line, 7);
}

TEST(CapabilityProfile, GlobalFilesMerge) {
  auto set = merge({etc(), user()});
  ASSERT_TRUE(set.ok()) << set.error().message();
  EXPECT_EQ(set->default_profile, "workspace");  // the later global file's
  EXPECT_TRUE(set->custom.count("ci"));
  EXPECT_TRUE(set->custom.count("scratch"));
  EXPECT_TRUE(merge({}).ok());
  EXPECT_TRUE(merge({ConfigDoc{"", "empty.yaml"}, ConfigDoc{"# only a comment\n", "c.yaml"}}).ok());
  // A later global file cannot redefine an earlier one's profile either.
  EXPECT_EQ(merge_error({etc(), ConfigDoc{"profiles:\n  ci:\n    extends: devbox\n", "/u.yaml"}},
                        std::nullopt),
            "/u.yaml:2:3: profiles.ci: profile \"ci\" is already defined at "
            "/etc/comet/sandbox.yaml:7:3");
  EXPECT_EQ(merge_error({ConfigDoc{"default: nosuch\n", "/g.yaml"}}, std::nullopt),
            "/g.yaml:1:10: default: unknown sandbox profile \"nosuch\"");
}

TEST(CapabilityProfile, WorkspaceFileMayAdd) {
  auto set = merge({etc()}, doc("workspace-ok.yaml", ".comet/sandbox.yaml"));
  ASSERT_TRUE(set.ok()) << set.error().message();
  EXPECT_TRUE(set->custom.at("docs").from_workspace);
  auto docs = must(resolve(*set, "docs", ctx()));
  EXPECT_TRUE(has(docs.write, "/home/ada/src/app/site"));
  // Its deny applies to every profile, the global ones included.
  for (const char* p : {"ci", "audit", "strict", "workspace", "docs"}) {
    EXPECT_TRUE(has(must(resolve(*set, p, ctx())).deny, "/home/ada/src/app/secrets")) << p;
  }
}

TEST(CapabilityProfile, WorkspaceFileCannotRedefineOrWeaken) {
  EXPECT_EQ(merge_error({etc()}, doc("workspace-redefine.yaml", ".comet/sandbox.yaml")),
            ".comet/sandbox.yaml:2:3: profiles.ci: the workspace file cannot redefine profile "
            "\"ci\" (defined at /etc/comet/sandbox.yaml:7:3)");
  EXPECT_EQ(
      merge_error({etc()}, ConfigDoc{"profiles:\n  strict:\n    extends: devbox\n", "ws.yaml"}),
      "ws.yaml:2:3: profiles.strict: cannot redefine the built-in profile \"strict\"");
  EXPECT_EQ(merge_error({etc()}, ConfigDoc{"default: devbox\n", "ws.yaml"}),
            "ws.yaml:1:10: default: the workspace file cannot set the default profile");
  // The same redefinition is an error in a global file too, for built-ins.
  EXPECT_EQ(merge_error({ConfigDoc{"profiles:\n  off:\n    extends: workspace\n", "/g.yaml"}},
                        std::nullopt),
            "/g.yaml:2:3: profiles.off: cannot redefine the built-in profile \"off\"");
}

TEST(CapabilityProfile, ParseErrors) {
  auto e = [](const std::string& text) {
    return merge_error({ConfigDoc{text, "s.yaml"}}, std::nullopt);
  };
  EXPECT_EQ(e("profile:\n  x: {}\n"),
            "s.yaml:1:1: profile: unknown field (did you mean \"profiles\"?)");
  EXPECT_EQ(e("profiles:\n  x:\n    extends: strict\n    writes: [/a]\n"),
            "s.yaml:4:5: profiles.x.writes: unknown field (did you mean \"write\"?)");
  EXPECT_EQ(e("profiles:\n  x:\n    write: [/a]\n"),
            "s.yaml:3:5: profiles.x: missing required field \"extends\"");
  EXPECT_EQ(e("profiles:\n  x: {extends: off}\n"),
            "s.yaml:2:16: profiles.x.extends: cannot extend \"off\", which is no sandbox");
  EXPECT_EQ(e("profiles:\n  x: {extends: ci}\n"),
            "s.yaml:2:16: profiles.x.extends: expected a built-in profile (workspace, devbox, "
            "read-only, strict), got \"ci\"");
  EXPECT_EQ(e("profiles:\n  x: {extends: strict, network: closed}\n"),
            "s.yaml:2:33: profiles.x.network: expected restricted or open, got \"closed\"");
  EXPECT_EQ(e("profiles:\n  x: {extends: strict, write: [build]}\n"),
            "s.yaml:2:32: profiles.x.write[0]: expected an absolute path or one starting with ~, "
            "{workspace} or {tmp}, got \"build\"");
  EXPECT_EQ(e("profiles:\n  X_Y: {extends: strict}\n"),
            "s.yaml:2:3: profiles.X_Y: expected 1 to 63 of [a-z0-9-], got \"X_Y\"");
  EXPECT_EQ(e("deny: ~/.ssh\n"), "s.yaml:1:7: deny: expected a list, got \"~/.ssh\"");
  EXPECT_EQ(e("profiles:\n  x: {extends: strict}\n  x: {extends: strict}\n"),
            "s.yaml:3:3: profiles.x: duplicate field (first at line 2)");
  EXPECT_EQ(
      e("profiles: [\n"),
      "s.yaml:2:1: invalid YAML: did not find expected node content while parsing a flow node");
  EXPECT_EQ(e("- a\n"), "s.yaml:1:1: expected a mapping, got a list");
}

// The security property: whatever a workspace file says, either merge
// refuses it, or every profile that existed without it resolves to
// something at least as strict (no new write or read, no lost deny or
// protect, network not opened) and the default is unchanged.
TEST(CapabilityProfile, ProofWorkspaceCannotWeakenAnyExistingProfile) {
  const std::vector<std::string> attempts = {
      "",
      "profiles:\n  ci: {extends: devbox}\n",
      "profiles:\n  ci: {extends: strict, deny: [/x]}\n",
      "profiles:\n  audit: {extends: read-only, network: open}\n",
      "profiles:\n  strict: {extends: strict}\n",
      "profiles:\n  workspace: {extends: devbox}\n",
      "profiles:\n  devbox: {extends: devbox}\n",
      "profiles:\n  off: {extends: workspace}\n",
      "profiles:\n  read-only: {extends: read-only, write: [/]}\n",
      "default: devbox\n",
      "default: off\n",
      "deny: [\"{workspace}/secrets\", ~/.gnupg]\n",
      "profiles:\n  mine: {extends: devbox, write: [/], network: open}\n",
      "profiles:\n  mine: {extends: strict}\n  ci: {extends: strict}\n",
      "deny: []\nprofiles: {}\n",
      "profiles:\n  ci:\n    extends: strict\n  ci2: {extends: devbox}\n",
      "profiles:\n  Ci: {extends: devbox}\n",
      "profiles:\n  \"ci\": {extends: devbox}\n",
      "? ci\n: {extends: devbox}\n",
      "profiles: {ci: {extends: devbox}}\n",
      "profiles:\n  &a ci: {extends: devbox}\n",
      "deny: [/a]\n---\ndefault: devbox\n",
      "protect: [/x]\n",
      "runtime_sockets: [/srv/x.sock]\nhooks: [\"{workspace}/hooks\"]\n",
      "floor:\n  add: [{id: npm-publish, command: npm publish}]\n",
      "floor:\n  disable: [sudo, rm-rf-outside-workspace]\n",
      "hooks: []\nruntime_sockets: []\n",
      // issue 22: the unix-socket allowlist is the global files' alone, and
      // a workspace profile may only lower limits.
      "unix_sockets: [/run/dbus/system_bus_socket]\n",
      "unix_sockets: []\n",
      "profiles:\n  mine: {extends: strict, unix_sockets: [/tmp/.X11-unix/X0]}\n",
      "profiles:\n  mine: {extends: workspace, limits: {pids: 4096}}\n",
      "profiles:\n  mine: {extends: strict, limits: {memory: 8Gi}}\n",
      "profiles:\n  mine: {extends: read-only, limits: {tmp: 2Gi}}\n",
      "profiles:\n  mine: {extends: workspace, limits: {pids: 64, memory: 512Mi, tmp: 64Mi}}\n",
      "protect: [\"{workspace}/Makefile\"]\n",
  };
  auto base = merge({etc(), user()});
  ASSERT_TRUE(base.ok());
  std::vector<std::string> names(builtin_profile_names().begin(), builtin_profile_names().end());
  for (const auto& [n, p] : base->custom) names.push_back(n);
  auto subset = [](const std::vector<std::string>& a, const std::vector<std::string>& b) {
    return std::all_of(a.begin(), a.end(), [&](const std::string& x) { return has(b, x); });
  };
  int accepted = 0;
  for (const auto& text : attempts) {
    SCOPED_TRACE(text);
    auto with = merge({etc(), user()}, ConfigDoc{text, ".comet/sandbox.yaml"});
    if (!with.ok()) continue;
    ++accepted;
    EXPECT_EQ(with->default_profile, base->default_profile);
    for (const auto& n : names) {
      SCOPED_TRACE(n);
      auto before = must(resolve(*base, n, ctx()));
      auto after = must(resolve(*with, n, ctx()));
      EXPECT_EQ(after.base, before.base);
      EXPECT_EQ(after.sandboxed, before.sandboxed);
      EXPECT_TRUE(subset(after.write, before.write));
      EXPECT_TRUE(subset(after.read, before.read));
      EXPECT_TRUE(subset(before.deny, after.deny));
      EXPECT_TRUE(subset(before.protect, after.protect));
      EXPECT_TRUE(subset(before.runtime_sockets, after.runtime_sockets));
      EXPECT_TRUE(subset(before.runtime_socket_dirs, after.runtime_socket_dirs));
      EXPECT_GE(after.block_runtime_sockets, before.block_runtime_sockets);
      EXPECT_GE(after.network_restricted, before.network_restricted);
      EXPECT_EQ(after.unix_socket_rule, before.unix_socket_rule);
      EXPECT_EQ(after.unix_sockets, before.unix_sockets);
      EXPECT_EQ(after.limits.pids, before.limits.pids);
      EXPECT_EQ(after.limits.memory, before.limits.memory);
      EXPECT_EQ(after.limits.tmp, before.limits.tmp);
    }
    // A profile the workspace file adds is no looser than what it extends.
    for (const auto& [n, p] : with->custom) {
      if (!p.from_workspace) continue;
      auto r = must(resolve(*with, n, ctx()));
      auto b = must(resolve(*with, p.extends, ctx()));
      EXPECT_EQ(r.unix_sockets, b.unix_sockets);
      for (auto [x, y] : {std::pair{r.limits.pids, b.limits.pids},
                          {r.limits.memory, b.limits.memory},
                          {r.limits.tmp, b.limits.tmp}})
        EXPECT_TRUE(y == 0 || (x > 0 && x <= y)) << n << ": " << x << " > " << y;
    }
    // The floor only grows: nothing the global files ask about stops asking.
    EXPECT_EQ(with->floor_disable, base->floor_disable);
    EXPECT_GE(with->floor.size(), base->floor.size());
  }
  EXPECT_GE(accepted, 4);  // the corpus exercises both outcomes
  EXPECT_LT(accepted, static_cast<int>(attempts.size()));
}

// Issue 22: what every sandboxed profile but devbox protects and denies.
TEST(CapabilityProfile, BuiltinProtectedPathsAndSecrets) {
  for (const char* name : {"workspace", "read-only", "strict"}) {
    SCOPED_TRACE(name);
    auto r = must(resolve(name, ctx()));
    for (const char* p : {"/home/ada/src/app/.git",
                          "/home/ada/src/app/.git/config",
                          "/home/ada/src/app/.git/hooks",
                          "/home/ada/src/app/.git/info",
                          "/home/ada/src/app/.git/modules/*/config",
                          "/home/ada/src/app/.git/modules/*/hooks",
                          "/home/ada/src/app/.git/worktrees/*/gitdir",
                          "/home/ada/src/app/.gitmodules",
                          "/home/ada/src/app/.gitattributes",
                          "/home/ada/src/app/.envrc",
                          "/home/ada/src/app/.vscode",
                          "/home/ada/src/app/.claude",
                          "/home/ada/.gitconfig",
                          "/home/ada/.config/git",
                          "/home/ada/.bashrc",
                          "/home/ada/.zshenv",
                          "/home/ada/.config/fish",
                          "/home/ada/.ssh",
                          "/home/ada/.claude.json",
                          "/home/ada/.comet/hooks",
                          "/home/ada/.config/comet"})
      EXPECT_TRUE(has(r.protect, p)) << p;
    // Names without a trailing "/" in the list are files (their placeholder).
    EXPECT_TRUE(has(r.protect_files, "/home/ada/src/app/.git/config"));
    EXPECT_TRUE(has(r.protect_files, "/home/ada/src/app/.gitmodules"));
    EXPECT_TRUE(has(r.protect_files, "/home/ada/.bashrc"));
    EXPECT_FALSE(has(r.protect_files, "/home/ada/src/app/.git/hooks"));
    EXPECT_FALSE(has(r.protect_files, "/home/ada/.ssh"));
    EXPECT_EQ(r.protect_unless_dir, (std::vector<std::string>{"/home/ada/src/app/.git"}));
    for (const char* p :
         {"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
          "/etc/sudoers.d", "/etc/ssh/ssh_host_*_key", "/etc/ssl/private", "/etc/security/opasswd",
          "/var/backups/shadow.bak", "/var/backups/gshadow.bak", "/root"})
      EXPECT_TRUE(has(r.deny, p)) << p;
    EXPECT_TRUE(r.unix_socket_rule);
    EXPECT_TRUE(r.unix_sockets.empty());  // built-in allowlists are empty
    EXPECT_EQ(r.limits.pids, 2048);
    EXPECT_EQ(r.limits.memory, 4LL << 30);
    EXPECT_EQ(r.limits.tmp, 1LL << 30);
  }
  auto d = must(resolve("devbox", ctx()));
  EXPECT_EQ(d.protect, (std::vector<std::string>{"/data"}));
  EXPECT_TRUE(d.deny.empty());
  EXPECT_FALSE(d.unix_socket_rule);
  EXPECT_EQ(d.limits.pids, 8192);
  EXPECT_EQ(d.limits.memory, 8LL << 30);
  EXPECT_EQ(d.limits.tmp, 0);
  auto off = must(resolve("off", ctx()));
  EXPECT_EQ(off.limits.pids, 0);
  // /root is denied unless the command runs as root.
  ResolveContext root = ctx();
  root.uid = 0;
  EXPECT_FALSE(has(must(resolve("workspace", root)).deny, "/root"));
  root.uid = 1000;
  EXPECT_TRUE(has(must(resolve("workspace", root)).deny, "/root"));
  root.workspace = "/root/src";
  EXPECT_FALSE(has(must(resolve("workspace", root)).deny, "/root"));
}

TEST(CapabilityProfile, ProtectUnixSocketsAndLimitsFromConfig) {
  const ConfigDoc g{
      "protect: [\"{workspace}/Makefile\"]\n"
      "unix_sockets: [/run/dbus/system_bus_socket, \"~/.x.sock\"]\n"
      "profiles:\n"
      "  small:\n"
      "    extends: strict\n"
      "    unix_sockets: [\"{runtime}/bus\"]\n"
      "    limits: {pids: 64, memory: 512Mi, tmp: 64Mi}\n",
      "/etc/comet/sandbox.yaml"};
  const ConfigDoc w{
      "protect: [\"{workspace}/Justfile\"]\nprofiles:\n"
      "  tiny: {extends: workspace, limits: {memory: 1Gi}}\n",
      "/home/ada/src/app/.comet/sandbox.yaml"};
  auto set = merge({g}, w);
  ASSERT_TRUE(set.ok()) << set.error().message();
  ResolveContext c = ctx();
  c.runtime_dir = "/run/user/1000";
  auto ws = must(resolve(*set, "workspace", c));
  EXPECT_TRUE(has(ws.protect, "/home/ada/src/app/Makefile"));
  EXPECT_TRUE(has(ws.protect, "/home/ada/src/app/Justfile"));
  EXPECT_EQ(ws.unix_sockets,
            (std::vector<std::string>{"/run/dbus/system_bus_socket", "/home/ada/.x.sock"}));
  auto small = must(resolve(*set, "small", c));
  EXPECT_EQ(small.unix_sockets,
            (std::vector<std::string>{"/run/dbus/system_bus_socket", "/home/ada/.x.sock",
                                      "/run/user/1000/bus"}));
  EXPECT_EQ(small.limits.pids, 64);
  EXPECT_EQ(small.limits.memory, 512LL << 20);
  EXPECT_EQ(small.limits.tmp, 64LL << 20);
  auto tiny = must(resolve(*set, "tiny", c));
  EXPECT_EQ(tiny.limits.pids, 2048);  // the base's, where not set
  EXPECT_EQ(tiny.limits.memory, 1LL << 30);
  auto dev = must(resolve(*set, "devbox", c));
  EXPECT_FALSE(has(dev.protect, "/home/ada/src/app/Makefile"));
  EXPECT_TRUE(dev.unix_sockets.empty());

  auto e = [](const std::string& text) {
    return merge_error({ConfigDoc{text, "s.yaml"}}, std::nullopt);
  };
  auto ew = [](const std::string& text) { return merge_error({}, ConfigDoc{text, "ws.yaml"}); };
  EXPECT_EQ(e("unix_sockets: [/run/docker.sock]\n"),
            "s.yaml:1:16: unix_sockets[0]: \"/run/docker.sock\" is a container-runtime socket: "
            "root on the host");
  EXPECT_EQ(e("profiles:\n  x: {extends: strict, unix_socket: [/a]}\n"),
            "s.yaml:2:24: profiles.x.unix_socket: unknown field (did you mean \"unix_sockets\"?)");
  EXPECT_EQ(e("unix_sockets: [dbus]\n"),
            "s.yaml:1:16: unix_sockets[0]: expected an absolute path or one starting with ~, "
            "{workspace}, {tmp} or {runtime}, got \"dbus\"");
  EXPECT_EQ(e("profiles:\n  x: {extends: strict, limits: {pids: 2}}\n"),
            "s.yaml:2:39: profiles.x.limits.pids: expected an integer 8..32768, got 2");
  EXPECT_EQ(e("profiles:\n  x: {extends: strict, limits: {memory: lots}}\n"),
            "s.yaml:2:41: profiles.x.limits.memory: expected a size of at least 16777216 bytes "
            "(bytes, or with a suffix k M G Ki Mi Gi), got \"lots\"");
  EXPECT_EQ(e("profiles:\n  x: {extends: strict, limits: {cpu: 1}}\n"),
            "s.yaml:2:33: profiles.x.limits.cpu: unknown field (known: pids, memory, tmp)");
  EXPECT_EQ(ew("unix_sockets: [/run/dbus/system_bus_socket]\n"),
            "ws.yaml:1:15: unix_sockets: only the global and user files can allow unix sockets");
  EXPECT_EQ(ew("profiles:\n  x:\n    extends: strict\n    unix_sockets: [/a.sock]\n"),
            "ws.yaml:4:19: unix_sockets: only the global and user files can allow unix sockets");
  EXPECT_EQ(ew("profiles:\n  x: {extends: strict, limits: {pids: 4096}}\n"),
            "ws.yaml:2:39: profiles.x.limits.pids: the workspace file can only lower a limit "
            "(strict: 2048), got 4096");
  EXPECT_EQ(ew("profiles:\n  x: {extends: workspace, limits: {tmp: 2Gi}}\n"),
            "ws.yaml:2:41: profiles.x.limits.tmp: the workspace file can only lower a limit "
            "(workspace: 1073741824), got 2147483648");
  // devbox has no /tmp limit to lower, and a workspace file cannot extend
  // it in any case (red team round 11)
  EXPECT_EQ(ew("profiles:\n  x: {extends: devbox, limits: {tmp: 2Gi}}\n"),
            "ws.yaml:2:16: profiles.x.extends: the workspace file cannot extend devbox, which "
            "protects nothing");
}

// The red team (2026-12): a workspace at or above the home directory is
// refused by the profiles that write {workspace}; .git is kept valid (HEAD
// protected, objects/ and refs/ pinned); the bare-repository names at the
// workspace root count only while .git is missing.
TEST(CapabilityProfile, HomeWorkspaceRefusedAndGitKeptValid) {
  for (const char* name : {"workspace", "strict"}) {
    SCOPED_TRACE(name);
    ResolveContext c = ctx();
    c.workspace = "/home/ada";
    auto r = resolve(name, c);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message(),
              "sandbox: the workspace /home/ada is the home directory: too much of what your "
              "shell and tools run lives there; use a project directory");
    c.workspace = "/home";
    r = resolve(name, c);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message(),
              "sandbox: the workspace /home holds the home directory /home/ada: too much of what "
              "your shell and tools run lives there; use a project directory");
    c.home = "/home/ada/";  // as written, normalised
    c.workspace = "/home/ada";
    EXPECT_FALSE(resolve(name, c).ok());
    // red team round 19: the home's configuration and data trees too
    for (const char* ws : {"/home/ada/.config", "/home/ada/.local/share/app", "/data/xdg/x"}) {
      c = ctx();
      c.config_home = "/data/xdg";
      c.workspace = ws;
      r = resolve(name, c);
      ASSERT_FALSE(r.ok()) << ws;
      EXPECT_NE(r.error().message().find("where the host's session and tools read"),
                std::string::npos)
          << r.error().message();
    }
    c = ctx();
    c.workspace = "/home/ada/configs.d";  // not hidden
    EXPECT_TRUE(resolve(name, c).ok());
    // red team round 20: any hidden directory of the home, and a workspace
    // that holds XDG_CONFIG_HOME
    for (const char* ws : {"/home/ada/.rustup", "/home/ada/.cache/pre-commit/repo1",
                           "/home/ada/.npm", "/home/ada/.configs-of-mine"}) {
      c = ctx();
      c.workspace = ws;
      r = resolve(name, c);
      ASSERT_FALSE(r.ok()) << ws;
      EXPECT_NE(r.error().message().find("a hidden directory of the home"), std::string::npos)
          << r.error().message();
    }
    c = ctx();
    c.config_home = "/data/proj/.xdg/config";
    c.workspace = "/data/proj";
    r = resolve(name, c);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message(),
              "sandbox: the workspace /data/proj holds /data/proj/.xdg/config, where the host's "
              "session and tools read their configuration and services; use a project directory");
  }
  // The custom profile extending one refuses it too.
  ResolveContext c = ctx();
  c.workspace = "/home/ada";
  auto set = merge({{"profiles:\n  ws2:\n    extends: workspace\n", "/etc/comet/sandbox.yaml"}});
  ASSERT_TRUE(set.ok());
  EXPECT_FALSE(resolve(*set, "ws2", c).ok());
  set = merge({{"profiles:\n  ro2:\n    extends: read-only\n    write: [\"{workspace}\"]\n",
                "/etc/comet/sandbox.yaml"}});
  ASSERT_TRUE(set.ok());
  EXPECT_FALSE(resolve(*set, "ro2", c).ok());
  // Not a profile that does not write the workspace, nor an explicit
  // `write: [~]` (the user's choice: the home names stay protected).
  EXPECT_TRUE(resolve("read-only", c).ok());
  set = merge({{"profiles:\n  home:\n    extends: read-only\n    write: [\"~\"]\n",
                "/etc/comet/sandbox.yaml"}});
  ASSERT_TRUE(set.ok());
  auto h = must(resolve(*set, "home", c));
  for (const char* p :
       {"/home/ada/.bash_aliases", "/home/ada/.local/bin", "/home/ada/.local/lib",
        "/home/ada/.config/autostart", "/home/ada/.config/systemd", "/home/ada/.config/nvim",
        "/home/ada/.vimrc", "/home/ada/.config/direnv", "/home/ada/.cargo/config.toml",
        "/home/ada/.cargo/config", "/home/ada/.npmrc", "/home/ada/.inputrc", "/home/ada/.pythonrc"})
    EXPECT_TRUE(has(h.protect, p)) << p;
  EXPECT_TRUE(has(h.protect_files, "/home/ada/.cargo/config.toml"));
  EXPECT_FALSE(has(h.protect_files, "/home/ada/.local/bin"));
  // A sibling of the home directory is fine; so is a project inside it.
  c.workspace = "/home/adam";
  EXPECT_TRUE(resolve("workspace", c).ok());
  EXPECT_TRUE(resolve("workspace", ctx()).ok());

  auto r = must(resolve("workspace", ctx()));
  const std::string ws = "/home/ada/src/app";
  for (const std::string n :
       {"/.git/HEAD", "/.git/commondir", "/.git/modules/*/commondir", "/.git/rebase-merge",
        "/.git/rebase-apply", "/.git/sequencer", "/.mcp.json", "/.devcontainer"})
    EXPECT_TRUE(has(r.protect, ws + n)) << n;
  EXPECT_TRUE(has(r.protect_files, ws + "/.git/HEAD"));
  EXPECT_TRUE(has(r.protect_files, ws + "/.git/commondir"));
  EXPECT_TRUE(has(r.protect_files, ws + "/.mcp.json"));
  EXPECT_FALSE(has(r.protect_files, ws + "/.git/rebase-merge"));
  EXPECT_EQ(r.placeholder_content.at(ws + "/.git/commondir"), ".\n");
  EXPECT_EQ(r.placeholder_content.at(ws + "/.git/modules/*/commondir"), ".\n");
  EXPECT_EQ(r.pin, (std::vector<std::string>{ws + "/.git/objects", ws + "/.git/refs"}));
  EXPECT_EQ(r.protect_if_missing,
            (std::map<std::string, std::string>{{ws + "/HEAD", ws + "/.git"},
                                                {ws + "/config", ws + "/.git"},
                                                {ws + "/objects", ws + "/.git"},
                                                {ws + "/refs", ws + "/.git"}}));
  for (const auto& [e, cond] : r.protect_if_missing) EXPECT_TRUE(has(r.protect, e)) << e;
  EXPECT_TRUE(has(r.protect_files, ws + "/HEAD"));
  EXPECT_TRUE(has(r.protect_files, ws + "/config"));
  EXPECT_FALSE(has(r.protect_files, ws + "/objects"));
  // devbox protects none of it.
  auto d = must(resolve("devbox", ctx()));
  EXPECT_TRUE(d.pin.empty());
  EXPECT_TRUE(d.protect_if_missing.empty());
}

// Red team round 11: a workspace file's profile with `write: ["/"]` and
// `network: open` was accepted (and auto-allowed under --profile y).
TEST(CapabilityProfile, WorkspaceFileProfilesCannotGrant) {
  auto err = [](const char* text) {
    return merge_error({etc()}, ConfigDoc{text, ".comet/sandbox.yaml"});
  };
  EXPECT_EQ(err("profiles:\n  y:\n    extends: workspace\n    write: [\"/\"]\n"),
            ".comet/sandbox.yaml:4:13: profiles.y.write[0]: the workspace file can only name "
            "paths inside {workspace}, got \"/\"");
  EXPECT_EQ(err("profiles:\n  y:\n    extends: strict\n    read: [\"{workspace}\", \"~\"]\n"),
            ".comet/sandbox.yaml:4:27: profiles.y.read[1]: the workspace file can only name "
            "paths inside {workspace}, got \"~\"");
  EXPECT_EQ(err("profiles:\n  y: {extends: strict, write: [\"{workspace}/../x\"]}\n"),
            ".comet/sandbox.yaml:2:32: profiles.y.write[0]: the workspace file can only name "
            "paths inside {workspace}, got \"{workspace}/../x\"");
  EXPECT_EQ(err("profiles:\n  y:\n    extends: workspace\n    network: open\n"),
            ".comet/sandbox.yaml:4:14: profiles.y.network: the workspace file cannot open the "
            "network");
  EXPECT_EQ(err("profiles:\n  y:\n    extends: devbox\n"),
            ".comet/sandbox.yaml:3:14: profiles.y.extends: the workspace file cannot extend "
            "devbox, which protects nothing");
  // what only takes away, or stays inside the workspace, is accepted
  auto ok = merge({etc()}, ConfigDoc{"profiles:\n  y:\n    extends: strict\n    network: "
                                     "restricted\n    write: [\"{workspace}/out\"]\n",
                                     ".comet/sandbox.yaml"});
  EXPECT_TRUE(ok.ok()) << ok.error().message();
  // a global file may grant
  EXPECT_TRUE(
      merge({etc(), ConfigDoc{"profiles:\n  y: {extends: devbox, network: open}\n", "/u.yaml"}})
          .ok());
}

// Red team round 11: `--workspace /etc` was auto-allowed; round 12: /run
// (systemd units, udev rules, modprobe.d) and /opt were.
TEST(CapabilityProfile, SystemDirectoriesAreNoWorkspace) {
  for (const char* ws :
       {"/etc", "/etc/cron.d", "/usr", "/usr/local/src/x", "/bin", "/lib64", "/boot", "/var",
        "/var/spool/cron", "/proc", "/sys", "/dev", "/run", "/run/systemd/system", "/run/udev",
        "/opt", "/opt/proj", "/srv/app", "/snap/x"}) {
    ResolveContext c = ctx();
    c.workspace = ws;
    for (const char* profile : {"workspace", "strict"}) {
      auto r = resolve(profile, c);
      ASSERT_FALSE(r.ok()) << ws;
      EXPECT_NE(r.error().message().find("the system directory"), std::string::npos)
          << r.error().message();
    }
    EXPECT_TRUE(resolve("read-only", c).ok()) << ws;  // writes no workspace
  }
  for (const char* ws : {"/var/tmp/x", "/tmp/w", "/usrx", "/runx", "/optional", "/mnt/data/p"}) {
    ResolveContext c = ctx();
    c.workspace = ws;
    EXPECT_TRUE(resolve("workspace", c).ok()) << ws;
  }
  // the shared temporary directories themselves (red team round 15)
  for (const char* ws : {"/tmp", "/var/tmp"}) {
    ResolveContext c = ctx();
    c.workspace = ws;
    auto r = resolve("workspace", c);
    ASSERT_FALSE(r.ok()) << ws;
    EXPECT_NE(r.error().message().find("shared temporary directory"), std::string::npos);
  }
}

// Round 12 follow-up: a root caller's `--workspace /home` held every
// other account's rc files.
TEST(CapabilityProfile, AnotherAccountsHomeIsNoWorkspace) {
  ResolveContext c = ctx();
  c.homes = {"/home/bob", "/srv/git-home"};
  c.home = "/root";  // root, whose own home is not under /home
  for (const char* ws : {"/home", "/home/bob"}) {
    c.workspace = ws;
    auto r = resolve("workspace", c);
    ASSERT_FALSE(r.ok()) << ws;
    EXPECT_NE(r.error().message().find("of another account"), std::string::npos)
        << r.error().message();
  }
  c.workspace = "/home/bob/project";  // inside it: the caller's choice
  EXPECT_TRUE(resolve("workspace", c).ok());
  c.workspace = "/home/ada/src";
  EXPECT_TRUE(resolve("workspace", c).ok());
}

// Round 12: a custom `write: [~]` left ~/bin (on PATH by Debian's
// .profile), editor plugin directories, toolchain env files writable.
TEST(CapabilityProfile, TheHomeNamesTheHostRunsAreProtected) {
  auto set =
      merge({ConfigDoc{"profiles:\n  home: {extends: workspace, write: [\"~\"]}\n", "/u.yaml"}});
  ASSERT_TRUE(set.ok()) << set.error().message();
  auto r = must(resolve(*set, "home", ctx()));
  for (const char* p : {"/home/ada/bin", "/home/ada/.vim", "/home/ada/.emacs.d",
                        "/home/ada/.bashrc.d", "/home/ada/.cargo/env", "/home/ada/.cargo/bin",
                        "/home/ada/.gdbinit", "/home/ada/.ipython", "/home/ada/.local/share/nvim",
                        "/home/ada/.gnupg", "/home/ada/.oh-my-zsh", "/home/ada/.pyenv"})
    EXPECT_TRUE(has(r.protect, p)) << p;
}
