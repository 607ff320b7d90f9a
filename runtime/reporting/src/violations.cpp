// capability_violation events: the envelope (to_json_line), the pack of
// the annotations and what a lock-down syscall is (classify)
// (violations.hpp). Writing them: violations_write.cpp; counting and
// flagging: violations_flags.cpp.
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "comet/base/random.hpp"
#include "comet/base/result.hpp"
#include "comet/base/sys.hpp"
#include "comet/reporting/violations.hpp"

extern "C" char* seccomp_syscall_resolve_num_arch(uint32_t arch_token, int num);

namespace comet::runtime::violations {
namespace {

std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// Names of the set namespace flags of clone/unshare, e.g. "CLONE_NEWUSER|CLONE_NEWNET".
std::string ns_flags(std::uint64_t f) {
  static const std::pair<std::uint64_t, const char*> kNames[] = {
      {CLONE_NEWNS, "CLONE_NEWNS"},     {CLONE_NEWCGROUP, "CLONE_NEWCGROUP"},
      {CLONE_NEWUTS, "CLONE_NEWUTS"},   {CLONE_NEWIPC, "CLONE_NEWIPC"},
      {CLONE_NEWUSER, "CLONE_NEWUSER"}, {CLONE_NEWPID, "CLONE_NEWPID"},
      {CLONE_NEWNET, "CLONE_NEWNET"},   {CLONE_FS, "CLONE_FS"},
      {CLONE_FILES, "CLONE_FILES"},     {CLONE_SYSVSEM, "CLONE_SYSVSEM"},
      {0x00000080ULL, "CLONE_NEWTIME"}};
  std::string out;
  for (auto& [bit, name] : kNames) {
    if (!(f & bit)) continue;
    if (!out.empty()) out += "|";
    out += name;
  }
  return out.empty() ? hex(f) : out;
}

}  // namespace

std::optional<PackId> pack_of(const std::map<std::string, std::string>& a) {
  auto it = a.find("org.soyaos.comet.pack");
  if (it == a.end()) return std::nullopt;
  size_t at = it->second.rfind('@');
  if (at == std::string::npos || at == 0 || at + 1 == it->second.size()) return std::nullopt;
  return PackId{it->second.substr(0, at), it->second.substr(at + 1)};
}

std::string to_json_line(const Event& e) {
  nlohmann::json j;
  j["type"] = "capability_violation";
  j["time"] = rfc3339_now(true);
  j["id"] = random_uuid();
  j["container"] = e.container;
  if (e.pack)
    j["pack"] = {{"name", e.pack->name}, {"version", e.pack->version}};
  else
    j["pack"] = nullptr;
  j["surface"] = e.surface;
  j["requested"] = e.requested;
  if (e.matched_entry)
    j["matched_entry"] = *e.matched_entry;
  else
    j["matched_entry"] = nullptr;
  j["syscall"] = e.syscall;
  j["pid"] = e.pid;
  j["errno"] = e.err_name.empty() ? errno_name(e.err) : e.err_name;
  if (e.repeated > 0) j["repeated"] = e.repeated;
  // `requested` holds bytes the agent chose (a path): invalid UTF-8 becomes
  // U+FFFD rather than an exception that would take the reporter down.
  // ASCII only (\uXXXX): the line is printed to terminals as it is
  // (`events --violations`, --events /dev/stderr), and a path an agent chose
  // may hold C1 controls (U+009B, CSI).
  return j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

Classified classify(int nr, const std::uint64_t a[6]) {
  Classified c;
  char* n = seccomp_syscall_resolve_num_arch(0 /* SCMP_ARCH_NATIVE */, nr);
  c.syscall = n ? n : "syscall_" + std::to_string(nr);
  std::free(n);
  const std::string& s = c.syscall;
  auto low32 = [](std::uint64_t v) { return static_cast<std::uint32_t>(v); };
  if (s == "fork" || s == "vfork") {
    c.surface = "process";
    c.requested = s;
  } else if (s == "clone") {
    constexpr std::uint64_t kNs = 0x7e020080ULL;  // CLONE_NEW* (and NEWTIME in exit_signal bits)
    if (a[0] & kNs & ~0x80ULL) {
      c.surface = "namespace";
      c.requested = "clone(" + ns_flags(a[0] & kNs) + ")";
    } else {
      c.surface = "process";
      c.requested = "clone";
    }
  } else if (s == "memfd_create" || s == "memfd_secret") {
    c.surface = "process";
    c.requested = s;
  } else if (s == "settimeofday" || s == "stime" || s == "clock_settime" ||
             s == "clock_settime64" || s == "adjtimex" || s == "clock_adjtime" ||
             s == "clock_adjtime64") {
    // adjtimex and clock_adjtime are refused whatever their modes (the
    // struct timex is behind a pointer a filter cannot read): the kernel
    // would refuse a change without CAP_SYS_TIME unreported.
    c.surface = "clock";
    c.requested = s == "clock_settime" || s == "clock_settime64" || s == "clock_adjtime" ||
                          s == "clock_adjtime64"
                      ? s + "(clock " + std::to_string(low32(a[0])) + ")"
                      : s;
  } else if (s == "socket" || s == "socketpair") {
    c.surface = "egress";
    c.requested = s + "(family " + std::to_string(low32(a[0])) + ", type " +
                  std::to_string(low32(a[1]) & 0xf) + ")";
  } else if (s == "connect") {
    c.surface = "runtime-socket";  // the reporter puts in the path
    c.requested = "connect";
  } else if (s == "mknod" || s == "mknodat") {
    // The reporter puts the path in front: "mknodat(/dev/x, char 1:3)".
    const std::uint64_t mode = a[s == "mknod" ? 1 : 2], dev = low32(a[s == "mknod" ? 2 : 3]);
    const std::uint64_t major = (dev & 0xfff00) >> 8,
                        minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
    c.surface = "device";
    c.requested = std::string((mode & 0170000) == 0060000 ? "block " : "char ") +
                  std::to_string(major) + ":" + std::to_string(minor);
  } else if (s == "ioctl") {
    // the lock-down's only ioctl rules: terminal injection
    const std::uint32_t req = low32(a[1]);
    c.surface = "terminal";
    c.requested = req == 0x5412   ? "ioctl(TIOCSTI)"
                  : req == 0x541C ? "ioctl(TIOCLINUX)"
                                  : "ioctl(" + std::to_string(req) + ")";
  } else if (s == "unshare") {
    c.surface = "namespace";
    c.requested = "unshare(" + ns_flags(low32(a[0])) + ")";
  } else {
    c.surface = "namespace";
    c.requested = s;
  }
  return c;
}

}  // namespace comet::runtime::violations
