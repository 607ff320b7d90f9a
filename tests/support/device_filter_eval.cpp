// The device-program evaluator of the unit tests (device_filter_eval.hpp).
#include "device_filter_eval.hpp"

#include <array>
#include <cstddef>

namespace comet::test {

int evaluate_device_filter(const std::vector<bpf_insn>& program, uint32_t access_type,
                           uint32_t major, uint32_t minor) {
  std::array<uint8_t, 12> ctx{};
  for (int i = 0; i < 4; i++) {
    ctx[static_cast<size_t>(i)] = static_cast<uint8_t>(access_type >> (8 * i));
    ctx[static_cast<size_t>(4 + i)] = static_cast<uint8_t>(major >> (8 * i));
    ctx[static_cast<size_t>(8 + i)] = static_cast<uint8_t>(minor >> (8 * i));
  }
  std::array<uint64_t, 11> reg{};
  std::array<bool, 11> init{};
  std::array<bool, 11> is_ctx{};
  init[1] = is_ctx[1] = true;
  const size_t n = program.size();
  size_t pc = 0;
  for (long steps = 0; steps < (1L << 20) && pc < n; steps++) {
    const bpf_insn& in = program[pc];
    const uint8_t cls = BPF_CLASS(in.code), op = BPF_OP(in.code);
    const uint8_t dst = in.dst_reg, src = in.src_reg;
    if (dst > 10 || src > 10) return -1;
    const bool use_reg = BPF_SRC(in.code) == BPF_X;
    if (use_reg && cls != BPF_LDX && (!init[src] || is_ctx[src])) return -1;
    if (cls == BPF_LDX) {
      if (BPF_MODE(in.code) != BPF_MEM || !is_ctx[src]) return -1;
      const int sz = BPF_SIZE(in.code) == BPF_W   ? 4
                     : BPF_SIZE(in.code) == BPF_H ? 2
                     : BPF_SIZE(in.code) == BPF_B ? 1
                                                  : 0;
      if (sz == 0 || in.off < 0 || in.off % sz != 0 || in.off + sz > 12) return -1;
      uint64_t v = 0;
      for (int i = sz - 1; i >= 0; i--) v = (v << 8) | ctx[static_cast<size_t>(in.off + i)];
      reg[dst] = v, init[dst] = true, is_ctx[dst] = false;
      pc++;
    } else if (cls == BPF_ALU || cls == BPF_ALU64) {
      const bool is64 = cls == BPF_ALU64;
      const uint64_t s = use_reg ? reg[src] : static_cast<uint64_t>(static_cast<int64_t>(in.imm));
      if (op != BPF_MOV && (!init[dst] || is_ctx[dst])) return -1;
      uint64_t d = reg[dst], r = 0;
      const unsigned width = is64 ? 64 : 32;
      switch (op) {
        case BPF_MOV:
          r = s;
          break;
        case BPF_AND:
          r = d & s;
          break;
        case BPF_OR:
          r = d | s;
          break;
        case BPF_ADD:
          r = d + s;
          break;
        case BPF_RSH:
        case BPF_LSH: {
          if ((s & 0xffffffffULL) >= width) return -1;
          if (!is64) d &= 0xffffffffULL;
          r = op == BPF_RSH ? d >> s : d << s;
          break;
        }
        default:
          return -1;
      }
      reg[dst] = is64 ? r : (r & 0xffffffffULL);
      init[dst] = true, is_ctx[dst] = false;
      pc++;
    } else if (cls == BPF_JMP || cls == BPF_JMP32) {
      if (op == BPF_EXIT && cls == BPF_JMP) {
        if (!init[0] || is_ctx[0]) return -1;
        return static_cast<int>(reg[0] & 0xffffffffULL);
      }
      bool taken = false;
      if (op == BPF_JA) {
        taken = true;
      } else {
        if (!init[dst] || is_ctx[dst]) return -1;
        const bool is32 = cls == BPF_JMP32;
        uint64_t a = reg[dst];
        uint64_t b = use_reg ? reg[src] : static_cast<uint64_t>(static_cast<int64_t>(in.imm));
        if (is32) a &= 0xffffffffULL, b &= 0xffffffffULL;
        switch (op) {
          case BPF_JEQ:
            taken = a == b;
            break;
          case BPF_JNE:
            taken = a != b;
            break;
          case BPF_JGT:
            taken = a > b;
            break;
          case BPF_JGE:
            taken = a >= b;
            break;
          case BPF_JLT:
            taken = a < b;
            break;
          case BPF_JLE:
            taken = a <= b;
            break;
          case BPF_JSET:
            taken = (a & b) != 0;
            break;
          default:
            return -1;
        }
      }
      const long next = static_cast<long>(pc) + 1 + (taken ? in.off : 0);
      if (next < 0 || static_cast<size_t>(next) >= n) return -1;
      pc = static_cast<size_t>(next);
    } else {
      return -1;
    }
  }
  return -1;
}

}  // namespace comet::test
