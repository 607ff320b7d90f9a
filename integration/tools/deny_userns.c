/* deny_userns: run a command where new user namespaces are refused, as on
 * a host with kernel.unprivileged_userns_clone=0 or AppArmor's
 * apparmor_restrict_unprivileged_userns, without changing the host.
 *
 *   deny_userns CMD [ARG...]
 *   deny_userns --unshare-only CMD [ARG...]
 *
 * A seccomp filter (inherited by CMD and its children) makes unshare(2)
 * and clone(2) with CLONE_NEWUSER fail with EPERM. clone3(2) passes its
 * flags in memory, where a filter cannot look: it fails with EPERM
 * whatever it asks (glibc's fork() uses clone(2), so processes can still
 * be made). --unshare-only lets clone3 through (only unshare(2) and clone(2)
 * with CLONE_NEWUSER fail): the two-stage create path clones without
 * namespaces and unshares the user namespace in the child. Built by
 * integration/rootless/test_oci_rootless.py with cc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARG0 offsetof(struct seccomp_data, args[0])
#define NR offsetof(struct seccomp_data, nr)
#define ARCH offsetof(struct seccomp_data, arch)
#define DENY (SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))

int main(int argc, char** argv) {
  int unshare_only = argc > 1 && strcmp(argv[1], "--unshare-only") == 0;
  if (argc < 2 + unshare_only) {
    fprintf(stderr, "usage: deny_userns [--unshare-only] CMD [ARG...]\n");
    return 2;
  }
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARCH),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, unshare_only ? SECCOMP_RET_ALLOW : DENY),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3),
      /* the low 32 bits of the flags (unshare: arg 0; clone: arg 0) */
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, DENY),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof f / sizeof f[0], f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
    perror("deny_userns: seccomp");
    return 1;
  }
  execvp(argv[1 + unshare_only], argv + 1 + unshare_only);
  perror("deny_userns: exec");
  return 127;
}
