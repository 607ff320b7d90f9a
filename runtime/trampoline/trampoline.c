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

__attribute__((noreturn, used)) void tramp_main(long* sp) {
  long argc = sp[0];
  char** argv = (char**)(sp + 1);
  char** envp = argv + argc + 1;
  if (argc >= 2) {
    const char* a0 = argv[0];
    long i = 0;
    while (kMarker[i] != '\0' && a0[i] == kMarker[i]) i++;
    if (kMarker[i] == '\0' && a0[i] == '\0') sys_execve(argv[1], argv + 2, envp);
  }
  sys_exit_group(127);
}
