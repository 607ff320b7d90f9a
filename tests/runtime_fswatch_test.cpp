// classify_fs(), absolute_in_task() and resolve_in_root()
// (runtime/reporting/include/comet/reporting/fswatch.hpp): which failed path calls are
// fs.read / fs.write violations, and where a path leads. No root, no BPF.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "comet/base/fd.hpp"
#include "comet/reporting/fswatch.hpp"

namespace comet::runtime {
namespace {

FsView view() {
  FsView v;
  v.fs.read = {"/workdir", "/workdir/inputs", "/data"};
  v.fs.write = {"/workdir/out"};
  v.image_top = {"usr", "etc", "lib", "bin", "proc", "dev", "workdir", "tmp"};
  v.cwd = "/workdir";
  return v;
}

// A path as the reporter has it for a task whose cwd has not moved.
FsPath at(const std::string& p) {
  return absolute_in_task(0, AT_FDCWD, p, FsCwd{}, "/workdir");
}

// The cwd identity a record carries, as the BPF program writes it.
FsCwd moved_to(const char* dir) {
  struct stat st;
  EXPECT_EQ(::stat(dir, &st), 0) << dir;
  return FsCwd{true, (major(st.st_dev) << 20) | minor(st.st_dev), st.st_ino};
}

std::optional<FsViolation> c(int nr, std::uint64_t flags, int err, const std::string& p,
                             const std::string& p2 = "") {
  return classify_fs(nr, flags, err, at(p), at(p2), view());
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
    EXPECT_FALSE(classify_fs(SYS_openat, O_RDONLY, ENOENT, at(p), at(""), v)) << p;
  // a look-alike is not one
  auto w = classify_fs(SYS_openat, O_RDONLY, ENOENT, at("/etcetera/x"), at(""), v);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->requested, "/etcetera/x");
  // and writes there are writes
  EXPECT_TRUE(classify_fs(SYS_openat, O_WRONLY | O_CREAT, EROFS, at("/etc/x"), at(""), v));
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
  // EXDEV (across mounts, said before the kernel looks at a read-only
  // target): judged like any other write of the two paths
  auto v = c(SYS_rename, 0, EXDEV, "/workdir/out/a", "/etc/a");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->requested, "/etc/a");
  EXPECT_FALSE(c(SYS_rename, 0, EXDEV, "/workdir/out/a", "/workdir/out/b"));
  EXPECT_FALSE(c(SYS_openat, O_WRONLY, EXDEV, "/etc/a"));  // only a rename or link says it
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

TEST(FsClassify, TheArmMarkerIsOutsideTheImage) {
  // the BPF program arms on it and records nothing of it; a record of it
  // after that (the agent looking it up itself) is an undeclared path
  auto v = c(SYS_access, 0, ENOENT, kFsArmMarker);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->surface, "fs.read");
}

TEST(FsClassify, TopsAnImageMayHaveButAPackNeverReads) {
  // a full Debian image has /home, /root, /var, /srv: a failed read there
  // is still a violation
  FsView v = view();
  v.image_top.insert(v.image_top.end(), {"home", "root", "var", "srv", "mnt", "media", "opt"});
  for (const char* p : {"/home/u/.ssh/id_rsa", "/root/.netrc", "/var/lib/secret", "/srv/x",
                        "/mnt/host", "/media/usb"}) {
    auto w = classify_fs(SYS_openat, O_RDONLY, ENOENT, at(p), at(""), v);
    ASSERT_TRUE(w) << p;
    EXPECT_EQ(w->requested, p);
  }
  EXPECT_FALSE(classify_fs(SYS_openat, O_RDONLY, ENOENT, at("/opt/python/x"), at(""), v));
}

TEST(FsClassify, WhatCannotBeToldFailsClosed) {
  FsView v = view();
  // relative to a cwd or dirfd that is gone
  FsPath gone = at("home/x");
  gone.known = false;
  gone.path = "home/x";
  auto w = classify_fs(SYS_newfstatat, 0, ENOENT, gone, at(""), v);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->surface, "fs.read");
  EXPECT_EQ(w->requested, "home/x");
  EXPECT_FALSE(w->matched_entry);
  // cut: "/workdir/./././..." could go on with "../home/x"
  FsPath cut = at("/workdir/a/b");
  cut.cut = true;
  w = classify_fs(SYS_openat, O_RDONLY, ENOENT, cut, at(""), v);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->requested, "/workdir/a/b...");
  // a cut path that is a violation already is that violation
  cut = at("/home/a");
  cut.cut = true;
  w = classify_fs(SYS_openat, O_RDONLY, ENOENT, cut, at(""), v);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->requested, "/home/a");
  // through a magic link or a symlink loop
  FsPath opaque = at("/proc/self/root/home/x");
  opaque.opaque = true;
  w = classify_fs(SYS_openat, O_RDONLY, ENOENT, opaque, at(""), v);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->requested, "/proc/self/root/home/x");
}

TEST(FsClassify, WhereAPathLeadsIsJudgedToo) {
  FsView v = view();
  // a symlink under /workdir (a pack's own file) to /home
  FsPath p = at("/workdir/h/u/.ssh/id_rsa");
  p.resolved = "/home/u/.ssh/id_rsa";
  auto w = classify_fs(SYS_openat, O_RDONLY, ENOENT, p, at(""), v);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->surface, "fs.read");
  EXPECT_EQ(w->requested, "/home/u/.ssh/id_rsa");
  // a write through one under fs.write to the image
  p = at("/workdir/out/l/passwd");
  p.resolved = "/etc/passwd";
  w = classify_fs(SYS_openat, O_WRONLY | O_CREAT, EROFS, p, at(""), v);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->surface, "fs.write");
  EXPECT_EQ(w->requested, "/etc/passwd");
  // one that stays inside is nothing
  p = at("/workdir/out/l/x");
  p.resolved = "/workdir/out/real/x";
  EXPECT_FALSE(classify_fs(SYS_openat, O_WRONLY | O_CREAT, ENOENT, p, at(""), v));
}

TEST(FsClassify, ARefusedSymlinkUnderFsWriteIsAWriteViolation) {
  auto w = c(SYS_symlinkat, 0, EACCES, "/workdir/out/h");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->surface, "fs.write");
  EXPECT_EQ(w->matched_entry, "/workdir/out");
  EXPECT_EQ(w->syscall, "symlinkat");
  EXPECT_FALSE(c(SYS_symlinkat, 0, EEXIST, "/workdir/out/h"));
  EXPECT_FALSE(c(SYS_symlinkat, 0, ENOENT, "/workdir/out/no/h"));
}

TEST(FsClassify, EveryPathCallTheProgramRecords) {
  // reads (x86-64 numbers; the *at variants of 6.13 and file_getattr 6.17)
  for (int nr :
       {SYS_statfs, SYS_getxattr, SYS_lgetxattr, SYS_listxattr, SYS_llistxattr, 464, 465, 468,
        SYS_inotify_add_watch, SYS_name_to_handle_at, SYS_fanotify_mark, SYS_connect}) {
    auto w = c(nr, 0, ENOENT, "/home/x");
    ASSERT_TRUE(w) << nr;
    EXPECT_EQ(w->surface, "fs.read") << nr;
    EXPECT_FALSE(c(nr, 0, ENOENT, "/workdir/x")) << nr;
  }
  // writes
  for (int nr : {452, SYS_utime, SYS_utimes, SYS_futimesat, 463, 466, 469, SYS_bind}) {
    auto w = c(nr, 0, EROFS, "/workdir/x");
    ASSERT_TRUE(w) << nr;
    EXPECT_EQ(w->surface, "fs.write") << nr;
    EXPECT_EQ(w->matched_entry, "/workdir") << nr;
    EXPECT_FALSE(c(nr, 0, EACCES, "/workdir/out/x")) << nr;
  }
}

TEST(FsClassify, DirectoriesPassedThroughAreLookedInto) {
  FsPath p = at("/root/../workdir/x");
  p.resolved = "/workdir/x";
  p.passed = {"/root"};
  auto w = classify_fs(SYS_newfstatat, 0, EACCES, p, at(""), view());
  ASSERT_TRUE(w);
  EXPECT_EQ(w->surface, "fs.read");
  EXPECT_EQ(w->requested, "/root");
  // a write through one: the look is a read
  w = classify_fs(SYS_openat, O_WRONLY | O_CREAT, EACCES, p, at(""), view());
  ASSERT_TRUE(w);
  EXPECT_EQ(w->surface, "fs.read");
  p.passed = {"/workdir/out", "/usr/lib"};
  EXPECT_FALSE(classify_fs(SYS_newfstatat, 0, ENOENT, p, at(""), view()));
}

TEST(FsClassify, GlibcsLookForNscdIsNothing) {
  EXPECT_FALSE(c(SYS_connect, 0, ENOENT, "/var/run/nscd/socket"));
  EXPECT_FALSE(c(SYS_connect, 0, ENOENT, "/run/nscd/socket"));
  EXPECT_TRUE(c(SYS_bind, 0, EROFS, "/var/run/nscd/socket"));
}

TEST(FsClassify, WhichCallsFollowTheLastSymlink) {
  EXPECT_TRUE(fs_follows_last(SYS_openat, O_RDONLY, false));
  EXPECT_TRUE(fs_follows_last(SYS_openat, O_WRONLY | O_CREAT, false));
  EXPECT_FALSE(fs_follows_last(SYS_openat, O_RDONLY | O_NOFOLLOW, false));
  EXPECT_FALSE(fs_follows_last(SYS_openat, O_WRONLY | O_CREAT | O_EXCL, false));
  EXPECT_TRUE(fs_follows_last(SYS_newfstatat, 0, false));
  EXPECT_FALSE(fs_follows_last(SYS_newfstatat, AT_SYMLINK_NOFOLLOW, false));
  for (int nr : {SYS_lstat, SYS_unlink, SYS_unlinkat, SYS_rmdir, SYS_rename, SYS_mkdir,
                 SYS_readlink, SYS_symlink, SYS_bind, SYS_lgetxattr})
    EXPECT_FALSE(fs_follows_last(nr, 0, false)) << nr;
  for (int nr : {SYS_stat, SYS_access, SYS_chdir, SYS_truncate, SYS_chmod, SYS_getxattr})
    EXPECT_TRUE(fs_follows_last(nr, 0, false)) << nr;
  EXPECT_FALSE(fs_follows_last(SYS_rename, 0, true));
  // the *at calls by their flags; linkat and name_to_handle_at the other way
  for (int nr : {SYS_utimensat, SYS_fchownat, SYS_faccessat2, 452, 463, 464, 465, 466, 468, 469}) {
    EXPECT_TRUE(fs_follows_last(nr, 0, false)) << nr;
    EXPECT_FALSE(fs_follows_last(nr, AT_SYMLINK_NOFOLLOW, false)) << nr;
  }
  EXPECT_FALSE(fs_follows_last(SYS_linkat, 0, false));
  EXPECT_TRUE(fs_follows_last(SYS_linkat, AT_SYMLINK_FOLLOW, false));
  EXPECT_FALSE(fs_follows_last(SYS_name_to_handle_at, 0, false));
  EXPECT_TRUE(fs_follows_last(SYS_name_to_handle_at, AT_SYMLINK_FOLLOW, false));
  EXPECT_TRUE(fs_follows_last(SYS_inotify_add_watch, 0, false));
  EXPECT_FALSE(fs_follows_last(SYS_inotify_add_watch, 0x02000000 /* IN_DONT_FOLLOW */, false));
  EXPECT_FALSE(fs_follows_last(SYS_fanotify_mark, 0x4 /* FAN_MARK_DONT_FOLLOW */, false));
}

TEST(FsClassify, ARuntimeSocketIsTheRuntimeSocketSurfaces) {
  EXPECT_FALSE(c(SYS_connect, 0, ENOENT, "/run/docker.sock"));
  EXPECT_FALSE(c(SYS_connect, 0, ENOENT, "/var/run/containerd/containerd.sock"));
  auto w = c(SYS_connect, 0, ENOENT, "/var/run/other.sock");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->syscall, "connect");
}

TEST(FsAbsolute, TheBaseOfARelativePath) {
  // the cwd has not moved: the agent's, whatever /proc says
  FsPath p = absolute_in_task(0, AT_FDCWD, "../home/x", FsCwd{}, "/workdir/sub");
  EXPECT_TRUE(p.known);
  EXPECT_EQ(p.path, "/workdir/sub/../home/x");  // ".." is resolve_in_root()'s to walk
  // moved: the task's own cwd while it lives and is the directory of the call
  char cwd[4096];
  ASSERT_TRUE(::getcwd(cwd, sizeof cwd));
  p = absolute_in_task(::gettid(), AT_FDCWD, "a/b", moved_to(cwd), "/workdir");
  EXPECT_TRUE(p.known);
  EXPECT_EQ(p.path, std::string(cwd) + "/a/b");
  // the task has moved on since (chdir back after the call): not known
  p = absolute_in_task(::gettid(), AT_FDCWD, "a/b", moved_to("/usr"), "/workdir");
  EXPECT_FALSE(p.known);
  EXPECT_EQ(p.path, "a/b");
  // a dirfd of the task's
  UniqueFd d(::open("/usr", O_PATH | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(d);
  p = absolute_in_task(::gettid(), d.get(), "lib/x", FsCwd{}, "/workdir");
  EXPECT_EQ(p.path, "/usr/lib/x");
  EXPECT_EQ(absolute_in_task(0, AT_FDCWD, "", FsCwd{}, "/workdir").path, "");  // fd-relative
  // gone: not known, kept as given
  const int gone = 0x3ffffff;  // above pid_max
  for (std::int64_t dfd : {std::int64_t(AT_FDCWD), std::int64_t(5)}) {
    p = absolute_in_task(gone, dfd, "home/x", moved_to("/"), "/workdir");
    EXPECT_FALSE(p.known) << dfd;
    EXPECT_EQ(p.path, "home/x");
  }
  p = absolute_in_task(gone, 5, "home/x", FsCwd{}, "/workdir");
  EXPECT_FALSE(p.known);
  // absolute paths never need a base
  p = absolute_in_task(gone, 5, "/usr/../home//x/.", moved_to("/"), "/workdir");
  EXPECT_TRUE(p.known);
  EXPECT_EQ(p.path, "/usr/../home//x/.");
}

class FsResolve : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/comet-fsresolve-XXXXXX";
    ASSERT_TRUE(::mkdtemp(tmpl));
    dir_ = tmpl;
    namespace fs = std::filesystem;
    fs::create_directories(dir_ / "workdir/out/real");
    fs::create_directories(dir_ / "home/u");
    fs::create_directories(dir_ / "etc");
    fs::create_directories(dir_ / "proc/1");
    fs::create_directories(dir_ / "dev");
    fs::create_symlink("/home", dir_ / "workdir/out/h");
    fs::create_symlink("../home", dir_ / "workdir/rel");
    fs::create_symlink("real", dir_ / "workdir/out/inside");
    fs::create_symlink("../../../../../etc", dir_ / "workdir/climb");
    fs::create_symlink("loop", dir_ / "loop");
    fs::create_symlink("/proc/self/fd", dir_ / "dev/fd");
    {
      std::FILE* f = std::fopen((dir_ / "workdir/file").c_str(), "w");
      std::fclose(f);
    }
    root_.reset(::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(root_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  FsPath r(const std::string& p) { return resolve_in_root(root_.get(), at(p)); }
  std::filesystem::path dir_;
  UniqueFd root_;
};

TEST_F(FsResolve, SymlinksAreFollowedInsideTheRoot) {
  EXPECT_EQ(r("/workdir/out/h/u/.ssh/id_rsa").resolved, "/home/u/.ssh/id_rsa");
  EXPECT_EQ(r("/workdir/rel/u/x").resolved, "/home/u/x");
  EXPECT_EQ(r("/workdir/out/inside/x").resolved, "/workdir/out/real/x");
  // ".." after a symlink is the target's parent, not the link's
  EXPECT_EQ(r("/workdir/out/h/../etc/x").resolved, "/etc/x");
  EXPECT_EQ(r("/workdir/out/h/../etc/x").passed, (std::vector<std::string>{"/home"}));
  // a symlink climbing out stops at the root (never the host's /etc)
  EXPECT_EQ(r("/workdir/climb/x").resolved, "/etc/x");
  // nothing to follow: as written, cleaned
  FsPath p = r("/workdir/none/a/../b");
  EXPECT_EQ(p.resolved, "/workdir/none/b");
  EXPECT_FALSE(p.opaque);
  EXPECT_EQ(r("/workdir/file/x").resolved, "/workdir/file/x");
  EXPECT_EQ(r("/").resolved, "/");
}

TEST_F(FsResolve, TheWalkStopsWhereTheKernelDid) {
  // missing at "nope": the ".." after it cannot climb back over it
  FsPath p = r("/home/nope/../../workdir/x");
  EXPECT_EQ(p.resolved, "/home/nope/workdir/x");
  EXPECT_TRUE(classify_fs(SYS_newfstatat, 0, ENOENT, p, at(""), view()));
  // not a directory: the same
  EXPECT_EQ(r("/workdir/file/../../home/x").resolved, "/workdir/file/home/x");
  // what it went into and left is named
  p = r("/home/u/../../workdir/x");
  EXPECT_EQ(p.resolved, "/workdir/x");
  EXPECT_EQ(p.passed, (std::vector<std::string>{"/home/u", "/home"}));
  auto w = classify_fs(SYS_newfstatat, 0, ENOENT, p, at(""), view());
  ASSERT_TRUE(w);
  EXPECT_EQ(w->requested, "/home/u");
}

TEST_F(FsResolve, TheLastSymlinkOnlyForCallsThatFollowIt) {
  std::filesystem::create_symlink("/workdir/out/x", dir_ / "workdir/l");
  EXPECT_EQ(r("/workdir/l").resolved, "/workdir/out/x");
  FsPath p = resolve_in_root(root_.get(), at("/workdir/l"), false);
  EXPECT_EQ(p.resolved, "/workdir/l");
  // unlink of a pack's own symlink on read-only /workdir: a write to /workdir
  auto w = classify_fs(SYS_unlink, 0, EROFS, p, at(""), view());
  ASSERT_TRUE(w);
  EXPECT_EQ(w->requested, "/workdir/l");
  EXPECT_EQ(w->matched_entry, "/workdir");
  // "l/" is the directory l leads to, for every call
  EXPECT_EQ(resolve_in_root(root_.get(), at("/workdir/out/h/"), false).resolved, "/home");
  // a symlink before the last component is always followed
  EXPECT_EQ(resolve_in_root(root_.get(), at("/workdir/out/h/u"), false).resolved, "/home/u");
}

TEST_F(FsResolve, LoopsAndMagicLinksAreOpaque) {
  EXPECT_TRUE(r("/loop/x").opaque);
  EXPECT_TRUE(r("/proc/self/root/home/x").opaque);
  EXPECT_TRUE(r("/proc/1/cwd/x").opaque);
  EXPECT_TRUE(r("/proc/1/task/1/root/x").opaque);
  EXPECT_TRUE(r("/proc/self/fd/3/x").opaque);
  EXPECT_TRUE(r("/dev/fd/3/home").opaque);  // /dev/fd -> /proc/self/fd
  // procfs's ".." climbs (no floor below /proc: its directories all exist)
  EXPECT_EQ(r("/proc/self/../../home/x").resolved, "/home/x");
  // the link itself, or plain /proc files, are not
  EXPECT_FALSE(r("/proc/self/fd/3").opaque);
  EXPECT_FALSE(r("/proc/self/root").opaque);
  EXPECT_FALSE(r("/proc/1/status").opaque);
  EXPECT_FALSE(r("/dev/fd/0").opaque);
  EXPECT_FALSE(r("/workdir/out/h/u").opaque);
}

TEST_F(FsResolve, AnUnknownPathIsLeftAlone) {
  FsPath gone = at("home/x");
  gone.known = false;
  gone.path = "home/x";
  FsPath p = resolve_in_root(root_.get(), gone);
  EXPECT_FALSE(p.known);
  EXPECT_EQ(p.resolved, "");
}

// A sandbox profile's view (docs/sandbox.md): writes refused under a
// protected path or outside the writable places, reads refused under a
// denied one; a missing file is only missing.
FsView sandbox_view() {
  FsView v;
  v.sandbox = true;
  v.writable = {"/ws", "/tmp"};
  v.protect = {"/ws/.git/config", "/ws/.git/hooks", "/ws/.envrc"};
  v.deny = {"/etc/shadow", "/run/comet-runtime"};
  v.cwd = "/ws";
  return v;
}

std::optional<FsViolation> sb(int nr, std::uint64_t flags, int err, const std::string& p,
                              const std::string& p2 = "") {
  auto at_ws = [](const std::string& x) {
    return absolute_in_task(0, AT_FDCWD, x, FsCwd{}, "/ws");
  };
  return classify_fs(nr, flags, err, at_ws(p), at_ws(p2), sandbox_view());
}

TEST(FsClassifySandbox, ARefusedWriteUnderAProtectedPathNamesIt) {
  auto v = sb(SYS_openat, O_WRONLY | O_CREAT, EROFS, ".git/hooks/pre-commit");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->surface, "fs.write");
  EXPECT_EQ(v->requested, "/ws/.git/hooks/pre-commit");
  EXPECT_EQ(v->matched_entry, "/ws/.git/hooks");
  // git's rename of its lock over .git/config: EBUSY, the target named
  auto r = sb(SYS_rename, 0, EBUSY, ".git/config.lock", ".git/config");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->requested, "/ws/.git/config");
  EXPECT_EQ(r->matched_entry, "/ws/.git/config");
}

TEST(FsClassifySandbox, WritesOutsideTheWritablePlacesAndDeniedReads) {
  auto v = sb(SYS_unlink, 0, EROFS, "/etc/hostname");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->surface, "fs.write");
  EXPECT_FALSE(v->matched_entry);
  auto d = sb(SYS_openat, O_RDONLY, EACCES, "/etc/shadow");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->surface, "fs.read");
  EXPECT_EQ(d->matched_entry, "/etc/shadow");
}

TEST(FsClassifySandbox, OrdinaryFailuresAreNotViolations) {
  EXPECT_FALSE(sb(SYS_openat, O_RDONLY, ENOENT, "/usr/share/missing"));
  EXPECT_FALSE(sb(SYS_openat, O_RDONLY, ENOENT, "/ws/.envrc"));  // reading is allowed
  // a file of the workspace the user's own mode bits refuse
  EXPECT_FALSE(sb(SYS_openat, O_WRONLY, EACCES, "/ws/readonly.txt"));
  EXPECT_FALSE(sb(SYS_openat, O_WRONLY, EACCES, "/tmp/x"));
  EXPECT_FALSE(sb(SYS_execve, 0, ENOENT, "/usr/local/bin/bash"));
  EXPECT_FALSE(sb(SYS_connect, 0, EACCES, "/run/docker.sock"));  // the unix-socket rule's own
}

TEST(FsClassifySandbox, EBusyInTheWorkspaceIsTheSandboxsMount) {
  // `mv .git x`: .git is a pinned parent of its protected entries
  auto v = sb(SYS_renameat2, 0, EBUSY, ".git", ".git-old");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->requested, "/ws/.git");
}

}  // namespace
}  // namespace comet::runtime

namespace comet::runtime {
namespace {

TEST(FsOnFd, CallsOnTheFdItself) {
  EXPECT_TRUE(fs_on_fd_itself(SYS_fchmod, 0));
  EXPECT_TRUE(fs_on_fd_itself(SYS_fchown, 0));
  EXPECT_TRUE(fs_on_fd_itself(SYS_fsetxattr, 0));
  EXPECT_TRUE(fs_on_fd_itself(SYS_utimensat, 0));
  EXPECT_TRUE(fs_on_fd_itself(452, AT_EMPTY_PATH));  // fchmodat2
  EXPECT_FALSE(fs_on_fd_itself(452, 0));
  EXPECT_TRUE(fs_on_fd_itself(SYS_fchownat, AT_EMPTY_PATH));
  EXPECT_FALSE(fs_on_fd_itself(SYS_openat, 0));
}

TEST(FsOnFd, WhatTheFdNamesOrFailClosed) {
  UniqueFd f(::open("/etc/hostname", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(f);
  FsPath p = fd_in_task(::gettid(), f.get());
  EXPECT_TRUE(p.known);
  EXPECT_EQ(p.path, "/etc/hostname");
  int n = f.get();
  f.reset();
  p = fd_in_task(::gettid(), n);
  EXPECT_FALSE(p.known);  // closed: unknown, a violation
  EXPECT_EQ(p.path, "fd " + std::to_string(n));
  int pp[2];
  ASSERT_EQ(::pipe2(pp, O_CLOEXEC), 0);
  p = fd_in_task(::gettid(), pp[0]);
  EXPECT_FALSE(p.known);  // a pipe is no path of the sandbox
  EXPECT_EQ(p.path.rfind("fd ", 0), 0u);
  ::close(pp[0]);
  ::close(pp[1]);
}

}  // namespace
}  // namespace comet::runtime
