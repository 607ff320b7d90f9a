// SCM_RIGHTS send and receive (fdpass.hpp).
#include "comet/base/fdpass.hpp"

#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

namespace comet {

ssize_t send_fds(int sock, const void* data, std::size_t len, const int* fds, std::size_t nfds,
                 int flags) noexcept {
  if (nfds > kMaxPassFds) {
    errno = EINVAL;
    return -1;
  }
  alignas(struct cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * kMaxPassFds)] = {};
  struct iovec iov = {const_cast<void*>(data), len};
  struct msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (nfds > 0) {
    mh.msg_control = cbuf;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    struct cmsghdr* cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
  }
  return ::sendmsg(sock, &mh, flags | MSG_NOSIGNAL);
}

ssize_t recv_fds(int sock, void* data, std::size_t len, UniqueFd* fds, std::size_t max_fds,
                 std::size_t* nfds, int flags) noexcept {
  if (nfds) *nfds = 0;
  if (max_fds > kMaxPassFds) max_fds = kMaxPassFds;
  alignas(struct cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * kMaxPassFds)] = {};
  struct iovec iov = {data, len};
  struct msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cbuf;
  mh.msg_controllen = CMSG_SPACE(sizeof(int) * max_fds);
  const ssize_t n = ::recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
  if (n < 0) return n;
  std::size_t got = 0;
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < k; i++) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (got < max_fds)
        fds[got++].reset(fd);
      else
        ::close(fd);
    }
  }
  if (nfds) *nfds = got;
  return n;
}

}  // namespace comet
