// The state store and the status state machine (runtime-spec runtime.md):
// atomic records, corrupt records refused, duplicate ids, and the status
// derived from the init's liveness, the exec fifo and the freezer.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "comet/base/sys.hpp"
#include "comet/host/state_store.hpp"

#include "support/tempdir.hpp"

using namespace comet;
using namespace comet::runtime;
namespace fs = std::filesystem;

class StateStore : public ::testing::Test {
 protected:
  comet::test::TempDir tmp_{"comet-state-test"};
  const std::string root_ = tmp_.path();
};

TEST_F(StateStore, CreateIsExclusive) {
  ContainerDir d(root_, "c1");
  ASSERT_TRUE(d.create().ok());
  ContainerDir again(root_, "c1");
  auto st = again.create();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message(), "container with given ID already exists: c1");
}

TEST_F(StateStore, RoundTripAndCorruptRecord) {
  ContainerDir d(root_, "c2");
  ASSERT_TRUE(d.create().ok());
  ContainerRecord r;
  r.id = "c2";
  r.bundle = "/b";
  r.pid = 42;
  r.start_time = 7;
  r.cgroup_dirs = {"/sys/fs/cgroup/unified/c2"};
  r.annotations = {{"k", "v"}};
  ASSERT_TRUE(d.save(r).ok());
  auto back = d.load();
  ASSERT_TRUE(back.ok()) << back.error().what();
  EXPECT_EQ(back->pid, 42);
  EXPECT_EQ(back->cgroup_dirs, r.cgroup_dirs);
  EXPECT_EQ(back->annotations.at("k"), "v");
  // No temp file is left beside the record.
  for (auto& e : fs::directory_iterator(d.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  // A half-written record is refused with its path, never taken for state.
  ASSERT_TRUE(write_file(d.file("state.json"), "{\"id\":\"c2\",\"bun", O_TRUNC).ok());
  auto bad = d.load();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("corrupt state"), std::string::npos) << bad.error().what();
}

TEST_F(StateStore, MissingContainer) {
  ContainerDir d(root_, "nope");
  EXPECT_FALSE(d.exists());
  auto r = d.load();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "container does not exist");
}

TEST_F(StateStore, StatusFollowsTheInit) {
  ContainerDir d(root_, "c3");
  ASSERT_TRUE(d.create().ok());
  ContainerRecord r;
  r.id = "c3";
  r.pid = ::getpid();
  r.start_time = process_start_time(::getpid());
  r.create_done = false;
  EXPECT_EQ(derive_status(d, r), oci::ContainerStatus::kCreating);
  r.create_done = true;
  ASSERT_EQ(::mkfifo(d.file("exec.fifo").c_str(), 0600), 0);
  EXPECT_EQ(derive_status(d, r), oci::ContainerStatus::kCreated);
  ::unlink(d.file("exec.fifo").c_str());
  EXPECT_EQ(derive_status(d, r), oci::ContainerStatus::kRunning);
  // A recycled pid (start time differs) is not our init.
  r.start_time += 1;
  EXPECT_EQ(derive_status(d, r), oci::ContainerStatus::kStopped);
  // A dead, reaped child.
  pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  ::waitpid(p, nullptr, 0);
  r.pid = p;
  r.start_time = 0;
  EXPECT_EQ(derive_status(d, r), oci::ContainerStatus::kStopped);
}

TEST_F(StateStore, ListsOnlyContainerDirs) {
  ASSERT_TRUE(ContainerDir(root_, "b").create().ok());
  ASSERT_TRUE(ContainerDir(root_, "a").create().ok());
  ASSERT_TRUE(write_file(root_ + "/.hidden", "", O_CREAT).ok());
  EXPECT_EQ(list_ids(root_), (std::vector<std::string>{"a", "b"}));
}
