// runtime/mount_optmap.hpp: our copy of libmount's Linux option table (the
// runtime no longer links libmount) must name the same flags, in the same
// order, with the same inversions as the libmount this was built against.
#include <gtest/gtest.h>
#include <libmount/libmount.h>

#include <cstring>
#include <string>
#include <vector>

#include "comet/lifecycle/mount_optmap.hpp"

namespace {

using comet::runtime::linux_mount_opts;

TEST(MountOptmap, MatchesLibmountLinuxMap) {
  std::vector<const libmnt_optmap*> theirs;
  for (const libmnt_optmap* m = mnt_get_builtin_optmap(MNT_LINUX_MAP); m && m->name; m++)
    if (!std::strchr(m->name, '=')) theirs.push_back(m);
  auto ours = linux_mount_opts();
  ASSERT_EQ(ours.size(), theirs.size());
  for (std::size_t i = 0; i < ours.size(); i++) {
    SCOPED_TRACE(theirs[i]->name);
    EXPECT_EQ(std::string(ours[i].name), theirs[i]->name);
    EXPECT_EQ(ours[i].flag, static_cast<unsigned long>(theirs[i]->id));
    EXPECT_EQ(ours[i].invert, (theirs[i]->mask & MNT_INVERT) != 0);
  }
}

}  // namespace
