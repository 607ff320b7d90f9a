// A test-only interpreter for the cgroup2 device programs that
// comet::runtime::device_filter_program emits (runtime/host/devices_bpf.hpp),
// so that tests/devices_bpf_test.cpp can check a program without root.
#pragma once

#include <linux/bpf.h>

#include <cstdint>
#include <vector>

namespace comet::test {

// Pure interpreter for the eBPF subset device_filter_program emits (ldx w
// from the 12-byte struct bpf_cgroup_dev_ctx, ALU/ALU64 mov/and/or/rsh/lsh/add
// imm and reg, JMP/JMP32 ja/jeq/jne/jgt/jge/jlt/jle/jset imm and reg, exit).
// access_type is as in the ctx: (BPF_DEVCG_ACC_* << 16) | BPF_DEVCG_DEV_*.
// Returns r0 at exit (0 deny, 1 allow), or -1 for a program outside the
// subset (bad opcode, out-of-bounds access or jump, no exit within bounds).
int evaluate_device_filter(const std::vector<struct bpf_insn>& program, uint32_t access_type,
                           uint32_t major, uint32_t minor);

}  // namespace comet::test
