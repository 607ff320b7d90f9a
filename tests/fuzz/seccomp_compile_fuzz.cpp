// seccomp_compile: an OCI linux.seccomp block through parse_spec and
// seccomp::compile, then the compiled program through the BPF evaluator.
//
// Input: the JSON value of linux.seccomp; the target wraps it as
//   {"ociVersion":"1.0.0","linux":{"seccomp": INPUT}}
//
// Invariants (beyond "no crash, no sanitizer report"):
//   1. compile never throws, with the default options and with each
//      optimisation layout with and without the ENOSYS stub.
//   2. A compiled program has 1..4096 (BPF_MAXINSNS) instructions and passes
//      check_filter (what the kernel's seccomp_check_filter would accept): a
//      program that compiles but that the kernel would refuse is a bug.
//   3. evaluate() returns for a spread of syscall numbers, arguments and
//      architectures (native, i386, x32 bit set, an unknown one).
//   4. The layout is not the policy: the linear and binary-tree layouts
//      return the same action for every probe.
#include <linux/audit.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comet/oci/spec.hpp"
#include "comet/seccomp/bpf_eval.hpp"
#include "comet/seccomp/seccomp.hpp"
#include "fuzz_check.hpp"

namespace sc = comet::seccomp;

namespace {

struct Probe {
  int nr;
  uint32_t arch;
  std::array<uint64_t, 6> args;
};

std::vector<Probe> probes() {
  const uint32_t native = sc::native_audit_arch();
  std::vector<Probe> v;
  for (int nr : {0,   1,   2,   3,   9,   39,  41,  59,  60,  101, 157,  165,
                 231, 272, 310, 317, 321, 425, 435, 439, 450, 511, 1000, 0x40000000 | 1,
                 -1}) {
    v.push_back({nr, native, {}});
    v.push_back({nr, native, {1, 2, 0xffffffffULL, 0x100000000ULL, ~0ULL, 0}});
  }
  for (int nr : {0, 1, 11, 102, 252}) v.push_back({nr, AUDIT_ARCH_I386, {}});
  v.push_back({59, AUDIT_ARCH_AARCH64, {}});
  v.push_back({59, 0x12345678u, {}});
  return v;
}

std::vector<uint32_t> run(const sc::Program& p, const std::vector<Probe>& ps) {
  std::vector<uint32_t> out;
  for (const auto& pr : ps) {
    out.push_back(sc::evaluate(p.filter, sc::make_seccomp_data(pr.nr, pr.args, pr.arch)));
  }
  return out;
}

void check_program(const sc::Program& p, const char* how) {
  FUZZ_CHECK(!p.filter.empty(), std::string(how) + ": empty program");
  FUZZ_CHECK(p.filter.size() <= BPF_MAXINSNS, std::string(how) + ": program has " +
                                                  std::to_string(p.filter.size()) +
                                                  " instructions (> 4096)");
  const std::string problem = sc::check_filter(p.filter);
  FUZZ_CHECK(problem.empty(), std::string(how) + ": the kernel would refuse the program: " +
                                  problem + "\n" + sc::disassemble(p.filter));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text = R"({"ociVersion":"1.0.0","linux":{"seccomp": )";
  text.append(reinterpret_cast<const char*>(data), size);
  text += "}}";
  auto spec = comet::oci::parse_spec(text);
  if (!spec.ok() || !spec->linux_ || !spec->linux_->seccomp) return 0;
  const comet::oci::Seccomp& block = *spec->linux_->seccomp;

  static const std::vector<Probe> kProbes = probes();

  auto def = sc::compile(block);
  if (def.ok()) {
    check_program(*def, "default");
    run(*def, kProbes);
  }

  for (bool stub : {true, false}) {
    sc::CompileOptions lin{sc::Optimize::kLinear, stub};
    sc::CompileOptions tree{sc::Optimize::kBinaryTree, stub};
    auto a = sc::compile(block, lin);
    auto b = sc::compile(block, tree);
    if (a.ok()) check_program(*a, stub ? "linear+stub" : "linear");
    if (b.ok()) check_program(*b, stub ? "tree+stub" : "tree");
    if (a.ok() && b.ok()) {
      const auto ra = run(*a, kProbes), rb = run(*b, kProbes);
      for (std::size_t i = 0; i < ra.size(); ++i) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "probe nr=%d arch=%#x: linear %#x, tree %#x", kProbes[i].nr,
                      kProbes[i].arch, ra[i], rb[i]);
        FUZZ_CHECK(ra[i] == rb[i], std::string("layouts disagree: ") + buf);
      }
    }
  }
  return 0;
}
