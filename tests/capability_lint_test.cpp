// Every lint rule, positive and negative; --strict; text and JSON output;
// docs/lint-rules.md coverage.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "comet/capability/lint.hpp"

using namespace comet::capability;

namespace {

const std::string kHead =
    "apiVersion: soyapack/v0\nname: a\nversion: 1.0.0\n"
    "runtime: {interpreter: /usr/bin/python3, entrypoint: agent.py}\n";

Manifest parse(const std::string& body) {
  auto r = parse_manifest(kHead + body);
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r.ok() ? *r : Manifest{};
}

std::vector<Finding> only(const std::vector<Finding>& all, const std::string& rule) {
  std::vector<Finding> out;
  for (const auto& f : all) {
    if (f.rule_id == rule) out.push_back(f);
  }
  return out;
}

std::vector<Finding> run(const std::string& body, const std::string& rule, bool strict = false) {
  LintOptions o;
  o.strict = strict;
  return only(lint(parse(body), o), rule);
}

std::string messages(const std::vector<Finding>& fs) {
  std::string out;
  for (const auto& f : fs) out += f.message + "\n";
  return out;
}

const std::string kFetch =
    "tools:\n  - name: fetch\n    kind: builtin.http_get\n"
    "    url: https://api.anthropic.com/v1/messages\n";

// The fetch tool and one egress entry, HOST:443 over https, read-only.
Manifest fetch_with_egress(const std::string& host) {
  return parse(kFetch + "capabilities:\n  egress:\n    - {host: " + host +
               ", port: 443, protocol: https}\n  determinism_tier: read-only\n");
}

}  // namespace

TEST(CapabilityLint, SeedExampleTextExactly) {
  Manifest m = fetch_with_egress("api.openai.com");
  auto f = lint(m);
  // The unused openai entry is a warning; the seed shows the error alone.
  auto errs = only(f, "egress-uncovered-tool");
  EXPECT_EQ(render_text(errs),
            "err   capabilities.egress declares api.openai.com:443 but tools.fetch uses "
            "api.anthropic.com:443\n1 error \u00b7 0 warnings\n");
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].path, "tools[0].url");
  EXPECT_EQ(errs[0].loc.line, 8);
  EXPECT_EQ(errs[0].loc.column, 10);
  EXPECT_EQ(errs[0].severity, Severity::error);
}

TEST(CapabilityLint, EgressUncoveredTool) {
  const std::string caps =
      "capabilities:\n  egress:\n    - {host: api.anthropic.com, port: 443, protocol: https}\n"
      "  determinism_tier: read-only\n";
  EXPECT_TRUE(run(kFetch + caps, "egress-uncovered-tool").empty());
  // Scheme default ports: http 80.
  EXPECT_EQ(
      messages(run("tools:\n  - {name: f, kind: builtin.http_get, url: \"http://a.test/\"}\n"
                   "capabilities:\n  egress:\n    - {host: a.test, port: 443, protocol: https}\n"
                   "    - {host: b.test, port: 443, protocol: https}\n"
                   "  determinism_tier: read-only\n",
                   "egress-uncovered-tool")),
      "capabilities.egress declares a.test:443, b.test:443 but tools.f uses a.test:80\n");
  // Same host and port, other protocol: the protocols are shown.
  EXPECT_EQ(messages(run(kFetch + "capabilities:\n  egress:\n"
                                  "    - {host: api.anthropic.com, port: 443, protocol: tcp}\n"
                                  "  determinism_tier: read-only\n",
                         "egress-uncovered-tool")),
            "capabilities.egress declares api.anthropic.com:443 (tcp) but tools.fetch uses "
            "api.anthropic.com:443 (https)\n");
  EXPECT_EQ(messages(run(kFetch + "capabilities: {determinism_tier: read-only}\n",
                         "egress-uncovered-tool")),
            "capabilities.egress declares nothing but tools.fetch uses api.anthropic.com:443\n");
  // "*" covers everything; a wildcard covers its subdomains.
  EXPECT_TRUE(run(kFetch + "capabilities: {egress: [\"*\"], determinism_tier: unrestricted}\n",
                  "egress-uncovered-tool")
                  .empty());
  EXPECT_TRUE(run(kFetch + "capabilities:\n  egress:\n    - {host: \"*.anthropic.com\", port: 443, "
                           "protocol: https}\n  determinism_tier: read-only\n",
                  "egress-uncovered-tool")
                  .empty());
  // fs tools are not network tools.
  EXPECT_TRUE(run("tools:\n  - {name: r, kind: builtin.fs_read, path: /workdir/x}\n"
                  "capabilities: {determinism_tier: read-only}\n",
                  "egress-uncovered-tool")
                  .empty());
}

TEST(CapabilityLint, EgressUnused) {
  const std::string two =
      "capabilities:\n  egress:\n    - {host: api.anthropic.com, port: 443, protocol: https}\n"
      "    - {host: hooks.slack.com, port: 443, protocol: https}\n  determinism_tier: read-only\n";
  auto f = run(kFetch + two, "egress-unused");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "capabilities.egress[1] hooks.slack.com:443:https is not used by any tool");
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_EQ(f[0].path, "capabilities.egress[1]");
  EXPECT_TRUE(run(kFetch + "capabilities:\n  egress:\n    - {host: api.anthropic.com, port: 443, "
                           "protocol: https}\n  determinism_tier: read-only\n",
                  "egress-unused")
                  .empty());
  EXPECT_EQ(messages(run("capabilities: {egress: [\"*\"], determinism_tier: unrestricted}\n",
                         "egress-unused")),
            "capabilities.egress \"*\" is not used by any tool\n");
  EXPECT_TRUE(run(kFetch + "capabilities: {egress: [\"*\"], determinism_tier: unrestricted}\n",
                  "egress-unused")
                  .empty());
  // A wildcard shadowed by an exact entry for the only tool is unused.
  f = run(kFetch +
              "capabilities:\n  egress:\n    - {host: \"*.anthropic.com\", port: 443, protocol: "
              "https}\n    - {host: api.anthropic.com, port: 443, protocol: https}\n"
              "  determinism_tier: read-only\n",
          "egress-unused");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].path, "capabilities.egress[0]");
}

TEST(CapabilityLint, WildcardHostWarnsAndFailsUnderStrict) {
  const std::string body =
      "tools:\n  - {name: img, kind: builtin.http_get, url: \"https://a.cdn.test/x\"}\n"
      "capabilities:\n  egress:\n    - {host: \"*.cdn.test\", port: 443, protocol: https}\n"
      "  determinism_tier: read-only\n";
  auto f = run(body, "egress-wildcard-host");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_EQ(f[0].message,
            "capabilities.egress[0] uses the wildcard host *.cdn.test; name each host, or put a "
            "proxy in egress");
  EXPECT_EQ(f[0].path, "capabilities.egress[0].host");
  f = run(body, "egress-wildcard-host", true);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::error);
  EXPECT_TRUE(run(kFetch + "capabilities:\n  egress:\n    - {host: api.anthropic.com, port: 443, "
                           "protocol: https}\n  determinism_tier: read-only\n",
                  "egress-wildcard-host", true)
                  .empty());
}

TEST(CapabilityLint, TcpOnWebPortsOnlyUnderStrict) {
  const std::string body =
      "capabilities:\n  egress:\n    - {host: api.test, port: 443, protocol: tcp}\n"
      "    - {host: web.test, port: 80, protocol: tcp}\n"
      "    - {host: db.test, port: 5432, protocol: tcp}\n"
      "    - {host: api.test, port: 443, protocol: https}\n"
      "    - {host: tls.test, port: 443, protocol: tls}\n"
      "  determinism_tier: read-only\n";
  EXPECT_TRUE(run(body, "egress-tcp-on-web-port").empty());
  auto f = run(body, "egress-tcp-on-web-port", true);
  EXPECT_EQ(messages(f),
            "capabilities.egress[0] api.test:443:tcp is checked by address only; use protocol "
            "https (or tls) so the name is checked on the wire\n"
            "capabilities.egress[1] web.test:80:tcp is checked by address only; use protocol "
            "http so the name is checked on the wire\n");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity, Severity::error);
  EXPECT_EQ(f[0].path, "capabilities.egress[0].protocol");
}

TEST(CapabilityLint, IpLiteral) {
  auto f =
      run("capabilities:\n  egress:\n    - {host: 192.168.1.1, port: 443, protocol: https}\n"
          "    - {host: \"2001:db8::1\", port: 53, protocol: dns}\n"
          "  determinism_tier: read-only\n",
          "egress-ip-literal");
  EXPECT_EQ(messages(f),
            "capabilities.egress[0] uses the IP literal 192.168.1.1; name the host instead\n"
            "capabilities.egress[1] uses the IP literal 2001:db8::1; name the host instead\n");
  EXPECT_EQ(f[0].severity, Severity::warning);
  EXPECT_EQ(run("capabilities:\n  egress:\n    - {host: 192.168.1.1, port: 443, protocol: https}\n"
                "  determinism_tier: read-only\n",
                "egress-ip-literal", true)[0]
                .severity,
            Severity::warning);
  EXPECT_TRUE(run("capabilities:\n  egress:\n    - {host: a1.test, port: 443, protocol: https}\n"
                  "  determinism_tier: read-only\n",
                  "egress-ip-literal")
                  .empty());
}

TEST(CapabilityLint, AnyEgressNeedsUnrestricted) {
  for (const char* tier : {"read-only", "side-effect"}) {
    auto f = run(std::string("capabilities: {egress: [\"*\"], determinism_tier: ") + tier + "}\n",
                 "egress-any-needs-unrestricted");
    ASSERT_EQ(f.size(), 1u) << tier;
    EXPECT_EQ(f[0].message, std::string("capabilities.egress is \"*\" but determinism_tier is ") +
                                tier + "; \"*\" needs unrestricted");
  }
  EXPECT_TRUE(run("capabilities: {egress: [\"*\"], determinism_tier: unrestricted}\n",
                  "egress-any-needs-unrestricted")
                  .empty());
  EXPECT_TRUE(run("capabilities: {egress: [], determinism_tier: read-only}\n",
                  "egress-any-needs-unrestricted")
                  .empty());
}

TEST(CapabilityLint, ReadOnlyTierWithSideEffectTools) {
  const std::string tools =
      "tools:\n  - {name: get, kind: builtin.http_get, url: \"https://a.test/\"}\n"
      "  - {name: post, kind: builtin.http_post, url: \"https://a.test/\"}\n"
      "  - {name: db, kind: builtin.tcp_connect, url: \"tcp://a.test:5432\"}\n"
      "  - {name: save, kind: builtin.fs_write, path: /workdir/out/x}\n";
  const std::string caps =
      "capabilities:\n  egress:\n    - {host: a.test, port: 443, protocol: https}\n"
      "    - {host: a.test, port: 5432, protocol: tcp}\n  fs: {write: [/workdir/out]}\n";
  auto f = run(tools + caps + "  determinism_tier: read-only\n", "tier-side-effect-tool");
  EXPECT_EQ(messages(f),
            "capabilities.determinism_tier is read-only but tools.post uses builtin.http_post, "
            "which has side effects\n"
            "capabilities.determinism_tier is read-only but tools.db uses builtin.tcp_connect, "
            "which has side effects\n");
  EXPECT_EQ(f[0].path, "tools[1].kind");
  EXPECT_TRUE(
      run(tools + caps + "  determinism_tier: side-effect\n", "tier-side-effect-tool").empty());
  // fs_write writes outputs, which are the pack's result: no side effect.
  EXPECT_TRUE(run("tools:\n  - {name: save, kind: builtin.fs_write, path: /workdir/out/x}\n"
                  "capabilities: {fs: {write: [/workdir/out]}, determinism_tier: read-only}\n",
                  "tier-side-effect-tool")
                  .empty());
}

TEST(CapabilityLint, TierBroaderThanNeededOnlyUnderStrict) {
  const std::string body = "capabilities: {determinism_tier: side-effect}\n";
  EXPECT_TRUE(run(body, "tier-broader-than-needed").empty());
  EXPECT_EQ(messages(run(body, "tier-broader-than-needed", true)),
            "capabilities.determinism_tier is side-effect but the tools need only read-only\n");
  EXPECT_EQ(
      messages(run("tools:\n  - {name: p, kind: builtin.http_post, url: \"https://a.test/\"}\n"
                   "capabilities:\n  egress: [{host: a.test, port: 443, protocol: https}]\n"
                   "  determinism_tier: unrestricted\n",
                   "tier-broader-than-needed", true)),
      "capabilities.determinism_tier is unrestricted but the tools need only side-effect\n");
  EXPECT_TRUE(run("capabilities: {egress: [\"*\"], determinism_tier: unrestricted}\n",
                  "tier-broader-than-needed", true)
                  .empty());
  EXPECT_TRUE(run("capabilities: {determinism_tier: read-only}\n", "tier-broader-than-needed", true)
                  .empty());
}

TEST(CapabilityLint, CapabilityUncoveredOnlyUnderStrict) {
  const std::string body =
      kFetch +
      "examples:\n  - name: basic\n    covers: [\"egress:api.anthropic.com:443\", "
      "\"fs.write:/workdir/out/r.json\"]\n"
      "capabilities:\n  egress:\n    - {host: api.anthropic.com, port: 443, protocol: https}\n"
      "    - {host: hooks.slack.com, port: 443, protocol: https}\n"
      "  fs:\n    read: [/workdir, /workdir/inputs]\n    write: [/workdir/out, /tmp]\n"
      "  determinism_tier: read-only\n";
  EXPECT_TRUE(run(body, "capability-uncovered").empty());
  auto f = run(body, "capability-uncovered", true);
  EXPECT_EQ(messages(f),
            "capabilities.egress[1] hooks.slack.com:443:https is not covered by any example\n"
            "capabilities.fs.read[1] /workdir/inputs is not covered by any example\n"
            "capabilities.fs.write[1] /tmp is not covered by any example\n");
  EXPECT_EQ(f[0].severity, Severity::error);
  // Wildcards are covered by a concrete subdomain; "*" by any egress claim.
  EXPECT_TRUE(run("examples: [{name: e, covers: [\"egress:a.cdn.test:443\"]}]\n"
                  "capabilities:\n  egress: [{host: \"*.cdn.test\", port: 443, protocol: https}]\n"
                  "  determinism_tier: read-only\n",
                  "capability-uncovered", true)
                  .empty());
  EXPECT_TRUE(run("examples: [{name: e, covers: [\"egress:x.test:80\"]}]\n"
                  "capabilities: {egress: [\"*\"], determinism_tier: unrestricted}\n",
                  "capability-uncovered", true)
                  .empty());
  EXPECT_EQ(messages(run("capabilities: {egress: [\"*\"], determinism_tier: unrestricted}\n",
                         "capability-uncovered", true)),
            "capabilities.egress \"*\" is not covered by any example\n");
  // A read claim does not cover a write entry.
  EXPECT_EQ(run("examples: [{name: e, covers: [\"fs.read:/workdir/out\"]}]\n"
                "capabilities: {fs: {write: [/workdir/out]}, determinism_tier: read-only}\n",
                "capability-uncovered", true)
                .size(),
            1u);
}

TEST(CapabilityLint, ExampleClaimsUndeclaredCapability) {
  auto f =
      run("examples:\n  - name: basic\n    covers:\n      - egress:api.anthropic.com:443\n"
          "      - fs.write:/workdir/report.json\n      - fs.read:/etc/passwd\n      - egress:*\n"
          "      - fs.read:/workdir/agent.py\n      - egress:api.openai.com:443\n"
          "      - fs.write:/workdir/out/x\n"
          "capabilities:\n  egress: [{host: api.openai.com, port: 443, protocol: https}]\n"
          "  fs: {write: [/workdir/out]}\n  determinism_tier: read-only\n",
          "example-undeclared-capability");
  EXPECT_EQ(messages(f),
            "examples.basic claims egress:api.anthropic.com:443, which capabilities.egress does "
            "not declare\n"
            "examples.basic claims fs.write:/workdir/report.json, which capabilities.fs.write "
            "does not allow\n"
            "examples.basic claims fs.read:/etc/passwd, which capabilities.fs does not make "
            "readable\n"
            "examples.basic claims egress:*, which capabilities.egress does not declare\n");
  EXPECT_EQ(f[0].path, "examples[0].covers[0]");
  EXPECT_EQ(f[0].loc.line, 8);
  EXPECT_TRUE(run("examples: [{name: e, covers: [\"egress:a.test:1\", \"egress:*\"]}]\n"
                  "capabilities: {egress: [\"*\"], determinism_tier: unrestricted}\n",
                  "example-undeclared-capability")
                  .empty());
}

TEST(CapabilityLint, FsPathInvalidAndReserved) {
  auto f =
      run("tools:\n  - {name: t, kind: builtin.fs_read, path: data/x}\n"
          "capabilities:\n  fs:\n    read: [inputs, /workdir/./in, /a/../b, /workdir/in/]\n"
          "    write: [/workdir/out]\n  determinism_tier: read-only\n",
          "fs-path-invalid");
  EXPECT_EQ(messages(f),
            "tools.t path \"data/x\" is not an absolute path\n"
            "capabilities.fs.read[0] \"inputs\" is not an absolute path\n"
            "capabilities.fs.read[1] \"/workdir/./in\" is not normalised (write \"/workdir/in\")\n"
            "capabilities.fs.read[2] \"/a/../b\" contains \"..\"\n"
            "capabilities.fs.read[3] \"/workdir/in/\" is not normalised (write \"/workdir/in\")\n");
  f =
      run("capabilities:\n  fs:\n    read: [/, /proc, /sys/kernel, /dev/shm, /workdir, /devices]\n"
          "    write: [/workdir, /workdir/out]\n  determinism_tier: read-only\n",
          "fs-path-reserved");
  EXPECT_EQ(messages(f),
            "capabilities.fs.read[0] \"/\" is the sandbox root; name the directories the pack "
            "needs\n"
            "capabilities.fs.read[1] \"/proc\" is under /proc, which the runtime sets up itself\n"
            "capabilities.fs.read[2] \"/sys/kernel\" is under /sys, which the runtime sets up "
            "itself\n"
            "capabilities.fs.read[3] \"/dev/shm\" is under /dev, which the runtime sets up itself\n"
            "capabilities.fs.write[0] /workdir holds the pack's own files and stays read-only; "
            "list a sub-path such as /workdir/out\n");
  EXPECT_TRUE(run("capabilities: {fs: {read: [/workdir, /etc/ssl/certs], write: [/workdir/out, "
                  "/tmp]}, determinism_tier: read-only}\n",
                  "fs-path-invalid")
                  .empty());
}

TEST(CapabilityLint, FsReadInsideWrite) {
  auto f =
      run("capabilities:\n  fs:\n    read: [/workdir/out/ref, /workdir/outside, /workdir/out]\n"
          "    write: [/workdir/out]\n  determinism_tier: read-only\n",
          "fs-read-inside-write");
  EXPECT_EQ(messages(f),
            "capabilities.fs.read[0] /workdir/out/ref lies inside the writable "
            "capabilities.fs.write[0] /workdir/out\n");
}

TEST(CapabilityLint, FsToolUncovered) {
  auto f =
      run("tools:\n  - {name: save, kind: builtin.fs_write, path: /workdir/report.json}\n"
          "  - {name: load, kind: builtin.fs_read, path: /data/x}\n"
          "  - {name: ok1, kind: builtin.fs_read, path: /workdir/agent.py}\n"
          "  - {name: ok2, kind: builtin.fs_write, path: /workdir/out/r.json}\n"
          "  - {name: ok3, kind: builtin.fs_read, path: /workdir/out/r.json}\n"
          "capabilities: {fs: {write: [/workdir/out]}, determinism_tier: read-only}\n",
          "fs-uncovered-tool");
  EXPECT_EQ(messages(f),
            "tools.save writes /workdir/report.json but capabilities.fs.write does not allow it\n"
            "tools.load reads /data/x but capabilities.fs does not make it readable\n");
  EXPECT_EQ(f[0].path, "tools[0].path");
}

TEST(CapabilityLint, DuplicateEntries) {
  auto f =
      run("examples: [{name: e, covers: [\"egress:A.test:443\", \"egress:a.test.:443\"]}]\n"
          "capabilities:\n  egress:\n    - {host: a.test, port: 443, protocol: https}\n"
          "    - {host: A.TEST, port: 443, protocol: https}\n"
          "    - {host: a.test, port: 443, protocol: http}\n"
          "  fs:\n    read: [/workdir/in, /workdir/in, /workdir/out]\n"
          "    write: [/workdir/out, /workdir/out]\n  determinism_tier: read-only\n",
          "duplicate-entry");
  EXPECT_EQ(messages(f),
            "examples.e covers egress:a.test.:443 twice\n"
            "capabilities.egress[1] repeats capabilities.egress[0] (a.test:443:https)\n"
            "capabilities.fs.read[1] repeats capabilities.fs.read[0] (/workdir/in)\n"
            "capabilities.fs.read[2] /workdir/out is already readable through "
            "capabilities.fs.write[0]\n"
            "capabilities.fs.write[1] repeats capabilities.fs.write[0] (/workdir/out)\n");
  EXPECT_EQ(f[1].severity, Severity::warning);
  EXPECT_TRUE(
      run("capabilities: {fs: {read: [/a, /b]}, determinism_tier: read-only}\n", "duplicate-entry")
          .empty());
}

TEST(CapabilityLint, DuplicateNames) {
  auto f =
      run("tools:\n  - {name: f, kind: builtin.fs_read, path: /workdir/a}\n"
          "  - {name: f, kind: builtin.fs_read, path: /workdir/b}\n"
          "examples: [{name: e}, {name: e}, {name: g}]\n"
          "capabilities: {determinism_tier: read-only}\n",
          "duplicate-name");
  EXPECT_EQ(messages(f),
            "tools[1] repeats the tool name \"f\" of tools[0]\n"
            "examples[1] repeats the example name \"e\" of examples[0]\n");
  EXPECT_EQ(f[0].severity, Severity::error);
}

TEST(CapabilityLint, InterpreterMissingOnlyWithARootfs) {
  Manifest m = parse("capabilities: {determinism_tier: read-only}\n");
  EXPECT_TRUE(only(lint(m), "interpreter-missing").empty());
  LintOptions o;
  std::string asked;
  o.exists_in_rootfs = [&](const std::string& p) {
    asked = p;
    return false;
  };
  auto f = only(lint(m, o), "interpreter-missing");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(asked, "/usr/bin/python3");
  EXPECT_EQ(f[0].message, "runtime.interpreter /usr/bin/python3 does not exist in the rootfs");
  EXPECT_EQ(f[0].path, "runtime.interpreter");
  o.exists_in_rootfs = [](const std::string&) { return true; };
  EXPECT_TRUE(only(lint(m, o), "interpreter-missing").empty());
  o.exists_in_rootfs = [](const std::string&) -> bool { throw std::runtime_error("EACCES"); };
  f = only(lint(m, o), "interpreter-missing");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "runtime.interpreter /usr/bin/python3 does not exist in the rootfs (could not check: "
            "EACCES)");
}

// Issue 26: `lint --strict` passed a pack whose entrypoint file was missing.
TEST(CapabilityLint, EntrypointMissingOnlyWithAPackDir) {
  Manifest m = parse("capabilities: {determinism_tier: read-only}\n");
  EXPECT_TRUE(only(lint(m), "entrypoint-missing").empty());
  LintOptions o;
  std::string asked;
  o.exists_in_pack = [&](const std::string& p) {
    asked = p;
    return false;
  };
  auto f = only(lint(m, o), "entrypoint-missing");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(asked, m.runtime.entrypoint);
  EXPECT_EQ(f[0].severity, Severity::error);
  EXPECT_EQ(f[0].path, "runtime.entrypoint");
  EXPECT_EQ(f[0].message,
            "runtime.entrypoint " + m.runtime.entrypoint + " is not in the pack directory");
  o.exists_in_pack = [](const std::string&) { return true; };
  EXPECT_TRUE(only(lint(m, o), "entrypoint-missing").empty());
}

TEST(CapabilityLint, CleanManifestHasNoFindingsEvenStrict) {
  Manifest m = parse(
      "tools:\n  - {name: fetch, kind: builtin.http_get, url: \"https://api.openai.com/v1/x\"}\n"
      "  - {name: save, kind: builtin.fs_write, path: /workdir/out/r.json}\n"
      "examples:\n  - name: basic\n    covers: [\"egress:api.openai.com:443\", "
      "\"fs.write:/workdir/out\", \"fs.read:/workdir/inputs/a\"]\n"
      "capabilities:\n  egress: [{host: api.openai.com, port: 443, protocol: https}]\n"
      "  fs: {read: [/workdir, /workdir/inputs], write: [/workdir/out]}\n"
      "  determinism_tier: read-only\n");
  LintOptions o;
  o.strict = true;
  o.exists_in_rootfs = [](const std::string&) { return true; };
  auto f = lint(m, o);
  EXPECT_TRUE(f.empty()) << render_text(f);
  EXPECT_EQ(render_text(f), "0 errors \u00b7 0 warnings\n");
}

TEST(CapabilityLint, FindingsAreSortedByPositionAndCarryExplanations) {
  Manifest m = fetch_with_egress("10.0.0.1");
  auto f = lint(m);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].rule_id, "egress-uncovered-tool");
  EXPECT_EQ(f[1].rule_id, "egress-unused");
  EXPECT_EQ(f[2].rule_id, "egress-ip-literal");
  for (const auto& x : f) {
    EXPECT_EQ(x.explanation, find_rule(x.rule_id)->explanation);
    EXPECT_GT(x.loc.line, 0);
  }
}

TEST(CapabilityLint, SummaryPluralisation) {
  EXPECT_EQ(summary_line(0, 0), "0 errors \u00b7 0 warnings");
  EXPECT_EQ(summary_line(1, 0), "1 error \u00b7 0 warnings");
  EXPECT_EQ(summary_line(2, 1), "2 errors \u00b7 1 warning");
  EXPECT_EQ(summary_line(1, 2), "1 error \u00b7 2 warnings");
  EXPECT_EQ(std::string("\u00b7"), "\xc2\xb7");  // U+00B7 in UTF-8
}

TEST(CapabilityLint, TextRendering) {
  std::vector<Finding> f(3);
  f[0].severity = Severity::error;
  f[0].message = "first";
  f[1].severity = Severity::warning;
  f[1].message = "second";
  f[2].severity = Severity::warning;
  f[2].message = "third";
  EXPECT_EQ(render_text(f), "err   first\nwarn  second\nwarn  third\n1 error \u00b7 2 warnings\n");
  EXPECT_EQ(count(f, Severity::warning), 2u);
  EXPECT_TRUE(has_errors(f));
  f.erase(f.begin());
  EXPECT_FALSE(has_errors(f));
}

TEST(CapabilityLint, JsonRendering) {
  Manifest m = fetch_with_egress("api.openai.com");
  auto f = lint(m);
  auto j = nlohmann::json::parse(render_json(f, "soyapack.yaml"));
  EXPECT_EQ(j["file"], "soyapack.yaml");
  EXPECT_EQ(j["errors"], 1);
  EXPECT_EQ(j["warnings"], 1);
  ASSERT_EQ(j["findings"].size(), 2u);
  const auto& e = j["findings"][0];
  EXPECT_EQ(e["rule"], "egress-uncovered-tool");
  EXPECT_EQ(e["severity"], "error");
  EXPECT_EQ(e["path"], "tools[0].url");
  EXPECT_EQ(e["line"], 8);
  EXPECT_EQ(e["column"], 10);
  EXPECT_EQ(e["message"],
            "capabilities.egress declares api.openai.com:443 but tools.fetch uses "
            "api.anthropic.com:443");
  EXPECT_EQ(e["explanation"], std::string(find_rule("egress-uncovered-tool")->explanation));
  EXPECT_EQ(j["findings"][1]["severity"], "warning");
  // Key order is stable, and unknown positions are left out.
  std::vector<Finding> one(1);
  one[0].rule_id = "x";
  one[0].message = "m";
  EXPECT_EQ(
      render_json(one),
      R"({"findings":[{"rule":"x","severity":"error","path":"","message":"m","explanation":""}],"errors":1,"warnings":0})");
  EXPECT_EQ(render_json({}), R"({"findings":[],"errors":0,"warnings":0})");
}

TEST(CapabilityLint, RuleTableAndDocsAgree) {
  std::ifstream in(std::string(COMET_SOURCE_DIR) + "/docs/lint-rules.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  ASSERT_FALSE(doc.empty());
  std::set<std::string> ids;
  for (const auto& r : lint_rules()) {
    EXPECT_TRUE(ids.insert(std::string(r.id)).second) << r.id;
    EXPECT_EQ(find_rule(r.id), &r);
    EXPECT_NE(doc.find("\n## " + std::string(r.id) + "\n"), std::string::npos) << r.id;
    // The doc carries the explanation text itself.
    EXPECT_NE(doc.find(std::string(r.explanation.substr(0, 40))), std::string::npos) << r.id;
    EXPECT_FALSE(r.explanation.empty());
  }
  // ...and no section for a rule that does not exist.
  std::size_t pos = 0;
  while ((pos = doc.find("\n## ", pos)) != std::string::npos) {
    pos += 4;
    std::string id = doc.substr(pos, doc.find('\n', pos) - pos);
    EXPECT_TRUE(ids.count(id)) << id;
  }
  EXPECT_EQ(find_rule("no-such-rule"), nullptr);
  EXPECT_EQ(lint_rules().size(), 18u);
}

TEST(CapabilityLint, ValidateRefusesExactlyTheValidateRules) {
  // A manifest that trips every validate rule at once reports the first.
  Manifest m = parse(
      "tools:\n  - {name: p, kind: builtin.http_post, url: \"https://a.test/\"}\n"
      "capabilities: {egress: [{host: a.test, port: 443, protocol: https}], determinism_tier: "
      "read-only}\n");
  auto st = validate(m);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message(),
            "soyapack.yaml:6:21: tools[0].kind: capabilities.determinism_tier is read-only but "
            "tools.p uses builtin.http_post, which has side effects");
  // Non-validate errors (egress-uncovered-tool) do not fail validate.
  Manifest ok = parse(kFetch + "capabilities: {determinism_tier: read-only}\n");
  EXPECT_TRUE(validate(ok).ok());
  EXPECT_FALSE(lint(ok).empty());
}

// Red team (issue 21, round 5): a manifest string holding U+009B (CSI, a C1
// control a double-quoted YAML "\x9b" gives) reached the terminal raw in
// lint's text and JSON output.
TEST(CapabilityLint, C1ControlsInMessagesAreEscaped) {
  Finding f;
  f.rule_id = "x";
  f.severity = Severity::warning;
  f.message =
      "/etc\xc2\x9b"
      "36m and \x1b[2J";
  std::string text = render_text({f});
  EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos) << text;
  EXPECT_NE(text.find("/etc\\x9b36m and \\x1b[2J"), std::string::npos) << text;
  std::string json = render_json({f}, "", -1);
  for (unsigned char c : json) EXPECT_LT(c, 0x80) << json;
  EXPECT_NE(json.find("\\u009b"), std::string::npos) << json;
}
