// A pure classic-BPF interpreter for seccomp filters, for tests and
// diagnostics: run a compiled filter against a seccomp_data without loading
// it into the kernel.
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace comet::seccomp {

// Run the program and return the SECCOMP_RET_* value it yields (action and
// data bits, e.g. SECCOMP_RET_ERRNO | EPERM). Implements the instructions
// seccomp filters may use (what the kernel's seccomp_check_filter accepts):
// LD/LDX W ABS, LD/LDX W LEN, LD/LDX IMM, LD/LDX MEM, ST/STX, ALU with K/X,
// JA, JEQ/JGT/JGE/JSET with K/X, RET K/A, TAX/TXA. A malformed program
// (see check_filter) evaluates to SECCOMP_RET_KILL_PROCESS.
uint32_t evaluate(const std::vector<sock_filter>& prog, const seccomp_data& data) noexcept;

// Validate like the kernel does at load time: 1..BPF_MAXINSNS instructions,
// only seccomp-allowed opcodes, aligned in-bounds absolute loads, jumps that
// stay inside the program, scratch slots in range, last instruction a RET.
// Returns "" when valid, else a description of the first problem.
std::string check_filter(const std::vector<sock_filter>& prog);

// One instruction per line ("0003: jeq #0x3b jt 4 jf 5"), for test output.
std::string disassemble(const std::vector<sock_filter>& prog);

// AUDIT_ARCH_* of the build target (AUDIT_ARCH_X86_64 on x86_64).
uint32_t native_audit_arch() noexcept;

// A seccomp_data for syscall nr on arch (default: native), with arguments.
seccomp_data make_seccomp_data(int nr, std::array<uint64_t, 6> args = {},
                               uint32_t arch = native_audit_arch()) noexcept;

}  // namespace comet::seccomp
