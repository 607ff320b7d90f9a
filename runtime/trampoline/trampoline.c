/* The exec trampoline (CVE-2019-5736 hardening).
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
 *   argv = "comet-init" AGENT_PID EVENTS_FD DNS ("dns" or "-") [REPORTER_FD or "-"]
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

__attribute__((noreturn)) static void init_main(long argc, char** argv) {
  long agent = argc == 4 || argc == 5 ? number(argv[1]) : -1;
  long events = argc == 4 || argc == 5 ? number(argv[2]) : -1;
  long reporter = argc == 5 ? number(argv[4]) : -1; /* "-": none */
  if (agent <= 0) sys_exit_group(127);
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
    unsigned int info[32]; /* struct signalfd_siginfo: ssi_signo first */
    if (sys6(NR_read, sfd, (long)info, sizeof info, 0, 0, 0) != (long)sizeof info) continue;
    if (info[0] != 17 /* SIGCHLD: reap above */) sys6(NR_kill, agent, info[0], 0, 0, 0, 0);
  }
  long code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f);
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
