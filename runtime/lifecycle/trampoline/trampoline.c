/* The exec trampoline (CVE-2019-5736 hardening).
 *
 * Why one file of about 1000 lines (docs/architecture.md): it is one
 * freestanding translation unit, built -nostdlib -static with no linker
 * script and embedded as one image; its roles (the trampoline, a pack's
 * PID 1, the git rule's maker of names) share the raw syscall wrappers and
 * fixed buffers, and a second unit would need a link step of its own.
 *
 * The runtime never execve()s a container's program itself: it execveat()s
 * this tiny static binary from a sealed memfd, which then execs the target.
 * So if the target is a script with "#!/proc/self/exe", the kernel resolves
 * /proc/self/exe in a process whose exe is this sealed, unwritable memfd,
 * never the runtime's binary on the host.
 *
 * Calling convention (argv as passed to execveat):
 *
 *   argv[0] = "comet-exec"      (kTrampolineArgv0: must match exactly)
 *   argv[1] = PATH              (passed verbatim to execve)
 *   argv[2..] = ARG0 ARG1 ...   (the target's argv, so ARG0 may differ from PATH)
 *   envp is passed through unchanged.
 *
 * i.e. "comet-exec PATH ARG0 ARG1..." runs execve(PATH, [ARG0, ARG1, ...], envp).
 * On any failure (argc < 2, argv[0] not the marker, execve error) it calls
 * exit_group(127), like a shell's "command not found".
 *
 * The argv[0] check defeats re-entry: when the kernel starts this binary as
 * a "#!/proc/self/exe" interpreter, argv[0] is "/proc/self/exe" (the shebang
 * text), so the script fails with 127 instead of exec-looping forever.
 *
 * Constraints: the container's seccomp filter is already in force, so the
 * only syscalls made are execve (59) and exit_group (231). No libc, no stack
 * protector, no relocations: built -nostdlib -static -no-pie -Os. x86_64 only.
 *
 * The same image is also a pack container's PID 1 (docs/events.md "Exit code
 * 3 under an engine"), run as
 *
 *   argv = "comet-init" AGENT_PID EVENTS_FD DNS ("dns" or "-") [REPORTER_FD or "-"
 *          [CREATE_FD DEVS OWN...]]
 *
 * by the container's init after it forked the agent (child.cpp). It reaps
 * every child, forwards every signal it gets to the agent, and when the agent
 * has exited, exits with the agent's status (128+N for a signal), or 3 when
 * the container's events file (EVENTS_FD, read-only) holds a
 * capability_violation. Before it reads the file, with DNS = "dns", it sends
 * the container's resolver (127.0.0.1:53) a query whose header promises a
 * question it lacks and waits (2 s at most) for the FORMERR answer: the
 * resolver reports the packets the ruleset refused (NFLOG) at the start of
 * every query it handles, so every egress
 * violation of the agent is then on disk. With REPORTER_FD (the violation
 * reporter's socket, when it reports fs events), it then sends the reporter
 * one byte and waits (2 s at most) for its answer, or its end: the reporter
 * answers once it has drained the fs events ring buffer, which holds every
 * failed path call of the agent's by then. Seccomp-reported violations are
 * written before the reporter answers the call, DNS ones before the answer.
 * The agent's seccomp filter is not this process's (it was started before
 * the filter was loaded): this code is all it runs, it is not dumpable (no
 * ptrace, no /proc/1/mem from the agent), and its /proc/1/exe is the sealed
 * memfd (mode 0111: not dumpable from the exec on). Syscalls: prctl,
 * rt_sigaction, rt_sigprocmask, signalfd4, read, wait4, kill,
 * socket, connect, sendto, poll, recvfrom, close, pread64, exit_group.
 */

#if !defined(__x86_64__)
#error "the exec trampoline is x86_64-only"
#endif

/* Entry: the kernel leaves argc at (%rsp), then argv[], NULL, envp[], NULL.
 * Pass the stack pointer to tramp_main; align the stack per the ABI first. */
__asm__(
    ".text\n"
    ".globl _start\n"
    ".type _start,@function\n"
    "_start:\n"
    "  xor %ebp, %ebp\n"
    "  mov %rsp, %rdi\n"
    "  and $-16, %rsp\n"
    "  call tramp_main\n"
    "  hlt\n");

static const char kMarker[] = "comet-exec";

__attribute__((noreturn)) static void sys_exit_group(long code) {
  for (;;) __asm__ volatile("syscall" : : "a"(231L), "D"(code) : "rcx", "r11", "memory");
}

static long sys_execve(const char* path, char* const* argv, char* const* envp) {
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(59L), "D"(path), "S"(argv), "d"(envp)
                   : "rcx", "r11", "memory");
  return ret;
}

static long sys6(long n, long a, long b, long c, long d, long e, long f) {
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}

enum {
  NR_read = 0,
  NR_write = 1,
  NR_close = 3,
  NR_poll = 7,
  NR_rt_sigaction = 13,
  NR_rt_sigprocmask = 14,
  NR_pread64 = 17,
  NR_socket = 41,
  NR_connect = 42,
  NR_sendto = 44,
  NR_recvfrom = 45,
  NR_wait4 = 61,
  NR_kill = 62,
  NR_prctl = 157,
  NR_signalfd4 = 289,
};

static const char kInitMarker[] = "comet-init";
static const char kViolation[] = "\"type\":\"capability_violation\"";

static int same(const char* a, const char* b) {
  long i = 0;
  while (a[i] != '\0' && a[i] == b[i]) i++;
  return a[i] == b[i];
}

static long number(const char* s) {
  long v = 0;
  if (*s == '\0') return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || v > 100000000) return -1;
    v = v * 10 + (*s - '0');
  }
  return v;
}

/* A query whose header promises a question it does not carry: the resolver
 * answers FORMERR (after reporting what NFLOG holds); any answer will do. */
static void dns_barrier(void) {
  long fd = sys6(NR_socket, 2 /* AF_INET */, 2 | 02000000 /* SOCK_DGRAM|CLOEXEC */, 0, 0, 0, 0);
  if (fd < 0) return;
  unsigned char sa[16] = {2, 0, 0, 53, 127, 0, 0, 1}; /* sockaddr_in 127.0.0.1:53 */
  unsigned char q[12] = {0xc0, 0xde, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  if (sys6(NR_connect, fd, (long)sa, sizeof sa, 0, 0, 0) == 0 &&
      sys6(NR_sendto, fd, (long)q, sizeof q, 0, 0, 0) == (long)sizeof q) {
    struct {
      int fd;
      short events, revents;
    } p = {(int)fd, 1 /* POLLIN */, 0};
    if (sys6(NR_poll, (long)&p, 1, 2000, 0, 0, 0) > 0) {
      unsigned char buf[512];
      sys6(NR_recvfrom, fd, (long)buf, sizeof buf, 0x40 /* MSG_DONTWAIT */, 0, 0);
    }
  }
  sys6(NR_close, fd, 0, 0, 0, 0, 0);
}

/* The reporter says 'w' at once and 'k' once its fs events ring is
 * drained (or it has ended, having drained it, and its 'k' waits in the
 * socket). Nothing within 2 s, no 'k' within 30 s, or a hang-up: its events
 * may be missing, which fails closed (as run does for a reporter that did
 * not finish), and says so on stderr. */
static long wait_byte(long fd, int ms) {
  struct {
    int fd;
    short events, revents;
  } p = {(int)fd, 1 /* POLLIN */, 0};
  char b = 0;
  if (sys6(NR_poll, (long)&p, 1, ms, 0, 0, 0) <= 0) return -1;
  long n = sys6(NR_recvfrom, fd, (long)&b, 1, 0x40 /* MSG_DONTWAIT */, 0, 0);
  /* A reporter that answered and ended with our question still unread in
   * its socket leaves ECONNRESET on ours, ahead of its answer (af_unix
   * unix_release_sock): the error is reported once and cleared, the answer
   * is read next. */
  if (n == -104 /* ECONNRESET */) n = sys6(NR_recvfrom, fd, (long)&b, 1, 0x40, 0, 0);
  if (n != 1) return -1;
  return b;
}

static int reporter_barrier(long fd) {
  static const char kNoAnswer[] =
      "comet-init: the violation reporter did not answer; exit status 3 (events may be missing)\n";
  char b = 'b';
  if (fd < 0) return 1;
  (void)sys6(NR_sendto, fd, (long)&b, 1, 0x4000 /* MSG_NOSIGNAL */, 0, 0);
  long got = wait_byte(fd, 2000);
  if (got == 'w') got = wait_byte(fd, 30000);
  if (got == 'k') return 1;
  (void)sys6(NR_write, 2, (long)kNoAnswer, sizeof kNoAnswer - 1, 0, 0, 0);
  return 0;
}

/* Whether the events file holds a violation (a substring search, chunks
 * overlapping by the pattern's length). */
static int violated(long fd) {
  enum { kLen = sizeof kViolation - 1 };
  char buf[4096];
  long off = 0, keep = 0;
  if (fd < 0) return 0;
  for (;;) {
    long n = sys6(NR_pread64, fd, (long)(buf + keep), sizeof buf - keep, off, 0, 0);
    if (n < 0) return 1; /* unreadable: fail closed, as a reporter that did not finish */
    if (n == 0) return 0;
    off += n;
    long have = keep + n;
    for (long i = 0; i + kLen <= have; i++) {
      long j = 0;
      while (j < kLen && buf[i + j] == kViolation[j]) j++;
      if (j == kLen) return 1;
    }
    keep = have < kLen - 1 ? have : kLen - 1;
    for (long i = 0; i < keep; i++) buf[i] = buf[have - keep + i];
  }
}

/* ---- The git rule (runtime/reporting/include/comet/reporting/create_rule.hpp) ----
 * With CREATE_FD, the init also makes, for the violation reporter, the
 * calls of the agent's that make a name or open for writing: it has the
 * agent's identity, root and mount namespace, and the Landlock domain the
 * agent's is nested in, and no seccomp filter. It refuses (EACCES) a last
 * name ".git" (any case), a parent inside a ".git" directory that is not
 * one of OWN, and a new name in OWN/modules (a module's git directory),
 * except on the sandbox's own tmpfs mounts (DEVS); it follows
 * an open's last symlink itself, so that it judges the name the call makes,
 * and makes the call on the judged parent with O_NOFOLLOW.
 * Syscalls: recvmsg, sendmsg, openat, mkdirat, mknodat, symlinkat, linkat,
 * renameat2, readlinkat, newfstatat, statx, fstatfs, umask, close.
 *
 * PROT (after a "+" in argv): the sandbox's protected paths (a `*` is a
 * glob over one component). One that exists is a read-only mount on its
 * name; when the host replaces one by rename while the sandbox runs, the
 * kernel detaches that mount and the name is writable inside. One that is
 * missing has no mount (and no placeholder). So a call that would make,
 * open for writing, or move a protected name, or one beneath it, is
 * answered EROFS here (what the mount answers; the fs events report it)
 * when the name is not a mount point; while it is, the kernel answers as
 * it always did. An entry "^PATH" is a missing one (no glob): a name
 * above it (a directory on the way to it) may only be made as a new
 * directory: a symlink, file, device, link or socket there, or a rename
 * onto or away from it, is EROFS too; an open with O_CREAT of a name that
 * is there never makes one (unlink is not mediated: it may be gone). An entry "=PATH" (a HEAD's lock file) may only
 * be made new, by an open with O_CREAT | O_EXCL (git's own lock): any other
 * call on it is EROFS, so the host git's lock is never written into. */
enum {
  NR_sendmsg = 46,
  NR_recvmsg = 47,
  NR_fstat = 5,
  NR_umask = 95,
  NR_fstatfs = 138,
  NR_openat = 257,
  NR_mkdirat = 258,
  NR_mknodat = 259,
  NR_newfstatat = 262,
  NR_linkat = 265,
  NR_symlinkat = 266,
  NR_readlinkat = 267,
  NR_renameat2 = 316,
  NR_statx = 332,
  NR_bind = 49,
  NR_chdir = 80,
  NR_fchdir = 81,
};
#define O_WRONLY_ 01
#define O_CREAT_ 0100
#define O_EXCL_ 0200
#define O_DIRECTORY_ 0200000
#define O_NOFOLLOW_ 0400000
#define O_CLOEXEC_ 02000000
#define O_PATH_ 010000000
#define O_TMPFILE_ (020000000 | O_DIRECTORY_)
#define AT_FDCWD_ (-100)
#define AT_SYMLINK_NOFOLLOW_ 0x100
#define AT_SYMLINK_FOLLOW_ 0x400
#define AT_EMPTY_PATH_ 0x1000
#define RENAME_EXCHANGE_ 2
#define PROC_MAGIC 0x9fa0
#define PATHMAX 4096

/* The kernel's struct iovec and struct msghdr (x86_64 layout), for
 * recvmsg/sendmsg without libc headers. */
struct kiovec {
  void* base;
  unsigned long len;
};
struct kmsghdr {
  void* name;
  unsigned int namelen;
  struct kiovec* iov;
  unsigned long iovlen;
  void* control;
  unsigned long controllen;
  int flags;
};

struct creq {
  unsigned int op, umask;
  unsigned long flags, mode, dev;
  int nspid, nstid;
  unsigned int len1, len2;
  char p1[PATHMAX];
  char p2[PATHMAX];
};
struct crep {
  long ret;
  int refused, pad;
  char where[1024];
};
enum { OP_OPEN = 1, OP_MKDIR, OP_MKNOD, OP_SYMLINK, OP_LINK, OP_RENAME, OP_BIND };

/* All on init_main's stack: this image has no writable segment. */
struct cstate {
  struct creq rq;
  struct crep rp;
  char** own_dirs; /* OWN: absolute paths, NULL-terminated */
  char** prot;     /* PROT: absolute paths, NULL-terminated */
  int need_ids;     /* a /proc/self path, and the reporter sent no nspid */
  int excl;         /* the call is an open with O_CREAT | O_EXCL (PROT "=") */
  int anc;          /* the call makes (or moves) a name that is not a new directory */
  unsigned long priv_devs[16];
  int n_priv;
};
#define rq (S->rq)
#define rp (S->rp)
#define own_dirs (S->own_dirs)
#define prot (S->prot)
#define priv_devs (S->priv_devs)
#define n_priv (S->n_priv)

static long slen(const char* s) {
  long n = 0;
  while (s[n]) n++;
  return n;
}
static void scopy(char* dst, long cap, const char* src, long n) {
  if (n > cap - 1) n = cap - 1;
  for (long i = 0; i < n; i++) dst[i] = src[i];
  dst[n] = 0;
}
static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
static int is_git(const char* s, long n) {
  return n == 4 && s[0] == '.' && lower(s[1]) == 'g' && lower(s[2]) == 'i' && lower(s[3]) == 't';
}
static long put_num(char* out, long v) {
  char t[24];
  long n = 0, k = 0;
  if (v < 0) v = 0;
  do t[n++] = (char)('0' + v % 10); while ((v /= 10) && n < 20);
  while (n) out[k++] = t[--n];
  return k;
}

/* /proc/self, /proc/thread-self and /dev/fd/... name the agent's, not
 * ours: rewritten to the agent's /proc/PID. Into out (PATHMAX). */
static int rewrite_self(struct cstate* S, const char* in, char* out) {
  static const struct {
    const char* from;
    const char* to; /* after /proc/PID; "T": /task/TID */
  } map[] = {{"/proc/self", ""},       {"/proc/thread-self", "T"}, {"/dev/fd", "/fd"},
             {"/dev/stdin", "/fd/0"},  {"/dev/stdout", "/fd/1"},   {"/dev/stderr", "/fd/2"}};
  long n = slen(in);
  for (unsigned i = 0; i < sizeof map / sizeof map[0]; i++) {
    long m = slen(map[i].from), j = 0;
    while (j < m && in[j] == map[i].from[j]) j++;
    if (j < m || (in[m] != 0 && in[m] != '/')) continue;
    if (rq.nspid <= 0) {
      S->need_ids = 1; /* the reporter reads them and asks again */
      return -11;
    }
    long k = 0;
    static const char pr[] = "/proc/";
    for (long x = 0; pr[x]; x++) out[k++] = pr[x];
    k += put_num(out + k, rq.nspid);
    if (map[i].to[0] == 'T') {
      static const char tk[] = "/task/";
      for (long x = 0; tk[x]; x++) out[k++] = tk[x];
      k += put_num(out + k, rq.nstid);
    } else {
      for (long x = 0; map[i].to[x]; x++) out[k++] = map[i].to[x];
    }
    if (k + (n - m) >= PATHMAX) return -36; /* ENAMETOOLONG */
    for (long x = m; x <= n; x++) out[k++] = in[x];
    return 0;
  }
  if (n >= PATHMAX) return -36;
  scopy(out, PATHMAX, in, n);
  return 0;
}

/* Where fd is, as this process's root sees it (/proc/self/fd/N). */
static long fd_path(long fd, char* out, long cap) {
  char l[32] = "/proc/self/fd/";
  long k = 14;
  k += put_num(l + k, fd);
  l[k] = 0;
  long n = sys6(NR_readlinkat, AT_FDCWD_, (long)l, (long)out, cap - 1, 0, 0);
  if (n < 0) return n;
  out[n] = 0;
  return n;
}

static int on_private_fs(struct cstate* S, long fd) {
  unsigned long st[18];
  if (sys6(NR_fstat, fd, (long)st, 0, 0, 0, 0) < 0) return 0;
  for (int i = 0; i < n_priv; i++)
    if (priv_devs[i] == st[0]) return 1;
  return 0;
}
static int on_proc(long fd) {
  long sf[15];
  return sys6(NR_fstatfs, fd, (long)sf, 0, 0, 0, 0) == 0 && sf[0] == PROC_MAGIC;
}

static void refuse_at(struct cstate* S, const char* path, long n) {
  rp.refused = 1;
  scopy(rp.where, sizeof rp.where, path, n);
}

/* refuse_at() of NAME in the directory DIRFD (its path from /proc). */
static void refuse_name(struct cstate* S, long dirfd, const char* name) {
  char p[PATHMAX];
  long n = fd_path(dirfd, p, sizeof p - 6);
  if (n < 0) n = 0;
  if (n == 0 || p[n - 1] != '/') p[n++] = '/';
  scopy(p + n, PATHMAX - n, name, slen(name));
  refuse_at(S, p, slen(p));
}

static int is_head(const char* s, long n) {
  return n == 4 && lower(s[0]) == 'h' && lower(s[1]) == 'e' && lower(s[2]) == 'a' &&
         lower(s[3]) == 'd';
}

static int is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

/* Whether the directory named by the first n bytes of p is what git takes
 * for a bare repository: objects/ and refs/ there, and a valid HEAD (a
 * symlink into refs/, or a file holding "ref: refs/..." or an object id;
 * an empty placeholder HEAD is none). */
static int bare_at(const char* p, long n) {
  /* objects/ and refs/, or a commondir file (git then takes objects,
   * refs, config and hooks from where it points) */
  /* HEAD first: most directories have none, one fstatat each */
  static const char* const names[] = {"/HEAD", "/objects", "/refs", "/commondir"};
  char q[PATHMAX];
  unsigned long st[18];
  if (n + 11 > PATHMAX) return 0;
  for (long x = 0; x < n; x++) q[x] = p[x];
  int have[4] = {0, 0, 0, 0};
  for (int k = 0; k < 4; k++) {
    long m = n == 1 ? 0 : n; /* "/" + "/HEAD" -> "/HEAD" */
    for (long x = 0; names[k][x]; x++) q[m++] = names[k][x];
    q[m] = 0;
    have[k] = sys6(NR_newfstatat, AT_FDCWD_, (long)q, (long)st, AT_SYMLINK_NOFOLLOW_, 0, 0) == 0;
    if (!have[0]) return 0;
  }
  if (!((have[1] && have[2]) || have[3])) return 0;
  long m = n == 1 ? 0 : n; /* q names HEAD again */
  for (long x = 0; names[0][x]; x++) q[m++] = names[0][x];
  q[m] = 0;
  char h[48];
  long r = sys6(NR_readlinkat, AT_FDCWD_, (long)q, (long)h, sizeof h, 0, 0);
  if (r >= 0) return r >= 5 && h[0] == 'r' && h[1] == 'e' && h[2] == 'f' && h[3] == 's' && h[4] == '/';
  long fd = sys6(NR_openat, AT_FDCWD_, (long)q, O_NOFOLLOW_ | O_CLOEXEC_ | 04000 /* O_NONBLOCK */,
                 0, 0, 0);
  if (fd < 0) return 0;
  r = sys6(NR_read, fd, (long)h, sizeof h, 0, 0, 0);
  sys6(NR_close, fd, 0, 0, 0, 0, 0);
  static const char ref[] = "ref: refs/";
  if (r >= 10) {
    long j = 0;
    while (j < 10 && h[j] == ref[j]) j++;
    if (j == 10) return 1;
  }
  if (r < 40) return 0;
  for (int x = 0; x < 40; x++)
    if (!is_hex(h[x])) return 0;
  return 1;
}

/* Where the directory p (absolute, n bytes) lies: 0 nowhere special, 1 in
 * a git directory that is not the workspace's own (a ".git" not in OWN,
 * a new module's in OWN/modules, or a bare repository's: HEAD, objects/
 * and refs/ in it or a parent), 2 in one of OWN. */
static int git_place(struct cstate* S, const char* p, long n) {
  for (long i = 0; i < n;) {
    while (i < n && p[i] == '/') i++;
    long s = i;
    while (i < n && p[i] != '/') i++;
    if (!is_git(p + s, i - s)) continue;
    int own = 0;
    for (char** o = own_dirs; o && *o && !own; o++) {
      long m = slen(*o);
      if (m != i) continue;
      long j = 0;
      while (j < m && (*o)[j] == p[j]) j++;
      own = j == m;
    }
    if (!own) return 1;
    /* The workspace's own: a new module's git directory is not made
     * (OWN/modules/NAME, at any nesting): the host's `git submodule
     * update` would take one it finds for its own, config and hooks
     * included (those of the modules there at start are mounted
     * read-only). */
    static const char mod[] = "/modules", wt[] = "/worktrees";
    if (n >= i + 8) {
      long j = 0;
      while (j < 8 && p[n - 8 + j] == mod[j]) j++;
      if (j == 8) return 1;
    }
    /* and no new worktree's git directory (OWN/worktrees/NAME: HEAD and
     * commondir make one that git takes, `git push` to it included) */
    if (n >= i + 10) {
      long j = 0;
      while (j < 10 && p[n - 10 + j] == wt[j]) j++;
      if (j == 10) return 1;
    }
    /* A bare repository made inside OWN (OWN/e with HEAD, objects/,
     * refs/: a symlink to it, or a look into .git, and the host's git
     * takes it): below OWN, but for the modules' own (OWN/.../modules/X). */
    for (long k = n; k > i;) {
      long c = k;
      while (c > i && p[c - 1] != '/') c--; /* p[c..k) is the last name */
      long pe = c > 0 ? c - 1 : 0;          /* its parent's end */
      long ps = pe;
      while (ps > 0 && p[ps - 1] != '/') ps--;
      int module = pe - ps == 7 && p[ps] == 'm' && p[ps + 1] == 'o' && p[ps + 2] == 'd' &&
                   p[ps + 3] == 'u' && p[ps + 4] == 'l' && p[ps + 5] == 'e' && p[ps + 6] == 's';
      if (!module && bare_at(p, k)) return 1;
      k = pe;
    }
    return 2;
  }
  /* A bare repository: in p or any parent (git looks there first when it
   * runs in one). */
  for (long k = n; k > 0;) {
    if (bare_at(p, k)) return 1;
    while (k > 1 && p[k - 1] != '/') k--;
    k = k > 1 ? k - 1 : 0;
  }
  return 0;
}

/* git_place() of the directory dirfd, with a refusal named for 1; an
 * unnamed directory, or one outside our root, counts as 1. */
static int dir_place(struct cstate* S, long dirfd) {
  char p[PATHMAX];
  long n = fd_path(dirfd, p, sizeof p - 16);
  if (n <= 0 || p[0] != '/') return 1;
  static const char del[] = " (deleted)";
  if (n >= 10) {
    long j = 0;
    while (j < 10 && p[n - 10 + j] == del[j]) j++;
    if (j == 10) return 1;
  }
  int w = git_place(S, p, n);
  if (w == 1) refuse_at(S, p, n);
  return w;
}
static int in_foreign_git(struct cstate* S, long dirfd) { return dir_place(S, dirfd) == 1; }

/* A directory of OWN's object store holding objects (objects/XX, pack):
 * git never reopens a file there for writing (red team round 21 rewrote
 * HEAD's tree in place). */
static int own_objects_dir(struct cstate* S, long dirfd) {
  char p[PATHMAX];
  long n = fd_path(dirfd, p, sizeof p);
  if (n < 13) return 0;
  const char* m = "/objects/pack";
  long i = 0;
  while (i < 13 && p[n - 13 + i] == m[i]) i++;
  int pack = i == 13;
  i = 0;
  while (i < 9 && p[n - 11 + i] == m[i]) i++;
  if (!pack && !(i == 9 && is_hex(p[n - 2]) && is_hex(p[n - 1]))) return 0;
  return dir_place(S, dirfd) == 2;
}

/* A file the kernel opened through a magic link (/proc/PID/fd/N): judged
 * where it is. One outside our root (the caller's terminal, a file its
 * stdout was redirected to) is not in any repository of the sandbox's. */
static int opened_refused(struct cstate* S, long fd) {
  if (on_private_fs(S, fd)) return 0;
  char p[PATHMAX];
  long n = fd_path(fd, p, sizeof p - 16);
  if (n <= 0 || p[0] != '/') return 0;
  long cut = n;
  while (cut > 0 && p[cut - 1] != '/') cut--;
  if (is_git(p + cut, n - cut) || is_head(p + cut, n - cut)) {
    refuse_at(S, p, n);
    return 1;
  }
  long dn = cut > 1 ? cut - 1 : 1;
  char c = p[dn];
  p[dn] = 0;
  int w = git_place(S, p, dn);
  p[dn] = c;
  if (w == 1) refuse_at(S, p, n);
  return w == 1;
}

/* Resolves path (relative to dirfd) to its parent directory (an O_PATH fd,
 * returned) and its last name (into name). */
static long split_open(long dirfd, const char* path, char* name) {
  char parent[PATHMAX];
  long n = slen(path);
  while (n > 1 && path[n - 1] == '/') n--;
  long cut = n;
  while (cut > 0 && path[cut - 1] != '/') cut--;
  if (cut == n) return -2; /* "" or "/": ENOENT, as the kernel says for "" */
  scopy(name, PATHMAX, path + cut, n - cut);
  if (cut == 0) {
    parent[0] = '.';
    parent[1] = 0;
  } else {
    scopy(parent, PATHMAX, path, cut);
  }
  return sys6(NR_openat, dirfd, (long)parent, O_PATH_ | O_DIRECTORY_ | O_CLOEXEC_, 0, 0, 0);
}

/* The checks on a name about to be made in dirfd: 0, or refused (the
 * refusal names the parent and the name). */
/* Whether making name in dirfd completes a bare repository there: it is
 * one of HEAD, objects, refs, and the other two are there already. */
static int completes_bare(long dirfd, const char* name, long nl) {
  /* HEAD with objects/ and refs/, or HEAD with a commondir file */
  static const char* const names[] = {"HEAD", "objects", "refs", "commondir"};
  int which = -1;
  for (int k = 0; k < 4 && which < 0; k++) {
    long m = slen(names[k]), j = 0;
    if (m != nl) continue;
    while (j < m && lower(name[j]) == lower(names[k][j])) j++;
    if (j == m) which = k;
  }
  if (which < 0) return 0;
  unsigned long st[18];
  /* replacing a name that is there changes nothing (a module's HEAD) */
  if (sys6(NR_newfstatat, dirfd, (long)name, (long)st, AT_SYMLINK_NOFOLLOW_, 0, 0) == 0) return 0;
  int have[4];
  for (int k = 0; k < 4; k++)
    have[k] = k == which ||
              sys6(NR_newfstatat, dirfd, (long)names[k], (long)st, AT_SYMLINK_NOFOLLOW_, 0, 0) == 0;
  return have[0] && ((have[1] && have[2]) || have[3]);
}

/* Whether a HEAD may be made in the directory dirfd inside OWN: OWN
 * itself (its HEAD is mounted read-only anyway), logs/ and refs/ (the
 * reflog's and refs/remotes/R/HEAD), modules/ and an existing
 * worktrees/W. Anywhere else a HEAD makes a git directory of its own. */
static int own_head_ok(struct cstate* S, long dirfd) {
  char p[PATHMAX];
  long n = fd_path(dirfd, p, sizeof p);
  if (n <= 0) return 0;
  for (char** o = own_dirs; o && *o; o++) {
    long m = slen(*o), j = 0;
    if (n < m) continue;
    while (j < m && (*o)[j] == p[j]) j++;
    if (j < m || (n > m && p[m] != '/')) continue;
    const char* r = p + m; /* "" or "/..." */
    if (!*r) return 1;
    static const char* const ok[] = {"/logs", "/refs", "/modules"};
    for (int k = 0; k < 3; k++) {
      long x = 0;
      while (ok[k][x] && r[x] == ok[k][x]) x++;
      if (!ok[k][x] && (r[x] == 0 || r[x] == '/')) return 1;
    }
    static const char wt[] = "/worktrees/";
    long x = 0;
    while (wt[x] && r[x] == wt[x]) x++;
    if (!wt[x]) {
      while (r[x] && r[x] != '/') x++;
      return r[x] == 0;
    }
    return 0;
  }
  return 0;
}

/* Whether name, made in dirfd, is a rebase's or sequencer's state
 * directory of a git directory inside OWN (OWN itself, a module's
 * OWN/modules/.../X, a worktree's: one with a HEAD and objects/ or a
 * commondir; rebase-merge, rebase-apply, sequencer, any case): their todo
 * lists hold `exec` lines the host's `git rebase --continue` runs (red team
 * rounds 7 and 9). Never made inside (git fails there, as it did when they
 * were read-only placeholders, which told git a rebase was under way); one
 * that was there at start is mounted read-only. Called for a dirfd in OWN. */
static int own_state_dir(long dirfd, const char* name, long nl) {
  static const char* const names[] = {"rebase-merge", "rebase-apply", "sequencer"};
  int hit = 0;
  for (int k = 0; k < 3 && !hit; k++) {
    long m = slen(names[k]), j = 0;
    if (m != nl) continue;
    while (j < m && lower(name[j]) == names[k][j]) j++;
    hit = j == m;
  }
  if (!hit) return 0;
  unsigned long st[18];
  if (sys6(NR_newfstatat, dirfd, (long)"HEAD", (long)st, AT_SYMLINK_NOFOLLOW_, 0, 0) < 0) return 0;
  return sys6(NR_newfstatat, dirfd, (long)"objects", (long)st, AT_SYMLINK_NOFOLLOW_, 0, 0) == 0 ||
         sys6(NR_newfstatat, dirfd, (long)"commondir", (long)st, AT_SYMLINK_NOFOLLOW_, 0, 0) == 0;
}

/* Whether the component c[0..cn) matches the pattern component g[0..gn)
 * (a `*` matches any run of characters, '/' excluded). */
static int comp_match(const char* g, long gn, const char* c, long cn) {
  long gi = 0, ci = 0, star = -1, mark = 0;
  while (ci < cn) {
    if (gi < gn && g[gi] == '*') {
      star = gi++;
      mark = ci;
    } else if (gi < gn && g[gi] == c[ci]) {
      gi++;
      ci++;
    } else if (star >= 0) {
      gi = star + 1;
      ci = ++mark;
    } else {
      return 0;
    }
  }
  while (gi < gn && g[gi] == '*') gi++;
  return gi == gn;
}

/* The length of the prefix of p (n bytes) that the pattern pat matches
 * whole components of, pat's last one included (p is pat's path or one
 * beneath it), or 0; -1 when p names a directory above it (its components
 * match pat's first ones and pat has more). */
static long prot_prefix(const char* pat, const char* p, long n) {
  long i = 0, j = 0, end = 0;
  for (;;) {
    while (pat[i] == '/') i++;
    if (!pat[i]) return end; /* the pattern is used up: p[0..end) is it */
    while (j < n && p[j] == '/') j++;
    if (j >= n) return -1; /* p is shorter than the pattern */
    long gs = i, cs = j;
    while (pat[i] && pat[i] != '/') i++;
    while (j < n && p[j] != '/') j++;
    if (!comp_match(pat + gs, i - gs, p + cs, j - cs)) return 0;
    end = j;
  }
}

/* The mount id of path (statx STATX_MNT_ID, not following a last
 * symlink), or -1. */
static long mnt_id(const char* path) {
  unsigned char sx[256];
  if (sys6(NR_statx, AT_FDCWD_, (long)path, AT_SYMLINK_NOFOLLOW_, 0x1000 /* STATX_MNT_ID */,
           (long)sx, 0) < 0)
    return -1;
  unsigned long id = 0;
  for (int k = 7; k >= 0; k--) id = (id << 8) | sx[144 + k]; /* stx_mnt_id */
  return (long)id;
}

/* A name made, opened for writing or moved at p (absolute, n bytes) is a
 * protected path or beneath one whose read-only mount is gone (see PROT
 * above): -30 (EROFS), else 0. */
/* EROFS at the protected entry E, named for the reporter (refused 3),
 * which reports it where no fs events do (rootless: red team round 20) */
static long erofs_at(struct cstate* S, const char* e) {
  if (!rp.refused) {
    rp.refused = 3;
    scopy(rp.where, sizeof rp.where, e, slen(e));
  }
  return -30;
}

static long prot_refused_path(struct cstate* S, const char* p, long n) {
  for (char** g = prot; g && *g; g++) {
    const int fresh_only = (*g)[0] == '=', missing = (*g)[0] == '^';
    const char* e = *g + fresh_only + missing;
    long m = prot_prefix(e, p, n);
    /* a missing protected name has no mount and no placeholder: no
     * symlink, file or moved tree may take the place of a directory on
     * the way to it (a new, empty directory may) */
    if (m < 0 && missing && S->anc) return erofs_at(S, e);
    if (m <= 0) continue;
    if (fresh_only) {
      if (S->excl && m == n) continue; /* made new: git's own lock */
      return erofs_at(S, e);
    }
    char at[PATHMAX], up[PATHMAX];
    scopy(at, PATHMAX, p, m);
    long c = m;
    while (c > 1 && at[c - 1] != '/') c--;
    scopy(up, PATHMAX, at, c > 1 ? c - 1 : 1);
    long a = mnt_id(at), b = mnt_id(up);
    if (a < 0 || b < 0 || a == b) return erofs_at(S, e);
  }
  return 0;
}

/* prot_refused_path() of NAME in the directory DIRFD. */
static long prot_refused(struct cstate* S, long dirfd, const char* name) {
  /* the sandbox's own tmpfs mounts hold nothing of the host's */
  if (!prot || !*prot || on_private_fs(S, dirfd)) return 0;
  char p[PATHMAX];
  long n = fd_path(dirfd, p, sizeof p - 2);
  if (n <= 0 || p[0] != '/') return 0;
  if (p[n - 1] != '/') p[n++] = '/';
  long k = slen(name);
  if (n + k >= PATHMAX) return 0;
  scopy(p + n, PATHMAX - n, name, k);
  return prot_refused_path(S, p, n + k);
}

/* Whether the path P (n bytes) is a protected entry or below one. */
static int prot_named(struct cstate* S, const char* p, long n) {
  for (char** g = prot; g && *g; g++) {
    const char* e = *g + ((*g)[0] == '=' || (*g)[0] == '^');
    if (prot_prefix(e, p, n) > 0) return 1;
  }
  return 0;
}

static int judge(struct cstate* S, long dirfd, const char* name) {
  if (on_private_fs(S, dirfd)) return 0;
  long nl = slen(name);
  int w = dir_place(S, dirfd);
  /* a HEAD makes a git directory of its directory, but in OWN's own
   * places for one (own_head_ok); the name that would complete one is
   * refused everywhere */
  if (w == 0 && !is_git(name, nl) && !is_head(name, nl) && !completes_bare(dirfd, name, nl))
    return 0;
  if (w == 2 && !is_git(name, nl) && !completes_bare(dirfd, name, nl) &&
      (!is_head(name, nl) || own_head_ok(S, dirfd)) && !own_state_dir(dirfd, name, nl))
    return 0;
  refuse_name(S, dirfd, name);
  return 1;
}

static void closefd(long fd) {
  if (fd >= 0) sys6(NR_close, fd, 0, 0, 0, 0, 0);
}

/* The host's git writes its own files in OWN (COMMIT_EDITMSG, logs/HEAD,
 * FETCH_HEAD, ...) and follows a symlink it finds there (red team round
 * 6: `.git/COMMIT_EDITMSG -> config` had the host's commit write a chosen
 * text into .git/config). Git itself never makes a symlink in OWN, nor
 * moves a directory or links a file into it from outside: refused. src is
 * what is moved or linked (dirfd + name), dst where it goes. */
static int into_own_refused(struct cstate* S, long srcdir, const char* srcname, long dstdir,
                            const char* dstname) {
  if (on_private_fs(S, dstdir) || dir_place(S, dstdir) != 2) return 0;
  if (srcdir >= 0 && dir_place(S, srcdir) == 2) {
    unsigned long st[18];
    if (sys6(NR_newfstatat, srcdir, (long)srcname, (long)st, AT_SYMLINK_NOFOLLOW_, 0, 0) < 0)
      return 0;
    unsigned int mode = (unsigned int)(st[3] & 0xffffffff);
    if ((mode & 0170000) != 0120000) return 0; /* within OWN: but a symlink */
  }
  refuse_name(S, dstdir, dstname);
  return 1;
}

/* An open that writes: a write access mode or O_TRUNC. */
/* A write-open of /proc/PID/fd/N (or .../task/TID/fd/N) reopens the file
 * on the mount of the fd it names, past any read-only bind of the
 * sandbox's: allowed only when that fd was itself opened for writing, so
 * the reopen gives nothing the fd did not (red team round 14: `< .git/config`
 * reopened for writing through /proc/self/fd/0). PP: the fd directory's
 * path (N PP bytes); NAME: N. Unreadable flags: refused. */
static int magic_reopen_refused(struct cstate* S, const char* pp, long n, const char* name) {
  if (n < 3 || pp[n - 3] != '/' || pp[n - 2] != 'f' || pp[n - 1] != 'd') return 0;
  char info[96];
  long nl = slen(name);
  if (n + 5 + nl >= (long)sizeof info) return 1;
  scopy(info, sizeof info, pp, n);
  scopy(info + n, sizeof info - n, "info/", 5);
  scopy(info + n + 5, sizeof info - n - 5, name, nl);
  long fd = sys6(NR_openat, AT_FDCWD_, (long)info, O_CLOEXEC_, 0, 0, 0);
  int refused = 1;
  if (fd >= 0) {
    char b[512];
    long got = sys6(NR_read, fd, (long)b, sizeof b - 1, 0, 0, 0);
    closefd(fd);
    if (got > 0) {
      b[got] = 0;
      for (long i = 0; i + 6 < got; i++) {
        if (b[i] != 'f' || b[i + 1] != 'l' || b[i + 2] != 'a' || b[i + 3] != 'g' ||
            b[i + 4] != 's' || b[i + 5] != ':')
          continue;
        long j = i + 6;
        while (b[j] == ' ' || b[j] == '\t') j++;
        unsigned long fl = 0;
        while (b[j] >= '0' && b[j] <= '7') fl = fl * 8 + (unsigned long)(b[j++] - '0');
        refused = (fl & 3) == 0; /* O_RDONLY */
        break;
      }
    }
  }
  if (refused) {
    char target[PATHMAX];
    char l[128];
    scopy(l, sizeof l, pp, n);
    l[n] = '/';
    scopy(l + n + 1, sizeof l - n - 1, name, nl);
    long t = sys6(NR_readlinkat, AT_FDCWD_, (long)l, (long)target, sizeof target - 1, 0, 0);
    if (t > 0) refuse_at(S, target, t);
    else refuse_at(S, l, n + 1 + nl);
  }
  return refused;
}

static int writes(long fl) { return (fl & 3) != 0 || (fl & 01000 /* O_TRUNC */); }

/* An open: the last symlink followed here (up to 40), then judged. */
static long do_open(struct cstate* S, long dirfd, int* outfd) {
  char path[PATHMAX], name[PATHMAX], link[PATHMAX];
  long fl = (long)rq.flags;
  int r = rewrite_self(S, rq.p1, path);
  if (r) return r;
  if ((fl & O_TMPFILE_) == O_TMPFILE_) {
    /* an unnamed file in the directory path names */
    long d = sys6(NR_openat, dirfd, (long)path, O_PATH_ | O_DIRECTORY_ | O_CLOEXEC_, 0, 0, 0);
    if (d < 0) return d;
    if (!on_private_fs(S, d) && in_foreign_git(S, d)) {
      closefd(d);
      return -13;
    }
    long fd = sys6(NR_openat, d, (long)".", fl, (long)rq.mode, 0, 0);
    closefd(d);
    if (fd >= 0) *outfd = (int)fd;
    return fd < 0 ? fd : 0;
  }
  long base = dirfd;
  for (int hop = 0; hop < 40; hop++) {
    long parent = split_open(base, path, name);
    if (base != dirfd) closefd(base);
    if (parent < 0) return parent;
    if (on_proc(parent)) {
      /* /proc/PID/fd/N and the like: magic links, the kernel's to follow.
       * Never this process's own (its /proc/1). */
      char pp[64];
      long n = fd_path(parent, pp, sizeof pp);
      if (n >= 7 && pp[6] == '1' && (pp[7] == '/' || pp[7] == 0)) {
        closefd(parent);
        return -13;
      }
      if (writes(fl) && n > 0 && magic_reopen_refused(S, pp, n, name)) {
        closefd(parent);
        return -13;
      }
      long fd = sys6(NR_openat, parent, (long)name, fl | O_CLOEXEC_, (long)rq.mode, 0, 0);
      closefd(parent);
      if (fd >= 0 && opened_refused(S, fd)) {
        closefd(fd);
        return -13;
      }
      if (fd >= 0 && writes(fl)) {
        char fp[PATHMAX];
        long fn = fd_path(fd, fp, sizeof fp);
        long pr = fn > 0 && fp[0] == '/' ? prot_refused_path(S, fp, fn) : 0;
        if (pr) {
          closefd(fd);
          return pr;
        }
      }
      if (fd >= 0) *outfd = (int)fd;
      return fd < 0 ? fd : 0;
    }
    int follow = !(fl & O_NOFOLLOW_) && !((fl & O_CREAT_) && (fl & O_EXCL_));
    if (follow) {
      long l = sys6(NR_readlinkat, parent, (long)name, (long)link, sizeof link - 1, 0, 0);
      if (l >= 0) {
        link[l] = 0;
        int e = rewrite_self(S, link, path);
        if (e) {
          closefd(parent);
          return e;
        }
        base = path[0] == '/' ? AT_FDCWD_ : parent;
        if (base == AT_FDCWD_) closefd(parent);
        continue;
      }
    }
    int retried = 0, stripped = 0;
  again:
    if (judge(S, parent, name)) {
      closefd(parent);
      return -13;
    }
    /* O_CREAT of a name that is there: opened as it is, never made anew
     * (unlink is not mediated: it may be gone by the open, and a file made
     * then in the place of a directory on the way to a missing protected
     * name would not have been judged as one; gone by then, it is judged
     * again as a new name, below) */
    unsigned long st[18];
    if ((fl & O_CREAT_) && !retried &&
        sys6(NR_newfstatat, parent, (long)name, (long)st, AT_SYMLINK_NOFOLLOW_, 0, 0) == 0) {
      stripped = 1;
      /* EEXIST with O_EXCL; EISDIR for a directory, as the kernel */
      if ((fl & O_EXCL_) || (st[3] & 0170000) == 0040000) {
        closefd(parent);
        return (fl & O_EXCL_) ? -17 : -21;
      }
      fl &= ~O_CREAT_;
    }
    if (writes(fl) && !(fl & O_CREAT_) && own_objects_dir(S, parent)) {
      refuse_name(S, parent, name);
      closefd(parent);
      return -13;
    }
    if (writes(fl) || (fl & O_CREAT_)) {
      S->excl = (fl & O_CREAT_) && (fl & O_EXCL_);
      S->anc = (fl & O_CREAT_) != 0; /* made: judged as a name on the way too */
      long pr = prot_refused(S, parent, name);
      S->excl = S->anc = 0;
      if (pr) {
        closefd(parent);
        return pr;
      }
    }
    long fd = sys6(NR_openat, parent, (long)name, fl | O_NOFOLLOW_ | O_CLOEXEC_, (long)rq.mode,
                   0, 0);
    if (fd == -30 && !rp.refused) { /* a protected mount's answer: named too */
      refuse_name(S, parent, name);
      rp.refused = 3;
    }
    if (fd == -2 && stripped && !retried) {
      /* unlinked since the look: as if the call came after that, judged
       * (and made, if still missing) as a new name */
      fl |= O_CREAT_;
      retried = 1;
      goto again;
    }
    closefd(parent);
    /* ELOOP: a symlink put there since the look (follow) or asked for */
    if (fd == -40 && follow) return -40;
    if (fd >= 0) *outfd = (int)fd;
    return fd < 0 ? fd : 0;
  }
  return -40; /* ELOOP */
}

/* A name that is there: EEXIST, as the kernel answers it before any
 * permission or read-only check (mkdir -p walks through existing ones). */
static long there(long dir, const char* name) {
  unsigned long st[18];
  return sys6(NR_newfstatat, dir, (long)name, (long)st, AT_SYMLINK_NOFOLLOW_, 0, 0) == 0 ? -17 : 0;
}

/* One name of a two-name call (or mkdir's, mknod's): its parent and name. */
static long parent_of(struct cstate* S, long dirfd, const char* p, char* name) {
  char path[PATHMAX];
  int r = rewrite_self(S, p, path);
  if (r) return r;
  return split_open(dirfd, path, name);
}

static long do_call(struct cstate* S, long d1, long d2, int* outfd) {
  char n1[PATHMAX], n2[PATHMAX];
  long ret = -22, a = -1, b = -1;
  S->anc = 0;
  switch (rq.op) {
    case OP_OPEN:
      return do_open(S, d1, outfd);
    case OP_MKDIR:
    case OP_MKNOD:
      if ((a = parent_of(S, d1, rq.p1, n1)) < 0) return a;
      /* a FIFO or socket in OWN: the host's git would block on, or fail
       * at, a file it writes there */
      if ((ret = there(a, n1)))
        break;
      if (judge(S, a, n1) ||
          (rq.op == OP_MKNOD && (rq.mode & 0170000) != 0 && (rq.mode & 0170000) != 0100000 &&
           into_own_refused(S, -1, "", a, n1)))
        ret = -13;
      else if ((S->anc = rq.op == OP_MKNOD, ret = prot_refused(S, a, n1)))
        break;
      else if (rq.op == OP_MKDIR)
        ret = sys6(NR_mkdirat, a, (long)n1, (long)rq.mode, 0, 0, 0);
      else
        ret = sys6(NR_mknodat, a, (long)n1, (long)rq.mode, (long)rq.dev, 0, 0);
      break;
    case OP_SYMLINK:
      if ((a = parent_of(S, d2, rq.p2, n2)) < 0) return a;
      if ((ret = there(a, n2)))
        break;
      if (judge(S, a, n2) || into_own_refused(S, -1, "", a, n2))
        ret = -13;
      else if (!(S->anc = 1, ret = prot_refused(S, a, n2)))
        ret = sys6(NR_symlinkat, (long)rq.p1, a, (long)n2, 0, 0, 0);
      break;
    case OP_LINK: {
      /* the old file as an fd (following its last symlink only when asked),
       * judged where it is, then linked by /proc/self/fd/N */
      long old, own_old = 1;
      int old_place = 0; /* where the old file is: 2 in OWN (linking inside OWN) */
      if ((rq.flags & AT_EMPTY_PATH_) && rq.len1 == 0) {
        old = d1; /* the fd is the file itself */
        own_old = 0;
      } else {
        if ((a = parent_of(S, d1, rq.p1, n1)) < 0) return a;
        old = sys6(NR_openat, a, (long)n1,
                   O_PATH_ | O_CLOEXEC_ | ((rq.flags & AT_SYMLINK_FOLLOW_) ? 0 : O_NOFOLLOW_), 0, 0,
                   0);
        closefd(a);
        a = -1;
      }
      if (old < 0) return old;
      char op[PATHMAX];
      long n = fd_path(old, op, sizeof op);
      /* a protected file whose mount came off: no second name for it (a
       * write through that name would reach it) */
      long pr = n > 0 && op[0] == '/' && !on_private_fs(S, old) ? prot_refused_path(S, op, n) : 0;
      if (pr) {
        if (own_old) closefd(old);
        return pr;
      }
      if (n > 0 && op[0] == '/') {
        long cut = n;
        while (cut > 0 && op[cut - 1] != '/') cut--;
        long pd = sys6(NR_openat, AT_FDCWD_, (long)(cut > 1 ? (op[cut - 1] = 0, op) : "/"),
                       O_PATH_ | O_DIRECTORY_ | O_CLOEXEC_, 0, 0, 0);
        old_place = pd < 0 ? 1 : on_private_fs(S, pd) ? 0 : dir_place(S, pd);
        int bad = old_place == 1;
        closefd(pd);
        if (bad) {
          if (own_old) closefd(old);
          return -13;
        }
      }
      if ((b = parent_of(S, d2, rq.p2, n2)) < 0) {
        if (own_old) closefd(old);
        return b;
      }
      if ((ret = there(b, n2))) {
        /* EEXIST */
      } else if (judge(S, b, n2) || (old_place != 2 && into_own_refused(S, -1, "", b, n2))) {
        ret = -13;
      } else if ((S->anc = 1, ret = prot_refused(S, b, n2))) {
        /* EROFS */
      } else {
        char l[32] = "/proc/self/fd/";
        long k = 14;
        k += put_num(l + k, old);
        l[k] = 0;
        ret = sys6(NR_linkat, AT_FDCWD_, (long)l, b, (long)n2, AT_SYMLINK_FOLLOW_, 0);
        /* a protected file's own mount answers EXDEV: named for the reporter */
        if (ret == -18 && (n = fd_path(old, op, sizeof op)) > 0 && prot_named(S, op, n)) {
          refuse_at(S, op, n);
          rp.refused = 3;
        }
      }
      if (own_old) closefd(old);
      break;
    }
    case OP_BIND: {
      /* d1: the socket, d2: the caller's cwd; p1: the sockaddr as given.
       * A unix socket's path makes a name: judged, then bound from its
       * parent (the path may be relative to the caller's cwd). */
      const unsigned char* sa = (const unsigned char*)rq.p1;
      long len = rq.len1;
      if (len > 2 && sa[0] == 1 && sa[1] == 0 && sa[2] != 0) {
        char path[PATHMAX];
        long m = 0;
        while (m < len - 2 && m < 108 && sa[2 + m]) path[m] = (char)sa[2 + m], m++;
        path[m] = 0;
        if ((a = parent_of(S, d2, path, n1)) < 0) return a;
        if (judge(S, a, n1) || into_own_refused(S, -1, "", a, n1)) {
          ret = -13;
        } else if ((S->anc = 1, ret = prot_refused(S, a, n1))) {
          /* EROFS */
        } else if ((ret = sys6(NR_fchdir, a, 0, 0, 0, 0, 0)) == 0) {
          unsigned char un[110] = {1, 0};
          long k = slen(n1);
          for (long x = 0; x < k && x < 107; x++) un[2 + x] = (unsigned char)n1[x];
          ret = sys6(NR_bind, d1, (long)un, 2 + k + 1, 0, 0, 0);
          sys6(NR_chdir, (long)"/", 0, 0, 0, 0, 0);
        }
      } else {
        ret = sys6(NR_bind, d1, (long)sa, len, 0, 0, 0);
      }
      break;
    }
    case OP_RENAME:
      if ((a = parent_of(S, d1, rq.p1, n1)) < 0) return a;
      if ((b = parent_of(S, d2, rq.p2, n2)) < 0) break;
      if (judge(S, b, n2) ||
          ((rq.flags & RENAME_EXCHANGE_) ? judge(S, a, n1)
                                         : (!on_private_fs(S, a) && in_foreign_git(S, a))) ||
          into_own_refused(S, a, n1, b, n2) ||
          ((rq.flags & RENAME_EXCHANGE_) && into_own_refused(S, b, n2, a, n1)))
        ret = -13;
      else if ((S->anc = 1, ret = prot_refused(S, b, n2)) || (ret = prot_refused(S, a, n1)))
        ; /* EROFS: a protected name (or a directory above a missing one) moved
           * away, or another moved onto it */
      else
        ret = sys6(NR_renameat2, a, (long)n1, b, (long)n2, (long)rq.flags, 0);
      if (b < 0) ret = b;
      break;
  }
  /* a protected mount's answer (EBUSY or EXDEV: a rename of one) */
  if (ret == -30 && !rp.refused && (a >= 0 || b >= 0)) {
    if (rq.op == OP_SYMLINK || b < 0)
      refuse_name(S, a, rq.op == OP_SYMLINK ? n2 : n1);
    else
      refuse_name(S, b, n2);
    rp.refused = 3;
  } else if ((ret == -16 || ret == -18) && rq.op == OP_RENAME && !rp.refused && a >= 0) {
    refuse_name(S, a, n1);
    rp.refused = prot_named(S, rp.where, slen(rp.where)) ? 3 : 0;
  }
  closefd(a);
  closefd(b);
  return ret;
}

/* One request from the reporter: 0, or -1 when the socket is gone. */
static int serve_create(struct cstate* S, long sock) {
  int fds[2] = {-1, -1};
  union {
    char buf[64];
    unsigned long align;
  } cb;
  struct kiovec iov = {&rq, sizeof rq};
  struct kmsghdr mh = {0, 0, &iov, 1, cb.buf, sizeof cb.buf, 0};
  long n = sys6(NR_recvmsg, sock, (long)&mh, O_CLOEXEC_ /* MSG_CMSG_CLOEXEC */, 0, 0, 0);
  if (n == 0 || (n < 0 && n != -4 /* EINTR */ && n != -11 /* EAGAIN */)) return -1;
  if (n < 0) return 0;
  /* struct cmsghdr: len (8), level (4), type (4), then the fds */
  if (mh.controllen >= 20) {
    unsigned long clen = *(unsigned long*)cb.buf;
    int level = *(int*)(cb.buf + 8), type = *(int*)(cb.buf + 12);
    if (level == 1 /* SOL_SOCKET */ && type == 1 /* SCM_RIGHTS */) {
      long k = (long)(clen - 16) / 4;
      for (long i = 0; i < k && i < 2; i++) fds[i] = ((int*)(cb.buf + 16))[i];
    }
  }
  rp.ret = -13;
  rp.refused = 0;
  S->need_ids = 0;
  rp.where[0] = 0;
  int outfd = -1;
  if (n == (long)sizeof rq && rq.len1 < PATHMAX && rq.len2 < PATHMAX) {
    rq.p1[rq.len1] = 0;
    rq.p2[rq.len2] = 0;
    long d1 = fds[0], d2 = fds[1] >= 0 ? fds[1] : fds[0];
    /* one dir for a symlink (its p1 is text): it is the new name's */
    if (rq.op == OP_SYMLINK) d2 = fds[0];
    sys6(NR_umask, rq.umask & 0777, 0, 0, 0, 0, 0);
    if (d1 >= 0) rp.ret = do_call(S, d1, d2, &outfd);
    if (S->need_ids && rp.ret == -11) {
      rp.refused = 2;
      closefd(outfd);
      outfd = -1;
    }
  }
  closefd(fds[0]);
  closefd(fds[1]);
  union {
    char buf[24];
    unsigned long align;
  } ob;
  struct kiovec oiov = {&rp, sizeof rp};
  struct kmsghdr om = {0, 0, &oiov, 1, 0, 0, 0};
  if (outfd >= 0) {
    *(unsigned long*)ob.buf = 20; /* CMSG_LEN(sizeof(int)) */
    *(int*)(ob.buf + 8) = 1;
    *(int*)(ob.buf + 12) = 1;
    *(int*)(ob.buf + 16) = outfd;
    om.control = ob.buf;
    om.controllen = 24; /* CMSG_SPACE(sizeof(int)) */
  }
  sys6(NR_sendmsg, sock, (long)&om, 0x4000 /* MSG_NOSIGNAL */, 0, 0, 0);
  closefd(outfd);
  return 0;
}

__attribute__((noreturn)) static void init_main(long argc, char** argv) {
  long agent = argc >= 4 ? number(argv[1]) : -1;
  long events = argc >= 4 ? number(argv[2]) : -1;
  long reporter = argc >= 5 ? number(argv[4]) : -1; /* "-": none */
  /* The git rule: CREATE_FD DEVS (comma-separated st_dev) OWN... */
  long create = argc >= 7 ? number(argv[5]) : -1;
  if (agent <= 0) sys_exit_group(127);
  struct cstate st_, *S = &st_;
  n_priv = 0;
  own_dirs = 0;
  prot = 0;
  if (create >= 0) {
    own_dirs = argv + 7;
    /* OWN... "+" PROT... */
    for (char** a = own_dirs; *a; a++) {
      if ((*a)[0] == '+' && (*a)[1] == 0) {
        *a = 0;
        prot = a + 1;
        break;
      }
    }
    const char* d = argv[6];
    while (*d && n_priv < 16) {
      unsigned long v = 0;
      while (*d >= '0' && *d <= '9') v = v * 10 + (unsigned long)(*d++ - '0');
      priv_devs[n_priv++] = v;
      if (*d == ',') d++;
      else break;
    }
  }
  sys6(NR_prctl, 4 /* PR_SET_DUMPABLE */, 0, 0, 0, 0, 0);
  /* An ignored SIGCHLD (it survives exec) would reap the agent unseen. */
  unsigned long dfl[4] = {0 /* SIG_DFL */, 0, 0, 0};
  sys6(NR_rt_sigaction, 17, (long)dfl, 0, 8, 0, 0);
  unsigned long all = ~0UL;
  sys6(NR_rt_sigprocmask, 0 /* SIG_BLOCK */, (long)&all, 0, 8, 0, 0);
  long sfd = sys6(NR_signalfd4, -1, (long)&all, 8, 02000000, 0, 0);
  int status = 0, done = 0;
  /* Reap first, then wait for a signal: a SIGCHLD that came before the exec
   * is gone (setting SIG_DFL above discards a pending one), so waiting first
   * could wait forever for an agent that has already exited. */
  while (!done) {
    for (;;) {
      int st = 0;
      long pid = sys6(NR_wait4, -1, (long)&st, sfd >= 0 ? 1 /* WNOHANG */ : 0, 0, 0, 0);
      if (pid == -10 /* ECHILD: no child left, the agent gone unseen */) {
        done = 1;
        break;
      }
      if (pid <= 0) break;
      if (pid == agent) {
        status = st;
        done = 1;
        break;
      }
    }
    if (done || sfd < 0) continue;
    if (create >= 0) {
      /* the signals and the reporter's requests */
      struct {
        int fd;
        short events, revents;
      } p[2] = {{(int)sfd, 1, 0}, {(int)create, 1, 0}};
      if (sys6(NR_poll, (long)p, 2, -1, 0, 0, 0) <= 0) continue;
      if (p[1].revents && serve_create(S, create) < 0) {
        closefd(create);
        create = -1;
      }
      if (!(p[0].revents & 1)) continue;
    }
    unsigned int info[32]; /* struct signalfd_siginfo: ssi_signo first */
    if (sys6(NR_read, sfd, (long)info, sizeof info, 0, 0, 0) != (long)sizeof info) continue;
    if (info[0] != 17 /* SIGCHLD: reap above */) sys6(NR_kill, agent, info[0], 0, 0, 0, 0);
  }
  long code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f);
  /* The git rule's calls end with the agent: a reporter waiting on one
   * gets the hang-up at once (it refuses), not after its timeout while we
   * wait on it below. */
  closefd(create);
  if (same(argv[3], "dns")) dns_barrier();
  if (!reporter_barrier(reporter) || violated(events)) code = 3;
  sys_exit_group(code);
}

__attribute__((noreturn, used)) void tramp_main(long* sp) {
  long argc = sp[0];
  char** argv = (char**)(sp + 1);
  char** envp = argv + argc + 1;
  if (argc >= 1 && same(argv[0], kInitMarker)) init_main(argc, argv);
  if (argc >= 2) {
    const char* a0 = argv[0];
    long i = 0;
    while (kMarker[i] != '\0' && a0[i] == kMarker[i]) i++;
    if (kMarker[i] == '\0' && a0[i] == '\0') sys_execve(argv[1], argv + 2, envp);
  }
  sys_exit_group(127);
}
