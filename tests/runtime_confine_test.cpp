// confine.hpp: the ELF interpreter reader (pure) and the Landlock probe.
#include "comet/runtime/confine.hpp"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace rt = comet::runtime;

namespace {
std::string slurp(const char* p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

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
