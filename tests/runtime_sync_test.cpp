// The parent/child sync protocol (sync.hpp) over a real SOCK_SEQPACKET pair.
#include "comet/lifecycle/sync.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace cr = comet::runtime;

namespace {
struct Pair {
  int fd[2] = {-1, -1};
  Pair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fd), 0); }
  ~Pair() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
};
}  // namespace

TEST(Sync, MessageRoundTrip) {
  Pair p;
  ASSERT_EQ(cr::send_msg(p.fd[1], cr::MsgType::kInitPid, 0, 42), 0);
  auto m = cr::expect_msg(p.fd[0], cr::MsgType::kInitPid);
  ASSERT_TRUE(m.ok()) << m.error().what();
  EXPECT_EQ(m->value, 42);
}

TEST(Sync, TheChildsErrorIsItsOwn) {
  Pair p;
  ASSERT_EQ(cr::send_msg(p.fd[1], cr::MsgType::kError, EACCES, 0, "pivot_root: denied"), 0);
  auto m = cr::expect_msg(p.fd[0], cr::MsgType::kReady);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().err(), EACCES);
  EXPECT_NE(std::string(m.error().what()).find("pivot_root: denied"), std::string::npos)
      << m.error().what();
}

// The child failed and exited with our kHooksDone unread: af_unix reports
// ECONNRESET to us ahead of its kError. The error we report is the child's,
// not "container init exited before ready".
TEST(Sync, TheChildsErrorBehindAConnectionReset) {
  Pair p;
  ASSERT_EQ(cr::send_msg(p.fd[0], cr::MsgType::kHooksDone), 0);  // never read
  ASSERT_EQ(cr::send_msg(p.fd[1], cr::MsgType::kError, ENOENT, 0, "exec: no such file"), 0);
  ::close(p.fd[1]);
  p.fd[1] = -1;
  auto m = cr::expect_msg(p.fd[0], cr::MsgType::kReady);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().err(), ENOENT) << m.error().what();
  EXPECT_NE(std::string(m.error().what()).find("exec: no such file"), std::string::npos)
      << m.error().what();
  // and after it, the end: the init exited
  cr::Msg next;
  EXPECT_EQ(cr::recv_msg(p.fd[0], &next), EPIPE);
}

TEST(Sync, APeerGoneWithNothingSaidIsEpipe) {
  Pair p;
  ASSERT_EQ(cr::send_msg(p.fd[0], cr::MsgType::kGo), 0);  // never read
  ::close(p.fd[1]);
  p.fd[1] = -1;
  cr::Msg m;
  EXPECT_EQ(cr::recv_msg(p.fd[0], &m), EPIPE);
  auto e = cr::expect_msg(p.fd[0], cr::MsgType::kReady);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(std::string(e.error().what()).find("container init exited before"), std::string::npos)
      << e.error().what();
}

// create's child_failure(): a non-blocking look for the reason the child
// queued before it died, also behind a reset; nothing queued is EAGAIN.
TEST(Sync, NonBlockingReadOfTheChildsReason) {
  Pair p;
  cr::Msg m;
  EXPECT_EQ(cr::recv_msg(p.fd[0], &m, MSG_DONTWAIT), EAGAIN);
  ASSERT_EQ(cr::send_msg(p.fd[0], cr::MsgType::kGo), 0);  // never read
  ASSERT_EQ(cr::send_msg(p.fd[1], cr::MsgType::kError, EPERM, 0, "setns: denied"), 0);
  ::close(p.fd[1]);
  p.fd[1] = -1;
  ASSERT_EQ(cr::recv_msg(p.fd[0], &m, MSG_DONTWAIT), 0);
  EXPECT_EQ(m.type, cr::MsgType::kError);
  EXPECT_EQ(m.err, EPERM);
  EXPECT_STREQ(m.text, "setns: denied");
}
