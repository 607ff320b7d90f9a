// slurp(): a whole file as a string, for the unit tests' fixtures and
// golden files.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace comet::test {

// The bytes of the file at `p`; a file that cannot be opened fails the
// calling test (and reads as "").
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << p;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace comet::test
