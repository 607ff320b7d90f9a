/* deny_layer: run a command on what looks like a kernel without one of the
 * layers comet-runtime applies, without changing the host.
 *
 *   deny_layer landlock CMD [ARG...]   landlock_create_ruleset(2): ENOSYS
 *                                      (a kernel built without Landlock)
 *   deny_layer listener CMD [ARG...]   seccomp(2) SECCOMP_SET_MODE_FILTER
 *                                      with SECCOMP_FILTER_FLAG_NEW_LISTENER:
 *                                      EINVAL (a kernel before 5.0)
 *
 * A seccomp filter, inherited by CMD and all its children. Built by the
 * rootless suites with cc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#define ARG(n) offsetof(struct seccomp_data, args[n])
#define NR offsetof(struct seccomp_data, nr)
#define ARCH offsetof(struct seccomp_data, arch)
#define FAIL(e) (SECCOMP_RET_ERRNO | ((e)&SECCOMP_RET_DATA))

int main(int argc, char** argv) {
  if (argc < 3 || (strcmp(argv[1], "landlock") && strcmp(argv[1], "listener"))) {
    fprintf(stderr, "usage: deny_layer landlock|listener CMD [ARG...]\n");
    return 2;
  }
  struct sock_filter landlock[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARCH),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_landlock_create_ruleset, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, FAIL(ENOSYS)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_filter listener[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARCH),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_seccomp, 0, 5),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG(0)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_SET_MODE_FILTER, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG(1)),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, SECCOMP_FILTER_FLAG_NEW_LISTENER, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, FAIL(EINVAL)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog;
  if (strcmp(argv[1], "landlock") == 0) {
    prog.len = sizeof landlock / sizeof landlock[0];
    prog.filter = landlock;
  } else {
    prog.len = sizeof listener / sizeof listener[0];
    prog.filter = listener;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
    perror("deny_layer: seccomp");
    return 1;
  }
  execvp(argv[2], argv + 2);
  perror("deny_layer: exec");
  return 127;
}
