/*
 * comet-probe: a tiny static program that runs inside a container and
 * reports what it sees as ONE JSON object on stdout.
 *
 * Build: cc -static -O2 -o comet-probe probe.c
 *
 * Every subcommand is a row in the `commands` table at the bottom of this
 * file.  To add one: write `static int cmd_NAME(int argc, char **argv)`
 * (argv[0] is the subcommand name), emit one JSON object with the j_*
 * helpers (or the result_* helpers for the {"ok","errno","data"} shape), and
 * add a row to the table.  Exit status: 0 when the operation succeeded, 1
 * when it was attempted and failed (the JSON says why), 2 for usage errors.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

extern char **environ;

/* ------------------------------------------------------------------ */
/* errno names                                                         */

struct errno_name {
    int num;
    const char *name;
};

#define E(x) {x, #x}
static const struct errno_name errno_names[] = {
    E(EPERM),        E(ENOENT),       E(ESRCH),        E(EINTR),         E(EIO),
    E(ENXIO),        E(E2BIG),        E(ENOEXEC),      E(EBADF),         E(ECHILD),
    E(EAGAIN),       E(ENOMEM),       E(EACCES),       E(EFAULT),        E(ENOTBLK),
    E(EBUSY),        E(EEXIST),       E(EXDEV),        E(ENODEV),        E(ENOTDIR),
    E(EISDIR),       E(EINVAL),       E(ENFILE),       E(EMFILE),        E(ENOTTY),
    E(ETXTBSY),      E(EFBIG),        E(ENOSPC),       E(ESPIPE),        E(EROFS),
    E(EMLINK),       E(EPIPE),        E(EDOM),         E(ERANGE),        E(EDEADLK),
    E(ENAMETOOLONG), E(ENOLCK),       E(ENOSYS),       E(ENOTEMPTY),     E(ELOOP),
    E(ENOMSG),       E(EIDRM),        E(ENOSTR),       E(ENODATA),       E(ETIME),
    E(ENOSR),        E(ENOLINK),      E(EPROTO),       E(EBADMSG),       E(EOVERFLOW),
    E(EILSEQ),       E(EUSERS),       E(ENOTSOCK),     E(EDESTADDRREQ),  E(EMSGSIZE),
    E(EPROTOTYPE),   E(ENOPROTOOPT),  E(EPROTONOSUPPORT), E(ESOCKTNOSUPPORT), E(EOPNOTSUPP),
    E(EPFNOSUPPORT), E(EAFNOSUPPORT), E(EADDRINUSE),   E(EADDRNOTAVAIL), E(ENETDOWN),
    E(ENETUNREACH),  E(ENETRESET),    E(ECONNABORTED), E(ECONNRESET),    E(ENOBUFS),
    E(EISCONN),      E(ENOTCONN),     E(ESHUTDOWN),    E(ETIMEDOUT),     E(ECONNREFUSED),
    E(EHOSTDOWN),    E(EHOSTUNREACH), E(EALREADY),     E(EINPROGRESS),   E(ESTALE),
    E(EDQUOT),       E(ECANCELED),    E(EOWNERDEAD),   E(ENOTRECOVERABLE), E(ERFKILL),
    E(EKEYEXPIRED),  E(EKEYREVOKED),  E(EKEYREJECTED), E(ENOKEY),        E(EMEDIUMTYPE),
    E(EREMOTEIO),    E(ENOMEDIUM),    E(EUCLEAN),
};
#undef E

static const char *errno_name(int e) {
    static char buf[32];
    for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
        if (errno_names[i].num == e) return errno_names[i].name;
    snprintf(buf, sizeof buf, "E%d", e);
    return buf;
}

/* ------------------------------------------------------------------ */
/* signal names                                                        */

struct sig_name {
    int num;
    const char *name;
};
#define S(x) {SIG##x, #x}
static const struct sig_name sig_names[] = {
    S(HUP),  S(INT),  S(QUIT), S(ILL),    S(TRAP),   S(ABRT),   S(BUS),   S(FPE),
    S(KILL), S(USR1), S(SEGV), S(USR2),   S(PIPE),   S(ALRM),   S(TERM),  S(STKFLT),
    S(CHLD), S(CONT), S(STOP), S(TSTP),   S(TTIN),   S(TTOU),   S(URG),   S(XCPU),
    S(XFSZ), S(VTALRM), S(PROF), S(WINCH), S(IO),    S(PWR),    S(SYS),
};
#undef S

static int parse_signal(const char *s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s && !*end) return (int)v;
    if (strncmp(s, "SIG", 3) == 0) s += 3;
    for (size_t i = 0; i < sizeof sig_names / sizeof sig_names[0]; i++)
        if (strcmp(sig_names[i].name, s) == 0) return sig_names[i].num;
    return -1;
}

static const char *signal_name(int sig) {
    for (size_t i = 0; i < sizeof sig_names / sizeof sig_names[0]; i++)
        if (sig_names[i].num == sig) return sig_names[i].name;
    return "UNKNOWN";
}

/* ------------------------------------------------------------------ */
/* minimal streaming JSON writer                                       */

static int j_depth;
static int j_need_comma[64];
static int j_after_key;

static void j_sep(void) {
    if (j_after_key) {
        j_after_key = 0;
        return;
    }
    if (j_depth > 0 && j_need_comma[j_depth]) fputc(',', stdout);
    if (j_depth > 0) j_need_comma[j_depth] = 1;
}

static void j_raw_string(const char *s, size_t n) {
    fputc('"', stdout);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': fputs("\\\"", stdout); break;
        case '\\': fputs("\\\\", stdout); break;
        case '\n': fputs("\\n", stdout); break;
        case '\r': fputs("\\r", stdout); break;
        case '\t': fputs("\\t", stdout); break;
        default:
            /* Control characters and non-ASCII bytes are escaped one byte at
             * a time as \u00XX so that the output is always valid JSON; the
             * reader recovers the bytes with .encode("latin-1"). */
            if (c < 0x20 || c >= 0x7f)
                printf("\\u%04x", c);
            else
                fputc(c, stdout);
        }
    }
    fputc('"', stdout);
}

static void j_obj(void) {
    j_sep();
    fputc('{', stdout);
    j_need_comma[++j_depth] = 0;
}
static void j_end_obj(void) {
    fputc('}', stdout);
    j_depth--;
}
static void j_arr(void) {
    j_sep();
    fputc('[', stdout);
    j_need_comma[++j_depth] = 0;
}
static void j_end_arr(void) {
    fputc(']', stdout);
    j_depth--;
}
static void j_key(const char *k) {
    j_sep();
    j_raw_string(k, strlen(k));
    fputc(':', stdout);
    j_after_key = 1;
}
static void j_str(const char *s) {
    j_sep();
    if (!s)
        fputs("null", stdout);
    else
        j_raw_string(s, strlen(s));
}
static void j_strn(const char *s, size_t n) {
    j_sep();
    j_raw_string(s, n);
}
static void j_int(long long v) {
    j_sep();
    printf("%lld", v);
}
static void j_bool(int b) {
    j_sep();
    fputs(b ? "true" : "false", stdout);
}
static void j_null(void) {
    j_sep();
    fputs("null", stdout);
}
static void j_kstr(const char *k, const char *v) {
    j_key(k);
    j_str(v);
}
static void j_kint(const char *k, long long v) {
    j_key(k);
    j_int(v);
}
static void j_kbool(const char *k, int v) {
    j_key(k);
    j_bool(v);
}
static void j_done(void) {
    fputc('\n', stdout);
    fflush(stdout);
}

/* {"ok":..., "errno":..., "data": <caller writes the value>} helpers */
static void result_begin(int ok, int err) {
    j_obj();
    j_kbool("ok", ok);
    j_key("errno");
    if (ok)
        j_null();
    else
        j_str(errno_name(err));
    j_key("data");
}
static int result_end(int ok) {
    j_end_obj();
    j_done();
    return ok ? 0 : 1;
}
/* result with "data": null */
static int result_simple(int ok, int err) {
    result_begin(ok, err);
    j_null();
    return result_end(ok);
}

/* ------------------------------------------------------------------ */
/* small utilities                                                     */

static char *read_file(const char *path, size_t *len_out, int *err_out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (err_out) *err_out = errno;
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (err_out) *err_out = errno;
            free(buf);
            close(fd);
            return NULL;
        }
        if (n == 0) break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = 0;
    if (len_out) *len_out = len;
    return buf;
}

/* value of "Key:" line in /proc/self/status, trimmed; static buffer */
static const char *status_field(const char *key) {
    static char out[256];
    char *s = read_file("/proc/self/status", NULL, NULL);
    if (!s) return NULL;
    size_t kl = strlen(key);
    const char *found = NULL;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            const char *v = line + kl + 1;
            while (*v == ' ' || *v == '\t') v++;
            snprintf(out, sizeof out, "%s", v);
            found = out;
            break;
        }
    }
    free(s);
    return found;
}

static void j_lines(const char *text) {
    j_arr();
    const char *p = text;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        j_strn(p, n);
        p = nl ? nl + 1 : NULL;
    }
    j_end_arr();
}

static void j_stat(const struct stat *st) {
    const char *type = "other";
    if (S_ISREG(st->st_mode)) type = "file";
    else if (S_ISDIR(st->st_mode)) type = "dir";
    else if (S_ISLNK(st->st_mode)) type = "symlink";
    else if (S_ISCHR(st->st_mode)) type = "char";
    else if (S_ISBLK(st->st_mode)) type = "block";
    else if (S_ISFIFO(st->st_mode)) type = "fifo";
    else if (S_ISSOCK(st->st_mode)) type = "socket";
    char mode[16];
    snprintf(mode, sizeof mode, "%04o", (unsigned)(st->st_mode & 07777));
    j_obj();
    j_kstr("type", type);
    j_kstr("mode", mode);
    j_kint("uid", st->st_uid);
    j_kint("gid", st->st_gid);
    j_kint("size", (long long)st->st_size);
    j_kint("ino", (long long)st->st_ino);
    j_kint("dev", (long long)st->st_dev);
    j_kint("nlink", (long long)st->st_nlink);
    j_kint("rdev_major", major(st->st_rdev));
    j_kint("rdev_minor", minor(st->st_rdev));
    j_end_obj();
}

static int usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("probe: usage: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

/* ------------------------------------------------------------------ */
/* probe info                                                          */

static const struct {
    int res;
    const char *name;
} rlimit_names[] = {
    {RLIMIT_CPU, "RLIMIT_CPU"},         {RLIMIT_FSIZE, "RLIMIT_FSIZE"},
    {RLIMIT_DATA, "RLIMIT_DATA"},       {RLIMIT_STACK, "RLIMIT_STACK"},
    {RLIMIT_CORE, "RLIMIT_CORE"},       {RLIMIT_RSS, "RLIMIT_RSS"},
    {RLIMIT_NPROC, "RLIMIT_NPROC"},     {RLIMIT_NOFILE, "RLIMIT_NOFILE"},
    {RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK"}, {RLIMIT_AS, "RLIMIT_AS"},
    {RLIMIT_LOCKS, "RLIMIT_LOCKS"},     {RLIMIT_SIGPENDING, "RLIMIT_SIGPENDING"},
    {RLIMIT_MSGQUEUE, "RLIMIT_MSGQUEUE"}, {RLIMIT_NICE, "RLIMIT_NICE"},
    {RLIMIT_RTPRIO, "RLIMIT_RTPRIO"},   {RLIMIT_RTTIME, "RLIMIT_RTTIME"},
};

static long long rlim_json(rlim_t v) { return v == RLIM_INFINITY ? -1 : (long long)v; }

static void j_fd_list(void) {
    j_arr();
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        int self = dirfd(d);
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            int fd = atoi(e->d_name);
            if (fd == self) continue;
            j_int(fd);
        }
        closedir(d);
    }
    j_end_arr();
}

static int cmd_info(int argc, char **argv) {
    (void)argc;
    (void)argv;
    j_obj();
    j_kint("uid", getuid());
    j_kint("gid", getgid());
    j_kint("euid", geteuid());
    j_kint("egid", getegid());

    gid_t groups[256];
    int ng = getgroups(256, groups);
    j_key("groups");
    j_arr();
    for (int i = 0; i < ng; i++) j_int(groups[i]);
    j_end_arr();

    const char *um = status_field("Umask");
    if (!um) { /* kernels without Umask: in status */
        mode_t m = umask(022);
        umask(m);
        static char b[8];
        snprintf(b, sizeof b, "%04o", (unsigned)m);
        um = b;
    }
    j_kstr("umask", um);

    char cwd[4096];
    j_kstr("cwd", getcwd(cwd, sizeof cwd) ? cwd : NULL);

    struct utsname u;
    uname(&u);
    j_kstr("hostname", u.nodename);
    j_kstr("domainname", u.domainname);
    j_kint("pid", getpid());
    j_kint("ppid", getppid());

    j_key("caps");
    j_obj();
    static const char *capkeys[][2] = {
        {"inh", "CapInh"}, {"prm", "CapPrm"}, {"eff", "CapEff"}, {"bnd", "CapBnd"}, {"amb", "CapAmb"}};
    for (int i = 0; i < 5; i++) j_kstr(capkeys[i][0], status_field(capkeys[i][1]));
    j_end_obj();

    j_kint("no_new_privs", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
    const char *sc = status_field("Seccomp");
    j_kint("seccomp", sc ? atoi(sc) : -1);

    char *oom = read_file("/proc/self/oom_score_adj", NULL, NULL);
    j_kint("oom_score_adj", oom ? atoi(oom) : 0);
    free(oom);

    j_key("rlimits");
    j_obj();
    for (size_t i = 0; i < sizeof rlimit_names / sizeof rlimit_names[0]; i++) {
        struct rlimit rl;
        j_key(rlimit_names[i].name);
        if (getrlimit(rlimit_names[i].res, &rl) != 0) {
            j_null();
            continue;
        }
        j_arr();
        j_int(rlim_json(rl.rlim_cur));
        j_int(rlim_json(rl.rlim_max));
        j_end_arr();
    }
    j_end_obj();

    j_key("fds");
    j_fd_list();

    j_key("ns");
    j_obj();
    static const char *nss[] = {"pid", "net", "mnt", "ipc", "uts", "user", "cgroup", "time"};
    for (size_t i = 0; i < sizeof nss / sizeof nss[0]; i++) {
        char p[64], t[256];
        snprintf(p, sizeof p, "/proc/self/ns/%s", nss[i]);
        ssize_t n = readlink(p, t, sizeof t - 1);
        j_key(nss[i]);
        if (n < 0) {
            j_null();
        } else {
            t[n] = 0;
            j_str(t);
        }
    }
    j_end_obj();

    char *cg = read_file("/proc/self/cgroup", NULL, NULL);
    j_key("cgroup");
    j_lines(cg ? cg : "");
    free(cg);

    j_key("env");
    j_arr();
    for (char **e = environ; e && *e; e++) j_str(*e);
    j_end_arr();

    j_kint("personality", personality(0xffffffff));
    j_end_obj();
    j_done();
    return 0;
}

/* ------------------------------------------------------------------ */
/* filesystem subcommands                                              */

static int cmd_mounts(int argc, char **argv) {
    (void)argc;
    (void)argv;
    int err = 0;
    char *m = read_file("/proc/self/mountinfo", NULL, &err);
    result_begin(m != NULL, err);
    j_lines(m ? m : "");
    free(m);
    return result_end(m != NULL);
}

static int cmd_open(int argc, char **argv) {
    const char *mode = argc > 2 ? argv[2] : "r";
    int flags;
    if (!strcmp(mode, "r")) flags = O_RDONLY;
    else if (!strcmp(mode, "w")) flags = O_WRONLY;
    else if (!strcmp(mode, "rw")) flags = O_RDWR;
    else if (!strcmp(mode, "creat")) flags = O_WRONLY | O_CREAT | O_TRUNC;
    else return usage("open PATH [r|w|rw|creat]");
    int fd = open(argv[1], flags | O_CLOEXEC, 0644);
    int err = errno;
    result_begin(fd >= 0, err);
    if (fd >= 0) {
        char p[64], t[4096];
        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(p, t, sizeof t - 1);
        t[n < 0 ? 0 : n] = 0;
        j_obj();
        j_kint("fd", fd);
        j_kstr("target", t);
        j_end_obj();
        close(fd);
    } else {
        j_null();
    }
    return result_end(fd >= 0);
}

static int cmd_stat(int argc, char **argv) {
    (void)argc;
    struct stat st;
    int rc = lstat(argv[1], &st);
    int err = errno;
    result_begin(rc == 0, err);
    if (rc == 0) j_stat(&st);
    else j_null();
    return result_end(rc == 0);
}

static int cmd_statfs(int argc, char **argv) {
    (void)argc;
    struct statfs sf;
    int rc = statfs(argv[1], &sf);
    int err = errno;
    result_begin(rc == 0, err);
    if (rc == 0) {
        j_obj();
        j_kint("type", (long long)sf.f_type);
        j_kint("bsize", (long long)sf.f_bsize);
        j_kint("blocks", (long long)sf.f_blocks);
        j_kint("bytes", (long long)sf.f_blocks * (long long)sf.f_bsize);
        j_kint("flags", (long long)sf.f_flags);
        j_kbool("rdonly", (sf.f_flags & ST_RDONLY) != 0);
        j_kbool("nosuid", (sf.f_flags & ST_NOSUID) != 0);
        j_kbool("nodev", (sf.f_flags & ST_NODEV) != 0);
        j_kbool("noexec", (sf.f_flags & ST_NOEXEC) != 0);
        j_end_obj();
    } else {
        j_null();
    }
    return result_end(rc == 0);
}

static int cmd_exec(int argc, char **argv) {
    (void)argc;
    fflush(stdout);
    execv(argv[1], argv + 1);
    return result_simple(0, errno);
}

static int cmd_mkdir(int argc, char **argv) {
    (void)argc;
    int rc = mkdir(argv[1], 0755);
    return result_simple(rc == 0, errno);
}

static int cmd_write(int argc, char **argv) {
    (void)argc;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return result_simple(0, errno);
    size_t len = strlen(argv[2]);
    ssize_t n = write(fd, argv[2], len);
    int err = errno;
    if (n >= 0 && close(fd) != 0) {
        err = errno;
        n = -1;
    }
    result_begin(n >= 0, err);
    j_int(n);
    return result_end(n >= 0);
}

static int cmd_read(int argc, char **argv) {
    (void)argc;
    size_t len = 0;
    int err = 0;
    char *d = read_file(argv[1], &len, &err);
    result_begin(d != NULL, err);
    if (d) j_strn(d, len);
    else j_null();
    free(d);
    return result_end(d != NULL);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmd_ls(int argc, char **argv) {
    (void)argc;
    DIR *d = opendir(argv[1]);
    int err = errno;
    result_begin(d != NULL, err);
    if (!d) {
        j_null();
        return result_end(0);
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        names = realloc(names, (n + 1) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    j_arr();
    for (size_t i = 0; i < n; i++) {
        j_str(names[i]);
        free(names[i]);
    }
    j_end_arr();
    free(names);
    return result_end(1);
}

static int cmd_readlink(int argc, char **argv) {
    (void)argc;
    char t[4096];
    ssize_t n = readlink(argv[1], t, sizeof t - 1);
    int err = errno;
    result_begin(n >= 0, err);
    if (n >= 0) j_strn(t, (size_t)n);
    else j_null();
    return result_end(n >= 0);
}

static int cmd_readfd(int argc, char **argv) {
    (void)argc;
    int fd = atoi(argv[1]);
    int flags = fcntl(fd, F_GETFL);
    int err = errno;
    result_begin(flags >= 0, err);
    if (flags >= 0) {
        char p[64], t[4096];
        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(p, t, sizeof t - 1);
        t[n < 0 ? 0 : n] = 0;
        j_obj();
        j_kint("fd", fd);
        j_kstr("target", t);
        j_kint("flags", flags);
        j_kbool("cloexec", (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
        j_end_obj();
    } else {
        j_null();
    }
    return result_end(flags >= 0);
}

/* ------------------------------------------------------------------ */
/* processes and signals                                               */

static volatile sig_atomic_t got_signal;

static void exit_on_signal(int sig) {
    /* async-signal-safe: format by hand, write(2), _exit(2) */
    char buf[128];
    const char *name = signal_name(sig);
    size_t n = 0;
    const char *pre = "{\"ok\":true,\"errno\":null,\"data\":{\"signal\":\"";
    for (const char *p = pre; *p; p++) buf[n++] = *p;
    for (const char *p = name; *p && n < 100; p++) buf[n++] = *p;
    buf[n++] = '"';
    buf[n++] = '}';
    buf[n++] = '}';
    buf[n++] = '\n';
    ssize_t w = write(1, buf, n);
    (void)w;
    _exit(128 + sig);
}

static int cmd_sleep(int argc, char **argv) {
    (void)argc;
    /* As PID 1 of a pid namespace, signals without a handler are dropped by
     * the kernel (except KILL/STOP).  Install handlers so that `kill TERM`
     * ends the probe the way it ends an ordinary process: exit 128+sig. */
    static const int sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], exit_on_signal);
    double secs = atof(argv[1]);
    struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    result_begin(1, 0);
    j_obj();
    j_key("slept");
    j_sep();
    printf("%g", secs);
    j_end_obj();
    return result_end(1);
}

static int cmd_exit(int argc, char **argv) {
    (void)argc;
    fflush(stdout);
    _exit(atoi(argv[1]));
}

static int cmd_signal_ignore(int argc, char **argv) {
    int ignored = 0;
    for (int i = 1; i < argc; i++) {
        int s = parse_signal(argv[i]);
        if (s <= 0) return usage("signal-ignore SIG...");
        signal(s, SIG_IGN);
        ignored++;
    }
    result_begin(1, 0);
    j_obj();
    j_kint("ignored", ignored);
    j_end_obj();
    result_end(1);
    for (;;) pause();
}

static int cmd_kill(int argc, char **argv) {
    (void)argc;
    int sig = parse_signal(argv[2]);
    if (sig < 0) return usage("kill PID SIG");
    int rc = kill((pid_t)atoi(argv[1]), sig);
    return result_simple(rc == 0, errno);
}

/* probe fork [N]: fork N children (default 1) that wait; report how many
 * forks succeeded and the errno of the first failure; then reap them. */
static int cmd_fork(int argc, char **argv) {
    int want = argc > 1 ? atoi(argv[1]) : 1;
    pid_t *kids = calloc((size_t)(want > 0 ? want : 1), sizeof *kids);
    int made = 0, err = 0;
    int pfd[2];
    if (pipe(pfd) != 0) return result_simple(0, errno);
    for (int i = 0; i < want; i++) {
        pid_t p = fork();
        if (p < 0) {
            err = errno;
            break;
        }
        if (p == 0) {
            char c;
            close(pfd[1]);
            while (read(pfd[0], &c, 1) < 0 && errno == EINTR) {
            }
            _exit(0);
        }
        kids[made++] = p;
    }
    close(pfd[0]);
    close(pfd[1]); /* children see EOF and exit */
    int reaped = 0;
    for (int i = 0; i < made; i++)
        if (waitpid(kids[i], NULL, 0) == kids[i]) reaped++;
    free(kids);
    int ok = made == want;
    result_begin(ok, err);
    j_obj();
    j_kint("forked", made);
    j_kint("reaped", reaped);
    j_end_obj();
    return result_end(ok);
}

/* ------------------------------------------------------------------ */
/* privileged operations                                               */

static const struct {
    const char *name;
    unsigned long flag;
} mount_flags[] = {
    {"ro", MS_RDONLY},      {"nosuid", MS_NOSUID},    {"nodev", MS_NODEV},
    {"noexec", MS_NOEXEC},  {"remount", MS_REMOUNT},  {"bind", MS_BIND},
    {"rec", MS_REC},        {"private", MS_PRIVATE},  {"slave", MS_SLAVE},
    {"shared", MS_SHARED},  {"unbindable", MS_UNBINDABLE}, {"move", MS_MOVE},
};

/* probe mount SRC DST TYPE [FLAG,FLAG,...] [DATA] */
static int cmd_mount(int argc, char **argv) {
    unsigned long flags = 0;
    if (argc > 4 && argv[4][0]) {
        char *dup = strdup(argv[4]);
        for (char *t = strtok(dup, ","); t; t = strtok(NULL, ",")) {
            size_t i;
            for (i = 0; i < sizeof mount_flags / sizeof mount_flags[0]; i++)
                if (!strcmp(mount_flags[i].name, t)) break;
            if (i == sizeof mount_flags / sizeof mount_flags[0]) return usage("unknown mount flag %s", t);
            flags |= mount_flags[i].flag;
        }
        free(dup);
    }
    const char *type = strcmp(argv[3], "none") ? argv[3] : NULL;
    int rc = mount(argv[1], argv[2], type, flags, argc > 5 ? argv[5] : NULL);
    return result_simple(rc == 0, errno);
}

static const struct {
    const char *name;
    int flag;
} ns_flags[] = {
    {"NEWNS", CLONE_NEWNS},   {"NEWUTS", CLONE_NEWUTS},   {"NEWIPC", CLONE_NEWIPC},
    {"NEWUSER", CLONE_NEWUSER}, {"NEWPID", CLONE_NEWPID}, {"NEWNET", CLONE_NEWNET},
    {"NEWCGROUP", CLONE_NEWCGROUP}, {"NEWTIME", CLONE_NEWTIME},
};

static int cmd_unshare(int argc, char **argv) {
    int flags = 0;
    for (int i = 1; i < argc; i++) {
        const char *n = argv[i];
        if (!strncmp(n, "CLONE_", 6)) n += 6;
        size_t j;
        for (j = 0; j < sizeof ns_flags / sizeof ns_flags[0]; j++)
            if (!strcmp(ns_flags[j].name, n)) break;
        if (j == sizeof ns_flags / sizeof ns_flags[0]) return usage("unshare NEWNS|NEWUSER|NEWNET|...");
        flags |= ns_flags[j].flag;
    }
    int rc = unshare(flags);
    return result_simple(rc == 0, errno);
}

static int cmd_clock_settime(int argc, char **argv) {
    (void)argc;
    (void)argv;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int rc = clock_settime(CLOCK_REALTIME, &ts);
    return result_simple(rc == 0, errno);
}

/* probe chroot-escape [DIR]: the classic chroot(subdir); chdir("..") x N;
 * chroot(".") escape.  Reports the (dev, ino) of "/" before and after;
 * "escaped" is true when they differ. */
static int cmd_chroot_escape(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/tmp/.probe-escape";
    struct stat before, after;
    stat("/", &before);
    mkdir(dir, 0700);
    int rc = chroot(dir);
    int err = errno;
    if (rc == 0) {
        for (int i = 0; i < 256; i++)
            if (chdir("..") != 0) break;
        rc = chroot(".");
        err = errno;
    }
    stat("/", &after);
    int escaped = before.st_dev != after.st_dev || before.st_ino != after.st_ino;
    result_begin(rc == 0, err);
    j_obj();
    j_kbool("escaped", escaped);
    j_key("before");
    j_stat(&before);
    j_key("after");
    j_stat(&after);
    j_end_obj();
    return result_end(rc == 0);
}

/* ------------------------------------------------------------------ */
/* command table                                                       */

struct command {
    const char *name;
    int min_args; /* not counting the subcommand itself */
    int max_args; /* -1: unbounded */
    const char *usage;
    int (*fn)(int argc, char **argv);
};

static int cmd_help(int argc, char **argv);

/* probe mknod PATH b|c MAJOR MINOR: mknod(2) with mode 0600 */
static int cmd_mknod(int argc, char **argv) {
    (void)argc;
    mode_t type;
    if (!strcmp(argv[2], "b")) type = S_IFBLK;
    else if (!strcmp(argv[2], "c")) type = S_IFCHR;
    else return usage("mknod PATH b|c MAJOR MINOR");
    int rc = mknod(argv[1], type | 0600, makedev(atoi(argv[3]), atoi(argv[4])));
    return result_simple(rc == 0, errno);
}

/* probe exe-scan SECONDS: for SECONDS, keep opening /proc/PID/exe of every
 * other process (the CVE-2019-5736 attack loop).  Reports each distinct
 * binary that could be opened for reading: {pid, target, dev_major,
 * dev_minor, ino, writable (an O_WRONLY open of /proc/PID/exe succeeded;
 * nothing is ever written)}, and the denied opens by errno.  ok = nothing
 * was writable. */
#define SCAN_MAX 64
static int cmd_exe_scan(int argc, char **argv) {
    (void)argc;
    double secs = atof(argv[1]);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct { long pid; dev_t dev; ino_t ino; int writable; char target[256]; } seen[SCAN_MAX];
    int nseen = 0, writable_any = 0;
    long scans = 0, eacces = 0, eperm = 0, other = 0;
    pid_t self = getpid();
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 >= secs) break;
        DIR *d = opendir("/proc");
        if (!d) return result_simple(0, errno);
        struct dirent *e;
        while ((e = readdir(d))) {
            char *end;
            long pid = strtol(e->d_name, &end, 10);
            if (*end || pid <= 0 || pid == self) continue;
            char path[64];
            snprintf(path, sizeof path, "/proc/%ld/exe", pid);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                if (errno == EACCES) eacces++;
                else if (errno == EPERM) eperm++;
                else if (errno != ENOENT && errno != ESRCH) other++;
                continue;
            }
            struct stat st;
            if (fstat(fd, &st) == 0) {
                int known = 0;
                for (int i = 0; i < nseen; i++)
                    if (seen[i].dev == st.st_dev && seen[i].ino == st.st_ino) known = 1;
                int wfd = open(path, O_WRONLY | O_CLOEXEC);
                int w = wfd >= 0;
                if (w) {
                    close(wfd);
                    writable_any = 1;
                }
                if (!known && nseen < SCAN_MAX) {
                    char fdp[64];
                    snprintf(fdp, sizeof fdp, "/proc/self/fd/%d", fd);
                    ssize_t n = readlink(fdp, seen[nseen].target, sizeof seen[nseen].target - 1);
                    seen[nseen].target[n < 0 ? 0 : n] = 0;
                    seen[nseen].pid = pid;
                    seen[nseen].dev = st.st_dev;
                    seen[nseen].ino = st.st_ino;
                    seen[nseen].writable = w;
                    nseen++;
                } else if (w) {
                    for (int i = 0; i < nseen; i++)
                        if (seen[i].dev == st.st_dev && seen[i].ino == st.st_ino) seen[i].writable = 1;
                }
            }
            close(fd);
        }
        closedir(d);
        scans++;
    }
    result_begin(!writable_any, EACCES);
    j_obj();
    j_kint("scans", scans);
    j_key("denied");
    j_obj();
    j_kint("EACCES", eacces);
    j_kint("EPERM", eperm);
    j_kint("other", other);
    j_end_obj();
    j_key("opened");
    j_arr();
    for (int i = 0; i < nseen; i++) {
        j_obj();
        j_kint("pid", seen[i].pid);
        j_kstr("target", seen[i].target);
        j_kint("dev_major", major(seen[i].dev));
        j_kint("dev_minor", minor(seen[i].dev));
        j_kint("ino", (long long)seen[i].ino);
        j_kbool("writable", seen[i].writable);
        j_end_obj();
    }
    j_end_arr();
    j_end_obj();
    return result_end(!writable_any);
}

static const struct command commands[] = {
    {"info", 0, 0, "info", cmd_info},
    {"mounts", 0, 0, "mounts", cmd_mounts},
    {"open", 1, 2, "open PATH [r|w|rw|creat]", cmd_open},
    {"stat", 1, 1, "stat PATH", cmd_stat},
    {"statfs", 1, 1, "statfs PATH", cmd_statfs},
    {"exec", 1, -1, "exec PATH [ARG...]", cmd_exec},
    {"mkdir", 1, 1, "mkdir PATH", cmd_mkdir},
    {"write", 2, 2, "write PATH DATA", cmd_write},
    {"read", 1, 1, "read PATH", cmd_read},
    {"ls", 1, 1, "ls PATH", cmd_ls},
    {"readlink", 1, 1, "readlink PATH", cmd_readlink},
    {"readfd", 1, 1, "readfd N", cmd_readfd},
    {"sleep", 1, 1, "sleep SECONDS", cmd_sleep},
    {"exit", 1, 1, "exit CODE", cmd_exit},
    {"signal-ignore", 1, -1, "signal-ignore SIG...", cmd_signal_ignore},
    {"kill", 2, 2, "kill PID SIG", cmd_kill},
    {"fork", 0, 1, "fork [N]", cmd_fork},
    {"mount", 3, 5, "mount SRC DST TYPE|none [FLAG,...] [DATA]", cmd_mount},
    {"unshare", 1, -1, "unshare FLAGNAME...", cmd_unshare},
    {"clock_settime", 0, 0, "clock_settime", cmd_clock_settime},
    {"chroot-escape", 0, 1, "chroot-escape [DIR]", cmd_chroot_escape},
    {"mknod", 4, 4, "mknod PATH b|c MAJOR MINOR", cmd_mknod},
    {"exe-scan", 1, 1, "exe-scan SECONDS", cmd_exe_scan},
    {"help", 0, 0, "help", cmd_help},
};

static int cmd_help(int argc, char **argv) {
    (void)argc;
    (void)argv;
    j_obj();
    j_key("commands");
    j_arr();
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) j_str(commands[i].usage);
    j_end_arr();
    j_end_obj();
    j_done();
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage("probe SUBCOMMAND [ARGS...]  (probe help)");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const struct command *c = &commands[i];
        if (strcmp(c->name, argv[1])) continue;
        int nargs = argc - 2;
        if (nargs < c->min_args || (c->max_args >= 0 && nargs > c->max_args))
            return usage("%s", c->usage);
        return c->fn(argc - 1, argv + 1);
    }
    return usage("unknown subcommand '%s' (probe help)", argv[1]);
}
