// base/: errno names, the random ids, the openat2 wrapper,
// spawn_detached() and the COMET_* switches.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#include "comet/base/fd.hpp"
#include "comet/base/openat2.hpp"
#include "comet/base/random.hpp"
#include "comet/base/result.hpp"
#include "comet/base/spawn.hpp"
#include "comet/base/switches.hpp"

namespace comet {
namespace {

TEST(BaseRandom, HexHasTheAskedLengthAndDiffers) {
  std::string a = random_hex(6), b = random_hex(6);
  EXPECT_EQ(a.size(), 12u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
  EXPECT_EQ(random_hex(0), "");
}

TEST(BaseRandom, UuidIsVersion4) {
  std::string u = random_uuid();
  ASSERT_EQ(u.size(), 36u);
  EXPECT_EQ(u[8], '-');
  EXPECT_EQ(u[13], '-');
  EXPECT_EQ(u[14], '4');
  EXPECT_EQ(u[18], '-');
  EXPECT_NE(std::string("89ab").find(u[19]), std::string::npos);
  EXPECT_EQ(u[23], '-');
}

TEST(BaseErrno, NamesAndUnknown) {
  EXPECT_EQ(errno_name(EPERM), "EPERM");
  EXPECT_EQ(errno_name(ENOTDIR), "ENOTDIR");
  EXPECT_EQ(errno_name(4000), "E4000");
  EXPECT_EQ(Error::sys(ENOENT, "open /x").what(), "open /x: ENOENT (No such file or directory)");
}

TEST(BaseOpenat2, StaysInRoot) {
  UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(root);
  struct open_how how = {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT;
  UniqueFd etc(sys_openat2(root.get(), "/etc", how, 128));
  ASSERT_TRUE(etc) << errno_name(errno);
  how.resolve = RESOLVE_BENEATH;
  errno = 0;
  UniqueFd up(sys_openat2(etc.get(), "../etc", how));
  EXPECT_FALSE(up);
  EXPECT_EQ(errno, EXDEV);
}

TEST(BaseSpawn, HelperRunsDetached) {
  ASSERT_TRUE(single_threaded().ok());
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  UniqueFd rd(p[0]), wr(p[1]);
  auto pid = spawn_detached("the test helper", [&]() -> int {
    // Its own session, and not this process's child.
    char line[64];
    int n = std::snprintf(line, sizeof line, "%d %d %d\n", ::getpid(), ::getsid(0), ::getppid());
    (void)!::write(wr.get(), line, static_cast<std::size_t>(n));
    return 0;
  });
  ASSERT_TRUE(pid.ok()) << pid.error().what();
  wr.reset();
  std::string got;
  char buf[64];
  ssize_t n;
  while ((n = ::read(rd.get(), buf, sizeof buf)) > 0) got.append(buf, static_cast<std::size_t>(n));
  int self = 0, sid = 0, parent = 0;
  ASSERT_EQ(std::sscanf(got.c_str(), "%d %d %d", &self, &sid, &parent), 3) << got;
  EXPECT_EQ(self, *pid);
  EXPECT_NE(sid, ::getsid(0));
  EXPECT_NE(parent, ::getpid());
}

TEST(BaseSpawn, RefusesACallerWithThreads) {
  std::atomic<bool> stop{false};
  std::thread t([&] {
    while (!stop) ::usleep(1000);
  });
  auto r = single_threaded();
  auto pid = spawn_detached("the test helper", [] { return 0; });
  stop = true;
  t.join();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.error().err(), EDEADLK);
}

TEST(BaseSwitches, ReadTheEnvironment) {
  ::unsetenv("COMET_FS_EVENTS");
  EXPECT_FALSE(switches::fs_events_off());
  ::setenv("COMET_FS_EVENTS", "off", 1);
  EXPECT_TRUE(switches::fs_events_off());
  ::setenv("COMET_FS_EVENTS", "on", 1);
  EXPECT_FALSE(switches::fs_events_off());
  ::unsetenv("COMET_FS_EVENTS");
  ::setenv("COMET_FLAGS_DIR", "", 1);
  EXPECT_EQ(switches::flags_dir(), "");
  ::setenv("COMET_FLAGS_DIR", "/tmp/flags", 1);
  EXPECT_EQ(switches::flags_dir(), "/tmp/flags");
  ::unsetenv("COMET_FLAGS_DIR");
}

TEST(BaseSwitches, AllowMissingNamesWholeLayers) {
  ::unsetenv("COMET_ALLOW_MISSING");
  EXPECT_FALSE(switches::allow_missing("landlock"));
  ::setenv("COMET_ALLOW_MISSING", "landlock", 1);
  EXPECT_TRUE(switches::allow_missing("landlock"));
  EXPECT_FALSE(switches::allow_missing("seccomp-listener"));
  ::setenv("COMET_ALLOW_MISSING", "seccomp-listener,landlock", 1);
  EXPECT_TRUE(switches::allow_missing("landlock"));
  EXPECT_TRUE(switches::allow_missing("seccomp-listener"));
  // a word, not a prefix or a substring
  ::setenv("COMET_ALLOW_MISSING", "landlockx,seccomp", 1);
  EXPECT_FALSE(switches::allow_missing("landlock"));
  EXPECT_FALSE(switches::allow_missing("seccomp-listener"));
  ::setenv("COMET_ALLOW_MISSING", "", 1);
  EXPECT_FALSE(switches::allow_missing("landlock"));
  ::unsetenv("COMET_ALLOW_MISSING");
}

}  // namespace
}  // namespace comet
