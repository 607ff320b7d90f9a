// Compile-time benchmark (issue 4): soyapack.yaml text -> validated manifest
// -> OCI config -> config.json text, in process, for a manifest with N
// egress + fs entries. Prints the median and p95 over many runs.
//   comet-compile-bench [ENTRIES=50] [RUNS=2000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comet/capability/compile.hpp"
#include "comet/capability/manifest.hpp"
#include "comet/oci/spec.hpp"

namespace cap = comet::capability;

static std::string manifest(int entries) {
  std::string egress, reads, writes, tools;
  int e = entries / 2, r = entries / 4, w = entries - e - r;
  for (int i = 0; i < e; i++) {
    egress += "    - {host: api" + std::to_string(i) +
              ".example.test, port: " + std::to_string(1000 + i) + ", protocol: tcp}\n";
  }
  for (int i = 0; i < r; i++) reads += "      - /workdir/in" + std::to_string(i) + "\n";
  for (int i = 0; i < w; i++) writes += "      - /workdir/out" + std::to_string(i) + "\n";
  return "apiVersion: soyapack/v0\nname: bench\nversion: 1.0.0\nruntime:\n"
         "  interpreter: /usr/bin/python3\n  entrypoint: agent.py\n"
         "capabilities:\n  egress:\n" +
         egress + "  fs:\n    read:\n      - /workdir\n" + reads + "    write:\n" + writes +
         "  determinism_tier: side-effect\n";
}

int main(int argc, char** argv) {
  int entries = argc > 1 ? std::atoi(argv[1]) : 50;
  int runs = argc > 2 ? std::atoi(argv[2]) : 2000;
  std::string text = manifest(entries);
  cap::CompileInputs in;
  in.rootfs = "/var/lib/comet-runtime/rootfs/x";
  in.pack_dir = "/run/comet-runtime/packs/x/workdir";
  {
    auto m = cap::load_manifest(text);
    if (!m.ok()) {
      std::fprintf(stderr, "manifest: %s\n", m.error().what().c_str());
      return 1;
    }
    for (const auto& w : m->capabilities.fs.write) in.host_dirs[w] = "/run/x" + w;
  }
  std::vector<double> us, parse_us, compile_us, json_us, validate_us;
  size_t bytes = 0;
  using clock = std::chrono::steady_clock;
  auto since = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
  };
  for (int i = 0; i < runs; i++) {
    auto t0 = clock::now();
    auto m = cap::load_manifest(text);
    auto t1 = clock::now();
    auto s = cap::compile(*m, in);
    auto t2 = clock::now();
    std::string json = comet::oci::to_json(*s, 2);
    auto t3 = clock::now();
    bytes = json.size();
    us.push_back(since(t0, t3));
    parse_us.push_back(since(t0, t1));
    compile_us.push_back(since(t1, t2));
    json_us.push_back(since(t2, t3));
    auto t4 = clock::now();
    (void)cap::validate(*m);  // alone, for the breakdown (not in the total)
    validate_us.push_back(since(t4, clock::now()));
  }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::sort(us.begin(), us.end());
  std::printf(
      "compile %d-entry manifest -> config.json (%zu bytes): median %.1f us, p95 %.1f us, %d "
      "runs\n  parse+validate %.1f us, compile %.1f us, to_json %.1f us (medians; validate alone "
      "%.1f us)\n",
      entries, bytes, us[us.size() / 2], us[us.size() * 95 / 100], runs, med(parse_us),
      med(compile_us), med(json_us), med(validate_us));
  return 0;
}
