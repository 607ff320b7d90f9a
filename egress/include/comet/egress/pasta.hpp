// Connectivity for containers whose network namespace the runtime made
// (`run`, `create` without an engine): pasta, the user-mode network of the
// passt project (Debian's passt package), attached to the container's
// namespace. Why pasta and not a veth: docs/egress.md ("Connectivity").
//
// pasta gives the namespace one tap interface with the host's addresses and
// routes (--config-net) and carries its TCP/UDP flows over ordinary host
// sockets. Nothing changes on the host: no link, no route, no nft table,
// no forwarding sysctl. Inbound port forwarding is off (-t/-u/-T/-U none)
// and the gateway address is not mapped to the host's loopback
// (--no-map-gw), so the container cannot reach the host's own services
// through it. The container's output filter still sees every packet first.
#pragma once

#include <string>
#include <vector>

#include "comet/base/result.hpp"

namespace comet::egress {

struct Helper {
  int pid = 0;
  unsigned long long start = 0;
};

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
