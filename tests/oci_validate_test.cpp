// validate_spec(): every rule, accepted and refused, on variations of
// default_spec(). (The golden bad/*.json corpus in oci_spec_test covers the
// same rules end to end from config.json text.)
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "comet/oci/spec.hpp"

using namespace comet::oci;

namespace {

std::string validate_error(const Spec& s) {
  comet::Status st = validate_spec(s);
  return st.ok() ? std::string() : st.error().what();
}

}  // namespace

class Validate : public ::testing::Test {
 protected:
  Spec s = default_spec();
  Linux& l() { return *s.linux_; }
  void add_ns(const std::string& type, const std::string& path = "") {
    l().namespaces.push_back({type, path});
  }
  void drop_ns(const std::string& type) {
    auto& v = l().namespaces;
    v.erase(std::remove_if(v.begin(), v.end(), [&](const Namespace& n) { return n.type == type; }),
            v.end());
  }
  std::string err() { return validate_error(s); }
};

TEST_F(Validate, Versions) {
  for (const char* v :
       {"1.0.0", "1.0.2-dev", "1.1.0-rc.1", "1.2.0", "1.3.0", "1.2.1+build.5", "1.9.0"}) {
    s.oci_version = v;
    EXPECT_EQ(err(), "") << v;
  }
  s.oci_version = "0.6.0";
  EXPECT_EQ(err(),
            R"(ociVersion "0.6.0": unsupported major version (this runtime implements 1.x))");
  for (const char* v : {"1", "1.0", "v1.0.0", "1.0.0-", "1.0.x", "1..0", "1.0.0 ", "latest"}) {
    s.oci_version = v;
    EXPECT_EQ(err(), "ociVersion \"" + std::string(v) +
                         "\": not a semantic version (expected 1.MINOR.PATCH)");
  }
}

TEST_F(Validate, RootAndProcess) {
  s.root->path = "/abs/rootfs";
  EXPECT_EQ(err(), "");
  s.root->path = "";
  EXPECT_EQ(err(), "root.path: required");
  s.root.reset();
  EXPECT_EQ(err(), "root: required");
  s = default_spec();
  s.process->cwd = "/work/dir";
  EXPECT_EQ(err(), "");
  s.process->cwd = "./dir";
  EXPECT_EQ(err(), R"(process.cwd "./dir": must be an absolute path)");
  s.process->args.clear();
  EXPECT_EQ(err(), "process.args: required (at least one element)");
  s.process.reset();
  EXPECT_EQ(err(), "process: required");
}

TEST_F(Validate, Mounts) {
  s.mounts.push_back(Mount{"/a/b", "bind", "/x", {"bind"}, {}, {}});
  EXPECT_EQ(err(), "");
  s.mounts.push_back(Mount{"", "tmpfs", "tmpfs", {}, {}, {}});
  EXPECT_EQ(err(), "mounts[8].destination: required");
  s.mounts.back().destination = "relative";
  EXPECT_EQ(err(), R"(mounts[8].destination "relative": must be an absolute path)");
}

TEST_F(Validate, Namespaces) {
  for (const char* t : {"user", "cgroup", "time"}) add_ns(t);
  l().uid_mappings = {{0, 1000, 1}};
  l().gid_mappings = {{0, 1000, 1}};
  EXPECT_EQ(err(), "");  // all eight types
  l().namespaces[0].path = "/proc/1/ns/pid";
  EXPECT_EQ(err(), "");
  add_ns("ipc", "/proc/1/ns/ipc");
  EXPECT_EQ(err(), R"(linux.namespaces[8].type "ipc": duplicate namespace)");
  l().namespaces.back().type = "";
  EXPECT_NE(err().find(R"(linux.namespaces[8].type "": unknown namespace type)"),
            std::string::npos);
}

TEST_F(Validate, UserNamespaceMappings) {
  add_ns("user");
  EXPECT_EQ(err(), "linux.uidMappings: required when creating a new user namespace");
  l().uid_mappings = {{0, 100000, 65536}};
  EXPECT_EQ(err(), "linux.gidMappings: required when creating a new user namespace");
  l().gid_mappings = {{0, 100000, 65536}};
  EXPECT_EQ(err(), "");
  l().gid_mappings.push_back({70000, 1, 0});
  EXPECT_EQ(err(), "linux.gidMappings[1].size: must be greater than 0");
  l().gid_mappings.pop_back();
  // Joining an existing user namespace: it brings its own mappings.
  l().namespaces.back().path = "/proc/42/ns/user";
  EXPECT_EQ(
      err(),
      R"(linux.uidMappings: cannot be set when joining an existing user namespace (path "/proc/42/ns/user"))");
  l().uid_mappings.clear();
  l().gid_mappings.clear();
  EXPECT_EQ(err(), "");
  drop_ns("user");
  l().gid_mappings = {{0, 1, 1}};
  EXPECT_EQ(err(), "linux.gidMappings: requires a user namespace");
}

TEST_F(Validate, TimeOffsets) {
  l().time_offsets["monotonic"] = {5, 0};
  EXPECT_EQ(err(), "linux.timeOffsets: requires a time namespace");
  add_ns("time");
  EXPECT_EQ(err(), "");
  l().time_offsets["boottime"] = {-5, 999999999};
  EXPECT_EQ(err(), "");
  l().time_offsets["boottime"].nanosecs = 1000000000;
  EXPECT_EQ(err(),
            R"(linux.timeOffsets["boottime"].nanosecs 1000000000: must be less than 1000000000)");
  l().time_offsets.erase("boottime");
  l().time_offsets["realtime"] = {};
  EXPECT_EQ(err(),
            R"(linux.timeOffsets["realtime"]: unknown clock (expected monotonic or boottime))");
  l().time_offsets.erase("realtime");
  l().namespaces.back().path = "/proc/1/ns/time";
  EXPECT_EQ(
      err(),
      R"(linux.timeOffsets: cannot be set when joining an existing time namespace (path "/proc/1/ns/time"))");
}

TEST_F(Validate, Rlimits) {
  const char* all[] = {"RLIMIT_AS",     "RLIMIT_CORE",   "RLIMIT_CPU",        "RLIMIT_DATA",
                       "RLIMIT_FSIZE",  "RLIMIT_LOCKS",  "RLIMIT_MEMLOCK",    "RLIMIT_MSGQUEUE",
                       "RLIMIT_NICE",   "RLIMIT_NOFILE", "RLIMIT_NPROC",      "RLIMIT_RSS",
                       "RLIMIT_RTPRIO", "RLIMIT_RTTIME", "RLIMIT_SIGPENDING", "RLIMIT_STACK"};
  s.process->rlimits.clear();
  for (const char* t : all) s.process->rlimits.push_back({t, 10, 10});
  EXPECT_EQ(err(), "");
  s.process->rlimits.push_back({"RLIMIT_CPU", 1, 0});
  EXPECT_EQ(err(), R"(process.rlimits[16].type "RLIMIT_CPU": duplicate rlimit type)");
  s.process->rlimits.back() = {"rlimit_nofile", 1, 1};
  EXPECT_EQ(err(), R"(process.rlimits[16].type "rlimit_nofile": unknown rlimit type)");
  s.process->rlimits.back() = {"RLIMIT_NOFILE", 1, 1};
  s.process->rlimits.erase(s.process->rlimits.begin() + 9);
  EXPECT_EQ(err(), "");
  s.process->rlimits.back().soft = 2;
  EXPECT_EQ(err(), "process.rlimits[15]: soft limit 2 exceeds hard limit 1");
}

TEST_F(Validate, Capabilities) {
  const std::vector<std::string> all = {"CAP_CHOWN",
                                        "CAP_DAC_OVERRIDE",
                                        "CAP_DAC_READ_SEARCH",
                                        "CAP_FOWNER",
                                        "CAP_FSETID",
                                        "CAP_KILL",
                                        "CAP_SETGID",
                                        "CAP_SETUID",
                                        "CAP_SETPCAP",
                                        "CAP_LINUX_IMMUTABLE",
                                        "CAP_NET_BIND_SERVICE",
                                        "CAP_NET_BROADCAST",
                                        "CAP_NET_ADMIN",
                                        "CAP_NET_RAW",
                                        "CAP_IPC_LOCK",
                                        "CAP_IPC_OWNER",
                                        "CAP_SYS_MODULE",
                                        "CAP_SYS_RAWIO",
                                        "CAP_SYS_CHROOT",
                                        "CAP_SYS_PTRACE",
                                        "CAP_SYS_PACCT",
                                        "CAP_SYS_ADMIN",
                                        "CAP_SYS_BOOT",
                                        "CAP_SYS_NICE",
                                        "CAP_SYS_RESOURCE",
                                        "CAP_SYS_TIME",
                                        "CAP_SYS_TTY_CONFIG",
                                        "CAP_MKNOD",
                                        "CAP_LEASE",
                                        "CAP_AUDIT_WRITE",
                                        "CAP_AUDIT_CONTROL",
                                        "CAP_SETFCAP",
                                        "CAP_MAC_OVERRIDE",
                                        "CAP_MAC_ADMIN",
                                        "CAP_SYSLOG",
                                        "CAP_WAKE_ALARM",
                                        "CAP_BLOCK_SUSPEND",
                                        "CAP_AUDIT_READ",
                                        "CAP_PERFMON",
                                        "CAP_BPF",
                                        "CAP_CHECKPOINT_RESTORE"};
  ASSERT_EQ(all.size(), 41u);
  Capabilities& c = *s.process->capabilities;
  c.bounding = c.effective = c.inheritable = c.permitted = c.ambient = all;
  EXPECT_EQ(err(), "");
  // Unknown names pass validation: the runtime skips them with a warning,
  // as runc does (an unknown name can only grant less).
  c.ambient = {"kill", "CAP_NOT_YET", "CAP_KILL "};
  EXPECT_EQ(err(), "");
}

TEST_F(Validate, HostnameAndDomainname) {
  s.domainname = "example.org";
  EXPECT_EQ(err(), "");
  drop_ns("uts");
  EXPECT_EQ(err(), R"(hostname "runc": unable to set hostname without a private uts namespace)");
  s.hostname.clear();
  EXPECT_EQ(
      err(),
      R"(domainname "example.org": unable to set domainname without a private uts namespace)");
  s.domainname.clear();
  EXPECT_EQ(err(), "");
  s.hostname = "joined";
  add_ns("uts", "/proc/1/ns/uts");  // a joined uts namespace is private enough (as runc)
  EXPECT_EQ(err(), "");
}

TEST_F(Validate, Devices) {
  for (const char* t : {"c", "b", "u", "p"}) l().devices.push_back({t, "/dev/x", 1, 1, {}, {}, {}});
  EXPECT_EQ(err(), "");
  l().devices.push_back({"s", "/dev/x", 1, 1, {}, {}, {}});
  EXPECT_EQ(err(), R"(linux.devices[4].type "s": unknown device type (expected c, b, u or p))");
  l().devices.back().type = "c";
  l().devices.back().path = "";
  EXPECT_EQ(err(), "linux.devices[4].path: required");
  l().devices.back().path = "dev/x";
  EXPECT_EQ(err(), R"(linux.devices[4].path "dev/x": must be an absolute path)");
  l().devices.pop_back();

  auto& rules = l().resources->devices;
  rules.push_back({true, "a", {}, {}, ""});
  rules.push_back({true, "b", 8, {}, "r"});
  rules.push_back({true, "c", 1, 3, "mwr"});
  EXPECT_EQ(err(), "");
  rules.push_back({true, "u", {}, {}, "rwm"});
  EXPECT_EQ(err(),
            R"(linux.resources.devices[4].type "u": unknown device type (expected a, c or b))");
  rules.back() = {true, "c", {}, {}, "rwx"};
  EXPECT_EQ(
      err(),
      R"(linux.resources.devices[4].access "rwx": invalid access (expected a combination of r, w and m))");
}

TEST_F(Validate, Hooks) {
  s.hooks = Hooks{};
  s.hooks->prestart.push_back({"/bin/true", {"true"}, {}, 1});
  s.hooks->create_runtime.push_back({"/bin/true", {}, {}, {}});
  s.hooks->create_container.push_back({"/bin/true", {}, {}, {}});
  s.hooks->start_container.push_back({"/bin/true", {}, {}, {}});
  s.hooks->poststart.push_back({"/bin/true", {}, {}, {}});
  s.hooks->poststop.push_back({"/bin/true", {}, {}, 60});
  EXPECT_EQ(err(), "");
  s.hooks->poststop.back().timeout = -3;
  EXPECT_EQ(err(), "hooks.poststop[0].timeout -3: must be greater than 0");
  s.hooks->start_container.back().path = "true";
  EXPECT_EQ(err(), R"(hooks.startContainer[0].path "true": must be an absolute path)");
  s.hooks->prestart.back().path = "";
  EXPECT_EQ(err(), "hooks.prestart[0].path: required");
}

TEST_F(Validate, Sysctl) {
  // default_spec has network, ipc and uts namespaces.
  l().sysctl = {
      {"net.ipv4.ip_forward", "1"}, {"net.core.somaxconn", "1024"}, {"kernel.shmmax", "1"},
      {"kernel.shmall", "1"},       {"kernel.shmmni", "1"},         {"kernel.shm_rmid_forced", "1"},
      {"kernel.msgmax", "1"},       {"kernel.msgmnb", "1"},         {"kernel.msgmni", "1"},
      {"kernel.sem", "1 2 3 4"},    {"fs.mqueue.queues_max", "1"},  {"kernel.hostname", "h"},
      {"kernel.domainname", "d"}};
  EXPECT_EQ(err(), "");
  drop_ns("network");
  EXPECT_EQ(err(), R"(linux.sysctl: sysctl "net.core.somaxconn" requires a network namespace)");
  add_ns("network", "/var/run/netns/cni-1234");  // joined: allowed (the host decides)
  EXPECT_EQ(err(), "");
  drop_ns("ipc");
  EXPECT_EQ(err(), R"(linux.sysctl: sysctl "fs.mqueue.queues_max" requires an ipc namespace)");
  add_ns("ipc");
  drop_ns("uts");
  s.hostname.clear();
  EXPECT_EQ(err(), R"(linux.sysctl: sysctl "kernel.domainname" requires a uts namespace)");
  add_ns("uts");
  for (const char* k : {"kernel.pid_max", "vm.overcommit_memory", "fs.file-max", "kernel.semx",
                        "netx.foo", "kernel.msg"}) {
    l().sysctl = {{k, "1"}};
    if (std::string(k) == "kernel.msg") {
      EXPECT_EQ(err(), "") << k;  // kernel.msg* prefix
      continue;
    }
    EXPECT_EQ(err(), "linux.sysctl: sysctl \"" + std::string(k) +
                         "\" is not in a separate kernel namespace");
  }
}

TEST_F(Validate, RootfsPropagationAndPaths) {
  for (const char* p : {"", "private", "rprivate", "slave", "rslave", "shared", "rshared",
                        "unbindable", "runbindable"}) {
    l().rootfs_propagation = p;
    EXPECT_EQ(err(), "") << p;
  }
  l().rootfs_propagation = "RPRIVATE";
  EXPECT_EQ(
      err(),
      R"(linux.rootfsPropagation "RPRIVATE": unknown propagation (expected private, rprivate, slave, rslave, shared, rshared, unbindable or runbindable))");
  l().rootfs_propagation.clear();
  l().masked_paths.push_back("proc/foo");
  EXPECT_EQ(err(), R"(linux.maskedPaths[10] "proc/foo": must be an absolute path)");
  l().masked_paths.pop_back();
  l().readonly_paths.push_back("");
  EXPECT_EQ(err(), R"(linux.readonlyPaths[5] "": must be an absolute path)");
  l().readonly_paths.pop_back();
  l().personality = Personality{"LINUX", {}};
  EXPECT_EQ(err(), "");
  l().personality->domain = "LINUX64";
  EXPECT_EQ(
      err(),
      R"(linux.personality.domain "LINUX64": unknown personality domain (expected LINUX or LINUX32))");
}

TEST_F(Validate, NotCheckedHere) {
  // seccomp names are seccomp/'s business; apparmor/selinux the runtime's.
  Seccomp sc;
  sc.default_action = "SCMP_ACT_BOGUS";
  sc.architectures = {"SCMP_ARCH_NOPE"};
  l().seccomp = sc;
  s.process->apparmor_profile = "unconfined";
  s.process->selinux_label = "x";
  EXPECT_EQ(err(), "");
}

TEST_F(Validate, NoLinuxSection) {
  s.linux_.reset();
  s.hostname.clear();
  EXPECT_EQ(err(), "");
  EXPECT_FALSE(has_namespace(s, "pid"));
  EXPECT_EQ(find_namespace(s, "pid"), nullptr);
}

TEST_F(Validate, ValuesAreQuoted) {
  s.process->cwd = "a\"b";
  EXPECT_EQ(err(), R"(process.cwd "a\"b": must be an absolute path)");
}
