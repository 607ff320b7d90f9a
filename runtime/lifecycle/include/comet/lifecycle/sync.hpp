// The parent/child sync protocol over a SOCK_SEQPACKET socketpair. Each
// message is one fixed-size Msg. The diagram is the order both sides follow:
//
//   parent (create)                          child (stage 1, maybe init)
//   ---------------                          ---------------------------
//   clone() ------------------------------->  [joins: setns(path...), unshare(new)]
//                                   <------  kNeedMaps          (new user ns, slow path)
//   write uid_map/gid_map
//   kMapsDone ----------------------------->
//   join cgroups, oom_score_adj
//   kGo ----------------------------------->  unshare(cgroup), [fork init: slow path]
//                                   <------  kInitPid{pid}      (slow path; stage 1 exits)
//                                            mounts, devices, console
//                                   <------  kMountsDone
//   prestart + createRuntime hooks
//   kHooksDone ---------------------------->  createContainer hooks, masks,
//                                            pivot_root, sysctl, user, caps
//                                   <------  kReady  (or kError{errno,text} at any step)
//   write state.json, pid file; exit         block on exec.fifo until `start`
//
// A closed socket on either side means the peer died: the child exits, the
// parent kills the child and fails create.
#pragma once

#include <cstdint>
#include <string>

#include "comet/base/result.hpp"

namespace comet::runtime {

enum class MsgType : uint32_t {
  kNeedMaps = 1,
  kMapsDone,
  kGo,
  kInitPid,
  kMountsDone,
  kHooksDone,
  kReady,
  kError,
};

struct Msg {
  MsgType type;
  int32_t err;    // kError: errno (0 for non-syscall failures)
  int32_t value;  // kInitPid: the pid
  char text[2048];
};

const char* msg_name(MsgType t);

// Both return 0 or an errno; EPIPE/ECONNRESET/0-length reads map to EPIPE.
// recv_msg reads past a peer's ECONNRESET to the message it sent before it
// exited (a kError): af_unix reports the reset first when the peer left a
// message of ours unread. flags: recv(2)'s (MSG_DONTWAIT: EAGAIN when none).
int send_msg(int fd, MsgType t, int32_t err = 0, int32_t value = 0, const char* text = "") noexcept;
int recv_msg(int fd, Msg* out, int flags = 0) noexcept;

// Parent side: receive and check the type. kError from the child becomes
// an Error carrying the child's errno and text.
Result<Msg> expect_msg(int fd, MsgType want);

}  // namespace comet::runtime
