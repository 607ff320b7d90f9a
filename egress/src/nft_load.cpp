#include "comet/egress/nft_load.hpp"

#include <dlfcn.h>
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
#include "netns_thread.hpp"

namespace comet::egress {
namespace {

// libnftables is loaded on first use, not linked: with its libnftnl, libmnl,
// libxtables, libjansson and libgmp it is six of the shared objects the
// dynamic loader would otherwise map and relocate at every start of
// comet-runtime, while only a container with an egress allowlist calls it.
struct NftLib {
  decltype(&::nft_ctx_new) ctx_new = nullptr;
  decltype(&::nft_ctx_free) ctx_free = nullptr;
  decltype(&::nft_ctx_buffer_output) buffer_output = nullptr;
  decltype(&::nft_ctx_buffer_error) buffer_error = nullptr;
  decltype(&::nft_ctx_get_error_buffer) get_error_buffer = nullptr;
  decltype(&::nft_run_cmd_from_buffer) run_cmd_from_buffer = nullptr;
  std::string error;  // why it could not be loaded; empty when loaded
};

template <typename F>
bool bind_sym(void* h, const char* name, F& f, std::string& error) {
  f = reinterpret_cast<F>(::dlsym(h, name));
  if (!f && error.empty()) error = std::string("dlsym ") + name + ": " + ::dlerror();
  return f != nullptr;
}

const NftLib& nft_lib() {
  static const NftLib lib = [] {
    NftLib l;
    // The handle stays open for the life of the process (contexts may be
    // freed at exit).
    void* h = ::dlopen("libnftables.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = ::dlerror();
      l.error = std::string("dlopen libnftables.so.1: ") + (e ? e : "unknown error");
      return l;
    }
    bind_sym(h, "nft_ctx_new", l.ctx_new, l.error);
    bind_sym(h, "nft_ctx_free", l.ctx_free, l.error);
    bind_sym(h, "nft_ctx_buffer_output", l.buffer_output, l.error);
    bind_sym(h, "nft_ctx_buffer_error", l.buffer_error, l.error);
    bind_sym(h, "nft_ctx_get_error_buffer", l.get_error_buffer, l.error);
    bind_sym(h, "nft_run_cmd_from_buffer", l.run_cmd_from_buffer, l.error);
    return l;
  }();
  return lib;
}

}  // namespace

Result<Nft> Nft::open() {
  const NftLib& lib = nft_lib();
  if (!lib.error.empty()) return Error::msg(lib.error);
  Nft n;
  n.ctx_ = lib.ctx_new(NFT_CTX_DEFAULT);
  if (!n.ctx_) return Error::msg("nft_ctx_new failed");
  if (lib.buffer_error(n.ctx_) != 0 || lib.buffer_output(n.ctx_) != 0)
    return Error::msg("nft_ctx_buffer_error failed");
  return n;
}

Status Nft::run(const std::string& script) {
  if (script.empty()) return ok();
  int saved = errno;
  errno = 0;
  int r = nft_lib().run_cmd_from_buffer(ctx_, script.c_str());
  int e = errno;
  errno = saved;
  if (r != 0) {
    // libnftables' message is several lines (the error, the input line, a
    // caret line); errors here are one line: the first, and the input.
    std::string text = nft_lib().get_error_buffer(ctx_);
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
    if (ctx_) nft_lib().ctx_free(ctx_);
    ctx_ = std::exchange(o.ctx_, nullptr);
  }
  return *this;
}
Nft::~Nft() {
  if (ctx_) nft_lib().ctx_free(ctx_);
}

Status loopback_up() {
  UniqueFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
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
  return in_netns(netns_fd, [&]() -> Status {
    if (lo_up) TRYV(loopback_up());
    auto t0 = std::chrono::steady_clock::now();
    TRY(Nft n, Nft::open());  // after setns: its socket is in the container's netns
    Status st = n.run(script);
    if (nft_ms)
      *nft_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return st;
  });
}

}  // namespace comet::egress
