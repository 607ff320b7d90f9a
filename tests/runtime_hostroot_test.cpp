// rootfs --from-host: ld.so's search order; ld.so.conf; the Python skip
// list; the plan checks and key; and, without root, building a small rootfs
// on disk. (The ELF reader's tests: host_elf_test.cpp.)
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <set>
#include <thread>

#include "comet/base/sys.hpp"
#include "comet/pack/hostroot.hpp"

#include "support/tempdir.hpp"

using namespace comet;
using namespace comet::runtime;
namespace fs = std::filesystem;

namespace {

std::vector<unsigned char> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<unsigned char>((std::istreambuf_iterator<char>(f)),
                                    std::istreambuf_iterator<char>());
}

class HostrootDisk : public ::testing::Test {
 protected:
  comet::test::TempDir tmp_{"comet-hostroot-test"};
  const std::string dir_ = tmp_.path();
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  // Entries of dir_ (to see that a failure leaves nothing).
  std::set<std::string> listing() const {
    std::set<std::string> out;
    for (auto& e : fs::directory_iterator(dir_)) out.insert(e.path().filename().string());
    return out;
  }
};

}  // namespace

// ---- search order -------------------------------------------------------------------

TEST(HostrootSearch, RpathThenLoaderThenConfThenDefaults) {
  ElfInfo o;
  o.rpath = {"$ORIGIN/../lib", "/r", "relative/dir"};
  auto dirs = library_search_dirs(o, "/opt/app/bin", {"/loader"}, {"/c1", "/c2/"});
  std::vector<std::string> want = {"/opt/app/lib", "/r", "/loader", "/c1", "/c2"};
  for (const auto& d : default_library_dirs()) want.push_back(d);
  EXPECT_EQ(dirs, want);
  EXPECT_EQ(default_library_dirs(),
            (std::vector<std::string>{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                      "/lib64", "/lib", "/usr/lib"}));
}

TEST(HostrootSearch, RunpathDisablesRpath) {
  ElfInfo o;
  o.rpath = {"/r"};
  o.runpath = {"${ORIGIN}/x", "/lib"};
  auto dirs = library_search_dirs(o, "/o", {"/loader"}, {"/usr/lib/x86_64-linux-gnu"});
  // "/lib" and the conf dir are not repeated where the defaults list them again.
  std::vector<std::string> want = {
      "/o/x", "/lib", "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/lib64", "/usr/lib"};
  EXPECT_EQ(dirs, want);
}

TEST(HostrootSearch, FindLibraryTakesTheFirstUsable) {
  std::vector<std::string> dirs = {"/a", "/b", "/c"};
  std::set<std::string> usable = {"/b/libx.so.1", "/c/libx.so.1"};
  auto pred = [&usable](const std::string& p) { return usable.count(p) > 0; };
  EXPECT_EQ(find_library("libx.so.1", dirs, pred), "/b/libx.so.1");
  usable.erase("/b/libx.so.1");  // e.g. a 32-bit file there: skipped, as ld.so does
  EXPECT_EQ(find_library("libx.so.1", dirs, pred), "/c/libx.so.1");
  EXPECT_EQ(find_library("liby.so", dirs, pred), "");
}

TEST(HostrootSearch, DynamicStringTokens) {
  EXPECT_EQ(expand_dst("$ORIGIN/../lib", "/opt/a/bin"), "/opt/a/bin/../lib");
  EXPECT_EQ(expand_dst("${ORIGIN}/x:", "/o"), "/o/x:");
  EXPECT_EQ(expand_dst("$ORIGIN", "/o"), "/o");
  EXPECT_EQ(expand_dst("/usr/$LIB/x", "/o"), "/usr/lib/x86_64-linux-gnu/x");
  EXPECT_EQ(expand_dst("/p/${PLATFORM}", "/o"), "/p/x86_64");
  EXPECT_EQ(expand_dst("$ORIGINAL/x", "/o"), "$ORIGINAL/x");  // not a token
  EXPECT_EQ(expand_dst("$", "/o"), "$");
}

TEST(HostrootSearch, ParseLdSoConf) {
  auto items = parse_ld_so_conf(
      "# comment\n"
      "include /etc/ld.so.conf.d/*.conf  other/*.conf\n"
      "\n"
      "  /usr/local/lib/  # trailing comment\n"
      "hwcap 0 nosegneg\n"
      "/opt/lib\t\n"
      "includex\n");
  ASSERT_EQ(items.size(), 5u);
  EXPECT_TRUE(items[0].include);
  EXPECT_EQ(items[0].value, "/etc/ld.so.conf.d/*.conf");
  EXPECT_TRUE(items[1].include);
  EXPECT_EQ(items[1].value, "other/*.conf");
  EXPECT_FALSE(items[2].include);
  EXPECT_EQ(items[2].value, "/usr/local/lib");
  EXPECT_EQ(items[3].value, "/opt/lib");
  EXPECT_EQ(items[4].value, "includex");  // a directory name, as ldconfig reads it
}

TEST_F(HostrootDisk, LdSoConfIncludesAreGlobbedSortedAndRelative) {
  fs::create_directories(path("d"));
  ASSERT_TRUE(write_file(path("main.conf"), "/first\ninclude d/*.conf\ninclude main.conf\n/last\n",
                         O_CREAT | O_TRUNC)
                  .ok());
  ASSERT_TRUE(write_file(path("d/b.conf"), "/b\n", O_CREAT | O_TRUNC).ok());
  ASSERT_TRUE(write_file(path("d/a.conf"), "/a1\n/a2\n", O_CREAT | O_TRUNC).ok());
  ASSERT_TRUE(write_file(path("d/skip.txt"), "/no\n", O_CREAT | O_TRUNC).ok());
  auto dirs = ld_so_conf_dirs(path("main.conf"));
  // The self-include recurses a bounded number of times; keep the first pass.
  ASSERT_GE(dirs.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(dirs.begin(), dirs.begin() + 4),
            (std::vector<std::string>{"/first", "/a1", "/a2", "/b"}));
  EXPECT_EQ(dirs.back(), "/last");
  EXPECT_TRUE(ld_so_conf_dirs(path("missing.conf")).empty());
}

// ---- Python -------------------------------------------------------------------------

TEST(HostrootPython, InterpreterNames) {
  EXPECT_TRUE(is_python_name("python3.11"));
  EXPECT_TRUE(is_python_name("python3.9"));
  EXPECT_TRUE(is_python_name("python10.12"));
  EXPECT_FALSE(is_python_name("python3"));
  EXPECT_FALSE(is_python_name("python3."));
  EXPECT_FALSE(is_python_name("python3.11-config"));
  EXPECT_FALSE(is_python_name("python3.11m"));
  EXPECT_FALSE(is_python_name("ipython3.11"));
  EXPECT_FALSE(is_python_name("python.11"));
}

TEST(HostrootPython, SkipList) {
  for (const char* p :
       {"test", "test/support/__init__.py", "idlelib", "idlelib/idle.py", "tkinter",
        "tkinter/__init__.py", "turtledemo", "ensurepip", "ensurepip/__init__.py", "lib2to3/tests",
        "lib2to3/tests/data/x.py", "dist-packages", "dist-packages/a/b.py", "site-packages",
        "config-3.11-x86_64-linux-gnu", "config-3.11-x86_64-linux-gnu/Makefile"})
    EXPECT_TRUE(python_stdlib_skipped(p)) << p;
  for (const char* p :
       {"os.py", "__pycache__", "__pycache__/os.cpython-311.pyc", "json",
        "json/__pycache__/decoder.cpython-311.pyc", "lib2to3", "lib2to3/fixes", "lib2to3/tests.py",
        "testing", "test.py", "configparser.py", "config-x", "lib-dynload",
        "lib-dynload/_hashlib.cpython-311-x86_64-linux-gnu.so", "unittest/test", "encodings/test"})
    EXPECT_FALSE(python_stdlib_skipped(p)) << p;
}

// ---- plans ----------------------------------------------------------------------------

TEST(HostrootPlan, CheckPlanWantsDirectoryParents) {
  RootfsPlan p;
  RootfsEntry dir, link, file;
  link.kind = RootfsEntry::Kind::symlink;
  link.target = "usr/lib";
  file.kind = RootfsEntry::Kind::file;
  file.content = "x";
  p["/usr"] = dir;
  p["/usr/lib"] = dir;
  p["/usr/lib/f"] = file;
  p["/lib"] = link;
  EXPECT_TRUE(check_plan(p).ok());
  p["/lib/f"] = file;  // through a symlink
  auto st = check_plan(p);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().what(), "rootfs plan: the parent of /lib/f is not a directory of the plan");
  p.erase("/lib/f");
  p["/etc/passwd"] = file;  // no /etc
  EXPECT_FALSE(check_plan(p).ok());
  p.erase("/etc/passwd");
  for (const char* bad : {"/usr/../x", "/usr/./x", "/usr//x", "/usr/", "usr", "/"}) {
    RootfsPlan q = p;
    q[bad] = file;
    EXPECT_FALSE(check_plan(q).ok()) << bad;
  }
}

TEST(HostrootPlan, KeyFollowsSizeMtimeInode) {
  RootfsPlan p;
  RootfsEntry d, f;
  f.kind = RootfsEntry::Kind::file;
  f.source = "/usr/bin/x";
  f.size = 10;
  f.mtime_ns = 1000;
  f.ino = 5;
  p["/usr"] = d;
  p["/usr/x"] = f;
  auto k1 = plan_key(p);
  ASSERT_TRUE(k1.ok());
  EXPECT_EQ(k1->size(), 64u);
  EXPECT_EQ(k1->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(*plan_key(p), *k1);  // deterministic
  for (int field = 0; field < 3; field++) {
    RootfsPlan q = p;
    auto& e = q["/usr/x"];
    if (field == 0) e.size++;
    if (field == 1) e.mtime_ns++;
    if (field == 2) e.ino++;
    EXPECT_NE(*plan_key(q), *k1) << field;
  }
  RootfsPlan q = p;
  q["/usr/y"] = f;  // one more file
  EXPECT_NE(*plan_key(q), *k1);
}

// ---- on disk, without root ----------------------------------------------------------------

TEST_F(HostrootDisk, RootfsFromTrue) {
  ::setenv("PATH", "/usr/bin:/bin", 1);
  HostRootfsOptions o;
  o.binaries = {"true"};
  o.output = path("r");
  auto r = rootfs_from_host(o);
  ASSERT_TRUE(r.ok()) << r.error().what();
  std::string root = path("r");
  EXPECT_TRUE(fs::is_regular_file(root + "/usr/bin/true"));
  EXPECT_TRUE(fs::is_regular_file(root + "/usr/lib/x86_64-linux-gnu/libc.so.6"));
  // The interpreter through /lib64 -> usr/lib64 and its absolute symlink.
  EXPECT_EQ(fs::read_symlink(root + "/lib64").string(), "usr/lib64");
  EXPECT_EQ(fs::read_symlink(root + "/usr/lib64/ld-linux-x86-64.so.2").string(),
            "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
  EXPECT_EQ(fs::read_symlink(root + "/bin").string(), "usr/bin");
  EXPECT_TRUE(fs::is_directory(root + "/usr/sbin"));  // /sbin resolves too
  EXPECT_FALSE(fs::exists(fs::symlink_status(root + "/usr/bin/sh")));
  for (const char* d : {"proc", "dev", "sys", "tmp", "workdir", "etc"}) {
    struct stat st;
    ASSERT_EQ(::lstat((root + "/" + d).c_str(), &st), 0) << d;
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0755u) << d;
  }
  EXPECT_EQ(*read_file(root + "/etc/passwd"),
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
  EXPECT_EQ(*read_file(root + "/etc/group"), "root:x:0:\nnogroup:x:65534:\n");
  EXPECT_EQ(*read_file(root + "/etc/resolv.conf"), "");
  EXPECT_NE(read_file(root + "/etc/hosts")->find("127.0.0.1\tlocalhost\n"), std::string::npos);
  if (fs::exists("/etc/ld.so.cache")) {
    EXPECT_EQ(fs::file_size(root + "/etc/ld.so.cache"), fs::file_size("/etc/ld.so.cache"));
  }
  // What --verbose prints.
  std::set<std::string> lines(r->begin(), r->end());
  EXPECT_TRUE(lines.count("file /usr/bin/true"));
  EXPECT_TRUE(lines.count("link /lib64 -> usr/lib64"));
  EXPECT_TRUE(lines.count("dir /workdir"));
  // The copy keeps the mtime and mode (a hard link is the same inode).
  struct stat a, b;
  ASSERT_EQ(::stat("/usr/bin/true", &a), 0);
  ASSERT_EQ(::stat((root + "/usr/bin/true").c_str(), &b), 0);
  EXPECT_EQ(a.st_mtim.tv_sec, b.st_mtim.tv_sec);
  EXPECT_EQ(a.st_mtim.tv_nsec, b.st_mtim.tv_nsec);
  EXPECT_EQ(a.st_mode, b.st_mode);
  EXPECT_EQ(listing(), std::set<std::string>{"r"});  // no temp dir beside it
}

TEST_F(HostrootDisk, CopyFlagNeverLinks) {
  HostRootfsOptions o;
  o.binaries = {"/bin/true"};
  o.output = path("r");
  o.copy = true;
  ASSERT_TRUE(rootfs_from_host(o).ok());
  struct stat a, b;
  ASSERT_EQ(::stat("/usr/bin/true", &a), 0);
  ASSERT_EQ(::stat(path("r/usr/bin/true").c_str(), &b), 0);
  EXPECT_NE(a.st_ino, b.st_ino);
  EXPECT_EQ(a.st_size, b.st_size);
  EXPECT_EQ(a.st_mtim.tv_nsec, b.st_mtim.tv_nsec);
  EXPECT_EQ(*read_file("/usr/bin/true"), *read_file(path("r/usr/bin/true")));
}

TEST_F(HostrootDisk, OutputDirRules) {
  HostRootfsOptions o;
  o.binaries = {"/bin/true"};
  o.output = path("r");
  fs::create_directories(path("r"));  // empty: accepted
  ASSERT_TRUE(rootfs_from_host(o).ok());
  auto again = rootfs_from_host(o);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().what(),
            "rootfs: " + path("r") + " exists and is not empty (--force replaces it)");
  ASSERT_TRUE(write_file(path("r/marker"), "x", O_CREAT).ok());
  o.force = true;
  ASSERT_TRUE(rootfs_from_host(o).ok());
  EXPECT_FALSE(fs::exists(path("r/marker")));
  EXPECT_TRUE(fs::exists(path("r/usr/bin/true")));
  EXPECT_EQ(listing(), std::set<std::string>{"r"});
  // A file, a symlink, a missing parent.
  ASSERT_TRUE(write_file(path("f"), "x", O_CREAT).ok());
  o.output = path("f");
  EXPECT_NE(rootfs_from_host(o).error().what().find("exists and is not a directory"),
            std::string::npos);
  fs::create_directory_symlink(path("r"), path("l"));
  o.output = path("l");
  EXPECT_NE(rootfs_from_host(o).error().what().find("is a symlink"), std::string::npos);
  o.output = path("no/such/r");
  EXPECT_NE(rootfs_from_host(o).error().what().find("parent directory"), std::string::npos);
  // Never over /, and --force never replaces a directory the rootfs is built
  // from (tried on a directory of our own, never on /usr).
  o.output = "/";
  o.force = false;
  EXPECT_EQ(rootfs_from_host(o).error().what(), "rootfs: refusing to write a rootfs over /");
  fs::create_directories(path("src/bin"));
  fs::copy_file("/usr/bin/true", path("src/bin/mytrue"));
  o.binaries = {path("src/bin/mytrue")};
  o.output = path("src");
  o.force = true;
  auto st = rootfs_from_host(o);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().what(), "rootfs: refusing to replace " + path("src") + ": it holds " +
                                   path("src/bin/mytrue") + ", which the rootfs is made from");
  EXPECT_TRUE(fs::is_regular_file(path("src/bin/mytrue")));
}

TEST_F(HostrootDisk, FailuresLeaveNothing) {
  ::setenv("PATH", "/usr/bin:/bin", 1);
  HostRootfsOptions o;
  o.output = path("r");
  o.binaries = {"true", "comet-no-such-binary"};
  auto r = rootfs_from_host(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().what(), "rootfs: comet-no-such-binary: not found in PATH");
  ASSERT_TRUE(write_file(path("script"), "#!/bin/sh\necho hi\n", O_CREAT).ok());
  ASSERT_TRUE(write_file(path("text"), "hello\n", O_CREAT).ok());
  o.binaries = {path("script")};
  EXPECT_EQ(
      rootfs_from_host(o).error().what(),
      "rootfs: " + path("script") + ": a script, not an ELF file (add its interpreter instead)");
  o.binaries = {path("text")};
  EXPECT_EQ(rootfs_from_host(o).error().what(), "rootfs: " + path("text") + ": not an ELF file");
  o.binaries = {path("missing")};
  EXPECT_EQ(rootfs_from_host(o).error().what(),
            "rootfs: " + path("missing") + ": ENOENT (No such file or directory)");
  o.binaries = {"true"};
  o.trees = {path("nope")};
  EXPECT_NE(rootfs_from_host(o).error().what().find("rootfs: --tree " + path("nope")),
            std::string::npos);
  EXPECT_EQ(listing(), (std::set<std::string>{"script", "text"}));
}

TEST_F(HostrootDisk, MissingLibraryNamesItAndWhoNeedsIt) {
  // A copy of /bin/true whose DT_NEEDED says libcometmissing.so.6 (same length
  // as libc.so.6 would not fit; patch the string in place instead).
  auto b = file_bytes("/bin/true");
  std::string s(b.begin(), b.end());
  auto at = s.find(std::string("libc.so.6\0", 10));
  ASSERT_NE(at, std::string::npos);
  std::memcpy(b.data() + at, "libq.so.6", 9);
  std::string bin = path("needsq");
  {
    std::ofstream f(bin, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  ::chmod(bin.c_str(), 0755);
  HostRootfsOptions o;
  o.binaries = {bin};
  o.output = path("r");
  auto r = rootfs_from_host(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().what(), "rootfs: libq.so.6, needed by " + bin +
                                  ", not found (searched its RPATH/RUNPATH, /etc/ld.so.conf and "
                                  "the default library directories)");
  EXPECT_EQ(listing(), std::set<std::string>{"needsq"});
}

TEST_F(HostrootDisk, TreeIsAddedVerbatim) {
  fs::create_directories(path("t/sub/deeper"));
  ASSERT_TRUE(write_file(path("t/sub/a.txt"), "A", O_CREAT).ok());
  ::chmod(path("t/sub/a.txt").c_str(), 0640);
  ::chmod(path("t/sub/deeper").c_str(), 0700);
  fs::create_symlink("sub/a.txt", path("t/rel"));
  fs::create_symlink("/nonexistent/comet", path("t/dangling"));
  HostRootfsOptions o;
  o.binaries = {"/bin/true"};
  o.trees = {path("t")};
  o.output = path("r");
  auto r = rootfs_from_host(o);
  ASSERT_TRUE(r.ok()) << r.error().what();
  std::string in = path("r") + path("t");
  EXPECT_EQ(*read_file(in + "/sub/a.txt"), "A");
  EXPECT_EQ(fs::status(in + "/sub/a.txt").permissions(), fs::perms(0640));
  EXPECT_EQ(fs::status(in + "/sub/deeper").permissions(), fs::perms(0700));
  EXPECT_EQ(fs::read_symlink(in + "/rel").string(), "sub/a.txt");
  EXPECT_EQ(fs::read_symlink(in + "/dangling").string(), "/nonexistent/comet");
}

TEST_F(HostrootDisk, DefaultRootfsIsCachedAndFollowsTheHostFiles) {
  // An interpreter of our own, so that the test can "upgrade" it.
  std::string interp = path("bin/mytrue");
  fs::create_directories(path("bin"));
  fs::copy_file("/usr/bin/true", interp);
  ::chmod(interp.c_str(), 0755);
  std::string cache = path("cache");
  auto d1 = default_rootfs(interp, cache);
  ASSERT_TRUE(d1.ok()) << d1.error().what();
  EXPECT_EQ(fs::path(*d1).parent_path().string(), cache);
  EXPECT_EQ(fs::path(*d1).filename().string().size(), 64u);
  EXPECT_TRUE(fs::is_regular_file(*d1 + interp));
  EXPECT_FALSE(fs::exists(*d1 + "/usr/bin/true"));  // only what was asked for
  EXPECT_FALSE(fs::exists(fs::symlink_status(*d1 + "/bin/busybox")));
  auto d2 = default_rootfs(interp, cache);
  ASSERT_TRUE(d2.ok());
  EXPECT_EQ(*d2, *d1);
  // A new mtime (a package upgrade): a new key and a new rootfs.
  struct timespec ts[2] = {{1000000, 0}, {1000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, interp.c_str(), ts, 0), 0);
  auto d3 = default_rootfs(interp, cache);
  ASSERT_TRUE(d3.ok());
  EXPECT_NE(*d3, *d1);
  auto miss = default_rootfs("/usr/bin/comet-no-such-interpreter", cache);
  ASSERT_FALSE(miss.ok());
  EXPECT_EQ(miss.error().what(),
            "default rootfs: the interpreter /usr/bin/comet-no-such-interpreter does not exist "
            "on the host");
  EXPECT_FALSE(default_rootfs("python3", cache).ok());
}

TEST_F(HostrootDisk, DefaultRootfsConcurrentCallers) {
  std::string cache = path("cache");
  std::vector<std::string> got(6);
  std::vector<std::thread> ts;
  for (size_t i = 0; i < got.size(); i++)
    ts.emplace_back([&, i] {
      auto r = default_rootfs("/usr/bin/true", cache);
      got[i] = r.ok() ? *r : "error: " + r.error().what();
    });
  for (auto& t : ts) t.join();
  for (const auto& g : got) EXPECT_EQ(g, got[0]);
  ASSERT_EQ(got[0].rfind(cache, 0), 0u) << got[0];
  std::set<std::string> entries;
  for (auto& e : fs::directory_iterator(cache)) entries.insert(e.path().filename().string());
  EXPECT_EQ(entries,
            (std::set<std::string>{".lock", "index", fs::path(got[0]).filename().string()}));
}

TEST_F(HostrootDisk, ManifestHoldsUntilTheHostChanges) {
  fs::create_directories(path("t/sub"));
  ASSERT_TRUE(write_file(path("t/sub/a"), "A", O_CREAT).ok());
  HostRootfsOptions o;
  o.binaries = {"/bin/true"};
  o.trees = {path("t")};
  auto remake = [&o]() {
    HostFacts facts;
    auto plan = plan_host_rootfs(o, &facts);
    EXPECT_TRUE(plan.ok());
    // the library search looked at the ld.so.conf directories before the hit
    EXPECT_TRUE(facts.count("/etc/ld.so.conf") || !fs::exists("/etc/ld.so.conf"));
    return plan_manifest(*plan, facts);
  };
  std::string full = remake();
  ASSERT_NE(full.find(" /usr/bin/true\n"), std::string::npos);
  ASSERT_NE(full.find(" " + path("t/sub/a") + "\n"), std::string::npos);
  // Only the lines below our dir: /tmp itself is in the manifest, and tests
  // running beside this one change it.
  auto ours = [this](const std::string& m) {
    std::string out;
    for (const auto& line : split(m, '\n'))
      if (line.find(" " + dir_ + "/") != std::string::npos) out += line + "\n";
    return out;
  };
  std::string m = ours(full);
  ASSERT_NE(m.find(" " + path("t/sub") + "\n"), std::string::npos);
  EXPECT_TRUE(manifest_holds(m));
  ASSERT_TRUE(write_file(path("t/sub/b"), "B", O_CREAT).ok());  // a new file in a tree dir
  EXPECT_FALSE(manifest_holds(m));
  m = ours(remake());
  EXPECT_TRUE(manifest_holds(m));
  ASSERT_TRUE(write_file(path("t/sub/a"), "AA", O_TRUNC).ok());  // new content
  EXPECT_FALSE(manifest_holds(m));
  m = ours(remake());
  EXPECT_TRUE(manifest_holds(m));
  fs::remove(path("t/sub/b"));
  EXPECT_FALSE(manifest_holds(m));
  // An absent path (a library directory searched before the hit) appearing.
  std::string absent = "- 0 0 0 " + path("later") + "\n";
  EXPECT_TRUE(manifest_holds(absent));
  fs::create_directory(path("later"));
  EXPECT_FALSE(manifest_holds(absent));
  EXPECT_FALSE(manifest_holds(""));
  EXPECT_FALSE(manifest_holds("garbage\n"));
  EXPECT_FALSE(manifest_holds("f 1 2 3 /usr/bin/true"));  // no final newline
}

// The index lets a warm call skip planning and the lock; a changed host file
// sends it back to the locked path, which builds a new rootfs.
TEST_F(HostrootDisk, DefaultRootfsWarmPathSkipsTheLock) {
  // The warm check compares every directory on the interpreter's path too, and
  // tests running beside this one change /tmp's: use a host binary for it.
  std::string cache = path("cache");
  auto h1 = default_rootfs("/usr/bin/true", cache);
  ASSERT_TRUE(h1.ok()) << h1.error().what();
  std::string interp = path("bin/mytrue");
  fs::create_directories(path("bin"));
  fs::copy_file("/usr/bin/true", interp);
  ::chmod(interp.c_str(), 0755);
  auto d1 = default_rootfs(interp, cache);
  ASSERT_TRUE(d1.ok()) << d1.error().what();
  // Declared before the lock so that they are destroyed after it is released:
  // a call stuck on the lock must not hang the test.
  std::future<Result<std::string>> warm, cold;
  struct Lock {
    int fd = -1;
    ~Lock() { release(); }
    void release() {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  } lock;
  lock.fd = ::open((cache + "/.lock").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(lock.fd, 0);
  ASSERT_EQ(::flock(lock.fd, LOCK_EX), 0);  // held by "another builder"
  warm = std::async(std::launch::async, [&] { return default_rootfs("/usr/bin/true", cache); });
  ASSERT_EQ(warm.wait_for(std::chrono::seconds(5)), std::future_status::ready)
      << "the warm call waited for the lock";
  auto h2 = warm.get();
  ASSERT_TRUE(h2.ok());
  EXPECT_EQ(*h2, *h1);
  struct timespec ts[2] = {{2000000, 0}, {2000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, interp.c_str(), ts, 0), 0);
  cold = std::async(std::launch::async, [&] { return default_rootfs(interp, cache); });
  EXPECT_EQ(cold.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  lock.release();  // the other builder is done
  ASSERT_EQ(cold.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  auto d3 = cold.get();
  ASSERT_TRUE(d3.ok()) << d3.error().what();
  EXPECT_NE(*d3, *d1);
  auto d4 = default_rootfs(interp, cache);  // and the index now names the new one
  ASSERT_TRUE(d4.ok());
  EXPECT_EQ(*d4, *d3);
}

// The figures the brief asks for: building the python rootfs into an empty
// cache, then finding it there. The warm call must not rebuild.
TEST_F(HostrootDisk, DefaultRootfsPythonColdThenWarm) {
  if (!fs::exists("/usr/bin/python3.11")) GTEST_SKIP() << "python3.11 is not installed";
  std::string cache = path("cache");
  auto ms_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  };
  auto t0 = std::chrono::steady_clock::now();
  auto cold = default_rootfs("/usr/bin/python3", cache);
  double cold_ms = ms_since(t0);
  ASSERT_TRUE(cold.ok()) << cold.error().what();
  EXPECT_TRUE(fs::is_regular_file(*cold + "/usr/lib/python3.11/json/__init__.py"));
  struct stat before, after;
  ASSERT_EQ(::stat(cold->c_str(), &before), 0);
  std::vector<double> warm_ms;
  for (int i = 0; i < 5; i++) {
    auto t1 = std::chrono::steady_clock::now();
    auto warm = default_rootfs("/usr/bin/python3", cache);
    warm_ms.push_back(ms_since(t1));
    ASSERT_TRUE(warm.ok());
    EXPECT_EQ(*warm, *cold);
  }
  ASSERT_EQ(::stat(cold->c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);  // not rebuilt
  std::sort(warm_ms.begin(), warm_ms.end());
  std::printf("[ figures  ] default_rootfs(/usr/bin/python3): cold %.1f ms, warm median %.1f ms\n",
              cold_ms, warm_ms[2]);
  RecordProperty("cold_ms", std::to_string(cold_ms));
  RecordProperty("warm_ms", std::to_string(warm_ms[2]));
}
