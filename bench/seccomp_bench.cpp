// Seccomp filter cost (issue 7): getpid and stat loops in a forked child
// under no filter, the Docker-like default (linear and binary tree), and the
// full lock-down (Docker-like + the stacked lock-down filter, as a pack
// runs). Prints ns per syscall (median of rounds) and the ratios.
//   comet-seccomp-bench [CALLS=2000000] [ROUNDS=5]
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comet/seccomp/seccomp.hpp"

namespace cs = comet::seccomp;

namespace {

struct Variant {
  std::string name;
  std::vector<cs::Program> filters;
};

// ns per call of `what` in a child that loaded `filters`, over a pipe.
double measure(const Variant& v, bool stat_loop, long calls) {
  int p[2];
  if (pipe(p) < 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    for (const auto& f : v.filters) {
      int l = -1;
      if (cs::load(f, &l) != 0) _exit(2);
    }
    struct stat st;
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; i++) {
      if (stat_loop)
        stat("/", &st);
      else
        syscall(SYS_getpid);
    }
    auto t1 = std::chrono::steady_clock::now();
    double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / calls;
    if (write(p[1], &ns, sizeof ns) != sizeof ns) _exit(3);
    _exit(0);
  }
  close(p[1]);
  double ns = -1;
  if (read(p[0], &ns, sizeof ns) != sizeof ns) ns = -1;
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return ns;
}

cs::Program must(comet::Result<cs::Program> r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, r.error().what().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

}  // namespace

int main(int argc, char** argv) {
  long calls = argc > 1 ? std::atol(argv[1]) : 2000000;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  cs::CompileOptions linear, tree, lock;
  linear.optimize = cs::Optimize::kLinear;
  tree.optimize = cs::Optimize::kBinaryTree;
  lock.enosys_stub = false;
  auto docker = cs::docker_default_profile();
  cs::LockdownOptions lo;
  lo.exec_lock = true;
  lo.network_none = true;
  cs::Program dl = must(cs::compile(docker, linear), "docker linear");
  cs::Program dt = must(cs::compile(docker, tree), "docker tree");
  cs::Program ld = must(cs::compile(cs::lockdown_profile(lo), lock), "lockdown");
  std::vector<Variant> vs = {{"no filter", {}},
                             {"docker-default (linear)", {dl}},
                             {"docker-default (binary tree)", {dt}},
                             {"full lock-down (tree + lock-down)", {ld, dt}}};
  std::printf("%zu / %zu / %zu BPF instructions (docker linear / tree / lock-down)\n",
              dl.filter.size(), dt.filter.size(), ld.filter.size());
  for (bool st : {false, true}) {
    std::vector<double> med;
    for (const auto& v : vs) {
      std::vector<double> xs;
      for (int r = 0; r < rounds; r++) xs.push_back(measure(v, st, st ? calls / 4 : calls));
      std::sort(xs.begin(), xs.end());
      med.push_back(xs[xs.size() / 2]);
    }
    std::printf("\n%s loop, median of %d rounds:\n", st ? "stat(\"/\")" : "getpid", rounds);
    for (size_t i = 0; i < vs.size(); i++) {
      std::printf("  %-36s %8.1f ns/call  %.2fx no filter  %.2fx docker tree\n", vs[i].name.c_str(),
                  med[i], med[i] / med[0], med[i] / med[2]);
    }
  }
  return 0;
}
