// Pure parts of runtime/: mount option parsing (libmount's table), the mount
// plan, the spec -> child plan, cgroup controller selection, signal names,
// container ids. No root, no syscalls that change anything.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "comet/base/sys.hpp"
#include "comet/host/cgroups.hpp"
#include "comet/host/state_store.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/lifecycle/mounts.hpp"
#include "comet/lifecycle/plan.hpp"
#include "comet/lifecycle/process_attrs.hpp"
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

// The sandbox's overlay views: the fallback is ours, never the kernel's data.
TEST(MountOptions, OverlayOrRbindIsOursAlone) {
  auto o = parse_mount_options({"ro", "nosuid", "nodev", "lowerdir=/e:/etc", "x-comet.or-rbind"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->or_rbind);
  EXPECT_EQ(o->data, "lowerdir=/e:/etc");
  EXPECT_EQ(o->flags, MS_RDONLY | MS_NOSUID | MS_NODEV);
  EXPECT_FALSE(o->bind);
}

TEST(MountOptions, IdmapAndRidmap) {
  auto o = parse_mount_options({"bind", "idmap"});
  ASSERT_TRUE(o.ok()) << o.error().what();
  EXPECT_TRUE(o->idmap);
  EXPECT_FALSE(o->ridmap);
  EXPECT_TRUE(o->data.empty());  // never passed to the kernel as fs data
  o = parse_mount_options({"rbind", "ridmap"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->idmap && o->ridmap && o->recursive_bind);
}

static oci::Mount idmapped(std::vector<std::string> opts, std::vector<oci::IdMapping> u,
                           std::vector<oci::IdMapping> g) {
  return oci::Mount{"/m", "bind", "/src", std::move(opts), std::move(u), std::move(g)};
}

TEST(MountPlan, Idmapped) {
  oci::Spec s = oci::default_spec();
  s.mounts = {idmapped({"bind"}, {{0, 1000, 10}}, {{0, 2000, 10}})};
  auto ops = plan_mounts(s, "/b");
  ASSERT_TRUE(ops.ok()) << ops.error().what();
  EXPECT_TRUE((*ops)[0].idmapped);
  EXPECT_EQ((*ops)[0].uid_map[0].host_id, 1000u);
  EXPECT_EQ((*ops)[0].gid_map[0].host_id, 2000u);
  EXPECT_EQ((*ops)[0].tree_fd, -1);
  // The option alone takes the container's mappings.
  s.linux_->uid_mappings = {{0, 100000, 65536}};
  s.linux_->gid_mappings = {{0, 200000, 65536}};
  s.mounts = {idmapped({"rbind", "ridmap"}, {}, {})};
  ops = plan_mounts(s, "/b");
  ASSERT_TRUE(ops.ok()) << ops.error().what();
  EXPECT_TRUE((*ops)[0].idmapped && (*ops)[0].opt.ridmap);
  EXPECT_EQ((*ops)[0].gid_map[0].host_id, 200000u);
  // A plain bind is not idmapped.
  s.mounts = {idmapped({"bind"}, {}, {})};
  ops = plan_mounts(s, "/b");
  ASSERT_TRUE(ops.ok());
  EXPECT_FALSE((*ops)[0].idmapped);
}

TEST(MountPlan, IdmappedErrors) {
  oci::Spec s = oci::default_spec();
  auto err = [&](oci::Mount m) {
    s.mounts = {std::move(m)};
    auto r = plan_mounts(s, "/b");
    return r.ok() ? std::string() : r.error().message();
  };
  EXPECT_EQ(err(idmapped({"bind"}, {{0, 1, 1}}, {})),
            "mounts[0]: an idmapped mount needs both uidMappings and gidMappings");
  EXPECT_EQ(err(idmapped({"bind"}, {{0, 1, 0}}, {{0, 1, 1}})),
            "mounts[0].uidMappings[0].size: must be at least 1");
  EXPECT_EQ(err(idmapped({"bind"}, {{0, 1, 1}}, {{4294967295u, 1, 1}})),
            "mounts[0].gidMappings[0]: the range passes the largest id (4294967294)");
  EXPECT_EQ(err(idmapped({"bind", "idmap"}, {}, {})),
            "mounts[0]: idmap without uidMappings/gidMappings takes the container's "
            "linux.uidMappings and linux.gidMappings, and there are none");
  EXPECT_EQ(err(oci::Mount{"/m", "tmpfs", "tmpfs", {"idmap"}, {{0, 1, 1}}, {{0, 1, 1}}}),
            "mounts[0]: an idmapped mount (idmap, ridmap, uidMappings) must be a bind mount");
}

TEST(MountPlan, CleansDestinationsAndResolvesBindSources) {
  oci::Spec s = oci::default_spec();
  s.mounts.push_back({"/data//x/../y/", "bind", "relsrc", {"rbind", "ro"}, {}, {}});
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
  s.mounts = {{"relative", "tmpfs", "tmpfs", {}, {}, {}}};
  auto r = plan_mounts(s, "/b");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "mounts[0].destination \"relative\": must be an absolute path");
  s.mounts = {{"/x", "", "", {}, {}, {}}};
  r = plan_mounts(s, "/b");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "mounts[0].type: required for a non-bind mount to /x");
  s.mounts = {{"/x", "bind", "", {"bind"}, {}, {}}};
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

static void drop_namespace(oci::Spec& s, const std::string& type) {
  auto& ns = s.linux_->namespaces;
  ns.erase(std::remove_if(ns.begin(), ns.end(), [&](auto& n) { return n.type == type; }), ns.end());
}

TEST(ChildPlan, OmittedNamespacesAreInheritedMountsIncluded) {
  oci::Spec s = oci::default_spec();
  s.linux_->namespaces.clear();
  s.hostname.clear();
  auto c = plan_child(s, inputs());
  ASSERT_TRUE(c.ok()) << c.error().what();
  EXPECT_EQ(c->ns.new_ns_flags, 0);
  EXPECT_TRUE(c->ns.joins.empty());
  EXPECT_TRUE(c->fs.host_mounts) << "no mount ns: the mounts are made in the runtime's";
  EXPECT_FALSE(c->fs.mounts.empty());

  s = oci::default_spec();  // a new mount namespace: its own mounts, as before
  EXPECT_FALSE(plan_child(s, inputs())->fs.host_mounts);
  s.linux_->namespaces.push_back({"mount", "/proc/1/ns/mnt"});
  drop_namespace(s, "mount");
  s.linux_->namespaces.push_back({"mount", "/proc/1/ns/mnt"});  // joined: not the runtime's
  EXPECT_FALSE(plan_child(s, inputs())->fs.host_mounts);
}

TEST(ChildPlan, InheritedMountNamespaceRefusals) {
  oci::Spec s = oci::default_spec();
  drop_namespace(s, "mount");
  s.linux_->namespaces.push_back({"user", ""});
  auto r = plan_child(s, inputs());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(),
            "mounts: without a mount namespace the mounts are made in the runtime's, which a user "
            "namespace of the container's cannot do: add a mount namespace");
  s = oci::default_spec();
  drop_namespace(s, "mount");
  s.linux_->rootfs_propagation = "shared";
  r = plan_child(s, inputs());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(),
            "linux.rootfsPropagation \"shared\": needs a mount namespace (without one, the "
            "runtime's mounts would change)");
}

TEST(ChildPlan, RefusesWhatItCannotEnforce) {
  struct Case {
    void (*mutate)(oci::Spec&);
    const char* error;
  } cases[] = {
      {[](oci::Spec& s) { s.process->scheduler = oci::Scheduler{}; },
       "process.scheduler.policy \"\": unknown policy (expected SCHED_OTHER, SCHED_FIFO, "
       "SCHED_RR, SCHED_BATCH, SCHED_ISO, SCHED_IDLE or SCHED_DEADLINE)"},
      {[](oci::Spec& s) { s.linux_->has_intel_rdt = true; },
       "linux.intelRdt: this host has no resctrl filesystem (/sys/fs/resctrl: it needs a CPU "
       "with Intel RDT or AMD PQoS and `mount -t resctrl resctrl /sys/fs/resctrl`)"},
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

// runtime-spec 1.2/1.3 process attributes (process_attrs.hpp): names to
// kernel values, and every value the kernel would refuse with a bare EINVAL
// refused with the field's name.
TEST(ProcessAttrs, NamesBecomeKernelValues) {
  oci::Spec s = oci::default_spec();
  s.process->io_priority = oci::IoPriority{"IOPRIO_CLASS_BE", 3};
  s.process->scheduler = oci::Scheduler{"SCHED_FIFO", 0, 10, {"SCHED_FLAG_RESET_ON_FORK"}, 0, 0, 0};
  s.process->exec_cpu_affinity = oci::CpuAffinity{"0", "0-1,65"};
  s.linux_->memory_policy = oci::MemoryPolicy{"MPOL_BIND", "0", {"MPOL_F_STATIC_NODES"}};
  auto c = plan_child(s, inputs());
  ASSERT_TRUE(c.ok()) << c.error().what();
  const ProcessAttrs& a = c->proc.attrs;
  EXPECT_EQ(a.ioprio, (2 << 13) | 3);
  ASSERT_TRUE(a.sched);
  EXPECT_EQ(a.sched->policy, 1u);
  EXPECT_EQ(a.sched->priority, 10u);
  EXPECT_EQ(a.sched->flags, 1u);
  EXPECT_EQ(a.cpus_initial, (std::vector<uint64_t>{1}));
  EXPECT_EQ(a.cpus_final, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(a.mpol_mode, 2 | (1 << 15));
  EXPECT_EQ(a.mpol_nodes, (std::vector<unsigned long>{1}));
}

TEST(ProcessAttrs, BadValuesAreRefusedByName) {
  struct Case {
    void (*mutate)(oci::Spec&);
    const char* error;
  } cases[] = {
      {[](oci::Spec& s) {
         s.process->io_priority = oci::IoPriority{"IOPRIO_CLASS_NONE", 0};
       },
       "process.ioPriority.class \"IOPRIO_CLASS_NONE\": unknown class (expected "
       "IOPRIO_CLASS_RT, IOPRIO_CLASS_BE or IOPRIO_CLASS_IDLE)"},
      {[](oci::Spec& s) {
         s.process->io_priority = oci::IoPriority{"IOPRIO_CLASS_RT", 8};
       },
       "process.ioPriority.priority 8: out of range (0 to 7)"},
      {[](oci::Spec& s) { s.process->scheduler = oci::Scheduler{"SCHED_RR", 0, 0, {}, 0, 0, 0}; },
       "process.scheduler.priority 0: SCHED_RR needs a priority from 1 to 99"},
      {[](oci::Spec& s) {
         s.process->scheduler = oci::Scheduler{"SCHED_OTHER", 0, 5, {}, 0, 0, 0};
       },
       "process.scheduler.priority 5: only SCHED_FIFO and SCHED_RR take a priority"},
      {[](oci::Spec& s) {
         s.process->scheduler = oci::Scheduler{"SCHED_OTHER", 20, 0, {}, 0, 0, 0};
       },
       "process.scheduler.nice 20: out of range (-20 to 19)"},
      {[](oci::Spec& s) {
         s.process->scheduler = oci::Scheduler{"SCHED_BATCH", 0, 0, {}, 1000, 0, 0};
       },
       "process.scheduler: runtime, deadline and period are for SCHED_DEADLINE only"},
      {[](oci::Spec& s) {
         s.process->scheduler = oci::Scheduler{"SCHED_DEADLINE", 0, 0, {}, 5000, 1000, 0};
       },
       "process.scheduler: SCHED_DEADLINE needs 1024 <= runtime <= deadline <= period "
       "(nanoseconds; period 0 means the deadline)"},
      {[](oci::Spec& s) {
         s.process->scheduler = oci::Scheduler{"SCHED_OTHER", 0, 0, {"SCHED_FLAG_X"}, 0, 0, 0};
       },
       "process.scheduler.flags \"SCHED_FLAG_X\": unknown flag (expected "
       "SCHED_FLAG_RESET_ON_FORK, SCHED_FLAG_RECLAIM, SCHED_FLAG_DL_OVERRUN, "
       "SCHED_FLAG_KEEP_POLICY, SCHED_FLAG_KEEP_PARAMS, SCHED_FLAG_UTIL_CLAMP_MIN or "
       "SCHED_FLAG_UTIL_CLAMP_MAX)"},
      {[](oci::Spec& s) {
         s.process->exec_cpu_affinity = oci::CpuAffinity{"3-1", ""};
       },
       "process.execCPUAffinity.initial \"3-1\": a range that goes down (expected a list such "
       "as \"0-3,7\")"},
      {[](oci::Spec& s) {
         s.process->exec_cpu_affinity = oci::CpuAffinity{"", "0,,1"};
       },
       "process.execCPUAffinity.final \"0,,1\": not a number, or above 8191 (expected a list "
       "such as \"0-3,7\")"},
      {[](oci::Spec& s) {
         s.linux_->memory_policy = oci::MemoryPolicy{"MPOL_LOCAL", "0", {}};
       },
       "linux.memoryPolicy.nodes \"0\": MPOL_LOCAL takes no nodes"},
      {[](oci::Spec& s) {
         s.linux_->memory_policy = oci::MemoryPolicy{"MPOL_BIND", "", {}};
       },
       "linux.memoryPolicy.nodes: required for MPOL_BIND"},
      {[](oci::Spec& s) {
         s.linux_->memory_policy = oci::MemoryPolicy{
             "MPOL_INTERLEAVE", "0", {"MPOL_F_STATIC_NODES", "MPOL_F_RELATIVE_NODES"}};
       },
       "linux.memoryPolicy.flags: MPOL_F_RELATIVE_NODES and MPOL_F_STATIC_NODES exclude each "
       "other"},
  };
  for (auto& c : cases) {
    oci::Spec s = oci::default_spec();
    c.mutate(s);
    auto r = plan_child(s, inputs());
    ASSERT_FALSE(r.ok()) << c.error;
    EXPECT_EQ(r.error().what(), std::string(c.error));
  }
}

// AppArmor and SELinux as runc: applied where the host has the LSM, a
// debug note where it does not.
TEST(ProcessAttrs, LsmLabelsFollowTheHost) {
  oci::Spec s = oci::default_spec();
  s.process->apparmor_profile = "docker-default";
  s.process->selinux_label = "system_u:system_r:container_t:s0";
  s.linux_->mount_label = "system_u:object_r:container_file_t:s0";
  auto none = plan_child(s, inputs());
  ASSERT_TRUE(none.ok()) << none.error().what();
  EXPECT_EQ(none->proc.attrs.apparmor_exec, "");
  EXPECT_EQ(none->proc.attrs.selinux_exec, "");
  EXPECT_EQ(none->proc.attrs.notes.size(), 3u);
  PlanInputs in = inputs();
  in.host.apparmor = true;
  in.host.selinux = true;
  auto with = plan_child(s, in);
  ASSERT_TRUE(with.ok()) << with.error().what();
  EXPECT_EQ(with->proc.attrs.apparmor_exec, "exec docker-default");
  EXPECT_EQ(with->proc.attrs.selinux_exec, "system_u:system_r:container_t:s0");
  EXPECT_TRUE(with->proc.attrs.notes.empty());
  bool tmpfs_labelled = false;
  for (const MountOp& op : with->fs.mounts) {
    if (op.opt.bind || op.type == "proc" || op.type == "sysfs") {
      EXPECT_EQ(op.opt.data.find("context="), std::string::npos) << op.dest;
    } else if (op.type == "tmpfs") {
      EXPECT_NE(op.opt.data.find("context=\"system_u:object_r:container_file_t:s0\""),
                std::string::npos)
          << op.dest << ": " << op.opt.data;
      tmpfs_labelled = true;
    }
  }
  EXPECT_TRUE(tmpfs_labelled);
}

// The procattr write, against a fake attr tree: AppArmor's own directory
// first (5.8+), the shared attr/exec where it is missing.
TEST(ProcessAttrs, ExecAttrIsWrittenWhereTheKernelReadsIt) {
  char tmpl[] = "/tmp/comet-attr-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string root = tmpl;
  auto slurp = [](const std::string& p) {
    std::string s;
    if (FILE* f = std::fopen(p.c_str(), "r")) {
      char b[256];
      size_t n = std::fread(b, 1, sizeof b, f);
      s.assign(b, n);
      std::fclose(f);
    }
    return s;
  };
  ASSERT_EQ(::system(("mkdir -p " + root + "/thread-self/attr/apparmor && touch " + root +
                      "/thread-self/attr/apparmor/exec " + root + "/thread-self/attr/exec")
                         .c_str()),
            0);
  int dir = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  EXPECT_EQ(write_exec_attr(dir, "apparmor", "exec p1"), 0);
  EXPECT_EQ(slurp(root + "/thread-self/attr/apparmor/exec"), "exec p1");
  EXPECT_EQ(slurp(root + "/thread-self/attr/exec"), "");
  ::unlink((root + "/thread-self/attr/apparmor/exec").c_str());
  ::rmdir((root + "/thread-self/attr/apparmor").c_str());
  EXPECT_EQ(write_exec_attr(dir, "apparmor", "exec p2"), 0);
  EXPECT_EQ(slurp(root + "/thread-self/attr/exec"), "exec p2");
  ::unlink((root + "/thread-self/attr/exec").c_str());
  EXPECT_EQ(write_exec_attr(dir, nullptr, "label"), ENOENT);
  ::close(dir);
  ASSERT_EQ(::system(("rm -rf " + root).c_str()), 0);
}
