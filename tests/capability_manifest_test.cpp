// The manifest model and parser: a full parse, positions, tool URLs,
// covers, the annotation JSON form, validate() on manifests built in code,
// and robustness (no exception escapes). Every parser error path with its
// exact text is pinned by the corpus in tests/data/capability/bad (see
// capability_schema_test.cpp); a few are repeated here inline.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "comet/capability/manifest.hpp"

#include "support/seed_manifest.hpp"

using namespace comet::capability;

namespace {

using comet::test::kSeed;

Manifest minimal() {
  Manifest m;
  m.name = "tiny";
  m.version = "1.0.0";
  m.runtime.interpreter = "/usr/bin/python3";
  m.runtime.entrypoint = "main.py";
  m.file = "soyapack.yaml";
  return m;
}

std::string err(std::string_view yaml) {
  auto r = load_manifest(yaml);
  return r.ok() ? "OK" : r.error().message();
}

}  // namespace

TEST(CapabilityManifest, ParsesTheSeedExample) {
  auto r = load_manifest(kSeed);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const Manifest& m = *r;
  EXPECT_EQ(m.api_version, "soyapack/v0");
  EXPECT_EQ(m.name, "weather-agent");
  EXPECT_EQ(m.version, "1.4.2");
  EXPECT_EQ(m.runtime.interpreter, "/usr/bin/python3");
  EXPECT_EQ(m.runtime.entrypoint, "agent.py");
  EXPECT_EQ(m.runtime.args, (std::vector<std::string>{"--city", "Oslo"}));
  EXPECT_EQ(m.runtime.env.at("LANG"), "C.UTF-8");
  ASSERT_EQ(m.tools.size(), 1u);
  EXPECT_EQ(m.tools[0].name, "fetch");
  EXPECT_EQ(m.tools[0].kind, ToolKind::http_get);
  EXPECT_EQ(m.tools[0].url, "https://api.openai.com/v1/chat/completions");
  ASSERT_EQ(m.examples.size(), 1u);
  EXPECT_EQ(m.examples[0].covers.size(), 2u);
  const Capabilities& c = m.capabilities;
  EXPECT_FALSE(c.egress.any);
  ASSERT_EQ(c.egress.entries.size(), 1u);
  EXPECT_EQ(c.egress.entries[0], (EgressEntry{"api.openai.com", 443, Protocol::https}));
  EXPECT_EQ(c.fs.read, (std::vector<std::string>{"/workdir", "/workdir/inputs"}));
  EXPECT_EQ(c.fs.write, (std::vector<std::string>{"/workdir/out"}));
  EXPECT_EQ(c.tier, Tier::read_only);
  EXPECT_TRUE(m.profile.empty());
}

TEST(CapabilityManifest, RecordsPositionsOfValues) {
  auto r = parse_manifest(kSeed);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->loc("name").line, 2);
  EXPECT_EQ(r->loc("name").column, 7);
  EXPECT_EQ(r->loc("tools[0].url").line, 12);
  EXPECT_EQ(r->loc("tools[0].url").column, 10);
  EXPECT_EQ(r->loc("capabilities.egress[0].port").line, 19);
  EXPECT_EQ(r->loc("capabilities.egress[0].port").column, 36);
  // Unknown paths fall back to their nearest recorded parent.
  EXPECT_EQ(r->loc("capabilities.egress[0].nope").line, 19);
  EXPECT_EQ(r->where("tools[0].url"), "soyapack.yaml:12:10: tools[0].url: ");
  EXPECT_EQ(Manifest{}.where("x"), "soyapack.yaml: x: ");
}

TEST(CapabilityManifest, EgressStarForms) {
  const std::string head =
      "apiVersion: soyapack/v0\nname: a\nversion: 0.1.0\n"
      "runtime: {interpreter: /bin/sh, entrypoint: a.sh}\n";
  for (const char* e : {"[\"*\"]", "\"*\"", "['*']"}) {
    auto r =
        load_manifest(head + "capabilities: {egress: " + e + ", determinism_tier: unrestricted}\n");
    ASSERT_TRUE(r.ok()) << e << ": " << r.error().message();
    EXPECT_TRUE(r->capabilities.egress.any);
    EXPECT_TRUE(r->capabilities.egress.entries.empty());
  }
  auto r = load_manifest(head + "capabilities: {egress: [], determinism_tier: read-only}\n");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->capabilities.egress.any);
}

TEST(CapabilityManifest, EgressNeverNamesTheHostOrItsLink) {
  const std::string head =
      "apiVersion: soyapack/v0\nname: a\nversion: 0.1.0\n"
      "runtime: {interpreter: /bin/sh, entrypoint: a.sh}\n";
  auto with = [&](const std::string& host) {
    return err(head + "capabilities: {egress: [{host: \"" + host +
               "\", port: 80, protocol: http}], determinism_tier: side-effect}\n");
  };
  const std::pair<const char*, const char*> refused[] = {
      {"169.254.169.254", "a cloud metadata address"},
      {"fd00:ec2::254", "a cloud metadata address"},
      {"::ffff:169.254.169.254", "a cloud metadata address"},
      {"169.254.1.2", "a link-local address"},
      {"fe80::1", "a link-local address"},
      {"127.0.0.1", "a loopback address"},
      {"127.9.9.9", "a loopback address"},
      {"::1", "a loopback address"},
      {"::ffff:127.0.0.1", "a loopback address"},
      {"0.0.0.0", "the unspecified address"},
      {"::", "the unspecified address"},
      {"224.0.0.1", "a multicast address"},
      {"255.255.255.255", "the broadcast address"},
      {"240.0.0.1", "a reserved address"},
      {"::ffff:8.8.8.8", "an IPv4-mapped address"},
      {"64:ff9b::169.254.169.254", "a cloud metadata address (inside a NAT64 address)"},
      {"2002:7f00:1::1", "a loopback address (inside a 6to4 address)"},
  };
  for (const auto& [host, kind] : refused) {
    std::string e = with(host);
    EXPECT_NE(e.find(std::string("\"") + host + "\" is " + kind), std::string::npos)
        << host << ": " << e;
    EXPECT_NE(e.find("an egress entry can never name it"), std::string::npos) << e;
  }
  for (const char* ok : {"10.1.2.3", "192.0.2.1", "2001:db8::1", "api.test", "169.254.example"})
    EXPECT_EQ(with(ok), "OK") << ok;
  // the annotation form (an engine's config) is held to the same rule
  auto a = capabilities_from_json(
      R"({"egress":[{"host":"169.254.169.254","port":80,"protocol":"http"}],"determinism_tier":"side-effect"})");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("a cloud metadata address"), std::string::npos)
      << a.error().message();
}

TEST(CapabilityManifest, InlineErrorsHaveFileLineColumnAndPath) {
  const std::string head =
      "apiVersion: soyapack/v0\nname: a\nversion: 0.1.0\n"
      "runtime: {interpreter: /bin/sh, entrypoint: a.sh}\n";
  EXPECT_EQ(
      err(head + "capabilities:\n  egress:\n    - {host: a.test, port: 443, protocol: https}\n"
                 "    - {host: b.test, port: https, protocol: https}\n"
                 "  determinism_tier: read-only\n"),
      "soyapack.yaml:8:28: capabilities.egress[1].port: expected an integer 1..65535, got "
      "\"https\"");
  EXPECT_EQ(
      err(head + "capabilities: {determinism_tier: read-only, egress: [{host: a.test, port: "
                 "443, protocol: quic}]}\n"),
      "soyapack.yaml:5:90: capabilities.egress[0].protocol: unknown protocol \"quic\" (known: "
      "https, http, tcp, udp, dns, tls)");
  auto tls = parse_manifest(head +
                                "capabilities: {determinism_tier: read-only, egress: [{host: "
                                "mail.test, port: 993, protocol: tls}]}\n",
                            "soyapack.yaml");
  ASSERT_TRUE(tls.ok()) << tls.error().message();
  EXPECT_EQ(tls->capabilities.egress.entries.at(0).protocol, Protocol::tls);
  EXPECT_EQ(to_string(Protocol::tls), "tls");
  auto r = parse_manifest("name: [unclosed", "packs/x/soyapack.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().rfind("packs/x/soyapack.yaml:", 0), 0u) << r.error().message();
}

TEST(CapabilityManifest, NoExceptionEscapesOnHostileInput) {
  const std::vector<std::string> inputs = {
      std::string("\0\1\2\3", 4),
      "\xff\xfe",
      "[[[[[[[[[[",
      "{a: *b}",
      "!!binary AAAA",
      "apiVersion: soyapack/v0\nname: !!int x\n",
      "apiVersion: [1]\n",
      "? [a]\n: b\n",
      "apiVersion: soyapack/v0\nname: a\nversion: 0.0.1\nruntime: {interpreter: /a, entrypoint: "
      "b}\ncapabilities: {egress: [{host: a, port: 99999999999999999999999, protocol: https}], "
      "determinism_tier: read-only}\n",
      "\t- tab\n",
      "---\n...\n---\n",
      std::string(100000, '['),
  };
  for (const auto& in : inputs) {
    auto r = load_manifest(in);
    EXPECT_FALSE(r.ok()) << in.substr(0, 40);
    auto c = capabilities_from_json(in);
    EXPECT_FALSE(c.ok());
  }
}

TEST(CapabilityManifest, ToolUrls) {
  auto ep = parse_tool_url(ToolKind::http_get, "https://api.openai.com/v1/x?y=1");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->protocol, Protocol::https);
  EXPECT_EQ(ep->host, "api.openai.com");
  EXPECT_EQ(ep->port, 443);
  EXPECT_EQ(ep->path, "/v1/x?y=1");
  ep = parse_tool_url(ToolKind::http_post, "HTTP://Example.COM");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->protocol, Protocol::http);
  EXPECT_EQ(ep->host, "example.com");
  EXPECT_EQ(ep->port, 80);
  ep = parse_tool_url(ToolKind::http_get, "http://[2001:db8::1]:8080/");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->host, "2001:db8::1");
  EXPECT_EQ(ep->port, 8080);
  ep = parse_tool_url(ToolKind::dns_query, "dns://1.1.1.1");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->port, 53);
  EXPECT_EQ(ep->protocol, Protocol::dns);
  ep = parse_tool_url(ToolKind::udp_send, "udp://stats.test:8125");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->protocol, Protocol::udp);

  auto bad = [](ToolKind k, const char* u) {
    auto r = parse_tool_url(k, u);
    return r.ok() ? std::string("OK") : r.error().message();
  };
  EXPECT_EQ(bad(ToolKind::fs_read, "https://a.test/"), "builtin.fs_read takes a path, not a url");
  EXPECT_EQ(bad(ToolKind::tcp_connect, "https://a.test/"),
            "builtin.tcp_connect expects a tcp:// URL, got \"https://a.test/\"");
  EXPECT_EQ(bad(ToolKind::http_get, "https://a.test:/"),
            "expected scheme://host[:port][/path], got \"https://a.test:/\"");
  EXPECT_EQ(bad(ToolKind::http_get, "https://[::1/"),
            "expected scheme://host[:port][/path], got \"https://[::1/\"");
  EXPECT_EQ(bad(ToolKind::http_get, "https:///x"),
            "expected scheme://host[:port][/path], got \"https:///x\"");
  EXPECT_EQ(bad(ToolKind::http_get, "https://a.test:0/"),
            "expected a port 1..65535 in \"https://a.test:0/\"");
  EXPECT_EQ(bad(ToolKind::http_get, "https://a_b.test/"), "expected a host name, got \"a_b.test\"");
  EXPECT_EQ(bad(ToolKind::udp_send, "udp://a.test"),
            "udp:// URLs need an explicit port, got \"udp://a.test\"");
}

TEST(CapabilityManifest, Covers) {
  auto c = parse_cover("egress:api.openai.com:443");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, Cover::Kind::egress);
  EXPECT_EQ(c->host, "api.openai.com");
  EXPECT_EQ(c->port, 443);
  c = parse_cover("egress:[::1]:53");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(to_string(*c), "egress:[::1]:53");
  c = parse_cover("egress:*");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->any);
  c = parse_cover("fs.write:/workdir/out/x.json");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, Cover::Kind::fs_write);
  EXPECT_EQ(to_string(*c), "fs.write:/workdir/out/x.json");
  for (const char* bad : {"egress:api.openai.com", "egress::443", "egress:a.test:http",
                          "egress:a.test:70000", "fs.exec:/x", "fs.read:x", "nothing"}) {
    EXPECT_FALSE(parse_cover(bad).ok()) << bad;
  }
}

TEST(CapabilityManifest, AnnotationJsonRoundTrip) {
  auto m = load_manifest(kSeed);
  ASSERT_TRUE(m.ok());
  std::string j = capabilities_to_json(m->capabilities);
  EXPECT_EQ(j, R"({"egress":[{"host":"api.openai.com","port":443,"protocol":"https"}],)"
               R"("fs":{"read":["/workdir","/workdir/inputs"],"write":["/workdir/out"]},)"
               R"("determinism_tier":"read-only"})");
  auto back = capabilities_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->egress.entries, m->capabilities.egress.entries);
  EXPECT_EQ(back->fs.read, m->capabilities.fs.read);
  EXPECT_EQ(back->fs.write, m->capabilities.fs.write);
  EXPECT_EQ(back->tier, Tier::read_only);

  Capabilities any;
  any.egress.any = true;
  any.tier = Tier::unrestricted;
  EXPECT_EQ(capabilities_to_json(any),
            R"({"egress":["*"],"fs":{"read":[],"write":[]},"determinism_tier":"unrestricted"})");
  ASSERT_TRUE(capabilities_from_json(capabilities_to_json(any)).ok());
}

TEST(CapabilityManifest, AnnotationJsonIsStrict) {
  auto e = [](const char* j) {
    auto r = capabilities_from_json(j);
    return r.ok() ? std::string("OK") : r.error().message();
  };
  EXPECT_EQ(e(R"({"egress":[],"determinism_tier":"read-only","extra":1})"),
            "annotation org.soyaos.comet.capabilities:1:45: extra: unknown field (known: egress, "
            "fs, determinism_tier)");
  EXPECT_EQ(
      e(R"({"egress":[{"host":"a.test","port":"443","protocol":"https"}],"determinism_tier":"read-only"})"),
      "annotation org.soyaos.comet.capabilities:1:36: egress[0].port: expected an integer "
      "1..65535, got \"443\"");
  EXPECT_EQ(e("egress: []\ndeterminism_tier: read-only\n"),
            "annotation org.soyaos.comet.capabilities: invalid JSON");
  EXPECT_EQ(e(R"({"egress":["*"],"determinism_tier":"read-only"})"),
            "annotation org.soyaos.comet.capabilities: capabilities.egress: is \"*\" but "
            "determinism_tier is read-only; \"*\" needs unrestricted");
  EXPECT_EQ(e(R"({"fs":{"write":["/workdir"]},"determinism_tier":"read-only"})"),
            "annotation org.soyaos.comet.capabilities: capabilities.fs.write[0]: /workdir holds "
            "the pack's own files and stays read-only; list a sub-path such as /workdir/out");
}

TEST(CapabilityManifest, ValidateHoldsCodeBuiltManifestsToTheParsersRules) {
  EXPECT_TRUE(validate(minimal()).ok());
  auto v = [](const Manifest& m) {
    auto s = validate(m);
    return s.ok() ? std::string("OK") : s.error().message();
  };
  Manifest m = minimal();
  m.name = "Bad Name";
  EXPECT_EQ(v(m), "soyapack.yaml: name: expected 1 to 63 of [a-z0-9-], got \"Bad Name\"");
  m = minimal();
  m.api_version = "soyapack/v9";
  EXPECT_EQ(v(m), "soyapack.yaml: apiVersion: expected \"soyapack/v0\", got \"soyapack/v9\"");
  m = minimal();
  m.version = "1";
  EXPECT_EQ(v(m), "soyapack.yaml: version: expected a semantic version like 1.4.2, got \"1\"");
  m = minimal();
  m.runtime.interpreter = "/usr/bin/../bin/python3";
  EXPECT_EQ(v(m),
            "soyapack.yaml: runtime.interpreter: expected an absolute, normalised path to a "
            "program in the rootfs, got \"/usr/bin/../bin/python3\"");
  m = minimal();
  m.runtime.env["1X"] = "y";
  EXPECT_EQ(v(m),
            "soyapack.yaml: runtime.env.1X: expected an environment variable name "
            "([A-Za-z_][A-Za-z0-9_]*), got \"1X\"");
  m = minimal();
  m.tools.push_back(Tool{"t", ToolKind::http_get, "", "/x", ""});
  EXPECT_EQ(v(m), "soyapack.yaml: tools[0].path: builtin.http_get takes a url, not a path");
  m = minimal();
  m.tools.push_back(Tool{"t", ToolKind::fs_write, "", "", ""});
  EXPECT_EQ(v(m), "soyapack.yaml: tools[0]: builtin.fs_write needs a path");
  m = minimal();
  m.tools.push_back(Tool{"t", ToolKind::fs_write, "https://a.test/", "/workdir/out", ""});
  EXPECT_EQ(v(m), "soyapack.yaml: tools[0].url: builtin.fs_write takes a path, not a url");
  m = minimal();
  m.examples.push_back(Example{"e", {}, {"bogus"}, ""});
  EXPECT_EQ(v(m),
            "soyapack.yaml: examples[0].covers[0]: expected \"egress:HOST:PORT\", \"egress:*\", "
            "\"fs.read:PATH\" or \"fs.write:PATH\", got \"bogus\"");
  m = minimal();
  m.capabilities.egress.any = true;
  m.capabilities.tier = Tier::unrestricted;
  m.capabilities.egress.entries.push_back({"a.test", 443, Protocol::https});
  EXPECT_EQ(v(m), "soyapack.yaml: capabilities.egress: \"*\" must be the only entry");
  m = minimal();
  m.capabilities.egress.entries.push_back({"a.test", 0, Protocol::https});
  EXPECT_EQ(v(m),
            "soyapack.yaml: capabilities.egress[0].port: expected an integer 1..65535, got 0");
  m = minimal();
  m.profile = "NOPE";
  EXPECT_EQ(v(m), "soyapack.yaml: profile: expected 1 to 63 of [a-z0-9-], got \"NOPE\"");
  m = minimal();
  m.tools.push_back(Tool{"p", ToolKind::http_post, "https://a.test/", "", ""});
  m.capabilities.egress.entries.push_back({"a.test", 443, Protocol::https});
  EXPECT_EQ(v(m),
            "soyapack.yaml: tools[0].kind: capabilities.determinism_tier is read-only but tools.p "
            "uses builtin.http_post, which has side effects");
  m.capabilities.tier = Tier::side_effect;
  EXPECT_EQ(v(m), "OK");
}

TEST(CapabilityManifest, EnumTables) {
  EXPECT_EQ(tool_kinds().size(), 11u);
  for (const auto& k : tool_kinds()) {
    EXPECT_EQ(parse_tool_kind(k.name), k.kind);
    EXPECT_EQ(to_string(k.kind), k.name);
    EXPECT_EQ(info(k.kind).name, k.name);
  }
  EXPECT_FALSE(parse_tool_kind("builtin.exec"));
  for (auto p : protocol_names()) EXPECT_EQ(to_string(*parse_protocol(p)), p);
  for (auto t : tier_names()) EXPECT_EQ(to_string(*parse_tier(t)), t);
  EXPECT_FALSE(parse_protocol("HTTPS"));
  EXPECT_FALSE(parse_tier("readonly"));
  EXPECT_TRUE(info(ToolKind::http_post).side_effect);
  EXPECT_FALSE(info(ToolKind::http_get).side_effect);
  EXPECT_FALSE(info(ToolKind::fs_write).side_effect);
  EXPECT_TRUE(info(ToolKind::fs_write).writes);
}

TEST(CapabilityManifest, LoadPackReadsSoyapackYaml) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("comet-cap-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "soyapack.yaml") << kSeed;
  auto r = load_pack(dir.string());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->name, "weather-agent");
  EXPECT_EQ(r->file, (dir / "soyapack.yaml").string());
  std::string bad = kSeed;
  bad.replace(bad.find("weather-agent"), 13, "X");
  std::ofstream(dir / "soyapack.yaml") << bad;
  r = load_pack(dir.string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), (dir / "soyapack.yaml").string() +
                                     ":2:7: name: expected 1 to 63 of [a-z0-9-], got \"X\"");
  fs::remove_all(dir);
  r = load_pack(dir.string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().err(), ENOENT);
}

// A manifest is at most kMaxManifestBytes (1 MiB): longer text is refused
// before it is parsed, whether it comes as text (the CLI reads the file and
// parses it) or from a file, and a file is never read past the cap.
TEST(CapabilityManifest, OversizedManifestIsRefused) {
  namespace fs = std::filesystem;
  std::string at_cap = kSeed;
  at_cap += "#";
  at_cap.append(kMaxManifestBytes - at_cap.size() - 1, 'x');
  at_cap += "\n";
  ASSERT_EQ(at_cap.size(), kMaxManifestBytes);
  auto ok = load_manifest(at_cap);
  EXPECT_TRUE(ok.ok()) << ok.error().message();
  const std::string over = at_cap + "\n";
  auto r = parse_manifest(over, "big/soyapack.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "big/soyapack.yaml: larger than 1 MiB; not a manifest");
  r = load_manifest(over);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "soyapack.yaml: larger than 1 MiB; not a manifest");

  fs::path dir = fs::temp_directory_path() / ("comet-cap-big-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string file = (dir / "soyapack.yaml").string();
  std::ofstream(file, std::ios::binary) << over;
  r = load_pack(dir.string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), file + ": larger than 1 MiB; not a manifest");
  for (const std::string& path : {dir.string(), file}) {
    auto f = read_manifest_file(path);
    ASSERT_FALSE(f.ok()) << path;
    EXPECT_EQ(f.error().message(), file + ": larger than 1 MiB; not a manifest");
  }
  std::ofstream(file, std::ios::binary | std::ios::trunc) << at_cap;
  auto f = read_manifest_file(dir.string());
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->file, file);
  EXPECT_EQ(f->text, at_cap);
  EXPECT_TRUE(load_pack(dir.string()).ok());
  fs::remove_all(dir);
  f = read_manifest_file(file);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().err(), ENOENT);
  // An endless file stops at the cap.
  f = read_manifest_file("/dev/zero");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().message(), "/dev/zero: larger than 1 MiB; not a manifest");
}
