// The agent's view of a path (runtime/pack/src/pack_view.hpp, `pack explain
// --path`): the mounts as data, and the walk over a rootfs and a pack made
// here. What the kernel answers is checked end to end by
// integration/pack/test_pack_explain.py; this pins the planner and the walk.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <gtest/gtest.h>

#include "comet/capability/manifest.hpp"
#include "pack_view.hpp"
#include "support/tempdir.hpp"

namespace comet::runtime::pack_detail {
namespace {

constexpr const char* kManifest = R"(apiVersion: soyapack/v0
name: view
version: 0.0.1
runtime:
  interpreter: /usr/bin/python3
  entrypoint: agent.py
capabilities:
  egress: []
  fs:
    read: [/workdir, /workdir/inputs]
    write: [/workdir/out, /tmp]
  determinism_tier: read-only
)";

class PackView : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = capability::load_manifest(kManifest);
    ASSERT_TRUE(m.ok()) << m.error().what();
    man_ = *m;
    dir_.put("rootfs/etc/passwd", "root:x:0:0::/root:/bin/sh\n");
    dir_.put("rootfs/usr/lib/libx.so", "x");
    std::filesystem::create_symlink("usr/lib", dir_ / "rootfs/lib64");
    dir_.put("rootfs/workdir/hidden", "the image's, under the pack");
    dir_.put("rootfs/secret/s", "s");
    ::chmod((dir_ / "rootfs/secret").c_str(), 0700);
    dir_.put("pack/agent.py", "print(1)\n");
    in_.man = &man_;
    in_.rootfs = dir_ / "rootfs";
    in_.pack_dir = dir_ / "pack";
    in_.owner = 0;
    ::chown((dir_ / "rootfs/secret").c_str(), 0, 0);
  }
  PathView see(const std::string& p) { return see_path(in_, plan_view(in_), p); }

  test::TempDir dir_{"comet-pack-view"};
  capability::Manifest man_;
  ViewInputs in_;
};

TEST_F(PackView, PlanListsEveryLayerParentsFirst) {
  auto m = plan_view(in_);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.front().dest, "/");
  EXPECT_EQ(m.front().layer, Layer::image);
  for (std::size_t i = 1; i < m.size(); ++i)
    EXPECT_LE(std::count(m[i - 1].dest.begin(), m[i - 1].dest.end(), '/'),
              std::count(m[i].dest.begin(), m[i].dest.end(), '/'))
        << m[i - 1].dest << " before " << m[i].dest;
  auto find = [&](const std::string& d) {
    for (const auto& x : m)
      if (x.dest == d) return x.layer;
    ADD_FAILURE() << "no mount " << d;
    return Layer::image;
  };
  EXPECT_EQ(find("/workdir"), Layer::pack);
  EXPECT_EQ(find("/workdir/out"), Layer::writable);
  EXPECT_EQ(find("/tmp"), Layer::tmp);
  EXPECT_EQ(find("/proc/sys"), Layer::proc_readonly);
  EXPECT_EQ(find("/proc/cmdline"), Layer::masked);
  // no --input: /workdir/inputs is the pack's own (absent here)
  for (const auto& x : m) EXPECT_NE(x.dest, "/workdir/inputs");
}

TEST_F(PackView, TheImagesFileIsReadableNotWritable) {
  PathView v = see("/etc/passwd");  // issue 26: "does not exist in the sandbox"
  EXPECT_TRUE(v.exists);
  EXPECT_EQ(v.layer, Layer::image);
  EXPECT_EQ(v.kind, "file");
  EXPECT_EQ(v.host, dir_ / "rootfs/etc/passwd");
  EXPECT_EQ(v.read_err, 0);
  EXPECT_EQ(v.write_err, EROFS);
}

TEST_F(PackView, SymlinksDotDotAndRelativePaths) {
  PathView v = see("/lib64/libx.so");
  EXPECT_EQ(v.resolved, "/usr/lib/libx.so");
  EXPECT_EQ(v.read_err, 0);
  EXPECT_EQ(see("/etc/../etc/passwd").resolved, "/etc/passwd");
  PathView rel = see("agent.py");
  EXPECT_EQ(rel.path, "/workdir/agent.py");
  EXPECT_EQ(rel.layer, Layer::pack);
  EXPECT_EQ(rel.read_err, 0);
  EXPECT_EQ(rel.write_err, EROFS);
}

TEST_F(PackView, MissingHiddenAndUnsearchable) {
  EXPECT_EQ(see("/workdir/hidden").read_err, ENOENT);  // the pack covers the image
  PathView nope = see("/nonexistent");
  EXPECT_FALSE(nope.exists);
  EXPECT_EQ(nope.read_err, ENOENT);
  EXPECT_EQ(nope.write_err, EROFS);
  EXPECT_EQ(see("/etc/nope/x").write_err, ENOENT);
  EXPECT_EQ(see("/etc/passwd/x").read_err, ENOTDIR);
  PathView s = see("/secret/s");
  EXPECT_EQ(s.read_err, EACCES);
  EXPECT_EQ(s.write_err, EACCES);
}

TEST_F(PackView, WritablePlacesDevAndProc) {
  PathView out = see("/workdir/out/x.json");
  EXPECT_EQ(out.layer, Layer::writable);
  EXPECT_EQ(out.read_err, ENOENT);
  EXPECT_EQ(out.write_err, 0);
  PathView tmp = see("/tmp");
  EXPECT_TRUE(tmp.dir_write);
  EXPECT_EQ(tmp.write_err, 0);
  EXPECT_EQ(see("/dev/null").write_err, 0);
  EXPECT_EQ(see("/dev/newfile").write_err, EACCES);
  EXPECT_EQ(see("/dev/shm/x").write_err, EROFS);
  if (::access("/proc/cmdline", F_OK) == 0) {
    PathView c = see("/proc/cmdline");
    EXPECT_EQ(c.layer, Layer::masked);
    EXPECT_EQ(c.read_err, 0);
  }
  EXPECT_EQ(see("/proc/sys/kernel/hostname").write_err, EROFS);
  EXPECT_EQ(see("/proc/no-such-name").write_err, ENOENT);
  EXPECT_EQ(outcome(see("/dev/stdout").read_err), "depends");  // a magic link
}

}  // namespace
}  // namespace comet::runtime::pack_detail
