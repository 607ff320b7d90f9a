// Classic-BPF interpreter and validator for seccomp filters (tests only need
// it, but it is pure code with no side effects, so it lives in the library).
#include "comet/seccomp/bpf_eval.hpp"

#include <linux/audit.h>

#include <cstdio>
#include <cstring>

namespace comet::seccomp {
namespace {

constexpr uint32_t kDataSize = sizeof(seccomp_data);

// The opcodes seccomp accepts (kernel/seccomp.c seccomp_check_filter plus the
// BPF_LD|BPF_W|BPF_ABS / LEN forms it rewrites).
bool allowed_opcode(uint16_t code) {
  switch (code) {
    case BPF_LD | BPF_W | BPF_ABS:
    case BPF_LD | BPF_W | BPF_LEN:
    case BPF_LDX | BPF_W | BPF_LEN:
    case BPF_RET | BPF_K:
    case BPF_RET | BPF_A:
    case BPF_ALU | BPF_ADD | BPF_K:
    case BPF_ALU | BPF_ADD | BPF_X:
    case BPF_ALU | BPF_SUB | BPF_K:
    case BPF_ALU | BPF_SUB | BPF_X:
    case BPF_ALU | BPF_MUL | BPF_K:
    case BPF_ALU | BPF_MUL | BPF_X:
    case BPF_ALU | BPF_DIV | BPF_K:
    case BPF_ALU | BPF_DIV | BPF_X:
    case BPF_ALU | BPF_AND | BPF_K:
    case BPF_ALU | BPF_AND | BPF_X:
    case BPF_ALU | BPF_OR | BPF_K:
    case BPF_ALU | BPF_OR | BPF_X:
    case BPF_ALU | BPF_XOR | BPF_K:
    case BPF_ALU | BPF_XOR | BPF_X:
    case BPF_ALU | BPF_LSH | BPF_K:
    case BPF_ALU | BPF_LSH | BPF_X:
    case BPF_ALU | BPF_RSH | BPF_K:
    case BPF_ALU | BPF_RSH | BPF_X:
    case BPF_ALU | BPF_NEG:
    case BPF_LD | BPF_IMM:
    case BPF_LDX | BPF_IMM:
    case BPF_MISC | BPF_TAX:
    case BPF_MISC | BPF_TXA:
    case BPF_LD | BPF_MEM:
    case BPF_LDX | BPF_MEM:
    case BPF_ST:
    case BPF_STX:
    case BPF_JMP | BPF_JA:
    case BPF_JMP | BPF_JEQ | BPF_K:
    case BPF_JMP | BPF_JEQ | BPF_X:
    case BPF_JMP | BPF_JGE | BPF_K:
    case BPF_JMP | BPF_JGE | BPF_X:
    case BPF_JMP | BPF_JGT | BPF_K:
    case BPF_JMP | BPF_JGT | BPF_X:
    case BPF_JMP | BPF_JSET | BPF_K:
    case BPF_JMP | BPF_JSET | BPF_X:
      return true;
    default:
      return false;
  }
}

std::string at(std::size_t pc, const char* what) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "insn %zu: %s", pc, what);
  return buf;
}

uint32_t alu(uint16_t op, uint32_t a, uint32_t operand, bool* fault) {
  switch (op) {
    case BPF_ADD:
      return a + operand;
    case BPF_SUB:
      return a - operand;
    case BPF_MUL:
      return a * operand;
    case BPF_DIV:
      if (operand == 0) {
        *fault = true;
        return 0;
      }
      return a / operand;
    case BPF_AND:
      return a & operand;
    case BPF_OR:
      return a | operand;
    case BPF_XOR:
      return a ^ operand;
    case BPF_LSH:
      return operand < 32 ? a << operand : 0;
    case BPF_RSH:
      return operand < 32 ? a >> operand : 0;
    case BPF_NEG:
      return 0u - a;
    default:
      *fault = true;
      return 0;
  }
}

}  // namespace

std::string check_filter(const std::vector<sock_filter>& prog) {
  const std::size_t n = prog.size();
  if (n == 0) return "empty program";
  if (n > BPF_MAXINSNS) return "program longer than BPF_MAXINSNS";
  for (std::size_t pc = 0; pc < n; ++pc) {
    const sock_filter& f = prog[pc];
    if (!allowed_opcode(f.code)) return at(pc, "opcode not allowed in seccomp filters");
    switch (BPF_CLASS(f.code)) {
      case BPF_LD:
        if (BPF_MODE(f.code) == BPF_ABS && (f.k >= kDataSize || (f.k & 3) != 0))
          return at(pc, "misaligned or out-of-bounds seccomp_data load");
        if (BPF_MODE(f.code) == BPF_MEM && f.k >= BPF_MEMWORDS)
          return at(pc, "scratch slot out of range");
        break;
      case BPF_LDX:
      case BPF_ST:
      case BPF_STX:
        if ((BPF_CLASS(f.code) != BPF_LDX || BPF_MODE(f.code) == BPF_MEM) && f.k >= BPF_MEMWORDS)
          return at(pc, "scratch slot out of range");
        break;
      case BPF_ALU:
        if (BPF_SRC(f.code) == BPF_K && BPF_OP(f.code) == BPF_DIV && f.k == 0)
          return at(pc, "division by constant zero");
        if (BPF_SRC(f.code) == BPF_K && (BPF_OP(f.code) == BPF_LSH || BPF_OP(f.code) == BPF_RSH) &&
            f.k >= 32)
          return at(pc, "shift by 32 or more");
        break;
      case BPF_JMP:
        if (BPF_OP(f.code) == BPF_JA) {
          if (f.k >= n - pc - 1) return at(pc, "jump out of the program");
        } else if (pc + 1 + f.jt >= n || pc + 1 + f.jf >= n) {
          return at(pc, "conditional jump out of the program");
        }
        break;
      default:
        break;
    }
  }
  if (BPF_CLASS(prog[n - 1].code) != BPF_RET) return "last instruction is not a return";
  return "";
}

uint32_t evaluate(const std::vector<sock_filter>& prog, const seccomp_data& data) noexcept {
  constexpr uint32_t kMalformed = SECCOMP_RET_KILL_PROCESS;
  const std::size_t n = prog.size();
  if (n == 0 || n > BPF_MAXINSNS) return kMalformed;
  unsigned char bytes[kDataSize];
  std::memcpy(bytes, &data, kDataSize);
  uint32_t a = 0, x = 0;
  uint32_t mem[BPF_MEMWORDS] = {};
  std::size_t pc = 0;
  // Classic BPF only jumps forwards, so at most n steps run.
  while (pc < n) {
    const sock_filter& f = prog[pc++];
    if (!allowed_opcode(f.code)) return kMalformed;
    const uint32_t k = f.k;
    switch (BPF_CLASS(f.code)) {
      case BPF_LD:
        switch (BPF_MODE(f.code)) {
          case BPF_ABS:
            if (k >= kDataSize || (k & 3) != 0) return kMalformed;
            std::memcpy(&a, bytes + k, 4);  // host byte order, as the kernel loads it
            break;
          case BPF_LEN:
            a = kDataSize;
            break;
          case BPF_IMM:
            a = k;
            break;
          case BPF_MEM:
            if (k >= BPF_MEMWORDS) return kMalformed;
            a = mem[k];
            break;
          default:
            return kMalformed;
        }
        break;
      case BPF_LDX:
        switch (BPF_MODE(f.code)) {
          case BPF_LEN:
            x = kDataSize;
            break;
          case BPF_IMM:
            x = k;
            break;
          case BPF_MEM:
            if (k >= BPF_MEMWORDS) return kMalformed;
            x = mem[k];
            break;
          default:
            return kMalformed;
        }
        break;
      case BPF_ST:
      case BPF_STX:
        if (k >= BPF_MEMWORDS) return kMalformed;
        mem[k] = BPF_CLASS(f.code) == BPF_ST ? a : x;
        break;
      case BPF_ALU: {
        bool fault = false;
        a = alu(BPF_OP(f.code), a, BPF_SRC(f.code) == BPF_X ? x : k, &fault);
        if (fault) return 0;  // the kernel aborts the program with 0 (KILL_THREAD)
        break;
      }
      case BPF_JMP: {
        if (BPF_OP(f.code) == BPF_JA) {
          if (k >= n - pc) return kMalformed;
          pc += k;
          break;
        }
        const uint32_t v = BPF_SRC(f.code) == BPF_X ? x : k;
        bool cond = false;
        switch (BPF_OP(f.code)) {
          case BPF_JEQ:
            cond = a == v;
            break;
          case BPF_JGT:
            cond = a > v;
            break;
          case BPF_JGE:
            cond = a >= v;
            break;
          case BPF_JSET:
            cond = (a & v) != 0;
            break;
          default:
            return kMalformed;
        }
        pc += cond ? f.jt : f.jf;
        break;
      }
      case BPF_RET:
        return BPF_RVAL(f.code) == BPF_A ? a : k;
      case BPF_MISC:
        if (BPF_MISCOP(f.code) == BPF_TAX) {
          x = a;
        } else {
          a = x;
        }
        break;
      default:
        return kMalformed;
    }
  }
  return kMalformed;  // fell off the end
}

std::string disassemble(const std::vector<sock_filter>& prog) {
  std::string out;
  char buf[128];
  for (std::size_t pc = 0; pc < prog.size(); ++pc) {
    const sock_filter& f = prog[pc];
    const char* src = BPF_SRC(f.code) == BPF_X ? "x" : "#k";
    switch (BPF_CLASS(f.code)) {
      case BPF_LD:
      case BPF_LDX: {
        const char* reg = BPF_CLASS(f.code) == BPF_LD ? "ld" : "ldx";
        switch (BPF_MODE(f.code)) {
          case BPF_ABS:
            std::snprintf(buf, sizeof buf, "%s [%u]", reg, f.k);
            break;
          case BPF_LEN:
            std::snprintf(buf, sizeof buf, "%s len", reg);
            break;
          case BPF_IMM:
            std::snprintf(buf, sizeof buf, "%s #0x%x", reg, f.k);
            break;
          case BPF_MEM:
            std::snprintf(buf, sizeof buf, "%s M[%u]", reg, f.k);
            break;
          default:
            std::snprintf(buf, sizeof buf, "%s ?mode 0x%x", reg, f.code);
            break;
        }
        break;
      }
      case BPF_ST:
        std::snprintf(buf, sizeof buf, "st M[%u]", f.k);
        break;
      case BPF_STX:
        std::snprintf(buf, sizeof buf, "stx M[%u]", f.k);
        break;
      case BPF_ALU:
        std::snprintf(buf, sizeof buf, "alu op 0x%x %s 0x%x", BPF_OP(f.code), src, f.k);
        break;
      case BPF_JMP: {
        const char* op = "j?";
        switch (BPF_OP(f.code)) {
          case BPF_JA:
            op = "ja";
            break;
          case BPF_JEQ:
            op = "jeq";
            break;
          case BPF_JGT:
            op = "jgt";
            break;
          case BPF_JGE:
            op = "jge";
            break;
          case BPF_JSET:
            op = "jset";
            break;
          default:
            break;
        }
        if (BPF_OP(f.code) == BPF_JA) {
          std::snprintf(buf, sizeof buf, "ja +%u", f.k);
        } else {
          std::snprintf(buf, sizeof buf, "%s %s 0x%x jt %u jf %u", op, src, f.k, f.jt, f.jf);
        }
        break;
      }
      case BPF_RET:
        if (BPF_RVAL(f.code) == BPF_A) {
          std::snprintf(buf, sizeof buf, "ret a");
        } else {
          std::snprintf(buf, sizeof buf, "ret #0x%08x", f.k);
        }
        break;
      case BPF_MISC:
        std::snprintf(buf, sizeof buf, "%s", BPF_MISCOP(f.code) == BPF_TAX ? "tax" : "txa");
        break;
      default:
        std::snprintf(buf, sizeof buf, "?? code 0x%x", f.code);
        break;
    }
    char line[160];
    std::snprintf(line, sizeof line, "%04zu: %s\n", pc, buf);
    out += line;
  }
  return out;
}

uint32_t native_audit_arch() noexcept {
#if defined(__x86_64__)
  return AUDIT_ARCH_X86_64;  // x32 too: it shares the x86_64 audit arch
#elif defined(__i386__)
  return AUDIT_ARCH_I386;
#elif defined(__aarch64__)
  return AUDIT_ARCH_AARCH64;
#elif defined(__arm__)
  return AUDIT_ARCH_ARM;
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return AUDIT_ARCH_PPC64LE;
#elif defined(__powerpc64__)
  return AUDIT_ARCH_PPC64;
#elif defined(__s390x__)
  return AUDIT_ARCH_S390X;
#elif defined(__riscv) && __riscv_xlen == 64
  return AUDIT_ARCH_RISCV64;
#else
  return 0;
#endif
}

seccomp_data make_seccomp_data(int nr, std::array<uint64_t, 6> args, uint32_t arch) noexcept {
  seccomp_data d{};
  d.nr = nr;
  d.arch = arch;
  d.instruction_pointer = 0;
  for (std::size_t i = 0; i < 6; ++i) d.args[i] = args[i];
  return d;
}

}  // namespace comet::seccomp
