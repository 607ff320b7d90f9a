// Name tables shared by compile.cpp and features.cpp (private header).
#pragma once

#include <cstdint>
#include <string_view>

namespace comet::seccomp::detail {

enum class ActKind { kKillThread, kKillProcess, kTrap, kErrno, kTrace, kAllow, kLog, kNotify };

struct ActionEntry {
  std::string_view name;
  ActKind kind;
};
struct OperatorEntry {
  std::string_view name;
  int op;  // enum scmp_compare
};
struct ArchEntry {
  std::string_view name;
  uint32_t token;  // SCMP_ARCH_*
};
struct FlagEntry {
  std::string_view name;
  unsigned int value;  // SECCOMP_FILTER_FLAG_*
};

inline constexpr unsigned int kFlagWaitKillableRecv = 1U << 5;  // Linux 5.19

const ActionEntry* find_action(std::string_view name);
const OperatorEntry* find_operator(std::string_view name);
const ArchEntry* find_arch(std::string_view name);
const FlagEntry* find_flag(std::string_view name);
// A runtime-spec architecture name this libseccomp build does not know.
bool is_spec_only_arch(std::string_view name);
// "SCMP_ARCH_X86_64" for a token, "" if unknown.
std::string_view arch_name(uint32_t token);

}  // namespace comet::seccomp::detail
