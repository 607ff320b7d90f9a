/*
 * packprobe: a static program used as a pack's runtime.interpreter by the
 * pack enforcement tests. argv[1] is the pack's entrypoint (ignored); each
 * later argument is one operation. For each it prints one JSON line:
 *   {"op":"fork","ok":false,"errno":"EPERM","data":"..."}
 * Build: cc -static -O2 -o packprobe packprobe.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <sys/un.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static const char *ename(int e) {
    switch (e) {
    case 0: return "0";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EROFS: return "EROFS";
    case ENOSYS: return "ENOSYS";
    case EINVAL: return "EINVAL";
    case EFAULT: return "EFAULT";
    case ENOEXEC: return "ENOEXEC";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EBADF: return "EBADF";
    case ESRCH: return "ESRCH";
    case EEXIST: return "EEXIST";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EXDEV: return "EXDEV";
    case ENOSPC: return "ENOSPC";
    case EAGAIN: return "EAGAIN";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ENODATA: return "ENODATA";
    case EADDRINUSE: return "EADDRINUSE";
    default: {
        static char buf[32];
        snprintf(buf, sizeof buf, "E%d", e);
        return buf;
    }
    }
}

static char race_path[64] = "/usr/bin/packprobe";
static volatile int race_stop, race_flips;
static void *flipper(void *a) {
    (void)a;
    while (!race_stop) {
        race_flips++;
        memcpy(race_path, "/bin/busybox\0\0\0\0\0\0", 19);
        __asm__ volatile("" ::: "memory");  /* not a dead store: the kernel reads it */
        for (volatile int i = 0; i < 300; i++) {}
        memcpy(race_path, "/usr/bin/packprobe", 19);
        __asm__ volatile("" ::: "memory");
        for (volatile int i = 0; i < 100; i++) {}
    }
    return NULL;
}

static void *sleeper(void *a) {
    (void)a;
    for (;;) pause();
    return NULL;
}

static void report(const char *op, int ok, int err, const char *data) {
    printf("{\"op\":\"%s\",\"ok\":%s,\"errno\":\"%s\",\"data\":\"", op, ok ? "true" : "false",
           ok ? "0" : ename(err));
    for (const char *p = data ? data : ""; *p; p++) {
        if (*p == '"' || *p == '\\') putchar('\\');
        if ((unsigned char)*p < 0x20) { printf("\\u%04x", *p); continue; }
        putchar(*p);
    }
    printf("\"}\n");
    fflush(stdout);
}

#define RES(op, expr) do { errno = 0; long r_ = (long)(expr); int e_ = errno; \
    report(op, r_ >= 0, e_, NULL); } while (0)

static void *thread_fn(void *arg) { return arg; }

int main(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        char *op = argv[i];
        char *arg = strchr(op, '=');
        if (arg) *arg++ = '\0';
        if (!strcmp(op, "stdout")) {  /* stdout=PATH: results from here on go to PATH */
            fflush(stdout);
            int fd = open(arg ? arg : "", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
            if (fd < 0 || dup2(fd, 1) < 0) { report(op, 0, errno, arg); continue; }
            close(fd);
            setvbuf(stdout, NULL, _IOLBF, 0);
            report(op, 1, 0, arg);
        } else if (!strcmp(op, "fork")) {
            pid_t p = fork();
            if (p == 0) _exit(0);
            int e = errno;
            if (p > 0) waitpid(p, NULL, 0);
            report(op, p > 0, e, NULL);
        } else if (!strcmp(op, "vfork")) {
            long p = syscall(SYS_vfork);
            if (p == 0) _exit(0);
            int e = errno;
            if (p > 0) waitpid((pid_t)p, NULL, 0);
            report(op, p > 0, e, NULL);
        } else if (!strcmp(op, "clone-process")) {
            long p = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
            if (p == 0) _exit(0);
            int e = errno;
            if (p > 0) waitpid((pid_t)p, NULL, 0);
            report(op, p > 0, e, NULL);
        } else if (!strcmp(op, "clone3")) {
            long r = syscall(SYS_clone3, NULL, 0);
            report(op, r >= 0, errno, NULL);
        } else if (!strcmp(op, "thread")) {
            pthread_t t;
            int r = pthread_create(&t, NULL, thread_fn, NULL);
            if (r == 0) pthread_join(t, NULL);
            report(op, r == 0, r, NULL);
        } else if (!strcmp(op, "exec")) {
            char *av[] = {arg, NULL};
            execv(arg, av);
            report(op, 0, errno, arg);
        } else if (!strcmp(op, "exec-bad-utf8")) {  /* a path that is not UTF-8 */
            char path[] = "/bin/\xff\xfe";
            char *av[] = {path, NULL};
            execv(path, av);
            report(op, 0, errno, "not utf-8");
        } else if (!strcmp(op, "memfd-exec")) {
            int m = (int)syscall(SYS_memfd_create, "x", 0);
            if (m < 0) { report(op, 0, errno, "memfd_create"); continue; }
            int src = open("/proc/self/exe", O_RDONLY);
            char buf[65536];
            ssize_t n;
            while (src >= 0 && (n = read(src, buf, sizeof buf)) > 0) (void)!write(m, buf, n);
            char *av[] = {"packprobe", "x", NULL};
            syscall(SYS_execveat, m, "", av, environ, AT_EMPTY_PATH);
            report(op, 0, errno, "execveat");
        } else if (!strcmp(op, "clock_settime")) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            RES(op, clock_settime(CLOCK_REALTIME, &ts));
        } else if (!strcmp(op, "settimeofday")) {
            struct timeval tv;
            gettimeofday(&tv, NULL);
            RES(op, settimeofday(&tv, NULL));
        } else if (!strcmp(op, "adjtimex-read")) {
            struct timex tx = {0};
            RES(op, adjtimex(&tx));
        } else if (!strcmp(op, "adjtimex-set")) {
            struct timex tx = {0};
            tx.modes = ADJ_OFFSET;
            RES(op, adjtimex(&tx));
        } else if (!strcmp(op, "clock_gettime")) {
            struct timespec ts;
            RES(op, clock_gettime(CLOCK_REALTIME, &ts));
        } else if (!strcmp(op, "mount-tmpfs")) {
            RES(op, mount("none", "/tmp", "tmpfs", 0, NULL));
        } else if (!strcmp(op, "remount-root-rw")) {
            RES(op, mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL));
        } else if (!strcmp(op, "umount")) {
            RES(op, umount2(arg, MNT_DETACH));
        } else if (!strcmp(op, "unshare-user")) {
            RES(op, unshare(CLONE_NEWUSER));
        } else if (!strcmp(op, "unshare-net")) {
            RES(op, unshare(CLONE_NEWNET));
        } else if (!strcmp(op, "setns")) {
            int fd = open(arg, O_RDONLY);
            if (fd < 0) { report(op, 0, errno, "open"); continue; }
            RES(op, setns(fd, 0));
        } else if (!strcmp(op, "int80-getpid") || !strcmp(op, "int80-unshare-user")) {
            /* The i386 syscall table through int 0x80 (getpid 20, unshare
             * 310): a second ABI a filter of only x86_64 rules would miss. */
#if defined(__x86_64__)
            long nr = !strcmp(op, "int80-getpid") ? 20 : 310, a1 = CLONE_NEWUSER, r;
            __asm__ volatile("int $0x80" : "=a"(r) : "a"(nr), "b"(a1) : "memory");
            char d[32];
            snprintf(d, sizeof d, "%ld", r);
            report(op, r >= 0, r < 0 ? (int)-r : 0, d);
#else
            report(op, 0, ENOSYS, "not x86_64");
#endif
        } else if (!strcmp(op, "x32-getpid") || !strcmp(op, "x32-unshare-user")) {
            /* The x32 table: x86_64's numbers with bit 30 set. */
#if defined(__x86_64__)
            long nr = (!strcmp(op, "x32-getpid") ? 39 : 272) | 0x40000000L;
            errno = 0;
            long r = syscall(nr, CLONE_NEWUSER);
            char d[32];
            snprintf(d, sizeof d, "%ld", r);
            report(op, r >= 0, r < 0 ? errno : 0, d);
#else
            report(op, 0, ENOSYS, "not x86_64");
#endif
        } else if (!strcmp(op, "kill")) {  /* kill=PID:SIG */
            RES(op, kill(atoi(arg), atoi(strchr(arg, ':') ? strchr(arg, ':') + 1 : "0")));
        } else if (!strcmp(op, "ptrace-attach")) {
            RES(op, ptrace(PTRACE_ATTACH, 1, 0, 0));
        } else if (!strcmp(op, "bpf")) {
            union bpf_attr a;
            memset(&a, 0, sizeof a);
            RES(op, syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a));
        } else if (!strcmp(op, "keyctl")) {
            RES(op, syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
        } else if (!strcmp(op, "io_uring_setup")) {
            char params[120];
            memset(params, 0, sizeof params);
            RES(op, syscall(SYS_io_uring_setup, 4, params));
        } else if (!strcmp(op, "socket-raw")) {
            RES(op, socket(AF_INET, SOCK_RAW, 1));
        } else if (!strcmp(op, "socket-packet")) {
            RES(op, socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL)));
        } else if (!strcmp(op, "socket-packet-hibits")) {
            /* the family as a 64-bit value with high bits: the kernel reads 32 */
            RES(op, syscall(SYS_socket, 0x100000000L | AF_PACKET, SOCK_DGRAM, 0));
        } else if (!strcmp(op, "socket-inet")) {
            RES(op, socket(AF_INET, SOCK_STREAM, 0));
        } else if (!strcmp(op, "socket-unix")) {
            RES(op, socket(AF_UNIX, SOCK_STREAM, 0));
        } else if (!strcmp(op, "cat")) {  /* cat=PATH: the file, raw, on stdout; then the result */
            int fd = open(arg, O_RDONLY);
            int e = errno;
            char buf[4096];
            ssize_t n, total = 0;
            fflush(stdout);
            while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0) {
                (void)!write(1, buf, (size_t)n);
                total += n;
            }
            if (fd >= 0) close(fd);
            char d[32];
            snprintf(d, sizeof d, "%zd", total);
            printf("\n");
            report(op, fd >= 0, fd >= 0 ? 0 : e, d);
        } else if (!strcmp(op, "open-read")) {
            int fd = open(arg, O_RDONLY);
            char buf[16];
            int e = errno;
            ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
            if (fd >= 0 && n < 0) e = errno;
            char d[32];
            snprintf(d, sizeof d, "%zd", n);
            report(op, n >= 0, e, d);
        } else if (!strcmp(op, "stat")) {
            struct stat st;
            RES(op, stat(arg, &st));
        } else if (!strcmp(op, "write")) {
            int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            int e = errno;
            if (fd >= 0 && write(fd, "hello\n", 6) != 6) e = errno;
            report(op, fd >= 0, e, NULL);
            if (fd >= 0) close(fd);
        } else if (!strcmp(op, "copy-self")) {
            int src = open("/proc/self/exe", O_RDONLY);
            int dst = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0755);
            int e = errno;
            char buf[65536];
            ssize_t n;
            while (src >= 0 && dst >= 0 && (n = read(src, buf, sizeof buf)) > 0)
                if (write(dst, buf, n) != n) { e = errno; break; }
            report(op, src >= 0 && dst >= 0, e, arg);
            if (dst >= 0) close(dst);
            if (src >= 0) close(src);
        } else if (!strcmp(op, "open_by_handle_at")) {
            struct { unsigned int bytes; int type; unsigned char h[128]; } fh;
            memset(&fh, 0, sizeof fh);
            fh.bytes = 8;
            fh.type = 1; /* FILEID_INO32_GEN */
            RES(op, syscall(SYS_open_by_handle_at, AT_FDCWD, &fh, O_RDONLY));
        } else if (!strcmp(op, "stdio")) {
            /* what fds 0-2 are: readlink of /proc/self/fd/N, and for a
             * regular file its first bytes through a fresh open */
            char out[600] = "";
            for (int fd = 0; fd < 3; fd++) {
                char link[64], target[128] = "";
                snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
                ssize_t n = readlink(link, target, sizeof target - 1);
                if (n > 0) target[n] = 0;
                struct stat st;
                char peek[40] = "";
                if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
                    int f = open(link, O_RDONLY);
                    ssize_t k = f >= 0 ? pread(f, peek, sizeof peek - 1, 0) : -1;
                    if (k > 0) peek[k] = 0;
                    for (char *c = peek; *c; c++) if (*c == '"' || *c == '\\' || *c < 32) *c = '_';
                    if (f >= 0) close(f);
                }
                for (char *c = target; *c; c++) if (*c == '"' || *c == '\\') *c = '_';
                char one[200];
                snprintf(one, sizeof one, "%d=%s|%s;", fd, target, peek);
                strncat(out, one, sizeof out - strlen(out) - 1);
            }
            report(op, 1, 0, out);
        } else if (!strcmp(op, "sendto-unix") || !strcmp(op, "sendmsg-unix")) {
            /* a datagram to a pathname unix socket (sendto / sendmsg) */
            int sk = socket(AF_UNIX, SOCK_DGRAM, 0);
            struct sockaddr_un sa = {.sun_family = AF_UNIX};
            strncpy(sa.sun_path, arg, sizeof sa.sun_path - 1);
            if (!strcmp(op, "sendto-unix")) {
                RES(op, sendto(sk, "x", 1, 0, (struct sockaddr *)&sa, sizeof sa));
            } else {
                struct iovec iv = {"x", 1};
                struct msghdr mh = {.msg_name = &sa, .msg_namelen = sizeof sa, .msg_iov = &iv, .msg_iovlen = 1};
                RES(op, sendmsg(sk, &mh, 0));
            }
            close(sk);
        } else if (!strcmp(op, "mkdirs")) {  /* mkdirs=PREFIX:N: N empty dirs; data: how many */
            char path[256];
            const char *colon = strchr(arg, ':');
            int n = colon ? atoi(colon + 1) : 1, made = 0, e = 0;
            for (int k = 0; k < n; k++) {
                snprintf(path, sizeof path, "%.*s%d", colon ? (int)(colon - arg) : 0, arg, k);
                if (mkdir(path, 0755) != 0) { e = errno; break; }
                made++;
            }
            char d[32];
            snprintf(d, sizeof d, "%d", made);
            report(op, e == 0, e, d);
        } else if (!strcmp(op, "blocks")) {  /* blocks=PATH: st_blocks (512 B) */
            struct stat st;
            int r = stat(arg, &st);
            char d[32];
            snprintf(d, sizeof d, "%lld", r == 0 ? (long long)st.st_blocks : -1LL);
            report(op, r == 0, r == 0 ? 0 : errno, d);
        } else if (!strcmp(op, "fds")) {
            /* every open fd above 2: none may be inherited from the runtime */
            char list[512] = "";
            for (int fd = 3; fd < 4096; fd++) {
                if (fcntl(fd, F_GETFD) >= 0) {
                    char b[16];
                    snprintf(b, sizeof b, "%d ", fd);
                    if (strlen(list) + strlen(b) < sizeof list) strcat(list, b);
                }
            }
            report(op, 1, 0, list);
        } else if (!strcmp(op, "ls")) {
            DIR *d = opendir(arg);
            if (!d) { report(op, 0, errno, arg); continue; }
            char list[2048] = "";
            struct dirent *de;
            while ((de = readdir(d))) {
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
                if (strlen(list) + strlen(de->d_name) + 2 < sizeof list) {
                    strcat(list, de->d_name);
                    strcat(list, " ");
                }
            }
            closedir(d);
            report(op, 1, 0, list);
        } else if (!strcmp(op, "fill")) {
            int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0) { report(op, 0, errno, arg); continue; }
            static char buf[1 << 20];
            long long total = 0;
            int e = 0;
            for (int k = 0; k < 4096; k++) {
                ssize_t n = write(fd, buf, sizeof buf);
                if (n < 0) { e = errno; break; }
                total += n;
            }
            close(fd);
            unlink(arg);
            char d[32];
            snprintf(d, sizeof d, "%lld", total);
            report(op, e == 0, e, d);
        } else if (!strcmp(op, "fill-keep")) {  /* fill-keep=PATH:MIB: up to MIB MiB, kept */
            char path[256];
            const char *colon = strchr(arg, ':');
            snprintf(path, sizeof path, "%.*s", colon ? (int)(colon - arg) : 0, arg);
            int mib = colon ? atoi(colon + 1) : 1;
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0) { report(op, 0, errno, path); continue; }
            static char kbuf[1 << 20];
            memset(kbuf, 'x', sizeof kbuf);
            long long total = 0;
            int e = 0;
            for (int k = 0; k < mib; k++) {
                ssize_t n = write(fd, kbuf, sizeof kbuf);
                if (n < 0) { e = errno; break; }
                total += n;
                if (n < (ssize_t)sizeof kbuf) { e = ENOSPC; break; }
            }
            close(fd);
            char d[32];
            snprintf(d, sizeof d, "%lld", total);
            report(op, e == 0, e, d);
        } else if (!strcmp(op, "sparse")) {  /* sparse=PATH:MIB: a hole of MIB MiB, then 1 byte */
            char path[256];
            const char *colon = strchr(arg, ':');
            snprintf(path, sizeof path, "%.*s", colon ? (int)(colon - arg) : 0, arg);
            long long size = (colon ? atoll(colon + 1) : 1) << 20;
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0) { report(op, 0, errno, path); continue; }
            RES(op, pwrite(fd, "e", 1, size - 1));
            close(fd);
        } else if (!strcmp(op, "threads")) {  /* threads=N: start N sleeping threads; data: how many */
            int n = atoi(arg), made = 0, e = 0;
            for (int k = 0; k < n; k++) {
                pthread_t t;
                int r = pthread_create(&t, NULL, sleeper, NULL);
                if (r) { e = r; break; }
                made++;
            }
            char d[32];
            snprintf(d, sizeof d, "%d", made);
            report(op, e == 0, e, d);
        } else if (!strcmp(op, "alloc")) {  /* alloc=MIB: touch MIB MiB of memory */
            long long mib = atoll(arg);
            char *p = malloc((size_t)mib << 20);
            if (!p) { report(op, 0, ENOMEM, "malloc"); continue; }
            for (long long k = 0; k < (mib << 20); k += 4096) p[k] = 1;
            report(op, 1, 0, "touched");
        } else if (!strcmp(op, "connect-unix")) {
            int s = socket(AF_UNIX, SOCK_STREAM, 0);
            struct sockaddr_un sa;
            memset(&sa, 0, sizeof sa);
            sa.sun_family = AF_UNIX;
            snprintf(sa.sun_path, sizeof sa.sun_path, "%s", arg);
            RES(op, connect(s, (struct sockaddr *)&sa, sizeof sa));
            close(s);
        } else if (!strcmp(op, "connect-unix-len")) {  /* connect-unix-len=LEN:PATH, addrlen 2+LEN */
            int s = socket(AF_UNIX, SOCK_STREAM, 0);
            struct sockaddr_un sa;
            const char *colon = strchr(arg, ':');
            memset(&sa, 0, sizeof sa);
            sa.sun_family = AF_UNIX;
            snprintf(sa.sun_path, sizeof sa.sun_path, "%s", colon ? colon + 1 : "");
            RES(op, connect(s, (struct sockaddr *)&sa, (socklen_t)(2 + atoi(arg))));
            close(s);
        } else if (!strcmp(op, "connect-unix-rawlen")) {  /* =LEN:PATH, LEN a 64-bit number */
            int s = socket(AF_UNIX, SOCK_STREAM, 0);
            struct sockaddr_un sa;
            const char *colon = strchr(arg, ':');
            memset(&sa, 0, sizeof sa);
            sa.sun_family = AF_UNIX;
            snprintf(sa.sun_path, sizeof sa.sun_path, "%s", colon ? colon + 1 : "");
            RES(op, syscall(SYS_connect, s, &sa, (long)strtoull(arg, NULL, 0)));
            close(s);
        } else if (!strcmp(op, "lstat")) {
            struct stat st;
            RES(op, lstat(arg, &st));
        } else if (!strcmp(op, "utime-nofollow")) {
            RES(op, utimensat(AT_FDCWD, arg, NULL, AT_SYMLINK_NOFOLLOW));
        } else if (!strcmp(op, "futimens")) {  /* utimensat(fd, NULL): no path */
            int fd = open(arg, O_RDONLY);
            RES(op, futimens(fd, NULL));  /* fd left open: the reporter names the file */
        } else if (!strcmp(op, "fchmod") || !strcmp(op, "fchown") || !strcmp(op, "fsetxattr") ||
                   !strcmp(op, "fchmodat2-empty") || !strcmp(op, "fchownat-empty")) {
            /* writes through an fd opened read-only: no path in the call */
            int fd = open(arg, O_RDONLY);
            if (fd < 0) { report(op, 0, errno, "open"); continue; }
            if (!strcmp(op, "fchmod")) RES(op, fchmod(fd, 0600));
            else if (!strcmp(op, "fchown")) RES(op, fchown(fd, 0, 0));
            else if (!strcmp(op, "fsetxattr")) RES(op, fsetxattr(fd, "user.x", "1", 1, 0));
            else if (!strcmp(op, "fchmodat2-empty")) RES(op, syscall(452, fd, "", 0600, AT_EMPTY_PATH));
            else RES(op, fchownat(fd, "", 0, 0, AT_EMPTY_PATH));
            /* left open: the reporter names the file while the fd lives */
        } else if (!strcmp(op, "flood-mount")) {
            /* flood-mount=N:LEN: N refused mount(2)s, each on a distinct
             * path of about LEN bytes (N distinct events); data "FAILS" */
            int n = atoi(arg), len = strchr(arg, ':') ? atoi(strchr(arg, ':') + 1) : 64, fails = 0;
            char path[4096];
            if (len > 4000) len = 4000;
            for (int k = 0; k < n; k++) {
                int o = snprintf(path, sizeof path, "/tmp/%08d-", k);
                while (o < len) path[o++] = 'x';
                path[o] = 0;
                fails += mount("none", path, "tmpfs", 0, NULL) != 0;
            }
            char data[32];
            snprintf(data, sizeof data, "%d", fails);
            report(op, fails == n, 0, data);
        } else if (!strcmp(op, "exec-race")) {
            /* exec-race=N[:F]: N execve()s of a path another thread keeps
             * flipping between /bin/busybox and the interpreter (the
             * reporter may read one, the kernel the other). An exec that
             * succeeds carries on in the new image (exec-race=LEFT:F).
             * data: how many failed with EACCES in all. */
            int n = atoi(arg), fails = strchr(arg, ':') ? atoi(strchr(arg, ':') + 1) : 0;
            race_stop = 0;
            pthread_t t;
            race_flips = 0;
            pthread_create(&t, NULL, flipper, NULL);
            while (race_flips < 3) {}
            for (int k = 0; k < n; k++) {
                char rep[48];
                snprintf(rep, sizeof rep, "exec-race=%d:%d", n - k - 1, fails);
                char *av[] = {"packprobe", "agent.txt", rep, NULL};
                syscall(SYS_execve, race_path, av, environ);
                /* EACCES: Landlock; ENOENT: the kernel read a torn path */
                if (errno == EACCES || errno == ENOENT) fails++;
            }
            race_stop = 1;
            pthread_join(t, NULL);
            char d[32];
            snprintf(d, sizeof d, "%d", fails);
            report(op, 1, 0, d);
        } else if (!strcmp(op, "exec-fd")) {  /* execveat(fd, "", AT_EMPTY_PATH) */
            int fd = open(arg, O_RDONLY);
            if (fd < 0) { report(op, 0, errno, "open"); continue; }
            char *av[] = {arg, NULL};
            syscall(SYS_execveat, fd, "", av, environ, AT_EMPTY_PATH);
            report(op, 0, errno, arg);
            close(fd);
        } else if (!strcmp(op, "clock_adjtime-setoffset")) {
            struct timex tx = {0};
            tx.modes = ADJ_SETOFFSET | ADJ_NANO;
            RES(op, clock_adjtime(CLOCK_REALTIME, &tx));
        } else if (!strcmp(op, "adjtimex-freq")) {
            struct timex tx = {0};
            tx.modes = ADJ_FREQUENCY;
            RES(op, syscall(SYS_adjtimex, &tx));  /* glibc's adjtimex() is clock_adjtime */
        } else if (!strcmp(op, "mknod")) {
            RES(op, mknod(arg, S_IFCHR | 0666, makedev(1, 3)));
        } else if (!strcmp(op, "mknod-block")) {
            RES(op, mknod(arg, S_IFBLK | 0600, makedev(7, 0)));
        } else if (!strcmp(op, "mknod-raw")) {
            /* mknod(2) itself (glibc calls mknodat), a char device with
             * bits above the 16 the kernel reads in the mode */
            RES(op, syscall(SYS_mknod, arg, 0x10000L | S_IFCHR | 0666, makedev(1, 7)));
        } else if (!strcmp(op, "mkdir")) {
            RES(op, mkdir(arg, 0755));
        } else if (!strcmp(op, "unlink")) {
            RES(op, unlink(arg));
        } else if (!strcmp(op, "rename")) {  /* rename=OLD:NEW */
            char old[256];
            const char *colon = strchr(arg, ':');
            snprintf(old, sizeof old, "%.*s", colon ? (int)(colon - arg) : 0, arg);
            RES(op, rename(old, colon ? colon + 1 : ""));
        } else if (!strcmp(op, "chdir")) {
            RES(op, chdir(arg));
        } else if (!strcmp(op, "symlink")) {  /* symlink=TARGET:LINK */
            char target[256];
            const char *colon = strchr(arg, ':');
            snprintf(target, sizeof target, "%.*s", colon ? (int)(colon - arg) : 0, arg);
            RES(op, symlink(target, colon ? colon + 1 : ""));
        } else if (!strcmp(op, "getxattr")) {
            char v[64];
            RES(op, syscall(SYS_getxattr, arg, "user.x", v, sizeof v));
        } else if (!strcmp(op, "statfs")) {
            char buf[256];
            RES(op, syscall(SYS_statfs, arg, buf));
        } else if (!strcmp(op, "socket-family")) {  /* socket-family=FAMILY:TYPE:PROTO */
            int fam = 0, type = 0, proto = 0;
            sscanf(arg ? arg : "", "%d:%d:%d", &fam, &type, &proto);
            errno = 0;
            int s = socket(fam, type, proto);
            int e = errno;
            report(op, s >= 0, e, arg);
            if (s >= 0) close(s);
        } else if (!strcmp(op, "tiocsti") || !strcmp(op, "tiocsti-devtty")) {
            /* tiocsti=TEXT: type TEXT and a newline into fd 0;
             * tiocsti-devtty=TEXT: into the controlling terminal (/dev/tty);
             * data says which step failed: "open" or "ioctl" */
            int fd = 0, ok = 1, e = 0;
            const char *step = "ioctl";
            if (!strcmp(op, "tiocsti-devtty") && (fd = open("/dev/tty", O_RDWR | O_NOCTTY)) < 0) {
                ok = 0;
                e = errno;
                step = "open";
            }
            for (const char *c = arg ? arg : ""; ok; c++) {
                char ch = *c ? *c : '\n';
                if (ioctl(fd, TIOCSTI, &ch) < 0) { ok = 0; e = errno; }
                if (!*c) break;
            }
            if (fd > 0) close(fd);
            report(op, ok, e, ok ? NULL : step);
        } else if (!strcmp(op, "term-steal")) {
            /* the caller's terminal: turn its echo off, read what the user
             * types, write escape sequences (OSC 52 clipboard, clear) */
            struct termios t;
            int e1 = 0;
            if (tcgetattr(0, &t) == 0) {
                t.c_lflag &= ~(tcflag_t)(ECHO | ICANON);
                if (tcsetattr(0, TCSANOW, &t) != 0) e1 = errno;
            } else {
                e1 = errno;
            }
            char b[128] = {0};
            ssize_t n = read(0, b, sizeof b - 1);
            fputs("\033]52;c;cHduZWQ=\007\033[2JFAKE-PROMPT\302\2332J|\377\23331m\n", stdout);
            char d[64];
            snprintf(d, sizeof d, "read %zd", n);
            report(op, e1 == 0, e1, d);
        } else if (!strcmp(op, "tioclinux")) {  /* TIOCLINUX selection paste on fd 0 */
            char sub = 3; /* TIOCL_PASTESEL */
            RES(op, ioctl(0, TIOCLINUX, &sub));
        } else if (!strcmp(op, "bind-unix")) {
            int s = socket(AF_UNIX, SOCK_STREAM, 0);
            struct sockaddr_un sa;
            memset(&sa, 0, sizeof sa);
            sa.sun_family = AF_UNIX;
            snprintf(sa.sun_path, sizeof sa.sun_path, "%s", arg);
            RES(op, bind(s, (struct sockaddr *)&sa, sizeof sa));
            close(s);
        } else if (!strcmp(op, "stat-at")) {  /* stat-at=DIR:REL: fstatat on a dirfd, closed after */
            char dir[256];
            const char *colon = strchr(arg, ':');
            snprintf(dir, sizeof dir, "%.*s", colon ? (int)(colon - arg) : 0, arg);
            int fd = open(dir, O_PATH | O_DIRECTORY);
            struct stat st;
            RES(op, fstatat(fd, colon ? colon + 1 : "", &st, 0));
            close(fd);
        } else if (!strcmp(op, "stat-long")) {  /* stat-long=N:TAIL: /workdir, N "/." and /TAIL */
            static char path[4096];
            const char *colon = strchr(arg, ':');
            int n = atoi(arg), len = snprintf(path, sizeof path, "/workdir");
            for (int i = 0; i < n && len < 3000; i++) len += snprintf(path + len, sizeof path - len, "/.");
            snprintf(path + len, sizeof path - len, "/%s", colon ? colon + 1 : "");
            struct stat st;
            RES(op, stat(path, &st));
        } else if (!strcmp(op, "mkfifo")) {
            RES(op, mkfifo(arg, 0600));
        } else if (!strcmp(op, "exit")) {
            return atoi(arg);
        } else if (!strcmp(op, "sleep")) {  /* sleep=MS (violations suite) */
            usleep((useconds_t)atoi(arg) * 1000);
            report(op, 1, 0, NULL);
        } else if (!strcmp(op, "forks")) {  /* forks=N: N fork attempts, one line; data "FAILS NS" */
            int n = atoi(arg), fails = 0, last = 0;
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            for (int k = 0; k < n; k++) {
                pid_t p = fork();
                if (p == 0) _exit(0);
                if (p > 0) waitpid(p, NULL, 0); else { fails++; last = errno; }
            }
            clock_gettime(CLOCK_MONOTONIC, &t1);
            char d[64];
            snprintf(d, sizeof d, "%d %lld", fails,
                     (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
            report(op, fails == 0, last, d);
        } else if (!strcmp(op, "wait-file")) {  /* wait-file=PATH: until PATH exists (10 s) */
            int k;
            for (k = 0; k < 1000 && access(arg, F_OK) != 0; k++) usleep(10000);
            report(op, k < 1000, ETIMEDOUT, NULL);
        } else if (!strcmp(op, "stats") || !strcmp(op, "opens") || !strcmp(op, "connects")) {
            /* stats|opens|connects=N:PATH: N stat(2), open+close, or unix
             * connect(2) calls (bench/violations.py); data "FAILS NS" */
            char *path = strchr(arg, ':');
            int n = atoi(arg), fails = 0;
            struct stat st;
            struct sockaddr_un sa = {.sun_family = AF_UNIX};
            if (path) strncpy(sa.sun_path, path + 1, sizeof sa.sun_path - 1);
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            for (int k = 0; path && k < n; k++) {
                if (op[0] == 's') {
                    fails += stat(path + 1, &st) != 0;
                } else if (op[0] == 'o') {
                    int fd = open(path + 1, O_RDONLY);
                    if (fd < 0) fails++; else close(fd);
                } else {
                    int s = socket(AF_UNIX, SOCK_STREAM, 0);
                    if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof sa) != 0) fails++;
                    if (s >= 0) close(s);
                }
            }
            clock_gettime(CLOCK_MONOTONIC, &t1);
            char d[64];
            snprintf(d, sizeof d, "%d %lld", fails,
                     (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
            report(op, path != NULL, 0, d);
        } else {
            report(op, 0, EINVAL, "unknown op");
        }
    }
    return 0;
}
