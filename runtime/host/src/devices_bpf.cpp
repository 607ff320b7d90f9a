#include "comet/host/devices_bpf.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

namespace comet::runtime {
namespace {

constexpr uint32_t kAccAll = BPF_DEVCG_ACC_MKNOD | BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE;
// Registers of the emitted program: r1 ctx (then scratch), r2 type, r3
// access, r4 major, r5 minor.
constexpr uint8_t kR0 = 0, kR1 = 1, kR2 = 2, kR3 = 3, kR4 = 4, kR5 = 5;

bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  return i;
}
bpf_insn ldx_w(uint8_t dst, uint8_t src, int16_t off) {
  return insn(BPF_LDX | BPF_MEM | BPF_W, dst, src, off, 0);
}
bpf_insn alu32_imm(uint8_t op, uint8_t dst, int32_t imm) {
  return insn(BPF_ALU | op | BPF_K, dst, 0, 0, imm);
}
bpf_insn alu32_reg(uint8_t op, uint8_t dst, uint8_t src) {
  return insn(BPF_ALU | op | BPF_X, dst, src, 0, 0);
}
// Jump offsets are patched once the block length is known.
bpf_insn jmp_imm(uint8_t op, uint8_t dst, int32_t imm) {
  return insn(BPF_JMP | op | BPF_K, dst, 0, 0, imm);
}
bpf_insn jmp_reg(uint8_t op, uint8_t dst, uint8_t src) {
  return insn(BPF_JMP | op | BPF_X, dst, src, 0, 0);
}
bpf_insn exit_insn() {
  return insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

uint32_t access_bits(const std::string& access) {
  if (access.empty()) return kAccAll;
  uint32_t bits = 0;
  for (char c : access) {
    if (c == 'r') bits |= BPF_DEVCG_ACC_READ;
    if (c == 'w') bits |= BPF_DEVCG_ACC_WRITE;
    if (c == 'm') bits |= BPF_DEVCG_ACC_MKNOD;
  }
  return bits;
}

// A major/minor test: a wildcard, a value, or impossible (no device has it).
struct NumTest {
  bool wildcard = true;
  bool impossible = false;
  int32_t value = 0;
};
NumTest num_test(const std::optional<int64_t>& v) {
  NumTest t;
  if (!v || *v < 0) return t;
  t.wildcard = false;
  if (*v > std::numeric_limits<int32_t>::max()) {
    t.impossible = true;
    return t;
  }
  t.value = static_cast<int32_t>(*v);
  return t;
}

// Appends the block for one rule; returns true when the rule matches every
// access (so nothing after it is reachable).
bool append_rule(std::vector<bpf_insn>& out, const oci::DeviceCgroup& rule) {
  bool has_type = false;
  int32_t bpf_type = 0;
  if (rule.type == "c" || rule.type == "b") {
    has_type = true;
    bpf_type = rule.type == "c" ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK;
  } else if (!rule.type.empty() && rule.type != "a" && rule.allow) {
    return false;  // unknown type: an allow rule matches nothing
  }
  NumTest major = num_test(rule.major), minor = num_test(rule.minor);
  if (major.impossible || minor.impossible) return false;
  uint32_t acc = access_bits(rule.access);
  if (acc == 0) return false;  // grants or denies no access bit: matches nothing

  std::vector<bpf_insn> block;
  if (has_type) block.push_back(jmp_imm(BPF_JNE, kR2, bpf_type));
  if (acc != kAccAll) {
    block.push_back(alu32_reg(BPF_MOV, kR1, kR3));
    block.push_back(alu32_imm(BPF_AND, kR1, static_cast<int32_t>(acc)));
    if (rule.allow)  // every requested bit granted: (access & acc) == access
      block.push_back(jmp_reg(BPF_JNE, kR1, kR3));
    else  // any requested bit denied: (access & acc) != 0
      block.push_back(jmp_imm(BPF_JEQ, kR1, 0));
  }
  if (!major.wildcard) block.push_back(jmp_imm(BPF_JNE, kR4, major.value));
  if (!minor.wildcard) block.push_back(jmp_imm(BPF_JNE, kR5, minor.value));
  bool matches_all = block.empty();
  block.push_back(alu32_imm(BPF_MOV, kR0, rule.allow ? 1 : 0));
  block.push_back(exit_insn());
  // Every conditional jump goes to the first instruction after the block.
  const auto len = static_cast<int>(block.size());
  for (int i = 0; i < len; i++) {
    auto& b = block[static_cast<size_t>(i)];
    if (BPF_CLASS(b.code) == BPF_JMP && BPF_OP(b.code) != BPF_EXIT)
      b.off = static_cast<int16_t>(len - i - 1);
  }
  out.insert(out.end(), block.begin(), block.end());
  return matches_all;
}

long sys_bpf(int cmd, bpf_attr* attr) {
  return ::syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}
uint64_t ptr(const void* p) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

Result<UniqueFd> prog_fd_by_id(uint32_t id) {
  bpf_attr attr{};
  attr.prog_id = id;
  int fd = static_cast<int>(sys_bpf(BPF_PROG_GET_FD_BY_ID, &attr));
  if (fd < 0) return Error::sys(errno, "bpf prog_get_fd_by_id " + std::to_string(id));
  return UniqueFd(fd);
}

Result<bpf_prog_info> prog_info(int fd) {
  bpf_prog_info info{};
  bpf_attr attr{};
  attr.info.bpf_fd = static_cast<uint32_t>(fd);
  attr.info.info_len = sizeof(info);
  attr.info.info = ptr(&info);
  if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr) < 0)
    return Error::sys(errno, "bpf obj_get_info_by_fd");
  return info;
}

}  // namespace

std::vector<bpf_insn> device_filter_program(const std::vector<oci::DeviceCgroup>& rules) {
  try {
    std::vector<bpf_insn> p;
    // struct bpf_cgroup_dev_ctx { u32 access_type; u32 major; u32 minor; }
    p.push_back(ldx_w(kR2, kR1, 0));  // r2 = type (low 16 bits)
    p.push_back(alu32_imm(BPF_AND, kR2, 0xffff));
    p.push_back(ldx_w(kR3, kR1, 0));  // r3 = access (high 16 bits)
    p.push_back(alu32_imm(BPF_RSH, kR3, 16));
    p.push_back(ldx_w(kR4, kR1, 4));  // r4 = major
    p.push_back(ldx_w(kR5, kR1, 8));  // r5 = minor
    for (auto it = rules.rbegin(); it != rules.rend(); ++it)
      if (append_rule(p, *it)) return p;
    p.push_back(alu32_imm(BPF_MOV, kR0, 0));  // no rule matched: deny
    p.push_back(exit_insn());
    return p;
  } catch (...) {
    return {};  // out of memory: load_device_filter refuses an empty program
  }
}

Result<UniqueFd> load_device_filter(const std::vector<bpf_insn>& program) {
  if (program.empty()) return Error::sys(EINVAL, "load device filter: empty program");
  static const char kLicense[] = "Apache";
  auto load = [&](char* log, uint32_t log_size) {
    bpf_attr attr{};
    attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    attr.insns = ptr(program.data());
    attr.insn_cnt = static_cast<uint32_t>(program.size());
    attr.license = ptr(kLicense);
    static_assert(sizeof(kDeviceFilterName) <= sizeof(attr.prog_name));
    std::memcpy(attr.prog_name, kDeviceFilterName, sizeof(kDeviceFilterName));
    if (log != nullptr) {
      attr.log_level = 1;
      attr.log_buf = ptr(log);
      attr.log_size = log_size;
    }
    return static_cast<int>(sys_bpf(BPF_PROG_LOAD, &attr));
  };
  int fd = load(nullptr, 0);
  if (fd >= 0) return UniqueFd(fd);
  int err = errno;
  // Again with the verifier log, for the error message.
  try {
    std::string log(64 * 1024, '\0');
    fd = load(log.data(), static_cast<uint32_t>(log.size()));
    if (fd >= 0) return UniqueFd(fd);  // transient (e.g. EAGAIN): fine now
    log.resize(std::strlen(log.c_str()));
    while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.pop_back();
    std::string msg = "bpf prog_load cgroup_device (" + std::to_string(program.size()) + " insns)";
    if (!log.empty()) msg += ": verifier log:\n" + log;
    return Error::sys(err, msg);
  } catch (...) {
    return Error::sys(err, "bpf prog_load cgroup_device");
  }
}

Result<std::vector<uint32_t>> attached_device_filters(int cgroup_dir_fd) {
  try {
    std::vector<uint32_t> ids(64);
    for (int attempt = 0; attempt < 10; attempt++) {
      bpf_attr attr{};
      attr.query.target_fd = static_cast<uint32_t>(cgroup_dir_fd);
      attr.query.attach_type = BPF_CGROUP_DEVICE;
      attr.query.prog_ids = ptr(ids.data());
      attr.query.prog_cnt = static_cast<uint32_t>(ids.size());
      if (sys_bpf(BPF_PROG_QUERY, &attr) == 0) {
        ids.resize(std::min<size_t>(attr.query.prog_cnt, ids.size()));
        return ids;
      }
      if (errno != ENOSPC) return Error::sys(errno, "bpf prog_query cgroup_device");
      ids.resize(std::max<size_t>(attr.query.prog_cnt, ids.size() * 2));  // raced: grew
    }
    return Error::sys(ENOSPC, "bpf prog_query cgroup_device: list keeps growing");
  } catch (...) {
    return Error::sys(ENOMEM, "bpf prog_query cgroup_device");
  }
}

Status attach_device_filter(int cgroup_dir_fd, int prog_fd) {
  try {
    TRY(auto before, attached_device_filters(cgroup_dir_fd));
    TRY(auto self, prog_info(prog_fd));
    if (self.type != BPF_PROG_TYPE_CGROUP_DEVICE)
      return Error::sys(EINVAL, "attach device filter: not a cgroup_device program");

    // The kernel refuses (EINVAL) to attach one program twice to a cgroup.
    if (std::find(before.begin(), before.end(), self.id) == before.end()) {
      bpf_attr attr{};
      attr.target_fd = static_cast<uint32_t>(cgroup_dir_fd);
      attr.attach_bpf_fd = static_cast<uint32_t>(prog_fd);
      attr.attach_type = BPF_CGROUP_DEVICE;
      attr.attach_flags = BPF_F_ALLOW_MULTI;
      if (sys_bpf(BPF_PROG_ATTACH, &attr) < 0)
        return Error::sys(errno, "bpf prog_attach cgroup_device (allow_multi)");
    }

    // Now detach the filters earlier calls attached (ours by name).
    for (uint32_t id : before) {
      if (id == self.id) continue;
      auto old = prog_fd_by_id(id);
      if (!old) {
        int e = old.error().err();
        if (e == ENOENT || e == EPERM || e == EACCES) continue;  // gone, or not ours (LSM)
        return std::move(old).error().wrap("replace device filter");
      }
      TRY(auto info, prog_info(old->get()));
      if (std::strncmp(info.name, kDeviceFilterName, sizeof(info.name)) != 0) continue;
      bpf_attr det{};
      det.target_fd = static_cast<uint32_t>(cgroup_dir_fd);
      det.attach_bpf_fd = static_cast<uint32_t>(old->get());
      det.attach_type = BPF_CGROUP_DEVICE;
      if (sys_bpf(BPF_PROG_DETACH, &det) < 0 && errno != ENOENT)
        return Error::sys(errno, "bpf prog_detach old device filter id " + std::to_string(id));
    }
    return ok();
  } catch (...) {
    return Error::sys(ENOMEM, "attach device filter");
  }
}

}  // namespace comet::runtime
