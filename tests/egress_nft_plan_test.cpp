// egress/nft_plan: the ruleset text per mode, pinned by golden files
// (tests/data/egress/*.nft; COMET_UPDATE_GOLDEN=1 rewrites them), and the
// set-element commands the resolver sends.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "comet/egress/nft_plan.hpp"

namespace fs = std::filesystem;
using namespace comet;
using namespace comet::egress;
using capability::EgressEntry;
using capability::Protocol;

namespace {

const fs::path kGolden = fs::path(COMET_TEST_DATA) / "egress";

capability::Egress entries(std::vector<EgressEntry> e) {
  capability::Egress g;
  g.entries = std::move(e);
  return g;
}

void golden(const std::string& name, const std::string& text) {
  fs::path p = kGolden / name;
  const char* u = std::getenv("COMET_UPDATE_GOLDEN");
  if (u && *u == '1') {
    std::ofstream(p) << text;
    return;
  }
  std::ifstream in(p);
  ASSERT_TRUE(in) << p << " missing: run with COMET_UPDATE_GOLDEN=1";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), text) << "golden " << p;
}

}  // namespace

TEST(EgressNftPlan, IssuePackGolden) {
  Allowlist a(entries({{"api.test", 443, Protocol::https}, {"*.cdn.test", 8443, Protocol::tcp}}));
  EXPECT_EQ(mode_of(a), Mode::filtered);
  std::string text = ruleset_text(a, "comet");
  golden("issue-pack.nft", text);
  // The order that makes it fail closed.
  auto at = [&](const std::string& s) { return text.find(s); };
  ASSERT_NE(at("policy drop"), std::string::npos);
  EXPECT_LT(at("ct state established,related accept"), at("@allow4"));
  EXPECT_LT(at("th dport { 53, 853 } drop"), at("@allow4"));
  EXPECT_LT(at("oif \"lo\" drop"), at("@allow4"));
  EXPECT_LT(at("@allow6"), at("reject with tcp reset"));
  EXPECT_EQ(text.find("elements"), std::string::npos);  // names are pinned at run time
}

TEST(EgressNftPlan, LiteralsAreElementsWithoutTimeout) {
  Allowlist a(entries({{"10.1.2.3", 8080, Protocol::http},
                       {"fd00::7", 5353, Protocol::udp},
                       {"10.1.2.3", 53, Protocol::dns},  // dns opens nothing
                       {"api.test", 443, Protocol::https}}));
  std::string text = ruleset_text(a, "comet");
  golden("literals.nft", text);
  EXPECT_NE(text.find("elements = { 10.1.2.3 . tcp . 8080 }"), std::string::npos);
  EXPECT_NE(text.find("elements = { fd00::7 . udp . 5353 }"), std::string::npos);
  EXPECT_EQ(text.find(". 53 }"), std::string::npos);
}

TEST(EgressNftPlan, OpenAndNone) {
  capability::Egress any;
  any.any = true;
  Allowlist open(any);
  EXPECT_EQ(mode_of(open), Mode::open);
  std::string o = ruleset_text(open, "comet");
  golden("open.nft", o);
  EXPECT_NE(o.find("policy accept"), std::string::npos);
  EXPECT_NE(o.find("th dport { 53, 853 } drop"), std::string::npos);

  Allowlist none(capability::Egress{});
  EXPECT_EQ(mode_of(none), Mode::none);
  std::string n = ruleset_text(none, "comet_0123456789abcdef");
  golden("none.nft", n);
  EXPECT_NE(n.find("policy drop"), std::string::npos);
  EXPECT_EQ(n.find("@allow4"), std::string::npos);
}

TEST(EgressNftPlan, ElementCommands) {
  std::vector<Pin> pins = {{"10.77.0.10", false, {kTcp, 443}, 65},
                           {"fd77::10", true, {kTcp, 443}, 65},
                           {"10.77.0.11", false, {kUdp, 9000}, 305}};
  EXPECT_EQ(add_elements_text("comet", pins),
            "add element inet comet allow4 { 10.77.0.10 . tcp . 443 timeout 65s, "
            "10.77.0.11 . udp . 9000 timeout 305s }\n"
            "add element inet comet allow6 { fd77::10 . tcp . 443 timeout 65s }\n");
  EXPECT_EQ(delete_elements_text("comet", {pins[1]}),
            "delete element inet comet allow6 { fd77::10 . tcp . 443 }\n");
  EXPECT_EQ(add_elements_text("comet", {}), "");
}

TEST(EgressNftPlan, TableNames) {
  EXPECT_EQ(table_name("abc", false), "comet");
  std::string t = table_name("abc", true);
  EXPECT_EQ(t.size(), 6u + 16u);
  EXPECT_EQ(t.rfind("comet_", 0), 0u);
  EXPECT_NE(t, table_name("abd", true));
  EXPECT_EQ(t, table_name("abc", true));
}
