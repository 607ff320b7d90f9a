#include "comet/egress/nft_load.hpp"

#include <net/if.h>
#include <nftables/libnftables.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <fcntl.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "comet/egress/proc.hpp"

namespace comet::egress {

Result<Nft> Nft::open() {
  Nft n;
  n.ctx_ = nft_ctx_new(NFT_CTX_DEFAULT);
  if (!n.ctx_) return Error::msg("nft_ctx_new failed");
  if (nft_ctx_buffer_error(n.ctx_) != 0 || nft_ctx_buffer_output(n.ctx_) != 0)
    return Error::msg("nft_ctx_buffer_error failed");
  return n;
}

Status Nft::run(const std::string& script) {
  if (script.empty()) return ok();
  int saved = errno;
  errno = 0;
  int r = nft_run_cmd_from_buffer(ctx_, script.c_str());
  int e = errno;
  errno = saved;
  if (r != 0) {
    // libnftables' message is several lines (the error, the input line, a
    // caret line); errors here are one line: the first, and the input.
    std::string text = nft_ctx_get_error_buffer(ctx_);
    std::vector<std::string> lines;
    for (std::size_t pos = 0; pos < text.size();) {
      std::size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      std::string l = text.substr(pos, end - pos);
      while (!l.empty() && (l.back() == ' ' || l.back() == '\t' || l.back() == '\r')) l.pop_back();
      std::size_t first = l.find_first_not_of(" \t");
      if (first != std::string::npos) lines.push_back(l.substr(first));
      pos = end + 1;
    }
    std::string msg = lines.empty() ? "(no message)" : lines[0];
    if (lines.size() > 1 && lines[1].find_first_not_of("^~ ") != std::string::npos)
      msg += " (at \"" + lines[1] + "\")";
    return Error::sys(e, "nft: " + msg);
  }
  return ok();
}

Nft::Nft(Nft&& o) noexcept : ctx_(std::exchange(o.ctx_, nullptr)) {}
Nft& Nft::operator=(Nft&& o) noexcept {
  if (this != &o) {
    if (ctx_) nft_ctx_free(ctx_);
    ctx_ = std::exchange(o.ctx_, nullptr);
  }
  return *this;
}
Nft::~Nft() {
  if (ctx_) nft_ctx_free(ctx_);
}

Status loopback_up() {
  Fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return Error::sys(errno, "socket for lo");
  struct ifreq ifr = {};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(s.get(), SIOCGIFFLAGS, &ifr) < 0) return Error::sys(errno, "SIOCGIFFLAGS lo");
  if (ifr.ifr_flags & IFF_UP) return ok();
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
  if (::ioctl(s.get(), SIOCSIFFLAGS, &ifr) < 0) return Error::sys(errno, "SIOCSIFFLAGS lo up");
  return ok();
}

Status run_in_netns(int netns_fd, const std::string& script, bool lo_up, double* nft_ms) {
  Fd self(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!self.valid()) return Error::sys(errno, "open this thread's network namespace");
  if (::setns(netns_fd, CLONE_NEWNET) < 0)
    return Error::sys(errno, "setns into the container's network namespace");
  Status result = [&]() -> Status {
    if (lo_up) TRYV(loopback_up());
    auto t0 = std::chrono::steady_clock::now();
    TRY(Nft n, Nft::open());  // after setns: its socket is in the container's netns
    Status st = n.run(script);
    if (nft_ms)
      *nft_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return st;
  }();
  if (::setns(self.get(), CLONE_NEWNET) < 0) {
    int e = errno;
    return Error::sys(e, "setns back into the runtime's own network namespace after the nft load" +
                             (result.ok() ? std::string() : " (" + result.error().what() + ")"));
  }
  return result;
}

}  // namespace comet::egress
