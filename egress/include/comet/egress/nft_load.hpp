// Loading nft script text with libnftables (the nftables project's own
// library: no `nft` process, no hand-written netlink).
//
// An nft_ctx talks to the network namespace its netlink socket was opened
// in, so it must be created after setns(). run_in_netns() enters the
// namespace in the calling thread and returns to the thread's own before it
// returns; it opens nothing that outlives the call. (It used to do this in
// a short-lived thread, which cost about 1 ms on this class of VM: the
// thread's stack and its fresh malloc arena are all first-touch pages.)
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

// setns(netns_fd, CLONE_NEWNET), bring "lo" up, create an nft_ctx, run
// `script` (skipped when empty), free the context, and setns() back. If the
// way back fails the error says so: the caller must not go on (create fails
// and cleans up, which does not depend on the thread's namespace).
// `nft_ms`, when given, receives the time of the nft part alone (context
// and commands; bench/egress.py's "ruleset load").
Status run_in_netns(int netns_fd, const std::string& script, bool loopback_up = true,
                    double* nft_ms = nullptr);

// Brings "lo" up in the calling thread's netns.
Status loopback_up();

}  // namespace comet::egress
