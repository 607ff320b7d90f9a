/* Start-up timer for bench/sandbox.sh: runs each command once per round,
 * interleaved (fork, exec with stdout/stderr on /dev/null, wait), and
 * prints the median wall time of each in ms, one line per command.
 *   startup_timer ROUNDS CMD1... ::: CMD2... [::: CMD3...]            */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double run(char** argv, int* failed) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  pid_t p = fork();
  if (p == 0) {
    int fd = open("/dev/null", O_WRONLY);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(argv[0], argv);
    _exit(127);
  }
  int st;
  waitpid(p, &st, 0);
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) *failed = 1;
  return (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  int rounds = atoi(argv[1]);
  char** cmds[16];
  int n = 0;
  cmds[n++] = argv + 2;
  for (int i = 2; i < argc && n < 16; i++)
    if (strcmp(argv[i], ":::") == 0) {
      argv[i] = NULL;
      cmds[n++] = argv + i + 1;
    }
  double* t = calloc((size_t)(rounds * n), sizeof(double));
  int failed[16] = {0};
  for (int c = 0; c < n; c++) run(cmds[c], &failed[c]); /* warm-up */
  for (int r = 0; r < rounds; r++)
    for (int c = 0; c < n; c++) t[c * rounds + r] = run(cmds[c], &failed[c]);
  for (int c = 0; c < n; c++) {
    qsort(t + c * rounds, (size_t)rounds, sizeof(double), cmp);
    printf("%.2f%s\n", t[c * rounds + rounds / 2], failed[c] ? " FAILED" : "");
  }
  return 0;
}
