// confine.hpp: the Landlock probe and the exec lock's command lookup. (The
// ELF interpreter reader's tests: host_elf_test.cpp.)
#include "comet/lifecycle/confine.hpp"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace rt = comet::runtime;

TEST(Landlock, AbiProbeDoesNotFail) {
  int abi = rt::landlock_abi();
  EXPECT_GE(abi, 0);
}

// The exec lock of a config with the capabilities annotation alone
// (issue 21, item 2): the config's own command, found as execve would.
TEST(CommandInRootfs, FoundOnThePathInsideTheRootfs) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("cmt-cmd-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "bin");
  fs::create_directories(root / "usr/bin");
  std::ofstream(root / "bin/busybox") << "x";
  fs::permissions(root / "bin/busybox", fs::perms::owner_all);
  fs::create_symlink("busybox", root / "bin/sh");
  std::ofstream(root / "usr/bin/data") << "not executable";
  // an absolute symlink resolves inside the rootfs, not on the host
  fs::create_symlink("/bin/busybox", root / "usr/bin/bb");
  comet::oci::Process p;
  p.args = {"sh"};
  p.env = {"PATH=/usr/bin:/bin"};
  EXPECT_EQ(*rt::command_in_rootfs(p, root.string()), "/bin/sh");
  p.args = {"bb"};
  EXPECT_EQ(*rt::command_in_rootfs(p, root.string()), "/usr/bin/bb");
  p.args = {"data"};  // not executable: not found
  auto r = rt::command_in_rootfs(p, root.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().what().find("not found in the rootfs"), std::string::npos);
  p.args = {"/anything/at/all"};  // with a slash: as written (Landlock opens it)
  EXPECT_EQ(*rt::command_in_rootfs(p, root.string()), "/anything/at/all");
  p.args = {"./tool"};
  p.cwd = "/work";
  EXPECT_EQ(*rt::command_in_rootfs(p, root.string()), "/work/tool");
  p.args = {"sh"};
  p.env = {};  // runc's default PATH
  EXPECT_EQ(*rt::command_in_rootfs(p, root.string()), "/bin/sh");
  p.env = {"PATH=relative:"};  // never the cwd
  EXPECT_FALSE(rt::command_in_rootfs(p, root.string()).ok());
  fs::remove_all(root);
}
