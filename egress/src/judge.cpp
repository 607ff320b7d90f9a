// The wire judge (see judge.hpp): a transparent proxy that connects out
// only after the first flight has been judged. One epoll loop, level
// triggered, every socket non-blocking.
//
// After the verdict the bytes it does not read (a TLS stream after its
// ClientHello, an HTTP body of known length or a chunk's data, every
// response) move socket -> pipe -> socket with splice(2): they stay in
// the kernel. What it parses (the first flight, every HTTP request head)
// goes through a buffer of its own.
#include "comet/egress/judge.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "comet/base/fd.hpp"
#include "comet/capability/match.hpp"
#include "comet/egress/allowlist.hpp"
#include "comet/egress/nft_plan.hpp"
#include "comet/egress/wire.hpp"

namespace comet::egress {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kBuf = 128 * 1024;  // per direction, per connection (allocated on use)
constexpr std::size_t kMaxConns = 1024;
// A pipe per direction of a relayed connection (two fds each), at most
// kMaxPipes at a time; a connection that gets none (or fds are short) is
// relayed through the buffers instead. The first kBigPipes in use are
// grown to kPipeBytes (F_SETPIPE_SZ; bench/egress_wire.py on a loaded VM:
// 64 KiB, 256 KiB and 1 MiB pipes gave paired ratios 0.43-0.59, 0.47-0.65
// and 0.69-0.76), the rest keep the default 64 KiB: pipe pages are
// charged to the user (root: every judge and every other root process
// share /proc/sys/fs/pipe-user-pages-soft, 64 MiB), and past that limit
// the kernel gives root's new pipes 8 KiB.
constexpr std::size_t kMaxPipes = 256;
constexpr std::size_t kBigPipes = 16;
constexpr int kPipeBytes = 1024 * 1024;
constexpr int kSpliceRounds = 16;  // per wake-up and direction, then others' turn
constexpr int kConnectMs = 30000;  // the far end's connect
constexpr int kOrigDst6 = 80;      // IP6T_SO_ORIGINAL_DST
constexpr uint64_t kListen4 = ~0ULL, kListen6 = ~0ULL - 1, kInit = ~0ULL - 2;

// Bytes waiting to be written, consumed from the front. The storage is
// allocated on first use and never zero-filled (a value-initialised
// vector cost a memset of every read on the bulk path).
struct Buf {
  std::unique_ptr<uint8_t[]> d;
  std::size_t head = 0, tail = 0;
  std::size_t size() const { return tail - head; }
  const uint8_t* data() const { return d.get() + head; }
  // Room for up to `want` more bytes at the end (compacting first when the
  // end is reached); how many fit is returned in `want`.
  uint8_t* space(std::size_t& want) {
    if (!d) d.reset(new uint8_t[kBuf]);
    if (kBuf - tail < want && head > 0) {
      std::memmove(d.get(), d.get() + head, size());
      tail -= head;
      head = 0;
    }
    want = std::min(want, kBuf - tail);
    return d.get() + tail;
  }
  void commit(std::size_t n) { tail += n; }
  void consume(std::size_t n) {
    head += n;
    if (head == tail) head = tail = 0;
  }
};

// A kernel buffer between two sockets.
struct Pipe {
  UniqueFd r, w;
  std::size_t n = 0;    // bytes in it
  std::size_t cap = 0;  // its size
  // The last splice into it moved nothing while it held bytes: its slots
  // may be full (a slot holds a socket buffer's fragment, often less than
  // a page). Not refilled, nor its source watched, until it drains.
  bool stalled = false;
  bool big = false;  // grown to kPipeBytes
  bool valid() const { return r.valid(); }
  bool room() const { return valid() && !stalled && n < cap; }
};

enum class Phase { judging, connecting, relay };
enum class Kind { undecided, tls, http, h2 };  // h2: h2c, after its preface

struct Conn {
  UniqueFd agent, far;
  sockaddr_storage peer = {}, dst = {};
  std::string via;  // "ADDR:PORT" of the original destination
  uint16_t port = 0;
  Phase phase = Phase::judging;
  Kind kind = Kind::undecided;
  Clock::time_point deadline;
  Buf up;  // agent -> far; the first `ok` bytes are judged
  std::size_t ok = 0;
  Buf down;  // far -> agent (without a pipe)
  Pipe up_pipe, down_pipe;
  wire::HttpRequests http;
  wire::H2Requests h2;
  bool agent_eof = false, far_eof = false, far_shut = false, agent_shut = false;
  uint32_t agent_ev = 0, far_ev = 0;  // what epoll watches now
};

std::string addr_text(const sockaddr_storage& a) {
  char b[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET6) {
    auto* s = reinterpret_cast<const sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &s->sin6_addr, b, sizeof b);
    return "[" + std::string(b) + "]:" + std::to_string(ntohs(s->sin6_port));
  }
  auto* s = reinterpret_cast<const sockaddr_in*>(&a);
  ::inet_ntop(AF_INET, &s->sin_addr, b, sizeof b);
  return std::string(b) + ":" + std::to_string(ntohs(s->sin_port));
}

uint16_t port_of(const sockaddr_storage& a) {
  return ntohs(a.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port
                                       : reinterpret_cast<const sockaddr_in*>(&a)->sin_port);
}

bool is_loopback(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET6) {
    auto& v = reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&v) || IN6_IS_ADDR_V4MAPPED(&v) || IN6_IS_ADDR_UNSPECIFIED(&v);
  }
  uint32_t v = ntohl(reinterpret_cast<const sockaddr_in*>(&a)->sin_addr.s_addr);
  return (v >> 24) == 127 || v == 0;
}

// The address text without the port ("10.0.0.5", "fd00::5").
std::string host_text(const sockaddr_storage& a) {
  char b[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr, b, sizeof b);
  else
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&a)->sin_addr, b, sizeof b);
  return b;
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Close with a reset (SO_LINGER 0): the peer's next call gets ECONNRESET.
void reset(UniqueFd& fd) {
  if (!fd.valid()) return;
  struct linger l = {1, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
  fd.reset();
}

// https and tls entries are judged alike: the SNI (the bytes after the
// ClientHello are not read either way).
bool is_tls(capability::Protocol p) {
  return p == capability::Protocol::https || p == capability::Protocol::tls;
}

class Judge {
 public:
  Judge(const JudgeConfig& cfg, const JudgeFds& fds) : cfg_(cfg), fds_(fds) {}
  Status setup();
  int loop();

 private:
  Status listen_on(int family, UniqueFd& out);
  void on_accept(int lfd);
  void on_agent(uint64_t id, Conn& c, uint32_t ev);
  void on_far(uint64_t id, Conn& c, uint32_t ev);
  void judge(uint64_t id, Conn& c);
  bool judge_http(uint64_t id, Conn& c);
  bool judge_h2(uint64_t id, Conn& c);
  void refuse(uint64_t id, Conn& c, const std::string& what);
  void connect_far(uint64_t id, Conn& c);
  void pump(uint64_t id, Conn& c);
  bool pump_up(uint64_t id, Conn& c);
  bool pump_down(uint64_t id, Conn& c);
  uint64_t up_opaque(const Conn& c) const;
  void make_pipe(Pipe& p);
  void rearm(uint64_t id, Conn& c);
  void drop(uint64_t id);
  void watch(int fd, uint64_t key, uint32_t ev, uint32_t& now);
  bool has(capability::Protocol p, uint16_t port) const;
  bool tls_name_ok(const std::string& name, uint16_t port) const;
  bool tls_no_sni_ok(const Conn& c) const;
  bool http_host_ok(const std::string& host, uint16_t port) const;

  const JudgeConfig& cfg_;
  JudgeFds fds_;
  UniqueFd ep_, l4_, l6_;
  std::map<uint64_t, Conn> conns_;
  uint64_t next_id_ = 1;
  std::size_t pipe_fds_ = 0, max_pipe_fds_ = 0, big_pipes_ = 0;
};

Status Judge::listen_on(int family, UniqueFd& out) {
  UniqueFd s(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s.valid()) return Error::sys(errno, "judge: socket");
  int one = 1;
  ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage a = {};
  socklen_t len;
  if (family == AF_INET6) {
    ::setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&a);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(kJudgePort);
    s6->sin6_addr = in6addr_loopback;
    len = sizeof *s6;
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&a);
    s4->sin_family = AF_INET;
    s4->sin_port = htons(kJudgePort);
    s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *s4;
  }
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), len) < 0)
    return Error::sys(errno, std::string("judge: bind ") +
                                 (family == AF_INET6 ? "[::1]:" : "127.0.0.1:") +
                                 std::to_string(kJudgePort) + " in the container");
  if (::listen(s.get(), 1024) < 0) return Error::sys(errno, "judge: listen");
  out = std::move(s);
  return ok();
}

Status Judge::setup() {
  // For good: every socket the judge makes is the container's.
  if (::setns(fds_.netns, CLONE_NEWNET) < 0) return Error::sys(errno, "judge: setns");
  // splice(2) into a socket whose peer has gone raises SIGPIPE (it has no
  // MSG_NOSIGNAL): the error is handled where it comes back, as EPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  // Two sockets per connection are always possible; pipes only with what
  // is left, so that a pipe never costs a connection its accept.
  rlimit rl = {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    ::getrlimit(RLIMIT_NOFILE, &rl);
    std::size_t keep = 2 * kMaxConns + 64;
    if (rl.rlim_cur > keep)
      max_pipe_fds_ = std::min<std::size_t>(rl.rlim_cur - keep, 2 * kMaxPipes);
  }
  TRYV(listen_on(AF_INET, l4_));
  // Without IPv6 on lo (disabled in the namespace) v6 connections to a
  // judged entry stay redirected to a port nobody listens on: refused.
  if (Status st = listen_on(AF_INET6, l6_);
      !st.ok() && st.error().err() != EADDRNOTAVAIL && st.error().err() != EAFNOSUPPORT)
    return st;
  ep_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!ep_.valid()) return Error::sys(errno, "judge: epoll_create1");
  uint32_t dummy = 0;
  watch(l4_.get(), kListen4, EPOLLIN, dummy);
  dummy = 0;
  if (l6_.valid()) watch(l6_.get(), kListen6, EPOLLIN, dummy);
  dummy = 0;
  watch(fds_.init_pidfd, kInit, EPOLLIN, dummy);
  return ok();
}

void Judge::watch(int fd, uint64_t key, uint32_t ev, uint32_t& now) {
  if (ev == now || fd < 0) return;
  epoll_event e = {};
  e.events = ev;
  e.data.u64 = key;
  if (now == 0)
    ::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd, &e);
  else if (ev == 0)
    ::epoll_ctl(ep_.get(), EPOLL_CTL_DEL, fd, nullptr);
  else
    ::epoll_ctl(ep_.get(), EPOLL_CTL_MOD, fd, &e);
  now = ev;
}

bool Judge::has(capability::Protocol p, uint16_t port) const {
  for (const auto& e : cfg_.egress.entries)
    if ((e.protocol == p || (is_tls(p) && is_tls(e.protocol))) && e.port == port) return true;
  return false;
}

bool Judge::tls_name_ok(const std::string& name, uint16_t port) const {
  for (const auto& e : cfg_.egress.entries)
    if (is_tls(e.protocol) && e.port == port && !is_ipv4_literal(e.host) &&
        !is_ipv6_literal(e.host) && wire::name_allowed(e.host, name))
      return true;
  return false;
}

// No SNI: only to an https entry that names the address itself (a client
// connecting to an IP literal sends none, RFC 6066 3).
bool Judge::tls_no_sni_ok(const Conn& c) const {
  std::string a = capability::normalize_host(host_text(c.dst));
  for (const auto& e : cfg_.egress.entries)
    if (is_tls(e.protocol) && e.port == c.port &&
        (is_ipv4_literal(e.host) || is_ipv6_literal(e.host)) &&
        capability::normalize_host(e.host) == a)
      return true;
  return false;
}

bool Judge::http_host_ok(const std::string& host, uint16_t port) const {
  for (const auto& e : cfg_.egress.entries)
    if (e.protocol == capability::Protocol::http && e.port == port &&
        wire::name_allowed(e.host, host))
      return true;
  return false;
}

void Judge::on_accept(int lfd) {
  for (int i = 0; i < 64; ++i) {
    sockaddr_storage peer = {};
    socklen_t pl = sizeof peer;
    UniqueFd fd(
        ::accept4(lfd, reinterpret_cast<sockaddr*>(&peer), &pl, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd.valid()) return;
    sockaddr_storage dst = {};
    socklen_t dl = sizeof dst;
    bool v6 = peer.ss_family == AF_INET6;
    int r = v6 ? ::getsockopt(fd.get(), SOL_IPV6, kOrigDst6, &dst, &dl)
               : ::getsockopt(fd.get(), SOL_IP, SO_ORIGINAL_DST, &dst, &dl);
    // Not redirected (a direct connect), or to a local address: never
    // relayed anywhere.
    if (r < 0 || is_loopback(dst) || conns_.size() >= kMaxConns) {
      reset(fd);
      continue;
    }
    uint64_t id = next_id_++;
    Conn& c = conns_[id];
    c.agent = std::move(fd);
    c.peer = peer;
    c.dst = dst;
    c.port = port_of(dst);
    c.via = addr_text(dst);
    c.deadline = Clock::now() + std::chrono::milliseconds(kFirstFlightMs);
    set_nodelay(c.agent.get());
    rearm(id, c);
  }
}

void Judge::refuse(uint64_t id, Conn& c, const std::string& what) {
  if (cfg_.on_refused) {
    WireRefusal w;
    w.requested = what + " via " + c.via;
    w.agent = c.peer;
    try {
      cfg_.on_refused(w);
    } catch (...) {
    }
  }
  reset(c.agent);
  reset(c.far);
  drop(id);
}

// The first flight so far: decided, refused, or wait.
void Judge::judge(uint64_t id, Conn& c) {
  if (c.up.size() == 0) {
    if (c.agent_eof) drop(id);  // connected and closed, said nothing: not a request
    return;
  }
  if (c.kind == Kind::undecided) {
    bool tls = has(capability::Protocol::https, c.port);
    bool http = has(capability::Protocol::http, c.port);
    c.kind = tls && (!http || wire::looks_like_tls(c.up.data()[0])) ? Kind::tls : Kind::http;
  }
  if (c.kind == Kind::http || c.kind == Kind::h2) {
    if (!(c.kind == Kind::http ? judge_http(id, c) : judge_h2(id, c)))
      return;  // refused: c is gone
    // h2c: not on its preface and SETTINGS alone; on its first judged request.
    if (c.ok > 0 && (c.kind == Kind::http || c.h2.accepted())) return connect_far(id, c);
    if (c.agent_eof || c.up.size() >= kBuf) return refuse(id, c, "not http (incomplete request)");
    return;
  }
  wire::TlsResult t = wire::client_hello(c.up.data(), c.up.size());
  switch (t.what) {
    case wire::Tls::need_more:
      if (c.agent_eof) return refuse(id, c, "tls malformed client hello (ended early)");
      return;
    case wire::Tls::sni:
      if (!tls_name_ok(t.name, c.port)) return refuse(id, c, "tls sni=" + t.name);
      break;
    case wire::Tls::no_sni:
      if (!tls_no_sni_ok(c)) return refuse(id, c, "tls no sni");
      break;
    case wire::Tls::ech:
      return refuse(id, c, "tls ech (encrypted client hello cannot be checked)");
    case wire::Tls::not_tls:
      return refuse(id, c, "not tls");
    case wire::Tls::malformed:
      return refuse(id, c, "tls malformed client hello (" + t.name + ")");
    case wire::Tls::too_large:
      return refuse(
          id, c, "tls client hello over " + std::to_string(wire::kMaxClientHello / 1024) + " KiB");
  }
  c.ok = c.up.size();  // judged once: the rest of a TLS stream is not read
  connect_far(id, c);
}

// Advances c.ok over the judged requests; false when one was refused (the
// connection is gone then).
bool Judge::judge_http(uint64_t id, Conn& c) {
  for (;;) {
    wire::HttpStep s = c.http.next(c.up.data() + c.ok, c.up.size() - c.ok);
    switch (s.what) {
      case wire::Http::need_more:
        return true;
      case wire::Http::forward:
        c.ok += s.n;
        continue;
      case wire::Http::host:
        if (!http_host_ok(s.host, c.port)) {
          refuse(id, c, "http host=" + s.host);
          return false;
        }
        c.http.accept_head();
        continue;
      case wire::Http::no_host:
        refuse(id, c, "http no host");
        return false;
      case wire::Http::h2c:  // the preface (prior knowledge, or after Upgrade: h2c)
        c.kind = Kind::h2;
        return judge_h2(id, c);
      case wire::Http::malformed:
        refuse(id, c,
               std::string(c.phase == Phase::judging ? "not http (" : "http malformed (") + s.why +
                   ")");
        return false;
      case wire::Http::too_large:
        refuse(id, c,
               "http request head over " + std::to_string(wire::kMaxHttpHead / 1024) + " KiB");
        return false;
    }
  }
}

// h2c: every request's :authority (and host), as judge_http does for
// HTTP/1.1; false when one was refused.
bool Judge::judge_h2(uint64_t id, Conn& c) {
  for (;;) {
    wire::H2Step s = c.h2.next(c.up.data() + c.ok, c.up.size() - c.ok);
    switch (s.what) {
      case wire::H2::need_more:
        return true;
      case wire::H2::forward:
        c.ok += s.n;
        continue;
      case wire::H2::authority:
        if (!http_host_ok(s.host, c.port)) {
          refuse(id, c, "http h2c authority=" + s.host);
          return false;
        }
        c.h2.accept_head();
        continue;
      case wire::H2::no_authority:
        refuse(id, c, "http h2c no authority");
        return false;
      case wire::H2::malformed:
        refuse(id, c, "http h2c malformed (" + s.why + ")");
        return false;
      case wire::H2::too_large:
        refuse(id, c,
               "http h2c header block over " + std::to_string(wire::kMaxH2Block / 1024) + " KiB");
        return false;
    }
  }
}

// To the original destination, and nowhere else; marked so that the
// output chain lets this socket (and only a marked one) reach the judge
// set's element.
void Judge::connect_far(uint64_t id, Conn& c) {
  UniqueFd s(::socket(c.dst.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  uint32_t mark = kJudgeMark;
  socklen_t len = c.dst.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (!s.valid() || ::setsockopt(s.get(), SOL_SOCKET, SO_MARK, &mark, sizeof mark) < 0 ||
      (::connect(s.get(), reinterpret_cast<const sockaddr*>(&c.dst), len) < 0 &&
       errno != EINPROGRESS)) {
    reset(c.agent);
    return drop(id);
  }
  set_nodelay(s.get());
  c.far = std::move(s);
  c.phase = Phase::connecting;
  c.deadline = Clock::now() + std::chrono::milliseconds(kConnectMs);
  rearm(id, c);
}

namespace {
// recv() into the end of b, at most `room` bytes: the count, 0 at EOF, -1
// with errno.
ssize_t recv_into(int fd, Buf& b, std::size_t room) {
  uint8_t* p = b.space(room);
  if (room == 0) {
    errno = EAGAIN;
    return -1;
  }
  ssize_t n = ::recv(fd, p, room, MSG_DONTWAIT);
  if (n > 0) b.commit(static_cast<std::size_t>(n));
  return n;
}
bool again(int e) {
  return e == EAGAIN || e == EWOULDBLOCK || e == EINTR;
}
}  // namespace

void Judge::on_agent(uint64_t id, Conn& c, uint32_t ev) {
  // Connecting: the agent is not read (not watched) until the far end is there.
  if (c.phase != Phase::judging) return pump(id, c);
  if ((ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) && !c.agent_eof) {
    std::size_t room = kBuf - std::min(kBuf, c.up.size());
    if (room > 0) {
      ssize_t n = recv_into(c.agent.get(), c.up, room);
      if (n == 0) c.agent_eof = true;
      if (n < 0 && !again(errno)) {  // the agent reset: so does the far end
        reset(c.far);
        return drop(id);
      }
    }
  }
  judge(id, c);
}

void Judge::on_far(uint64_t id, Conn& c, uint32_t) {
  if (c.phase == Phase::connecting) {
    int err = 0;
    socklen_t el = sizeof err;
    ::getsockopt(c.far.get(), SOL_SOCKET, SO_ERROR, &err, &el);
    if (err) {  // refused or unreachable: the agent's connection is reset
      reset(c.agent);
      return drop(id);
    }
    c.phase = Phase::relay;
    make_pipe(c.down_pipe);
    make_pipe(c.up_pipe);
  }
  pump(id, c);
}

namespace {
// splice(2) between a socket and a pipe, never blocking: the count, 0 at
// the source's EOF, -1 with errno.
ssize_t splice_some(int in, int out, std::size_t len) {
  return ::splice(in, nullptr, out, nullptr, len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
}

// What one direction has taken in, out to `to`: the first *len bytes of
// the buffer (only while the pipe is empty: order is kept), then the
// pipe's. False on an error other than "would block"; *moved says whether
// a byte went.
bool drain(int to, Buf& b, std::size_t* len, Pipe& p, bool* moved) {
  while (*len > 0 && p.n == 0) {
    ssize_t n = ::send(to, b.data(), *len, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && again(errno)) break;
    if (n < 0) return false;
    b.consume(static_cast<std::size_t>(n));
    *len -= static_cast<std::size_t>(n);
    *moved = true;
  }
  if (p.n > 0) {
    ssize_t n = splice_some(p.r.get(), to, p.n);
    if (n < 0 && !again(errno)) return false;
    if (n > 0) {
      p.n -= static_cast<std::size_t>(n);
      p.stalled = false;
      *moved = true;
    }
  }
  return true;
}
}  // namespace

// How many of the agent's next bytes go by unread: all of a TLS stream
// after its ClientHello, an HTTP body's or chunk's rest; 0 while a buffer
// still holds bytes (they go first, and a head in them is parsed).
uint64_t Judge::up_opaque(const Conn& c) const {
  if (c.up.size() > 0) return 0;
  return c.kind == Kind::tls  ? UINT64_MAX
         : c.kind == Kind::h2 ? c.h2.opaque_left()
                              : c.http.opaque_left();
}

// Agent -> far end, one wake-up's worth; false when the connection is gone.
// Order is kept: the buffer is sent only while the pipe is empty, and the
// pipe is filled only while the buffer is empty.
bool Judge::pump_up(uint64_t id, Conn& c) {
  Pipe& p = c.up_pipe;
  for (int round = 0; round < kSpliceRounds; ++round) {
    bool moved = false;
    if (!drain(c.far.get(), c.up, &c.ok, p, &moved)) {
      reset(c.agent);
      drop(id);
      return false;
    }
    if (c.agent_eof) break;
    uint64_t opaque = up_opaque(c);
    ssize_t n;
    if (opaque > 0 && p.valid()) {
      if (!p.room()) break;
      n = splice_some(c.agent.get(), p.w.get(), std::min<uint64_t>(opaque, p.cap - p.n));
      if (n > 0) {
        p.n += static_cast<std::size_t>(n);
        if (c.kind == Kind::http) c.http.skip(static_cast<uint64_t>(n));
        if (c.kind == Kind::h2) c.h2.skip(static_cast<uint64_t>(n));
      } else if (n < 0 && again(errno) && p.n > 0) {
        p.stalled = true;
      }
    } else {
      n = recv_into(c.agent.get(), c.up, kBuf - std::min(kBuf, c.up.size()));
      if (n > 0) {
        if (c.kind == Kind::http || c.kind == Kind::h2) {
          if (!(c.kind == Kind::http ? judge_http(id, c) : judge_h2(id, c)))
            return false;  // refused: c is gone
        } else {
          c.ok = c.up.size();
        }
      }
    }
    if (n == 0) c.agent_eof = true;
    if (n < 0 && !again(errno)) {  // the agent reset: so does the far end
      reset(c.far);
      drop(id);
      return false;
    }
    if (n <= 0 && !moved) break;
  }
  if (c.agent_eof && c.ok == 0 && p.n == 0 && !c.far_shut) {
    // An incomplete request at the end is never sent.
    c.up.consume(c.up.size());
    ::shutdown(c.far.get(), SHUT_WR);
    c.far_shut = true;
  }
  return true;
}

// Far end -> agent: every byte goes by unread.
bool Judge::pump_down(uint64_t id, Conn& c) {
  Pipe& p = c.down_pipe;
  for (int round = 0; round < kSpliceRounds; ++round) {
    bool moved = false;
    std::size_t len = c.down.size();  // the far end's bytes are all "judged"
    if (!drain(c.agent.get(), c.down, &len, p, &moved)) {
      reset(c.far);
      drop(id);
      return false;
    }
    if (c.far_eof) break;
    ssize_t n;
    if (p.valid()) {
      if (!p.room()) break;
      n = splice_some(c.far.get(), p.w.get(), p.cap - p.n);
      if (n > 0) p.n += static_cast<std::size_t>(n);
      if (n < 0 && again(errno) && p.n > 0) p.stalled = true;
    } else {
      n = recv_into(c.far.get(), c.down, kBuf - std::min(kBuf, c.down.size()));
    }
    if (n == 0) c.far_eof = true;
    if (n < 0 && !again(errno)) {  // the far end reset: so does the agent's
      reset(c.agent);
      drop(id);
      return false;
    }
    if (n <= 0 && !moved) break;
  }
  if (c.far_eof && c.down.size() == 0 && p.n == 0 && !c.agent_shut) {
    ::shutdown(c.agent.get(), SHUT_WR);
    c.agent_shut = true;
  }
  return true;
}

// Moves what can be moved both ways, passes half-closes on, closes when
// both directions are done.
void Judge::pump(uint64_t id, Conn& c) {
  if (c.phase != Phase::relay) return rearm(id, c);
  if (!pump_up(id, c) || !pump_down(id, c)) return;
  if (c.far_shut && c.agent_shut) return drop(id);
  rearm(id, c);
}

void Judge::rearm(uint64_t id, Conn& c) {
  uint32_t a = 0, f = 0;
  switch (c.phase) {
    case Phase::judging:
      a = c.agent_eof ? 0u : static_cast<uint32_t>(EPOLLIN);
      break;
    case Phase::connecting:
      f = EPOLLOUT;
      break;
    case Phase::relay:
      if (!c.agent_eof &&
          (up_opaque(c) > 0 && c.up_pipe.valid() ? c.up_pipe.room() : c.up.size() < kBuf))
        a |= EPOLLIN;
      if (c.down.size() > 0 || c.down_pipe.n > 0) a |= EPOLLOUT;
      if (!c.far_eof && (c.down_pipe.valid() ? c.down_pipe.room() : c.down.size() < kBuf))
        f |= EPOLLIN;
      if (c.ok > 0 || c.up_pipe.n > 0) f |= EPOLLOUT;
      break;
  }
  watch(c.agent.get(), id << 1, a, c.agent_ev);
  watch(c.far.get(), (id << 1) | 1, f, c.far_ev);
}

void Judge::drop(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  for (const Pipe* p : {&it->second.up_pipe, &it->second.down_pipe}) {
    if (p->valid()) pipe_fds_ -= 2;
    if (p->big) --big_pipes_;
  }
  conns_.erase(it);  // fds close (the sockets leave epoll)
}

void Judge::make_pipe(Pipe& p) {
  if (pipe_fds_ + 2 > max_pipe_fds_) return;
  int fd[2];
  if (::pipe2(fd, O_CLOEXEC | O_NONBLOCK) < 0) return;
  p.r.reset(fd[0]);
  p.w.reset(fd[1]);
  pipe_fds_ += 2;
  if (big_pipes_<kBigPipes&& ::fcntl(p.w.get(), F_SETPIPE_SZ, kPipeBytes)> 0) {
    p.big = true;  // (EPERM past pipe-user-pages-soft: it stays as it is)
    ++big_pipes_;
  }
  int cap = ::fcntl(p.w.get(), F_GETPIPE_SZ);
  p.cap = cap > 0 ? static_cast<std::size_t>(cap) : 4096;
}

int Judge::loop() {
  std::vector<epoll_event> evs(256);
  for (;;) {
    auto now = Clock::now();
    auto next = now + std::chrono::seconds(5);
    std::vector<uint64_t> late;
    for (auto& [id, c] : conns_) {
      if (c.phase == Phase::relay) continue;
      if (c.deadline <= now)
        late.push_back(id);
      else
        next = std::min(next, c.deadline);
    }
    for (uint64_t id : late) {
      auto it = conns_.find(id);
      if (it == conns_.end()) continue;
      Conn& c = it->second;
      if (c.phase == Phase::connecting) {  // the far end never answered
        reset(c.agent);
        drop(id);
        continue;
      }
      std::string proto = c.kind == Kind::http || c.kind == Kind::h2 ? "http"
                          : c.kind == Kind::tls                      ? "tls"
                          : has(capability::Protocol::https, c.port) ? "tls"
                                                                     : "http";
      std::string secs = std::to_string(kFirstFlightMs / 1000) + " s";
      refuse(id, c,
             c.up.size() == 0 ? proto + " nothing sent within " + secs
                              : proto + " first flight incomplete after " + secs);
    }
    int timeout = static_cast<int>(
                      std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count()) +
                  1;
    int n = ::epoll_wait(ep_.get(), evs.data(), static_cast<int>(evs.size()), timeout);
    if (n < 0) {
      if (errno == EINTR) continue;
      return 2;
    }
    for (int i = 0; i < n; ++i) {
      uint64_t key = evs[i].data.u64;
      if (key == kInit) return 0;  // the container is gone
      if (key == kListen4 || key == kListen6) {
        on_accept(key == kListen4 ? l4_.get() : l6_.get());  // NOLINT
        continue;
      }
      auto it = conns_.find(key >> 1);
      if (it == conns_.end()) continue;
      if (key & 1)
        on_far(it->first, it->second, evs[i].events);
      else
        on_agent(it->first, it->second, evs[i].events);
    }
  }
}

void say(int fd, const std::string& s) {
  if (fd < 0) return;
  (void)!::write(fd, s.data(), s.size());
  ::close(fd);
}

}  // namespace

bool wants_judge(const capability::Egress& egress) {
  if (egress.any) return false;
  for (const auto& e : egress.entries)
    if (is_tls(e.protocol) || e.protocol == capability::Protocol::http) return true;
  return false;
}

int judge_main(const JudgeConfig& cfg, const JudgeFds& fds) noexcept {
  try {
    Judge j(cfg, fds);
    Status st = j.setup();
    if (st.ok() && cfg.confine) {
      st = cfg.confine(0);
      if (!st.ok()) st = std::move(st).error().wrap("confine the judge");
    }
    if (!st.ok()) {
      say(fds.ready, "E " + st.error().what() + "\n");
      return 1;
    }
    say(fds.ready, "R\n");
    int rc = j.loop();
    if (cfg.on_exit) cfg.on_exit();
    return rc;
  } catch (const std::exception& e) {
    say(fds.ready, std::string("E judge: ") + e.what() + "\n");
    return 2;
  } catch (...) {
    return 2;
  }
}

}  // namespace comet::egress
