// Loading nft script text with libnftables (the nftables project's own
// library: no `nft` process, no hand-written netlink).
//
// An nft_ctx talks to the network namespace its netlink socket was opened
// in, so it must be created after setns(). setns(CLONE_NEWNET) is per
// thread: run_in_netns() does it in a dedicated, short-lived thread, never
// in the caller's (the runtime's main) thread.
#pragma once

#include <memory>
#include <string>

#include "comet/base/result.hpp"

struct nft_ctx;

namespace comet::egress {

// A libnftables context with its error output captured.
class Nft {
 public:
  // Creates the context in the calling thread's current netns.
  static Result<Nft> open();
  // Runs a script as one transaction; the error names what nft said.
  Status run(const std::string& script);

  Nft(Nft&&) noexcept;
  Nft& operator=(Nft&&) noexcept;
  ~Nft();

 private:
  Nft() = default;
  nft_ctx* ctx_ = nullptr;
};

// In a dedicated thread: setns(netns_fd, CLONE_NEWNET), bring "lo" up,
// create an nft_ctx, run `script` (skipped when empty), free the context.
Status run_in_netns(int netns_fd, const std::string& script, bool loopback_up = true);

// Brings "lo" up in the calling thread's netns.
Status loopback_up();

}  // namespace comet::egress
