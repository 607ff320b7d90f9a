// confine.hpp: the ELF interpreter reader (pure) and the Landlock probe.
#include "comet/lifecycle/confine.hpp"

#include <elf.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "support/slurp.hpp"

namespace rt = comet::runtime;

using comet::test::slurp;

TEST(ElfInterpreter, DynamicHostBinary) {
  std::string b = slurp("/bin/true");
  ASSERT_FALSE(b.empty());
  auto r = rt::elf_interpreter(b);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(*r, "/lib64/ld-linux-x86-64.so.2");
}

TEST(ElfInterpreter, StaticBinaryHasNone) {
  std::string b = slurp("/bin/busybox");
  ASSERT_FALSE(b.empty());
  auto r = rt::elf_interpreter(b);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(*r, "");
}

TEST(ElfInterpreter, GarbageAndTruncationAreErrors) {
  EXPECT_FALSE(rt::elf_interpreter("").ok());
  EXPECT_FALSE(rt::elf_interpreter("#!/bin/sh\n").ok());
  std::string b = slurp("/bin/true");
  // every prefix either fails cleanly or (once the headers are whole) agrees
  for (size_t n = 0; n < 4096 && n < b.size(); n += 7) {
    auto r = rt::elf_interpreter(std::string_view(b).substr(0, n));
    if (r.ok()) {
      EXPECT_TRUE(*r == "" || *r == "/lib64/ld-linux-x86-64.so.2") << n;
    }
  }
  // program headers pointing past the end
  std::string c = b.substr(0, sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, c.data(), sizeof eh);
  eh.e_phoff = 1ULL << 62;
  eh.e_phnum = 3;
  std::memcpy(c.data(), &eh, sizeof eh);
  EXPECT_FALSE(rt::elf_interpreter(c).ok());
}

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
