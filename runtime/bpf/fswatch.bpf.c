/* fswatch: the fs.read / fs.write source of capability_violation events
 * (docs/events.md). An observer only: fexit programs on the syscall entry
 * points that take a path; they see the call's return value after the fact
 * and can change nothing. A call that succeeded costs the trampoline and one
 * compare. A call that failed with an errno the sandbox's mounts give
 * (EPERM, ENOENT, EACCES, ENOTDIR, EROFS) is looked up by the caller's
 * cgroup (v2) id in `slot_of`; a watched container's ring buffer (`rings`
 * at that slot) gets the call's number, arguments and path(s), copied from
 * the caller's memory. Slots, not a map per container: an update of a map
 * of maps waits for an RCU grace period (7-20 ms measured), a slot's ring
 * is made once per boot and reused.
 * The runtime's reporter decides what is a violation (runtime/src/fswatch.cpp).
 *
 * Built with clang -target bpf; no CO-RE: the only kernel structure read is
 * x86-64's struct pt_regs, whose layout is the user ABI's. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#define PATH_MAX_REC 256
/* = kFsArmMarker of fswatch.hpp: what the runtime's own set-up in the
 * container does before it is looked up is not recorded. */
#define ARM_MARKER "/\x01" "comet-fswatch-arm"
#define RING_BYTES (512 * 1024) /* = kRingBytes of fswatch.cpp */

struct fs_record {
  __u64 cgroup;
  __u32 tgid, tid;
  __s32 nr, ret;
  __s64 dfd, dfd2;
  __u64 flags; /* open flags, mode, or the call's flag argument */
  char path[PATH_MAX_REC];
  char path2[PATH_MAX_REC];
};

struct ring {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, RING_BYTES);
};

struct watch {
  __u32 slot;  /* in rings */
  __u32 lost;  /* records the full ring could not take */
  __u32 armed; /* the agent has looked up ARM_MARKER: its records count */
  __u32 pad;
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u64); /* cgroup id */
  __type(value, struct watch);
} slot_of SEC(".maps");

/* The record is built here and copied out at its used length: a record is
 * ~70 bytes for a short path instead of 560, so the ring holds ~7k. */
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
#define ORIG_AX 120

/* Read through the BTF-typed argument (a direct load the verifier checks
 * against the kernel's struct pt_regs): bpf_probe_read_kernel() is not
 * available under lockdown=confidentiality, this is. */
static __always_inline __u64 reg(const void *regs, int off) {
  return *(const __u64 *)((const char *)regs + off);
}

static __always_inline int wanted(long ret) {
  return ret == -1 || ret == -2 || ret == -13 || ret == -20 || ret == -30;
}

/* Whether an absolute path lies in a system directory (/usr /lib /lib64
 * /bin /sbin /etc /proc /dev /sys): a failed read there is never a
 * violation (classify_fs() says the same), and an interpreter probes there
 * hundreds of times at start, so it is not even recorded. */
static __always_inline int is(const char *p, const char *name, int n) {
  for (int i = 0; i < n; i++)
    if (p[1 + i] != name[i]) return 0;
  return p[1 + n] == '/' || p[1 + n] == 0;
}
static __always_inline int in_system_dir(const char *p) {
  if (p[0] != '/') return 0;
  return is(p, "usr", 3) || is(p, "lib", 3) || is(p, "lib64", 5) || is(p, "bin", 3) ||
         is(p, "sbin", 4) || is(p, "etc", 3) || is(p, "proc", 4) || is(p, "dev", 3) ||
         is(p, "sys", 3);
}

/* p, p2: the path arguments' register offsets (-1: none); d, d2: the dirfd
 * arguments' (-1: AT_FDCWD); f: the flags argument's (-1: none; -2: openat2's
 * struct open_how at DX). */
static __always_inline int record(int nr, const void *regs, long ret, int p, int d, int p2, int d2,
                                  int f, int rd) {
  if (!wanted(ret)) return 0;
  __u64 cg = bpf_get_current_cgroup_id();
  struct watch *w = bpf_map_lookup_elem(&slot_of, &cg);
  if (!w) return 0;
  void *rb = bpf_map_lookup_elem(&rings, &w->slot);
  if (!rb) return 0;
  __u32 zero = 0;
  struct fs_record *r = bpf_map_lookup_elem(&scratch, &zero);
  if (!r) return 0;
  __u64 id = bpf_get_current_pid_tgid();
  r->cgroup = cg;
  r->tgid = id >> 32;
  r->tid = (__u32)id;
  r->nr = nr;
  r->ret = (__s32)ret;
  r->dfd = d >= 0 ? (__s64)reg(regs, d) : -100;
  r->dfd2 = d2 >= 0 ? (__s64)reg(regs, d2) : -100;
  r->flags = 0;
  if (f >= 0) {
    r->flags = reg(regs, f);
  } else if (f == -2) {
    __u64 how = reg(regs, DX);
    bpf_probe_read_user(&r->flags, sizeof r->flags, (const void *)how);
  }
  r->path[0] = 0;
  r->path2[0] = 0;
  long n = 1;
  if (p >= 0) n = bpf_probe_read_user_str(r->path, sizeof r->path, (const void *)reg(regs, p));
  if (n < 1) n = 1;
  if (!w->armed) {
    const char m[] = ARM_MARKER;
    for (int i = 0; i < (int)sizeof m; i++)
      if (r->path[i] != m[i]) return 0;
    w->armed = 1;
    return 0;
  }
  /* rd: a reading call (for open: no write flag) */
  if (rd == 1 || (rd == 2 && (r->flags & 3) == 0 && (r->flags & (0100 | 01000)) == 0))
    if (in_system_dir(r->path)) return 0;
  if (n > PATH_MAX_REC) n = PATH_MAX_REC;
  __u64 size = __builtin_offsetof(struct fs_record, path) + n;
  if (p2 >= 0) {
    bpf_probe_read_user_str(r->path2, sizeof r->path2, (const void *)reg(regs, p2));
    size = sizeof *r;
  }
  /* No wake-up per record (in a VM each is a self-IPI, ~10 us): the
   * reporter drains every 200 ms, when asked (the init's barrier) and at
   * its end; a ring a quarter full wakes it at once. */
  __u64 wake = bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) > RING_BYTES / 4 ? BPF_RB_FORCE_WAKEUP
                                                                          : BPF_RB_NO_WAKEUP;
  if (bpf_ringbuf_output(rb, r, size, wake) < 0) __sync_fetch_and_add(&w->lost, 1);
  return 0;
}

/* One program on the sys_exit tracepoint (fexit trampolines are refused on
 * this kernel's configuration: lockdown=confidentiality). */
SEC("tp_btf/sys_exit")
int fs_exit(unsigned long long *ctx) {
  const void *regs = (const void *)ctx[0];
  long ret = (long)ctx[1];
  if (!wanted(ret)) return 0;
  long nr = (long)reg(regs, ORIG_AX);
  switch (nr) {
    /*    nr   path dirfd path2 dirfd2 flags */
    case 2:   return record(nr, regs, ret, DI, -1, -1, -1, SI, 2);   /* open */
    case 257: return record(nr, regs, ret, SI, DI, -1, -1, DX, 2);   /* openat */
    case 437: return record(nr, regs, ret, SI, DI, -1, -1, -2, 2);   /* openat2 */
    case 85:  return record(nr, regs, ret, DI, -1, -1, -1, -1, 0);   /* creat */
    case 4:   return record(nr, regs, ret, DI, -1, -1, -1, -1, 1);   /* stat */
    case 6:   return record(nr, regs, ret, DI, -1, -1, -1, -1, 1);   /* lstat */
    case 262: return record(nr, regs, ret, SI, DI, -1, -1, R10, 1);   /* newfstatat */
    case 332: return record(nr, regs, ret, SI, DI, -1, -1, DX, 1);   /* statx */
    case 21:  return record(nr, regs, ret, DI, -1, -1, -1, -1, 1);   /* access */
    case 269: return record(nr, regs, ret, SI, DI, -1, -1, -1, 1);   /* faccessat */
    case 439: return record(nr, regs, ret, SI, DI, -1, -1, -1, 1);   /* faccessat2 */
    case 89:  return record(nr, regs, ret, DI, -1, -1, -1, -1, 1);   /* readlink */
    case 267: return record(nr, regs, ret, SI, DI, -1, -1, -1, 1);   /* readlinkat */
    case 80:  return record(nr, regs, ret, DI, -1, -1, -1, -1, 1);   /* chdir */
    case 83:  return record(nr, regs, ret, DI, -1, -1, -1, -1, 0);   /* mkdir */
    case 258: return record(nr, regs, ret, SI, DI, -1, -1, -1, 0);   /* mkdirat */
    case 84:  return record(nr, regs, ret, DI, -1, -1, -1, -1, 0);   /* rmdir */
    case 87:  return record(nr, regs, ret, DI, -1, -1, -1, -1, 0);   /* unlink */
    case 263: return record(nr, regs, ret, SI, DI, -1, -1, DX, 0);   /* unlinkat */
    case 82:  return record(nr, regs, ret, DI, -1, SI, -1, -1, 0);   /* rename */
    case 264: return record(nr, regs, ret, SI, DI, R10, DX, -1, 0);   /* renameat */
    case 316: return record(nr, regs, ret, SI, DI, R10, DX, -1, 0);   /* renameat2 */
    case 86:  return record(nr, regs, ret, DI, -1, SI, -1, -1, 0);   /* link */
    case 265: return record(nr, regs, ret, SI, DI, R10, DX, -1, 0);   /* linkat */
    case 88:  return record(nr, regs, ret, SI, -1, -1, -1, -1, 0);   /* symlink */
    case 266: return record(nr, regs, ret, DX, SI, -1, -1, -1, 0);   /* symlinkat */
    case 76:  return record(nr, regs, ret, DI, -1, -1, -1, -1, 0);   /* truncate */
    case 90:  return record(nr, regs, ret, DI, -1, -1, -1, -1, 0);   /* chmod */
    case 268: return record(nr, regs, ret, SI, DI, -1, -1, -1, 0);   /* fchmodat */
    case 92:  return record(nr, regs, ret, DI, -1, -1, -1, -1, 0);   /* chown */
    case 94:  return record(nr, regs, ret, DI, -1, -1, -1, -1, 0);   /* lchown */
    case 260: return record(nr, regs, ret, SI, DI, -1, -1, -1, 0);   /* fchownat */
    case 280: return record(nr, regs, ret, SI, DI, -1, -1, -1, 0);   /* utimensat */
    case 133: return record(nr, regs, ret, DI, -1, -1, -1, SI, 0);   /* mknod */
    case 259: return record(nr, regs, ret, SI, DI, -1, -1, DX, 0);   /* mknodat */
    case 188: return record(nr, regs, ret, DI, -1, -1, -1, -1, 0);   /* setxattr */
    case 189: return record(nr, regs, ret, DI, -1, -1, -1, -1, 0);   /* lsetxattr */
    case 197: return record(nr, regs, ret, DI, -1, -1, -1, -1, 0);   /* removexattr */
    case 198: return record(nr, regs, ret, DI, -1, -1, -1, -1, 0);   /* lremovexattr */
  }
  return 0;
}
