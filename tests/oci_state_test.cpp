// runtime-spec state document and features document rendering.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "comet/oci/state.hpp"

using nlohmann::json;
using namespace comet::oci;

namespace {

std::set<std::string> keys(const json& j) {
  std::set<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) out.insert(it.key());
  return out;
}

State make_state(ContainerStatus s) {
  State st;
  st.oci_version = "1.2.0";
  st.id = "box";
  st.status = s;
  st.pid = 4242;
  st.bundle = "/run/bundles/box";
  return st;
}

Features runc_like_features() {
  Features f;
  f.oci_version_min = "1.0.0";
  f.oci_version_max = "1.2.0";
  f.hooks = {"prestart",       "createRuntime", "createContainer",
             "startContainer", "poststart",     "poststop"};
  f.mount_options = {"bind", "rbind", "ro", "rw", "nosuid"};
  f.namespaces = {"cgroup", "ipc", "mount", "network", "pid", "user", "uts"};
  f.capabilities = {"CAP_CHOWN", "CAP_KILL"};
  f.cgroup_v1 = false;
  f.cgroup_v2 = true;
  f.cgroup_systemd = false;
  f.cgroup_systemd_user = false;
  f.cgroup_rdma = false;
  f.seccomp_enabled = true;
  f.seccomp_actions = {"SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO"};
  f.seccomp_operators = {"SCMP_CMP_EQ"};
  f.seccomp_archs = {"SCMP_ARCH_X86_64"};
  f.seccomp_known_flags = {"SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG"};
  f.seccomp_supported_flags = {"SECCOMP_FILTER_FLAG_LOG"};
  f.annotations = {{"org.comet.version", "0.1.0"}};
  f.potentially_unsafe_config_annotations = {"org.comet.unsafe."};
  return f;
}

}  // namespace

TEST(State, StatusNames) {
  EXPECT_STREQ(status_name(ContainerStatus::kCreating), "creating");
  EXPECT_STREQ(status_name(ContainerStatus::kCreated), "created");
  EXPECT_STREQ(status_name(ContainerStatus::kRunning), "running");
  EXPECT_STREQ(status_name(ContainerStatus::kPaused), "paused");
  EXPECT_STREQ(status_name(ContainerStatus::kStopped), "stopped");
  EXPECT_STREQ(status_name(static_cast<ContainerStatus>(99)), "unknown");
}

TEST(State, RunningShape) {
  const std::string out = to_json(make_state(ContainerStatus::kRunning));
  EXPECT_EQ(out,
            "{\n"
            "  \"ociVersion\": \"1.2.0\",\n"
            "  \"id\": \"box\",\n"
            "  \"status\": \"running\",\n"
            "  \"pid\": 4242,\n"
            "  \"bundle\": \"/run/bundles/box\"\n"
            "}");
}

TEST(State, PidAlwaysPresentZeroWhenStopped) {
  for (ContainerStatus s : {ContainerStatus::kCreating, ContainerStatus::kCreated,
                            ContainerStatus::kRunning, ContainerStatus::kPaused}) {
    const json j = json::parse(to_json(make_state(s)));
    EXPECT_EQ(j.at("pid"), 4242) << status_name(s);
    EXPECT_EQ(j.at("status"), status_name(s));
  }
  // runc prints "pid": 0 for a stopped container; clients parse it.
  State st = make_state(ContainerStatus::kStopped);
  st.pid = 0;
  const json stopped = json::parse(to_json(st));
  EXPECT_EQ(stopped.at("pid"), 0);
  EXPECT_EQ(keys(stopped), (std::set<std::string>{"ociVersion", "id", "status", "pid", "bundle"}));
}

TEST(State, Annotations) {
  State st = make_state(ContainerStatus::kCreated);
  EXPECT_FALSE(json::parse(to_json(st)).contains("annotations"));
  st.annotations = {{"org.example.a", "1"}, {"org.example.b", ""}};
  const json j = json::parse(to_json(st));
  EXPECT_EQ(j.at("annotations"), (json{{"org.example.a", "1"}, {"org.example.b", ""}}));
}

TEST(State, CompactAndEscaped) {
  State st = make_state(ContainerStatus::kStopped);
  st.id = "a\"b";
  st.bundle = "/tmp/\xff";  // invalid UTF-8 is replaced, not thrown
  std::string out;
  EXPECT_NO_THROW(out = to_json(st, -1));
  EXPECT_EQ(out,
            "{\"ociVersion\":\"1.2.0\",\"id\":\"a\\\"b\",\"status\":\"stopped\",\"pid\":4242,"
            "\"bundle\":\"/tmp/\xEF\xBF\xBD\"}");
}

TEST(Features, KeysFollowFeaturesMd) {
  const json j = json::parse(to_json(runc_like_features()));
  EXPECT_EQ(keys(j),
            (std::set<std::string>{"ociVersionMin", "ociVersionMax", "hooks", "mountOptions",
                                   "linux", "annotations", "potentiallyUnsafeConfigAnnotations"}));
  const json& l = j.at("linux");
  EXPECT_EQ(keys(l),
            (std::set<std::string>{"namespaces", "capabilities", "cgroup", "seccomp", "apparmor",
                                   "selinux", "intelRdt", "mountExtensions", "netDevices"}));
  EXPECT_EQ(keys(l.at("cgroup")),
            (std::set<std::string>{"v1", "v2", "systemd", "systemdUser", "rdma"}));
  EXPECT_EQ(keys(l.at("seccomp")),
            (std::set<std::string>{"enabled", "actions", "operators", "archs", "knownFlags",
                                   "supportedFlags"}));
  EXPECT_EQ(l.at("apparmor"), (json{{"enabled", false}}));
  EXPECT_EQ(l.at("selinux"), (json{{"enabled", false}}));
  EXPECT_EQ(l.at("intelRdt"), (json{{"enabled", false}}));
  EXPECT_EQ(l.at("mountExtensions"), (json{{"idmap", {{"enabled", false}}}}));
  EXPECT_EQ(l.at("netDevices"), (json{{"enabled", false}}));
  EXPECT_FALSE(l.contains("memoryPolicy"));  // no modes, no flags: not claimed
}

TEST(Features, Values) {
  const Features f = runc_like_features();
  const json j = json::parse(to_json(f));
  EXPECT_EQ(j.at("ociVersionMin"), "1.0.0");
  EXPECT_EQ(j.at("ociVersionMax"), "1.2.0");
  EXPECT_EQ(j.at("hooks"), json(f.hooks));
  EXPECT_EQ(j.at("mountOptions"), json(f.mount_options));
  EXPECT_EQ(j.at("annotations"), (json{{"org.comet.version", "0.1.0"}}));
  EXPECT_EQ(j.at("potentiallyUnsafeConfigAnnotations"), json::array({"org.comet.unsafe."}));
  const json& l = j.at("linux");
  EXPECT_EQ(l.at("namespaces"), json(f.namespaces));
  EXPECT_EQ(l.at("capabilities"), json(f.capabilities));
  EXPECT_EQ(l.at("cgroup"), (json{{"v1", false},
                                  {"v2", true},
                                  {"systemd", false},
                                  {"systemdUser", false},
                                  {"rdma", false}}));
  const json& sc = l.at("seccomp");
  EXPECT_EQ(sc.at("enabled"), true);
  EXPECT_EQ(sc.at("actions"), json(f.seccomp_actions));
  EXPECT_EQ(sc.at("operators"), json(f.seccomp_operators));
  EXPECT_EQ(sc.at("archs"), json(f.seccomp_archs));
  EXPECT_EQ(sc.at("knownFlags"), json(f.seccomp_known_flags));
  EXPECT_EQ(sc.at("supportedFlags"), json(f.seccomp_supported_flags));
}

TEST(Features, FlagsAreRendered) {
  Features f = runc_like_features();
  f.cgroup_v1 = f.cgroup_systemd = f.cgroup_systemd_user = f.cgroup_rdma = true;
  f.apparmor = f.selinux = f.intel_rdt = f.idmap_mounts = true;
  const json l = json::parse(to_json(f)).at("linux");
  EXPECT_EQ(l.at("cgroup").at("v1"), true);
  EXPECT_EQ(l.at("cgroup").at("systemd"), true);
  EXPECT_EQ(l.at("cgroup").at("systemdUser"), true);
  EXPECT_EQ(l.at("cgroup").at("rdma"), true);
  EXPECT_EQ(l.at("apparmor").at("enabled"), true);
  EXPECT_EQ(l.at("selinux").at("enabled"), true);
  EXPECT_EQ(l.at("intelRdt").at("enabled"), true);
  EXPECT_EQ(l.at("mountExtensions").at("idmap").at("enabled"), true);
}

TEST(Features, NetDevicesAndMemoryPolicy) {
  Features f = runc_like_features();
  f.net_devices = true;
  f.memory_policy_modes = {"MPOL_DEFAULT", "MPOL_BIND"};
  f.memory_policy_flags = {"MPOL_F_STATIC_NODES"};
  const json l = json::parse(to_json(f)).at("linux");
  EXPECT_EQ(l.at("netDevices"), (json{{"enabled", true}}));
  EXPECT_EQ(l.at("memoryPolicy"),
            (json{{"modes", {"MPOL_DEFAULT", "MPOL_BIND"}}, {"flags", {"MPOL_F_STATIC_NODES"}}}));
}

TEST(Features, EmptyListsAndDisabledSeccomp) {
  Features f;
  f.oci_version_min = "1.0.0";
  f.oci_version_max = "1.0.0";
  const json j = json::parse(to_json(f));
  // Lists the runtime filled in as empty say "none"; optional metadata is omitted.
  EXPECT_EQ(j.at("hooks"), json::array());
  EXPECT_EQ(j.at("mountOptions"), json::array());
  EXPECT_FALSE(j.contains("annotations"));
  EXPECT_FALSE(j.contains("potentiallyUnsafeConfigAnnotations"));
  EXPECT_EQ(j.at("linux").at("namespaces"), json::array());
  // Seccomp compiled out: only "enabled": false, like runc built without it.
  EXPECT_EQ(j.at("linux").at("seccomp"), (json{{"enabled", false}}));
}

TEST(Features, OrderAndIndent) {
  const std::string out = to_json(runc_like_features(), 4);
  EXPECT_EQ(
      out.rfind("{\n    \"ociVersionMin\": \"1.0.0\",\n    \"ociVersionMax\": \"1.2.0\",\n", 0), 0u)
      << out;
  EXPECT_EQ(to_json(runc_like_features(), -1).find('\n'), std::string::npos);
}
