// The SCMP_ACT_* / SCMP_CMP_* / SCMP_ARCH_* / SECCOMP_FILTER_FLAG_* names,
// and the feature lists built from them.
#include "tables.hpp"

#include <seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>

#include "comet/seccomp/seccomp.hpp"

namespace comet::seccomp::detail {
namespace {

constexpr ActionEntry kActions[] = {
    {"SCMP_ACT_KILL", ActKind::kKillThread},
    {"SCMP_ACT_KILL_PROCESS", ActKind::kKillProcess},
    {"SCMP_ACT_KILL_THREAD", ActKind::kKillThread},
    {"SCMP_ACT_TRAP", ActKind::kTrap},
    {"SCMP_ACT_ERRNO", ActKind::kErrno},
    {"SCMP_ACT_TRACE", ActKind::kTrace},
    {"SCMP_ACT_ALLOW", ActKind::kAllow},
    {"SCMP_ACT_LOG", ActKind::kLog},
    {"SCMP_ACT_NOTIFY", ActKind::kNotify},
};

constexpr OperatorEntry kOperators[] = {
    {"SCMP_CMP_NE", SCMP_CMP_NE},
    {"SCMP_CMP_LT", SCMP_CMP_LT},
    {"SCMP_CMP_LE", SCMP_CMP_LE},
    {"SCMP_CMP_EQ", SCMP_CMP_EQ},
    {"SCMP_CMP_GE", SCMP_CMP_GE},
    {"SCMP_CMP_GT", SCMP_CMP_GT},
    {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
};

constexpr ArchEntry kArchs[] = {
    {"SCMP_ARCH_X86", SCMP_ARCH_X86},
    {"SCMP_ARCH_X86_64", SCMP_ARCH_X86_64},
    {"SCMP_ARCH_X32", SCMP_ARCH_X32},
    {"SCMP_ARCH_ARM", SCMP_ARCH_ARM},
    {"SCMP_ARCH_AARCH64", SCMP_ARCH_AARCH64},
    {"SCMP_ARCH_MIPS", SCMP_ARCH_MIPS},
    {"SCMP_ARCH_MIPS64", SCMP_ARCH_MIPS64},
    {"SCMP_ARCH_MIPS64N32", SCMP_ARCH_MIPS64N32},
    {"SCMP_ARCH_MIPSEL", SCMP_ARCH_MIPSEL},
    {"SCMP_ARCH_MIPSEL64", SCMP_ARCH_MIPSEL64},
    {"SCMP_ARCH_MIPSEL64N32", SCMP_ARCH_MIPSEL64N32},
    {"SCMP_ARCH_PPC", SCMP_ARCH_PPC},
    {"SCMP_ARCH_PPC64", SCMP_ARCH_PPC64},
    {"SCMP_ARCH_PPC64LE", SCMP_ARCH_PPC64LE},
    {"SCMP_ARCH_S390", SCMP_ARCH_S390},
    {"SCMP_ARCH_S390X", SCMP_ARCH_S390X},
    {"SCMP_ARCH_PARISC", SCMP_ARCH_PARISC},
    {"SCMP_ARCH_PARISC64", SCMP_ARCH_PARISC64},
    {"SCMP_ARCH_RISCV64", SCMP_ARCH_RISCV64},
#ifdef SCMP_ARCH_LOONGARCH64
    {"SCMP_ARCH_LOONGARCH64", SCMP_ARCH_LOONGARCH64},
#endif
#ifdef SCMP_ARCH_M68K
    {"SCMP_ARCH_M68K", SCMP_ARCH_M68K},
#endif
#ifdef SCMP_ARCH_SH
    {"SCMP_ARCH_SH", SCMP_ARCH_SH},
    {"SCMP_ARCH_SHEB", SCMP_ARCH_SHEB},
#endif
};

// Architectures newer libseccomp versions (and the runtime-spec) name.
constexpr std::string_view kSpecOnlyArchs[] = {"SCMP_ARCH_LOONGARCH64", "SCMP_ARCH_M68K",
                                               "SCMP_ARCH_SH", "SCMP_ARCH_SHEB"};

constexpr FlagEntry kFlags[] = {
    {"SECCOMP_FILTER_FLAG_TSYNC", SECCOMP_FILTER_FLAG_TSYNC},
    {"SECCOMP_FILTER_FLAG_LOG", SECCOMP_FILTER_FLAG_LOG},
    {"SECCOMP_FILTER_FLAG_SPEC_ALLOW", SECCOMP_FILTER_FLAG_SPEC_ALLOW},
    {"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV", kFlagWaitKillableRecv},
};

template <typename T, std::size_t N>
const T* find(const T (&table)[N], std::string_view name) {
  for (const T& e : table) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

template <typename T, std::size_t N>
std::vector<std::string> names(const T (&table)[N]) noexcept {
  try {
    std::vector<std::string> out;
    for (const T& e : table) out.emplace_back(e.name);
    return out;
  } catch (...) {
    return {};
  }
}

}  // namespace

const ActionEntry* find_action(std::string_view name) {
  return find(kActions, name);
}
const OperatorEntry* find_operator(std::string_view name) {
  return find(kOperators, name);
}
const ArchEntry* find_arch(std::string_view name) {
  return find(kArchs, name);
}
const FlagEntry* find_flag(std::string_view name) {
  return find(kFlags, name);
}

bool is_spec_only_arch(std::string_view name) {
  for (std::string_view n : kSpecOnlyArchs) {
    if (n == name) return true;
  }
  return false;
}

std::string_view arch_name(uint32_t token) {
  for (const ArchEntry& e : kArchs) {
    if (e.token == token) return e.name;
  }
  return "";
}

}  // namespace comet::seccomp::detail

namespace comet::seccomp {

std::vector<std::string> known_actions() noexcept {
  return detail::names(detail::kActions);
}
std::vector<std::string> known_operators() noexcept {
  return detail::names(detail::kOperators);
}
std::vector<std::string> known_archs() noexcept {
  return detail::names(detail::kArchs);
}
std::vector<std::string> known_flags() noexcept {
  return detail::names(detail::kFlags);
}

std::vector<std::string> supported_flags() noexcept {
  try {
    std::vector<std::string> out;
    for (const detail::FlagEntry& f : detail::kFlags) {
      unsigned long flags = f.value;
      // WAIT_KILLABLE_RECV is only valid together with NEW_LISTENER.
      if (f.value == detail::kFlagWaitKillableRecv) flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
      // A NULL program: the kernel checks the flags first (EINVAL when it does
      // not know one) and then faults copying the program (EFAULT). Nothing is
      // ever installed.
      errno = 0;
      const long rc = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, nullptr);
      if (rc < 0 && errno == EFAULT) out.emplace_back(f.name);
    }
    return out;
  } catch (...) {
    return {};
  }
}

}  // namespace comet::seccomp
