// Egress enforcement for one container: what the runtime calls.
//
//   before plan_child()     prepare_spec(): when the pack gets a resolver,
//                           a read-only bind of <state dir>/resolv.conf onto
//                           /etc/resolv.conf ("nameserver 127.0.0.1")
//   after the init's mounts setup(), in this order, each step recorded
//                           (record callback) before the next starts, so a
//                           runtime killed anywhere leaves what teardown needs:
//     1. the ruleset (nft_plan.hpp) into the container's netns, by libnftables
//        in a dedicated thread (nft_load.hpp)
//     2. a netns the runtime made: a network helper for connectivity
//        (nethelper.hpp: slirp4netns, or pasta when asked for)
//     3. the resolver (resolver.hpp), a separate process, and with an
//        https or http entry its child the wire judge (judge.hpp)
//   at delete               teardown(): the resolver, the helper, our table in
//                           an engine's netns; idempotent, for --force too.
// Any failure in setup() is a create error (fail closed).
//
// Mode by the capabilities' egress (nft_plan.hpp): none (egress: []) gets no
// network, no resolver, and, in an engine's namespace, a drop-all table;
// filtered gets everything above; open ("*") gets the helper, a resolver that
// answers every name, and a table that only keeps DNS on the resolver.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "comet/base/result.hpp"
#include "comet/capability/manifest.hpp"
#include "comet/egress/nft_plan.hpp"
#include "comet/egress/resolver.hpp"
#include "comet/oci/spec.hpp"

namespace comet::egress {

// What teardown needs (the runtime keeps it in the container's record).
struct Handles {
  int resolver_pid = 0;
  unsigned long long resolver_start = 0;
  int net_pid = 0;  // the network helper (nethelper.hpp)
  unsigned long long net_start = 0;
  std::string netns_path;  // an engine's netns that holds our table ("" = ours)
  std::string table;       // our nft table there
};

// The pack's capabilities, when the spec carries the annotation.
Result<std::optional<capability::Capabilities>> capabilities_of(const oci::Spec& spec);

// The network namespace path the engine gave (linux.namespaces[network].path),
// "" when the runtime makes a new one. An error when the spec asks for no
// network namespace at all (an allowlist cannot be enforced in the host's).
Result<std::string> engine_netns(const oci::Spec& spec);

// An error when the network namespace open at `fd` (named `what` in the
// message) is the runtime's own or PID 1's: a network policy is enforced
// inside a namespace of the container's, and the host's can never be one.
// By identity (st_dev, st_ino of the nsfs inode), so no path names it
// round the check: /proc/self/ns/net, /proc/<host pid>/ns/net, a symlink,
// a bind mount of it.
Status refuse_host_netns(int fd, const std::string& what);

// Whether the container gets a DNS resolver (every mode but "none").
bool wants_resolver(const capability::Capabilities& caps);

// Adds the resolv.conf bind mount when the mode needs a resolver.
// An egress entry that names an address of this host (any interface, as
// the host has them now) is refused: through the helper it would reach the
// host's own services. A create error naming the entry. The resolver
// applies the same rule to every answer it pins (host_addrs.hpp).
Status refuse_host_literals(const capability::Capabilities& caps);

void prepare_spec(oci::Spec& spec, const capability::Capabilities& caps,
                  const std::string& state_dir);
// Writes <state_dir>/resolv.conf (after the state dir exists, before clone).
Status write_resolv_conf(const capability::Capabilities& caps, const std::string& state_dir);

struct SetupRequest {
  std::string id;
  std::string state_dir;
  capability::Capabilities caps;
  std::string engine_netns;  // engine_netns()
  // The connectivity helper for a namespace the runtime made (CreateOptions::net_helper);
  // without it the namespace keeps only loopback: filtered, never widened.
  bool net_helper = false;
  int init_pid = 0;
  std::vector<std::string> upstreams;  // "" entries ignored; empty: the host's
  // The resolver's report hooks (ResolverConfig), run in its process.
  std::function<void(const DnsRefusal&)> on_dns_refused;
  std::function<void(const Blocked&)> on_egress_blocked;
  std::function<void()> on_resolver_exit;
  std::function<void(const WireRefusal&)> on_wire_refused;    // the judge's (judge.hpp)
  std::function<Status(int companion_pid)> confine_resolver;  // ResolverConfig::confine
};

// The DNS upstreams, first of: the CLI's --dns-upstream (set_dns_upstream),
// COMET_DNS_UPSTREAM, the host's /etc/resolv.conf nameservers. A list that
// does not parse is an error that names where it came from.
Result<std::vector<std::string>> dns_upstreams();
// For --dns-upstream: checked here, so a bad value fails before anything is
// made. An empty list clears the override.
Status set_dns_upstream(const std::string& list);

Status setup(const SetupRequest& req, Handles& h,
             const std::function<Status(const Handles&)>& record);

// Undoes setup; safe to call twice, or on a partial Handles. Returns the
// first problem, after trying everything.
Status teardown(const Handles& h);

}  // namespace comet::egress
