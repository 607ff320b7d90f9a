// The classic-BPF evaluator on hand-written programs.
#include <linux/audit.h>

#include <cstddef>

#include <gtest/gtest.h>

#include "comet/seccomp/bpf_eval.hpp"

namespace cs = comet::seccomp;

namespace {

sock_filter S(uint16_t code, uint32_t k) {
  return sock_filter{code, 0, 0, k};
}
sock_filter J(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return sock_filter{code, jt, jf, k};
}

constexpr uint32_t kNr = offsetof(seccomp_data, nr);
constexpr uint32_t kArch = offsetof(seccomp_data, arch);
constexpr uint32_t kArg0Lo = offsetof(seccomp_data, args[0]);

}  // namespace

TEST(SeccompBpfEval, LoadsNrAndArch) {
  const std::vector<sock_filter> p = {
      S(BPF_LD | BPF_W | BPF_ABS, kArch),
      J(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      S(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      S(BPF_LD | BPF_W | BPF_ABS, kNr),
      J(BPF_JMP | BPF_JEQ | BPF_K, 39, 0, 1),
      S(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 5),
      S(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  EXPECT_EQ(cs::check_filter(p), "");
  EXPECT_EQ(cs::evaluate(p, cs::make_seccomp_data(39, {}, AUDIT_ARCH_X86_64)),
            SECCOMP_RET_ERRNO | 5);
  EXPECT_EQ(cs::evaluate(p, cs::make_seccomp_data(40, {}, AUDIT_ARCH_X86_64)), SECCOMP_RET_ALLOW);
  EXPECT_EQ(cs::evaluate(p, cs::make_seccomp_data(39, {}, AUDIT_ARCH_AARCH64)),
            SECCOMP_RET_KILL_PROCESS);
}

TEST(SeccompBpfEval, ComparisonsAndAluAnd) {
  // odd arg0 -> TRAP; else ALLOW iff (arg0 & 0xf0) == 0x20, else ERRNO(1).
  const std::vector<sock_filter> p = {
      S(BPF_LD | BPF_W | BPF_ABS, kArg0Lo),
      J(BPF_JMP | BPF_JSET | BPF_K, 1, 3, 0),  // odd -> TRAP
      S(BPF_ALU | BPF_AND | BPF_K, 0xf0),
      J(BPF_JMP | BPF_JGE | BPF_K, 0x20, 0, 3),  // < 0x20 -> ERRNO
      J(BPF_JMP | BPF_JGT | BPF_K, 0x20, 2, 1),  // > 0x20 -> ERRNO, == -> ALLOW
      S(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
      S(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      S(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
  };
  ASSERT_EQ(cs::check_filter(p), "");
  auto run = [&](uint64_t a0) { return cs::evaluate(p, cs::make_seccomp_data(0, {a0})); };
  EXPECT_EQ(run(0x21), SECCOMP_RET_TRAP);
  EXPECT_EQ(run(0x20), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(0x2e), SECCOMP_RET_ALLOW);
  EXPECT_EQ(run(0x10), SECCOMP_RET_ERRNO | 1);
  EXPECT_EQ(run(0x30), SECCOMP_RET_ERRNO | 1);
}

TEST(SeccompBpfEval, ScratchMemoryTaxTxaAndRetA) {
  const std::vector<sock_filter> p = {
      S(BPF_LD | BPF_IMM, SECCOMP_RET_ERRNO | 7),
      S(BPF_ST, 3),
      S(BPF_LD | BPF_IMM, 0),
      S(BPF_LDX | BPF_MEM, 3),
      S(BPF_MISC | BPF_TXA, 0),
      S(BPF_MISC | BPF_TAX, 0),
      S(BPF_LD | BPF_IMM, 1),
      S(BPF_STX, 15),
      S(BPF_LD | BPF_MEM, 15),
      S(BPF_RET | BPF_A, 0),
  };
  ASSERT_EQ(cs::check_filter(p), "");
  EXPECT_EQ(cs::evaluate(p, cs::make_seccomp_data(0)), SECCOMP_RET_ERRNO | 7);
}

TEST(SeccompBpfEval, JumpsAlwaysAndWithX) {
  const std::vector<sock_filter> p = {
      S(BPF_LDX | BPF_IMM, 5),
      S(BPF_LD | BPF_W | BPF_ABS, kNr),
      J(BPF_JMP | BPF_JEQ | BPF_X, 0, 0, 1),
      S(BPF_JMP | BPF_JA, 1),
      S(BPF_RET | BPF_K, SECCOMP_RET_KILL_THREAD),
      S(BPF_RET | BPF_K, SECCOMP_RET_LOG),
  };
  ASSERT_EQ(cs::check_filter(p), "");
  EXPECT_EQ(cs::evaluate(p, cs::make_seccomp_data(5)), SECCOMP_RET_LOG);
  EXPECT_EQ(cs::evaluate(p, cs::make_seccomp_data(6)), SECCOMP_RET_KILL_THREAD);
}

TEST(SeccompBpfEval, AluArithmetic) {
  const std::vector<sock_filter> p = {
      S(BPF_LD | BPF_IMM, 6),
      S(BPF_ALU | BPF_ADD | BPF_K, 4),     // 10
      S(BPF_ALU | BPF_MUL | BPF_K, 3),     // 30
      S(BPF_ALU | BPF_SUB | BPF_K, 2),     // 28
      S(BPF_ALU | BPF_DIV | BPF_K, 4),     // 7
      S(BPF_ALU | BPF_LSH | BPF_K, 4),     // 0x70
      S(BPF_ALU | BPF_OR | BPF_K, 1),      // 0x71
      S(BPF_ALU | BPF_XOR | BPF_K, 0x10),  // 0x61
      S(BPF_ALU | BPF_RSH | BPF_K, 1),     // 0x30
      S(BPF_ALU | BPF_OR | BPF_K, SECCOMP_RET_ERRNO),
      S(BPF_RET | BPF_A, 0),
  };
  ASSERT_EQ(cs::check_filter(p), "");
  EXPECT_EQ(cs::evaluate(p, cs::make_seccomp_data(0)), SECCOMP_RET_ERRNO | 0x30);
}

TEST(SeccompBpfEval, DivisionByZeroXAbortsWithZero) {
  const std::vector<sock_filter> p = {
      S(BPF_LDX | BPF_IMM, 0),
      S(BPF_LD | BPF_IMM, 9),
      S(BPF_ALU | BPF_DIV | BPF_X, 0),
      S(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  ASSERT_EQ(cs::check_filter(p), "");
  EXPECT_EQ(cs::evaluate(p, cs::make_seccomp_data(0)), SECCOMP_RET_KILL_THREAD);
}

TEST(SeccompBpfEval, MalformedProgramsKillProcess) {
  const seccomp_data d = cs::make_seccomp_data(0);
  EXPECT_EQ(cs::evaluate({}, d), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(cs::check_filter({}), "empty program");
  // Falls off the end.
  const std::vector<sock_filter> off = {S(BPF_LD | BPF_W | BPF_ABS, kNr)};
  EXPECT_EQ(cs::evaluate(off, d), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(cs::check_filter(off), "last instruction is not a return");
  // Jump past the end.
  const std::vector<sock_filter> ja = {S(BPF_JMP | BPF_JA, 5), S(BPF_RET | BPF_K, 0)};
  EXPECT_EQ(cs::evaluate(ja, d), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(cs::check_filter(ja), "insn 0: jump out of the program");
  const std::vector<sock_filter> jc = {J(BPF_JMP | BPF_JEQ | BPF_K, 0, 3, 0),
                                       S(BPF_RET | BPF_K, 0)};
  EXPECT_EQ(cs::check_filter(jc), "insn 0: conditional jump out of the program");
  // Misaligned / out of bounds loads.
  const std::vector<sock_filter> mis = {S(BPF_LD | BPF_W | BPF_ABS, 2), S(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(cs::evaluate(mis, d), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(cs::check_filter(mis), "insn 0: misaligned or out-of-bounds seccomp_data load");
  const std::vector<sock_filter> oob = {S(BPF_LD | BPF_W | BPF_ABS, 64), S(BPF_RET | BPF_A, 0)};
  EXPECT_NE(cs::check_filter(oob), "");
  // Opcodes seccomp refuses (byte loads, packet-relative loads).
  const std::vector<sock_filter> byte = {S(BPF_LD | BPF_B | BPF_ABS, 0), S(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(cs::evaluate(byte, d), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(cs::check_filter(byte), "insn 0: opcode not allowed in seccomp filters");
  // Scratch out of range.
  const std::vector<sock_filter> mem = {S(BPF_ST, 16), S(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(cs::check_filter(mem), "insn 0: scratch slot out of range");
  const std::vector<sock_filter> div = {S(BPF_ALU | BPF_DIV | BPF_K, 0), S(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(cs::check_filter(div), "insn 0: division by constant zero");
}

TEST(SeccompBpfEval, LoadLenIsSeccompDataSize) {
  const std::vector<sock_filter> p = {S(BPF_LD | BPF_W | BPF_LEN, 0), S(BPF_RET | BPF_A, 0)};
  ASSERT_EQ(cs::check_filter(p), "");
  EXPECT_EQ(cs::evaluate(p, cs::make_seccomp_data(0)), sizeof(seccomp_data));
}

TEST(SeccompBpfEval, ArgumentHalvesInHostOrder) {
  const uint64_t v = 0x1122334455667788ULL;
  const seccomp_data d = cs::make_seccomp_data(0, {0, v});
  const uint32_t lo = offsetof(seccomp_data, args[1]);
  const std::vector<sock_filter> first = {S(BPF_LD | BPF_W | BPF_ABS, lo), S(BPF_RET | BPF_A, 0)};
  const std::vector<sock_filter> second = {S(BPF_LD | BPF_W | BPF_ABS, lo + 4),
                                           S(BPF_RET | BPF_A, 0)};
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  EXPECT_EQ(cs::evaluate(first, d), 0x55667788U);
  EXPECT_EQ(cs::evaluate(second, d), 0x11223344U);
#else
  EXPECT_EQ(cs::evaluate(first, d), 0x11223344U);
  EXPECT_EQ(cs::evaluate(second, d), 0x55667788U);
#endif
}

TEST(SeccompBpfEval, Disassemble) {
  const std::vector<sock_filter> p = {
      S(BPF_LD | BPF_W | BPF_ABS, kNr),
      J(BPF_JMP | BPF_JEQ | BPF_K, 0x3b, 0, 1),
      S(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      S(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  };
  EXPECT_EQ(cs::disassemble(p),
            "0000: ld [0]\n"
            "0001: jeq #k 0x3b jt 0 jf 1\n"
            "0002: ret #0x7fff0000\n"
            "0003: ret #0x80000000\n");
}

TEST(SeccompBpfEval, NativeArchAndData) {
#if defined(__x86_64__)
  EXPECT_EQ(cs::native_audit_arch(), AUDIT_ARCH_X86_64);
#endif
  const seccomp_data d = cs::make_seccomp_data(42, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(d.nr, 42);
  EXPECT_EQ(d.arch, cs::native_audit_arch());
  EXPECT_EQ(d.args[5], 6U);
}
