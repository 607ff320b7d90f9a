// The per-container DNS resolver (see resolver.hpp).
#include "comet/egress/resolver.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>

#include "comet/base/random.hpp"
#include "comet/egress/host_addrs.hpp"
#include "comet/egress/nft_load.hpp"
#include "comet/egress/proc.hpp"
#include "netns_thread.hpp"

namespace comet::egress {

namespace {

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool parse_port(std::string_view s, uint16_t* port) {
  if (s.empty() || s.size() > 5) return false;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v == 0 || v > 65535) return false;
  *port = static_cast<uint16_t>(v);
  return true;
}

}  // namespace

Result<std::vector<Upstream>> parse_upstreams(std::string_view list) {
  std::vector<Upstream> out;
  for (const std::string& item : split_list(list)) {
    std::string host = item;
    uint16_t port = kDnsPort;
    if (!item.empty() && item[0] == '[') {
      auto close = item.find(']');
      if (close == std::string::npos) return Error::msg("dns upstream " + item + ": missing ']'");
      host = item.substr(1, close - 1);
      std::string rest = item.substr(close + 1);
      if (!rest.empty() && (rest[0] != ':' || !parse_port(rest.substr(1), &port)))
        return Error::msg("dns upstream " + item + ": bad port");
    } else if (std::count(item.begin(), item.end(), ':') == 1) {
      auto colon = item.find(':');
      host = item.substr(0, colon);
      if (!parse_port(std::string_view(item).substr(colon + 1), &port))
        return Error::msg("dns upstream " + item + ": bad port");
    }
    Upstream u;
    auto* s4 = reinterpret_cast<sockaddr_in*>(&u.addr);
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&u.addr);
    if (inet_pton(AF_INET, host.c_str(), &s4->sin_addr) == 1) {
      s4->sin_family = AF_INET;
      s4->sin_port = htons(port);
      u.len = sizeof(sockaddr_in);
      u.text = host + ":" + std::to_string(port);
    } else if (inet_pton(AF_INET6, host.c_str(), &s6->sin6_addr) == 1) {
      s6->sin6_family = AF_INET6;
      s6->sin6_port = htons(port);
      u.len = sizeof(sockaddr_in6);
      u.text = "[" + host + "]:" + std::to_string(port);
    } else {
      return Error::msg("dns upstream " + item + ": not an IP address");
    }
    out.push_back(u);
  }
  return out;
}

std::vector<std::string> resolv_conf_nameservers(std::string_view text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size() && out.size() < 3) {
    std::size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? text.npos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    auto words = split_list(line);
    if (words.size() >= 2 && words[0] == "nameserver") {
      std::string addr = words[1];
      auto pct = addr.find('%');  // fe80::1%eth0: the zone cannot cross namespaces
      if (pct != std::string::npos) continue;
      if (parse_upstreams(addr).ok()) out.push_back(addr);
    }
  }
  return out;
}

std::string container_resolv_conf() {
  return "# comet-runtime: the container's DNS resolver (only allowlisted names)\n"
         "nameserver 127.0.0.1\n"
         "options attempts:2 timeout:2\n";
}

namespace {

using Clock = std::chrono::steady_clock;
using dns::Message;

constexpr int kUpstreamTimeoutMs = 1500;
constexpr int kTcpClientTimeoutMs = 5000;
constexpr std::size_t kMaxTcpClients = 32;
constexpr std::size_t kMaxPending = 256;
constexpr std::size_t kUdpReplyMax = 512;  // no EDNS: the classic limit

struct Client {
  bool tcp = false;
  sockaddr_storage addr = {};  // udp
  socklen_t addr_len = 0;
  int conn = -1;  // tcp: index key into conns
};

struct Pending {
  UniqueFd sock;
  Message query;  // the client's
  Client client;
  uint16_t up_id = 0;
  std::size_t upstream = 0;
  Clock::time_point deadline;
};

struct TcpConn {
  UniqueFd fd;
  std::vector<uint8_t> buf;
  Clock::time_point deadline;
  int key = 0;
};

uint16_t random_id() {
  uint16_t v = 0;
  random_bytes(&v, sizeof v);
  return v;
}

bool write_all_nb(int fd, const uint8_t* p, std::size_t n, int timeout_ms) {
  auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EINTR) return false;
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count());
    if (left <= 0) return false;
    struct pollfd pf = {fd, POLLOUT, 0};
    ::poll(&pf, 1, left);
  }
  return true;
}

bool read_exact(int fd, uint8_t* p, std::size_t n, Clock::time_point end) {
  while (n > 0) {
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count());
    if (left <= 0) return false;
    struct pollfd pf = {fd, POLLIN, 0};
    if (::poll(&pf, 1, left) <= 0) return false;
    ssize_t r = ::recv(fd, p, n, MSG_DONTWAIT);
    if (r == 0) return false;
    if (r < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return false;
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

class Resolver {
 public:
  Resolver(const ResolverConfig& cfg, const ResolverFds& fds)
      : cfg_(cfg), fds_(fds), allow_(cfg.egress) {}

  Status setup() {
    auto ups = parse_upstreams([&] {
      std::string s;
      for (auto& u : cfg_.upstreams) s += u + ",";
      return s;
    }());
    if (!ups.ok()) return std::move(ups).error();
    upstreams_ = std::move(*ups);
    // The listeners and the nft context in the container's namespace
    // (netns_thread.hpp); this thread is in the host's again afterwards,
    // where everything made later is a host socket.
    Status st = in_netns(fds_.netns, [&]() -> Status {
      TRYV(make_listeners());
      if (cfg_.on_blocked) {  // the group is this namespace's
        TRY(NflogSocket n, NflogSocket::open());
        nflog_.emplace(std::move(n));
      }
      if (!allow_.any()) {
        TRY(Nft n, Nft::open());
        nft_.emplace(std::move(n));
      }
      return ok();
    });
    // The host's addresses are read through this socket at every pin
    // (host_addrs.hpp): opened here, in the host's namespace, before the
    // seccomp filter refuses new netlink sockets.
    if (st.ok()) {
      auto r = open_route_socket();
      if (r.ok())
        route_.emplace(std::move(*r));
      else
        st = std::move(r).error();
    }
    return st;
  }

  int loop();
  void report_blocked() {
    if (!nflog_) return;
    for (const Blocked& b : nflog_->drain()) {
      try {
        cfg_.on_blocked(b);
      } catch (...) {
      }
    }
  }

 private:
  Status make_listeners() {
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_port = htons(kDnsPort);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    udp_.reset(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    tcp_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!udp_.valid() || !tcp_.valid()) return Error::sys(errno, "socket");
    int one = 1;
    ::setsockopt(tcp_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(udp_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) {
      int e = errno;
      // Only in an engine's namespace that another container (or a DNS
      // server of the pod) already uses: one egress policy per namespace.
      if (e == EADDRINUSE)
        return Error::sys(e,
                          "bind 127.0.0.1:53/udp in the container's network namespace: it is "
                          "taken, by another container's resolver or a DNS server sharing the "
                          "namespace; egress capabilities are one pack per network namespace "
                          "(docs/egress.md, \"shared engine namespaces\")");
      return Error::sys(e, "bind 127.0.0.1:53/udp in the container");
    }
    if (::bind(tcp_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 ||
        ::listen(tcp_.get(), 64) < 0)
      return Error::sys(errno, "listen 127.0.0.1:53/tcp in the container");
    return ok();
  }

  void on_query(const uint8_t* data, std::size_t len, const Client& c);
  void forward(Message q, const Client& c, std::size_t upstream);
  void finish(Pending& p, const Message* upstream_reply);
  void reply(const Client& c, const Message& m, bool refused = false);
  bool pin(const std::vector<Pin>& pins);
  std::optional<Message> tcp_upstream(const Message& uq, std::size_t upstream);
  void on_udp();
  void on_accept();
  void on_tcp(TcpConn& conn);
  TcpConn* conn_by_key(int key) {
    for (auto& c : conns_)
      if (c.key == key) return &c;
    return nullptr;
  }

  const ResolverConfig& cfg_;
  ResolverFds fds_;
  Allowlist allow_;
  std::vector<Upstream> upstreams_;
  UniqueFd udp_, tcp_;
  std::optional<Nft> nft_;
  std::optional<NflogSocket> nflog_;
  std::optional<UniqueFd> route_;  // NETLINK_ROUTE in the host's namespace
  std::vector<Pending> pending_;
  std::vector<TcpConn> conns_;
  int next_key_ = 1;
  // What we pinned and when the kernel will drop it (our clock).
  std::map<std::tuple<std::string, uint8_t, uint16_t>, Clock::time_point> pinned_;
};

void Resolver::reply(const Client& c, const Message& m, bool refused) {
  // REFUSED, NXDOMAIN for a name the allowlist does not take (answer.hpp):
  // a dns violation, reported before the answer is sent.
  if (refused && !m.questions.empty() && cfg_.on_refused) {
    DnsRefusal r;
    r.rcode = static_cast<uint16_t>(m.rcode());
    r.name = m.questions.front().name;
    r.qtype = m.questions.front().type;
    r.tcp = c.tcp;
    if (!c.tcp) {
      std::memcpy(&r.client, &c.addr, std::min<std::size_t>(c.addr_len, sizeof r.client));
    } else if (TcpConn* tc = conn_by_key(c.conn)) {
      socklen_t len = sizeof r.client;
      (void)::getpeername(tc->fd.get(), reinterpret_cast<sockaddr*>(&r.client), &len);
    }
    try {
      cfg_.on_refused(r);
    } catch (...) {
    }
  }
  auto wire = dns::build(m);
  if (!wire.ok()) {
    auto fallback = dns::build(dns::error_reply(m, dns::kServFail));
    if (!fallback.ok()) return;
    wire = std::move(fallback);
  }
  std::vector<uint8_t>& w = *wire;
  if (!c.tcp) {
    if (w.size() > kUdpReplyMax) {
      Message t = dns::error_reply(m, static_cast<uint16_t>(m.rcode()));
      t.flags |= dns::kFlagTc;
      auto tw = dns::build(t);
      if (!tw.ok()) return;
      w = std::move(*tw);
    }
    ::sendto(udp_.get(), w.data(), w.size(), MSG_DONTWAIT,
             reinterpret_cast<const sockaddr*>(&c.addr), c.addr_len);
    return;
  }
  TcpConn* conn = conn_by_key(c.conn);
  if (!conn) return;
  std::vector<uint8_t> framed;
  framed.reserve(w.size() + 2);
  framed.push_back(static_cast<uint8_t>(w.size() >> 8));
  framed.push_back(static_cast<uint8_t>(w.size()));
  framed.insert(framed.end(), w.begin(), w.end());
  if (!write_all_nb(conn->fd.get(), framed.data(), framed.size(), 1000)) conn->fd.reset();
}

void Resolver::on_query(const uint8_t* data, std::size_t len, const Client& c) {
  // First what the ruleset refused (NFLOG) until now: a container's own
  // init (trampoline.c) sends a query as a barrier once the agent has
  // exited, and reads the events file after the answer.
  report_blocked();
  auto m = dns::parse(data, len);
  if (!m.ok()) {
    auto h = dns::parse_header(data, len);
    if (!h.ok() || (h->flags & dns::kFlagQr)) return;
    Message q;
    q.id = h->id;
    q.flags = h->flags;
    reply(c, dns::error_reply(q, dns::kFormErr));
    return;
  }
  QueryDecision d = check_query(allow_, *m);
  if (d.action == QueryAction::drop) return;
  if (d.action == QueryAction::reply) {
    reply(c, d.reply, d.refused);
    return;
  }
  if (upstreams_.empty() || pending_.size() >= kMaxPending) {
    reply(c, dns::error_reply(*m, dns::kServFail));
    return;
  }
  forward(std::move(*m), c, 0);
}

void Resolver::forward(Message q, const Client& c, std::size_t upstream) {
  for (; upstream < upstreams_.size(); ++upstream) {
    const Upstream& u = upstreams_[upstream];
    UniqueFd s(::socket(u.addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s.valid()) continue;
    if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&u.addr), u.len) < 0) continue;
    uint16_t id = random_id();
    auto wire = dns::build(upstream_query(q, id));
    if (!wire.ok()) break;
    if (::send(s.get(), wire->data(), wire->size(), MSG_DONTWAIT) < 0) continue;
    Pending p;
    p.sock = std::move(s);
    p.query = std::move(q);
    p.client = c;
    p.up_id = id;
    p.upstream = upstream;
    p.deadline = Clock::now() + std::chrono::milliseconds(kUpstreamTimeoutMs);
    pending_.push_back(std::move(p));
    return;
  }
  reply(c, dns::error_reply(q, dns::kServFail));
}

std::optional<Message> Resolver::tcp_upstream(const Message& uq, std::size_t upstream) {
  const Upstream& u = upstreams_[upstream];
  UniqueFd s(::socket(u.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s.valid()) return std::nullopt;
  auto end = Clock::now() + std::chrono::milliseconds(kUpstreamTimeoutMs);
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&u.addr), u.len) < 0) {
    if (errno != EINPROGRESS) return std::nullopt;
    struct pollfd pf = {s.get(), POLLOUT, 0};
    if (::poll(&pf, 1, kUpstreamTimeoutMs) <= 0) return std::nullopt;
    int err = 0;
    socklen_t el = sizeof err;
    ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &el);
    if (err) return std::nullopt;
  }
  auto wire = dns::build(uq);
  if (!wire.ok()) return std::nullopt;
  std::vector<uint8_t> framed = {static_cast<uint8_t>(wire->size() >> 8),
                                 static_cast<uint8_t>(wire->size())};
  framed.insert(framed.end(), wire->begin(), wire->end());
  if (!write_all_nb(s.get(), framed.data(), framed.size(), kUpstreamTimeoutMs)) return std::nullopt;
  uint8_t lenb[2];
  if (!read_exact(s.get(), lenb, 2, end)) return std::nullopt;
  std::size_t n = (std::size_t{lenb[0]} << 8) | lenb[1];
  std::vector<uint8_t> buf(n);
  if (!read_exact(s.get(), buf.data(), n, end)) return std::nullopt;
  auto m = dns::parse(buf);
  if (!m.ok() || m->id != uq.id) return std::nullopt;
  return std::move(*m);
}

bool Resolver::pin(const std::vector<Pin>& pins) {
  if (pins.empty()) return true;
  if (!nft_) return false;
  auto now = Clock::now();
  std::vector<Pin> add, refresh;
  for (const Pin& p : pins) {
    auto key = std::make_tuple(p.address, p.service.l4, p.service.port);
    auto it = pinned_.find(key);
    if (it != pinned_.end() && it->second > now + std::chrono::seconds(2)) {
      // Still in the set: refresh only when it would run out before half
      // the new timeout (a delete and an add in one transaction).
      if (it->second >= now + std::chrono::seconds(p.timeout_s / 2)) continue;
      refresh.push_back(p);
    }
    add.push_back(p);
  }
  if (add.empty()) return true;
  std::string script =
      delete_elements_text(cfg_.table, refresh) + add_elements_text(cfg_.table, add);
  // The nft socket was opened in the container's namespace (setup()), so
  // that is where this goes; the confined resolver can no longer setns().
  // Should libnftables re-open its socket (it does on some errors), the new
  // one is refused by the resolver's seccomp filter, or would be in the
  // host's namespace, which has no such table: the pin fails and the answer
  // is SERVFAIL. Fail closed either way.
  Status st = nft_->run(script);
  if (!st.ok() && !refresh.empty()) st = nft_->run(add_elements_text(cfg_.table, add));
  if (!st.ok()) return false;
  for (const Pin& p : add)
    pinned_[std::make_tuple(p.address, p.service.l4, p.service.port)] =
        now + std::chrono::seconds(p.timeout_s);
  return true;
}

void Resolver::finish(Pending& p, const Message* up) {
  if (!up) {
    reply(p.client, dns::error_reply(p.query, dns::kServFail));
    return;
  }
  // Never an address of the host, on any interface, as it is now
  // (issue 21, item 5). Not known: SERVFAIL (fail closed).
  std::vector<std::vector<uint8_t>> host;
  const bool has_addresses = std::any_of(
      up->answers.begin(), up->answers.end(),
      [](const dns::Record& r) { return r.type == dns::kTypeA || r.type == dns::kTypeAaaa; });
  if (has_addresses) {
    auto h = route_ ? interface_addresses(route_->get())
                    : Result<std::vector<std::vector<uint8_t>>>(Error::msg("no route socket"));
    if (!h.ok()) {
      reply(p.client, dns::error_reply(p.query, dns::kServFail));
      return;
    }
    host = std::move(*h);
  }
  AnswerDecision d = answer(allow_, p.query, *up, cfg_.ttl, host);
  if (!pin(d.pins)) {
    reply(p.client, dns::error_reply(p.query, dns::kServFail));
    return;
  }
  reply(p.client, d.reply, d.refused);
}

void Resolver::on_udp() {
  uint8_t buf[4096];
  for (int i = 0; i < 64; ++i) {
    Client c;
    c.addr_len = sizeof c.addr;
    ssize_t n = ::recvfrom(udp_.get(), buf, sizeof buf, MSG_DONTWAIT,
                           reinterpret_cast<sockaddr*>(&c.addr), &c.addr_len);
    if (n < 0) return;
    on_query(buf, static_cast<std::size_t>(n), c);
  }
}

void Resolver::on_accept() {
  for (;;) {
    int fd = ::accept4(tcp_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    if (conns_.size() >= kMaxTcpClients) {
      ::close(fd);
      continue;
    }
    TcpConn c;
    c.fd.reset(fd);
    c.deadline = Clock::now() + std::chrono::milliseconds(kTcpClientTimeoutMs);
    c.key = next_key_++;
    conns_.push_back(std::move(c));
  }
}

void Resolver::on_tcp(TcpConn& conn) {
  uint8_t buf[4096];
  ssize_t n = ::recv(conn.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    conn.fd.reset();
    return;
  }
  if (n < 0) return;
  conn.buf.insert(conn.buf.end(), buf, buf + n);
  if (conn.buf.size() > 2 + dns::kMaxMessage) {
    conn.fd.reset();
    return;
  }
  conn.deadline = Clock::now() + std::chrono::milliseconds(kTcpClientTimeoutMs);
  while (conn.buf.size() >= 2) {
    std::size_t len = (std::size_t{conn.buf[0]} << 8) | conn.buf[1];
    if (conn.buf.size() < 2 + len) break;
    std::vector<uint8_t> msg(conn.buf.begin() + 2, conn.buf.begin() + 2 + static_cast<long>(len));
    conn.buf.erase(conn.buf.begin(), conn.buf.begin() + 2 + static_cast<long>(len));
    Client c;
    c.tcp = true;
    c.conn = conn.key;
    on_query(msg.data(), msg.size(), c);
  }
}

int Resolver::loop() {
  std::vector<pollfd> pfds;
  for (;;) {
    auto now = Clock::now();
    // Timeouts: the next upstream, or SERVFAIL.
    for (std::size_t i = 0; i < pending_.size();) {
      if (pending_[i].deadline > now) {
        ++i;
        continue;
      }
      Pending p = std::move(pending_[i]);
      pending_.erase(pending_.begin() + static_cast<long>(i));
      forward(std::move(p.query), p.client, p.upstream + 1);
    }
    conns_.erase(
        std::remove_if(conns_.begin(), conns_.end(),
                       [&](const TcpConn& c) { return !c.fd.valid() || c.deadline <= now; }),
        conns_.end());
    Clock::time_point next = now + std::chrono::seconds(5);
    for (auto& p : pending_) next = std::min(next, p.deadline);
    for (auto& c : conns_) next = std::min(next, c.deadline);
    int timeout = static_cast<int>(
                      std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count()) +
                  1;

    pfds.clear();
    pfds.push_back({fds_.init_pidfd, POLLIN, 0});
    pfds.push_back({udp_.get(), POLLIN, 0});
    pfds.push_back({tcp_.get(), POLLIN, 0});
    for (auto& p : pending_) pfds.push_back({p.sock.get(), POLLIN, 0});
    for (auto& c : conns_) pfds.push_back({c.fd.get(), POLLIN, 0});
    pfds.push_back({nflog_ ? nflog_->fd() : -1, POLLIN, 0});  // negative fd: ignored
    int r = ::poll(pfds.data(), pfds.size(), timeout);
    if (r < 0) {
      if (errno == EINTR) continue;
      return 2;
    }
    if (pfds.back().revents & POLLIN) report_blocked();
    if (fds_.init_pidfd >= 0 && pfds[0].revents) {  // the container is gone
      report_blocked();                             // what its last calls were refused
      if (cfg_.companion_pid > 0) kill_verified(cfg_.companion_pid, cfg_.companion_start);
      return 0;
    }
    std::size_t np = pending_.size(), nc = conns_.size();
    std::vector<int> ready_pending, ready_conns;
    for (std::size_t i = 0; i < np; ++i)
      if (pfds[3 + i].revents) ready_pending.push_back(pending_[i].sock.get());
    for (std::size_t i = 0; i < nc; ++i)
      if (pfds[3 + np + i].revents) ready_conns.push_back(conns_[i].key);
    if (pfds[1].revents & POLLIN) on_udp();
    if (pfds[2].revents & POLLIN) on_accept();
    for (int fd : ready_pending) {
      auto it = std::find_if(pending_.begin(), pending_.end(),
                             [&](const Pending& p) { return p.sock.get() == fd; });
      if (it == pending_.end()) continue;
      uint8_t buf[4096];
      ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      Pending p = std::move(*it);
      pending_.erase(it);
      if (n < 0) {  // ECONNREFUSED from this upstream: the next one
        forward(std::move(p.query), p.client, p.upstream + 1);
        continue;
      }
      auto m = dns::parse(buf, static_cast<std::size_t>(n));
      if (!m.ok() || m->id != p.up_id || !m->response()) {
        // Not our answer (spoofed or garbled): keep waiting.
        pending_.push_back(std::move(p));
        continue;
      }
      if (m->truncated()) {
        auto t = tcp_upstream(upstream_query(p.query, p.up_id), p.upstream);
        finish(p, t ? &*t : nullptr);
        continue;
      }
      finish(p, &*m);
    }
    for (int key : ready_conns)
      if (TcpConn* c = conn_by_key(key); c && c->fd.valid()) on_tcp(*c);
  }
}

void say(int fd, const std::string& s) {
  if (fd < 0) return;
  (void)!::write(fd, s.data(), s.size());
  ::close(fd);
}

constexpr int kJudgeReadyMs = 2500;

// The wire judge (judge.hpp) as this process's child, forked before the
// resolver confines itself, holding only the container's namespace, its
// ready pipe and the init's pidfd. It dies with the resolver
// (PR_SET_PDEATHSIG), and exits by itself with the init.
Status start_judge(const ResolverConfig& cfg, const ResolverFds& fds) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) return Error::sys(errno, "pipe for the judge");
  UniqueFd rd(p[0]), wr(p[1]);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Error::sys(errno, "fork the judge");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (::getppid() != parent) ::_exit(1);
    int keep[] = {fds.netns, fds.init_pidfd, wr.get()};
    std::sort(std::begin(keep), std::end(keep));
    close_fds_except(keep, 3);
    ::prctl(PR_SET_NAME, "comet-judge", 0, 0, 0);
    JudgeConfig jc;
    jc.egress = cfg.egress;
    jc.on_refused = cfg.on_wire_refused;
    jc.on_exit = cfg.on_exit;
    jc.confine = cfg.confine;
    ::_exit(judge_main(jc, JudgeFds{fds.netns, wr.get(), fds.init_pidfd}));
  }
  wr.reset();
  std::string got;
  auto end = Clock::now() + std::chrono::milliseconds(kJudgeReadyMs);
  while (got.find('\n') == std::string::npos) {
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count());
    struct pollfd pf = {rd.get(), POLLIN, 0};
    if (left <= 0 || ::poll(&pf, 1, left) <= 0) {
      got = "E the judge did not start within " + std::to_string(kJudgeReadyMs) + " ms\n";
      break;
    }
    char b[512];
    ssize_t n = ::read(rd.get(), b, sizeof b);
    if (n <= 0) {
      got = "E the judge exited before it was ready\n";
      break;
    }
    got.append(b, static_cast<std::size_t>(n));
  }
  if (got.rfind("R\n", 0) == 0) return ok();
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  std::string why = got.rfind("E ", 0) == 0 ? got.substr(2, got.find('\n') - 2) : got;
  return Error::msg("wire judge: " + why);
}

}  // namespace

int resolver_main(const ResolverConfig& cfg, const ResolverFds& fds) noexcept {
  try {
    Resolver r(cfg, fds);
    // The resolver's listeners first (a namespace another pack's resolver
    // holds fails there, with its own message), then the judge, which
    // closes every fd of the resolver's in its copy.
    Status st = r.setup();
    if (st.ok() && wants_judge(cfg.egress)) st = start_judge(cfg, fds);
    if (st.ok() && cfg.confine) {
      st = cfg.confine(cfg.companion_pid);
      if (!st.ok()) st = std::move(st).error().wrap("confine the resolver");
    }
    if (!st.ok()) {
      say(fds.ready, "E " + st.error().what() + "\n");
      return 1;
    }
    say(fds.ready, "R\n");
    int rc = r.loop();
    if (cfg.on_exit) cfg.on_exit();
    return rc;
  } catch (const std::exception& e) {
    say(fds.ready, std::string("E ") + e.what() + "\n");
    return 2;
  } catch (...) {
    return 2;
  }
}

}  // namespace comet::egress
