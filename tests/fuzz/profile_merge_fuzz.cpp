// profile_merge: sandbox.yaml parsing, merge of a global and a workspace
// document, resolve() of every profile.
//
// Input: GLOBAL [SEPARATOR WORKSPACE], SEPARATOR = "\n=====\n". Without a
// separator the whole input is the global document and there is no
// workspace document.
//
// Invariants (beyond "no crash, no sanitizer report"):
//   1. merge and resolve never throw.
//   2. The workspace document may only add (profile.hpp, "Merging"):
//      a. merge(G, W) succeeds  =>  merge(G) succeeds;
//      b. every profile the global set knows (the built-ins, G's custom
//         profiles and the default "") resolves with W exactly as without W
//         -- same base, sandboxed flag, read, write, network restriction
//         and runtime-socket blocking, the unix-socket rule and its
//         allowlist, the limits -- except that W's own `deny:`, `hooks:`,
//         `protect:` and `runtime_sockets:` entries may be added to the deny,
//         protect and runtime-socket lists (which only removes access):
//         without-W lists must be subsets of with-W lists, and an
//         unsandboxed profile's lists are unchanged;
//      c. a profile that fails to resolve without W fails with W too;
//      d. merge(G, W) does not change the default profile.
//      e. a profile W adds has the allowlist of what it extends, and limits
//         no higher (0 = none).
//   3. Every resolved path list is absolute, normalised and de-duplicated.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "comet/capability/profile.hpp"
#include "fuzz_check.hpp"
#include "yaml_guard.hpp"

namespace cap = comet::capability;

namespace {

constexpr std::string_view kSeparator = "\n=====\n";

std::string join(const std::vector<std::string>& v) {
  std::string s = "[";
  for (const auto& p : v) s += (s.size() > 1 ? ", " : "") + p;
  return s + "]";
}

std::string describe(const cap::ResolvedProfile& r) {
  return "name=" + r.name + " base=" + r.base + " sandboxed=" + std::to_string(r.sandboxed) +
         " read=" + join(r.read) + " write=" + join(r.write) + " deny=" + join(r.deny) +
         " protect=" + join(r.protect) + " net_restricted=" + std::to_string(r.network_restricted) +
         " block_sockets=" + std::to_string(r.block_runtime_sockets) +
         " unix_rule=" + std::to_string(r.unix_socket_rule) + " unix=" + join(r.unix_sockets) +
         " limits=" + std::to_string(r.limits.pids) + "/" + std::to_string(r.limits.memory) + "/" +
         std::to_string(r.limits.tmp);
}

void check_paths(const std::vector<std::string>& list, const std::string& what) {
  std::set<std::string> seen;
  for (const auto& p : list) {
    const bool ok = !p.empty() && p[0] == '/' && p.find("//") == std::string::npos &&
                    p.find("/./") == std::string::npos && p.find("/../") == std::string::npos &&
                    !(p.size() > 1 && p.back() == '/') &&
                    !(p.size() >= 2 && p.compare(p.size() - 2, 2, "/.") == 0) &&
                    !(p.size() >= 3 && p.compare(p.size() - 3, 3, "/..") == 0);
    FUZZ_CHECK(ok, what + ": path not absolute and normalised: \"" + p + "\"");
    FUZZ_CHECK(seen.insert(p).second, what + ": duplicate path " + p);
  }
}

bool subset(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return std::all_of(a.begin(), a.end(), [&](const std::string& p) {
    return std::find(b.begin(), b.end(), p) != b.end();
  });
}

void check_resolved(const cap::ResolvedProfile& r) {
  check_paths(r.read, r.name + " read");
  check_paths(r.write, r.name + " write");
  check_paths(r.deny, r.name + " deny");
  check_paths(r.protect, r.name + " protect");
  check_paths(r.unix_sockets, r.name + " unix_sockets");
  FUZZ_CHECK(subset(r.protect_files, r.protect) && subset(r.protect_unless_dir, r.protect),
             r.name + ": protect_files/protect_unless_dir not in protect");
  for (const auto& s : r.unix_sockets)
    FUZZ_CHECK(!cap::is_runtime_socket(s), r.name + ": a runtime socket allowed: " + s);
}

const std::vector<cap::ResolveContext>& contexts() {
  static const std::vector<cap::ResolveContext> ctxs = {
      {"/home/u/proj", "/home/u", "/tmp", "/home/u/.config", "/run/user/1000", -1, ""},
      // Partial context: profiles that need the workspace must fail closed.
      {"", "/home/u", "/tmp", "", "", -1, ""},
  };
  return ctxs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in = comet::fuzz::as_view(data, size);
  const auto cut = in.find(kSeparator);
  const cap::ConfigDoc global{std::string(in.substr(0, cut)), "/etc/comet/sandbox.yaml"};
  std::optional<cap::ConfigDoc> workspace;
  if (cut != std::string_view::npos) {
    workspace = cap::ConfigDoc{std::string(in.substr(cut + kSeparator.size())),
                               "/home/u/proj/.comet/sandbox.yaml"};
  }

  auto g = cap::merge({global});
  auto gw = workspace ? cap::merge({global}, workspace) : g;
  if (!gw.ok()) {
    FUZZ_CHECK(!gw.error().message().empty(), "merge error without a message");
    return 0;
  }
  FUZZ_CHECK(g.ok(), "merge(G, W) succeeds but merge(G) fails: " + g.error().what());
  FUZZ_CHECK(g->default_profile == gw->default_profile,
             "the workspace document changed the default profile: " + g->default_profile + " -> " +
                 gw->default_profile);

  std::vector<std::string> global_names{""};
  for (auto b : cap::builtin_profile_names()) global_names.emplace_back(b);
  for (const auto& [name, p] : g->custom) global_names.push_back(name);

  for (const auto& ctx : contexts()) {
    for (const auto& name : global_names) {
      auto rg = cap::resolve(*g, name, ctx);
      auto rw = cap::resolve(*gw, name, ctx);
      if (rg.ok()) check_resolved(*rg);
      if (rw.ok()) check_resolved(*rw);
      if (!rg.ok()) {
        FUZZ_CHECK(!rw.ok(), "profile \"" + name + "\" fails without the workspace file (" +
                                 rg.error().what() + ") but resolves with it: " + describe(*rw));
        continue;
      }
      if (!rw.ok()) continue;  // fail-closed: the workspace deny list needs a missing dir
      const auto& a = *rg;
      const auto& b = *rw;
      const bool same = a.name == b.name && a.base == b.base && a.sandboxed == b.sandboxed &&
                        a.read == b.read && a.write == b.write && subset(a.protect, b.protect) &&
                        a.network_restricted == b.network_restricted &&
                        a.block_runtime_sockets == b.block_runtime_sockets &&
                        subset(a.runtime_sockets, b.runtime_sockets) &&
                        a.runtime_socket_dirs == b.runtime_socket_dirs && subset(a.deny, b.deny) &&
                        a.unix_socket_rule == b.unix_socket_rule &&
                        a.unix_sockets == b.unix_sockets && a.limits.pids == b.limits.pids &&
                        a.limits.memory == b.limits.memory && a.limits.tmp == b.limits.tmp &&
                        (a.sandboxed || (a.deny == b.deny && a.protect == b.protect));
      FUZZ_CHECK(same, "the workspace file changed profile \"" + name +
                           "\":\nwithout: " + describe(a) + "\nwith:    " + describe(b));
    }
    // Profiles the workspace file adds: resolve must return, and hold paths
    // to the same form.
    for (const auto& [name, p] : gw->custom) {
      if (g->custom.count(name)) continue;
      FUZZ_CHECK(p.from_workspace, "profile " + name + " only in merge(G, W) not from_workspace");
      auto r = cap::resolve(*gw, name, ctx);
      if (r.ok()) check_resolved(*r);
      auto base = cap::resolve(*gw, p.extends, ctx);
      if (!r.ok() || !base.ok()) continue;
      FUZZ_CHECK(r->unix_sockets == base->unix_sockets,
                 "workspace profile " + name + " changed the unix-socket allowlist");
      for (auto [x, y] : {std::pair{r->limits.pids, base->limits.pids},
                          {r->limits.memory, base->limits.memory},
                          {r->limits.tmp, base->limits.tmp}})
        FUZZ_CHECK(y == 0 || (x > 0 && x <= y),
                   "workspace profile " + name + " raised a limit: " + describe(*r));
    }
  }
  return 0;
}
