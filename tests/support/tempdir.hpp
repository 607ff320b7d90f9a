// TempDir: a scratch directory under /tmp for one test, removed with all it
// holds when the test ends.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace comet::test {

class TempDir {
 public:
  // /tmp/TAG-XXXXXX; a mkdtemp that fails fails the calling test.
  explicit TempDir(const std::string& tag = "comet-test") {
    std::string t = "/tmp/" + tag + "-XXXXXX";
    if (::mkdtemp(t.data()) != nullptr) path_ = t;
    EXPECT_FALSE(path_.empty()) << "mkdtemp " << t;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }
  // Writes TEXT to REL (its parent directories made); its full path.
  std::string put(const std::string& rel, const std::string& text) const {
    std::filesystem::path p = std::filesystem::path(path_) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }

 private:
  std::string path_;
};

}  // namespace comet::test
