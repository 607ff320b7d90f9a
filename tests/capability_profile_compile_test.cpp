// The sandbox planner: goldens (tests/data/capability/sandbox/<case>/
// {case.json, config.json, plan.json} over the synthetic host in host.json;
// COMET_UPDATE_GOLDEN=1 rewrites the outputs) and the security properties
// of the configs, checked on the structs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "comet/base/switches.hpp"
#include "comet/capability/profile.hpp"
#include "comet/capability/profile_compile.hpp"
#include "comet/oci/spec.hpp"

#include "support/resolve_context.hpp"
#include "support/slurp.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace comet;
using namespace comet::capability;

namespace {

const fs::path kDir = fs::path(COMET_TEST_DATA) / "capability" / "sandbox";

using comet::test::slurp;

HostKind kind_of(const std::string& s) {
  if (s == "dir") return HostKind::dir;
  if (s == "file") return HostKind::file;
  if (s == "socket") return HostKind::socket;
  if (s == "other") return HostKind::other;
  return HostKind::missing;
}

ResolveContext ctx() {
  ResolveContext c = comet::test::ada_context();
  c.config_home = "/home/ada/.config";
  c.runtime_dir = "/run/user/1000";
  return c;
}

SandboxInputs base_inputs() {
  const json host = json::parse(slurp(kDir / "host.json"));
  SandboxInputs in;
  const std::string bundle = "/run/comet-runtime/.sandbox@sandbox-0@1";
  in.root_dir = bundle + "/rootfs";
  in.deny_file = bundle + "/deny";
  in.socket_file = bundle + "/socket";
  in.workspace = "/home/ada/src/app";
  in.args = {"sh", "-c", "make"};
  in.env = {"PATH=/usr/bin:/bin",  "HOME=/home/ada",
            "LD_PRELOAD=/evil.so", "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1",
            "BASH_ENV=/tmp/x",     "TERM=xterm"};
  in.uid = 1000;
  in.gid = 1000;
  in.host_netns = "/proc/self/ns/net";
  in.protect = {"/etc/comet/sandbox.yaml", "/usr/local/bin/comet-runtime"};
  in.hide = {"/run/comet-runtime"};
  for (const auto& t : host["top_level"]) {
    TopEntry e;
    e.name = t["name"];
    e.kind = kind_of(t.value("kind", "other"));
    e.link = t.value("link", "");
    in.top_level.push_back(e);
  }
  for (const auto& [path, f] : host["paths"].items()) {
    HostPath h;
    h.kind = kind_of(f["kind"]);
    h.real = f.value("real", path);
    h.symlink = f.value("symlink", false);
    in.host[path] = h;
  }
  if (host.contains("globbed"))
    in.globbed = host["globbed"].get<std::map<std::string, std::vector<std::string>>>();
  return in;
}

struct Case {
  ResolvedProfile profile;
  SandboxInputs in;
};

Case load_case(const json& c) {
  std::vector<ConfigDoc> globals;
  std::optional<ConfigDoc> ws;
  if (c.contains("global")) globals.push_back({c["global"], "/etc/comet/sandbox.yaml"});
  if (c.contains("workspace_yaml"))
    ws = ConfigDoc{c["workspace_yaml"], "/home/ada/src/app/.comet/sandbox.yaml"};
  auto set = merge(globals, ws);
  EXPECT_TRUE(set.ok()) << set.error().message();
  ResolveContext rc = ctx();
  rc.uid = 1000;
  if (c.contains("workspace")) rc.workspace = c["workspace"];
  auto r = resolve(*set, c.value("profile", ""), rc);
  EXPECT_TRUE(r.ok()) << r.error().message();
  Case k{*r, base_inputs()};
  k.in.workspace = rc.workspace;
  if (c.contains("args")) k.in.args = c["args"].get<std::vector<std::string>>();
  return k;
}

Case builtin(const std::string& name) {
  return load_case(json{{"profile", name}});
}

SandboxPlan must_plan(const Case& k) {
  auto p = compile_profile(k.profile, k.in);
  EXPECT_TRUE(p.ok()) << p.error().message();
  return p.ok() ? *p : SandboxPlan{};
}

const oci::Mount* find(const oci::Spec& s, const std::string& dest) {
  for (const auto& m : s.mounts)
    if (m.destination == dest) return &m;
  return nullptr;
}

long pos(const oci::Spec& s, const std::string& dest) {
  for (size_t i = 0; i < s.mounts.size(); i++)
    if (s.mounts[i].destination == dest) return static_cast<long>(i);
  return -1;
}

bool has_placeholder(const SandboxPlan& p, const std::string& x) {
  for (const auto& d : p.placeholders)
    if (d.path == x) return true;
  return false;
}

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool read_only_bind(const oci::Mount* m) {
  return m && m->type == "bind" && has(m->options, "rro") && !has(m->options, "rw");
}

std::string net_path(const oci::Spec& s, bool* present) {
  *present = false;
  for (const auto& n : s.linux_->namespaces) {
    if (n.type == "network") {
      *present = true;
      return n.path;
    }
  }
  return "";
}

json plan_json(const SandboxPlan& p) {
  json j;
  j["symlinks"] = json::array();
  for (const auto& l : p.symlinks) j["symlinks"].push_back({l.name, l.target});
  std::vector<std::string> ph;
  for (const auto& d : p.placeholders)
    ph.push_back(d.dir               ? d.path
                 : d.content.empty() ? d.path + " (file)"
                                     : d.path + " (file: " + json(d.content).dump() + ")");
  j["placeholders"] = ph;
  j["refused_names"] = p.refused_names;
  j["notes"] = p.notes;
  return j;
}

}  // namespace

TEST(ProfileCompile, Goldens) {
  const bool update = comet::switches::update_golden();
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(kDir))
    if (e.is_directory()) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  ASSERT_GE(cases.size(), 6u);
  for (const auto& dir : cases) {
    SCOPED_TRACE(dir.filename().string());
    Case k = load_case(json::parse(slurp(dir / "case.json")));
    auto plan = compile_profile(k.profile, k.in);
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    auto st = oci::validate_spec(plan->spec);
    EXPECT_TRUE(st.ok()) << st.error().message();
    json got = json::parse(oci::to_json(plan->spec));
    json extra = plan_json(*plan);
    if (update) {
      std::ofstream(dir / "config.json") << got.dump(2) << "\n";
      std::ofstream(dir / "plan.json") << extra.dump(2) << "\n";
    }
    ASSERT_TRUE(fs::exists(dir / "config.json")) << "run with COMET_UPDATE_GOLDEN=1";
    json want = json::parse(slurp(dir / "config.json"));
    EXPECT_EQ(got, want) << "diff (want -> got): " << json::diff(want, got).dump(2);
    json want_extra = json::parse(slurp(dir / "plan.json"));
    EXPECT_EQ(extra, want_extra) << "diff (want -> got): " << json::diff(want_extra, extra).dump(2);
  }
}

TEST(ProfileCompile, CommonProperties) {
  for (const char* name : {"workspace", "devbox", "read-only", "strict"}) {
    SCOPED_TRACE(name);
    SandboxPlan p = must_plan(builtin(name));
    const oci::Spec& s = p.spec;
    ASSERT_TRUE(s.root && s.process && s.linux_);
    EXPECT_EQ(s.root->path, "/run/comet-runtime/.sandbox@sandbox-0@1/rootfs");
    EXPECT_TRUE(s.root->readonly);
    EXPECT_TRUE(s.process->no_new_privileges);
    ASSERT_TRUE(s.process->capabilities);
    EXPECT_TRUE(s.process->capabilities->bounding.empty());
    EXPECT_TRUE(s.process->capabilities->effective.empty());
    EXPECT_TRUE(s.process->capabilities->permitted.empty());
    EXPECT_EQ(s.process->user.uid, 1000u);
    EXPECT_EQ(s.process->user.gid, 1000u);
    EXPECT_TRUE(s.process->user.additional_gids.empty());
    EXPECT_EQ(s.process->cwd, "/home/ada/src/app");
    EXPECT_EQ(s.process->args, (std::vector<std::string>{"sh", "-c", "make"}));
    EXPECT_EQ(s.process->env,
              (std::vector<std::string>{"PATH=/usr/bin:/bin", "HOME=/home/ada", "TERM=xterm"}));
    // Fresh /proc, minimal /dev, the workspace writable.
    EXPECT_EQ(find(s, "/proc")->type, "proc");
    EXPECT_EQ(find(s, "/dev")->type, "tmpfs");
    const oci::Mount* ws = find(s, "/home/ada/src/app");
    if (std::string(name) != "devbox" && std::string(name) != "read-only") {
      ASSERT_NE(ws, nullptr);
      EXPECT_TRUE(has(ws->options, "rw"));
    }
    // Parents always before children.
    for (size_t i = 0; i < s.mounts.size(); i++) {
      for (size_t j = i + 1; j < s.mounts.size(); j++) {
        const std::string& a = s.mounts[i].destination;
        const std::string& b = s.mounts[j].destination;
        EXPECT_FALSE(a.size() > b.size() && a.compare(0, b.size() + 1, b + "/") == 0)
            << a << " is mounted before its parent " << b;
      }
    }
    // No host device nodes, and nothing setuid, anywhere.
    for (const auto& m : s.mounts) {
      if (m.type == "bind" && has(m.options, "rbind")) {
        EXPECT_TRUE(has(m.options, "rnosuid") && has(m.options, "rnodev")) << m.destination;
      }
    }
    std::vector<std::string> ns;
    for (const auto& n : s.linux_->namespaces) ns.push_back(n.type);
    for (const char* t : {"pid", "ipc", "uts", "mount", "cgroup"}) EXPECT_TRUE(has(ns, t)) << t;
    EXPECT_TRUE(has(s.linux_->masked_paths, "/proc/kcore"));
    EXPECT_TRUE(has(s.linux_->readonly_paths, "/proc/sys"));
    EXPECT_FALSE(s.linux_->seccomp);  // the runtime adds it from the policy annotation
    // The top-level symlinks exist in the root.
    bool bin = false;
    for (const auto& l : p.symlinks) bin |= l.name == "bin" && l.target == "usr/bin";
    EXPECT_TRUE(bin);
  }
}

TEST(ProfileCompile, NetworkAndPolicyAnnotation) {
  struct Want {
    const char* profile;
    bool netns_new;
    const char* policy;
  };
  for (const Want& w :
       {Want{"workspace", false,
             R"({"git":{"own":["/home/ada/src/app/.git"]},"lockdown":true,"network":"open",)"
             R"("profile":"workspace","unix":{"allow":[]}})"},
        Want{"devbox", false, R"({"lockdown":false,"network":"open","profile":"devbox"})"},
        Want{"read-only", true,
             R"({"git":{"own":["/home/ada/src/app/.git"]},"lockdown":true,"network":"none",)"
             R"("profile":"read-only","unix":{"allow":[]}})"},
        Want{"strict", true,
             R"({"git":{"own":["/home/ada/src/app/.git"]},"lockdown":true,"network":"none",)"
             R"("profile":"strict","unix":{"allow":[]}})"}}) {
    SCOPED_TRACE(w.profile);
    SandboxPlan p = must_plan(builtin(w.profile));
    bool present = false;
    std::string path = net_path(p.spec, &present);
    EXPECT_TRUE(present);
    EXPECT_EQ(path, w.netns_new ? "" : "/proc/self/ns/net");
    // The secrets' deny list aside (DenyHidesAndSocketsAreUnreachable).
    json pol = json::parse(p.spec.annotations.at("org.soyaos.comet.policy"));
    pol.erase("deny");
    EXPECT_EQ(pol.dump(), w.policy);
    EXPECT_EQ(p.spec.annotations.at("org.soyaos.comet.profile"), w.profile);
  }
  // Without a netns to join, open means no network entry at all.
  Case k = builtin("workspace");
  k.in.host_netns.clear();
  bool present = true;
  net_path(must_plan(k).spec, &present);
  EXPECT_FALSE(present);
}

TEST(ProfileCompile, StrictShowsOnlyItsAllowlist) {
  SandboxPlan p = must_plan(builtin("strict"));
  const oci::Spec& s = p.spec;
  EXPECT_TRUE(read_only_bind(find(s, "/usr")));
  EXPECT_TRUE(read_only_bind(find(s, "/etc")));
  EXPECT_TRUE(read_only_bind(find(s, "/opt")));
  for (const char* absent : {"/home", "/root", "/srv", "/var", "/run", "/boot", "/data", "/sys",
                             "/home/ada/.ssh", "/run/docker.sock", "/run/containerd"})
    EXPECT_EQ(find(s, absent), nullptr) << absent;  // not in the view: ENOENT
  EXPECT_TRUE(has(find(s, "/home/ada/src/app")->options, "rw"));
  EXPECT_TRUE(has(find(s, "/home/ada/.comet/sessions")->options, "rw"));
  EXPECT_EQ(find(s, "/tmp")->type, "tmpfs");
}

TEST(ProfileCompile, DenyHidesAndSocketsAreUnreachable) {
  SandboxPlan p = must_plan(builtin("workspace"));
  const oci::Spec& s = p.spec;
  // A runtime's own directory: an empty tmpfs (the socket is gone).
  const oci::Mount* ctrd = find(s, "/run/containerd");
  ASSERT_NE(ctrd, nullptr);
  EXPECT_EQ(ctrd->type, "tmpfs");
  EXPECT_TRUE(has(ctrd->options, "ro"));
  EXPECT_TRUE(has(ctrd->options, "mode=755"));
  EXPECT_EQ(find(s, "/run/containerd/containerd.sock"), nullptr);  // covered by its dir
  // A lone socket: the empty 0666 file over it, after /run.
  const oci::Mount* docker = find(s, "/run/docker.sock");
  ASSERT_NE(docker, nullptr);
  EXPECT_EQ(docker->source, "/run/comet-runtime/.sandbox@sandbox-0@1/socket");
  EXPECT_TRUE(has(docker->options, "ro"));
  EXPECT_GT(pos(s, "/run/docker.sock"), pos(s, "/run"));
  EXPECT_EQ(find(s, "/var/run/docker.sock"), nullptr);  // one path, not two
  EXPECT_NE(find(s, "/run/user/1000/podman"), nullptr);
  EXPECT_NE(find(s, "/run/user/1000/docker.sock"), nullptr);
  // The state root is hidden, unreadable.
  const oci::Mount* state = find(s, "/run/comet-runtime");
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(state->type, "tmpfs");
  EXPECT_TRUE(has(state->options, "mode=000"));

  // Binding /run (and ~) writable brings none of it back.
  Case k = load_case(json::parse(slurp(kDir / "custom-run-writable" / "case.json")));
  SandboxPlan w = must_plan(k);
  ASSERT_NE(find(w.spec, "/run"), nullptr);
  EXPECT_TRUE(has(find(w.spec, "/run")->options, "rw"));
  for (const char* hidden : {"/run/docker.sock", "/run/containerd", "/run/comet-runtime",
                             "/run/user/1000/podman", "/run/user/1000/docker.sock"}) {
    ASSERT_NE(find(w.spec, hidden), nullptr) << hidden;
    EXPECT_GT(pos(w.spec, hidden), pos(w.spec, "/run")) << hidden;
  }
  // Denied: a directory is a mode-000 tmpfs, a file the mode-0000 file.
  const oci::Mount* ssh = find(w.spec, "/home/ada/.ssh");
  ASSERT_NE(ssh, nullptr);
  EXPECT_EQ(ssh->type, "tmpfs");
  EXPECT_TRUE(has(ssh->options, "mode=000"));
  Case ci = load_case(json::parse(slurp(kDir / "custom-ci" / "case.json")));
  ci.profile.write.push_back("/home/ada");  // make the home visible to check .netrc
  // The config's runtime_sockets: invisible under strict (nothing to do)
  // until /srv is readable.
  EXPECT_TRUE(has(ci.profile.runtime_sockets, "/srv/ci/dockerd.sock"));
  EXPECT_EQ(find(must_plan(ci).spec, "/srv/ci/dockerd.sock"), nullptr);
  ci.profile.read.push_back("/srv");
  ci.in.host["/srv"] = HostPath{HostKind::dir, "/srv", false, {}};
  SandboxPlan c = must_plan(ci);
  const oci::Mount* env = find(c.spec, "/home/ada/src/app/.env");
  ASSERT_NE(env, nullptr);
  EXPECT_EQ(env->source, "/run/comet-runtime/.sandbox@sandbox-0@1/deny");
  const oci::Mount* secrets = find(c.spec, "/home/ada/src/app/secrets");
  ASSERT_NE(secrets, nullptr);
  EXPECT_TRUE(has(secrets->options, "mode=000"));
  ASSERT_NE(find(c.spec, "/srv/ci/dockerd.sock"), nullptr);
  EXPECT_EQ(find(c.spec, "/srv/ci/dockerd.sock")->source,
            "/run/comet-runtime/.sandbox@sandbox-0@1/socket");
  EXPECT_GT(pos(c.spec, "/srv/ci/dockerd.sock"), pos(c.spec, "/srv"));
}

TEST(ProfileCompile, ProtectUnderWritablePathsAndPins) {
  Case k = load_case(json::parse(slurp(kDir / "custom-run-writable" / "case.json")));
  SandboxPlan p = must_plan(k);
  // ~ is writable: its config dir is read-only, and the dirs between are
  // pinned so that it cannot be renamed away and replaced.
  EXPECT_TRUE(read_only_bind(find(p.spec, "/home/ada/.config/comet")));
  const oci::Mount* pin = find(p.spec, "/home/ada/.config");
  ASSERT_NE(pin, nullptr);
  EXPECT_FALSE(has(pin->options, "rro"));
  EXPECT_LT(pos(p.spec, "/home/ada/.config"), pos(p.spec, "/home/ada/.config/comet"));
  // A missing hook dir inside a writable tree: the git rule's init refuses
  // making it; no placeholder on the host, no mount.
  EXPECT_TRUE(has(p.refused_names, "/home/ada/.comet/hooks"));
  EXPECT_FALSE(has_placeholder(p, "/home/ada/.comet/hooks"));
  EXPECT_EQ(find(p.spec, "/home/ada/.comet/hooks"), nullptr);
  // The workspace's own .comet (its sandbox.yaml) too.
  EXPECT_TRUE(has(p.refused_names, "/home/ada/src/app/.comet"));
  EXPECT_TRUE(p.placeholders.empty());
  // The runtime binary and the global config lie in read-only trees here:
  // no mount needed.
  EXPECT_EQ(find(p.spec, "/usr/local/bin/comet-runtime"), nullptr);

  // Under a writable tree, the binary is bound read-only.
  Case b = builtin("workspace");
  b.profile.write.push_back("/usr/local");
  b.in.host["/usr/local"] = HostPath{HostKind::dir, "/usr/local", false, {}};
  SandboxPlan q = must_plan(b);
  EXPECT_TRUE(read_only_bind(find(q.spec, "/usr/local/bin/comet-runtime")));
  EXPECT_NE(find(q.spec, "/usr/local/bin"), nullptr);  // pinned

  // devbox protects only /data.
  SandboxPlan d = must_plan(builtin("devbox"));
  EXPECT_TRUE(read_only_bind(find(d.spec, "/data")));
  EXPECT_EQ(find(d.spec, "/run/comet-runtime"), nullptr);
  EXPECT_EQ(find(d.spec, "/run/docker.sock"), nullptr);
  EXPECT_TRUE(d.placeholders.empty());
  // Without the git rule (a global custom profile on devbox protects only
  // what it lists), a missing protected name still gets its placeholder.
  Case dp = builtin("devbox");
  dp.profile.protect.push_back("/home/ada/src/app/Makefile");
  SandboxPlan dq = must_plan(dp);
  EXPECT_TRUE(has_placeholder(dq, "/home/ada/src/app/Makefile"));
  EXPECT_TRUE(read_only_bind(find(dq.spec, "/home/ada/src/app/Makefile")));
  EXPECT_TRUE(dq.refused_names.empty());
  EXPECT_TRUE(has(find(d.spec, "/usr")->options, "rw"));
  EXPECT_EQ(find(d.spec, "/tmp")->type, "bind");  // the host's /tmp
}

TEST(ProfileCompile, FailClosed) {
  auto err = [](Case k) {
    auto r = compile_profile(k.profile, k.in);
    return r.ok() ? std::string("OK") : r.error().message();
  };
  Case k = builtin("workspace");
  k.profile.write.push_back("/home/ada");
  k.in.host["/home/ada/.config/comet"].symlink = true;
  EXPECT_EQ(err(k),
            "sandbox: cannot protect /home/ada/.config/comet: it is a symlink inside the writable "
            "/home/ada (the workload could replace it)");
  k = builtin("workspace");
  k.in.workspace = "/";
  EXPECT_EQ(err(k),
            "sandbox: the workspace cannot be / (it would make everything writable); pass "
            "--workspace DIR");
  k = builtin("workspace");
  k.in.args.clear();
  EXPECT_EQ(err(k), "sandbox: no command to run");
  k = builtin("workspace");
  k.in.root_dir = "rootfs";
  EXPECT_EQ(err(k), "sandbox: the root dir must be an absolute normalised path, got \"rootfs\"");
  EXPECT_EQ(err(builtin("off")), "sandbox: profile \"off\" is no sandbox (off)");
}

TEST(ProfileCompile, EnvFilter) {
  EXPECT_EQ(sandbox_env({"A=1", "LD_PRELOAD=x", "LD_LIBRARY_PATH=y", "GCONV_PATH=z",
                         "BASH_FUNC_f%%=() { :; }", "MALLOC_CHECK_=3", "DOCKER_HOST=unix:///x",
                         "A=2", "B=", "GLIBC_TUNABLES=x", "noequals"}),
            (std::vector<std::string>{
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "A=2", "B="}));
  EXPECT_TRUE(dangerous_env("LD_AUDIT"));
  EXPECT_TRUE(dangerous_env("SSH_AUTH_SOCK"));
  EXPECT_FALSE(dangerous_env("HOME"));
  EXPECT_FALSE(dangerous_env("LANG"));
}

// Issue 22: protected names (placeholders of the right kind, .git's three
// cases), secrets, the unix-socket allowlist and the limits.
TEST(ProfileCompile, ProtectedPathsSecretsSocketsLimits) {
  Case k = builtin("workspace");
  SandboxPlan p = must_plan(k);
  const oci::Spec& s = p.spec;
  auto placeholder = [&](const std::string& path) -> const Placeholder* {
    for (const auto& ph : p.placeholders)
      if (ph.path == path) return &ph;
    return nullptr;
  };
  // .git is a directory: it stays writable (pinned), what git obeys is not.
  const oci::Mount* git = find(s, "/home/ada/src/app/.git");
  ASSERT_TRUE(git);
  EXPECT_FALSE(has(git->options, "rro"));
  for (const char* ro :
       {"/home/ada/src/app/.git/config", "/home/ada/src/app/.git/hooks",
        "/home/ada/src/app/.git/modules/lib/config", "/home/ada/src/app/.git/modules/lib/hooks",
        "/home/ada/src/app/.gitmodules", "/home/ada/src/app/.vscode"})
    EXPECT_TRUE(read_only_bind(find(s, ro))) << ro;
  // missing: refused by the git rule's init, nothing made or mounted
  for (const char* x : {"/home/ada/src/app/.envrc", "/home/ada/src/app/.claude",
                        "/home/ada/src/app/.git/modules/lib/info"}) {
    EXPECT_TRUE(has(p.refused_names, x)) << x;
    EXPECT_FALSE(placeholder(x)) << x;
    EXPECT_FALSE(find(s, x)) << x;
  }
  EXPECT_TRUE(p.placeholders.empty());
  EXPECT_FALSE(find(s, "/home/ada/.bashrc"));  // home is not writable here
  EXPECT_FALSE(has(p.refused_names, "/home/ada/.bashrc"));
  EXPECT_FALSE(has(p.refused_names, "/home/ada/src/app/.git"));

  auto in_git = [](const std::string& x) {
    return x == "/home/ada/src/app/.git" || x.rfind("/home/ada/src/app/.git/", 0) == 0;
  };
  // .git missing: one refused name covers everything below it.
  Case none = builtin("workspace");
  for (auto it = none.in.host.begin(); it != none.in.host.end();)
    it = in_git(it->first) ? none.in.host.erase(it) : ++it;
  none.in.globbed.clear();
  SandboxPlan pn = must_plan(none);
  std::vector<std::string> below;
  for (const auto& r : pn.refused_names)
    if (in_git(r)) below.push_back(r);
  EXPECT_EQ(below, (std::vector<std::string>{"/home/ada/src/app/.git"}));
  EXPECT_FALSE(find(pn.spec, "/home/ada/src/app/.git"));
  EXPECT_FALSE(find(pn.spec, "/home/ada/src/app/.git/config"));

  // .git is a file (a linked worktree): the file is protected.
  Case wt = none;
  wt.in.host["/home/ada/src/app/.git"] =
      HostPath{HostKind::file, "/home/ada/src/app/.git", false, {}};
  SandboxPlan pw = must_plan(wt);
  EXPECT_TRUE(read_only_bind(find(pw.spec, "/home/ada/src/app/.git")));
  for (const auto& ph : pw.placeholders) EXPECT_FALSE(in_git(ph.path)) << ph.path;

  // Secrets: hidden, also under strict, whose read list holds /etc.
  for (const char* name : {"workspace", "strict", "read-only"}) {
    SCOPED_TRACE(name);
    SandboxPlan q = must_plan(builtin(name));
    const oci::Mount* shadow = find(q.spec, "/etc/shadow");
    ASSERT_TRUE(shadow);
    EXPECT_EQ(shadow->source, k.in.deny_file);
    const oci::Mount* key = find(q.spec, "/etc/ssh/ssh_host_rsa_key");
    ASSERT_TRUE(key);
    EXPECT_EQ(key->source, k.in.deny_file);
    const oci::Mount* root = find(q.spec, "/root");
    if (std::string(name) != "strict") {
      ASSERT_TRUE(root);
      EXPECT_EQ(root->type, "tmpfs");
      EXPECT_TRUE(has(root->options, "mode=000"));
    }
  }
  SandboxPlan dev = must_plan(builtin("devbox"));
  EXPECT_FALSE(find(dev.spec, "/etc/shadow"));
  EXPECT_EQ(json::parse(dev.spec.annotations.at("org.soyaos.comet.policy")).count("unix"), 0u);

  // Limits.
  ASSERT_TRUE(s.linux_->resources && s.linux_->resources->pids && s.linux_->resources->memory);
  EXPECT_EQ(s.linux_->resources->pids->limit, 2048);
  EXPECT_EQ(s.linux_->resources->memory->limit, 4LL << 30);
  EXPECT_EQ(s.linux_->resources->memory->swap, 4LL << 30);
  const oci::Mount* tmp = find(s, "/tmp");
  ASSERT_TRUE(tmp);
  EXPECT_TRUE(has(tmp->options, "size=1073741824"));
  EXPECT_TRUE(has(tmp->options, "nr_inodes=262144"));

  // The unix-socket allowlist: hidden sockets come back, after what hides them.
  Case u = builtin("workspace");
  u.profile.unix_sockets = {"/tmp/.X11-unix/X0", "/run/containerd/x.sock", "/etc/shadow"};
  u.in.host["/run/containerd/x.sock"] = HostPath{HostKind::socket, "", false, {}};
  SandboxPlan pu = must_plan(u);
  auto index_of = [&](const std::string& d) {
    for (std::size_t i = 0; i < pu.spec.mounts.size(); ++i)
      if (pu.spec.mounts[i].destination == d) return static_cast<long>(i);
    return -1L;
  };
  EXPECT_GT(index_of("/tmp/.X11-unix/X0"), index_of("/tmp"));
  EXPECT_GT(index_of("/run/containerd/x.sock"), index_of("/run/containerd"));
  EXPECT_GE(index_of("/run/containerd"), 0);
  // The runtime makes the socket's mount point in the hiding tmpfs: not ro,
  // but without a write bit (and search only, where it was mode 000).
  const oci::Mount* hider = find(pu.spec, "/run/containerd");
  EXPECT_FALSE(has(hider->options, "ro"));
  EXPECT_TRUE(has(hider->options, "mode=555"));
  Case dn = u;
  dn.profile.deny.push_back("/srv/scratch");
  dn.profile.unix_sockets = {"/srv/scratch/db/db.sock"};
  dn.in.host["/srv/scratch/db/db.sock"] = HostPath{HostKind::socket, "", false, {}};
  SandboxPlan pd = must_plan(dn);
  const oci::Mount* denied = find(pd.spec, "/srv/scratch");
  ASSERT_TRUE(denied);
  EXPECT_FALSE(has(denied->options, "ro"));
  EXPECT_TRUE(has(denied->options, "mode=111"));
  ASSERT_TRUE(find(pd.spec, "/srv/scratch/db/db.sock"));
  // ... and it is not verified unreadable: it holds the socket's mount point.
  json deny = json::parse(pd.spec.annotations.at("org.soyaos.comet.policy"))["deny"];
  EXPECT_EQ(std::count(deny.begin(), deny.end(), "/srv/scratch"), 0);
  EXPECT_TRUE(has(find(pd.spec, "/run/containerd")->options, "ro"));  // no socket in it now
  EXPECT_EQ(find(pu.spec, "/etc/shadow")->source, u.in.deny_file);    // deny of the path wins
  EXPECT_EQ(json::parse(pu.spec.annotations.at("org.soyaos.comet.policy"))["unix"]["allow"],
            json({"/etc/shadow", "/run/containerd/x.sock", "/tmp/.X11-unix/X0"}));
}

// The red team (2026-12): .git stays a valid repository (HEAD read-only,
// objects/ and refs/ pinned but writable), commondir and the rebase state
// are protected, the bare-repository names at the workspace root count only
// while .git is missing, and a .git symlink is refused.
TEST(ProfileCompile, GitKeptValid) {
  const std::string ws = "/home/ada/src/app";
  Case k = builtin("workspace");
  SandboxPlan p = must_plan(k);
  auto placeholder = [](const SandboxPlan& pl, const std::string& path) -> const Placeholder* {
    for (const auto& ph : pl.placeholders)
      if (ph.path == path) return &ph;
    return nullptr;
  };
  EXPECT_TRUE(read_only_bind(find(p.spec, ws + "/.git/HEAD")));
  for (const char* pinned : {"/.git/objects", "/.git/refs"}) {
    const oci::Mount* m = find(p.spec, ws + pinned);
    ASSERT_TRUE(m) << pinned;
    EXPECT_EQ(m->source, ws + pinned);
    EXPECT_FALSE(has(m->options, "rro")) << pinned;
    EXPECT_FALSE(has(m->options, "ro")) << pinned;
    EXPECT_TRUE(has(m->options, "rbind")) << pinned;
  }
  // missing: refused by the git rule's init, nothing made or mounted (a
  // commondir placeholder had to hold "."; none is made now)
  for (const char* n : {"/.git/commondir", "/.git/modules/lib/commondir", "/.devcontainer"}) {
    EXPECT_TRUE(has(p.refused_names, ws + n)) << n;
    EXPECT_FALSE(placeholder(p, ws + n)) << n;
    EXPECT_FALSE(find(p.spec, ws + n)) << n;
  }
  // A missing rebase or sequencer state directory gets no placeholder (an
  // empty one tells git a rebase is under way): the git rule refuses
  // making it (the policy's git.own names this .git).
  for (const char* d : {"/.git/rebase-merge", "/.git/rebase-apply", "/.git/sequencer"}) {
    EXPECT_FALSE(placeholder(p, ws + d)) << d;
    EXPECT_FALSE(find(p.spec, ws + d)) << d;
  }
  EXPECT_EQ(json::parse(p.spec.annotations.at("org.soyaos.comet.policy"))["git"]["own"],
            json::array({ws + "/.git"}));
  EXPECT_TRUE(has(p.refused_names, ws + "/.mcp.json"));
  // .git exists: the project's own config/ (and HEAD, objects, refs at the
  // root) stay as they are.
  for (const char* n : {"/config", "/HEAD", "/objects", "/refs"}) {
    EXPECT_FALSE(find(p.spec, ws + n)) << n;
    EXPECT_FALSE(placeholder(p, ws + n)) << n;
    EXPECT_FALSE(has(p.refused_names, ws + n)) << n;
  }

  // .git missing: its placeholder, and the bare-repository names.
  Case none = builtin("workspace");
  for (auto it = none.in.host.begin(); it != none.in.host.end();)
    it = it->first.rfind(ws + "/.git", 0) == 0 ? none.in.host.erase(it) : ++it;
  none.in.globbed.clear();
  SandboxPlan pn = must_plan(none);
  EXPECT_TRUE(read_only_bind(find(pn.spec, ws + "/config")));  // a directory there: read-only
  EXPECT_FALSE(placeholder(pn, ws + "/config"));
  for (const char* n : {"/HEAD", "/objects", "/refs"}) {
    EXPECT_TRUE(has(pn.refused_names, ws + n)) << n;
    EXPECT_FALSE(placeholder(pn, ws + n)) << n;
    EXPECT_FALSE(find(pn.spec, ws + n)) << n;
  }
  EXPECT_FALSE(find(pn.spec, ws + "/.git/objects"));  // nothing to pin

  // A pin that is not a directory, or is a symlink, or lies outside any
  // writable tree: nothing.
  Case odd = builtin("workspace");
  odd.in.host[ws + "/.git/objects"] = HostPath{HostKind::file, ws + "/.git/objects", false, {}};
  odd.in.host[ws + "/.git/refs"] = HostPath{HostKind::dir, "/srv/refs", true, {}};
  SandboxPlan po = must_plan(odd);
  EXPECT_FALSE(find(po.spec, ws + "/.git/objects"));
  EXPECT_FALSE(find(po.spec, ws + "/.git/refs"));
  EXPECT_FALSE(find(po.spec, "/srv/refs"));
  ResolvedProfile pinned_out = k.profile;
  pinned_out.pin.push_back("/usr/lib");
  auto pu = compile_profile(pinned_out, k.in);
  ASSERT_TRUE(pu.ok());
  const oci::Mount* usr_lib = find(pu->spec, "/usr/lib");
  EXPECT_FALSE(usr_lib);

  // .git a symlink inside the writable workspace: an error at start.
  Case link = builtin("workspace");
  link.in.host[ws + "/.git"] = HostPath{HostKind::dir, "/srv/repo.git", true, {}};
  auto pl = compile_profile(link.profile, link.in);
  ASSERT_FALSE(pl.ok());
  EXPECT_EQ(pl.error().message(), "sandbox: cannot protect " + ws +
                                      "/.git: it is a symlink inside the writable " + ws +
                                      " (the workload could replace it)");
}

// Every writable bind (write paths, pins) is made through a fd opened
// following no symlink (red team round 12: a write path swapped for a
// symlink between the plan and the mount bound where it led); read-only
// binds and the pinned links themselves are not.
TEST(ProfileCompile, WritableBindsFollowNoSymlink) {
  for (const char* name : {"workspace", "read-only", "strict", "devbox"}) {
    SandboxPlan p = must_plan(builtin(name));
    int writable = 0;
    for (const oci::Mount& m : p.spec.mounts) {
      if (m.type != "bind") continue;
      const bool ro = has(m.options, "rro") || has(m.options, "ro");
      const bool link = has(m.options, "x-comet.link");
      EXPECT_EQ(has(m.options, "x-comet.nofollow"), !ro && !link) << name << " " << m.destination;
      if (!ro && !link) ++writable;
    }
    EXPECT_GT(writable, 0) << name;
  }
}

// A symlink on the way to a protected path, in the writable workspace (red
// team rounds 8 and 9): bound onto itself ("x-comet.link"), with the
// directories between the workspace and it pinned; one outside every
// writable tree, or inside a protected one, adds nothing.
TEST(ProfileCompile, LinksOnTheWayArePinned) {
  const std::string ws = "/home/ada/src/app";
  Case c = builtin("workspace");
  c.profile.protect.push_back(ws + "/tools/fsmon.sh");
  c.in.host[ws + "/tools/fsmon.sh"] =
      HostPath{HostKind::file, ws + "/scripts/fsmon.sh", false, {ws + "/tools"}};
  c.in.pin_links = {ws + "/sub/hop", "/usr/lib/os-release", ws + "/.vscode/x"};
  c.in.host[ws + "/.vscode"] = HostPath{HostKind::dir, ws + "/.vscode", false, {}};
  SandboxPlan p = must_plan(c);
  for (const std::string& l : {ws + "/tools", ws + "/sub/hop"}) {
    const oci::Mount* m = find(p.spec, l);
    ASSERT_TRUE(m) << l;
    EXPECT_EQ(m->source, l);
    EXPECT_EQ(m->options, (std::vector<std::string>{"bind", "x-comet.link"})) << l;
  }
  EXPECT_TRUE(find(p.spec, ws + "/sub"));  // pinned: the link's directory cannot move
  EXPECT_TRUE(read_only_bind(find(p.spec, ws + "/scripts/fsmon.sh")));
  EXPECT_FALSE(find(p.spec, "/usr/lib/os-release"));  // read-only already
  EXPECT_FALSE(find(p.spec, ws + "/.vscode/x"));      // inside a protected directory
}

// A read-only directory holding denied or hidden paths is an overlay of its
// own, so the masks under it sit on dentries the host cannot rename over
// (a host rename detaches a mask bound on the host's dentry). Not where the
// host has a mount beneath it (an overlay does not show submounts), and
// never a writable tree.
TEST(ProfileCompile, DeniedPathsSitOnAnOverlayTheHostCannotRenameIn) {
  Case k = builtin("workspace");
  k.in.empty_dir = "/run/comet-runtime/.sandbox@sandbox-0@1/empty";
  k.in.mount_points = {"/", "/proc", "/run/user/1000"};
  SandboxPlan p = must_plan(k);
  const oci::Mount* etc = find(p.spec, "/etc");
  ASSERT_NE(etc, nullptr);
  EXPECT_EQ(etc->type, "overlay");
  EXPECT_TRUE(has(etc->options, "ro"));
  EXPECT_TRUE(has(etc->options, "lowerdir=" + k.in.empty_dir + "/0:/etc"));
  // shadow-utils' and PAM's copies of a denied file, hidden whenever made
  // (red team round 14); not a name denied itself
  EXPECT_TRUE(has(etc->options, "x-comet.whiteout=shadow+"));
  EXPECT_TRUE(has(etc->options, "x-comet.whiteout=nshadow"));
  // vipw -s's full copy, and vim's swap file of it (red team round 15)
  EXPECT_TRUE(has(etc->options, "x-comet.whiteout=shadow.edit"));
  EXPECT_TRUE(has(etc->options, "x-comet.whiteout=.shadow.swp"));
  EXPECT_TRUE(has(etc->options, "x-comet.whiteout=#shadow#"));  // round 16
  EXPECT_TRUE(has(etc->options, "x-comet.whiteout=shadow.dpkg-old"));
  EXPECT_GT(pos(p.spec, "/etc/shadow"), pos(p.spec, "/etc"));
  // /run has a mount point beneath it: bound as it is, submounts and all.
  EXPECT_TRUE(read_only_bind(find(p.spec, "/run")));
  // Nothing denied beneath /usr: a bind.
  EXPECT_TRUE(read_only_bind(find(p.spec, "/usr")));
  // The writable workspace is never an overlay.
  const oci::Mount* ws = find(p.spec, k.in.workspace);
  ASSERT_NE(ws, nullptr);
  EXPECT_EQ(ws->type, "bind");
  // A path the overlay options cannot carry: a bind.
  k.in.empty_dir = "/run/a:b/empty";
  EXPECT_TRUE(read_only_bind(find(must_plan(k).spec, "/etc")));
  // Without an empty directory (the goldens): binds only.
  k.in.empty_dir.clear();
  EXPECT_TRUE(read_only_bind(find(must_plan(k).spec, "/etc")));
}
