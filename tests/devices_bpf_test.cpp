// devices_bpf: the generated cgroup2 device program, run through the pure
// evaluator (no root), then loaded, attached and enforced by the kernel
// (root only: skipped otherwise).
#include "comet/host/devices_bpf.hpp"
#include "support/device_filter_eval.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace cr = comet::runtime;
namespace oci = comet::oci;
using Rules = std::vector<oci::DeviceCgroup>;

namespace {

oci::DeviceCgroup rule(bool allow, std::string type, std::optional<int64_t> major,
                       std::optional<int64_t> minor, std::string access) {
  oci::DeviceCgroup d;
  d.allow = allow;
  d.type = std::move(type);
  d.major = major;
  d.minor = minor;
  d.access = std::move(access);
  return d;
}
constexpr std::nullopt_t kAny = std::nullopt;

// runc's default spec: deny all, then its default allowed devices.
Rules runc_default() {
  return {rule(false, "", kAny, kAny, "rwm"), rule(true, "c", kAny, kAny, "m"),
          rule(true, "b", kAny, kAny, "m"),   rule(true, "c", 1, 3, "rwm"),
          rule(true, "c", 1, 8, "rwm"),       rule(true, "c", 1, 7, "rwm"),
          rule(true, "c", 5, 0, "rwm"),       rule(true, "c", 1, 5, "rwm"),
          rule(true, "c", 1, 9, "rwm"),       rule(true, "c", 5, 1, "rwm"),
          rule(true, "c", 136, kAny, "rwm"),  rule(true, "c", 5, 2, "rwm"),
          rule(true, "c", 10, 200, "rwm")};
}

uint32_t acc_bits(const std::string& a) {
  uint32_t b = 0;
  for (char c : a)
    b |= c == 'r' ? BPF_DEVCG_ACC_READ : c == 'w' ? BPF_DEVCG_ACC_WRITE : BPF_DEVCG_ACC_MKNOD;
  return b;
}

// 1 allowed, 0 denied, -1 evaluator error.
int eval(const std::vector<bpf_insn>& p, char type, uint32_t major, uint32_t minor,
         const std::string& access) {
  uint32_t t = type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK;
  return comet::test::evaluate_device_filter(p, (acc_bits(access) << 16) | t, major, minor);
}
int eval(const Rules& r, char type, uint32_t major, uint32_t minor, const std::string& access) {
  return eval(cr::device_filter_program(r), type, major, minor, access);
}

// Structural checks the verifier also makes: jumps in bounds, ends in exit.
void expect_well_formed(const std::vector<bpf_insn>& p) {
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p.back().code, BPF_JMP | BPF_EXIT);
  for (size_t i = 0; i < p.size(); i++) {
    if (BPF_CLASS(p[i].code) != BPF_JMP || BPF_OP(p[i].code) == BPF_EXIT) continue;
    long target = static_cast<long>(i) + 1 + p[i].off;
    EXPECT_GT(p[i].off, 0) << "insn " << i;
    EXPECT_LT(target, static_cast<long>(p.size())) << "insn " << i;
  }
}

// Reference model: last matching rule wins, default deny.
int model(const Rules& rules, char type, uint32_t major, uint32_t minor, const std::string& a) {
  const uint32_t req = acc_bits(a);
  for (auto it = rules.rbegin(); it != rules.rend(); ++it) {
    const auto& r = *it;
    if (r.type == "c" || r.type == "b") {
      if (r.type[0] != type) continue;
    } else if (!r.type.empty() && r.type != "a" && r.allow) {
      continue;
    }
    if (r.major && *r.major >= 0 && *r.major != major) continue;
    if (r.minor && *r.minor >= 0 && *r.minor != minor) continue;
    uint32_t ra = r.access.empty() ? 7 : acc_bits(r.access);
    if (r.allow ? (req & ra) != req : (req & ra) == 0) continue;
    return r.allow ? 1 : 0;
  }
  return 0;
}

TEST(DeviceFilter, RuncDefaultSpec) {
  const auto p = cr::device_filter_program(runc_default());
  expect_well_formed(p);
  EXPECT_EQ(eval(p, 'c', 1, 3, "rw"), 1);  // /dev/null
  EXPECT_EQ(eval(p, 'c', 1, 3, "rwm"), 1);
  EXPECT_EQ(eval(p, 'c', 1, 9, "r"), 1);     // /dev/urandom
  EXPECT_EQ(eval(p, 'c', 5, 2, "rw"), 1);    // /dev/ptmx
  EXPECT_EQ(eval(p, 'c', 136, 0, "rw"), 1);  // /dev/pts/0
  EXPECT_EQ(eval(p, 'c', 136, 4095, "rw"), 1);
  EXPECT_EQ(eval(p, 'c', 10, 200, "rw"), 1);  // /dev/net/tun
  EXPECT_EQ(eval(p, 'b', 8, 0, "r"), 0);      // /dev/sda
  EXPECT_EQ(eval(p, 'b', 8, 0, "w"), 0);
  EXPECT_EQ(eval(p, 'c', 1, 1, "r"), 0);  // /dev/mem
  EXPECT_EQ(eval(p, 'c', 1, 1, "rw"), 0);
  EXPECT_EQ(eval(p, 'c', 10, 201, "r"), 0);
  EXPECT_EQ(eval(p, 'c', 137, 0, "r"), 0);
  // mknod of anything is allowed, but not mknod plus access.
  EXPECT_EQ(eval(p, 'c', 1, 1, "m"), 1);
  EXPECT_EQ(eval(p, 'b', 8, 0, "m"), 1);
  EXPECT_EQ(eval(p, 'c', 4242, 77, "m"), 1);
  EXPECT_EQ(eval(p, 'b', 8, 0, "rm"), 0);
}

TEST(DeviceFilter, EmptyRulesDenyAll) {
  const auto p = cr::device_filter_program({});
  expect_well_formed(p);
  EXPECT_EQ(eval(p, 'c', 1, 3, "r"), 0);
  EXPECT_EQ(eval(p, 'b', 8, 0, "m"), 0);
}

TEST(DeviceFilter, AllowAll) {
  for (const char* type : {"a", ""}) {
    const auto p = cr::device_filter_program({rule(true, type, kAny, kAny, "rwm")});
    expect_well_formed(p);
    EXPECT_EQ(p.size(), 8u) << "6 loads + mov r0, 1 + exit; no unreachable default";
    EXPECT_EQ(eval(p, 'c', 1, 1, "rwm"), 1);
    EXPECT_EQ(eval(p, 'b', 8, 0, "rw"), 1);
    EXPECT_EQ(eval(p, 'c', 0xfff, 0xfffff, "m"), 1);
  }
}

TEST(DeviceFilter, RulesBeforeAMatchAllRuleAreNotEmitted) {
  const auto p =
      cr::device_filter_program({rule(false, "c", 1, 3, "rwm"), rule(true, "b", 8, kAny, "r"),
                                 rule(true, "a", kAny, kAny, "")});
  expect_well_formed(p);
  EXPECT_EQ(p.size(), 8u);
  EXPECT_EQ(eval(p, 'c', 1, 3, "rw"), 1);
}

TEST(DeviceFilter, LastMatchWins) {
  const auto allow = rule(true, "c", 1, 3, "rwm"), deny = rule(false, "c", 1, 3, "rwm");
  EXPECT_EQ(eval({allow, deny}, 'c', 1, 3, "r"), 0);
  EXPECT_EQ(eval({deny, allow}, 'c', 1, 3, "r"), 1);

  Rules r = {rule(false, "a", kAny, kAny, "rwm"), rule(true, "c", kAny, kAny, "rwm"),
             rule(false, "c", 1, 1, "rwm")};
  EXPECT_EQ(eval(r, 'c', 1, 1, "r"), 0);
  EXPECT_EQ(eval(r, 'c', 1, 2, "r"), 1);
  EXPECT_EQ(eval(r, 'b', 1, 2, "r"), 0);
  // A later allow-all re-opens everything.
  r.push_back(rule(true, "a", kAny, kAny, "rwm"));
  EXPECT_EQ(eval(r, 'c', 1, 1, "r"), 1);
  // A later deny-all closes everything, whatever came before.
  r.push_back(rule(false, "", kAny, kAny, "rwm"));
  EXPECT_EQ(eval(r, 'c', 1, 3, "r"), 0);
  EXPECT_EQ(eval(r, 'c', 1, 3, "m"), 0);
}

TEST(DeviceFilter, WildcardMajorAndMinor) {
  const Rules r = {rule(true, "c", kAny, 3, "r"), rule(true, "b", 8, kAny, "rw")};
  EXPECT_EQ(eval(r, 'c', 7, 3, "r"), 1);
  EXPECT_EQ(eval(r, 'c', 0, 3, "r"), 1);
  EXPECT_EQ(eval(r, 'c', 7, 4, "r"), 0);
  EXPECT_EQ(eval(r, 'b', 7, 3, "r"), 0);
  EXPECT_EQ(eval(r, 'b', 8, 17, "w"), 1);
  EXPECT_EQ(eval(r, 'b', 8, 0, "rw"), 1);
  EXPECT_EQ(eval(r, 'c', 8, 17, "w"), 0);
  // runc's -1 is also a wildcard.
  EXPECT_EQ(eval({rule(true, "c", -1, -1, "r")}, 'c', 99, 98, "r"), 1);
  // Type "a" with a major: both kinds.
  const Rules a = {rule(true, "a", 1, kAny, "rwm")};
  EXPECT_EQ(eval(a, 'c', 1, 5, "rw"), 1);
  EXPECT_EQ(eval(a, 'b', 1, 5, "rw"), 1);
  EXPECT_EQ(eval(a, 'c', 2, 0, "r"), 0);
}

TEST(DeviceFilter, AllowNeedsEveryRequestedBit) {
  const Rules r = {rule(true, "c", 1, 3, "r")};
  EXPECT_EQ(eval(r, 'c', 1, 3, "r"), 1);
  EXPECT_EQ(eval(r, 'c', 1, 3, "rw"), 0);
  EXPECT_EQ(eval(r, 'c', 1, 3, "w"), 0);
  EXPECT_EQ(eval(r, 'c', 1, 3, "m"), 0);
  const Rules rw = {rule(true, "c", 1, 3, "wr")};
  EXPECT_EQ(eval(rw, 'c', 1, 3, "rw"), 1);
  EXPECT_EQ(eval(rw, 'c', 1, 3, "rwm"), 0);
}

TEST(DeviceFilter, DenyRefusesAnyDeniedBit) {
  Rules r = {rule(true, "a", kAny, kAny, "rwm"), rule(false, "c", 1, 3, "w")};
  EXPECT_EQ(eval(r, 'c', 1, 3, "r"), 1);
  EXPECT_EQ(eval(r, 'c', 1, 3, "m"), 1);
  EXPECT_EQ(eval(r, 'c', 1, 3, "w"), 0);
  EXPECT_EQ(eval(r, 'c', 1, 3, "rw"), 0);
  r = {rule(true, "c", 1, 3, "rwm"), rule(false, "c", 1, 3, "w")};
  EXPECT_EQ(eval(r, 'c', 1, 3, "rw"), 0);
  EXPECT_EQ(eval(r, 'c', 1, 3, "r"), 1);
}

TEST(DeviceFilter, OddRulesFailClosed) {
  // Empty access means rwm.
  EXPECT_EQ(eval({rule(true, "c", 1, 3, "")}, 'c', 1, 3, "rwm"), 1);
  EXPECT_EQ(eval({rule(true, "a", kAny, kAny, "rwm"), rule(false, "c", 1, 3, "")}, 'c', 1, 3, "m"),
            0);
  // Unknown type: an allow grants nothing, a deny denies all types.
  EXPECT_EQ(eval({rule(true, "x", kAny, kAny, "rwm")}, 'c', 1, 3, "r"), 0);
  const Rules deny_x = {rule(true, "a", kAny, kAny, "rwm"), rule(false, "p", 1, 3, "rwm")};
  EXPECT_EQ(eval(deny_x, 'c', 1, 3, "r"), 0);
  EXPECT_EQ(eval(deny_x, 'b', 1, 3, "r"), 0);
  EXPECT_EQ(eval(deny_x, 'c', 1, 4, "r"), 1);
  // A major no device can have: the rule is dropped.
  const Rules big = {rule(true, "a", kAny, kAny, "rwm"), rule(false, "c", 1LL << 32, kAny, "rwm")};
  EXPECT_EQ(cr::device_filter_program(big).size(), 8u);
  EXPECT_EQ(eval({rule(true, "c", 1LL << 31, kAny, "rwm")}, 'c', 0x80000000u, 0, "r"), 0);
  // Access letters other than rwm are ignored; none left: matches nothing.
  EXPECT_EQ(eval({rule(true, "c", 1, 3, "rxq")}, 'c', 1, 3, "r"), 1);
  EXPECT_EQ(eval({rule(true, "a", kAny, kAny, "rwm"), rule(false, "c", 1, 3, "q")}, 'c', 1, 3, "r"),
            1);
}

TEST(DeviceFilter, MatchesReferenceModelOnRandomRules) {
  std::mt19937 rng(5736);
  const char* types[] = {"a", "", "c", "b", "c", "b"};
  const char* accs[] = {"r", "w", "m", "rw", "rm", "wm", "rwm", ""};
  const char* reqs[] = {"r", "w", "m", "rw", "rm", "wm", "rwm"};
  auto num = [&](int n) -> std::optional<int64_t> {
    int x = static_cast<int>(rng() % (n + 1));
    return x == n ? std::nullopt : std::optional<int64_t>(x);
  };
  for (int round = 0; round < 300; round++) {
    Rules rules;
    const int count = static_cast<int>(rng() % 8);
    for (int i = 0; i < count; i++)
      rules.push_back(rule(rng() % 2, types[rng() % 6], num(3), num(3), accs[rng() % 8]));
    const auto p = cr::device_filter_program(rules);
    expect_well_formed(p);
    for (char t : {'c', 'b'})
      for (uint32_t ma = 0; ma < 4; ma++)
        for (uint32_t mi = 0; mi < 4; mi++)
          for (const char* q : reqs)
            ASSERT_EQ(eval(p, t, ma, mi, q), model(rules, t, ma, mi, q))
                << "round " << round << " " << t << " " << ma << ":" << mi << " " << q;
  }
}

TEST(DeviceFilter, EvaluatorRejectsProgramsOutsideItsSubset) {
  auto exit_i = bpf_insn{BPF_JMP | BPF_EXIT, 0, 0, 0, 0};
  auto mov0 = [](int32_t v) { return bpf_insn{BPF_ALU | BPF_MOV | BPF_K, 0, 0, 0, v}; };
  EXPECT_EQ(comet::test::evaluate_device_filter({}, 0, 0, 0), -1);
  EXPECT_EQ(comet::test::evaluate_device_filter({mov0(1)}, 0, 0, 0), -1);  // runs off the end
  EXPECT_EQ(comet::test::evaluate_device_filter({exit_i}, 0, 0, 0), -1);   // r0 never set
  EXPECT_EQ(comet::test::evaluate_device_filter({mov0(1), exit_i}, 0, 0, 0), 1);
  // ldx past the 12-byte ctx, or from a non-ctx register.
  EXPECT_EQ(comet::test::evaluate_device_filter(
                {bpf_insn{BPF_LDX | BPF_MEM | BPF_W, 0, 1, 12, 0}, exit_i}, 0, 0, 0),
            -1);
  EXPECT_EQ(comet::test::evaluate_device_filter(
                {bpf_insn{BPF_LDX | BPF_MEM | BPF_W, 0, 2, 0, 0}, exit_i}, 0, 0, 0),
            -1);
  // Unsupported opcode (ALU mul), jump out of range.
  EXPECT_EQ(comet::test::evaluate_device_filter(
                {mov0(1), bpf_insn{BPF_ALU | BPF_MUL | BPF_K, 0, 0, 0, 2}, exit_i}, 0, 0, 0),
            -1);
  EXPECT_EQ(comet::test::evaluate_device_filter(
                {mov0(1), bpf_insn{BPF_JMP | BPF_JA, 0, 0, 5, 0}, exit_i}, 0, 0, 0),
            -1);
  // An infinite loop is cut off.
  EXPECT_EQ(comet::test::evaluate_device_filter({mov0(1), bpf_insn{BPF_JMP | BPF_JA, 0, 0, -1, 0}},
                                                0, 0, 0),
            -1);
  // JMP32 compares the low halves; a narrow load reads the access half.
  std::vector<bpf_insn> p = {
      bpf_insn{BPF_LDX | BPF_MEM | BPF_H, 2, 1, 2, 0},  // r2 = access
      mov0(0),
      bpf_insn{BPF_JMP32 | BPF_JNE | BPF_K, 2, 0, 1, BPF_DEVCG_ACC_READ},
      mov0(1),
      exit_i,
  };
  EXPECT_EQ(
      comet::test::evaluate_device_filter(p, BPF_DEVCG_ACC_READ << 16 | BPF_DEVCG_DEV_CHAR, 1, 3),
      1);
  EXPECT_EQ(
      comet::test::evaluate_device_filter(p, BPF_DEVCG_ACC_WRITE << 16 | BPF_DEVCG_DEV_CHAR, 1, 3),
      0);
}

// ---- kernel (root) ----

bool need_root() {
  return geteuid() == 0;
}

TEST(DeviceFilterKernel, VerifierAcceptsGeneratedPrograms) {
  if (!need_root()) GTEST_SKIP() << "needs root (BPF_PROG_LOAD of cgroup_device)";
  std::vector<Rules> sets = {runc_default(), {}, {rule(true, "a", kAny, kAny, "rwm")}};
  std::mt19937 rng(42);
  for (int i = 0; i < 20; i++) {
    Rules r;
    for (int j = 0; j < 10; j++)
      r.push_back(rule(rng() % 2, rng() % 2 ? "c" : "b",
                       rng() % 3 ? std::optional<int64_t>(rng() % 300) : kAny, kAny,
                       rng() % 2 ? "rw" : "m"));
    sets.push_back(r);
  }
  for (const auto& r : sets) {
    auto fd = cr::load_device_filter(cr::device_filter_program(r));
    ASSERT_TRUE(fd.ok()) << fd.error().what();
    EXPECT_TRUE(fd->valid());
  }
}

TEST(DeviceFilterKernel, LoadFailureCarriesTheVerifierLog) {
  if (!need_root()) GTEST_SKIP() << "needs root";
  auto fd = cr::load_device_filter({bpf_insn{BPF_JMP | BPF_EXIT, 0, 0, 0, 0}});
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().err(), EACCES);
  EXPECT_NE(fd.error().what().find("verifier log"), std::string::npos) << fd.error().what();
  EXPECT_NE(fd.error().what().find("R0"), std::string::npos) << fd.error().what();
  EXPECT_FALSE(cr::load_device_filter({}).ok());
}

// This host is hybrid: cgroup2 (no controllers) at /sys/fs/cgroup/unified.
const std::string kCgroup2 = "/sys/fs/cgroup/unified";

// A cgroup2 directory and a temp dir of device nodes, removed whatever happens.
struct Fixture {
  std::string cg, tmp;
  void make(const std::string& tag) {
    const std::string path = kCgroup2 + "/comet-devtest-" + tag + std::to_string(::getpid());
    ASSERT_EQ(::mkdir(path.c_str(), 0755), 0) << path << ": " << std::strerror(errno);
    cg = path;
    char tmpl[] = "/tmp/comet-devtest-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    tmp = tmpl;
  }
  ~Fixture() {
    if (!tmp.empty()) {
      for (const char* n : {"mem", "null", "full", "made"}) ::unlink((tmp + "/" + n).c_str());
      ::rmdir(tmp.c_str());
    }
    if (cg.empty()) return;
    for (int i = 0; i < 100 && ::rmdir(cg.c_str()) < 0 && errno == EBUSY; i++) ::usleep(10000);
  }
};

// In a child moved into cgroup cg: open each path read-write, then mknod
// "made" (c 1:7) in tmp. Returns the errnos (0 = success), last = mknod.
std::vector<int> probe_in_cgroup(const std::string& cg, const std::vector<std::string>& paths,
                                 const std::string& tmp) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) < 0) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<int> res;
    int procs = ::open((cg + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    std::string me = std::to_string(::getpid());
    if (procs < 0 || ::write(procs, me.data(), me.size()) < 0) _exit(3);
    for (const auto& p : paths) {
      int fd = ::open(p.c_str(), O_RDWR | O_CLOEXEC);
      res.push_back(fd >= 0 ? 0 : errno);
      if (fd >= 0) ::close(fd);
    }
    std::string made = tmp + "/made";
    ::unlink(made.c_str());
    res.push_back(::mknod(made.c_str(), S_IFCHR | 0600, makedev(1, 7)) == 0 ? 0 : errno);
    ssize_t n = ::write(fds[1], res.data(), res.size() * sizeof(int));
    _exit(n == static_cast<ssize_t>(res.size() * sizeof(int)) ? 0 : 4);
  }
  ::close(fds[1]);
  comet::ChildGuard child(pid);
  std::vector<int> res(paths.size() + 1, -1);
  ssize_t n = ::read(fds[0], res.data(), res.size() * sizeof(int));
  ::close(fds[0]);
  int status = child.wait();
  child.release();
  if (n != static_cast<ssize_t>(res.size() * sizeof(int)) || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    ADD_FAILURE() << "probe child failed, status " << status;
    return {};
  }
  return res;
}

TEST(DeviceFilterKernel, EnforcedOnARealCgroup) {
  if (!need_root()) GTEST_SKIP() << "needs root";
  if (::access((kCgroup2 + "/cgroup.procs").c_str(), F_OK) < 0) GTEST_SKIP() << "no " << kCgroup2;
  Fixture fx;
  ASSERT_NO_FATAL_FAILURE(fx.make("a"));
  const std::string cg = fx.cg;
  const std::string mem = fx.tmp + "/mem", null = fx.tmp + "/null", full = fx.tmp + "/full";
  ASSERT_EQ(::mknod(mem.c_str(), S_IFCHR | 0600, makedev(1, 1)), 0) << std::strerror(errno);
  ASSERT_EQ(::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  ASSERT_EQ(::mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);
  const std::vector<std::string> paths = {mem, null, full, "/dev/null"};

  // Without a filter everything but (maybe) the 1:1 node opens.
  auto before = probe_in_cgroup(cg, paths, fx.tmp);
  ASSERT_EQ(before.size(), 5u);
  EXPECT_EQ(before[1], 0);
  EXPECT_EQ(before[2], 0);
  EXPECT_EQ(before[4], 0);
  RecordProperty("mem_open_without_filter", before[0]);

  comet::UniqueFd dir(::open(cg.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir.valid());
  {
    auto prog = cr::load_device_filter(cr::device_filter_program(runc_default()));
    ASSERT_TRUE(prog.ok()) << prog.error().what();
    auto st1 = cr::attach_device_filter(dir.get(), prog->get());
    ASSERT_TRUE(st1.ok()) << st1.error().what();
    // Attaching the same program again is a no-op.
    auto st2 = cr::attach_device_filter(dir.get(), prog->get());
    ASSERT_TRUE(st2.ok()) << st2.error().what();
  }  // the program fd is closed: the attachment keeps it alive
  auto ids = cr::attached_device_filters(dir.get());
  ASSERT_TRUE(ids.ok()) << ids.error().what();
  ASSERT_EQ(ids->size(), 1u);
  const uint32_t first_id = (*ids)[0];

  auto r = probe_in_cgroup(cg, paths, fx.tmp);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0], EPERM) << "c 1:1 must be refused by the filter";
  EXPECT_EQ(r[1], 0) << "c 1:3";
  EXPECT_EQ(r[2], 0) << "c 1:7";
  EXPECT_EQ(r[3], 0) << "/dev/null";
  EXPECT_EQ(r[4], 0) << "mknod c 1:7 (c *:* m)";

  // update: only c 1:3 left. Replaces (not adds to) the first program.
  auto prog2 = cr::load_device_filter(cr::device_filter_program(
      {rule(false, "a", kAny, kAny, "rwm"), rule(true, "c", 1, 3, "rwm")}));
  ASSERT_TRUE(prog2.ok()) << prog2.error().what();
  auto st3 = cr::attach_device_filter(dir.get(), prog2->get());
  ASSERT_TRUE(st3.ok()) << st3.error().what();
  ids = cr::attached_device_filters(dir.get());
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 1u);
  EXPECT_NE((*ids)[0], first_id);

  r = probe_in_cgroup(cg, paths, fx.tmp);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0], EPERM);
  EXPECT_EQ(r[1], 0);
  EXPECT_EQ(r[2], EPERM) << "c 1:7 no longer allowed";
  EXPECT_EQ(r[3], 0);
  EXPECT_EQ(r[4], EPERM) << "mknod no longer allowed";
}

// A filter someone else attached (another name) survives our replacing ours.
TEST(DeviceFilterKernel, ReplacesOnlyItsOwnPrograms) {
  if (!need_root()) GTEST_SKIP() << "needs root";
  if (::access((kCgroup2 + "/cgroup.procs").c_str(), F_OK) < 0) GTEST_SKIP() << "no " << kCgroup2;
  Fixture fx;
  ASSERT_NO_FATAL_FAILURE(fx.make("b"));
  const std::string cg = fx.cg;
  comet::UniqueFd dir(::open(cg.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir.valid());

  // The foreign program: allow everything, named "other".
  const auto insns = cr::device_filter_program({rule(true, "a", kAny, kAny, "rwm")});
  bpf_attr attr{};
  attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  attr.insns = reinterpret_cast<uintptr_t>(insns.data());
  attr.insn_cnt = static_cast<uint32_t>(insns.size());
  attr.license = reinterpret_cast<uintptr_t>("MIT");
  std::memcpy(attr.prog_name, "other", 6);
  comet::UniqueFd other(static_cast<int>(::syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof attr)));
  ASSERT_TRUE(other.valid()) << std::strerror(errno);
  bpf_attr at{};
  at.target_fd = static_cast<uint32_t>(dir.get());
  at.attach_bpf_fd = static_cast<uint32_t>(other.get());
  at.attach_type = BPF_CGROUP_DEVICE;
  at.attach_flags = BPF_F_ALLOW_MULTI;
  ASSERT_EQ(::syscall(SYS_bpf, BPF_PROG_ATTACH, &at, sizeof at), 0) << std::strerror(errno);
  auto ids = cr::attached_device_filters(dir.get());
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 1u);
  const uint32_t other_id = (*ids)[0];

  for (int round = 0; round < 3; round++) {
    auto prog = cr::load_device_filter(cr::device_filter_program(runc_default()));
    ASSERT_TRUE(prog.ok()) << prog.error().what();
    auto s = cr::attach_device_filter(dir.get(), prog->get());
    ASSERT_TRUE(s.ok()) << s.error().what();
    ids = cr::attached_device_filters(dir.get());
    ASSERT_TRUE(ids.ok());
    ASSERT_EQ(ids->size(), 2u) << "round " << round;
    EXPECT_TRUE((*ids)[0] == other_id || (*ids)[1] == other_id);
  }
  // Both apply: ours still denies c 1:1 though "other" allows all.
  const std::string mem = fx.tmp + "/mem";
  ASSERT_EQ(::mknod(mem.c_str(), S_IFCHR | 0600, makedev(1, 1)), 0) << std::strerror(errno);
  const auto r = probe_in_cgroup(cg, {mem, "/dev/null"}, fx.tmp);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], EPERM);
  EXPECT_EQ(r[1], 0);
  EXPECT_EQ(r[2], 0);
}

}  // namespace
