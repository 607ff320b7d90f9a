// capability/policy.hpp: the policy annotation, what the capabilities
// annotation implies, and tighten().
#include "comet/capability/policy.hpp"

#include <gtest/gtest.h>

namespace cap = comet::capability;
namespace oci = comet::oci;

namespace {
const char* kCapsNone =
    R"({"egress":[],"fs":{"read":["/workdir"],"write":[]},"determinism_tier":"read-only"})";
const char* kCapsEgress =
    R"({"egress":[{"host":"api.test","port":443,"protocol":"https"}],"fs":{"read":[],"write":[]},"determinism_tier":"side-effect"})";
}  // namespace

TEST(Policy, JsonRoundTrip) {
  cap::Policy p;
  p.lockdown = true;
  p.exec = std::vector<std::string>{"/usr/bin/python3"};
  p.network = cap::NetworkPolicy::none;
  p.profile = "strict";
  std::string j = cap::policy_to_json(p);
  EXPECT_EQ(j,
            R"({"lockdown":true,"exec":["/usr/bin/python3"],"network":"none","profile":"strict"})");
  auto back = cap::policy_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().what();
  EXPECT_EQ(*back, p);
  // The unix-socket rule (sandbox profiles): on with an allowlist, also empty.
  p.exec.reset();
  p.unix_allow = std::vector<std::string>{"/run/dbus/system_bus_socket"};
  j = cap::policy_to_json(p);
  EXPECT_EQ(j, R"({"lockdown":true,"network":"none","profile":"strict",)"
               R"("unix":{"allow":["/run/dbus/system_bus_socket"]}})");
  back = cap::policy_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().what();
  EXPECT_EQ(*back, p);
  p.unix_allow = std::vector<std::string>{};
  back = cap::policy_from_json(cap::policy_to_json(p));
  ASSERT_TRUE(back.ok()) << back.error().what();
  EXPECT_EQ(*back, p);
}

TEST(Policy, BadJsonIsAnErrorNamingTheAnnotation) {
  for (const char* bad :
       {"", "{", "[]", R"({"lockdown":"yes"})", R"({"exec":"/bin/sh"})", R"({"exec":["sh"]})",
        R"({"network":"sideways"})", R"({"profile":3})", R"({"unknown":true})", R"({"unix":[]})",
        R"({"unix":{"allow":["x.sock"]}})", R"({"unix":{"allow":[],"deny":[]}})"}) {
    auto r = cap::policy_from_json(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().what().find("org.soyaos.comet.policy"), std::string::npos)
        << r.error().what();
  }
}

TEST(Policy, NoAnnotationsNoPolicy) {
  auto r = cap::policy_from_annotations({{"other", "x"}});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

// Issue 26, trap 1: a misspelt confining annotation left the container
// unconfined while its config looked confined. Near misses are refused;
// other keys of the namespace (engines forward org.soyaos.comet.*) pass.
TEST(Policy, MisspeltAnnotationIsRefused) {
  for (const char* key : {"org.soyaos.comet.capabilites", "org.soyaos.comet.Capabilities",
                          "org.soyaos.comet.capability", "org.soyaos.comet-capabilities",
                          "org.soyaos.comet.polcy", "org.soyaos.comet.seccomp_profile"}) {
    auto r = cap::policy_from_annotations({{key, kCapsNone}});
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_NE(r.error().what().find(std::string("annotation ") + key + ": unknown ("),
              std::string::npos)
        << r.error().what();
  }
  auto r = cap::policy_from_annotations({{"org.soyaos.comet.engines-test", "x"},
                                         {"org.soyaos.comet.events", "/tmp/e.jsonl"},
                                         {"org.example.capabilities", "x"}});
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_FALSE(r->has_value());
}

TEST(Policy, CapabilitiesImplyLockdownAndNetwork) {
  auto r = cap::policy_from_annotations({{"org.soyaos.comet.capabilities", kCapsNone}});
  ASSERT_TRUE(r.ok()) << r.error().what();
  ASSERT_TRUE(r->has_value());
  EXPECT_TRUE((*r)->lockdown);
  EXPECT_EQ((*r)->network, cap::NetworkPolicy::none);
  EXPECT_FALSE((*r)->exec);
  r = cap::policy_from_annotations({{"org.soyaos.comet.capabilities", kCapsEgress}});
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ((*r)->network, cap::NetworkPolicy::egress);
}

TEST(Policy, ThePolicyAnnotationCannotLoosenTheCapabilities) {
  auto r = cap::policy_from_annotations(
      {{"org.soyaos.comet.capabilities", kCapsNone},
       {"org.soyaos.comet.policy", R"({"lockdown":false,"network":"open"})"}});
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_TRUE((*r)->lockdown);
  EXPECT_EQ((*r)->network, cap::NetworkPolicy::none);
  // ...and the capabilities cannot loosen the policy annotation either
  r = cap::policy_from_annotations(
      {{"org.soyaos.comet.capabilities", kCapsEgress},
       {"org.soyaos.comet.policy", R"({"lockdown":true,"network":"none","exec":["/bin/x"]})"}});
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ((*r)->network, cap::NetworkPolicy::none);
  ASSERT_TRUE((*r)->exec);
  EXPECT_EQ((*r)->exec->at(0), "/bin/x");
}

TEST(Policy, BadCapabilitiesAnnotationIsAnError) {
  auto r = cap::policy_from_annotations({{"org.soyaos.comet.capabilities", "{"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().what().find("org.soyaos.comet.capabilities"), std::string::npos);
}

TEST(Policy, TightenNeverLoosens) {
  oci::Spec s;
  oci::Process p;
  p.capabilities =
      oci::Capabilities{{"CAP_SYS_ADMIN"}, {"CAP_SYS_ADMIN"}, {}, {"CAP_SYS_ADMIN"}, {}};
  p.no_new_privileges = false;
  s.process = p;
  s.root = oci::Root{"rootfs", false};
  oci::Linux l;
  l.namespaces.push_back({"network", "/var/run/netns/engine"});
  l.namespaces.push_back({"user", ""});
  s.linux_ = l;
  cap::Policy pol;
  pol.lockdown = true;
  pol.network = cap::NetworkPolicy::egress;
  ASSERT_TRUE(cap::tighten(s, pol).ok());
  EXPECT_TRUE(s.process->no_new_privileges);
  EXPECT_TRUE(s.process->capabilities->bounding.empty());
  EXPECT_TRUE(s.process->capabilities->effective.empty());
  EXPECT_TRUE(s.process->capabilities->permitted.empty());
  EXPECT_TRUE(s.root->readonly);
  std::map<std::string, std::string> ns;
  for (auto& n : s.linux_->namespaces) ns[n.type] = n.path;
  EXPECT_EQ(ns.at("network"), "/var/run/netns/engine") << "an engine's netns stays joined";
  for (const char* t : {"pid", "ipc", "uts", "mount", "cgroup", "user"})
    EXPECT_TRUE(ns.count(t)) << t;
  EXPECT_EQ(ns.at("pid"), "");
}

TEST(Policy, RestrictedNetworkCannotUseTheHostNamespace) {
  oci::Spec s;
  s.linux_ = oci::Linux{};
  s.linux_->namespaces.push_back({"network", "/proc/1/ns/net"});
  cap::Policy pol;
  pol.network = cap::NetworkPolicy::none;
  auto r = cap::tighten(s, pol);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().what().find("host's network namespace"), std::string::npos);
}
