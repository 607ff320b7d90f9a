// Connectivity for containers whose network namespace the runtime made
// (`run`, `create` without an engine, pack run, sandbox): a user-mode
// network helper attached to the container's namespace, whose flows leave
// through ordinary host sockets, so that nothing on the host changes (no
// link, no route, no nft table, no forwarding sysctl). Why not a veth:
// docs/egress.md ("Connectivity").
//
// The helper is slirp4netns (slirp.hpp) unless COMET_NET_HELPER says
// otherwise. pasta (pasta.hpp) was the helper until 2026-12-06 and can
// still be chosen: Debian 12's pasta (passt 2023-03) corrupts half-closed
// TCP and turns a far end's RST into a timeout (docs/egress.md has the
// measurements, bench/netpath.sh makes them).
//
// Whichever it is: no inbound forwarding, no way to the host's loopback,
// the namespace handed over as an fd (the container's init is not
// dumpable), pid and start time recorded for delete, and the container's
// output filter sees every packet before the helper does.
#pragma once

#include <string>

#include "comet/base/result.hpp"

namespace comet::egress {

struct Helper {
  int pid = 0;
  unsigned long long start = 0;
};

enum class NetHelperKind { slirp4netns, pasta };

const char* net_helper_name(NetHelperKind kind);

// COMET_NET_HELPER: "slirp4netns" (the default) or "pasta"; any other value
// is an error. Without it, a COMET_PASTA of its own picks pasta at that path
// (what COMET_PASTA meant before slirp4netns became the default). Where
// the binary is: slirp_binary() / pasta_binary().
Result<NetHelperKind> choose_net_helper();

// Starts the chosen helper on the network namespace `netns_fd` and returns
// it once the namespace is configured. Its own messages go to
// <state_dir>/<helper>.log.
Result<Helper> start_net_helper(int netns_fd, const std::string& state_dir);

}  // namespace comet::egress
