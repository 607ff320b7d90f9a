// Pure parts of runtime/: mount option parsing (libmount's table), the mount
// plan, the spec -> child plan, cgroup controller selection, signal names,
// container ids. No root, no syscalls that change anything.
#include <gtest/gtest.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>

#include "comet/base/sys.hpp"
#include "comet/host/cgroups.hpp"
#include "comet/host/state_store.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/lifecycle/mounts.hpp"
#include "comet/lifecycle/plan.hpp"
#include "comet/oci/spec.hpp"

using namespace comet;
using namespace comet::runtime;

TEST(MountOptions, FlagsDataAndPropagation) {
  auto o = parse_mount_options({"nosuid", "noexec", "nodev", "ro", "size=65536k", "mode=755"});
  ASSERT_TRUE(o.ok()) << o.error().what();
  EXPECT_EQ(o->flags, MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RDONLY);
  EXPECT_EQ(o->data, "size=65536k,mode=755");
  EXPECT_EQ(o->propagation, 0u);
  EXPECT_FALSE(o->bind);

  o = parse_mount_options({"rbind", "rprivate", "ro", "rw"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->bind);
  EXPECT_TRUE(o->recursive_bind);
  EXPECT_EQ(o->propagation, MS_PRIVATE | MS_REC);
  EXPECT_EQ(o->flags & MS_RDONLY, 0u) << "a later rw undoes ro";
  EXPECT_EQ(o->flags & (MS_BIND | MS_REC), 0u) << "bind is not a remount flag";

  o = parse_mount_options({"bind", "shared"});
  EXPECT_EQ(o->propagation, static_cast<unsigned long>(MS_SHARED));
  o = parse_mount_options({"rslave"});
  EXPECT_EQ(o->propagation, MS_SLAVE | MS_REC);
}

TEST(MountOptions, RecursiveAttributes) {
  auto o = parse_mount_options({"rro", "rnosuid", "rnoexec", "rdev"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->rec_attr_set, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
  EXPECT_EQ(o->rec_attr_clr, static_cast<unsigned long long>(MOUNT_ATTR_NODEV));
}

TEST(MountOptions, IdmapRefusedNotIgnored) {
  auto o = parse_mount_options({"bind", "idmap"});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.error().message(), "mount option \"idmap\": idmapped mounts are not supported");
}

TEST(MountPlan, CleansDestinationsAndResolvesBindSources) {
  oci::Spec s = oci::default_spec();
  s.mounts.push_back({"/data//x/../y/", "bind", "relsrc", {"rbind", "ro"}, false});
  auto ops = plan_mounts(s, "/bundles/b");
  ASSERT_TRUE(ops.ok()) << ops.error().what();
  const MountOp& last = ops->back();
  EXPECT_EQ(last.dest, "/data/y");
  EXPECT_EQ(last.source, "/bundles/b/relsrc");
  EXPECT_TRUE(last.opt.bind);
  EXPECT_EQ(last.opt.flags, static_cast<unsigned long>(MS_RDONLY));
  EXPECT_TRUE(std::any_of(ops->begin(), ops->end(), [](const MountOp& m) { return m.cgroup; }));
}

TEST(MountPlan, Errors) {
  oci::Spec s = oci::default_spec();
  s.mounts = {{"relative", "tmpfs", "tmpfs", {}, false}};
  auto r = plan_mounts(s, "/b");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "mounts[0].destination \"relative\": must be an absolute path");
  s.mounts = {{"/x", "", "", {}, false}};
  r = plan_mounts(s, "/b");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "mounts[0].type: required for a non-bind mount to /x");
  s.mounts = {{"/x", "bind", "", {"bind"}, false}};
  r = plan_mounts(s, "/b");
  EXPECT_EQ(r.error().message(), "mounts[0].source: a bind mount needs a source");
}

static PlanInputs inputs() {
  return PlanInputs{"c1", "/b", "/b/rootfs", false, false, 0};
}

TEST(ChildPlan, DefaultSpec) {
  oci::Spec s = oci::default_spec();
  auto c = plan_child(s, inputs());
  ASSERT_TRUE(c.ok()) << c.error().what();
  EXPECT_EQ(c->ns.new_ns_flags,
            CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS);
  EXPECT_FALSE(c->ns.slow_path);
  EXPECT_TRUE(c->fs.dev_is_tmpfs);
  EXPECT_TRUE(c->proc.has_caps);
  EXPECT_EQ(c->proc.caps.inheritable, 0u) << "inheritable stays empty unless asked";
  EXPECT_EQ(c->proc.caps.bounding,
            (1ULL << 29) | (1ULL << 5) | (1ULL << 10));  // AUDIT_WRITE KILL NET_BIND
  EXPECT_EQ(c->proc.keyring_name, "_ses.c1");
  ASSERT_EQ(c->proc.rlimits.size(), 1u);
  EXPECT_EQ(c->proc.rlimits[0].value.rlim_cur, 1024u);
}

TEST(ChildPlan, JoinsMakeTheSlowPathUserFirst) {
  oci::Spec s = oci::default_spec();
  s.linux_->namespaces.push_back({"network", "/run/netns/x"});
  s.linux_->namespaces.erase(s.linux_->namespaces.begin() + 1);  // drop the new network ns
  s.linux_->namespaces.push_back({"user", "/proc/1/ns/user"});
  auto c = plan_child(s, inputs());
  ASSERT_TRUE(c.ok()) << c.error().what();
  EXPECT_TRUE(c->ns.slow_path);
  ASSERT_EQ(c->ns.joins.size(), 2u);
  EXPECT_EQ(c->ns.joins[0].clone_flag, CLONE_NEWUSER);
  EXPECT_TRUE(c->ns.userns);
}

TEST(ChildPlan, RefusesWhatItCannotEnforce) {
  struct Case {
    void (*mutate)(oci::Spec&);
    const char* error;
  } cases[] = {
      {[](oci::Spec& s) { s.process->apparmor_profile = "x"; },
       "process.apparmorProfile \"x\": AppArmor is not supported by this runtime"},
      {[](oci::Spec& s) { s.process->selinux_label = "l"; },
       "process.selinuxLabel \"l\": SELinux is not supported by this runtime"},
      {[](oci::Spec& s) { s.process->has_scheduler = true; },
       "process.scheduler: not supported by this runtime"},
      {[](oci::Spec& s) { s.linux_->has_intel_rdt = true; },
       "linux.intelRdt: not supported by this runtime"},
      {[](oci::Spec& s) { s.process->rlimits[0].type = "RLIMIT_BOGUS"; },
       "process.rlimits[0].type: unknown rlimit \"RLIMIT_BOGUS\""},
      {[](oci::Spec& s) { s.process->cwd = "rel"; },
       "process.cwd \"rel\": must be an absolute path"},
  };
  for (auto& c : cases) {
    oci::Spec s = oci::default_spec();
    c.mutate(s);
    auto r = plan_child(s, inputs());
    ASSERT_FALSE(r.ok()) << c.error;
    EXPECT_EQ(r.error().message(), c.error);
  }
}

TEST(Cgroups, NeededV1Controllers) {
  EXPECT_TRUE(needed_v1_controllers(nullptr).empty());
  oci::Resources r;
  r.devices.push_back({false, "", {}, {}, "rwm"});
  EXPECT_TRUE(needed_v1_controllers(&r).empty()) << "device rules are an eBPF program on cgroup2";
  r.memory = oci::Memory{};
  r.memory->limit = 1 << 20;
  r.pids = oci::Pids{100};
  r.cpu = oci::Cpu{};
  r.cpu->cpus = "0";
  auto n = needed_v1_controllers(&r);
  EXPECT_EQ(n, (std::vector<std::string>{"memory", "cpuset", "pids"}));
}

// A sandbox keeps only the v1 hierarchies of its limits, and cgroup2.
TEST(CgroupPlanTest, KeepNeededV1) {
  CgroupPlan p;
  auto h = [](std::string dir, std::vector<std::string> c, bool v2 = false) {
    CgroupHierarchy x;
    x.dir = std::move(dir);
    x.controllers = std::move(c);
    x.v2 = v2;
    return x;
  };
  p.hierarchies = {h("/cg/cpu,cpuacct/s", {"cpu", "cpuacct"}),
                   h("/cg/memory/s", {"memory"}),
                   h("/cg/freezer/s", {"freezer"}),
                   h("/cg/pids/s", {"pids"}),
                   h("/cg/systemd/s", {"name=systemd"}),
                   h("/cg/unified/s", {}, true)};
  p.freezer_dir = "/cg/unified/s";
  p.freezer_v2 = true;
  oci::Resources r;
  r.memory = oci::Memory{};
  r.memory->limit = 1 << 20;
  r.pids = oci::Pids{100};
  keep_needed_v1(p, r);
  EXPECT_EQ(p.dirs(), (std::vector<std::string>{"/cg/memory/s", "/cg/pids/s", "/cg/unified/s"}));
  EXPECT_EQ(p.freezer_dir, "/cg/unified/s");
}

TEST(Signals, NamesNumbersAndErrors) {
  EXPECT_EQ(*parse_signal("KILL"), SIGKILL);
  EXPECT_EQ(*parse_signal("SIGTERM"), SIGTERM);
  EXPECT_EQ(*parse_signal("term"), SIGTERM);
  EXPECT_EQ(*parse_signal("9"), 9);
  EXPECT_EQ(*parse_signal("0"), 0);
  EXPECT_EQ(*parse_signal("RTMIN+2"), SIGRTMIN + 2);
  EXPECT_EQ(parse_signal("BOGUS").error().message(), "unknown signal \"BOGUS\"");
  EXPECT_EQ(parse_signal("99").error().message(), "invalid signal \"99\": invalid argument");
}

TEST(Ids, Validation) {
  EXPECT_TRUE(validate_id("abc-1_2.3+x").ok());
  EXPECT_FALSE(validate_id("").ok());
  EXPECT_FALSE(validate_id("a/b").ok());
  EXPECT_FALSE(validate_id("..").ok());
  EXPECT_FALSE(validate_id("a..b").ok());
  EXPECT_FALSE(validate_id(std::string(1025, 'a')).ok());
  EXPECT_EQ(validate_id("a/b").error().message(),
            "invalid container id \"a/b\": only [A-Za-z0-9_+.-] are allowed");
}

TEST(Paths, CleanAndJoin) {
  EXPECT_EQ(clean_path("/a//b/./c/../d/"), "/a/b/d");
  EXPECT_EQ(clean_path("/../../x"), "/x");
  EXPECT_EQ(clean_path("a/../../b"), "../b");
  EXPECT_EQ(join_path("/root/", "/id"), "/root/id");
}

// Agent- or pack-chosen text on the caller's terminal (issue 21, red teams
// 3 and 4): shown, never obeyed.
TEST(VisibleControls, CaretForTheTeeAndHexForLogs) {
  using comet::visible_controls;
  EXPECT_EQ(visible_controls("a\tb\nc\r", true), "a\tb\nc\r");
  EXPECT_EQ(visible_controls("\x1b]0;T\x07", true), "^[]0;T^G");
  EXPECT_EQ(visible_controls("\x1b]0;T\x07", false), "\\x1b]0;T\\x07");
  EXPECT_EQ(visible_controls("x\x7f", true), "x^?");
  // C1 in UTF-8 (U+009B CSI), and bare 8-bit C1 bytes anywhere
  EXPECT_EQ(visible_controls("C\xc2\x9b"
                             "2J",
                             true),
            "C^?2J");
  EXPECT_EQ(visible_controls("B\xff\x9b"
                             "31m",
                             true),
            "B\\xff^?31m");
  EXPECT_EQ(visible_controls("\x80\x9b", true), "^?^?");
  // valid UTF-8 passes whole, including continuation bytes 0x80..0x9f
  EXPECT_EQ(visible_controls("caf\xc3\xa9 \xe2\x80\x9c\xf0\x9f\x98\x80", true),
            "caf\xc3\xa9 \xe2\x80\x9c\xf0\x9f\x98\x80");
  EXPECT_EQ(visible_controls("\xc2\xa0", true), "\xc2\xa0");  // U+00A0 is no control
  // a sequence split across reads: carried, then completed
  std::string carry;
  EXPECT_EQ(visible_controls("x\xe2\x80", true, &carry), "x");
  EXPECT_EQ(carry, "\xe2\x80");
  EXPECT_EQ(visible_controls(carry + "\x9c", true, &carry), "\xe2\x80\x9c");
  EXPECT_TRUE(carry.empty());
  EXPECT_EQ(visible_controls("x\xc2", true, &carry), "x");
  EXPECT_EQ(visible_controls(carry + "\x9b", true, &carry), "^?");
  // ill-formed UTF-8 hiding a 0x9B: overlong, surrogate, past U+10FFFF
  EXPECT_EQ(visible_controls("A\xe0\x82\x9b"
                             "2J",
                             true),
            "A\\xe0^?^?2J");
  EXPECT_EQ(visible_controls("B\xed\xa0\x80", true), "B\\xed\\xa0^?");
  EXPECT_EQ(visible_controls("D\xf4\x90\x80\x80", true), "D\\xf4^?^?^?");
  // no carry: an incomplete sequence is shown as bytes
  EXPECT_EQ(visible_controls("x\xe2\x80", true), "x\\xe2^?");
}
