/*
 * cacheagent: the agent of the cache tests (integration/cache/test_cache.py),
 * used as a pack's runtime.interpreter. argv[1] is the entrypoint (ignored);
 * each later argument is one operation, done in order:
 *   out=TEXT        TEXT and a newline on stdout
 *   err=TEXT        TEXT and a newline on stderr
 *   env=NAME        NAME=<value> on stdout ("<unset>" when unset)
 *   cat=PATH        the file's bytes on stdout
 *   inputs          every file under /workdir/inputs: path, size, FNV-1a
 *   write=NAME:TEXT /workdir/out/NAME holds TEXT (sub directories made)
 *   big=N           N bytes of 'x' on stdout
 *   sleep=MS        sleep
 *   violate         unshare(CLONE_NEWUSER): refused, a capability violation
 *   exit=N          exit with N now
 * Build: cc -static -O2 -o cacheagent cacheagent.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void inputs(const char *dir, const char *rel) {
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) {
        printf("inputs %s: %s\n", dir, strerror(errno));
        return;
    }
    for (int i = 0; i < n; i++) {
        const char *nm = names[i]->d_name;
        if (strcmp(nm, ".") && strcmp(nm, "..")) {
            char path[4096], r[4096];
            snprintf(path, sizeof path, "%s/%s", dir, nm);
            snprintf(r, sizeof r, "%s%s%s", rel, *rel ? "/" : "", nm);
            struct stat st;
            if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
                inputs(path, r);
            } else {
                uint64_t h = 1469598103934665603ull, size = 0;
                int fd = open(path, O_RDONLY);
                unsigned char buf[65536];
                ssize_t k;
                while (fd >= 0 && (k = read(fd, buf, sizeof buf)) > 0)
                    for (ssize_t j = 0; j < k; j++, size++) h = (h ^ buf[j]) * 1099511628211ull;
                if (fd >= 0) close(fd);
                printf("input %s %llu %016llx %o\n", r, (unsigned long long)size,
                       (unsigned long long)h, (unsigned)(st.st_mode & 07777));
            }
        }
        free(names[i]);
    }
    free(names);
}

static void mkparents(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(path, 0755);
        *p = '/';
    }
}

int main(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        const char *op = argv[i];
        if (!strncmp(op, "out=", 4)) {
            printf("%s\n", op + 4);
        } else if (!strncmp(op, "err=", 4)) {
            fflush(stdout);
            fprintf(stderr, "%s\n", op + 4);
        } else if (!strncmp(op, "env=", 4)) {
            const char *v = getenv(op + 4);
            printf("%s=%s\n", op + 4, v ? v : "<unset>");
        } else if (!strncmp(op, "cat=", 4)) {
            int fd = open(op + 4, O_RDONLY);
            char buf[4096];
            ssize_t k;
            fflush(stdout);
            while (fd >= 0 && (k = read(fd, buf, sizeof buf)) > 0) fwrite(buf, 1, (size_t)k, stdout);
            if (fd < 0) printf("cat %s: %s\n", op + 4, strerror(errno));
            else close(fd);
        } else if (!strcmp(op, "inputs")) {
            inputs("/workdir/inputs", "");
        } else if (!strncmp(op, "write=", 6)) {
            const char *colon = strchr(op + 6, ':');
            if (!colon) return 100;
            char path[4096];
            snprintf(path, sizeof path, "/workdir/out/%.*s", (int)(colon - op - 6), op + 6);
            mkparents(path);
            FILE *f = fopen(path, "w");
            if (!f) {
                printf("write %s: %s\n", path, strerror(errno));
                continue;
            }
            fputs(colon + 1, f);
            fclose(f);
        } else if (!strncmp(op, "big=", 4)) {
            long n = atol(op + 4);
            for (long j = 0; j < n; j++) putchar('x');
        } else if (!strncmp(op, "sleep=", 6)) {
            long ms = atol(op + 6);
            struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        } else if (!strcmp(op, "violate")) {
            int r = unshare(CLONE_NEWUSER);
            printf("unshare %d %s\n", r, r ? strerror(errno) : "ok");
        } else if (!strncmp(op, "exit=", 5)) {
            fflush(stdout);
            fflush(stderr);
            _exit(atoi(op + 5));
        } else {
            fprintf(stderr, "cacheagent: unknown op %s\n", op);
            return 100;
        }
    }
    return 0;
}
