/* fswatch: the fs.read / fs.write source of capability_violation events
 * (docs/events.md). An observer only: one program on the sys_exit
 * tracepoint sees a path call's return value after the fact and can change
 * nothing. A call that succeeded costs the tracepoint and one compare. A
 * call that failed with an errno the sandbox's mounts give (EPERM, ENOENT,
 * EACCES, ENOTDIR, EROFS) is looked up by the caller's cgroup (v2) id in
 * `slot_of`; a watched container's ring buffer (`rings` at that slot) gets
 * the call's number, arguments and path(s), copied from the caller's
 * memory. Slots, not a map per container: an update of a map of maps waits
 * for an RCU grace period (7-20 ms measured), a slot's ring is made once
 * per boot and reused.
 * The runtime's reporter decides what is a violation (runtime/reporting/src/fswatch.cpp).
 *
 * Built with clang -target bpf. Kernel structures: x86-64's struct pt_regs
 * (the user ABI's layout) and, through CO-RE (libbpf relocates the offsets
 * against the kernel's BTF), task->fs->pwd.dentry, the caller's cwd. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/* CO-RE: only the fields read, relocated by name against the kernel's BTF. */
struct super_block {
  __u32 s_dev;
} __attribute__((preserve_access_index));
struct inode {
  unsigned long i_ino;
  struct super_block *i_sb;
} __attribute__((preserve_access_index));
struct dentry {
  struct inode *d_inode;
} __attribute__((preserve_access_index));
struct path {
  struct dentry *dentry;
} __attribute__((preserve_access_index));
struct fs_struct {
  struct path pwd;
} __attribute__((preserve_access_index));
struct task_struct {
  struct fs_struct *fs;
} __attribute__((preserve_access_index));

#define PATH_MAX_REC 512 /* = sizeof FsRecord::path of fswatch.hpp */
/* = kFsArmMarker of fswatch.hpp: what the runtime's own set-up in the
 * container does before it is looked up is not recorded. */
#define ARM_MARKER "/\x01" "comet-fswatch-arm"
#define RING_BYTES (512 * 1024) /* = kRingBytes of fswatch.cpp */

/* fs_record.info bits (= kFsPathCut... of fswatch.hpp) */
#define PATH_CUT 1  /* path filled the buffer: it may go on */
#define PATH2_CUT 2
#define CWD_MOVED 4 /* the caller's cwd is not the agent's cwd when it armed */
#define PATH_FAULT 8 /* the path could not be read from the caller's memory */

struct fs_record {
  __u64 cgroup;
  __u32 tgid, tid;
  __s32 nr, ret;
  __s64 dfd, dfd2;
  __u64 flags; /* open flags, mode, or the call's flag argument */
  __u32 info;
  __u32 cwd_dev; /* the caller's cwd: its file system's dev (kernel encoding) */
  __u64 cwd_ino; /* and inode number, for the reporter to check /proc/TID/cwd */
  char path[PATH_MAX_REC];
  char path2[PATH_MAX_REC];
};

struct ring {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, RING_BYTES);
};

struct watch {
  __u32 slot;  /* in rings */
  __u32 armed; /* the agent has looked up ARM_MARKER: its records count */
  __u64 lost;  /* records the full ring could not take */
  __u64 cwd;   /* the arming task's cwd (a dentry's address: compared only) */
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u64); /* cgroup id */
  __type(value, struct watch);
} slot_of SEC(".maps");

/* The record is built here and copied out at its used length: a record is
 * ~70 bytes for a short path instead of 1 KiB, so the ring holds ~7k. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct fs_record);
} scratch SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __array(values, struct ring);
} rings SEC(".maps");

/* x86-64 struct pt_regs: the syscall arguments' offsets. */
#define DI 112
#define SI 104
#define DX 96
#define R10 56
#define R8 72
#define R9 64
#define ORIG_AX 120

/* Read through the BTF-typed argument (a direct load the verifier checks
 * against the kernel's struct pt_regs): bpf_probe_read_kernel() is not
 * available under lockdown=confidentiality, this is. */
static __always_inline __u64 reg(const void *regs, int off) {
  return *(const __u64 *)((const char *)regs + off);
}

/* EPERM ENOENT EACCES ENOTDIR EROFS, and EXDEV (-18): a rename or link
 * across mounts, which the kernel refuses before it looks at whether the
 * target is read-only (kept for the two-path calls only, in fs_exit); and
 * EBUSY (-16): a rename onto, or an unlink of, a mount point (a sandbox's
 * protected path: git's rename of config.lock over .git/config). */
static __always_inline int wanted(long ret) {
  return ret == -1 || ret == -2 || ret == -13 || ret == -20 || ret == -30 || ret == -18 ||
         ret == -16;
}

/* Argument i (0..4) of the call, from the five loaded up front. */
static __always_inline __u64 arg(const __u64 *a, int i) {
  return i == 0 ? a[0] : i == 1 ? a[1] : i == 2 ? a[2] : i == 3 ? a[3] : a[4];
}

/* Whether a path lies in a system directory (/usr /lib /lib64 /bin /sbin
 * /etc /sys) as the kernel resolves it: absolute, no ".." component (which
 * could climb out), not cut. A failed read there is never a violation
 * (classify_fs() says the same) and an interpreter probes there hundreds
 * of times at start, so it is not even recorded. /proc and /dev are not in
 * the list: their magic links (/proc/self/root, /dev/fd/N) lead anywhere,
 * and the reporter looks at what comes after them. */
static __always_inline int is(const char *p, const char *name, int n) {
  for (int i = 0; i < n; i++)
    if (p[1 + i] != name[i]) return 0;
  return p[1 + n] == '/' || p[1 + n] == 0;
}
static __always_inline int in_system_dir(const char *p, long n) {
  if (p[0] != '/' || n >= PATH_MAX_REC) return 0;
  if (!(is(p, "usr", 3) || is(p, "lib", 3) || is(p, "lib64", 5) || is(p, "bin", 3) ||
        is(p, "sbin", 4) || is(p, "etc", 3) || is(p, "sys", 3)))
    return 0;
  for (int i = 1; i < PATH_MAX_REC - 2; i++) {
    if (i + 1 >= n) break;
    if (p[i - 1] == '/' && p[i] == '.' && p[i + 1] == '.' && (p[i + 2] == '/' || p[i + 2] == 0))
      return 0;
  }
  return 1;
}

/* The call's shape: argument indices of the path(s) and dirfd(s) (-1: none
 * or AT_FDCWD) and of the flags (-1: none; F_HOW: openat2's struct
 * open_how at arg 2; F_SOCK: a sockaddr at arg 1 whose AF_UNIX path is the
 * path), and whether it reads (RD), writes (WR) or opens (OPEN: by its
 * flags). */
#define F_HOW -2
#define F_SOCK -3
enum { WR = 0, RD = 1, OPEN = 2, EXEC = 3 };
struct shape {
  int p, d, p2, d2, f, rd;
};

static __always_inline int shape_of(long nr, struct shape *s) {
  int p = -1, d = -1, p2 = -1, d2 = -1, f = -1, rd = WR;
  switch (nr) {
    /*                                                            path dirfd path2 dirfd2 */
    case 2:   p = 0; f = 1; rd = OPEN; break;                     /* open */
    case 257: p = 1; d = 0; f = 2; rd = OPEN; break;              /* openat */
    case 437: p = 1; d = 0; f = F_HOW; rd = OPEN; break;          /* openat2 */
    case 85:  p = 0; break;                                       /* creat */
    case 4:   p = 0; rd = RD; break;                              /* stat */
    case 6:   p = 0; rd = RD; break;                              /* lstat */
    case 262: p = 1; d = 0; f = 3; rd = RD; break;                /* newfstatat */
    case 332: p = 1; d = 0; f = 2; rd = RD; break;                /* statx */
    case 21:  p = 0; rd = RD; break;                              /* access */
    case 269: p = 1; d = 0; rd = RD; break;                       /* faccessat */
    case 439: p = 1; d = 0; f = 3; rd = RD; break;                /* faccessat2 */
    case 89:  p = 0; rd = RD; break;                              /* readlink */
    case 267: p = 1; d = 0; rd = RD; break;                       /* readlinkat */
    case 80:  p = 0; rd = RD; break;                              /* chdir */
    case 137: p = 0; rd = RD; break;                              /* statfs */
    case 191: case 192: case 194: case 195:                       /* [l]getxattr, [l]listxattr */
              p = 0; rd = RD; break;
    case 464: case 465: p = 1; d = 0; f = 2; rd = RD; break;      /* getxattrat, listxattrat */
    case 468: p = 1; d = 0; f = 4; rd = RD; break;                /* file_getattr */
    case 254: p = 1; f = 2; rd = RD; break;                       /* inotify_add_watch */
    case 303: p = 1; d = 0; f = 4; rd = RD; break;                /* name_to_handle_at */
    case 301: p = 4; d = 3; f = 1; rd = RD; break;                /* fanotify_mark */
    case 42:  f = F_SOCK; rd = RD; break;                         /* connect (AF_UNIX) */
    case 49:  f = F_SOCK; break;                                  /* bind (AF_UNIX) */
    case 44:  case 46: f = F_SOCK; rd = RD; break;                /* sendto, sendmsg to a path */
    case 83:  p = 0; break;                                       /* mkdir */
    case 258: p = 1; d = 0; break;                                /* mkdirat */
    case 84:  p = 0; break;                                       /* rmdir */
    case 87:  p = 0; break;                                       /* unlink */
    case 263: p = 1; d = 0; f = 2; break;                         /* unlinkat */
    case 82:  p = 0; p2 = 1; break;                               /* rename */
    case 264: case 316: p = 1; d = 0; p2 = 3; d2 = 2; break;      /* renameat, renameat2 */
    case 86:  p = 0; p2 = 1; break;                               /* link */
    case 265: p = 1; d = 0; p2 = 3; d2 = 2; f = 4; break;         /* linkat */
    case 88:  p = 1; break;                                       /* symlink */
    case 266: p = 2; d = 1; break;                                /* symlinkat */
    case 76:  p = 0; break;                                       /* truncate */
    case 90:  p = 0; break;                                       /* chmod */
    case 268: p = 1; d = 0; break;                                /* fchmodat */
    case 452: p = 1; d = 0; f = 3; break;                         /* fchmodat2 */
    case 92:  case 94: p = 0; break;                              /* chown, lchown */
    case 260: p = 1; d = 0; f = 4; break;                         /* fchownat */
    case 280: p = 1; d = 0; f = 3; break;                         /* utimensat */
    case 261: p = 1; d = 0; break;                                /* futimesat */
    case 132: case 235: p = 0; break;                             /* utime, utimes */
    case 133: p = 0; f = 1; break;                                /* mknod */
    case 259: p = 1; d = 0; f = 2; break;                         /* mknodat */
    case 188: case 189: case 197: case 198:                       /* [l]setxattr, [l]removexattr */
              p = 0; break;
    case 463: case 466: p = 1; d = 0; f = 2; break;               /* setxattrat, removexattrat */
    case 469: p = 1; d = 0; f = 4; break;                         /* file_setattr */
    /* an exec that failed: under the exec lock EACCES is Landlock's
     * refusal, also of a path that changed after the reporter looked */
    case 59:  p = 0; rd = EXEC; break;                            /* execve */
    case 322: p = 1; d = 0; f = 4; rd = EXEC; break;              /* execveat */
    /* on the fd itself: no path, the reporter reads what the fd names */
    case 91:  case 93: d = 0; break;                              /* fchmod, fchown */
    case 190: case 199: d = 0; break;                             /* fsetxattr, fremovexattr */
    default:  return 0;
  }
  s->p = p; s->d = d; s->p2 = p2; s->d2 = d2; s->f = f; s->rd = rd;
  return 1;
}

static __always_inline __u64 cwd_of(void) {
  struct task_struct *t = bpf_get_current_task_btf();
  return (__u64)t->fs->pwd.dentry;
}

static __always_inline int record(long nr, const __u64 *a, long ret, const struct shape *s) {
  __u64 cg = bpf_get_current_cgroup_id();
  struct watch *w = bpf_map_lookup_elem(&slot_of, &cg);
  if (!w) return 0;
  __u32 zero = 0;
  struct fs_record *r = bpf_map_lookup_elem(&scratch, &zero);
  if (!r) return 0;
  r->path[0] = 0;
  r->path2[0] = 0;
  long n = 1;
  if (s->p >= 0) n = bpf_probe_read_user_str(r->path, sizeof r->path, (const void *)arg(a, s->p));
  /* Armed by the agent's lookup of the marker, whatever that returned (the
   * marker could exist in an image); the arming task's cwd is the agent's. */
  if (!w->armed) {
    if (nr != 21) return 0;
    const char m[] = ARM_MARKER;
    for (int i = 0; i < (int)sizeof m; i++)
      if (r->path[i] != m[i]) return 0;
    w->cwd = cwd_of();
    w->armed = 1;
    return 0;
  }
  if (!wanted(ret)) return 0;
  void *rb = bpf_map_lookup_elem(&rings, &w->slot);
  if (!rb) return 0;
  __u64 id = bpf_get_current_pid_tgid();
  r->cgroup = cg;
  r->tgid = id >> 32;
  r->tid = (__u32)id;
  r->nr = nr;
  r->ret = (__s32)ret;
  r->dfd = s->d >= 0 ? (__s64)arg(a, s->d) : -100;
  r->dfd2 = s->d2 >= 0 ? (__s64)arg(a, s->d2) : -100;
  r->flags = 0;
  r->info = 0;
  if (s->f >= 0) {
    r->flags = arg(a, s->f);
  } else if (s->f == F_HOW) {
    bpf_probe_read_user(&r->flags, sizeof r->flags, (const void *)a[2]);
  } else if (s->f == F_SOCK) {
    /* struct sockaddr_un: a pathname address only (abstract and other
     * families are not the file system's) */
    __u16 family = 0;
    /* the kernel takes addrlen (an int) - 2 bytes of sun_path, up to a NUL */
    long len = (long)(__s32)a[2] - 2;
    if (bpf_probe_read_user(&family, sizeof family, (const void *)a[1]) < 0) {
      r->info |= PATH_FAULT; /* unmapped since the call: unknown, fail closed */
      len = 0;
    } else if (family != 1) {
      return 0;
    }
    if (!(r->info & PATH_FAULT)) {
      if (len <= 0) return 0; /* autobind, or unnamed */
      if (len > 108) len = 108;
      len &= 127;
      if (bpf_probe_read_user(r->path, len, (const void *)(a[1] + 2)) < 0) {
        r->info |= PATH_FAULT;
        len = 0;
      }
      r->path[len] = 0;
      if (len && r->path[0] == 0) return 0; /* abstract: not the file system's */
    }
    n = len + 1;
  }
  /* unreadable, not NULL (utimensat(fd, NULL) has no path on purpose) */
  if (n < 0 && s->p >= 0 && arg(a, s->p) != 0) r->info |= PATH_FAULT;
  if (n < 1) n = 1;
  if (n >= PATH_MAX_REC) r->info |= PATH_CUT;
  /* A failed read in a system directory is the image's business, but for
   * EACCES: a sandbox profile's denied path (/etc/shadow) answers that. */
  if (ret != -13 &&
      (s->rd == RD || (s->rd == OPEN && (r->flags & 3) == 0 && (r->flags & (0100 | 01000)) == 0)))
    if (in_system_dir(r->path, n)) return 0;
  if (n > PATH_MAX_REC) n = PATH_MAX_REC;
  __u64 size = __builtin_offsetof(struct fs_record, path) + n;
  if (s->p2 >= 0) {
    long n2 =
        bpf_probe_read_user_str(r->path2, sizeof r->path2, (const void *)arg(a, s->p2));
    if (n2 >= PATH_MAX_REC) r->info |= PATH2_CUT;
    size = sizeof *r;
  }
  struct dentry *cwd = (struct dentry *)cwd_of();
  if ((__u64)cwd != w->cwd) r->info |= CWD_MOVED;
  r->cwd_ino = cwd->d_inode->i_ino;
  r->cwd_dev = cwd->d_inode->i_sb->s_dev;
  /* No wake-up per record (in a VM each is a self-IPI, ~10 us): the
   * reporter drains every 200 ms, when asked (the init's barrier) and at
   * its end; a ring a quarter full wakes it at once. */
  __u64 wake = bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) > RING_BYTES / 4 ? BPF_RB_FORCE_WAKEUP
                                                                          : BPF_RB_NO_WAKEUP;
  if (bpf_ringbuf_output(rb, r, size, wake) < 0) __sync_fetch_and_add(&w->lost, 1);
  return 0;
}

/* One program on the sys_exit tracepoint (fexit trampolines and kprobes
 * are refused on this kernel's configuration: lockdown=confidentiality). */
SEC("tp_btf/sys_exit")
int fs_exit(unsigned long long *ctx) {
  const void *regs = (const void *)ctx[0];
  long ret = (long)ctx[1];
  long nr = (long)reg(regs, ORIG_AX);
  /* access(2) goes on whatever it returned: it may be the arm marker */
  if (!wanted(ret) && nr != 21) return 0;
  struct shape s;
  if (!shape_of(nr, &s)) return 0;
  if (ret == -18 && s.p2 < 0) return 0; /* EXDEV: only a rename or link says it */
  /* EBUSY: only a rename or link, unlink, unlinkat, rmdir */
  if (ret == -16 && s.p2 < 0 && nr != 87 && nr != 263 && nr != 84) return 0;
  if (s.rd == EXEC && ret != -13 && ret != -2) return 0; /* an exec: EACCES (Landlock's), ENOENT */
  __u64 a[5] = {reg(regs, DI), reg(regs, SI), reg(regs, DX), reg(regs, R10), reg(regs, R8)};
  /* A datagram to a path: its address where connect's is (args 1 and 2).
   * sendto: dest_addr, addrlen (args 4, 5); sendmsg: msg_name and
   * msg_namelen of the struct msghdr at arg 1. None: a connected socket. */
  if (nr == 44) {
    a[1] = a[4];
    a[2] = reg(regs, R9);
  } else if (nr == 46) {
    struct { __u64 name; __u32 namelen; } mh = {};
    if (bpf_probe_read_user(&mh, sizeof mh, (const void *)a[1]) < 0) return 0;
    a[1] = mh.name;
    a[2] = mh.namelen;
  }
  if ((nr == 44 || nr == 46) && a[1] == 0) return 0;
  return record(nr, a, ret, &s);
}
