// The pure parts of rootless mode (docs/rootless.md): the id map text and
// newuidmap's argv, which mapping an ordinary user writes itself, the
// controllers a config's limits need, and the refusal of a limit with no
// cgroup or no controller.
#include <gtest/gtest.h>

#include "comet/host/cgroups.hpp"
#include "comet/host/id_maps.hpp"
#include "comet/host/user_ns.hpp"
#include "comet/lifecycle/rootless.hpp"

using namespace comet;
using namespace comet::runtime;

namespace {
const std::vector<oci::IdMapping> kTwo = {{0, 1000, 1}, {1, 300000, 65536}};
}

TEST(IdMaps, Text) {
  EXPECT_EQ(id_map_text(kTwo), "0 1000 1\n1 300000 65536\n");
}

TEST(IdMaps, HelperArgv) {
  EXPECT_EQ(id_map_helper_argv("/usr/bin/newuidmap", 42, kTwo),
            (std::vector<std::string>{"/usr/bin/newuidmap", "42", "0", "1000", "1", "1", "300000",
                                      "65536"}));
}

TEST(IdMaps, OwnIdOnly) {
  EXPECT_TRUE(own_id_only({{0, 1000, 1}}, 1000));
  EXPECT_TRUE(own_id_only({{5, 1000, 1}}, 1000));
  EXPECT_FALSE(own_id_only({{0, 1000, 2}}, 1000));
  EXPECT_FALSE(own_id_only({{0, 1001, 1}}, 1000));
  EXPECT_FALSE(own_id_only(kTwo, 1000));
  EXPECT_FALSE(own_id_only({}, 1000));
}

TEST(RootlessLimits, Controllers) {
  oci::Resources r;
  EXPECT_TRUE(limit_controllers(r).empty());
  r.devices.push_back({});  // device rules are not limits
  EXPECT_TRUE(limit_controllers(r).empty());
  r.memory.emplace();
  r.pids.emplace();
  r.unified["memory.high"] = "1M";
  EXPECT_EQ(limit_controllers(r),
            (std::vector<std::string>{"memory", "pids", "unified:memory.high"}));
}

TEST(RootlessLimits, NoCgroupRefuses) {
  oci::Resources r;
  r.memory.emplace();
  CgroupPlan none;
  Status st = check_rootless_limits(none, "none (not delegated)", &r);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(is_refusal(st.error()));
  EXPECT_EQ(st.error().message(),
            "rootless: linux.resources.memory needs a cgroup, and this user has none (cgroup: "
            "none (not delegated)); remove the limit, or run in a cgroup2 subtree delegated to "
            "this user (docs/rootless.md)");
  EXPECT_TRUE(check_rootless_limits(none, "none", nullptr).ok());
  const oci::Resources empty;
  EXPECT_TRUE(check_rootless_limits(none, "none", &empty).ok());
}

TEST(RootlessLimits, MissingControllerRefuses) {
  CgroupPlan plan;
  plan.hierarchies.push_back({"/sys/fs/cgroup/unified", {"hugetlb"}, true, "/cg/u/x"});
  oci::Resources r;
  r.pids.emplace();
  Status st = check_rootless_limits(plan, "/cg/u/x (delegated)", &r);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message(),
            "rootless: linux.resources.pids needs the pids controller, which the delegated "
            "cgroup /cg/u/x does not have (its controllers: hugetlb; the delegating manager "
            "enables them in the parent's cgroup.subtree_control)");
  plan.hierarchies[0].controllers.push_back("pids");
  EXPECT_TRUE(check_rootless_limits(plan, "", &r).ok());
}

// pack run's own user namespace (user_ns.hpp): the user's first range, by
// name or uid; malformed lines skipped.
TEST(OwnUserNs, SubidRange) {
  const std::string text =
      "other:100000:65536\nbroken:x:1\nalice:200000\nalice:0:0\nalice:300000:65536\n"
      "alice:400000:10\n";
  auto r = find_subid_range(text, "alice", 1000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->start, 300000u);
  EXPECT_EQ(r->count, 65536u);
  auto by_uid = find_subid_range("1000:500000:100\n", "alice", 1000);
  ASSERT_TRUE(by_uid);
  EXPECT_EQ(by_uid->start, 500000u);
  EXPECT_FALSE(find_subid_range(text, "bob", 1001));
}

TEST(OwnUserNs, Maps) {
  EXPECT_EQ(id_map_text(own_namespace_maps(1000, std::nullopt)), "0 1000 1\n");
  EXPECT_EQ(id_map_text(own_namespace_maps(1000, SubIdRange{300000, 65536})),
            "0 1000 1\n1 300000 65536\n");
}
