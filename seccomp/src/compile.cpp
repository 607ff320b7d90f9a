// OCI linux.seccomp -> BPF, with libseccomp, in the parent process.
//
// Semantics follow runc (libcontainer/seccomp/seccomp_linux.go and
// patchbpf/enosys_linux.go): unknown syscall names are skipped, rules whose
// action equals the default action are skipped, arguments sharing an index
// become separate (OR-ed) rules, and a -ENOSYS stub is prepended so that
// syscalls newer than the profile fail with ENOSYS rather than the default.
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <memory>
#include <new>
#include <optional>
#include <string_view>

#include "comet/base/fault.hpp"
#include "comet/base/fd.hpp"
#include "comet/seccomp/seccomp.hpp"
#include "tables.hpp"

namespace comet::seccomp {
namespace {

std::string quoted(std::string_view s) {
  std::string out = "\"";
  out += s;
  out += '"';
  return out;
}

std::string idx(std::string_view base, std::size_t i) {
  return std::string(base) + "[" + std::to_string(i) + "]";
}

struct CtxDeleter {
  void operator()(void* ctx) const noexcept { seccomp_release(ctx); }
};
using FilterCtx = std::unique_ptr<void, CtxDeleter>;

constexpr uint32_t kMaxErrno = 4094;  // libseccomp wants errno < MAX_ERRNO (4095)

struct Action {
  uint32_t value = 0;
  detail::ActKind kind = detail::ActKind::kKillThread;
};

Result<Action> parse_action(const std::string& name, const std::optional<uint32_t>& errno_ret,
                            const std::string& field, const std::string& errno_field) {
  const detail::ActionEntry* e = detail::find_action(name);
  if (e == nullptr) return Error::msg(field + ": unknown action " + quoted(name));
  Action a;
  a.kind = e->kind;
  switch (e->kind) {
    case detail::ActKind::kKillThread:
      a.value = SCMP_ACT_KILL_THREAD;
      break;
    case detail::ActKind::kKillProcess:
      a.value = SCMP_ACT_KILL_PROCESS;
      break;
    case detail::ActKind::kTrap:
      a.value = SCMP_ACT_TRAP;
      break;
    case detail::ActKind::kAllow:
      a.value = SCMP_ACT_ALLOW;
      break;
    case detail::ActKind::kLog:
      a.value = SCMP_ACT_LOG;
      break;
    case detail::ActKind::kNotify:
      a.value = SCMP_ACT_NOTIFY;
      break;
    case detail::ActKind::kErrno:
    case detail::ActKind::kTrace: {
      // runc: errnoRet when given, else EPERM (for TRACE too). libseccomp
      // takes errno values below MAX_ERRNO, trace values up to 16 bits.
      const uint32_t data = errno_ret.value_or(EPERM);
      const uint32_t max = e->kind == detail::ActKind::kErrno ? kMaxErrno : SECCOMP_RET_DATA;
      if (data > max) {
        return Error::msg(errno_field + ": " + std::to_string(data) + " out of range (0.." +
                          std::to_string(max) + ")");
      }
      a.value = e->kind == detail::ActKind::kErrno ? SCMP_ACT_ERRNO(data) : SCMP_ACT_TRACE(data);
      break;
    }
  }
  return a;
}

// One OCI syscalls[] entry, validated.
struct Rule {
  std::size_t index = 0;  // position in spec.syscalls
  Action action;
  std::vector<scmp_arg_cmp> conds;
  bool split = false;  // several args share an index: one rule per arg (OR)
};

Result<Rule> parse_rule(const oci::SeccompSyscall& sc, std::size_t i) {
  const std::string base = idx("linux.seccomp.syscalls", i);
  Rule r;
  r.index = i;
  TRY(r.action, parse_action(sc.action, sc.errno_ret, base + ".action", base + ".errnoRet"));
  for (std::size_t j = 0; j < sc.names.size(); ++j) {
    if (sc.names[j].empty()) return Error::msg(idx(base + ".names", j) + ": empty syscall name");
    if (r.action.kind == detail::ActKind::kNotify && sc.names[j] == "write") {
      // runc refuses this too: the child writes to its parent after loading
      // the filter, before the agent can answer.
      return Error::msg(idx(base + ".names", j) +
                        ": SCMP_ACT_NOTIFY cannot be used for the write syscall");
    }
  }
  std::array<unsigned, 6> per_index{};
  for (std::size_t j = 0; j < sc.args.size(); ++j) {
    const oci::SeccompArg& arg = sc.args[j];
    const std::string ab = idx(base + ".args", j);
    if (arg.index > 5) {
      return Error::msg(ab + ".index: " + std::to_string(arg.index) + " out of range (0..5)");
    }
    const detail::OperatorEntry* op = detail::find_operator(arg.op);
    if (op == nullptr) return Error::msg(ab + ".op: unknown operator " + quoted(arg.op));
    scmp_arg_cmp c{};
    c.arg = arg.index;
    c.op = static_cast<scmp_compare>(op->op);
    c.datum_a = arg.value;  // MASKED_EQ: value is the mask, valueTwo the datum
    c.datum_b = arg.value_two;
    r.conds.push_back(c);
    if (++per_index[arg.index] > 1) r.split = true;
  }
  return r;
}

bool is_allow_like(detail::ActKind k) {
  return k == detail::ActKind::kAllow || k == detail::ActKind::kLog || k == detail::ActKind::kTrace;
}

// ---- the -ENOSYS stub (runc patchbpf) --------------------------------------

constexpr uint32_t kX32Bit = 0x40000000;  // __X32_SYSCALL_BIT

sock_filter stmt(uint16_t code, uint32_t k) {
  return sock_filter{code, 0, 0, k};
}
sock_filter jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return sock_filter{code, jt, jf, k};
}

// Per AUDIT_ARCH: the largest syscall number the profile names for the
// (x86_64 / x32 share one audit arch) ABIs present.
struct StubArch {
  uint32_t audit = 0;
  std::optional<int> main_max;  // the non-x32 ABI
  std::optional<int> x32_max;
  bool s390 = false;
};

std::vector<StubArch> last_syscalls(const std::vector<uint32_t>& tokens, const oci::Seccomp& spec) {
  std::vector<StubArch> out;
  for (uint32_t token : tokens) {
    int largest = 0;
    for (const auto& sc : spec.syscalls) {
      for (const auto& name : sc.names) {
        const int nr = seccomp_syscall_resolve_name_arch(token, name.c_str());
        if (nr > largest) largest = nr;  // unknown (-1) and pseudo (< 0) numbers ignored
      }
    }
    if (largest == 0) continue;
    const uint32_t audit = token == SCMP_ARCH_X32 ? SCMP_ARCH_X86_64 : token;
    auto it =
        std::find_if(out.begin(), out.end(), [&](const StubArch& s) { return s.audit == audit; });
    if (it == out.end()) {
      out.push_back(StubArch{audit, std::nullopt, std::nullopt,
                             token == SCMP_ARCH_S390 || token == SCMP_ARCH_S390X});
      it = out.end() - 1;
    }
    (token == SCMP_ARCH_X32 ? it->x32_max : it->main_max) = largest;
  }
  return out;
}

// Layout:   ld [arch]; per arch { jeq arch,0,1; ja section }; ja filter;
//           sections (each ending in ja filter); <libseccomp filter>
std::vector<sock_filter> enosys_stub(const std::vector<StubArch>& archs) {
  const uint32_t enosys = SCMP_ACT_ERRNO(ENOSYS);
  std::vector<sock_filter> out;
  std::vector<std::size_t> to_filter;  // ja instructions that must reach the filter
  std::vector<std::size_t> to_section(archs.size());
  out.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  for (std::size_t i = 0; i < archs.size(); ++i) {
    out.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, archs[i].audit, 0, 1));
    to_section[i] = out.size();
    out.push_back(stmt(BPF_JMP | BPF_JA, 0));
  }
  to_filter.push_back(out.size());
  out.push_back(stmt(BPF_JMP | BPF_JA, 0));
  // "jgt max; ret ENOSYS; ja filter"
  auto check = [&](int max) {
    out.push_back(jump(BPF_JMP | BPF_JGT | BPF_K, static_cast<uint32_t>(max), 0, 1));
    out.push_back(stmt(BPF_RET | BPF_K, enosys));
    to_filter.push_back(out.size());
    out.push_back(stmt(BPF_JMP | BPF_JA, 0));
  };
  for (std::size_t i = 0; i < archs.size(); ++i) {
    const StubArch& a = archs[i];
    out[to_section[i]].k = static_cast<uint32_t>(out.size() - to_section[i] - 1);
    out.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
    if (a.s390) {
      // setup(2) = 0 multiplexes syscalls the kernel does not know: ENOSYS.
      out.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1));
      out.push_back(stmt(BPF_RET | BPF_K, enosys));
    }
    if (a.audit == SCMP_ARCH_X86_64) {
      if (a.main_max && a.x32_max) {
        out.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, kX32Bit, 3, 0));
        check(*a.main_max);
        check(*a.x32_max);
      } else if (a.main_max) {  // x32 calls skip to the filter (bad arch there)
        out.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, kX32Bit, 2, 0));
        check(*a.main_max);
      } else {
        out.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, kX32Bit, 0, 2));
        check(*a.x32_max);
      }
    } else {
      check(*a.main_max);
    }
  }
  for (std::size_t at : to_filter) out[at].k = static_cast<uint32_t>(out.size() - at - 1);
  return out;
}

// ---- export ----------------------------------------------------------------

Result<std::vector<sock_filter>> export_bpf(void* ctx) {
  UniqueFd fd(::memfd_create("comet-seccomp-bpf", MFD_CLOEXEC));
  if (fd.get() < 0) return Error::sys(errno, "seccomp: memfd_create");
  const int rc =
      fault_fail("seccomp-export-enomem", ENOMEM) ? -ENOMEM : seccomp_export_bpf(ctx, fd.get());
  if (rc < 0) return Error::sys(-rc, "seccomp: exporting the BPF program");
  struct stat st {};
  if (::fstat(fd.get(), &st) < 0) return Error::sys(errno, "seccomp: fstat of the BPF memfd");
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0 || size % sizeof(sock_filter) != 0) {
    return Error::msg("seccomp: exported BPF program has a bad size (" + std::to_string(size) +
                      " bytes)");
  }
  std::vector<sock_filter> prog(size / sizeof(sock_filter));
  auto* p = reinterpret_cast<char*>(prog.data());
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd.get(), p + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::sys(errno, "seccomp: reading the BPF memfd");
    if (n == 0) return Error::msg("seccomp: short read of the exported BPF program");
    done += static_cast<std::size_t>(n);
  }
  return prog;
}

// ---- the steps of compile() ------------------------------------------------

Result<Action> parse_default_action(const oci::Seccomp& spec) {
  TRY(const Action def,
      parse_action(spec.default_action, spec.default_errno_ret, "linux.seccomp.defaultAction",
                   "linux.seccomp.defaultErrnoRet"));
  if (def.kind == detail::ActKind::kNotify) {
    return Error::msg("linux.seccomp.defaultAction: SCMP_ACT_NOTIFY cannot be the default action");
  }
  return def;
}

// linux.seccomp.flags, or'ed into prog.flags.
struct Flags {
  std::optional<std::size_t> wait_killable;  // index of WAIT_KILLABLE_RECV in spec.flags
  bool tsync = false;
};

Result<Flags> parse_flags(const oci::Seccomp& spec, Program& prog) {
  Flags out;
  for (std::size_t i = 0; i < spec.flags.size(); ++i) {
    const detail::FlagEntry* f = detail::find_flag(spec.flags[i]);
    if (f == nullptr) {
      return Error::msg(idx("linux.seccomp.flags", i) + ": unknown flag " + quoted(spec.flags[i]));
    }
    prog.flags |= f->value;
    if (f->value == SECCOMP_FILTER_FLAG_TSYNC) out.tsync = true;
    if (f->value == detail::kFlagWaitKillableRecv) out.wait_killable = i;
  }
  return out;
}

// The filter's architectures: the native one first (seccomp_init adds it),
// then linux.seccomp.architectures without repeats.
struct Archs {
  std::vector<uint32_t> tokens;
  std::vector<std::size_t> field;  // index in spec.architectures (unused for native)
};

Result<Archs> parse_architectures(const oci::Seccomp& spec) {
  Archs out{{seccomp_arch_native()}, {0}};
  for (std::size_t i = 0; i < spec.architectures.size(); ++i) {
    const std::string& name = spec.architectures[i];
    const detail::ArchEntry* a = detail::find_arch(name);
    if (a == nullptr) {
      const std::string field = idx("linux.seccomp.architectures", i);
      if (detail::is_spec_only_arch(name)) {
        return Error::msg(field + ": architecture " + quoted(name) +
                          " is not supported by this libseccomp");
      }
      return Error::msg(field + ": unknown architecture " + quoted(name));
    }
    if (std::find(out.tokens.begin(), out.tokens.end(), a->token) == out.tokens.end()) {
      out.tokens.push_back(a->token);
      out.field.push_back(i);
    }
  }
  return out;
}

// Every syscalls[] entry, validated; a NOTIFY rule sets prog.needs_listener
// (and the flags that go with a listener).
struct Rules {
  std::vector<Rule> rules;
  std::size_t name_count = 0;  // syscall names over all entries
};

Result<Rules> parse_rules(const oci::Seccomp& spec, const Flags& flags, Program& prog) {
  Rules out;
  out.rules.reserve(spec.syscalls.size());
  for (std::size_t i = 0; i < spec.syscalls.size(); ++i) {
    TRY(Rule r, parse_rule(spec.syscalls[i], i));
    if (r.action.kind == detail::ActKind::kNotify) {
      if (spec.listener_path.empty()) {
        return Error::msg(idx("linux.seccomp.syscalls", i) +
                          ".action: SCMP_ACT_NOTIFY requires linux.seccomp.listenerPath");
      }
      prog.needs_listener = true;
    }
    out.name_count += spec.syscalls[i].names.size();
    out.rules.push_back(std::move(r));
  }
  if (flags.wait_killable && !prog.needs_listener) {
    return Error::msg(idx("linux.seccomp.flags", *flags.wait_killable) +
                      ": SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV requires a SCMP_ACT_NOTIFY rule");
  }
  // TSYNC with NEW_LISTENER is EINVAL unless failures are reported as ESRCH.
  if (flags.tsync && prog.needs_listener) prog.flags |= SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
  return out;
}

// A libseccomp context with the default action and every architecture.
Result<FilterCtx> new_filter(const oci::Seccomp& spec, const Action& def, const Archs& archs) {
  FilterCtx ctx(seccomp_init(def.value));
  if (!ctx) {
    return Error::msg("linux.seccomp.defaultAction: libseccomp refused action " +
                      quoted(spec.default_action));
  }
  // The runtime sets no_new_privs itself; and this filter is loaded by load().
  int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0);
  if (rc == 0) rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_TSYNC, 0);
  if (rc < 0) return Error::sys(-rc, "seccomp: setting filter attributes");
  for (std::size_t t = 1; t < archs.tokens.size(); ++t) {
    rc = seccomp_arch_add(ctx.get(), archs.tokens[t]);
    if (rc < 0 && rc != -EEXIST) {
      // EDOM: libseccomp cannot mix architectures of different endianness.
      return Error::sys(-rc, idx("linux.seccomp.architectures", archs.field[t]) +
                                 ": adding architecture " +
                                 quoted(detail::arch_name(archs.tokens[t])));
    }
  }
  return ctx;
}

// The rules into the context; returns how many libseccomp rules were added.
Result<std::size_t> add_rules(void* ctx, const oci::Seccomp& spec, const Action& def,
                              const std::vector<Rule>& rules) {
  std::size_t added = 0;
  for (const Rule& r : rules) {
    if (r.action.value == def.value) continue;  // redundant; libseccomp says EACCES
    const oci::SeccompSyscall& sc = spec.syscalls[r.index];
    for (const std::string& name : sc.names) {
      const int nr = seccomp_syscall_resolve_name(name.c_str());
      if (nr == __NR_SCMP_ERROR) continue;  // unknown to libseccomp: skipped, as runc does
      int rc = 0;
      if (r.conds.empty()) {
        rc = seccomp_rule_add_array(ctx, r.action.value, nr, 0, nullptr);
      } else if (r.split) {
        for (const scmp_arg_cmp& c : r.conds) {
          rc = seccomp_rule_add_array(ctx, r.action.value, nr, 1, &c);
          if (rc < 0) break;
        }
      } else {
        rc = seccomp_rule_add_array(ctx, r.action.value, nr, static_cast<unsigned>(r.conds.size()),
                                    r.conds.data());
      }
      if (rc < 0) {
        return Error::sys(-rc, idx("linux.seccomp.syscalls", r.index) +
                                   ": adding rule for syscall " + quoted(name));
      }
      ++added;
    }
  }
  return added;
}

Status optimize(void* ctx, const CompileOptions& opts, std::size_t name_count, std::size_t added) {
  const bool tree = opts.optimize == Optimize::kBinaryTree ||
                    (opts.optimize == Optimize::kAuto && name_count > kAutoTreeThreshold);
  // libseccomp <= 2.5.4 misbehaves with the binary tree and no rules.
  if (tree && added > 0) {
    const int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (rc < 0) return Error::sys(-rc, "seccomp: enabling binary tree optimization");
  }
  return {};
}

// prog.filter = [the -ENOSYS stub] + the exported libseccomp program.
Status assemble(void* ctx, const oci::Seccomp& spec, const CompileOptions& opts, const Action& def,
                const Archs& archs, Program& prog) {
  TRY(std::vector<sock_filter> body, export_bpf(ctx));
  const bool stub =
      opts.enosys_stub && !is_allow_like(def.kind) && def.value != SCMP_ACT_ERRNO(ENOSYS);
  if (stub) {
    const std::vector<StubArch> stub_archs = last_syscalls(archs.tokens, spec);
    if (!stub_archs.empty()) {
      prog.filter = enosys_stub(stub_archs);
    }
  }
  prog.filter.insert(prog.filter.end(), body.begin(), body.end());
  if (prog.filter.size() > BPF_MAXINSNS) {
    return Error::msg("linux.seccomp: compiled filter has " + std::to_string(prog.filter.size()) +
                      " instructions, more than the kernel's limit of " +
                      std::to_string(BPF_MAXINSNS));
  }
  return {};
}

Result<Program> compile_impl(const oci::Seccomp& spec, const CompileOptions& opts) {
  TRY(const Action def, parse_default_action(spec));
  Program prog;
  prog.listener_path = spec.listener_path;
  prog.listener_metadata = spec.listener_metadata;
  TRY(const Flags flags, parse_flags(spec, prog));
  TRY(const Archs archs, parse_architectures(spec));
  TRY(const Rules rules, parse_rules(spec, flags, prog));
  TRY(FilterCtx ctx, new_filter(spec, def, archs));
  TRY(const std::size_t added, add_rules(ctx.get(), spec, def, rules.rules));
  TRYV(optimize(ctx.get(), opts, rules.name_count, added));
  TRYV(assemble(ctx.get(), spec, opts, def, archs, prog));
  return prog;
}

}  // namespace

Result<Program> compile(const oci::Seccomp& spec, const CompileOptions& options) {
  try {
    return compile_impl(spec, options);
  } catch (const std::bad_alloc&) {
    return Error::sys(ENOMEM, "seccomp: compiling the filter");
  } catch (...) {
    return Error::msg("seccomp: unexpected exception while compiling the filter");
  }
}

Result<Program> compile(const oci::Seccomp& spec) {
  return compile(spec, CompileOptions{});
}

}  // namespace comet::seccomp
