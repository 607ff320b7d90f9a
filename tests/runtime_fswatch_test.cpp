// classify_fs() (runtime/include/comet/runtime/fswatch.hpp): which failed
// path calls are fs.read / fs.write violations. Pure; no root, no BPF.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "comet/runtime/fswatch.hpp"

namespace comet::runtime {
namespace {

FsView view() {
  FsView v;
  v.fs.read = {"/workdir", "/workdir/inputs", "/data"};
  v.fs.write = {"/workdir/out"};
  v.image_top = {"usr", "etc", "lib", "bin", "proc", "dev", "workdir", "tmp"};
  return v;
}

std::optional<FsViolation> c(int nr, std::uint64_t flags, int err, const std::string& p,
                             const std::string& p2 = "") {
  return classify_fs(nr, flags, err, p, p2, view());
}

TEST(FsClassify, ReadOfAnUndeclaredPathOutsideTheImage) {
  auto v = c(SYS_openat, O_RDONLY, ENOENT, "/home/u/.ssh/id_rsa");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->surface, "fs.read");
  EXPECT_EQ(v->requested, "/home/u/.ssh/id_rsa");
  EXPECT_FALSE(v->matched_entry);
  EXPECT_EQ(v->syscall, "openat");
  EXPECT_EQ(v->err, ENOENT);
  for (int nr : {SYS_stat, SYS_lstat, SYS_newfstatat, SYS_statx, SYS_access, SYS_faccessat2,
                 SYS_readlink, SYS_chdir}) {
    auto w = c(nr, 0, ENOENT, "/root/x");
    ASSERT_TRUE(w) << nr;
    EXPECT_EQ(w->surface, "fs.read") << nr;
  }
}

TEST(FsClassify, AMissingFileInsideTheImageOrADeclaredEntryIsOnlyMissing) {
  EXPECT_FALSE(c(SYS_openat, O_RDONLY, ENOENT, "/etc/ld.so.preload"));
  EXPECT_FALSE(c(SYS_newfstatat, 0, ENOENT, "/usr/lib/python3.11/missing.py"));
  EXPECT_FALSE(c(SYS_openat, O_RDONLY, ENOENT, "/workdir/missing"));
  EXPECT_FALSE(c(SYS_openat, O_RDONLY, ENOENT, "/data/nothing"));
  EXPECT_FALSE(c(SYS_stat, 0, ENOTDIR, "/workdir/agent.py/x"));
  EXPECT_FALSE(c(SYS_stat, 0, ENOENT, "relative/missing"));  // under /workdir
}

TEST(FsClassify, SystemDirectoriesAreNeverHiddenOnes) {
  // an image without /etc, /sys or /lib64: still not a violation (the BPF
  // program does not even record a failed read there)
  FsView v = view();
  v.image_top = {"usr", "workdir"};
  for (const char* p : {"/etc/ld.so.preload", "/sys/fs/selinux", "/lib64/x", "/sbin/x", "/bin/sh",
                        "/proc/1/mem", "/dev/nvidia0", "/lib/x"})
    EXPECT_FALSE(classify_fs(SYS_openat, O_RDONLY, ENOENT, p, "", v)) << p;
  // a look-alike is not one
  auto w = classify_fs(SYS_openat, O_RDONLY, ENOENT, "/etcetera/x", "", v);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->requested, "/etcetera/x");
  // and writes there are writes
  EXPECT_TRUE(classify_fs(SYS_openat, O_WRONLY | O_CREAT, EROFS, "/etc/x", "", v));
}

TEST(FsClassify, RefusedReadsInsideTheImageAreTheImagesOwn) {
  // its mode bits, the kernel's /proc rules: not the manifest's doing
  EXPECT_FALSE(c(SYS_openat, O_RDONLY, EACCES, "/etc/shadow"));
  EXPECT_FALSE(c(SYS_openat, O_RDONLY, EACCES, "/proc/1/mem"));
  EXPECT_FALSE(c(SYS_openat, O_RDONLY, EACCES, "/workdir/inputs/secret"));
  auto v = c(SYS_openat, O_RDONLY, EACCES, "/mnt/host/secret");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->surface, "fs.read");
  EXPECT_EQ(v->err, EACCES);
}

TEST(FsClassify, WritesOutsideFsWrite) {
  auto v = c(SYS_openat, O_WRONLY | O_CREAT | O_TRUNC, EROFS, "/etc/passwd");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->surface, "fs.write");
  EXPECT_FALSE(v->matched_entry);
  EXPECT_EQ(v->err, EROFS);
  // a read-only declared entry: matched_entry names it
  v = c(SYS_openat, O_RDWR, EROFS, "/workdir/inputs/a.txt");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->surface, "fs.write");
  EXPECT_EQ(v->matched_entry, "/workdir/inputs");
  v = c(SYS_mkdirat, 0, EROFS, "/workdir/__pycache__");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->matched_entry, "/workdir");
  EXPECT_EQ(v->syscall, "mkdirat");
  // a missing parent outside: ENOENT is a write attempt all the same
  v = c(SYS_open, O_WRONLY | O_CREAT, ENOENT, "/srv/out.txt");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->surface, "fs.write");
  for (int nr : {SYS_creat, SYS_mkdir, SYS_rmdir, SYS_unlink, SYS_unlinkat, SYS_truncate, SYS_chmod,
                 SYS_fchmodat, SYS_chown, SYS_lchown, SYS_fchownat, SYS_utimensat, SYS_setxattr,
                 SYS_lsetxattr, SYS_removexattr, SYS_lremovexattr, SYS_symlink, SYS_symlinkat}) {
    auto w = c(nr, 0, EROFS, "/usr/bin/x");
    ASSERT_TRUE(w) << nr;
    EXPECT_EQ(w->surface, "fs.write") << nr;
  }
}

TEST(FsClassify, OTruncAloneIsAWrite) {
  auto v = c(SYS_openat, O_RDONLY | O_TRUNC, EROFS, "/etc/x");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->surface, "fs.write");
}

TEST(FsClassify, AFailedWriteInsideFsWriteIsNotAViolation) {
  EXPECT_FALSE(c(SYS_openat, O_WRONLY | O_CREAT, ENOENT, "/workdir/out/sub/x.json"));
  EXPECT_FALSE(c(SYS_mkdirat, 0, EACCES, "/workdir/out/locked/d"));
  EXPECT_FALSE(c(SYS_unlinkat, 0, ENOENT, "/workdir/out/none"));
}

TEST(FsClassify, RenameAndLinkCheckBothPaths) {
  auto v = c(SYS_rename, 0, EXDEV, "/workdir/out/a", "/etc/a");
  EXPECT_FALSE(v);  // EXDEV is not the sandbox's
  v = c(SYS_renameat2, 0, EROFS, "/workdir/out/a", "/etc/a");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->requested, "/etc/a");
  v = c(SYS_rename, 0, EROFS, "/workdir/inputs/a", "/workdir/out/a");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->requested, "/workdir/inputs/a");
  EXPECT_FALSE(c(SYS_linkat, 0, ENOENT, "/workdir/out/a", "/workdir/out/b"));
}

TEST(FsClassify, PathsAreCleanedLexically) {
  auto v = c(SYS_openat, O_RDONLY, ENOENT, "/workdir/../home/x");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->requested, "/home/x");
  v = c(SYS_openat, O_RDONLY, ENOENT, "../home/y");  // relative to /workdir
  ASSERT_TRUE(v);
  EXPECT_EQ(v->requested, "/home/y");
  v = c(SYS_openat, O_WRONLY | O_CREAT, EROFS, "/workdir/out/../x");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->requested, "/workdir/x");
}

TEST(FsClassify, NotTheSandboxsErrnosOrCalls) {
  for (int e : {EEXIST, EISDIR, ENOSPC, EBUSY, ENAMETOOLONG, EINVAL, EBADF})
    EXPECT_FALSE(c(SYS_openat, O_WRONLY | O_CREAT, e, "/etc/x")) << e;
  EXPECT_FALSE(c(SYS_read, 0, ENOENT, "/home/x"));
  // device nodes are the lock-down's (surface device)
  EXPECT_FALSE(c(SYS_mknodat, S_IFCHR | 0666, EPERM, "/workdir/out/null"));
  EXPECT_FALSE(c(SYS_mknodat, S_IFBLK | 0600, EPERM, "/workdir/out/loop0"));
  auto v = c(SYS_mknodat, S_IFIFO | 0600, EROFS, "/etc/fifo");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->surface, "fs.write");
  // an fd-relative call carries no path
  EXPECT_FALSE(c(SYS_newfstatat, 0, EACCES, ""));
}

TEST(FsClassify, TheArmMarkerIsNotAPathAnAgentCanConfuse) {
  // the reporter skips it before classifying; as a path it is outside the image
  auto v = c(SYS_access, 0, ENOENT, kFsArmMarker);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->surface, "fs.read");
}

}  // namespace
}  // namespace comet::runtime
