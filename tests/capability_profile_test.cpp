// Sandbox profiles: built-ins, custom profiles, merging, fail-closed
// resolution, and the proof that a workspace file cannot weaken anything.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "comet/capability/profile.hpp"

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
  ResolveContext c;
  c.workspace = "/home/ada/src/app";
  c.home = "/home/ada";
  c.tmp = "/tmp";
  return c;
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
  EXPECT_TRUE(ro.deny.empty());  // sockets have their own list (profile_compile.hpp)
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
    }
    // The floor only grows: nothing the global files ask about stops asking.
    EXPECT_EQ(with->floor_disable, base->floor_disable);
    EXPECT_GE(with->floor.size(), base->floor.size());
  }
  EXPECT_GE(accepted, 4);  // the corpus exercises both outcomes
  EXPECT_LT(accepted, static_cast<int>(attempts.size()));
}
