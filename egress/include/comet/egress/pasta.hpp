// pasta, the user-mode network of the passt project (Debian's passt
// package), as the container's network helper (nethelper.hpp): chosen with
// COMET_NET_HELPER=pasta (or a COMET_PASTA of its own). No longer the
// default: Debian 12's pasta (passt 2023-03) corrupts half-closed TCP and
// turns a far end's RST into a timeout (docs/egress.md, bench/netpath.sh).
//
// pasta gives the namespace one tap interface with the host's addresses and
// routes (--config-net) and carries its TCP/UDP flows over ordinary host
// sockets. Inbound port forwarding is off (-t/-u/-T/-U none) and the
// gateway address is not mapped to the host's loopback (--no-map-gw), so
// the container cannot reach the host's own services through it.
#pragma once

#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/egress/nethelper.hpp"

namespace comet::egress {

// COMET_PASTA, else /usr/bin/pasta, else /usr/local/bin/pasta; "" if none.
std::string pasta_binary();

// pasta's command line (pure). The namespace is handed over as fd 3
// (--netns /proc/self/fd/3): pasta drops its capabilities before it opens
// the path, and /proc/PID/ns/net of the container's init (not dumpable)
// needs CAP_SYS_PTRACE to open.
inline constexpr int kPastaNetnsFd = 3;
std::vector<std::string> pasta_args(const std::string& binary, const std::string& pid_file);

// Starts pasta on the network namespace `netns_fd` (it daemonises once the
// namespace is configured) and returns the daemon. log_file gets pasta's
// own messages.
Result<Helper> start_pasta(int netns_fd, const std::string& pid_file, const std::string& log_file);

}  // namespace comet::egress
