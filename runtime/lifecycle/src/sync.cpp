#include "comet/lifecycle/sync.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace comet::runtime {

const char* msg_name(MsgType t) {
  switch (t) {
    case MsgType::kNeedMaps:
      return "need-maps";
    case MsgType::kMapsDone:
      return "maps-done";
    case MsgType::kGo:
      return "go";
    case MsgType::kInitPid:
      return "init-pid";
    case MsgType::kMountsDone:
      return "mounts-done";
    case MsgType::kHooksDone:
      return "hooks-done";
    case MsgType::kReady:
      return "ready";
    case MsgType::kError:
      return "error";
  }
  return "?";
}

int send_msg(int fd, MsgType t, int32_t err, int32_t value, const char* text) noexcept {
  Msg m;
  std::memset(&m, 0, sizeof m);
  m.type = t;
  m.err = err;
  m.value = value;
  std::strncpy(m.text, text, sizeof m.text - 1);
  for (;;) {
    ssize_t n = ::send(fd, &m, sizeof m, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == ECONNRESET ? EPIPE : errno;
    return 0;
  }
}

int recv_msg(int fd, Msg* out, int flags) noexcept {
  bool reset_seen = false;
  for (;;) {
    ssize_t n = ::recv(fd, out, sizeof *out, flags);
    if (n < 0 && errno == EINTR) continue;
    // A peer that exits with a message of ours unread leaves ECONNRESET
    // ahead of what it sent last (its kError): reported once, then cleared.
    if (n < 0 && errno == ECONNRESET && !reset_seen) {
      reset_seen = true;
      continue;
    }
    if (n < 0) return errno == ECONNRESET ? EPIPE : errno;
    if (n != static_cast<ssize_t>(sizeof *out)) return EPIPE;
    out->text[sizeof out->text - 1] = 0;
    return 0;
  }
}

Result<Msg> expect_msg(int fd, MsgType want) {
  Msg m;
  int r = recv_msg(fd, &m);
  if (r == EPIPE) return Error::msg(std::string("container init exited before ") + msg_name(want));
  if (r) return Error::sys(r, "read sync socket");
  if (m.type == MsgType::kError) return Error(m.err, m.text);
  if (m.type != want)
    return Error::msg(std::string("sync: expected ") + msg_name(want) + ", got " +
                      msg_name(m.type));
  return m;
}

}  // namespace comet::runtime
