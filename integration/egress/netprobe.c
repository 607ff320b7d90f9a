/* netprobe: the egress suite's in-container probe (static, no libc DNS).
 *
 *   netprobe ENTRYPOINT CMD [ARG...] [-- CMD [ARG...]]...
 *
 * ENTRYPOINT is ignored (a pack runs "interpreter entrypoint args"). Each
 * command prints one JSON line {"cmd":..,"result":..,...}; result is "ok"
 * or the errno name (ETIMEDOUT for a timeout). Commands:
 *   resolve NAME [a|aaaa]        ask the resolver in /etc/resolv.conf;
 *                                result = rcode name, "addrs" = answers
 *   gai NAME                     glibc's getaddrinfo(NAME, AF_INET): result
 *                                "ok" or the EAI_ name (what an agent sees)
 *   tcp HOST PORT                HOST a name (resolved as above) or an IP
 *                                literal; connect (2 s), then read a line
 *   udp IP PORT                  connected send, then recv (1 s): "send"
 *                                and "recv" results
 *   dnsudp SERVER NAME           a DNS query over UDP to SERVER:53
 *   dnstcp SERVER                a TCP connect to SERVER:53
 *   raw | packet                 socket(AF_INET, SOCK_RAW) / AF_PACKET
 *   uring IP PORT                IORING_OP_CONNECT through raw io_uring
 *   nft                          an NFT_MSG_NEWTABLE batch over netlink
 *   unshare                      unshare(CLONE_NEWNET), then NEWUSER|NEWNET
 *   sleep SECONDS
 *   waitfile PATH                wait (10 s) for PATH to exist
 *   halfclose HOST PORT MIB ROUNDS   ROUNDS connections to a half-close
 *                                echo (inet_server.py, 5003): MIB MiB up,
 *                                shutdown(SHUT_WR), read to EOF; the reply
 *                                must be SHA-256 of the upload, then the
 *                                upload with every byte inverted (both
 *                                checked by SHA-256). "ok"/"rounds" count;
 *                                "fails" says how the first ones went wrong
 *                                (ETIMEDOUT: nothing for 5 s); it stops
 *                                after 3 failures in a row
 * and, for bench/egress.py:
 *   connbench IP PORT N          N blocking connects+closes: median/p90 us
 *   bulk IP PORT MIB             send "<bytes>\n" then MIB MiB to a sink that
 *                                answers the count: MiB/s
 *   dnsbench NAME N              N A queries to the resolver (a "%d" in NAME
 *                                takes the query's index): median/p90 us
 * The exit status is 0; the test reads the lines. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <net/ethernet.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *ename(int e) {
  switch (e) {
#define E(x) case x: return #x;
    E(EPERM) E(EACCES) E(ECONNREFUSED) E(ETIMEDOUT) E(ENETUNREACH) E(EHOSTUNREACH)
    E(EAFNOSUPPORT) E(EPROTONOSUPPORT) E(ENOSYS) E(EINVAL) E(ENOENT) E(ECONNRESET)
    E(EADDRNOTAVAIL) E(ENOTCONN) E(EAGAIN) E(EBADF) E(ENOTSUP) E(ESOCKTNOSUPPORT)
#undef E
    default: {
      static char b[16];
      snprintf(b, sizeof b, "E%d", e);
      return b;
    }
  }
}

static void out(const char *cmd, const char *arg, const char *result, const char *extra) {
  printf("{\"cmd\":\"%s\",\"arg\":\"%s\",\"result\":\"%s\"%s%s}\n", cmd, arg ? arg : "", result,
         extra ? "," : "", extra ? extra : "");
  fflush(stdout);
}

/* --- a minimal DNS client --------------------------------------------------- */

static int nameserver(struct sockaddr_in *sa) {
  memset(sa, 0, sizeof *sa);
  sa->sin_family = AF_INET;
  sa->sin_port = htons(53);
  FILE *f = fopen("/etc/resolv.conf", "r");
  char line[256];
  int found = 0;
  while (f && fgets(line, sizeof line, f)) {
    char ip[64];
    if (sscanf(line, "nameserver %63s", ip) == 1 && inet_pton(AF_INET, ip, &sa->sin_addr) == 1) {
      found = 1;
      break;
    }
  }
  if (f) fclose(f);
  return found;
}

static int build_query(unsigned char *q, const char *name, int type, uint16_t id) {
  int n = 0;
  q[n++] = id >> 8; q[n++] = id & 0xff;
  q[n++] = 0x01; q[n++] = 0x00;      /* RD */
  q[n++] = 0; q[n++] = 1;            /* qdcount */
  memset(q + n, 0, 6); n += 6;
  const char *p = name;
  while (*p) {
    const char *dot = strchr(p, '.');
    int len = dot ? (int)(dot - p) : (int)strlen(p);
    if (len <= 0 || len > 63 || n + len + 6 > 500) return -1;
    q[n++] = (unsigned char)len;
    memcpy(q + n, p, (size_t)len); n += len;
    p += len;
    if (*p == '.') p++;
  }
  q[n++] = 0;
  q[n++] = 0; q[n++] = (unsigned char)type;
  q[n++] = 0; q[n++] = 1;
  return n;
}

static int skip_name(const unsigned char *m, int len, int p) {
  while (p < len) {
    if ((m[p] & 0xc0) == 0xc0) return p + 2;
    if (m[p] == 0) return p + 1;
    p += m[p] + 1;
  }
  return -1;
}

/* rcode, or -errno; addresses (text) appended to addrs as a JSON list body. */
static int dns_ask(const struct sockaddr_in *server, const char *name, int type, char *addrs,
                   size_t addrs_len, unsigned char (*first)[16], int *nfirst) {
  unsigned char q[512], r[1500];
  uint16_t id = (uint16_t)(getpid() ^ time(NULL));
  int qn = build_query(q, name, type, id);
  if (qn < 0) return -EINVAL;
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -errno;
  if (connect(s, (const struct sockaddr *)server, sizeof *server) < 0 || send(s, q, (size_t)qn, 0) < 0) {
    int e = errno;
    close(s);
    return -e;
  }
  struct pollfd pf = {s, POLLIN, 0};
  int pr = poll(&pf, 1, 2000);
  if (pr <= 0) {
    close(s);
    return -ETIMEDOUT;
  }
  ssize_t n = recv(s, r, sizeof r, 0);
  int e = errno;
  close(s);
  if (n < 0) return -e;
  if (n < 12) return -EINVAL;
  int rcode = r[3] & 0xf;
  int an = (r[6] << 8) | r[7];
  int p = skip_name(r, (int)n, 12);
  if (p < 0) return -EINVAL;
  p += 4;
  addrs[0] = 0;
  if (nfirst) *nfirst = 0;
  for (int i = 0; i < an && p + 10 <= n; i++) {
    p = skip_name(r, (int)n, p);
    if (p < 0 || p + 10 > n) break;
    int t = (r[p] << 8) | r[p + 1];
    int rdlen = (r[p + 8] << 8) | r[p + 9];
    p += 10;
    if (p + rdlen > n) break;
    char txt[64] = "";
    if (t == 1 && rdlen == 4) inet_ntop(AF_INET, r + p, txt, sizeof txt);
    if (t == 28 && rdlen == 16) inet_ntop(AF_INET6, r + p, txt, sizeof txt);
    if (txt[0]) {
      if (nfirst && *nfirst == 0) {
        memcpy(first[0], r + p, (size_t)rdlen);
        *nfirst = rdlen;
      }
      size_t l = strlen(addrs);
      snprintf(addrs + l, addrs_len - l, "%s\"%s\"", l ? "," : "", txt);
    }
    p += rdlen;
  }
  return rcode;
}

static const char *rcode_name(int rc) {
  static const char *names[] = {"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"};
  return rc >= 0 && rc <= 5 ? names[rc] : "RCODE?";
}

/* --- connects ------------------------------------------------------------------ */

/* Fills sa from an IP literal or a name (A through the resolver). */
static int target(const char *host, int port, struct sockaddr_storage *sa, socklen_t *len,
                  char *why, size_t why_len) {
  memset(sa, 0, sizeof *sa);
  struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
  if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    *len = sizeof *s4;
    return 0;
  }
  if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)port);
    *len = sizeof *s6;
    return 0;
  }
  struct sockaddr_in ns;
  if (!nameserver(&ns)) {
    snprintf(why, why_len, "NONAMESERVER");
    return -1;
  }
  char addrs[512];
  unsigned char first[1][16];
  int nfirst = 0;
  int rc = dns_ask(&ns, host, 1, addrs, sizeof addrs, first, &nfirst);
  if (rc != 0 || nfirst != 4) {
    snprintf(why, why_len, "DNS_%s", rc < 0 ? ename(-rc) : rcode_name(rc));
    return -1;
  }
  s4->sin_family = AF_INET;
  s4->sin_port = htons((uint16_t)port);
  memcpy(&s4->sin_addr, first[0], 4);
  *len = sizeof *s4;
  return 0;
}

static int connect_timeout(int s, const struct sockaddr *sa, socklen_t len, int ms) {
  int fl = fcntl(s, F_GETFL);
  fcntl(s, F_SETFL, fl | O_NONBLOCK);
  if (connect(s, sa, len) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  struct pollfd pf = {s, POLLOUT, 0};
  int r = poll(&pf, 1, ms);
  if (r == 0) return ETIMEDOUT;
  int err = 0;
  socklen_t el = sizeof err;
  getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el);
  fcntl(s, F_SETFL, fl);
  return err;
}

static void cmd_tcp(const char *host, const char *port_s) {
  char arg[300];
  snprintf(arg, sizeof arg, "%s:%s", host, port_s);
  struct sockaddr_storage sa;
  socklen_t len;
  char why[64];
  if (target(host, atoi(port_s), &sa, &len, why, sizeof why) < 0) {
    out("tcp", arg, why, NULL);
    return;
  }
  int s = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    out("tcp", arg, ename(errno), NULL);
    return;
  }
  int e = connect_timeout(s, (struct sockaddr *)&sa, len, 2000);
  if (e) {
    close(s);
    out("tcp", arg, ename(e), NULL);
    return;
  }
  char buf[256] = "";
  struct pollfd pf = {s, POLLIN, 0};
  ssize_t n = 0;
  if (poll(&pf, 1, 2000) > 0) n = recv(s, buf, sizeof buf - 1, 0);
  close(s);
  if (n < 0) n = 0;
  buf[n] = 0;
  for (ssize_t i = 0; i < n; i++)
    if (buf[i] == '"' || buf[i] == '\\' || (unsigned char)buf[i] < 0x20) buf[i] = ' ';
  char extra[320];
  snprintf(extra, sizeof extra, "\"greeting\":\"%s\"", buf);
  out("tcp", arg, "ok", extra);
}

static void cmd_udp(const char *ip, const char *port_s) {
  char arg[300];
  snprintf(arg, sizeof arg, "%s:%s", ip, port_s);
  struct sockaddr_storage sa;
  socklen_t len;
  char why[64];
  if (target(ip, atoi(port_s), &sa, &len, why, sizeof why) < 0) {
    out("udp", arg, why, NULL);
    return;
  }
  int s = socket(sa.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0 || connect(s, (struct sockaddr *)&sa, len) < 0) {
    out("udp", arg, ename(errno), NULL);
    if (s >= 0) close(s);
    return;
  }
  const char *send_r = "ok", *recv_r = "ok";
  if (send(s, "ping", 4, 0) < 0) send_r = ename(errno);
  char buf[64];
  struct pollfd pf = {s, POLLIN, 0};
  if (poll(&pf, 1, 1000) <= 0)
    recv_r = "ETIMEDOUT";
  else if (recv(s, buf, sizeof buf, 0) < 0)
    recv_r = ename(errno);
  close(s);
  char extra[128];
  snprintf(extra, sizeof extra, "\"send\":\"%s\",\"recv\":\"%s\"", send_r, recv_r);
  out("udp", arg, strcmp(send_r, "ok") ? send_r : recv_r, extra);
}

static void cmd_resolve(const char *name, const char *type) {
  struct sockaddr_in ns;
  if (!nameserver(&ns)) {
    out("resolve", name, "NONAMESERVER", NULL);
    return;
  }
  char addrs[1024];
  int rc = dns_ask(&ns, name, type && !strcmp(type, "aaaa") ? 28 : 1, addrs, sizeof addrs, NULL, NULL);
  char extra[1100];
  snprintf(extra, sizeof extra, "\"addrs\":[%s]", rc >= 0 ? addrs : "");
  out("resolve", name, rc < 0 ? ename(-rc) : rcode_name(rc), extra);
}

static void cmd_gai(const char *name) {
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(name, NULL, &hints, &res);
  const char *r = rc == 0                ? "ok"
                  : rc == EAI_NONAME     ? "EAI_NONAME"
                  : rc == EAI_AGAIN      ? "EAI_AGAIN"
                  : rc == EAI_FAIL       ? "EAI_FAIL"
                  : rc == EAI_NODATA     ? "EAI_NODATA"
                  : rc == EAI_SYSTEM     ? "EAI_SYSTEM"
                                         : "EAI_OTHER";
  if (res) freeaddrinfo(res);
  out("gai", name, r, NULL);
}

static void cmd_dnsudp(const char *server, const char *name) {
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(53);
  if (inet_pton(AF_INET, server, &sa.sin_addr) != 1) {
    out("dnsudp", server, "EINVAL", NULL);
    return;
  }
  char addrs[512];
  int rc = dns_ask(&sa, name, 1, addrs, sizeof addrs, NULL, NULL);
  out("dnsudp", server, rc < 0 ? ename(-rc) : rcode_name(rc), NULL);
}

static void cmd_dnstcp(const char *server) {
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(53);
  inet_pton(AF_INET, server, &sa.sin_addr);
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int e = s < 0 ? errno : connect_timeout(s, (struct sockaddr *)&sa, sizeof sa, 1500);
  if (s >= 0) close(s);
  out("dnstcp", server, e ? ename(e) : "ok", NULL);
}

static void cmd_socket(const char *what) {
  int s = !strcmp(what, "raw") ? socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP)
                               : socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
  int e = errno;
  if (s >= 0) close(s);
  out(what, "", s >= 0 ? "ok" : ename(e), NULL);
}

/* --- io_uring connect, raw syscalls -------------------------------------------- */

static void cmd_uring(const char *ip, const char *port_s) {
  char arg[300];
  snprintf(arg, sizeof arg, "%s:%s", ip, port_s);
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  int fd = (int)syscall(__NR_io_uring_setup, 4, &p);
  if (fd < 0) {
    char extra[64];
    snprintf(extra, sizeof extra, "\"stage\":\"setup\"");
    out("uring", arg, ename(errno), extra);
    return;
  }
  size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
  unsigned char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                           IORING_OFF_SQ_RING);
  unsigned char *cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                           IORING_OFF_CQ_RING);
  struct io_uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe),
                                   PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                                   IORING_OFF_SQES);
  if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) {
    out("uring", arg, ename(errno), "\"stage\":\"mmap\"");
    close(fd);
    return;
  }
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)atoi(port_s));
  inet_pton(AF_INET, ip, &sa.sin_addr);
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct io_uring_sqe *e = &sqes[0];
  memset(e, 0, sizeof *e);
  e->opcode = IORING_OP_CONNECT;
  e->fd = s;
  e->addr = (unsigned long)&sa;
  e->off = sizeof sa;
  e->user_data = 1;
  unsigned *tail = (unsigned *)(sq + p.sq_off.tail);
  unsigned *mask = (unsigned *)(sq + p.sq_off.ring_mask);
  unsigned *array = (unsigned *)(sq + p.sq_off.array);
  array[*tail & *mask] = 0;
  __atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
  int r = (int)syscall(__NR_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
  if (r < 0) {
    out("uring", arg, ename(errno), "\"stage\":\"enter\"");
    close(fd);
    close(s);
    return;
  }
  unsigned *chead = (unsigned *)(cq + p.cq_off.head);
  unsigned *cmask = (unsigned *)(cq + p.cq_off.ring_mask);
  struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
  int res = cqes[*chead & *cmask].res;
  close(fd);
  close(s);
  out("uring", arg, res == 0 ? "ok" : ename(-res), "\"stage\":\"connect\"");
}

/* --- an nft rule from inside --------------------------------------------------- */

static void put_msg(unsigned char *buf, size_t *off, uint16_t type, uint16_t flags, uint32_t seq,
                    uint8_t family, uint16_t res_id, const void *payload, size_t plen) {
  struct nlmsghdr *h = (struct nlmsghdr *)(buf + *off);
  h->nlmsg_len = (uint32_t)NLMSG_LENGTH(sizeof(struct nfgenmsg) + plen);
  h->nlmsg_type = type;
  h->nlmsg_flags = flags;
  h->nlmsg_seq = seq;
  h->nlmsg_pid = 0;
  struct nfgenmsg *g = NLMSG_DATA(h);
  g->nfgen_family = family;
  g->version = NFNETLINK_V0;
  g->res_id = htons(res_id);
  if (plen) memcpy((unsigned char *)g + sizeof *g, payload, plen);
  *off += NLMSG_ALIGN(h->nlmsg_len);
}

static void cmd_nft(void) {
  int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
  if (s < 0) {
    out("nft", "", ename(errno), "\"stage\":\"socket\"");
    return;
  }
  unsigned char buf[512] = {0};
  size_t off = 0;
  put_msg(buf, &off, NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, 1, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, NULL, 0);
  /* NFTA_TABLE_NAME "x" */
  unsigned char attr[8] = {6, 0, NFTA_TABLE_NAME, 0, 'x', 0, 0, 0};
  put_msg(buf, &off, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE,
          NLM_F_REQUEST | NLM_F_CREATE | NLM_F_ACK, 2, NFPROTO_INET, 0, attr, sizeof attr);
  put_msg(buf, &off, NFNL_MSG_BATCH_END, NLM_F_REQUEST, 3, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, NULL, 0);
  struct sockaddr_nl k = {.nl_family = AF_NETLINK};
  if (sendto(s, buf, off, 0, (struct sockaddr *)&k, sizeof k) < 0) {
    out("nft", "", ename(errno), "\"stage\":\"send\"");
    close(s);
    return;
  }
  unsigned char r[4096];
  struct pollfd pf = {s, POLLIN, 0};
  if (poll(&pf, 1, 1000) <= 0) {
    out("nft", "", "ETIMEDOUT", "\"stage\":\"ack\"");
    close(s);
    return;
  }
  ssize_t n = recv(s, r, sizeof r, 0);
  close(s);
  for (struct nlmsghdr *h = (struct nlmsghdr *)r; n > 0 && NLMSG_OK(h, (unsigned)n); h = NLMSG_NEXT(h, n)) {
    if (h->nlmsg_type == NLMSG_ERROR) {
      struct nlmsgerr *e = NLMSG_DATA(h);
      out("nft", "", e->error == 0 ? "ok" : ename(-e->error), "\"stage\":\"ack\"");
      return;
    }
  }
  out("nft", "", "ok", "\"stage\":\"noack\"");
}

static void cmd_unshare(void) {
  const char *a = unshare(CLONE_NEWNET) == 0 ? "ok" : ename(errno);
  char extra[96];
  const char *b = unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 ? "ok" : ename(errno);
  snprintf(extra, sizeof extra, "\"net\":\"%s\",\"user_net\":\"%s\"", a, b);
  out("unshare", "", strcmp(a, "ok") ? (strcmp(b, "ok") ? a : b) : a, extra);
}

static void cmd_waitfile(const char *path) {
  for (int i = 0; i < 1000; i++) {
    struct stat st;
    if (stat(path, &st) == 0) {
      out("waitfile", path, "ok", NULL);
      return;
    }
    usleep(10000);
  }
  out("waitfile", path, "ETIMEDOUT", NULL);
}

/* --- timing (half-close and the benchmarks) ------------------------------------- */

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *cmd, const char *arg, double *v, int n, int fails) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  char extra[160];
  snprintf(extra, sizeof extra, "\"n\":%d,\"fails\":%d,\"median_us\":%.1f,\"p90_us\":%.1f", n, fails,
           n ? v[n / 2] : 0.0, n ? v[(n * 9) / 10] : 0.0);
  out(cmd, arg, fails ? "EFAIL" : "ok", extra);
}

/* --- half-close, checked by SHA-256 ---------------------------------------------- */

/* SHA-256 (FIPS 180-4), small and static: the probe links no crypto library. */
typedef struct {
  uint32_t h[8];
  uint64_t len;
  unsigned char buf[64];
  size_t n;
} sha256_t;

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, r) (((x) >> (r)) | ((x) << (32 - (r))))

static void sha256_block(sha256_t *c, const unsigned char *p) {
  uint32_t w[64], a, b, cc, d, e, f, g, h;
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
           p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  a = c->h[0]; b = c->h[1]; cc = c->h[2]; d = c->h[3];
  e = c->h[4]; f = c->h[5]; g = c->h[6]; h = c->h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
    uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc));
    h = g; g = f; f = e; e = d + t1; d = cc; cc = b; b = a; a = t1 + t2;
  }
  c->h[0] += a; c->h[1] += b; c->h[2] += cc; c->h[3] += d;
  c->h[4] += e; c->h[5] += f; c->h[6] += g; c->h[7] += h;
}

static void sha256_init(sha256_t *c) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(c->h, iv, sizeof iv);
  c->len = 0;
  c->n = 0;
}

static void sha256_update(sha256_t *c, const unsigned char *p, size_t n) {
  c->len += n;
  while (n) {
    size_t k = 64 - c->n < n ? 64 - c->n : n;
    memcpy(c->buf + c->n, p, k);
    c->n += k;
    p += k;
    n -= k;
    if (c->n == 64) {
      sha256_block(c, c->buf);
      c->n = 0;
    }
  }
}

static void sha256_final(sha256_t *c, unsigned char out[32]) {
  uint64_t bits = c->len * 8;
  unsigned char pad = 0x80, zero = 0, lenb[8];
  sha256_update(c, &pad, 1);
  while (c->n != 56) sha256_update(c, &zero, 1);
  for (int i = 0; i < 8; i++) lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
  sha256_update(c, lenb, 8);
  for (int i = 0; i < 8; i++) {
    out[4 * i] = (unsigned char)(c->h[i] >> 24);
    out[4 * i + 1] = (unsigned char)(c->h[i] >> 16);
    out[4 * i + 2] = (unsigned char)(c->h[i] >> 8);
    out[4 * i + 3] = (unsigned char)c->h[i];
  }
}

static void sha256(const unsigned char *p, size_t n, unsigned char out[32]) {
  sha256_t c;
  sha256_init(&c);
  sha256_update(&c, p, n);
  sha256_final(&c, out);
}

/* One round: "ok", or what went wrong, in why. */
static int halfclose_round(const struct sockaddr_storage *sa, socklen_t len, size_t size,
                           uint64_t seed, char *why, size_t why_len) {
  unsigned char *up = malloc(size), *want = malloc(size), *got = malloc(size);
  int s = -1, ok = 0;
  if (!up || !want || !got) {
    snprintf(why, why_len, "ENOMEM");
    goto out;
  }
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1; /* xorshift64* */
  for (size_t i = 0; i < size; i++) {
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    up[i] = (unsigned char)((x * 0x2545f4914f6cdd1dULL) >> 56);
    want[i] = (unsigned char)~up[i];
  }
  s = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int e = s < 0 ? errno : connect_timeout(s, (const struct sockaddr *)sa, len, 2000);
  if (e) {
    snprintf(why, why_len, "connect %s", ename(e));
    goto out;
  }
  /* Send all while reading what comes (the echo starts only after our FIN,
     but a broken path may send early); then half-close, read to EOF. */
  size_t sent = 0, head = 0, body = 0, extra = 0;
  unsigned char digest[32];
  int fin = 0;
  double t0 = now_us();
  for (;;) {
    struct pollfd pf = {s, (short)(POLLIN | (sent < size ? POLLOUT : 0)), 0};
    int r = poll(&pf, 1, 5000);
    if (r == 0) {
      snprintf(why, why_len, "ETIMEDOUT (sent %zu, got %zu)", sent, head + body + extra);
      goto out;
    }
    if (r < 0) continue;
    if ((pf.revents & POLLOUT) && sent < size) {
      ssize_t w = send(s, up + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (w < 0 && errno != EAGAIN) {
        snprintf(why, why_len, "send %s", ename(errno));
        goto out;
      }
      if (w > 0) sent += (size_t)w;
      if (sent == size && !fin) {
        shutdown(s, SHUT_WR);
        fin = 1;
      }
    }
    if (pf.revents & (POLLIN | POLLHUP | POLLERR)) {
      unsigned char tmp[1 << 16];
      ssize_t k = recv(s, tmp, sizeof tmp, MSG_DONTWAIT);
      if (k < 0 && errno == EAGAIN) continue;
      if (k < 0) {
        snprintf(why, why_len, "recv %s (sent %zu, got %zu)", ename(errno), sent, head + body + extra);
        goto out;
      }
      if (k == 0) break;
      for (ssize_t i = 0; i < k; i++) {
        if (head < 32) digest[head++] = tmp[i];
        else if (body < size) got[body++] = tmp[i];
        else extra++;
      }
    }
    if (now_us() - t0 > 30e6) {
      snprintf(why, why_len, "ETIMEDOUT (30 s; sent %zu, got %zu)", sent, head + body + extra);
      goto out;
    }
  }
  if (!fin) {
    snprintf(why, why_len, "EOF before the upload ended (sent %zu)", sent);
    goto out;
  }
  unsigned char d_up[32], d_want[32], d_got[32];
  sha256(up, size, d_up);
  sha256(want, size, d_want);
  sha256(got, body, d_got);
  if (head + body + extra != 32 + size)
    snprintf(why, why_len, "got %zu bytes, want %zu", head + body + extra, 32 + size);
  else if (memcmp(digest, d_up, 32))
    snprintf(why, why_len, "the server's SHA-256 of the upload differs");
  else if (memcmp(d_got, d_want, 32))
    snprintf(why, why_len, "SHA-256 of the download differs");
  else
    ok = 1;
out:
  if (s >= 0) close(s);
  free(up);
  free(want);
  free(got);
  return ok;
}

static void cmd_halfclose(const char *host, const char *port_s, const char *mib_s,
                          const char *rounds_s) {
  char arg[300];
  snprintf(arg, sizeof arg, "%s:%s", host, port_s);
  size_t size = (size_t)atol(mib_s) << 20;
  int rounds = atoi(rounds_s), good = 0, done = 0, in_a_row = 0;
  struct sockaddr_storage sa;
  socklen_t len;
  char why[128], fails[1024] = "";
  if (target(host, atoi(port_s), &sa, &len, why, sizeof why) < 0) {
    out("halfclose", arg, why, NULL);
    return;
  }
  for (int i = 0; i < rounds && in_a_row < 3; i++, done++) {
    if (halfclose_round(&sa, len, size, (uint64_t)i + 1, why, sizeof why)) {
      good++;
      in_a_row = 0;
      continue;
    }
    in_a_row++;
    size_t l = strlen(fails);
    if (l < sizeof fails - 200)
      snprintf(fails + l, sizeof fails - l, "%s\"round %d: %s\"", l ? "," : "", i, why);
  }
  char extra[1200];
  snprintf(extra, sizeof extra, "\"ok\":%d,\"done\":%d,\"rounds\":%d,\"fails\":[%s]", good, done,
           rounds, fails);
  out("halfclose", arg, good == rounds ? "ok" : "EFAIL", extra);
}

/* --- benchmarks ---------------------------------------------------------------- */

static void cmd_connbench(const char *ip, const char *port_s, const char *n_s) {
  int n = atoi(n_s);
  if (n <= 0 || n > 100000) n = 100;
  double *v = calloc((size_t)n, sizeof *v);
  struct sockaddr_storage sa;
  socklen_t len;
  char why[64];
  int fails = 0, k = 0;
  if (!v || target(ip, atoi(port_s), &sa, &len, why, sizeof why) < 0) {
    out("connbench", ip, "EINVAL", NULL);
    free(v);
    return;
  }
  for (int i = 0; i < n; i++) {
    int s = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    double t0 = now_us();
    int r = connect(s, (struct sockaddr *)&sa, len);
    double t1 = now_us();
    close(s);
    if (r < 0) fails++;
    else v[k++] = t1 - t0;
  }
  report("connbench", ip, v, k, fails);
  free(v);
}

static void cmd_bulk(const char *ip, const char *port_s, const char *mib_s) {
  long mib = atol(mib_s);
  struct sockaddr_storage sa;
  socklen_t len;
  char why[64];
  if (target(ip, atoi(port_s), &sa, &len, why, sizeof why) < 0) {
    out("bulk", ip, why, NULL);
    return;
  }
  int s = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(s, (struct sockaddr *)&sa, len) < 0) {
    out("bulk", ip, ename(errno), NULL);
    close(s);
    return;
  }
  static char buf[1 << 16];
  memset(buf, 'x', sizeof buf);
  long left = mib << 20;
  double t0 = now_us();
  char head[32];
  int hl = snprintf(head, sizeof head, "%ld\n", left);
  if (send(s, head, (size_t)hl, 0) != hl) {
    out("bulk", ip, ename(errno), NULL);
    close(s);
    return;
  }
  while (left > 0) {
    ssize_t w = send(s, buf, (size_t)(left < (long)sizeof buf ? left : (long)sizeof buf), 0);
    if (w <= 0) break;
    left -= w;
  }
  char ack[64] = "";
  ssize_t r = 0;
  struct pollfd pf = {s, POLLIN, 0};
  while (poll(&pf, 1, 10000) > 0) {  /* the count line, then EOF */
    ssize_t k = recv(s, ack + r, sizeof ack - 1 - (size_t)r, 0);
    if (k <= 0) break;
    r += k;
    if (memchr(ack, '\n', (size_t)r)) break;
  }
  double t1 = now_us();
  close(s);
  if (r < 0) r = 0;
  ack[r] = 0;
  char extra[128];
  snprintf(extra, sizeof extra, "\"mib_s\":%.1f,\"acked\":%ld", (double)mib / ((t1 - t0) / 1e6),
           atol(ack));
  out("bulk", ip, left == 0 && atol(ack) == (mib << 20) ? "ok" : "EFAIL", extra);
}

static void cmd_dnsbench(const char *pattern, const char *n_s) {
  int n = atoi(n_s);
  if (n <= 0 || n > 100000) n = 100;
  struct sockaddr_in ns;
  double *v = calloc((size_t)n, sizeof *v);
  if (!v || !nameserver(&ns)) {
    out("dnsbench", pattern, "NONAMESERVER", NULL);
    free(v);
    return;
  }
  int fails = 0, k = 0;
  for (int i = 0; i < n; i++) {
    char name[256], addrs[256];
    const char *pct = strstr(pattern, "%d");
    if (pct)
      snprintf(name, sizeof name, "%.*s%d%s", (int)(pct - pattern), pattern, i, pct + 2);
    else
      snprintf(name, sizeof name, "%s", pattern);
    double t0 = now_us();
    int rc = dns_ask(&ns, name, 1, addrs, sizeof addrs, NULL, NULL);
    double t1 = now_us();
    if (rc != 0) fails++;
    else v[k++] = t1 - t0;
  }
  report("dnsbench", pattern, v, k, fails);
  free(v);
}

/* listen PORT SECS: a TCP listener on 0.0.0.0:PORT (and a UDP socket bound
 * to it), then wait SECS for a connection or a datagram from anyone:
 * "accepted"/"received" (with the peer), or "timeout". A file
 * /tmp/listening is not made: the test waits a fixed time. */
static void cmd_listen(const char *port_s, const char *secs_s) {
  int port = atoi(port_s);
  int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  int one = 1;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (t < 0 || u < 0) { out("listen", port_s, ename(errno), NULL); return; }
  setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(t, (struct sockaddr *)&sa, sizeof sa) || listen(t, 4) ||
      bind(u, (struct sockaddr *)&sa, sizeof sa)) {
    out("listen", port_s, ename(errno), NULL);
    return;
  }
  struct pollfd p[2] = {{t, POLLIN, 0}, {u, POLLIN, 0}};
  int r = poll(p, 2, (int)(atof(secs_s) * 1000));
  char extra[128] = "";
  const char *res = "timeout";
  if (r > 0) {
    struct sockaddr_in peer;
    socklen_t pl = sizeof peer;
    char buf[64];
    if (p[0].revents & POLLIN) {
      int c = accept(t, (struct sockaddr *)&peer, &pl);
      res = c >= 0 ? "accepted" : ename(errno);
      if (c >= 0) { (void)!write(c, "agent-here\n", 11); close(c); }
    } else {
      ssize_t n = recvfrom(u, buf, sizeof buf, 0, (struct sockaddr *)&peer, &pl);
      res = n >= 0 ? "received" : ename(errno);
    }
    char a[INET_ADDRSTRLEN] = "";
    inet_ntop(AF_INET, &peer.sin_addr, a, sizeof a);
    snprintf(extra, sizeof extra, "\"peer\":\"%s:%d\"", a, ntohs(peer.sin_port));
  }
  out("listen", port_s, res, extra[0] ? extra : NULL);
  close(t);
  close(u);
}


/* --- the wire judge (docs/egress.md, "on the wire") ---------------------------- */

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Connects to IP:PORT, sends HEX (whole, or one byte per send with
 * TCP_NODELAY and 1 ms between), then waits up to 3 s for the first reply
 * bytes: "ok" with the first ones in hex, "EOF", or the errno of the recv
 * (ECONNRESET when the judge refused). */
static void cmd_send(const char *ip, const char *port_s, const char *hex, const char *mode) {
  char arg[300];
  snprintf(arg, sizeof arg, "%s:%s %s", ip, port_s, mode);
  struct sockaddr_storage sa;
  socklen_t len;
  char why[64];
  if (target(ip, atoi(port_s), &sa, &len, why, sizeof why) < 0) {
    out("send", arg, why, NULL);
    return;
  }
  size_t n = strlen(hex) / 2;
  unsigned char *b = malloc(n + 1);
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(hexval(hex[2 * i]) * 16 + hexval(hex[2 * i + 1]));
  int s = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int e = connect_timeout(s, (struct sockaddr *)&sa, len, 2000);
  if (e) {
    out("send", arg, ename(e), NULL);
    close(s);
    free(b);
    return;
  }
  int one = 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int bytewise = !strcmp(mode, "bytewise");
  for (size_t i = 0; i < n;) {
    ssize_t w = send(s, b + i, bytewise ? 1 : n - i, MSG_NOSIGNAL);
    if (w < 0) {
      out("send", arg, ename(errno), "\"during\":\"send\"");
      close(s);
      free(b);
      return;
    }
    i += (size_t)w;
    if (bytewise) usleep(1000);
  }
  free(b);
  unsigned char r[64];
  struct pollfd pf = {s, POLLIN, 0};
  if (poll(&pf, 1, 3000) <= 0) {
    out("send", arg, "TIMEOUT", NULL);
    close(s);
    return;
  }
  ssize_t got = recv(s, r, sizeof r, 0);
  int err = errno;
  close(s);
  if (got < 0) {
    out("send", arg, ename(err), NULL);
    return;
  }
  if (got == 0) {
    out("send", arg, "EOF", NULL);
    return;
  }
  char extra[200] = "\"reply\":\"";
  size_t o = strlen(extra);
  for (ssize_t i = 0; i < got && i < 16; i++) o += (size_t)snprintf(extra + o, sizeof extra - o, "%02x", r[i]);
  snprintf(extra + o, sizeof extra - o, "\"");
  out("send", arg, "ok", extra);
}

/* Connects and sends nothing: how the connection ends within SECS, and
 * after how many ms. */
static void cmd_idle(const char *ip, const char *port_s, const char *secs_s) {
  char arg[300];
  snprintf(arg, sizeof arg, "%s:%s", ip, port_s);
  struct sockaddr_storage sa;
  socklen_t len;
  char why[64];
  if (target(ip, atoi(port_s), &sa, &len, why, sizeof why) < 0) {
    out("idle", arg, why, NULL);
    return;
  }
  int s = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  double t0 = now_us();
  int e = connect_timeout(s, (struct sockaddr *)&sa, len, 2000);
  if (e) {
    out("idle", arg, ename(e), NULL);
    close(s);
    return;
  }
  struct pollfd pf = {s, POLLIN, 0};
  const char *res = "TIMEOUT";
  if (poll(&pf, 1, atoi(secs_s) * 1000) > 0) {
    char c;
    ssize_t r = recv(s, &c, 1, 0);
    res = r < 0 ? ename(errno) : r == 0 ? "EOF" : "DATA";
  }
  char extra[64];
  snprintf(extra, sizeof extra, "\"ms\":%.0f", (now_us() - t0) / 1000);
  close(s);
  out("idle", arg, res, extra);
}

/* Two HTTP/1.1 requests on one keep-alive connection, Host H1 then H2;
 * the first response's status line, then how the second ended. */
static void cmd_http2(const char *ip, const char *port_s, const char *h1, const char *h2) {
  char arg[300];
  snprintf(arg, sizeof arg, "%s:%s %s,%s", ip, port_s, h1, h2);
  struct sockaddr_storage sa;
  socklen_t len;
  char why[64];
  if (target(ip, atoi(port_s), &sa, &len, why, sizeof why) < 0) {
    out("http2", arg, why, NULL);
    return;
  }
  int s = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int e = connect_timeout(s, (struct sockaddr *)&sa, len, 2000);
  if (e) {
    out("http2", arg, ename(e), NULL);
    close(s);
    return;
  }
  char req[512], resp[4096], extra[1024];
  const char *hosts[2] = {h1, h2};
  char results[2][200];
  for (int k = 0; k < 2; k++) {
    snprintf(req, sizeof req, "GET /%d HTTP/1.1\r\nHost: %s\r\n\r\n", k, hosts[k]);
    strcpy(results[k], "-");
    if (send(s, req, strlen(req), MSG_NOSIGNAL) < 0) {
      snprintf(results[k], sizeof results[k], "%s", ename(errno));
      break;
    }
    /* the response: head, then Content-Length bytes */
    size_t have = 0;
    long want = -1;
    for (;;) {
      struct pollfd pf = {s, POLLIN, 0};
      if (poll(&pf, 1, 3000) <= 0) {
        strcpy(results[k], "TIMEOUT");
        break;
      }
      ssize_t r = recv(s, resp + have, sizeof resp - 1 - have, 0);
      if (r <= 0) {
        snprintf(results[k], sizeof results[k], "%s", r < 0 ? ename(errno) : "EOF");
        break;
      }
      have += (size_t)r;
      resp[have] = 0;
      char *end = strstr(resp, "\r\n\r\n");
      if (end && want < 0) {
        char *cl = strcasestr(resp, "content-length:");
        want = (end - resp) + 4 + (cl ? atol(cl + 15) : 0);
      }
      if (want >= 0 && (long)have >= want) {
        char *eol = strstr(resp, "\r\n");
        *eol = 0;
        snprintf(results[k], sizeof results[k], "%s", resp);
        break;
      }
    }
    if (strncmp(results[k], "HTTP/", 5)) break;
  }
  close(s);
  snprintf(extra, sizeof extra, "\"first\":\"%s\",\"second\":\"%s\"", results[0], results[1]);
  out("http2", arg, "ok", extra);
}

int main(int argc, char **argv) {
  int i = 2; /* argv[1]: the pack's entrypoint */
  while (i < argc) {
    int end = i;
    while (end < argc && strcmp(argv[end], "--")) end++;
    int n = end - i;
    char **a = argv + i;
    if (n >= 1) {
      if (!strcmp(a[0], "resolve") && n >= 2) cmd_resolve(a[1], n >= 3 ? a[2] : "a");
      else if (!strcmp(a[0], "gai") && n >= 2) cmd_gai(a[1]);
      else if (!strcmp(a[0], "tcp") && n >= 3) cmd_tcp(a[1], a[2]);
      else if (!strcmp(a[0], "udp") && n >= 3) cmd_udp(a[1], a[2]);
      else if (!strcmp(a[0], "dnsudp") && n >= 3) cmd_dnsudp(a[1], a[2]);
      else if (!strcmp(a[0], "dnstcp") && n >= 2) cmd_dnstcp(a[1]);
      else if (!strcmp(a[0], "raw") || !strcmp(a[0], "packet")) cmd_socket(a[0]);
      else if (!strcmp(a[0], "uring") && n >= 3) cmd_uring(a[1], a[2]);
      else if (!strcmp(a[0], "nft")) cmd_nft();
      else if (!strcmp(a[0], "unshare")) cmd_unshare();
      else if (!strcmp(a[0], "sleep") && n >= 2) { usleep((useconds_t)(atof(a[1]) * 1e6)); out("sleep", a[1], "ok", NULL); }
      else if (!strcmp(a[0], "waitfile") && n >= 2) cmd_waitfile(a[1]);
      else if (!strcmp(a[0], "listen") && n >= 3) cmd_listen(a[1], a[2]);
      else if (!strcmp(a[0], "halfclose") && n >= 5) cmd_halfclose(a[1], a[2], a[3], a[4]);
      else if (!strcmp(a[0], "connbench") && n >= 4) cmd_connbench(a[1], a[2], a[3]);
      else if (!strcmp(a[0], "bulk") && n >= 4) cmd_bulk(a[1], a[2], a[3]);
      else if (!strcmp(a[0], "dnsbench") && n >= 3) cmd_dnsbench(a[1], a[2]);
      else if (!strcmp(a[0], "send") && n >= 5) cmd_send(a[1], a[2], a[3], a[4]);
      else if (!strcmp(a[0], "idle") && n >= 4) cmd_idle(a[1], a[2], a[3]);
      else if (!strcmp(a[0], "http2") && n >= 5) cmd_http2(a[1], a[2], a[3], a[4]);
      else out(a[0], "", "EINVAL", "\"why\":\"unknown command or missing arguments\"");
    }
    i = end + 1;
  }
  return 0;
}
