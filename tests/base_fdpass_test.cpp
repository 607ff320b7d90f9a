// base/: send_fds and recv_fds (fdpass.hpp), over a socketpair.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "comet/base/fd.hpp"
#include "comet/base/fdpass.hpp"

namespace comet {
namespace {

struct Pair {
  UniqueFd a, b;
  Pair() {
    int sp[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
    a.reset(sp[0]);
    b.reset(sp[1]);
  }
};

bool same_file(int x, int y) {
  struct stat sx, sy;
  return ::fstat(x, &sx) == 0 && ::fstat(y, &sy) == 0 && sx.st_dev == sy.st_dev &&
         sx.st_ino == sy.st_ino;
}

TEST(FdPass, DataAndTwoFdsArriveInOrderCloseOnExec) {
  Pair p;
  UniqueFd one(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  UniqueFd two(::open("/", O_PATH | O_CLOEXEC));
  const int fds[2] = {one.get(), two.get()};
  ASSERT_EQ(send_fds(p.a.get(), "hello", 5, fds, 2), 5);
  char buf[16] = {};
  UniqueFd got[2];
  std::size_t n = 0;
  ASSERT_EQ(recv_fds(p.b.get(), buf, sizeof buf, got, 2, &n), 5);
  EXPECT_EQ(std::string(buf, 5), "hello");
  ASSERT_EQ(n, 2u);
  EXPECT_TRUE(same_file(got[0].get(), one.get()));
  EXPECT_TRUE(same_file(got[1].get(), two.get()));
  EXPECT_EQ(::fcntl(got[0].get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
}

TEST(FdPass, NoFdsIsPlainData) {
  Pair p;
  ASSERT_EQ(send_fds(p.a.get(), "x", 1, nullptr, 0), 1);
  char c = 0;
  UniqueFd got;
  std::size_t n = 7;
  ASSERT_EQ(recv_fds(p.b.get(), &c, 1, &got, 1, &n), 1);
  EXPECT_EQ(c, 'x');
  EXPECT_EQ(n, 0u);
  EXPECT_FALSE(got.valid());
}

TEST(FdPass, FdsPastTheRoomAreNotKept) {
  Pair p;
  UniqueFd one(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  UniqueFd two(::open("/", O_PATH | O_CLOEXEC));
  const int fds[2] = {one.get(), two.get()};
  ASSERT_EQ(send_fds(p.a.get(), "y", 1, fds, 2), 1);
  char c = 0;
  UniqueFd got;
  std::size_t n = 0;
  ASSERT_EQ(recv_fds(p.b.get(), &c, 1, &got, 1, &n), 1);
  EXPECT_EQ(n, 1u);
  EXPECT_TRUE(same_file(got.get(), one.get()));
}

TEST(FdPass, TooManyFdsIsEinval) {
  Pair p;
  int fds[kMaxPassFds + 1];
  for (auto& f : fds) f = 0;
  errno = 0;
  EXPECT_EQ(send_fds(p.a.get(), "z", 1, fds, kMaxPassFds + 1), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST(FdPass, AHungUpPeerIsAnErrorNotASignal) {
  Pair p;
  p.b.reset();
  const int fd = 0;
  EXPECT_EQ(send_fds(p.a.get(), "z", 1, &fd, 1), -1);
  EXPECT_EQ(errno, EPIPE);
}

}  // namespace
}  // namespace comet
