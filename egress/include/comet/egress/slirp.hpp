// slirp4netns (Debian's slirp4netns, libslirp) as the container's network
// helper (nethelper.hpp). It gives the namespace one tap interface
// (10.0.2.100/24, gateway 10.0.2.2; IPv6 fd00::100/64 via fd00::2, set by
// the runtime) and carries its TCP/UDP flows over host sockets through
// libslirp's own TCP stack, which ends each flow on both sides: a
// half-close, a reset, a refused connect reach the container as the far end
// made them (bench/netpath.sh measures it).
//
// Safety, as pasta had it:
//   --disable-host-loopback  10.0.2.2 / fd00::2 are not the host's loopback
//   --disable-dns            no DNS forwarder at 10.0.2.3 (the container's
//                            resolver is comet's own, on 127.0.0.1)
//   no --api-socket          so no port forwarding can ever be added
//   --enable-sandbox         its own mount namespace with only /etc and /run
//                            (read-only), every capability dropped but
//                            CAP_NET_BIND_SERVICE, once the tap is set up
//   --enable-seccomp         a syscall allowlist
// It starts in a mount namespace of its own whose mounts are slaves of the
// host's: as root in the host's mount namespace, the sandbox's pivot_root
// and detach of the old root propagate to the host's shared mounts (seen
// here: every /run/netns/* unmounted on the host).
// The namespace is fd 3 (--netns-type=path /proc/self/fd/3); readiness is a
// "1" on fd 4 (--ready-fd).
#pragma once

#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/egress/nethelper.hpp"

namespace comet::egress {

inline constexpr int kSlirpNetnsFd = 3;
inline constexpr int kSlirpReadyFd = 4;
// The tap's MTU. Chosen by measurement (bench/netpath.sh, docs/egress.md):
// at 65520 (podman's default) uploads crawled at 20-60 MiB/s on the test VM
// (libslirp's 128 KiB socket buffer holds two such segments, and its window
// updates wait); 16384 moved 5-10x more and downloads as fast.
inline constexpr int kSlirpMtu = 16384;
inline constexpr const char* kSlirpTap = "tap0";
inline constexpr const char* kSlirpIPv6 = "fd00::100";
inline constexpr const char* kSlirpGatewayIPv6 = "fd00::2";

// COMET_SLIRP4NETNS, else /usr/bin/slirp4netns, else
// /usr/local/bin/slirp4netns; "" if none.
std::string slirp_binary();

// slirp4netns's command line (pure).
std::vector<std::string> slirp_args(const std::string& binary);

// Starts slirp4netns on `netns_fd` in a session and a (slave) mount
// namespace of its own, waits (5 s at most) for it to report the namespace
// configured, then sets the tap's IPv6 address and route (slirp_ipv6).
// log_file gets its messages.
Result<Helper> start_slirp(int netns_fd, const std::string& log_file);

// In the namespace `netns_fd`: tap0 gets fd00::100/64 and a default route
// via fd00::2 at once (no duplicate address detection, no router
// advertisement to wait for: slirp4netns leaves IPv6 to SLAAC, which took
// 2-3 s here). Nothing is done where the kernel has no IPv6.
Status slirp_ipv6(int netns_fd);

}  // namespace comet::egress
