// egress/nft_plan: the ruleset text per mode, pinned by golden files
// (tests/data/egress/*.nft; COMET_UPDATE_GOLDEN=1 rewrites them), and the
// set-element commands the resolver sends; parse_nflog (what the refusals log).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netlink.h>
#include <netinet/in.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "comet/base/switches.hpp"
#include "comet/egress/nflog.hpp"
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
  if (comet::switches::update_golden()) {
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
  // (in the output chain: the judge's nat chain, before it, returns on @allow4)
  EXPECT_LT(at("ct state established,related accept"), at("@allow4 accept"));
  EXPECT_LT(at("th dport { 53, 853 } log prefix \"comet-dns\""), at("@allow4 accept"));
  EXPECT_LT(at("oif \"lo\" log prefix \"comet-egress\""), at("@allow4 accept"));
  EXPECT_LT(at("@allow6"), at("reject with tcp reset"));
  // Every refusal is logged to the resolver's NFLOG group first.
  for (const char* r : {"reject with tcp reset", "reject with icmpx type port-unreachable",
                        "reject with icmpx type admin-prohibited"}) {
    const std::size_t line = text.rfind('\n', at(r));
    EXPECT_NE(text.substr(line, at(r) - line).find("group 17229 snaplen 128"), std::string::npos)
        << r;
  }
  EXPECT_EQ(text.find("elements"), std::string::npos);  // names are pinned at run time
}

TEST(EgressNftPlan, LiteralsAreElementsWithoutTimeout) {
  Allowlist a(entries({{"10.1.2.3", 8080, Protocol::http},
                       {"fd00::7", 5353, Protocol::udp},
                       {"10.1.2.3", 53, Protocol::dns},  // dns opens nothing
                       {"api.test", 443, Protocol::https}}));
  std::string text = ruleset_text(a, "comet");
  golden("literals.nft", text);
  // An http literal is judged on the wire: an element of the judge set.
  EXPECT_NE(text.find("set judge4 {\n\t\ttype ipv4_addr . inet_service\n\t\tflags "
                      "timeout\n\t\telements = { 10.1.2.3 . 8080 }"),
            std::string::npos);
  EXPECT_NE(text.find("elements = { fd00::7 . udp . 5353 }"), std::string::npos);
  EXPECT_EQ(text.find(". 53 }"), std::string::npos);
}

TEST(EgressNftPlan, JudgedEntriesGoToTheJudge) {
  // https/http: the nat chain redirects the judge set to the judge; only a
  // marked socket may reach its elements; a direct connect to the judge's
  // port is not DNAT-ed and meets "oif lo drop".
  std::string text = ruleset_text(Allowlist(entries({{"api.test", 443, Protocol::https}})), "t");
  auto at = [&](const std::string& s) {
    auto p = text.find(s);
    EXPECT_NE(p, std::string::npos) << s;
    return p;
  };
  at("type nat hook output priority -100; policy accept;");
  EXPECT_LT(at("meta mark 0x636d6a67 return"), at("ip daddr . tcp dport @judge4 redirect to :54"));
  EXPECT_LT(at("ip daddr 127.0.0.1 tcp dport 54 ct status dnat accept"),
            at("oif \"lo\" log prefix \"comet-egress\""));
  EXPECT_LT(at("meta mark 0x636d6a67 ip daddr . tcp dport @judge4 accept"),
            at("meta l4proto tcp log prefix"));
  // Only tcp and udp entries: no judge at all.
  std::string plain = ruleset_text(Allowlist(entries({{"db.test", 5432, Protocol::tcp}})), "t");
  EXPECT_EQ(plain.find("judge"), std::string::npos);
  // Pins of a judged service go to the judge set, without the protocol.
  Pin p{"10.0.0.1", false, Service{kTcp, 443, true}, 65};
  Pin q{"10.0.0.1", false, Service{kTcp, 5432, false}, 65};
  EXPECT_EQ(add_elements_text("t", {p, q}),
            "add element inet t allow4 { 10.0.0.1 . tcp . 5432 timeout 65s }\n"
            "add element inet t judge4 { 10.0.0.1 . 443 timeout 65s }\n");
}

TEST(EgressNftPlan, OpenAndNone) {
  capability::Egress any;
  any.any = true;
  Allowlist open(any);
  EXPECT_EQ(mode_of(open), Mode::open);
  std::string o = ruleset_text(open, "comet");
  golden("open.nft", o);
  EXPECT_NE(o.find("policy accept"), std::string::npos);
  EXPECT_NE(o.find("th dport { 53, 853 } log prefix \"comet-dns\" group 17229 snaplen 128 drop"),
            std::string::npos);

  Allowlist none(capability::Egress{});
  EXPECT_EQ(mode_of(none), Mode::none);
  std::string n = ruleset_text(none, "comet_0123456789abcdef");
  golden("none.nft", n);
  EXPECT_NE(n.find("policy drop"), std::string::npos);
  EXPECT_EQ(n.find("@allow4"), std::string::npos);
}

// In a namespace of its own the table cannot exist yet: no replace prefix,
// and otherwise the same script.
TEST(EgressNftPlan, FreshNamespaceHasNoReplacePrefix) {
  capability::Egress any;
  any.any = true;
  Allowlist open(any);
  std::string replace = ruleset_text(open, "comet");
  std::string fresh = ruleset_text(open, "comet", /*replace=*/false);
  const std::string prefix = "add table inet comet\ndelete table inet comet\n";
  ASSERT_EQ(replace.rfind(prefix, 0), 0u);
  EXPECT_EQ(fresh, replace.substr(prefix.size()));
  EXPECT_EQ(fresh.rfind("table inet comet {\n", 0), 0u);
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

// parse_nflog: one NFULNL_MSG_PACKET as the kernel sends it (nfgenmsg, then
// attributes), carrying a TCP SYN's first bytes and the rule's prefix.
namespace {
void put_attr(std::vector<uint8_t>& m, uint16_t type, const void* data, std::size_t len) {
  nlattr a{static_cast<uint16_t>(NLA_HDRLEN + len), type};
  const auto* p = reinterpret_cast<const uint8_t*>(&a);
  m.insert(m.end(), p, p + sizeof a);
  const auto* d = static_cast<const uint8_t*>(data);
  m.insert(m.end(), d, d + len);
  m.resize(NLA_ALIGN(m.size()), 0);
}
std::vector<uint8_t> nflog_msg(const std::vector<uint8_t>& packet, const std::string& prefix,
                               uint16_t type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET) {
  std::vector<uint8_t> m(NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nfgenmsg)), 0);
  nfulnl_msg_packet_hdr ph{htons(0x0800), 3, 0};
  put_attr(m, NFULA_PACKET_HDR, &ph, sizeof ph);
  put_attr(m, NFULA_PREFIX, prefix.c_str(), prefix.size() + 1);
  put_attr(m, NFULA_PAYLOAD, packet.data(), packet.size());
  nlmsghdr h{static_cast<uint32_t>(m.size()), type, 0, 0, 0};
  std::memcpy(m.data(), &h, sizeof h);
  return m;
}
}  // namespace

TEST(EgressNflog, ParsesRefusedPackets) {
  // IPv4 10.0.0.2:40000 -> 10.9.9.9:443 TCP (header and ports only)
  std::vector<uint8_t> v4(24, 0);
  v4[0] = 0x45;
  v4[9] = IPPROTO_TCP;
  const uint8_t src[] = {10, 0, 0, 2}, dst[] = {10, 9, 9, 9};
  std::memcpy(&v4[12], src, 4);
  std::memcpy(&v4[16], dst, 4);
  v4[20] = 40000 >> 8, v4[21] = 40000 & 0xff, v4[22] = 443 >> 8, v4[23] = 443 & 0xff;
  // IPv6 fd00::2:5353 -> fd00::9:53 UDP
  std::vector<uint8_t> v6(44, 0);
  v6[0] = 0x60;
  v6[6] = IPPROTO_UDP;
  v6[8] = 0xfd, v6[23] = 2, v6[24] = 0xfd, v6[39] = 9;
  v6[40] = 5353 >> 8, v6[41] = 5353 & 0xff, v6[42] = 0, v6[43] = 53;
  std::vector<uint8_t> buf = nflog_msg(v4, "comet-egress");
  auto second = nflog_msg(v6, "comet-dns");
  buf.insert(buf.end(), second.begin(), second.end());
  auto other = nflog_msg(v4, "x", (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG);  // not a packet
  buf.insert(buf.end(), other.begin(), other.end());
  auto got = comet::egress::parse_nflog(buf.data(), buf.size());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (comet::egress::Blocked{"comet-egress", false, "10.0.0.2", "10.9.9.9",
                                            IPPROTO_TCP, 40000, 443}));
  EXPECT_EQ(got[1], (comet::egress::Blocked{"comet-dns", true, "fd00::2", "fd00::9", IPPROTO_UDP,
                                            5353, 53}));
  // Truncated input: nothing, and no read past the end.
  for (std::size_t n = 0; n < buf.size() / 2; ++n)
    EXPECT_LE(comet::egress::parse_nflog(buf.data(), n).size(), 1u);
}
