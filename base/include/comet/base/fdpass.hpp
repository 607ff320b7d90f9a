// Passing fds over a unix socket (SCM_RIGHTS, unix(7)): one message of
// data with up to kMaxPassFds fds beside it. The one pair of the project;
// both are noexcept and allocate nothing (fixed control buffers), so that
// code after clone() or in a helper without a heap may use them too.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>

#include "comet/base/fd.hpp"

namespace comet {

// Enough for the sandbox guardian's hand-over (64); the kernel's SCM_MAX_FD
// is 253.
inline constexpr std::size_t kMaxPassFds = 64;

// One sendmsg(2) of `len` bytes of `data` with `fds` (nfds of them, at most
// kMaxPassFds; none when 0) as SCM_RIGHTS, flags | MSG_NOSIGNAL. The fds
// stay the caller's. Returns what sendmsg returns (-1 with errno; EINVAL
// for too many fds); EINTR is the caller's to retry.
ssize_t send_fds(int sock, const void* data, std::size_t len, const int* fds, std::size_t nfds,
                 int flags = 0) noexcept;

// One recvmsg(2) (MSG_CMSG_CLOEXEC | flags) of up to `len` bytes, with room
// for up to max_fds fds (at most kMaxPassFds; the kernel closes what does
// not fit). The fds received, in order, go to fds[0..]; *nfds (if given)
// says how many. Any fd past max_fds is closed. Returns what recvmsg
// returns (-1 with errno: no fd is then kept).
ssize_t recv_fds(int sock, void* data, std::size_t len, UniqueFd* fds, std::size_t max_fds,
                 std::size_t* nfds = nullptr, int flags = 0) noexcept;

}  // namespace comet
