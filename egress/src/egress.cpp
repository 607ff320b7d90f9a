// Egress setup and teardown for one container (see egress.hpp).
#include "comet/egress/egress.hpp"

#include "comet/base/runtime_config.hpp"
#include "comet/egress/host_addrs.hpp"

#include <arpa/inet.h>
#include "comet/base/fault.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "comet/base/spawn.hpp"
#include "comet/base/switches.hpp"
#include "comet/capability/compile.hpp"
#include "comet/egress/allowlist.hpp"
#include "comet/egress/nethelper.hpp"
#include "comet/egress/nft_load.hpp"
#include "comet/egress/proc.hpp"
#include "comet/egress/resolver.hpp"

namespace comet::egress {

namespace {

constexpr int kResolverReadyMs = 3000;

std::string read_text(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return s;
}

Status write_text(const std::string& path, const std::string& data, mode_t mode) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Error::sys(errno, "open " + tmp);
  bool ok_write = ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  int e = errno;
  ::fchmod(fd, mode);
  ::close(fd);
  if (!ok_write) return Error::sys(e, "write " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) < 0) return Error::sys(errno, "rename " + tmp);
  return ok();
}

int pidfd_open(int pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

// Reads "R\n" or "E <why>\n" from the resolver's ready pipe, within the
// deadline.
struct ReadyReport {
  bool ready = false;
  std::string error;
};
ReadyReport read_ready(int fd, int timeout_ms) {
  ReadyReport rep;
  std::string buf;
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (line == "R") {
        rep.ready = true;
        return rep;
      }
      if (line.rfind("E ", 0) == 0) {
        rep.error = line.substr(2);
        return rep;
      }
    }
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    end - std::chrono::steady_clock::now())
                                    .count());
    if (left <= 0) {
      rep.error = "the resolver did not start within " + std::to_string(timeout_ms) + " ms";
      return rep;
    }
    struct pollfd p = {fd, POLLIN, 0};
    int r = ::poll(&p, 1, left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char tmp[512];
    ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (rep.error.empty()) rep.error = "the resolver exited before it was ready";
      return rep;
    }
    buf.append(tmp, static_cast<std::size_t>(n));
  }
}

// The resolver runs in a process of its own, detached (spawn.hpp: double
// fork, new session) so that it outlives `create`, holding only the fds it
// needs.
// A forked copy, not an exec (as the violation reporter): no second start
// of the binary on the container's path.
Result<Helper> start_resolver(const SetupRequest& req, const std::string& table, int netns_fd,
                              const Helper& companion) {
  ResolverConfig cfg;
  cfg.egress = req.caps.egress;
  cfg.table = table;
  cfg.upstreams = req.upstreams;
  cfg.companion_pid = companion.pid;
  cfg.companion_start = companion.start;
  cfg.on_refused = req.on_dns_refused;
  cfg.on_blocked = req.on_egress_blocked;
  cfg.on_exit = req.on_resolver_exit;
  cfg.on_wire_refused = req.on_wire_refused;
  cfg.confine = req.confine_resolver;
  UniqueFd host_ns(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!host_ns.valid()) return Error::sys(errno, "open /proc/self/ns/net");
  UniqueFd init(pidfd_open(req.init_pid));
  if (!init.valid()) return Error::sys(errno, "pidfd_open of the container init");
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) return Error::sys(errno, "pipe");
  UniqueFd rd(p[0]), wr(p[1]);
  // The resolver: nothing of the runtime's but these four fds.
  auto resolver = [&]() -> int {
    int keep[] = {netns_fd, host_ns.get(), wr.get(), init.get()};
    std::sort(std::begin(keep), std::end(keep));
    child_stdio();
    close_fds_except(keep, 4);
    ::prctl(PR_SET_NAME, "comet-dns", 0, 0, 0);
    // The runtime may be a child subreaper (run): do not die with it.
    ::prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
    (void)!::chdir("/");
    ResolverFds fds{netns_fd, host_ns.get(), wr.get(), init.get()};
    return resolver_main(cfg, fds);
  };
  TRY(pid_t pid, spawn_detached("the resolver", resolver));
  wr.reset();
  ReadyReport rep = read_ready(rd.get(), kResolverReadyMs);
  Helper h{pid, start_time(pid)};
  if (!rep.ready) {
    kill_verified(h.pid, h.start);
    return Error::msg("egress: resolver: " + rep.error);
  }
  return h;
}

}  // namespace

Result<std::optional<capability::Capabilities>> capabilities_of(const oci::Spec& spec) {
  auto it = spec.annotations.find(std::string(capability::kAnnotationCapabilities));
  if (it == spec.annotations.end()) return std::optional<capability::Capabilities>{};
  TRY(capability::Capabilities caps, capability::capabilities_from_json(it->second));
  return std::optional<capability::Capabilities>(std::move(caps));
}

Result<std::string> engine_netns(const oci::Spec& spec) {
  if (spec.linux_)
    for (const auto& ns : spec.linux_->namespaces)
      if (ns.type == "network") return ns.path;
  return Error::msg(
      "egress: the config has no network namespace; a pack's egress allowlist cannot be "
      "enforced in the host's");
}

Status refuse_host_netns(int fd, const std::string& what) {
  struct stat ns;
  if (::fstat(fd, &ns) < 0) return Error::sys(errno, "stat network namespace " + what);
  // PID 1 may be beyond the runtime's reach (a more privileged init, or one
  // in another user namespace: ptrace access to it is refused; a procfs
  // mounted hidepid=invisible does not show it); its
  // namespace is compared where it can be seen, the runtime's own always.
  struct Host {
    const char* path;
    bool may_be_hidden;
  };
  for (const Host& host : {Host{"/proc/self/ns/net", false}, Host{"/proc/1/ns/net", true}}) {
    struct stat h;
    if (::stat(host.path, &h) < 0) {
      if (host.may_be_hidden && (errno == EACCES || errno == EPERM || errno == ENOENT)) continue;
      return Error::sys(errno, std::string("stat ") + host.path);
    }
    if (h.st_dev == ns.st_dev && h.st_ino == ns.st_ino)
      return Error::msg("network namespace " + what +
                        " is the host's (the runtime's own or PID 1's): a network policy "
                        "cannot be enforced there");
  }
  return ok();
}

bool wants_resolver(const capability::Capabilities& caps) {
  return mode_of(Allowlist(caps.egress)) != Mode::none;
}

Status refuse_host_literals(const capability::Capabilities& caps) {
  std::vector<std::vector<uint8_t>> host;
  bool have = false;
  for (const capability::EgressEntry& e : caps.egress.entries) {
    std::vector<uint8_t> a(16);
    std::string h = e.host;
    if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    if (::inet_pton(AF_INET, h.c_str(), a.data()) == 1)
      a.resize(4);
    else if (::inet_pton(AF_INET6, h.c_str(), a.data()) != 1)
      continue;  // a name: the resolver checks its answers
    if (!have) {
      TRY(UniqueFd fd, open_route_socket());
      TRY(host, interface_addresses(fd.get()));
      have = true;
    }
    if (is_host_address(a, host))
      return Error::msg("egress entry " + e.host + ":" + std::to_string(e.port) +
                        ": an address of this host; a pack may not reach the host's own "
                        "services (name a host that is not this machine)");
  }
  return {};
}

void prepare_spec(oci::Spec& spec, const capability::Capabilities& caps,
                  const std::string& state_dir) {
  if (!wants_resolver(caps)) return;
  oci::Mount m;
  m.destination = "/etc/resolv.conf";
  m.type = "bind";
  m.source = state_dir + "/resolv.conf";
  m.options = {"bind", "ro", "nosuid", "nodev", "noexec"};
  spec.mounts.push_back(std::move(m));
}

Status write_resolv_conf(const capability::Capabilities& caps, const std::string& state_dir) {
  if (!wants_resolver(caps)) return ok();
  return write_text(state_dir + "/resolv.conf", container_resolv_conf(), 0644);
}

namespace {
std::string& upstream_override() {
  static std::string list;
  return list;
}
}  // namespace

Status set_dns_upstream(const std::string& list) {
  if (!list.empty()) {
    auto ups = parse_upstreams(list);
    if (!ups.ok()) return std::move(ups).error().wrap("--dns-upstream");
    if (ups->empty()) return Error::msg("--dns-upstream: no address in \"" + list + "\"");
  }
  upstream_override() = list;
  return ok();
}

Result<std::vector<std::string>> dns_upstreams() {
  std::vector<std::string> out;
  auto from = [&](const std::string& list,
                  const std::string& what) -> Result<std::vector<std::string>> {
    auto ups = parse_upstreams(list);
    if (!ups.ok()) return std::move(ups).error().wrap(what);
    for (auto& u : *ups) out.push_back(u.text);
    return out;
  };
  if (!upstream_override().empty()) return from(upstream_override(), "--dns-upstream");
  if (std::string env = switches::dns_upstream(); !env.empty())
    return from(env, "COMET_DNS_UPSTREAM");
  // The runtime config file: what an engine that forwards neither flags
  // nor environment (podman) can use (docs/engines.md "Runtime settings").
  TRY(RuntimeConfig rc, runtime_config());
  if (!rc.dns_upstream.empty()) return from(rc.dns_upstream, rc.path + ": dns_upstream");
  for (auto& s : resolv_conf_nameservers(read_text("/etc/resolv.conf"))) out.push_back(s);
  return out;
}

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Status setup(const SetupRequest& req, Handles& h,
             const std::function<Status(const Handles&)>& record) {
  // How long each step took, in <state dir>/egress.json (bench/egress.py).
  std::string timing;
  auto t0 = std::chrono::steady_clock::now();
  auto step = [&](const char* name) {
    timing += (timing.empty() ? "" : ",") + std::string("\"") + name +
              "_ms\":" + std::to_string(ms_since(t0));
    t0 = std::chrono::steady_clock::now();
  };
  auto save_timing = [&]() {
    (void)write_text(req.state_dir + "/egress.json", "{" + timing + "}\n", 0600);
  };
  Allowlist allow(req.caps.egress);
  Mode mode = mode_of(allow);
  bool shared = !req.engine_netns.empty();
  // Our own empty namespace under egress: [] has nothing to filter.
  if (mode == Mode::none && !shared) return ok();

  // The namespace the container's init is in, also when an engine named
  // it: a path can be swapped between the child's join and this open, a
  // waiting init cannot. (The engine's path is kept for the teardown.)
  std::string ns_path = "/proc/" + std::to_string(req.init_pid) + "/ns/net";
  UniqueFd netns(::open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!netns.valid()) return Error::sys(errno, "egress: open network namespace " + ns_path);
  TRYV(refuse_host_netns(netns.get(), shared ? req.engine_netns : ns_path));

  // 1. The ruleset, before the namespace has any way out.
  h.table = table_name(req.id, shared);
  h.netns_path = shared ? req.engine_netns : "";
  TRYV(record(h));
  std::string script = ruleset_text(allow, h.table, /*replace=*/shared);
  // Test-only (comet/base/fault.hpp): a ruleset the kernel's parser refuses,
  // for the reliability suite's failed creates.
  if (fault_is("egress-bad-ruleset"))
    script += "add rule inet " + h.table + " output comet-fault-bogus-statement\n";
  t0 = std::chrono::steady_clock::now();
  double nft_ms = 0;
  TRYC(run_in_netns(netns.get(), script, /*loopback_up=*/true, &nft_ms),
       "egress: load the ruleset");
  // "ruleset": libnftables' context and commands; "netns": entering the
  // namespace, bringing lo up and coming back.
  timing += std::string(timing.empty() ? "" : ",") + "\"ruleset_ms\":" + std::to_string(nft_ms) +
            ",\"netns_ms\":" + std::to_string(ms_since(t0) - nft_ms);
  t0 = std::chrono::steady_clock::now();
  if (mode == Mode::none) {
    save_timing();
    return ok();
  }

  // 2. A way out (nethelper.hpp), for a namespace we made, when the caller
  // made the bundle (pack run, sandbox) or asked for it (--net-helper).
  if (!shared && req.net_helper) {
    TRY(Helper net, start_net_helper(netns.get(), req.state_dir));
    h.net_pid = net.pid;
    h.net_start = net.start;
    TRYV(record(h));
    step("net");
  }

  // 3. The resolver.
  TRY(Helper res, start_resolver(req, h.table, netns.get(), Helper{h.net_pid, h.net_start}));
  h.resolver_pid = res.pid;
  h.resolver_start = res.start;
  TRYV(record(h));
  step("resolver");
  save_timing();
  return ok();
}

Status teardown(const Handles& h) {
  Status first = ok();
  auto note = [&](Status st) {
    if (first.ok() && !st.ok()) first = std::move(st);
  };
  // The wire judge is the resolver's child (judge.hpp): found before the
  // resolver goes (it would die of PR_SET_PDEATHSIG, but not before this
  // returns), killed and waited for after it.
  std::vector<std::pair<int, unsigned long long>> judges;
  if (h.resolver_pid > 0 && start_time(h.resolver_pid) == h.resolver_start)
    for (int c : children_of(h.resolver_pid)) judges.emplace_back(c, start_time(c));
  if (h.resolver_pid > 0 && !kill_verified(h.resolver_pid, h.resolver_start))
    note(Error::msg("egress: the resolver " + std::to_string(h.resolver_pid) + " did not exit"));
  for (auto [pid, start] : judges)
    if (!kill_verified(pid, start))
      note(Error::msg("egress: the wire judge " + std::to_string(pid) + " did not exit"));
  if (h.net_pid > 0 && !kill_verified(h.net_pid, h.net_start))
    note(Error::msg("egress: the network helper " + std::to_string(h.net_pid) + " did not exit"));
  if (!h.netns_path.empty() && !h.table.empty()) {
    UniqueFd ns(::open(h.netns_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (ns.valid()) {
      // Ask first, so that a table already gone is not an error.
      Status st = run_in_netns(
          ns.get(), "add table inet " + h.table + "\ndelete table inet " + h.table + "\n",
          /*loopback_up=*/false);
      if (!st.ok()) note(std::move(st));
    }  // the namespace is gone: so is the table
  }
  return first;
}

}  // namespace comet::egress
