// config.json parsing, validation, serialisation and runc's default spec.
//
// Golden corpus under tests/data/oci/:
//   runc-spec.json      `runc spec` output (runc 1.1.5), compared to default_spec()
//   good/*.json         must parse and validate
//   bad/*.json + .err   parse (or, if that succeeds, validate) must fail with
//                       exactly the text in the sibling .err file
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comet/oci/spec.hpp"

#include "support/slurp.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace comet::oci;

namespace {

const fs::path kData = fs::path(COMET_TEST_DATA) / "oci";

using comet::test::slurp;

std::string chomp(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

Spec parse_ok(const std::string& text) {
  auto r = parse_spec(text);
  EXPECT_TRUE(r.ok()) << r.error().what();
  return r.ok() ? std::move(r).value() : Spec{};
}

Spec parse_file(const std::string& rel) {
  return parse_ok(slurp(kData / rel));
}

// The error parse_spec + validate_spec report, or "" when both succeed.
std::string first_error(const std::string& text) {
  auto r = parse_spec(text);
  if (!r.ok()) return r.error().what();
  comet::Status st = validate_spec(*r);
  return st.ok() ? std::string() : st.error().what();
}

std::string parse_error(const std::string& text) {
  auto r = parse_spec(text);
  return r.ok() ? std::string() : r.error().what();
}

std::string validate_error(const Spec& s) {
  comet::Status st = validate_spec(s);
  return st.ok() ? std::string() : st.error().what();
}

std::vector<fs::path> corpus(const char* dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kData / dir, ec))
    if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string test_name(const fs::path& p) {
  std::string n = p.stem().string();
  std::replace_if(
      n.begin(), n.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return n;
}

// A JSON document with the members the model only records as presence flags
// (and anything else it does not model) removed, for round-trip comparison.
json without_presence_only(json j) {
  if (j.contains("mounts")) {
    for (auto& m : j["mounts"]) {  // [] and null map nothing: omitted
      for (const char* k : {"uidMappings", "gidMappings"})
        if (m.contains(k) && (m[k].is_null() || m[k].empty())) m.erase(k);
    }
  }
  if (j.contains("linux")) {
    j["linux"].erase("intelRdt");
    if (j["linux"].contains("resources")) {
      j["linux"]["resources"].erase("network");
      j["linux"]["resources"].erase("rdma");
    }
  }
  j.erase("windows");
  j.erase("org.example.extension");
  return j;
}

}  // namespace

// ---------------------------------------------------------------------------
// Golden corpus.

class BadConfig : public ::testing::TestWithParam<fs::path> {};

TEST_P(BadConfig, ReportsExpectedError) {
  const fs::path json_path = GetParam();
  fs::path err_path = json_path;
  err_path.replace_extension(".err");
  ASSERT_TRUE(fs::exists(err_path)) << "missing " << err_path;
  EXPECT_EQ(first_error(slurp(json_path)), chomp(slurp(err_path)));
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadConfig, ::testing::ValuesIn(corpus("bad")),
                         [](const auto& param_info) { return test_name(param_info.param); });

class GoodConfig : public ::testing::TestWithParam<fs::path> {};

TEST_P(GoodConfig, ParsesValidatesAndRoundTrips) {
  const std::string text = slurp(GetParam());
  Spec s = parse_ok(text);
  EXPECT_EQ(validate_error(s), "");
  // Everything the model holds comes back out under the same names.
  EXPECT_EQ(json::parse(to_json(s)), without_presence_only(json::parse(text)));
  // And serialising is a fixed point.
  const std::string once = to_json(s);
  EXPECT_EQ(to_json(parse_ok(once)), once);
}

INSTANTIATE_TEST_SUITE_P(Corpus, GoodConfig, ::testing::ValuesIn([] {
                           auto v = corpus("good");
                           v.push_back(kData / "runc-spec.json");
                           return v;
                         }()),
                         [](const auto& param_info) { return test_name(param_info.param); });

TEST(Corpus, IsPopulated) {
  EXPECT_GE(corpus("bad").size(), 50u);
  EXPECT_GE(corpus("good").size(), 3u);
}

// ---------------------------------------------------------------------------
// default_spec() is `runc spec`.

TEST(DefaultSpec, MatchesRuncSpec) {
  const json runc = json::parse(slurp(kData / "runc-spec.json"));
  EXPECT_EQ(json::parse(to_json(default_spec())), runc);
}

// `runc spec --rootless` (run as root, so its mappings name id 0).
TEST(DefaultSpec, RootlessMatchesRuncRootless) {
  Spec s = default_spec();
  to_rootless(s, 0, 0);
  EXPECT_EQ(json::parse(to_json(s)), json::parse(slurp(kData / "good/runc-rootless.json")));
}

TEST(DefaultSpec, RootlessMapsTheCaller) {
  Spec s = default_spec();
  to_rootless(s, 1000, 1001);
  ASSERT_TRUE(s.linux_);
  ASSERT_EQ(s.linux_->uid_mappings.size(), 1u);
  EXPECT_EQ(s.linux_->uid_mappings[0].host_id, 1000u);
  EXPECT_EQ(s.linux_->gid_mappings[0].host_id, 1001u);
  EXPECT_FALSE(has_namespace(s, "network"));
  EXPECT_TRUE(has_namespace(s, "user"));
  EXPECT_FALSE(s.linux_->resources);
  EXPECT_EQ(validate_error(s), "");
}

TEST(DefaultSpec, ParsedRuncSpecSerialisesIdentically) {
  EXPECT_EQ(to_json(parse_file("runc-spec.json")), to_json(default_spec()));
}

TEST(DefaultSpec, Validates) {
  EXPECT_EQ(validate_error(default_spec()), "");
  EXPECT_EQ(validate_error(parse_file("good/runc-rootless.json")), "");
}

TEST(DefaultSpec, Contents) {
  Spec s = default_spec();
  EXPECT_EQ(s.oci_version, "1.0.2-dev");
  ASSERT_TRUE(s.process);
  EXPECT_EQ(s.process->args, std::vector<std::string>{"sh"});
  EXPECT_TRUE(s.process->terminal);
  EXPECT_TRUE(s.process->no_new_privileges);
  ASSERT_TRUE(s.process->capabilities);
  EXPECT_TRUE(s.process->capabilities->inheritable.empty());
  EXPECT_EQ(s.process->capabilities->ambient.size(), 3u);
  ASSERT_EQ(s.mounts.size(), 7u);
  EXPECT_EQ(s.mounts[6].destination, "/sys/fs/cgroup");
  ASSERT_TRUE(s.linux_);
  EXPECT_EQ(s.linux_->masked_paths.size(), 10u);
  EXPECT_EQ(s.linux_->readonly_paths.size(), 5u);
  EXPECT_TRUE(has_namespace(s, "network"));
  EXPECT_FALSE(has_namespace(s, "user"));
}

// ---------------------------------------------------------------------------
// Parsing: every field lands where it belongs.

TEST(Parse, FullConfigFields) {
  Spec s = parse_file("good/full.json");
  EXPECT_EQ(s.oci_version, "1.2.0");
  ASSERT_TRUE(s.process);
  const Process& p = *s.process;
  EXPECT_TRUE(p.terminal);
  ASSERT_TRUE(p.console_size);
  EXPECT_EQ(p.console_size->height, 25u);
  EXPECT_EQ(p.console_size->width, 80u);
  EXPECT_EQ(p.user.uid, 1000u);
  EXPECT_EQ(p.user.gid, 1001u);
  EXPECT_EQ(p.user.umask, 18u);
  EXPECT_EQ(p.user.additional_gids, (std::vector<uint32_t>{5, 6, 4294967295u}));
  EXPECT_EQ(p.user.username, "alice");
  EXPECT_EQ(p.args.size(), 3u);
  EXPECT_EQ(p.command_line, "sh -c \"echo hi\"");
  EXPECT_EQ(p.env[2], "EMPTY=");
  EXPECT_EQ(p.cwd, "/home/alice");
  ASSERT_TRUE(p.capabilities);
  EXPECT_EQ(p.capabilities->bounding.size(), 3u);
  EXPECT_EQ(p.capabilities->effective, std::vector<std::string>{"CAP_KILL"});
  EXPECT_EQ(p.capabilities->inheritable, std::vector<std::string>{"CAP_NET_RAW"});
  EXPECT_EQ(p.capabilities->permitted.size(), 2u);
  EXPECT_EQ(p.capabilities->ambient, std::vector<std::string>{"CAP_BPF"});
  ASSERT_EQ(p.rlimits.size(), 2u);
  EXPECT_EQ(p.rlimits[0].type, "RLIMIT_NOFILE");
  EXPECT_EQ(p.rlimits[0].hard, 4096u);
  EXPECT_EQ(p.rlimits[0].soft, 1024u);
  EXPECT_EQ(p.rlimits[1].hard, UINT64_MAX);
  EXPECT_TRUE(p.no_new_privileges);
  EXPECT_EQ(p.apparmor_profile, "comet-default");
  EXPECT_EQ(p.oom_score_adj, -500);
  EXPECT_EQ(p.selinux_label, "system_u:system_r:svirt_lxc_net_t:s0:c124,c675");
  EXPECT_FALSE(p.io_priority || p.scheduler || p.exec_cpu_affinity);

  ASSERT_TRUE(s.root);
  EXPECT_EQ(s.root->path, "/var/lib/comet/rootfs");
  EXPECT_TRUE(s.root->readonly);
  EXPECT_EQ(s.hostname, "full");
  EXPECT_EQ(s.domainname, "example.org");
  ASSERT_EQ(s.mounts.size(), 3u);
  EXPECT_EQ(s.mounts[1].destination, "/data");
  EXPECT_EQ(s.mounts[1].type, "bind");
  EXPECT_EQ(s.mounts[1].source, "/srv/data");
  EXPECT_EQ(s.mounts[1].options, (std::vector<std::string>{"rbind", "ro", "nosuid"}));
  EXPECT_EQ(s.mounts[2].type, "");
  EXPECT_TRUE(s.mounts[0].uid_mappings.empty());

  ASSERT_TRUE(s.hooks);
  ASSERT_EQ(s.hooks->prestart.size(), 1u);
  EXPECT_EQ(s.hooks->prestart[0].path, "/usr/bin/prestart");
  EXPECT_EQ(s.hooks->prestart[0].args, (std::vector<std::string>{"prestart", "a"}));
  EXPECT_EQ(s.hooks->prestart[0].env, std::vector<std::string>{"A=1"});
  EXPECT_EQ(s.hooks->prestart[0].timeout, 5);
  EXPECT_EQ(s.hooks->create_runtime.at(0).path, "/usr/bin/create-runtime");
  EXPECT_FALSE(s.hooks->create_runtime.at(0).timeout);
  EXPECT_EQ(s.hooks->create_container.at(0).timeout, 1);
  EXPECT_EQ(s.hooks->start_container.at(0).args, std::vector<std::string>{"sc"});
  EXPECT_EQ(s.hooks->poststart.at(0).env.size(), 2u);
  EXPECT_EQ(s.hooks->poststop.size(), 2u);
  EXPECT_EQ(s.annotations.at("org.example.key"), "value");
  EXPECT_EQ(s.annotations.at("com.example.empty"), "");

  ASSERT_TRUE(s.linux_);
  const Linux& l = *s.linux_;
  ASSERT_EQ(l.uid_mappings.size(), 1u);
  EXPECT_EQ(l.uid_mappings[0].host_id, 100000u);
  EXPECT_EQ(l.uid_mappings[0].size, 65536u);
  ASSERT_EQ(l.gid_mappings.size(), 2u);
  EXPECT_EQ(l.gid_mappings[1].container_id, 70000u);
  EXPECT_EQ(l.gid_mappings[1].host_id, 4294967295u);
  EXPECT_EQ(l.sysctl.at("kernel.sem"), "250 32000 100 128");
  EXPECT_EQ(l.cgroups_path, "/comet/full");
  EXPECT_EQ(l.namespaces.size(), 8u);
  EXPECT_EQ(find_namespace(s, "network")->path, "/var/run/netns/full");
  EXPECT_EQ(find_namespace(s, "pid")->path, "");
  EXPECT_EQ(find_namespace(s, "nope"), nullptr);
  ASSERT_EQ(l.devices.size(), 3u);
  EXPECT_EQ(l.devices[0].path, "/dev/fuse");
  EXPECT_EQ(l.devices[0].type, "c");
  EXPECT_EQ(l.devices[0].major, 10);
  EXPECT_EQ(l.devices[0].minor, 229);
  EXPECT_EQ(l.devices[0].file_mode, 0666u);
  EXPECT_EQ(l.devices[0].uid, 0u);
  EXPECT_EQ(l.devices[0].gid, 0u);
  EXPECT_FALSE(l.devices[1].file_mode);
  EXPECT_FALSE(l.devices[1].uid);
  EXPECT_EQ(l.rootfs_propagation, "rslave");
  EXPECT_EQ(l.masked_paths.size(), 2u);
  EXPECT_EQ(l.readonly_paths, std::vector<std::string>{"/proc/sys"});
  EXPECT_EQ(l.mount_label, "system_u:object_r:svirt_sandbox_file_t:s0:c124,c675");
  ASSERT_TRUE(l.personality);
  EXPECT_EQ(l.personality->domain, "LINUX32");
  EXPECT_EQ(l.personality->flags, std::vector<std::string>{"ADDR_NO_RANDOMIZE"});
  EXPECT_EQ(l.time_offsets.at("monotonic").secs, -86400);
  EXPECT_EQ(l.time_offsets.at("monotonic").nanosecs, 500u);
  EXPECT_EQ(l.time_offsets.at("boottime").secs, 3600);
  EXPECT_EQ(l.time_offsets.at("boottime").nanosecs, 0u);
  EXPECT_FALSE(l.has_intel_rdt);

  ASSERT_TRUE(l.resources);
  const Resources& r = *l.resources;
  ASSERT_EQ(r.devices.size(), 4u);
  EXPECT_FALSE(r.devices[0].allow);
  EXPECT_EQ(r.devices[0].access, "rwm");
  EXPECT_FALSE(r.devices[0].major);
  EXPECT_TRUE(r.devices[1].allow);
  EXPECT_EQ(r.devices[1].type, "c");
  EXPECT_EQ(r.devices[1].major, 1);
  EXPECT_EQ(r.devices[1].minor, 3);
  EXPECT_EQ(r.devices[2].major, 8);
  EXPECT_FALSE(r.devices[2].minor);
  ASSERT_TRUE(r.memory);
  EXPECT_EQ(r.memory->limit, 536870912);
  EXPECT_EQ(r.memory->reservation, 268435456);
  EXPECT_EQ(r.memory->swap, -1);
  EXPECT_EQ(r.memory->kernel, -2);
  EXPECT_EQ(r.memory->kernel_tcp, 1048576);
  EXPECT_EQ(r.memory->swappiness, 60u);
  EXPECT_EQ(r.memory->disable_oom_killer, false);
  EXPECT_EQ(r.memory->use_hierarchy, true);
  EXPECT_EQ(r.memory->check_before_update, true);
  ASSERT_TRUE(r.cpu);
  EXPECT_EQ(r.cpu->shares, 1024u);
  EXPECT_EQ(r.cpu->quota, 100000);
  EXPECT_EQ(r.cpu->burst, 5000);
  EXPECT_EQ(r.cpu->period, 200000u);
  EXPECT_EQ(r.cpu->realtime_runtime, 950000);
  EXPECT_EQ(r.cpu->realtime_period, 1000000u);
  EXPECT_EQ(r.cpu->cpus, "0-3");
  EXPECT_EQ(r.cpu->mems, "0");
  EXPECT_EQ(r.cpu->idle, 1);
  ASSERT_TRUE(r.pids);
  EXPECT_EQ(r.pids->limit, -1);
  ASSERT_TRUE(r.block_io);
  EXPECT_EQ(r.block_io->weight, 500);
  EXPECT_EQ(r.block_io->leaf_weight, 300);
  ASSERT_EQ(r.block_io->weight_device.size(), 2u);
  EXPECT_EQ(r.block_io->weight_device[0].weight, 600);
  EXPECT_EQ(r.block_io->weight_device[0].leaf_weight, 65535);
  EXPECT_EQ(r.block_io->weight_device[1].minor, 16);
  EXPECT_FALSE(r.block_io->weight_device[1].weight);
  EXPECT_EQ(r.block_io->throttle_read_bps.at(0).rate, 104857600u);
  EXPECT_EQ(r.block_io->throttle_write_bps.at(0).minor, 1);
  EXPECT_EQ(r.block_io->throttle_read_iops.at(0).rate, 1000u);
  EXPECT_EQ(r.block_io->throttle_write_iops.at(0).rate, 500u);
  ASSERT_EQ(r.hugepage_limits.size(), 2u);
  EXPECT_EQ(r.hugepage_limits[0].page_size, "2MB");
  EXPECT_EQ(r.hugepage_limits[0].limit, 209715200u);
  EXPECT_EQ(r.unified.at("io.weight"), "default 100");
  EXPECT_FALSE(r.has_network || r.has_rdma);

  ASSERT_TRUE(l.seccomp);
  const Seccomp& sc = *l.seccomp;
  EXPECT_EQ(sc.default_action, "SCMP_ACT_ERRNO");
  EXPECT_EQ(sc.default_errno_ret, 38u);
  EXPECT_EQ(sc.architectures.size(), 2u);
  EXPECT_EQ(sc.flags, std::vector<std::string>{"SECCOMP_FILTER_FLAG_LOG"});
  EXPECT_EQ(sc.listener_path, "/run/seccomp-agent.sock");
  EXPECT_EQ(sc.listener_metadata, "meta");
  ASSERT_EQ(sc.syscalls.size(), 3u);
  EXPECT_EQ(sc.syscalls[0].names, (std::vector<std::string>{"read", "write"}));
  EXPECT_FALSE(sc.syscalls[0].errno_ret);
  ASSERT_EQ(sc.syscalls[1].args.size(), 2u);
  EXPECT_EQ(sc.syscalls[1].args[1].index, 1u);
  EXPECT_EQ(sc.syscalls[1].args[1].value, UINT64_MAX);
  EXPECT_EQ(sc.syscalls[1].args[1].value_two, 8u);
  EXPECT_EQ(sc.syscalls[1].args[1].op, "SCMP_CMP_MASKED_EQ");
  EXPECT_EQ(sc.syscalls[2].action, "SCMP_ACT_ERRNO");
  EXPECT_EQ(sc.syscalls[2].errno_ret, 1u);
}

TEST(Parse, PresenceFlagsAndUnknownFields) {
  Spec s = parse_file("good/presence.json");
  ASSERT_TRUE(s.process);
  ASSERT_TRUE(s.process->io_priority && s.process->scheduler && s.process->exec_cpu_affinity);
  EXPECT_EQ(s.process->io_priority->io_class, "IOPRIO_CLASS_IDLE");
  EXPECT_EQ(s.process->scheduler->policy, "SCHED_IDLE");
  EXPECT_EQ(s.process->exec_cpu_affinity->initial, "0");
  EXPECT_EQ(s.process->exec_cpu_affinity->final_cpus, "0-3");
  ASSERT_EQ(s.mounts.size(), 3u);
  ASSERT_EQ(s.mounts[0].uid_mappings.size(), 1u);
  EXPECT_EQ(s.mounts[0].uid_mappings[0].host_id, 1000u);
  EXPECT_TRUE(s.mounts[0].gid_mappings.empty());
  EXPECT_EQ(s.mounts[1].gid_mappings.size(), 1u);
  EXPECT_TRUE(s.mounts[2].uid_mappings.empty() && s.mounts[2].gid_mappings.empty());
  ASSERT_TRUE(s.linux_);
  ASSERT_EQ(s.linux_->net_devices.size(), 1u);
  EXPECT_EQ(s.linux_->net_devices.at("eth1").name, "eth0");
  ASSERT_TRUE(s.linux_ && s.linux_->resources);
  EXPECT_TRUE(s.linux_->resources->has_network);
  EXPECT_TRUE(s.linux_->resources->has_rdma);
  EXPECT_TRUE(s.linux_->has_intel_rdt);
}

TEST(Parse, EmptyPresenceObjectsRequestNothing) {
  Spec s = parse_ok(R"({"ociVersion":"1.0.0","process":{"ioPriority":null},
    "linux":{"intelRdt":{},"resources":{"network":{},"rdma":{}}}})");
  EXPECT_FALSE(s.process->io_priority);
  EXPECT_FALSE(s.linux_->has_intel_rdt);
  EXPECT_FALSE(s.linux_->resources->has_network);
  EXPECT_FALSE(s.linux_->resources->has_rdma);
}

TEST(Parse, NullMeansAbsent) {
  Spec s = parse_ok(R"({"ociVersion":"1.0.0","process":null,"root":null,"hostname":null,
    "mounts":null,"hooks":null,"annotations":{"a":null,"b":"x"},
    "linux":{"resources":{"memory":{"limit":null,"swap":-1},"cpu":null},"seccomp":null,
             "sysctl":{"k":null}}})");
  EXPECT_FALSE(s.process);
  EXPECT_FALSE(s.root);
  EXPECT_EQ(s.hostname, "");
  EXPECT_TRUE(s.mounts.empty());
  EXPECT_FALSE(s.hooks);
  EXPECT_EQ(s.annotations.size(), 1u);
  ASSERT_TRUE(s.linux_ && s.linux_->resources && s.linux_->resources->memory);
  EXPECT_FALSE(s.linux_->resources->memory->limit);
  EXPECT_EQ(s.linux_->resources->memory->swap, -1);
  EXPECT_FALSE(s.linux_->resources->cpu);
  EXPECT_FALSE(s.linux_->seccomp);
  EXPECT_TRUE(s.linux_->sysctl.empty());
}

TEST(Parse, EmptyObjectsStayPresent) {
  // "absent" and "empty" differ: capabilities {} = no capabilities at all,
  // seccomp {} = a filter (with an empty default action, for seccomp/ to refuse).
  Spec s = parse_ok(R"({"ociVersion":"1.0.0","process":{"capabilities":{}},"hooks":{},
    "linux":{"seccomp":{},"resources":{}}})");
  ASSERT_TRUE(s.process);
  EXPECT_TRUE(s.process->capabilities);
  EXPECT_TRUE(s.hooks);
  EXPECT_TRUE(s.linux_->seccomp);
  EXPECT_TRUE(s.linux_->resources);
  Spec again = parse_ok(to_json(s));
  EXPECT_TRUE(again.process->capabilities);
  EXPECT_TRUE(again.hooks);
  EXPECT_TRUE(again.linux_->seccomp);
  EXPECT_TRUE(again.linux_->resources);
}

TEST(Parse, IntegerLimits) {
  auto uid = [](const std::string& v) {
    return parse_error(R"({"process":{"user":{"uid":)" + v + "}}}");
  };
  EXPECT_EQ(uid("4294967295"), "");
  EXPECT_EQ(uid("0"), "");
  EXPECT_EQ(uid("4294967296"),
            "config.json: process.user.uid: expected an unsigned 32-bit integer, got 4294967296");
  EXPECT_EQ(uid("-0"), "");  // -0 is the integer 0
  EXPECT_EQ(uid("1e3"),
            "config.json: process.user.uid: expected an unsigned 32-bit integer, got 1000.0");
  auto limit = [](const std::string& v) {
    return parse_error(R"({"linux":{"resources":{"memory":{"limit":)" + v + "}}}}");
  };
  EXPECT_EQ(limit("9223372036854775807"), "");
  EXPECT_EQ(limit("-9223372036854775808"), "");
  EXPECT_EQ(limit("-1"), "");
  EXPECT_EQ(limit("18446744073709551615"),
            "config.json: linux.resources.memory.limit: expected a 64-bit integer, got "
            "18446744073709551615");
  auto oom = [](const std::string& v) {
    return parse_error(R"({"process":{"oomScoreAdj":)" + v + "}}");
  };
  EXPECT_EQ(oom("-2147483648"), "");
  EXPECT_EQ(oom("-2147483649"),
            "config.json: process.oomScoreAdj: expected a 32-bit integer, got -2147483649");
  auto weight = [](const std::string& v) {
    return parse_error(R"({"linux":{"resources":{"blockIO":{"leafWeight":)" + v + "}}}}");
  };
  EXPECT_EQ(weight("65535"), "");
  EXPECT_EQ(weight("-1"),
            "config.json: linux.resources.blockIO.leafWeight: expected an unsigned 16-bit "
            "integer, got -1");
}

// One bad value at each field of full.json: the error names the path and the value.
TEST(Parse, TypeErrorAtEveryField) {
  const json full = json::parse(slurp(kData / "good/full.json"));
  const std::map<std::string, std::string> expected_text = {
      {"string", "expected a string"},
      {"bool", "expected a boolean"},
      {"object", "expected an object"},
      {"array", "expected an array"},
      {"u16", "expected an unsigned 16-bit integer"},
      {"u32", "expected an unsigned 32-bit integer"},
      {"u64", "expected an unsigned 64-bit integer"},
      {"i32", "expected a 32-bit integer"},
      {"i64", "expected a 64-bit integer"},
  };
  std::vector<std::pair<std::string, std::string>> rows;  // pointer, kind
  std::istringstream table(slurp(kData / "type-errors.txt"));
  for (std::string line; std::getline(table, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string pointer, kind;
    fields >> pointer >> kind;
    ASSERT_EQ(expected_text.count(kind), 1u) << line;
    rows.emplace_back(pointer, kind);
  }
  ASSERT_GE(rows.size(), 150u);

  // The path as the error message spells it: a.b[1].c, map keys bracketed.
  auto message_path = [](const std::string& pointer) {
    std::string out;
    std::string parent;
    size_t pos = 1;
    while (pos <= pointer.size()) {
      size_t next = pointer.find('/', pos);
      if (next == std::string::npos) next = pointer.size();
      const std::string tok = pointer.substr(pos, next - pos);
      const bool index = !tok.empty() && std::all_of(tok.begin(), tok.end(), ::isdigit);
      const bool map_key = parent == "annotations" || parent == "sysctl" || parent == "unified" ||
                           parent == "timeOffsets";
      if (index)
        out += "[" + tok + "]";
      else if (map_key)
        out += "[\"" + tok + "\"]";
      else
        out += (out.empty() ? "" : ".") + tok;
      parent = tok;
      pos = next + 1;
    }
    return out;
  };

  for (const auto& [pointer, kind] : rows) {
    SCOPED_TRACE(pointer);
    const std::string& expected = expected_text.at(kind);
    json doc = full;
    json::json_pointer ptr(pointer);
    // A wrong-typed value for every kind of field: a string where numbers,
    // objects, arrays and booleans belong, a number where strings belong.
    const bool wants_string = kind == "string";
    const json bad = wants_string ? json(7) : json("oops");
    doc[ptr] = bad;
    const std::string got = wants_string ? "7" : "\"oops\"";
    EXPECT_EQ(parse_error(doc.dump()),
              "config.json: " + message_path(pointer) + ": " + expected + ", got " + got);
  }
}

TEST(Parse, ContainerValuesAreDescribedByKind) {
  EXPECT_EQ(parse_error(R"({"hostname":{"a":1}})"),
            "config.json: hostname: expected a string, got an object");
  EXPECT_EQ(parse_error(R"({"hostname":[1]})"),
            "config.json: hostname: expected a string, got an array");
  EXPECT_EQ(parse_error(R"({"hostname":false})"),
            "config.json: hostname: expected a string, got false");
  EXPECT_EQ(parse_error(R"({"hostname":"\u00e9\n"})"), "");
  EXPECT_EQ(parse_error(R"({"process":{"terminal":"a\"b"}})"),
            R"(config.json: process.terminal: expected a boolean, got "a\"b")");
  EXPECT_EQ(parse_error("\"just a string\""),
            "config.json: expected an object, got \"just a string\"");
}

// ---------------------------------------------------------------------------
// Malformed JSON: line and column, computed from nlohmann's byte offset.

TEST(Parse, MalformedJsonPositions) {
  EXPECT_EQ(parse_error("{\n  \"ociVersion\": \"1.0.2\"\n  \"root\": {}\n}\n"),
            "config.json: invalid JSON at line 3 column 8: syntax error while parsing object - "
            "unexpected string literal; expected '}'");
  EXPECT_EQ(parse_error("{\"a\": tru}"),
            "config.json: invalid JSON at line 1 column 10: syntax error while parsing value - "
            "invalid literal; last read: '\"a\": tru}'");
  EXPECT_EQ(parse_error(""),
            "config.json: invalid JSON at line 1 column 1: syntax error while parsing value - "
            "unexpected end of input; expected '[', '{', or a literal");
  EXPECT_EQ(parse_error("{}\n{}"),
            "config.json: invalid JSON at line 2 column 1: syntax error while parsing value - "
            "unexpected '{'; expected end of input");
  EXPECT_EQ(parse_error("{\"a\":\n\n   \"\xff\"}"),
            "config.json: invalid JSON at line 3 column 5: syntax error while parsing value - "
            "invalid string: ill-formed UTF-8 byte; last read: '\"<FF>'");
  // Doubles that overflow: nlohmann gives no position, we find the literal.
  EXPECT_EQ(parse_error("{\"hostname\": \"1e999\",\n \"process\": {\"oomScoreAdj\": -1e999}}"),
            "config.json: invalid JSON at line 2 column 34: number overflow parsing '-1e999'");
  // Comments are not JSON.
  EXPECT_NE(parse_error("{ // c\n}").find("invalid JSON at line 1 column 3"), std::string::npos);
}

// Our line/column agree with nlohmann's own lexer position for every
// truncation of a real config.
TEST(Parse, MalformedJsonPositionsAgreeWithLexer) {
  const std::string text = slurp(kData / "runc-spec.json");
  for (size_t n = 0; n + 1 < text.size(); n += 7) {
    const std::string cut = text.substr(0, n);
    const std::string ours = parse_error(cut);
    ASSERT_NE(ours, "") << n;
    std::string theirs;
    try {
      json ignored = json::parse(cut);
      (void)ignored;
    } catch (const json::parse_error& e) {
      theirs = e.what();
    }
    // "... parse error at line L, column C: ..." vs ours "at line L column C: ..."
    const size_t at = theirs.find(" at line ");
    ASSERT_NE(at, std::string::npos) << theirs;
    std::string pos = theirs.substr(at + 9, theirs.find(':', at) - at - 9);  // "L, column C"
    pos.replace(pos.find(", column "), 9, " column ");
    EXPECT_NE(ours.find("invalid JSON at line " + pos + ": "), std::string::npos)
        << ours << " vs " << theirs;
  }
}

// No input makes parse_spec throw: mangled and truncated variants of a real
// config, deep nesting, odd scalars.
TEST(Parse, NeverThrows) {
  const std::string text = slurp(kData / "good/full.json");
  std::mt19937 rng(12345);
  for (int i = 0; i < 3000; ++i) {
    std::string s = text;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % s.size();
      switch (rng() % 4) {
        case 0:
          s[pos] = static_cast<char>(rng() % 256);
          break;
        case 1:
          s.erase(pos, 1 + rng() % 8);
          break;
        case 2:
          s.insert(pos, 1, "{}[]\",:0-e"[rng() % 10]);
          break;
        default:
          s.resize(pos);
          break;
      }
      if (s.empty()) s = "{";
    }
    auto check = [&] {
      auto r = parse_spec(s);
      if (!r.ok()) return;
      (void)validate_spec(*r);
      (void)to_json(*r);
    };
    EXPECT_NO_THROW(check());
  }
  const std::string deep = "{\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_NO_THROW((void)parse_spec(deep));
  EXPECT_NO_THROW((void)parse_spec(std::string(200000, '[')));
  EXPECT_NO_THROW((void)parse_spec(std::string("{\"a\":1}\0garbage", 15)));
}

// ---------------------------------------------------------------------------
// Serialisation.

TEST(Serialise, OmitsAbsentAndEmpty) {
  Spec s;
  s.oci_version = "1.0.0";
  EXPECT_EQ(to_json(s, -1), R"({"ociVersion":"1.0.0"})");
  s.process = Process{};
  s.root = Root{"rootfs", false};
  s.linux_ = Linux{};
  s.linux_->namespaces.push_back({"pid", ""});
  EXPECT_EQ(to_json(s, -1),
            R"({"ociVersion":"1.0.0","process":{"user":{"uid":0,"gid":0},"cwd":""},)"
            R"("root":{"path":"rootfs"},"linux":{"namespaces":[{"type":"pid"}]}})");
}

TEST(Serialise, IndentAndOrder) {
  const std::string out = to_json(default_spec());
  EXPECT_EQ(out.rfind("{\n  \"ociVersion\": \"1.0.2-dev\",\n  \"process\": {", 0), 0u) << out;
  EXPECT_EQ(to_json(default_spec(), -1).find('\n'), std::string::npos);
  EXPECT_NE(to_json(default_spec(), 4).find("\n    \"ociVersion\""), std::string::npos);
}

TEST(Serialise, ProgrammaticRoundTrip) {
  Spec s = default_spec();
  s.process->user.umask = 0;
  s.process->oom_score_adj = 0;  // optional zero stays present
  s.process->console_size = ConsoleSize{0, 0};
  s.hooks = Hooks{};
  s.hooks->poststop.push_back(Hook{"/bin/true", {}, {}, 3});
  Memory m;
  m.limit = -1;
  m.swappiness = 0;
  m.disable_oom_killer = false;
  s.linux_->resources->memory = m;
  s.linux_->resources->pids = Pids{0};
  Seccomp sc;
  sc.default_action = "SCMP_ACT_ALLOW";
  sc.default_errno_ret = 0;
  sc.syscalls.push_back(
      SeccompSyscall{{"kill"}, "SCMP_ACT_ERRNO", 0, {SeccompArg{1, 0, 0, "SCMP_CMP_EQ"}}});
  s.linux_->seccomp = sc;
  s.linux_->time_offsets["boottime"] = TimeOffset{0, 0};
  s.linux_->personality = Personality{"LINUX", {}};
  s.annotations["k"] = "";

  Spec t = parse_ok(to_json(s));
  EXPECT_EQ(to_json(t), to_json(s));
  EXPECT_EQ(t.process->user.umask, 0u);
  EXPECT_EQ(t.process->oom_score_adj, 0);
  ASSERT_TRUE(t.process->console_size);
  EXPECT_EQ(t.hooks->poststop.at(0).timeout, 3);
  EXPECT_EQ(t.linux_->resources->memory->limit, -1);
  EXPECT_EQ(t.linux_->resources->memory->swappiness, 0u);
  EXPECT_EQ(t.linux_->resources->memory->disable_oom_killer, false);
  EXPECT_FALSE(t.linux_->resources->memory->swap);
  EXPECT_EQ(t.linux_->resources->pids->limit, 0);
  EXPECT_EQ(t.linux_->seccomp->default_errno_ret, 0u);
  EXPECT_EQ(t.linux_->seccomp->syscalls.at(0).errno_ret, 0u);
  EXPECT_EQ(t.linux_->time_offsets.count("boottime"), 1u);
  EXPECT_EQ(t.annotations.at("k"), "");
}

TEST(Serialise, InvalidUtf8IsReplacedNotThrown) {
  Spec s;
  s.oci_version = "1.0.0";
  s.hostname = "bad\xff";
  std::string out;
  EXPECT_NO_THROW(out = to_json(s, -1));
  EXPECT_EQ(out, "{\"ociVersion\":\"1.0.0\",\"hostname\":\"bad\xEF\xBF\xBD\"}");
}
